import java.io.*;

public class Main {
    public static void main(String[] args) throws IOException {
        BufferedReader br = new BufferedReader(new InputStreamReader(System.in));
        // all three numbers are on one line
        String[] parts = br.readLine().trim().split("\\s+");
        int a = Integer.parseInt(parts[0]);
        int b = Integer.parseInt(parts[1]);
        int c = Integer.parseInt(parts[2]);
        int k = Math.min(a, Math.min(b / 2, c / 4));
        System.out.println(7 * k);
    }
}
