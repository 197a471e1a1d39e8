import java.util.Scanner;

public class Main {
    public static void main(String[] args) {
        Scanner sc = new Scanner(System.in);
        int n = sc.nextInt();
        int m = sc.nextInt();
        int r = sc.nextInt();
        int minBuy = Integer.MAX_VALUE;
        for (int i = 0; i < n; i++) {
            minBuy = Math.min(minBuy, sc.nextInt());
        }
        int maxSell = 0;
        for (int i = 0; i < m; i++) {
            maxSell = Math.max(maxSell, sc.nextInt());
        }
        // buy as many shares as possible at the lowest price, sell them at the highest
        int shares = r / minBuy;
        int result = Math.max(r, r % minBuy + shares * maxSell);
        System.out.println(result);
    }
}
