import java.util.Scanner;

public class Main {
    public static void main(String[] args) {
        Scanner sc = new Scanner(System.in);
        String s = sc.next();
        String target = "hello";
        int j = 0;
        for (char ch : s) {
            if (j < 5 && ch == target.charAt(j)) j++;
        }
        System.out.println(j == 5 ? "YES" : "NO");
    }
}
