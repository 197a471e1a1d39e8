fun main() {
    val n = readLine()!!.trim().toLong()
    println(if (n % 2 == 0L) "Mahmoud" else "Ehab")
}
