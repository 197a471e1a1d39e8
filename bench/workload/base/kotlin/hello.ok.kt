fun canSayHello(s: String): Boolean {
    val target = "hello"
    var j = 0
    for (ch in s) {
        if (j < target.length && ch == target[j]) j++
    }
    return j == target.length
}

fun main() {
    val s = readLine()!!.trim()
    println(if (canSayHello(s)) "YES" else "NO")
}
