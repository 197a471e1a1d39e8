fun main() {
    val xs = readLine()!!.split(" ").filter { it.isNotEmpty() }.map { it.toInt() }
    // the best meeting point is the middle house
    println(xs.max()!! - xs.min()!!)
}
