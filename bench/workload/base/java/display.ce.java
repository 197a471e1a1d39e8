import java.util.Scanner;

public class Main {
    public static void main(String[] args) {
        Scanner sc = new Scanner(System.in);
        int n = sc.nextInt();
        int best = 1;
        for (int a = 1; a * a <= n; a++) {
            if (n % a == 0) best = a;
        }
        System.out.println(best + " " + n / best)
    }
}
