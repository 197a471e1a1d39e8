fun main() {
    val w = readLine()!!.trim().toInt()
    if (w % 2 == 0 && w > 2) {
        println("YES")
    } else {
        println("NO")
    }
}
