import java.util.Scanner;

public class Main {
    public static void main(String[] args) {
        Scanner sc = new Scanner(System.in);
        int n = sc.nextInt(), k = sc.nextInt(), l = sc.nextInt(), c = sc.nextInt();
        int d = sc.nextInt(), p = sc.nextInt(), nl = sc.nextInt(), np = sc.nextInt();
        int byDrink = k * l / nl;
        int byLime = c * d;
        int bySalt = p / np;
        int toasts = Math.min(byDrink, Math.min(byLime, bySalt));
        System.out.println(toasts / n);
    }
}
