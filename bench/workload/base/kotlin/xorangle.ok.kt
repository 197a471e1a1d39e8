fun main() {
    val n = readLine()!!.trim().toInt()
    var count = 0
    for (a in 1..n) {
        for (b in a..n) {
            val c = a xor b
            // c must be the largest side and the triangle non-degenerate
            if (c >= b && c <= n && a + b > c) {
                count++
            }
        }
    }
    println(count)
}
