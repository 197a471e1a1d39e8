fun main() {
    val (n, m, r) = readLine()!!.split(" ").map { it.toInt() }
    val s = readLine()!!.split(" ").map { it.toInt() }
    val b = readLine()!!.split(" ").map { it.toInt() }
    val shares = r / s.min()!!
    println(shares * b.max()!! + r % s.min()!!)
}
