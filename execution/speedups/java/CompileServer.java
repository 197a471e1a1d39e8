import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A warm compiler: one JVM that compiles programs one at a time, so that the JVM start-up and
 * the compiler's class loading and JIT warm-up are paid once per server instead of per program.
 *
 * It runs inside the engine's sandbox (execution/speedups/warm_compiler.py starts it). Its working
 * directory is the sandbox's work dir; before and after every compile everything in it is
 * deleted, so a compile sees only its own source, exactly as a cold compile in a fresh sandbox;
 * the sandbox's other writable folders (/tmp, /dev/shm) are emptied with it. The compiler is
 * given the cold compile's own arguments (relative paths, same output layout); an option that
 * could load code or widen the class path is refused (status 2), and javac always runs with
 * -proc:none and the work dir as its class path (a cold javac's, never the server JVM's).
 * Each compile runs on a fresh thread with the given stack size (the engine passes a smaller one
 * than a cold compiler's, so that a compile too deep for a cold compiler fails here first and is
 * redone cold); any failure that is not a plain compile error answers status 2.
 *
 * Protocol on stdin/stdout, big-endian, strings and blobs as an int length then bytes (UTF-8):
 *   hello (server):  int MAGIC, string mode
 *   request:         int argc, argc strings, string sourceName, blob source,
 *                    long timeoutMillis, long outputCap
 *   reply:           int status (0 compiled, 1 compile error, 2 no answer: compile it cold),
 *                    string reason, blob stdout, blob stderr, long wallNanos, long cpuNanos,
 *                    int fileCount, fileCount x (string relativePath, blob content)
 * After a status 2 reply the server exits: the compiler may be in any state.
 */
public final class CompileServer {
    static final int MAGIC = 0x57434f31;
    static final int OK = 0;
    static final int COMPILE_ERROR = 1;
    static final int RETRY = 2;

    /** A stream that stops growing at its cap and remembers that it overflowed. */
    static final class CappedBuffer extends OutputStream {
        final ByteArrayOutputStream data = new ByteArrayOutputStream();
        final long cap;
        boolean overflow;

        CappedBuffer(long cap) {
            this.cap = cap;
        }

        @Override
        public synchronized void write(int b) {
            write(new byte[] {(byte) b}, 0, 1);
        }

        @Override
        public synchronized void write(byte[] b, int off, int len) {
            long room = cap - data.size();
            if (len > room) {
                overflow = true;
                len = (int) Math.max(0, room);
            }
            data.write(b, off, len);
        }
    }

    static final class Outcome {
        int status;
        String reason = "";
        long cpuNanos = -1;
    }

    private final String mode;
    private final Path work;
    private final long stackBytes;
    private final Method kotlinExec;
    private final Class<?> kotlinCompiler;
    private final javax.tools.JavaCompiler javac;

    CompileServer(String mode, Path work, long stackBytes, String[] jars) throws Exception {
        this.mode = mode;
        this.work = work;
        this.stackBytes = stackBytes;
        if (mode.equals("kotlinc")) {
            // the compiler finds its home (and the stdlib of -include-runtime) from the URL its
            // classes came from: load it from the jar paths as given, as kotlinc's preloader does
            java.net.URL[] urls = new java.net.URL[jars.length];
            for (int i = 0; i < jars.length; i++) urls[i] = Paths.get(jars[i]).toUri().toURL();
            ClassLoader loader = new java.net.URLClassLoader(urls, ClassLoader.getPlatformClassLoader());
            kotlinCompiler = Class.forName("org.jetbrains.kotlin.cli.jvm.K2JVMCompiler", true, loader);
            kotlinExec = kotlinCompiler.getMethod("exec", PrintStream.class, String[].class);
            javac = null;
        } else if (mode.equals("javac")) {
            javac = javax.tools.ToolProvider.getSystemJavaCompiler();
            if (javac == null) throw new IllegalStateException("no system Java compiler");
            kotlinCompiler = null;
            kotlinExec = null;
        } else {
            throw new IllegalArgumentException("unknown mode " + mode);
        }
    }

    static String readString(DataInputStream in) throws IOException {
        return new String(readBlob(in), StandardCharsets.UTF_8);
    }

    static byte[] readBlob(DataInputStream in) throws IOException {
        int n = in.readInt();
        if (n < 0 || n > (256 << 20)) throw new IOException("bad length " + n);
        byte[] b = new byte[n];
        in.readFully(b);
        return b;
    }

    static void writeBlob(DataOutputStream out, byte[] b) throws IOException {
        out.writeInt(b.length);
        out.write(b);
    }

    static void writeString(DataOutputStream out, String s) throws IOException {
        writeBlob(out, s.getBytes(StandardCharsets.UTF_8));
    }

    /**
     * The writable folders of the sandbox besides the work dir: emptied with it, so that nothing
     * written by one compile outlives it.
     */
    static final Path[] SCRATCH = {Paths.get("/tmp"), Paths.get("/dev/shm")};

    /** Delete everything below the work dir and the scratch folders. */
    void wipe() throws IOException {
        List<Path> mounts = mountPoints();
        wipe(work, mounts);
        for (Path p : SCRATCH) wipe(p, mounts);
    }

    /** The sandbox's mount points (the engine's read-only folders may lie below /tmp). */
    static List<Path> mountPoints() throws IOException {
        List<Path> out = new ArrayList<>();
        for (String line : Files.readAllLines(Paths.get("/proc/self/mountinfo"))) {
            String[] f = line.split(" ");
            if (f.length > 4) out.add(Paths.get(f[4]));
        }
        return out;
    }

    /**
     * Delete everything below `root` (never following links) but the mount points in it; a
     * folder holding one is kept, emptied. Anything that cannot be deleted is an error: the
     * server then exits and a fresh one starts.
     */
    static void wipe(Path root, List<Path> mounts) throws IOException {
        if (!Files.isDirectory(root, LinkOption.NOFOLLOW_LINKS)) return;
        Files.walkFileTree(root, new SimpleFileVisitor<Path>() {
            @Override
            public FileVisitResult preVisitDirectory(Path d, BasicFileAttributes a) {
                return !d.equals(root) && mounts.contains(d)
                        ? FileVisitResult.SKIP_SUBTREE
                        : FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFile(Path f, BasicFileAttributes a) throws IOException {
                if (!mounts.contains(f)) Files.delete(f);
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult postVisitDirectory(Path d, IOException e) throws IOException {
                if (e != null) throw e;
                if (d.equals(root)) return FileVisitResult.CONTINUE;
                for (Path m : mounts) {
                    if (m.startsWith(d)) return FileVisitResult.CONTINUE;
                }
                Files.delete(d);
                return FileVisitResult.CONTINUE;
            }
        });
    }

    /** Options that could make the compiler load or run code of a client, read a file of
     * options, or look for classes anywhere but the cold compile's class path (the work dir):
     * the engine sends none, and a request carrying one is answered "compile it cold". */
    static final String[] JAVAC_REFUSED = {
        "-cp", "-classpath", "--class-path", "-sourcepath", "--source-path", "-p",
        "--module-path", "--upgrade-module-path", "--system", "-bootclasspath",
        "--boot-class-path", "-extdirs", "-endorseddirs", "--patch-module",
        "--module-source-path", "-s", "-h",
    };
    static final String[] JAVAC_REFUSED_PREFIXES = {
        "-processor", "--processor", "-proc:", "-Xplugin", "--plugin", "-J", "@",
        "-Xbootclasspath", "-A",
    };
    static final String[] KOTLINC_REFUSED = {
        "-script", "-kotlin-home", "-expression", "-e", "-cp", "-classpath",
    };
    static final String[] KOTLINC_REFUSED_PREFIXES = {
        "-Xplugin", "-P", "-Xcompiler-plugin", "-J", "@", "-Xbuild-file", "-Xscript",
    };

    static boolean refused(String a, String[] names, String[] prefixes) {
        for (String n : names) {
            if (a.equals(n) || a.startsWith(n + "=") || a.startsWith(n + ":")) return true;
        }
        for (String p : prefixes) {
            if (a.startsWith(p)) return true;
        }
        return false;
    }

    /** The compiler's arguments for one program, or null when they carry a refused option.
     * javac always runs with `-proc:none` (no annotation processor) and the work dir as its
     * class path, as a cold javac (no CLASSPATH: the current directory), never the server's. */
    String[] vetted(String[] args) {
        String[] names = javac != null ? JAVAC_REFUSED : KOTLINC_REFUSED;
        String[] prefixes = javac != null ? JAVAC_REFUSED_PREFIXES : KOTLINC_REFUSED_PREFIXES;
        List<String> kept = new ArrayList<>();
        for (String a : args) {
            if (javac != null && a.equals("-proc:none")) continue;
            if (refused(a, names, prefixes)) return null;
            kept.add(a);
        }
        if (javac != null) {
            kept.add(0, "-proc:none");
            kept.add(0, work.toString());
            kept.add(0, "-classpath");
        }
        return kept.toArray(new String[0]);
    }

    /** Run the compiler on the current thread; its exit status mapped to ours. */
    int compile(String[] args, PrintStream out, PrintStream err) throws Exception {
        if (javac != null) {
            int code = javac.run(null, out, err, args);
            return code == 0 ? OK : code == 1 ? COMPILE_ERROR : -code;
        }
        Object compiler = kotlinCompiler.getDeclaredConstructor().newInstance();
        Object code = kotlinExec.invoke(compiler, err, (Object) args);
        String name = String.valueOf(code);
        return name.equals("OK") ? OK : name.equals("COMPILATION_ERROR") ? COMPILE_ERROR : -9;
    }

    void serve() throws Exception {
        DataInputStream in = new DataInputStream(new FileInputStream(FileDescriptor.in));
        DataOutputStream out =
                new DataOutputStream(new java.io.BufferedOutputStream(new FileOutputStream(FileDescriptor.out), 1 << 16));
        // nothing a compiler prints on its own may reach the protocol stream
        PrintStream quiet = new PrintStream(OutputStream.nullOutputStream());
        System.setOut(quiet);
        System.setIn(new java.io.ByteArrayInputStream(new byte[0]));
        out.writeInt(MAGIC);
        writeString(out, mode);
        out.flush();
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        while (true) {
            int argc;
            try {
                argc = in.readInt();
            } catch (EOFException eof) {
                return;
            }
            if (argc < 0 || argc > 1000) throw new IOException("bad argc");
            String[] args = new String[argc];
            for (int i = 0; i < argc; i++) args[i] = readString(in);
            String sourceName = readString(in);
            byte[] source = readBlob(in);
            long timeoutMillis = in.readLong();
            long cap = in.readLong();
            if (sourceName.isEmpty() || sourceName.contains("/") || sourceName.startsWith(".")) {
                throw new IOException("bad source name");
            }
            wipe();
            String[] vetted = vetted(args);
            Files.write(work.resolve(sourceName), source);
            CappedBuffer cout = new CappedBuffer(cap);
            CappedBuffer cerr = new CappedBuffer(cap);
            PrintStream pout = new PrintStream(cout, true, StandardCharsets.UTF_8);
            PrintStream perr = new PrintStream(cerr, true, StandardCharsets.UTF_8);
            Outcome outcome = new Outcome();
            AtomicLong cpu = new AtomicLong(-1);
            Thread worker = new Thread(null, () -> {
                System.setOut(pout);
                System.setErr(perr);
                try {
                    if (vetted == null) {
                        outcome.status = -1;
                        outcome.reason = "refused option";
                        return;
                    }
                    outcome.status = compile(vetted, pout, perr);
                    if (outcome.status < 0) outcome.reason = "compiler status " + (-outcome.status);
                } catch (Throwable t) {
                    outcome.status = -1;
                    Throwable c = t instanceof java.lang.reflect.InvocationTargetException && t.getCause() != null ? t.getCause() : t;
                    outcome.reason = "compiler threw " + c;
                } finally {
                    cpu.set(mx.isCurrentThreadCpuTimeSupported() ? mx.getCurrentThreadCpuTime() : -1);
                    System.setOut(quiet);
                    System.setErr(quiet);
                }
            }, "compile", stackBytes);
            long t0 = System.nanoTime();
            worker.setDaemon(true);
            worker.start();
            worker.join(Math.max(1, timeoutMillis));
            long wall = System.nanoTime() - t0;
            pout.flush();
            perr.flush();
            int status;
            String reason;
            if (worker.isAlive()) {
                status = RETRY;
                reason = "timeout";
            } else if (outcome.status < 0) {
                status = RETRY;
                reason = outcome.reason;
            } else if (cout.overflow || cerr.overflow) {
                status = RETRY;
                reason = "output cap";
            } else {
                status = outcome.status;
                reason = "";
            }
            List<String> names = new ArrayList<>();
            List<byte[]> blobs = new ArrayList<>();
            if (status == OK) {
                try {
                    long[] total = {0};
                    Files.walkFileTree(work, new SimpleFileVisitor<Path>() {
                        @Override
                        public FileVisitResult visitFile(Path f, BasicFileAttributes a) throws IOException {
                            if (!a.isRegularFile()) throw new IOException("not a regular file: " + f);
                            String rel = work.relativize(f).toString();
                            if (rel.equals(sourceName)) return FileVisitResult.CONTINUE;
                            total[0] += a.size();
                            if (total[0] > cap * 32) throw new IOException("outputs too large");
                            names.add(rel);
                            blobs.add(Files.readAllBytes(f));
                            return FileVisitResult.CONTINUE;
                        }
                    });
                } catch (IOException e) {
                    status = RETRY;
                    reason = "outputs: " + e.getMessage();
                    names.clear();
                    blobs.clear();
                }
            }
            if (status != RETRY) wipe();
            out.writeInt(status);
            writeString(out, reason);
            writeBlob(out, cout.data.toByteArray());
            writeBlob(out, cerr.data.toByteArray());
            out.writeLong(wall);
            out.writeLong(cpu.get());
            out.writeInt(names.size());
            for (int i = 0; i < names.size(); i++) {
                writeString(out, names.get(i));
                writeBlob(out, blobs.get(i));
            }
            out.flush();
            if (status == RETRY) {
                Runtime.getRuntime().halt(3);
            }
        }
    }

    public static void main(String[] argv) throws Exception {
        if (argv.length < 2) {
            System.err.println("usage: CompileServer javac|kotlinc STACK_KB [JAR...]");
            System.exit(2);
        }
        long stack = Long.parseLong(argv[1]) << 10;
        String[] jars = java.util.Arrays.copyOfRange(argv, 2, argv.length);
        new CompileServer(argv[0], Paths.get("").toAbsolutePath(), stack, jars).serve();
        Runtime.getRuntime().halt(0);
    }
}
