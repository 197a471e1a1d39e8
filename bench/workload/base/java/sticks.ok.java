import java.util.*;

public class Main {
    public static void main(String[] args) {
        Scanner sc = new Scanner(System.in);
        int[] sides = new int[3];
        for (int i = 0; i < 3; i++) {
            sides[i] = sc.nextInt();
        }
        Arrays.sort(sides);
        // the longest side must be strictly shorter than the sum of the other two
        int need = sides[2] - (sides[0] + sides[1]) + 1;
        System.out.println(Math.max(0, need));
    }
}
