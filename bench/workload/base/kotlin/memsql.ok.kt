fun main() {
    readLine()
    val days = readLine()!!.trim()
    var sf = 0
    var fs = 0
    for (i in 1 until days.length) {
        if (days[i - 1] == 'S' && days[i] == 'F') sf++
        if (days[i - 1] == 'F' && days[i] == 'S') fs++
    }
    println(if (sf > fs) "YES" else "NO")
}
