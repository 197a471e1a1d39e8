fun main() {
    val xs = readLine()!!.split(" ").map { it.toInt() }.sorted()
    val answer: Int = xs[2] - xs[0]
    println(answer.toString().lowercase())
}
