import java.util.Scanner

fun main() {
    val sc = Scanner(System.`in`)
    val n = sc.nextInt()
    val m = sc.nextInt()
    val r = sc.nextInt()
    val buy = IntArray(n) { sc.nextInt() }
    val sell = IntArray(m) { sc.nextInt() }
    val cheapest = buy.min()!!
    val best = sell.max()!!
    // only trade when it makes a profit
    val profit = (r / cheapest) * best + r % cheapest
    println(maxOf(r, profit))
}
