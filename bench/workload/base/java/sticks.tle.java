import java.util.Scanner;

public class Main {
    public static void main(String[] args) {
        Scanner sc = new Scanner(System.in);
        long a = sc.nextLong();
        long b = sc.nextLong();
        long c = sc.nextLong();
        long minutes = 0;
        // keep growing a stick until the triangle inequality holds
        while (a + b <= c || a + c <= b || b + c <= a) {
            long longest = Math.max(a, Math.max(b, c));
            if (a == longest) {
                a++;
            } else if (b == longest) {
                b++;
            } else {
                c++;
            }
            minutes++;
        }
        System.out.println(minutes);
    }
}
