import java.util.HashSet;
import java.util.Scanner;
import java.util.Set;

public class Main {
    public static void main(String[] args) {
        Scanner in = new Scanner(System.in);
        String s = in.next();
        Set<String> seen = new HashSet<>();
        String current = s;
        for (int i = 0; i < s.length(); i++) {
            seen.add(current);
            // move the last character to the front
            current = current.charAt(current.length() - 1) + current.substring(0, current.length() - 1);
        }
        System.out.println(seen.size());
    }
}
