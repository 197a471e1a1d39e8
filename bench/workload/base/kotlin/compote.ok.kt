fun main() {
    val a = readLine()!!.trim().toInt()
    val b = readLine()!!.trim().toInt()
    val c = readLine()!!.trim().toInt()
    val portions = minOf(a, b / 2, c / 4)
    println(portions * 7)
}
