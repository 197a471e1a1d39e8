import java.io.BufferedReader
import java.io.InputStreamReader

fun main() {
    val br = BufferedReader(InputStreamReader(System.`in`))
    val (n, k) = br.readLine().trim().split(" ").map { it.toInt() }
    val colors = br.readLine().trim()
    val counts = IntArray(26)
    for (ch in colors.take(n)) {
        counts[ch - 'a']++
    }
    // a friend may not receive two balloons of one colour
    println(if (counts.all { it <= k }) "YES" else "NO")
}
