import java.util.*;

public class Main {
    public static void main(String[] args) {
        Scanner sc = new Scanner(System.in);
        long n = sc.nextLong();
        // Mahmoud takes everything when n is even; otherwise Ehab wins
        if (n % 2 == 0) {
            System.out.println("Mahmoud");
        } else {
            System.out.println("Ehab");
        }
    }
}
