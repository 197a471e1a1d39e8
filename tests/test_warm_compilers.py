"""Warm compilers (execution/speedups/warm_compiler.py): same outputs and verdicts as a cold compile, one
program's compile sees nothing of the previous one, and every failure falls back to a cold
compile transparently."""

from __future__ import annotations

import dataclasses
import io
import time
import zipfile
from collections.abc import Iterator

import pytest

from code_eval_taskpack.execution import Engine, Job, Result, TestCase, Verdict
from code_eval_taskpack.execution.backends.local import LocalBackend
from code_eval_taskpack.execution.languages.registry import resolve
from code_eval_taskpack.execution.limits import COMPILE_LIMITS, Limits
from code_eval_taskpack.execution.run.runner import source_layout
from code_eval_taskpack.execution.sandbox.command import Sandbox
from code_eval_taskpack.execution.sandbox.outcome import default_env
from code_eval_taskpack.execution.speedups import warm_compiler as wc
from tests.conftest import require_binary
from tests.engine_programs import COMPILE_ERROR, HELLO, LUCKY, check_isolation, describe, wrong

LANGS = ("Java", "Kotlin", "C#")


@pytest.fixture(scope="module", autouse=True)
def toolchains() -> None:
    require_binary("javac")
    require_binary("kotlinc")
    require_binary("mcs")


@pytest.fixture
def warm_on(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv(wc.ENV_SWITCH, "1")
    yield


def judge(lang: str, src: str, tests: list[TestCase], warm: bool, mp: pytest.MonkeyPatch) -> Result:
    mp.setenv(wc.ENV_SWITCH, "1" if warm else "0")
    job = Job(
        language=lang, source_code=src, tests=tuple(tests), time_limit_s=2, memory_limit_mb=256
    )
    r = Engine(workers=1).judge(job)
    check_isolation(r.isolation)
    return r


# -- real programs: correct, wrong, crashing, compile errors, packages, main variations ---------


def _common(lang: str) -> dict[str, tuple[str, Verdict]]:
    """The programs every language has: right, wrong, not compiling."""
    return {
        "lucky": (LUCKY[lang], Verdict.PASSED),
        "lucky_wrong": (wrong(lang), Verdict.WRONG_ANSWER),
        "compile_error": (COMPILE_ERROR[lang], Verdict.COMPILATION_ERROR),
    }


JAVA_PROGRAMS: dict[str, tuple[str, Verdict]] = {
    **_common("Java"),
    "package": (
        "package solution.impl;\nimport java.util.*;\npublic class Solver {\n"
        "  static class Pair { long a; Pair(long a) { this.a = a; } }\n"
        "  public static void main(String[] args) {\n    Scanner in = new Scanner(System.in);\n"
        "    int n = in.nextInt();\n    Pair p = new Pair((1L << (n + 1)) - 2);\n"
        "    Runnable r = () -> System.out.println(p.a);\n    r.run();\n  }\n}\n",
        Verdict.PASSED,
    ),
    "runtime_error": (
        "public class Main {\n  public static void main(String[] a) {\n"
        "    int[] x = new int[2];\n    System.out.println(x[5]);\n  }\n}\n",
        Verdict.RUNTIME_ERROR,
    ),
    "two_classes_and_enum": (
        "import java.io.*;\nenum Mode { A, B }\nclass Helper { static long f(int n) "
        "{ return (1L << (n + 1)) - 2; } }\npublic class Main {\n"
        "  public static void main(String[] a) throws IOException {\n"
        "    BufferedReader br = new BufferedReader(new InputStreamReader(System.in));\n"
        "    int n = Integer.parseInt(br.readLine().trim());\n"
        '    System.out.println(Mode.A == Mode.valueOf("A") ? Helper.f(n) : -1);\n  }\n}\n',
        Verdict.PASSED,
    ),
    "missing_semicolon": (
        "public class Main { public static void main(String[] a) { System.out.println(1) } }\n",
        Verdict.COMPILATION_ERROR,
    ),
}

KOTLIN_PROGRAMS: dict[str, tuple[str, Verdict]] = {
    **_common("Kotlin"),
    "main_args": (
        "fun main(args: Array<String>) {\n    val n = readLine()!!.trim().toInt()\n"
        "    println((1L shl (n + 1)) - 2)\n}\n",
        Verdict.PASSED,
    ),
    "object_and_data_class": (
        "import java.io.*\ndata class P(val v: Long)\nobject Solver {\n"
        "    fun solve(n: Int) = P((1L shl (n + 1)) - 2)\n}\nfun main() {\n"
        "    val br = BufferedReader(InputStreamReader(System.`in`))\n"
        "    println(Solver.solve(br.readLine().trim().toInt()).v)\n}\n",
        Verdict.PASSED,
    ),
    "runtime_error": ("fun main() {\n    val x: String? = null\n    println(x!!.length)\n}\n",
                      Verdict.RUNTIME_ERROR),
    "unresolved": ("fun main() {\n    printn(readLine())\n}\n", Verdict.COMPILATION_ERROR),
}  # fmt: skip

CSHARP_PROGRAMS: dict[str, tuple[str, Verdict]] = {
    **_common("C#"),
    "linq_bigint_struct": (
        "using System;\nusing System.Linq;\nusing System.Numerics;\nusing System.Collections.Generic;\n"
        "namespace Solution {\n  enum Mode { A, B }\n  struct Pair { public long V; }\n"
        "  static class Helper { public static BigInteger F(int n) => BigInteger.Pow(2, n + 1) - 2; }\n"
        "  class Program {\n    static void Main(string[] args) {\n"
        "      int n = Console.ReadLine().Split(' ').Select(int.Parse).First();\n"
        "      var p = new Pair { V = (long)Helper.F(n) };\n      var l = new List<long> { p.V };\n"
        "      Console.WriteLine(Mode.A == Mode.B ? -1 : l.Sum());\n    }\n  }\n}\n",
        Verdict.PASSED,
    ),
    "warnings": (
        "using System;\nclass P { static void Main() { int unused; int n = int.Parse(Console.ReadLine());\n"
        "  Console.WriteLine((1L << (n + 1)) - 2); } }\n",
        Verdict.PASSED,
    ),
    "runtime_error": (
        "using System;\nclass P { static void Main() { int[] x = new int[2]; Console.WriteLine(x[5]); } }\n",
        Verdict.RUNTIME_ERROR,
    ),
    "non_ascii_error": (
        "using System;\nclass P { static void Main() { int счёт = 1; Console.WriteLine(счё); } }\n",
        Verdict.COMPILATION_ERROR,
    ),
    "two_errors_and_a_warning": (
        "using System;\nclass P { static void Main() { int w; string s = 1; Foo(); } }\n",
        Verdict.COMPILATION_ERROR,
    ),
}

PROGRAMS = {"Java": JAVA_PROGRAMS, "Kotlin": KOTLIN_PROGRAMS, "C#": CSHARP_PROGRAMS}
LUCKY_TESTS = [TestCase("3\n", ("14\n",)), TestCase("1\n", ("2\n",))]


@pytest.mark.parametrize("lang", LANGS)
def test_verdicts_identical_to_cold(lang: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, (src, expected) in PROGRAMS[lang].items():
        warm = judge(lang, src, LUCKY_TESTS, True, monkeypatch)
        cold = judge(lang, src, LUCKY_TESTS, False, monkeypatch)
        assert warm.compile is not None and cold.compile is not None
        assert warm.compile.warm, (name, describe(warm))
        assert not cold.compile.warm
        assert warm.verdict is cold.verdict is expected, (name, describe(warm), describe(cold))
        assert warm.detail == cold.detail, name
        assert [t.verdict for t in warm.tests] == [t.verdict for t in cold.tests], name
        assert [t.stdout for t in warm.tests] == [t.stdout for t in cold.tests], name
        if expected is Verdict.COMPILATION_ERROR:
            # the compiler's own diagnostics (a cold kotlinc adds a JVM warning line first)
            assert warm.compile.stderr.strip(), name
            assert warm.compile.stderr.strip() in cold.compile.stderr, name
        if lang == "C#":
            # mcs's own Main in-process: diagnostics and summary line byte for byte
            assert (warm.compile.stdout, warm.compile.stderr) == (
                cold.compile.stdout,
                cold.compile.stderr,
            ), name


# -- byte-level outputs --------------------------------------------------------------------------


def _spec_and_argv(
    lang: str, src: str
) -> tuple[wc.ServerSpec, tuple[str, ...], list[str], dict[str, str]]:
    rt = resolve(lang)
    values = source_layout(rt, src)
    argv = rt.expand(rt.compile or (), **values)
    limits = COMPILE_LIMITS.scaled(memory_mb=rt.compile_memory_mb or COMPILE_LIMITS.memory_mb)
    found = wc.server_spec(rt, argv, limits)
    assert found is not None, lang
    return found[0], found[1], argv, values


def _cold_outputs(lang: str, src: str) -> dict[str, bytes]:
    rt = resolve(lang)
    _, _, argv, values = _spec_and_argv(lang, src)
    limits = COMPILE_LIMITS.scaled(memory_mb=rt.compile_memory_mb or COMPILE_LIMITS.memory_mb)
    with Sandbox(files={values["source"]: src.encode()}, ro_paths=rt.extra_ro_paths) as box:
        env = default_env(box.workdir) | rt.compile_env
        out = box.run(argv, limits=limits, env=env)
        assert out.ok, out.stderr
        listing = box.run(
            ["find", ".", "-type", "f", "!", "-name", values["source"], "!", "-path", "./.cache/*"],
            limits=Limits(cpu_s=5),
        )
        files = {}
        for line in sorted(listing.stdout.decode().split()):
            got = box.run(["cat", line], limits=Limits(cpu_s=5, output_bytes=64 << 20))
            files[line[2:]] = got.stdout
    return files


def _warm_outputs(lang: str, src: str) -> dict[str, bytes]:
    import tarfile

    spec, args, _, values = _spec_and_argv(lang, src)
    reply = wc.POOL.compile(spec, args, values["source"], src.encode(), 8 << 20)
    assert reply is not None and reply.ok
    with tarfile.open(fileobj=io.BytesIO(reply.archive)) as tar:
        return {
            m.name.removeprefix("./"): tar.extractfile(m).read()  # type: ignore[union-attr]
            for m in tar.getmembers()
            if m.isfile()
        }


def _jar_entries(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        return {n: z.read(n) for n in z.namelist()}


def _assembly_differences(a: bytes, b: bytes) -> int:
    """Bytes that differ between two assemblies of one length (-1: lengths differ)."""
    return -1 if len(a) != len(b) else sum(x != y for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("lang", LANGS)
def test_outputs_identical_to_cold(lang: str, warm_on: None) -> None:
    """Same files, same bytes (a jar's entries: zip timestamps differ between any two runs; an
    assembly: its timestamp and module id differ between any two compiles, cold or warm)."""
    for name in ("package", "two_classes_and_enum", "main_args", "object_and_data_class",
                 "linq_bigint_struct", "warnings"):  # fmt: skip
        if name not in PROGRAMS[lang]:
            continue
        src = PROGRAMS[lang][name][0]
        warm, cold = _warm_outputs(lang, src), _cold_outputs(lang, src)
        assert sorted(warm) == sorted(cold), name
        for path, data in cold.items():
            if path.endswith(".jar"):
                assert _jar_entries(warm[path]) == _jar_entries(data), (name, path)
            elif path.endswith(".exe"):
                cold_again = _cold_outputs(lang, src)[path]
                noise = _assembly_differences(cold_again, data)
                assert 0 <= noise <= 32, (name, noise)
                assert 0 <= _assembly_differences(warm[path], data) <= noise, (name, path)
            else:
                assert warm[path] == data, (name, path)


# -- isolation between programs -----------------------------------------------------------------

NEIGHBOURS = {
    "Java": (
        "class Helper { static int v() { return 41; } }\n"
        "public class Main { public static void main(String[] a) "
        "{ System.out.println(Helper.v() + 1); } }\n",
        "public class Main { public static void main(String[] a) "
        "{ System.out.println(Helper.v() + 1); } }\n",
    ),
    "Kotlin": (
        "fun helper() = 41\nfun main() { println(helper() + 1) }\n",
        "fun main() { println(helper() + 1) }\n",
    ),
    "C#": (
        "using System;\nstatic class Helper { public static int V() { return 41; } }\n"
        "class P { static void Main() { Console.WriteLine(Helper.V() + 1); } }\n",
        "using System;\nclass P { static void Main() { Console.WriteLine(Helper.V() + 1); } }\n",
    ),
}


@pytest.mark.parametrize("lang", LANGS)
def test_previous_program_is_invisible(lang: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The second program uses what the first defined: a compile error, as in a fresh sandbox
    (the first program's sources and classes are gone from the server's work dir)."""
    first, second = NEIGHBOURS[lang]
    tests = [TestCase("", ("42\n",))]
    a = judge(lang, first, tests, True, monkeypatch)
    assert a.verdict is Verdict.PASSED and a.compile and a.compile.warm, describe(a)
    b = judge(lang, second, tests, True, monkeypatch)
    assert b.verdict is Verdict.COMPILATION_ERROR and b.compile and b.compile.warm, describe(b)
    assert "Helper" in b.compile.stderr or "helper" in b.compile.stderr


def test_no_annotation_processing(warm_on: None) -> None:
    """A program cannot get an annotation processor run: javac is given -proc:none, and a
    processor the program declares itself leaves no trace in the outputs (same as cold)."""
    src = (
        "import java.util.Set;\nimport javax.annotation.processing.*;\n"
        "import javax.lang.model.element.TypeElement;\n"
        '@SupportedAnnotationTypes("*")\n'
        "class P extends AbstractProcessor {\n"
        "  public boolean process(Set<? extends TypeElement> a, RoundEnvironment r) {\n"
        '    try { new java.io.File("pwned").createNewFile(); } catch (Exception e) {}\n'
        "    return false; } }\n"
        "public class Main { public static void main(String[] a) {} }\n"
    )
    _, args, _, _ = _spec_and_argv("Java", src)
    assert "-proc:none" in args
    warm = _warm_outputs("Java", src)
    assert sorted(warm) == ["Main.class", "P.class"]
    assert warm == _cold_outputs("Java", src)


# -- failures fall back to a cold compile --------------------------------------------------------


def _idle_servers(lang: str) -> list[wc.WarmServer]:
    spec, _, _, _ = _spec_and_argv(lang, HELLO[lang])
    return list(wc.POOL._idle.get(spec.key, []))


@pytest.mark.parametrize("lang", LANGS)
def test_dead_server_is_transparent(lang: str, monkeypatch: pytest.MonkeyPatch) -> None:
    tests = [TestCase("", ("Hello, World!\n",))]
    first = judge(lang, HELLO[lang], tests, True, monkeypatch)
    assert first.verdict is Verdict.PASSED and first.compile and first.compile.warm
    servers = _idle_servers(lang)
    assert servers
    for s in servers:
        s._box.kill()  # the server (and its sandbox) die between two programs
    time.sleep(0.2)
    r = judge(lang, LUCKY[lang], LUCKY_TESTS, True, monkeypatch)
    assert r.verdict is Verdict.PASSED, describe(r)
    assert r.compile is not None and not r.compile.warm  # compiled cold
    again = judge(lang, wrong(lang), LUCKY_TESTS, True, monkeypatch)
    assert again.verdict is Verdict.WRONG_ANSWER and again.compile and again.compile.warm


@pytest.mark.parametrize("lang", LANGS)
def test_timeout_is_compiled_cold(lang: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A warm compile past its timeout is redone cold (same verdict), and the next program is
    compiled warm again with its own verdict."""
    monkeypatch.setattr(wc, "TIMEOUT_SHARE", 1e-6)  # every warm compile times out
    r = judge(lang, LUCKY[lang], LUCKY_TESTS, True, monkeypatch)
    assert r.verdict is Verdict.PASSED and r.compile and not r.compile.warm, describe(r)
    monkeypatch.undo()
    nxt = judge(lang, wrong(lang), LUCKY_TESTS, True, monkeypatch)
    assert nxt.verdict is Verdict.WRONG_ANSWER and nxt.compile and nxt.compile.warm


def _deep(depth: int) -> str:
    return "(" * depth + "1" + "+1)" * depth


# javac overflows its warm stack at this depth; mcs folds it and needs 20 000 (where it reports
# the overflow as its own "internal compiler error" CS0584, which the server does not trust)
DEEP_NESTING = {
    "Java": f"public class Main {{ public static void main(String[] a) {{ int x = {_deep(3000)}; }} }}\n",
    "C#": f"class P {{ static void Main() {{ int x = {_deep(20000)}; System.Console.Write(x); }} }}\n",
}


@pytest.mark.parametrize("lang", sorted(DEEP_NESTING))
def test_deep_nesting_bomb_then_next_program(lang: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A source too deep for the warm compiler's stack is decided cold (whatever cold says),
    and the following program's verdict is unchanged."""
    src = DEEP_NESTING[lang]
    warm = judge(lang, src, [TestCase("", ("",))], True, monkeypatch)
    cold = judge(lang, src, [TestCase("", ("",))], False, monkeypatch)
    assert warm.verdict is cold.verdict, (describe(warm), describe(cold))
    assert warm.compile is not None and not warm.compile.warm
    nxt = judge(lang, LUCKY[lang], LUCKY_TESTS, True, monkeypatch)
    assert nxt.verdict is Verdict.PASSED and nxt.compile and nxt.compile.warm


# -- switches -------------------------------------------------------------------------------------


def test_switch_and_backend_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    off = judge("Java", HELLO["Java"], [TestCase("", ("Hello, World!\n",))], False, monkeypatch)
    assert off.verdict is Verdict.PASSED and off.compile and not off.compile.warm

    class NoWarm(LocalBackend):
        def warm_compilers(self) -> bool:
            return False

    monkeypatch.setenv(wc.ENV_SWITCH, "1")
    job = Job(
        language="Java", source_code=HELLO["Java"], tests=(TestCase("", ("Hello, World!\n",)),)
    )
    r = Engine(workers=1, backend=NoWarm()).judge(job)
    assert r.verdict is Verdict.PASSED and r.compile and not r.compile.warm


def test_spawned_process_keeps_the_sandbox() -> None:
    """`Sandbox.spawn` goes through the launcher like `run`: same uid, no network, and the
    engine talks to the process through its stdin and stdout."""
    with Sandbox() as box:
        script = "id -u; cat /proc/net/dev | wc -l; exec cat"
        proc = box.spawn(["sh", "-c", script], limits=Limits(cpu_s=10, wall_s=30))
        deadline = time.monotonic() + 20
        head = b""
        while head.count(b"\n") < 2:
            head += proc.read(1, deadline)
        uid, netdevs = head.decode().split()
        assert int(uid) == box.uid
        assert int(netdevs) <= 3  # two header lines and at most the loopback device
        proc.write(b"ping\n", deadline)
        assert proc.read(5, deadline) == b"ping\n"
        assert proc.wait(deadline)  # EOF on its stdin: cat ends, the launcher reports it
        assert proc.exit_info is not None and proc.exit_info.get("code") == "0"


def test_closing_the_pool_leaves_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Servers live across programs by design; once closed, no process of their uids and none
    of their cgroups is left on the host."""
    from tests.test_engine_hostile import cgroups_with_tasks, processes_of_uids

    for lang in LANGS:
        r = judge(lang, HELLO[lang], [TestCase("", ("Hello, World!\n",))], True, monkeypatch)
        assert r.compile is not None and r.compile.warm
    servers = wc.POOL.servers()
    assert {s.spec.mode for s in servers} >= {"javac", "kotlinc", "mcs"}
    wc.POOL.close()
    assert not wc.POOL.servers()
    uids = {s.uid for s in servers}
    dirs = [d for s in servers for d in s.cgroup_dirs]
    deadline = time.monotonic() + 5
    while (processes_of_uids(uids) or cgroups_with_tasks(dirs)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not processes_of_uids(uids)
    assert not cgroups_with_tasks(dirs)
    assert not any(d.exists() for d in dirs)


@pytest.mark.parametrize("lang", LANGS)
def test_heap_cap_is_compiled_cold(lang: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A server whose heap cap is hit ends (ExitOnOutOfMemoryError): the program is compiled
    cold with its verdict, and the next program gets a fresh server."""
    real = wc.server_spec

    def tiny_heap(*a: object, **k: object) -> tuple[wc.ServerSpec, tuple[str, ...]] | None:
        found = real(*a, **k)  # type: ignore[arg-type]
        if found is None:
            return None
        spec, args = found
        if spec.mode == "mcs":
            return dataclasses.replace(spec, env=(("MONO_GC_PARAMS", "max-heap-size=8m"),)), args
        flags = (*(f for f in spec.vm_flags if not f.startswith("-Xmx")), "-Xmx5m")
        return dataclasses.replace(spec, vm_flags=flags), args

    monkeypatch.setattr(wc, "server_spec", tiny_heap)
    if lang == "Java":
        extra = "".join(
            f"class F{i} {{ static int f(int x) {{ return x * {i} + {i}; }} }}\n"
            for i in range(3000)
        )
    elif lang == "C#":
        extra = "".join(
            f"static class F{i} {{ public static int F(int x) {{ return x * {i} + {i}; }} }}\n"
            for i in range(3000)
        )
    else:
        extra = "".join(f"fun f{i}(x: Int) = x * {i} + {i}\n" for i in range(3000))
    r = judge(lang, LUCKY[lang] + extra, LUCKY_TESTS, True, monkeypatch)
    assert r.verdict is Verdict.PASSED and r.compile and not r.compile.warm, describe(r)
    monkeypatch.undo()
    nxt = judge(lang, wrong(lang), LUCKY_TESTS, True, monkeypatch)
    assert nxt.verdict is Verdict.WRONG_ANSWER and nxt.compile and nxt.compile.warm
