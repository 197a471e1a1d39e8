import java.util.Scanner;

public class Main {
    public static void main(String[] args) {
        Scanner sc = new Scanner(System.in);
        int n = sc.nextInt();
        String days = sc.next();
        int toFrancisco = 0;
        int toSeattle = 0;
        for (int i = 1; i < n; i++) {
            char prev = days.charAt(i - 1);
            char cur = days.charAt(i);
            if (prev == 'S' && cur == 'F') {
                toFrancisco++;
            } else if (prev == 'F' && cur == 'S') {
                toSeattle++;
            }
        }
        System.out.println(toFrancisco > toSeattle ? "YES" : "NO");
    }
}
