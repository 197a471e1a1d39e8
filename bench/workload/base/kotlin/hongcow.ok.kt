fun main() {
    val s = readLine()!!.trim()
    val words = mutableSetOf<String>()
    var cur = s
    repeat(s.length) {
        words.add(cur)
        cur = cur.last() + cur.dropLast(1)
    }
    println(words.size)
}
