fun main() {
    val (a, b) = readLine()!!.split(" ").map { it.toInt() }
    println("${minOf(a, b)} ${Math.abs(a - b)}")
}
