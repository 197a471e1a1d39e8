fun main() {
    val n = readLine()!!.trim().toInt()
    val name = readLine()!!.trim()
    var removed = 0
    var run = 0
    // every 'x' that makes a run longer than two has to go
    for (i in 0 until n) {
        if (name[i] == 'x') {
            run++
            if (run >= 3) removed++
        } else {
            run = 0
        }
    }
    println(removed)
}
