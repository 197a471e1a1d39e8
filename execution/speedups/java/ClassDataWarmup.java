import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.PriorityQueue;
import java.util.Random;
import java.util.Scanner;
import java.util.StringTokenizer;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import java.util.stream.Stream;

/**
 * The neutral program whose loaded JDK classes make the engine's class-data sharing archive
 * (execution/speedups/jvm_cds.py): what a typical judged program uses (standard input through Scanner
 * and BufferedReader, formatted output, the collections, big numbers, streams and lambdas, an
 * exception's stack trace). Only the JDK's own classes it loads go into the archive, never this
 * class nor anything of a judged program.
 */
public class ClassDataWarmup {
    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        StringTokenizer tokens = new StringTokenizer(in.readLine());
        long sum = 0;
        while (tokens.hasMoreTokens()) {
            sum += Long.parseLong(tokens.nextToken());
        }
        Scanner scanner = new Scanner(in.readLine() + "\n2.5 word\n");
        sum += scanner.nextInt() + scanner.nextLong();
        double real = scanner.nextDouble();
        String word = scanner.next();
        scanner.hasNextLine();

        List<Integer> list = new ArrayList<>(List.of(3, 1, 2));
        Collections.sort(list);
        list.sort(Collections.reverseOrder());
        int[] ints = {3, 1, 2};
        Arrays.sort(ints);
        Integer[] boxed = {3, 1, 2};
        Arrays.sort(boxed, (a, b) -> b - a);
        long[] longs = new long[3];
        Arrays.fill(longs, 1L);
        Map<Integer, Integer> counts = new HashMap<>();
        for (int value : ints) {
            counts.merge(value, 1, Integer::sum);
            counts.put(value, counts.getOrDefault(value, 0) + 1);
        }
        for (Map.Entry<Integer, Integer> entry : counts.entrySet()) {
            sum += entry.getKey() * entry.getValue();
        }
        TreeMap<Long, String> tree = new TreeMap<>(Map.of(1L, "a"));
        tree.floorKey(2L);
        TreeSet<Integer> sorted = new TreeSet<>(list);
        sorted.ceiling(2);
        PriorityQueue<long[]> queue = new PriorityQueue<>((p, q) -> Long.compare(p[0], q[0]));
        queue.add(new long[] {2, 1});
        queue.poll();
        ArrayDeque<Integer> deque = new ArrayDeque<>(list);
        deque.pollFirst();
        LinkedList<Integer> linked = new LinkedList<>(list);
        linked.removeLast();
        HashSet<String> seen = new HashSet<>(Arrays.asList(word, "x"));
        LinkedHashMap<String, Integer> ordered = new LinkedHashMap<>();
        ordered.put(word, seen.size());
        Iterator<Integer> it = list.iterator();
        sum += it.next();

        StringBuilder text = new StringBuilder();
        text.append(sum).append(' ').append(real).append('\n');
        String joined = String.join(",", word, String.valueOf(sum), "x".repeat(2));
        String formatted = String.format("%d %.3f %s %5s", sum, real, joined, word);
        sum += formatted.split(" ").length + formatted.toCharArray().length + formatted.chars().count();
        sum += Integer.toBinaryString(5).length() + Long.toString(7, 2).length();
        sum += Character.isDigit('1') ? 1 : 0;
        sum += (long) (Math.sqrt(2) + Math.pow(2, 3) + Math.abs(-1L) + Math.max(1, 2));
        sum += Objects.hash(1, 2) + Optional.of(1).orElse(0) + new Random(1).nextInt(5);
        BigInteger big = BigInteger.valueOf(7).pow(30).mod(BigInteger.TEN).add(BigInteger.ONE);
        BigDecimal decimal = new BigDecimal("1.5").add(BigDecimal.ONE).setScale(2);
        sum += IntStream.range(0, 10).map(i -> i * 2).filter(i -> i > 3).sum();
        sum += Arrays.stream(ints).max().getAsInt() + Stream.of("a", "b").count();
        String upper = Stream.of("a", "b").map(String::toUpperCase).collect(Collectors.joining());
        List<Integer> collected = list.stream().sorted().collect(Collectors.toList());

        PrintStream none = new PrintStream(OutputStream.nullOutputStream());
        try {
            int[] small = new int[1];
            small[ints[2]] = 1;
        } catch (ArrayIndexOutOfBoundsException e) {
            e.printStackTrace(none);
        }
        try {
            Integer.parseInt(word);
        } catch (NumberFormatException e) {
            e.printStackTrace(none);
        }

        PrintWriter out = new PrintWriter(new BufferedWriter(new OutputStreamWriter(System.out)));
        out.println(text.toString().trim() + " " + big + " " + decimal + " " + upper + collected);
        out.printf("%d%n", ordered.size());
        out.flush();
        System.out.println(sum);
        System.out.printf("%s%n", formatted);
    }
}
