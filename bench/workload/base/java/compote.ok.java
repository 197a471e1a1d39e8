import java.util.Scanner;

public class Main {
    public static void main(String[] args) {
        Scanner scanner = new Scanner(System.in);
        int lemons = scanner.nextInt();
        int apples = scanner.nextInt();
        int pears = scanner.nextInt();
        // each portion uses 1 lemon, 2 apples and 4 pears
        int portions = Math.min(lemons, Math.min(apples / 2, pears / 4));
        System.out.println(portions * 7);
    }
}
