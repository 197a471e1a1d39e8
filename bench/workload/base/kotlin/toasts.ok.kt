fun main() {
    val v = readLine()!!.split(" ").map { it.toInt() }
    val (n, k, l, c) = v.take(4)
    val (d, p, nl, np) = v.drop(4)
    val toasts = minOf(k * l / nl, c * d, p / np)
    println(toasts / n)
}
