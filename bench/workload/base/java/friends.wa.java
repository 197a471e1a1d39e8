import java.util.Scanner;

public class Main {
    public static void main(String[] args) {
        Scanner sc = new Scanner(System.in);
        int a = sc.nextInt(), b = sc.nextInt(), c = sc.nextInt();
        // everyone walks to the first friend
        System.out.println(Math.abs(b - a) + Math.abs(c - b));
    }
}
