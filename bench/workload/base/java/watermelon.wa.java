import java.util.Scanner;

public class Main {
    public static void main(String[] args) {
        Scanner sc = new Scanner(System.in);
        int w = sc.nextInt();
        // an even weight can always be split into two even parts
        System.out.println(w % 2 == 0 ? "NO" : "YES");
    }
}
