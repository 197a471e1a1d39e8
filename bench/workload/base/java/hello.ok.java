import java.util.Scanner;

public class Main {
    static boolean saysHello(String s) {
        String target = "hello";
        int j = 0;
        for (int i = 0; i < s.length() && j < target.length(); i++) {
            if (s.charAt(i) == target.charAt(j)) {
                j++;
            }
        }
        return j == target.length();
    }

    public static void main(String[] args) {
        Scanner sc = new Scanner(System.in);
        String word = sc.next();
        System.out.println(saysHello(word) ? "YES" : "NO");
    }
}
