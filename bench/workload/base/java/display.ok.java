import java.util.Scanner;

public class Main {
    public static void main(String[] args) {
        Scanner sc = new Scanner(System.in);
        int n = sc.nextInt();
        int rows = 1;
        // the largest divisor not above sqrt(n) gives the smallest difference
        for (int a = 1; (long) a * a <= n; a++) {
            if (n % a == 0) {
                rows = a;
            }
        }
        System.out.println(rows + " " + (n / rows));
    }
}
