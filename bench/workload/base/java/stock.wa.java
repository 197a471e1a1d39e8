import java.util.Scanner;

public class Main {
    public static void main(String[] args) {
        Scanner sc = new Scanner(System.in);
        int n = sc.nextInt(), m = sc.nextInt(), r = sc.nextInt();
        int minBuy = Integer.MAX_VALUE;
        for (int i = 0; i < n; i++) minBuy = Math.min(minBuy, sc.nextInt());
        int maxSell = 0;
        for (int i = 0; i < m; i++) maxSell = Math.max(maxSell, sc.nextInt());
        // forgot that trading can lose money
        int shares = r / minBuy;
        System.out.println(r % minBuy + shares * maxSell);
    }
}
