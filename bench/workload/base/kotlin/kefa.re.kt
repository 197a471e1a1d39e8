fun main() {
    val (n, k) = readLine()!!.split(" ").map { it.toInt() }
    val s = readLine()!!
    val cnt = IntArray(26)
    for (i in 0..n) {
        cnt[s[i] - 'a']++
    }
    println(if (cnt.max()!! <= k) "YES" else "NO")
}
