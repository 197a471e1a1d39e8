import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;

public class Main {
    public static void main(String[] args) throws IOException {
        BufferedReader reader = new BufferedReader(new InputStreamReader(System.in));
        int n = Integer.parseInt(reader.readLine().trim());
        long count = 0;
        // c is determined by a and b: c = a ^ b
        for (int a = 1; a <= n; a++) {
            for (int b = a; b <= n; b++) {
                int c = a ^ b;
                if (c >= b && c <= n && a + b > c) {
                    count++;
                }
            }
        }
        System.out.println(count);
    }
}
