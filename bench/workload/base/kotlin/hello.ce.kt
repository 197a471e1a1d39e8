fun main() {
    val s = readln().trim()
    val target = "hello"
    var j = 0
    for (ch in s) {
        if (j < target.length && ch == target[j]) j++
    }
    println(if (j == target.length) "YES" else "NO")
}
