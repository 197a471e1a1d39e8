import java.io.*;
import java.util.*;

public class Main {
    public static void main(String[] args) throws IOException {
        BufferedReader br = new BufferedReader(new InputStreamReader(System.in));
        StringTokenizer st = new StringTokenizer(br.readLine());
        int n = Integer.parseInt(st.nextToken());
        int k = Integer.parseInt(st.nextToken());
        String colors = br.readLine().trim();
        int[] freq = new int[26];
        for (char ch : colors.toCharArray()) {
            freq[ch - 'a']++;
        }
        boolean ok = true;
        for (int f : freq) {
            if (f > k) {
                ok = false;
                break;
            }
        }
        System.out.println(ok ? "YES" : "NO");
    }
}
