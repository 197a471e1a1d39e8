import java.util.Scanner;

public class Main {
    public static void main(String[] args) {
        Scanner scanner = new Scanner(System.in);
        int n = scanner.nextInt();
        String name = scanner.next();
        int removed = 0;
        int run = 0;
        // count characters that extend a run of 'x' beyond two
        for (int i = 0; i < n; i++) {
            if (name.charAt(i) == 'x') {
                run++;
                if (run >= 3) {
                    removed++;
                }
            } else {
                run = 0;
            }
        }
        System.out.println(removed);
    }
}
