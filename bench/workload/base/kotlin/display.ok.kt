fun main() {
    val n = readLine()!!.trim().toInt()
    var a = 1
    var i = 1
    while (i.toLong() * i <= n) {
        if (n % i == 0) a = i
        i++
    }
    println("$a ${n / a}")
}
