fun main() {
    var (a, b, c) = readLine()!!.split(" ").map { it.toLong() }
    var minutes = 0L
    while (a + b <= c || a + c <= b || b + c <= a) {
        val longest = maxOf(a, b, c)
        when (longest) {
            a -> a++
            b -> b++
            else -> c++
        }
        minutes++
    }
    println(minutes)
}
