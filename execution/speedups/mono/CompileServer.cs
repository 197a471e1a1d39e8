// A warm C# compiler: one Mono process that compiles programs one at a time with mcs loaded
// in-process, so that Mono's start-up and the JIT compilation of mcs itself are paid once per
// server instead of once per program (a cold mcs spends most of its ~0.2 s there).
//
// Same protocol and rules as java/CompileServer.java (see there and warm_compiler.py): it runs
// in the engine's sandbox, its working directory is the sandbox's work dir, wiped before and
// after every compile; mcs gets the cold compile's own arguments (relative paths); each compile
// runs on a fresh thread with the given stack size; anything but "compiled" or "compile error"
// answers status 2 and the server exits (the engine then compiles the program cold).
//
// mcs keeps compiler state in statics; CompilerCallableEntryPoint.Reset(), its reset for
// in-process use, clears all of it after every compile. The compile itself is mcs's own `Main`
// without its Environment.Exit: the same argument parser, report printer and summary line, so
// stdout and stderr are byte for byte a cold mcs's.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Reflection;
using System.Text;
using System.Threading;

public static class CompileServer
{
    const int Magic = 0x57434f31;
    const int Ok = 0;
    const int CompileError = 1;
    const int Retry = 2;

    /// <summary>A stream that stops growing at its cap and remembers that it overflowed.</summary>
    sealed class CappedStream : Stream
    {
        public readonly MemoryStream Data = new MemoryStream();
        readonly long cap;
        public bool Overflow;

        public CappedStream(long cap) { this.cap = cap; }

        public override void Write(byte[] buffer, int offset, int count)
        {
            lock (Data)
            {
                long room = cap - Data.Length;
                if (count > room) { Overflow = true; count = (int)Math.Max(0, room); }
                Data.Write(buffer, offset, count);
            }
        }

        public override bool CanRead { get { return false; } }
        public override bool CanSeek { get { return false; } }
        public override bool CanWrite { get { return true; } }
        public override long Length { get { return Data.Length; } }
        public override long Position { get { return Data.Length; } set { throw new NotSupportedException(); } }
        public override void Flush() { }
        public override int Read(byte[] b, int o, int c) { throw new NotSupportedException(); }
        public override long Seek(long o, SeekOrigin s) { throw new NotSupportedException(); }
        public override void SetLength(long v) { throw new NotSupportedException(); }
    }

    static readonly UTF8Encoding Utf8 = new UTF8Encoding(false);

    static void ReadFully(Stream s, byte[] buf)
    {
        int got = 0;
        while (got < buf.Length)
        {
            int n = s.Read(buf, got, buf.Length - got);
            if (n <= 0) throw new EndOfStreamException();
            got += n;
        }
    }

    static int ReadInt(Stream s)
    {
        byte[] b = new byte[4];
        ReadFully(s, b);
        return (b[0] << 24) | (b[1] << 16) | (b[2] << 8) | b[3];
    }

    static long ReadLong(Stream s)
    {
        long hi = (uint)ReadInt(s);
        long lo = (uint)ReadInt(s);
        return (hi << 32) | lo;
    }

    static byte[] ReadBlob(Stream s)
    {
        int n = ReadInt(s);
        if (n < 0 || n > (256 << 20)) throw new IOException("bad length " + n);
        byte[] b = new byte[n];
        ReadFully(s, b);
        return b;
    }

    static void WriteInt(Stream s, int v)
    {
        s.Write(new byte[] { (byte)(v >> 24), (byte)(v >> 16), (byte)(v >> 8), (byte)v }, 0, 4);
    }

    static void WriteLong(Stream s, long v)
    {
        WriteInt(s, (int)(v >> 32));
        WriteInt(s, (int)v);
    }

    static void WriteBlob(Stream s, byte[] b)
    {
        WriteInt(s, b.Length);
        s.Write(b, 0, b.Length);
    }

    static void WriteString(Stream s, string v) { WriteBlob(s, Utf8.GetBytes(v)); }

    static bool IsLink(FileSystemInfo f)
    {
        return (f.Attributes & FileAttributes.ReparsePoint) != 0;
    }

    /// <summary>The sandbox's writable folders besides the work dir: emptied with it, so that
    /// nothing written by one compile outlives it.</summary>
    static readonly string[] Scratch = { "/tmp", "/dev/shm" };

    static void WipeAll(DirectoryInfo work)
    {
        HashSet<string> mounts = new HashSet<string>();
        foreach (string line in File.ReadAllLines("/proc/self/mountinfo"))
        {
            string[] f = line.Split(' ');
            if (f.Length > 4) mounts.Add(f[4]);
        }
        Wipe(work, true);
        foreach (string p in Scratch)
        {
            DirectoryInfo d = new DirectoryInfo(p);
            if (d.Exists && !IsLink(d)) WipeScratch(d, true, mounts);
        }
    }

    /// <summary>Delete everything below a scratch folder but the mount points in it (the
    /// engine's read-only folders may lie below /tmp); a folder holding one is kept, emptied.
    /// Anything else that cannot be deleted is an error: the server exits, a fresh one
    /// starts.</summary>
    static void WipeScratch(DirectoryInfo dir, bool isRoot, HashSet<string> mounts)
    {
        foreach (FileSystemInfo f in dir.GetFileSystemInfos())
        {
            if (mounts.Contains(f.FullName)) continue;
            DirectoryInfo sub = f as DirectoryInfo;
            if (sub != null && !IsLink(sub)) WipeScratch(sub, false, mounts);
            else f.Delete();
        }
        if (isRoot) return;
        string prefix = dir.FullName.TrimEnd('/') + "/";
        foreach (string m in mounts)
            if (m.StartsWith(prefix)) return;
        dir.Delete();
    }

    /// <summary>Options that read more options from a file or point the compiler at a client's
    /// assemblies: the engine sends none, and a request carrying one is answered "compile it
    /// cold".</summary>
    static bool Refused(string[] args)
    {
        foreach (string a in args)
            if (a.StartsWith("@") || a.StartsWith("-lib:") || a.StartsWith("/lib:")) return true;
        return false;
    }

    /// <summary>Delete everything below the work dir, never following links.</summary>
    static void Wipe(DirectoryInfo dir, bool isRoot)
    {
        foreach (FileSystemInfo f in dir.GetFileSystemInfos())
        {
            DirectoryInfo sub = f as DirectoryInfo;
            if (sub != null && !IsLink(sub)) Wipe(sub, false);
            else f.Delete();
        }
        if (!isRoot) dir.Delete();
    }

    /// <summary>The regular files below the work dir but the source; a link or any other kind
    /// of file is an error (a cold compile's outputs are plain files).</summary>
    static void Collect(DirectoryInfo dir, string prefix, string source, long budget,
                        List<string> names, List<byte[]> blobs, ref long total)
    {
        foreach (FileSystemInfo f in dir.GetFileSystemInfos())
        {
            string rel = prefix + f.Name;
            if (IsLink(f)) throw new IOException("not a regular file: " + rel);
            DirectoryInfo sub = f as DirectoryInfo;
            if (sub != null)
            {
                Collect(sub, rel + "/", source, budget, names, blobs, ref total);
                continue;
            }
            if (rel == source) continue;
            byte[] data = File.ReadAllBytes(f.FullName);
            total += data.Length;
            if (total > budget) throw new IOException("outputs too large");
            names.Add(rel);
            blobs.Add(data);
        }
    }

    sealed class Mcs
    {
        readonly Type parser, context, printer, driver, report;
        readonly MethodInfo reset;

        public Mcs(string path)
        {
            Assembly a = Assembly.LoadFrom(path);
            parser = a.GetType("Mono.CSharp.CommandLineParser", true);
            context = a.GetType("Mono.CSharp.CompilerContext", true);
            printer = a.GetType("Mono.CSharp.ConsoleReportPrinter", true);
            driver = a.GetType("Mono.CSharp.Driver", true);
            report = a.GetType("Mono.CSharp.Report", true);
            reset = a.GetType("Mono.CSharp.CompilerCallableEntryPoint", true).GetMethod("Reset", Type.EmptyTypes);
            if (reset == null) throw new MissingMethodException("CompilerCallableEntryPoint.Reset()");
        }

        static object New(Type t, params object[] args)
        {
            const BindingFlags any = BindingFlags.Instance | BindingFlags.Public | BindingFlags.NonPublic;
            return Activator.CreateInstance(t, any, null, args, null);
        }

        static object Get(Type t, object o, string name)
        {
            return t.GetProperty(name).GetValue(o, null);
        }

        /// <summary>mcs's Main on Console.Out and Console.Error: 0 compiled, 1 errors.</summary>
        public int Compile(string[] args)
        {
            try
            {
                object cmd = New(parser, Console.Out);
                object settings = parser.GetMethod("ParseArguments", new Type[] { typeof(string[]) }).Invoke(cmd, new object[] { args });
                if (settings == null) return 1;
                if ((bool)Get(parser, cmd, "HasBeenStopped")) return 0;
                object ctx = New(context, settings, New(printer));
                object d = New(driver, ctx);
                bool ok = (bool)driver.GetMethod("Compile").Invoke(d, null);
                object r = Get(context, ctx, "Report");
                int errors = (int)Get(report, r, "Errors");
                int warnings = (int)Get(report, r, "Warnings");
                if (ok && errors == 0)
                {
                    if (warnings > 0) Console.WriteLine("Compilation succeeded - {0} warning(s)", warnings);
                    return 0;
                }
                Console.WriteLine("Compilation failed: {0} error(s), {1} warnings", errors, warnings);
                return 1;
            }
            finally
            {
                reset.Invoke(null, null);
            }
        }
    }

    /// <summary>True when mcs reported an internal compiler error (CS0584).</summary>
    static bool InternalError(CappedStream cout, CappedStream cerr)
    {
        foreach (CappedStream c in new CappedStream[] { cout, cerr })
        {
            string text = Encoding.UTF8.GetString(c.Data.ToArray());
            if (text.Contains("error CS0584")) return true;
        }
        return false;
    }

    public static int Main(string[] argv)
    {
        if (argv.Length != 3 || argv[0] != "mcs")
        {
            Console.Error.WriteLine("usage: CompileServer.exe mcs STACK_KB MCS_EXE");
            return 2;
        }
        int stackBytes = checked(int.Parse(argv[1]) * 1024);
        Mcs mcs = new Mcs(argv[2]);
        DirectoryInfo work = new DirectoryInfo(Directory.GetCurrentDirectory());

        Encoding consoleEncoding = Console.Out.Encoding;
        if (consoleEncoding.CodePage == 65001) consoleEncoding = Utf8;  // no byte-order mark
        Stream input = Console.OpenStandardInput();
        Stream output = new BufferedStream(Console.OpenStandardOutput(), 1 << 16);
        // nothing a compiler prints on its own may reach the protocol stream
        Console.SetOut(TextWriter.Null);
        Console.SetError(TextWriter.Null);
        Console.SetIn(TextReader.Null);
        WriteInt(output, Magic);
        WriteString(output, "mcs");
        output.Flush();
        Process self = Process.GetCurrentProcess();
        while (true)
        {
            int argc;
            try { argc = ReadInt(input); }
            catch (EndOfStreamException) { return 0; }
            if (argc < 0 || argc > 1000) throw new IOException("bad argc");
            string[] args = new string[argc];
            for (int i = 0; i < argc; i++) args[i] = Utf8.GetString(ReadBlob(input));
            string sourceName = Utf8.GetString(ReadBlob(input));
            byte[] source = ReadBlob(input);
            long timeoutMillis = ReadLong(input);
            long cap = ReadLong(input);
            if (sourceName.Length == 0 || sourceName.Contains("/") || sourceName.StartsWith("."))
                throw new IOException("bad source name");
            WipeAll(work);
            File.WriteAllBytes(Path.Combine(work.FullName, sourceName), source);

            CappedStream cout = new CappedStream(cap);
            CappedStream cerr = new CappedStream(cap);
            // the encoding a cold mcs's console has (from the locale of the same environment)
            StreamWriter wout = new StreamWriter(cout, consoleEncoding);
            StreamWriter werr = new StreamWriter(cerr, consoleEncoding);
            wout.AutoFlush = werr.AutoFlush = true;
            int status = -1;
            string reason = "";
            Thread worker = new Thread(() =>
            {
                Console.SetOut(wout);
                Console.SetError(werr);
                try
                {
                    if (Refused(args)) { reason = "refused option"; status = -1; return; }
                    status = mcs.Compile(args) == 0 ? Ok : CompileError;
                }
                catch (Exception e)
                {
                    Exception c = e is TargetInvocationException && e.InnerException != null ? e.InnerException : e;
                    reason = "compiler threw " + c.GetType().FullName + ": " + c.Message;
                    status = -1;
                }
                finally
                {
                    Console.SetOut(TextWriter.Null);
                    Console.SetError(TextWriter.Null);
                }
            }, stackBytes);
            TimeSpan cpu0 = self.TotalProcessorTime;
            Stopwatch clock = Stopwatch.StartNew();
            worker.IsBackground = true;
            worker.Start();
            bool done = worker.Join((int)Math.Max(1, Math.Min(timeoutMillis, int.MaxValue)));
            long wallNanos = clock.Elapsed.Ticks * 100;
            self.Refresh();
            long cpuNanos = (self.TotalProcessorTime - cpu0).Ticks * 100;
            int answer;
            if (!done) { answer = Retry; reason = "timeout"; }
            else if (status < 0) { answer = Retry; }
            else if (cout.Overflow || cerr.Overflow) { answer = Retry; reason = "output cap"; }
            else if (status == CompileError && InternalError(cout, cerr))
            {
                // mcs reports its own crashes (a stack overflow on the smaller warm stack, an
                // exhausted heap...) as this compile error: only a cold compile can tell
                answer = Retry;
                reason = "internal compiler error";
            }
            else { answer = status; }

            List<string> names = new List<string>();
            List<byte[]> blobs = new List<byte[]>();
            if (answer == Ok)
            {
                try
                {
                    long total = 0;
                    Collect(work, "", sourceName, cap * 32, names, blobs, ref total);
                }
                catch (IOException e)
                {
                    answer = Retry;
                    reason = "outputs: " + e.Message;
                    names.Clear();
                    blobs.Clear();
                }
            }
            if (answer != Retry) WipeAll(work);
            WriteInt(output, answer);
            WriteString(output, reason);
            WriteBlob(output, done ? cout.Data.ToArray() : new byte[0]);
            WriteBlob(output, done ? cerr.Data.ToArray() : new byte[0]);
            WriteLong(output, wallNanos);
            WriteLong(output, cpuNanos);
            WriteInt(output, names.Count);
            for (int i = 0; i < names.Count; i++)
            {
                WriteString(output, names[i]);
                WriteBlob(output, blobs[i]);
            }
            output.Flush();
            if (answer == Retry) Environment.Exit(3);
        }
    }
}
