import java.io.*;
import java.util.*;

public class Main {
    public static void main(String[] args) throws IOException {
        BufferedReader br = new BufferedReader(new InputStreamReader(System.in));
        String[] first = br.readLine().split(" ");
        int n = Integer.parseInt(first[0]);
        int k = Integer.parseInt(first[1]);
        String colors = br.readLine();
        int[] freq = new int[26];
        for (int i = 0; i <= n; i++) {
            freq[colors.charAt(i) - 'a']++;
        }
        int best = 0;
        for (int f : freq) best = Math.max(best, f);
        System.out.println(best <= k ? "YES" : "NO");
    }
}
