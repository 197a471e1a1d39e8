import java.util.Scanner;

public class Main {
    public static void main(String[] args) {
        Scanner sc = new Scanner(System.in);
        int a = sc.nextInt();
        int b = sc.nextInt();
        int days = Math.min(a, b);
        int rest = Math.abs(a - b);
        System.out.println(days + " " + rest);
    }
}
