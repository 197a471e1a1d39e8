fun main() {
    // read a, b and c
    val (a, b, c) = readLine()!!.split(" ").map { it.toInt() }
    val k = minOf(a, b / 2, c / 4)
    println(k * 7)
}
