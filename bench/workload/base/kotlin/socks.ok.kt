fun main() {
    val (a, b) = readLine()!!.split(" ").map { it.toInt() }
    val fashionable = minOf(a, b)
    val same = (maxOf(a, b) - fashionable) / 2
    println("$fashionable $same")
}
