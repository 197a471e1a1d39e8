fun main() {
    val sides = readLine()!!.split(" ").map { it.toInt() }.sorted()
    // the longest stick must be shorter than the other two together
    val need = sides[2] - sides[0] - sides[1] + 1
    println(maxOf(0, need))
}
