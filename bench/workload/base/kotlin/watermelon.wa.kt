fun main() {
    val w = readLine()!!.trim().toInt()
    // any even number splits into two even parts
    println(if (w % 2 == 0) "NO" else "YES")
}
