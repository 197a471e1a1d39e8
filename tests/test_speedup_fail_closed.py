"""Speed-ups fail closed: a request's own commands turn every speed-up off, a shared compile
server takes no client option and keeps nothing between programs, and a warm compile sees what a
cold one sees.

Each attack here is a request as a hostile client sends it (ExecEval's custom `compile_cmd` /
`compile_flags` / `execute_cmd`), judged with real compilers in the real sandbox."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from code_eval_taskpack.execution import TestCase, Verdict
from code_eval_taskpack.execution.backends.local import LocalBackend
from code_eval_taskpack.execution.execeval.compat import (
    EXECEVAL_RUNTIMES,
    execeval_commands,
    execeval_entry,
    execeval_runtime,
)
from code_eval_taskpack.execution.languages.registry import (
    Runtime,
    catalog_commands,
    resolve,
    runtimes,
)
from code_eval_taskpack.execution.limits import COMPILE_LIMITS
from code_eval_taskpack.execution.run.runner import judge_with, source_layout
from code_eval_taskpack.execution.speedups import go_direct, pch, startup
from code_eval_taskpack.execution.speedups import jvm_cds as class_data
from code_eval_taskpack.execution.speedups import warm_compiler as wc
from code_eval_taskpack.execution.types import Job, Result
from tests.conftest import require_binary
from tests.engine_programs import LUCKY, describe

LUCKY_TESTS = (TestCase("3\n", ("14\n",)), TestCase("1\n", ("2\n",)))


@pytest.fixture(autouse=True)
def speedups_on(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """Every speed-up switched on, with a cache of the test's own (headers built here)."""
    monkeypatch.setenv(wc.ENV_SWITCH, "1")
    monkeypatch.setenv("CODE_EVAL_CACHE", str(tmp_path / "cache"))
    for switch in (pch.ENV, go_direct.ENV):
        monkeypatch.delenv(switch, raising=False)
    yield


def custom_runtime(language: str, **custom: str) -> Runtime:
    """The runtime a request naming `language` with these custom command fields runs."""
    base = resolve(language)
    entry = execeval_entry(language) or EXECEVAL_RUNTIMES[base.name]
    return execeval_runtime(base, execeval_commands(entry, base, custom))


def judge(runtime: Runtime, source: str, tests: tuple[TestCase, ...] = LUCKY_TESTS) -> Result:
    job = Job(
        language=runtime.name,
        source_code=source,
        tests=tests,
        time_limit_s=5,
        memory_limit_mb=512,
    )
    return judge_with(runtime, job, backend=LocalBackend())


# -- 1. custom commands disable every speed-up ---------------------------------------------------


def test_catalog_runtimes_keep_their_speedups() -> None:
    """The guard holds for every registry runtime as loaded (the speed-ups stay on)."""
    assert all(catalog_commands(rt) for rt in runtimes())


@pytest.mark.parametrize(
    "language",
    ["Java 17", "Kotlin", "Mono C#", "Go", "GNU C++17", "Clang++17", "Python 3", "Ruby 3"],
)
def test_custom_commands_turn_every_speedup_off(language: str) -> None:
    """A request's own compile command, compile flags or execute command: no speed-up's entry
    point accepts the runtime (warm server, precompiled header, direct Go build, prelude)."""
    base = resolve(language)
    binary = base.binary or ""
    fields = [{"compile_flags": "-g"}, {"execute_flags": "-v"}]
    if base.compile is not None:
        fields.append({"compile_cmd": "/bin/true"})
    fields.append({"execute_cmd": binary if base.compile is None else "/bin/true"})
    for custom in fields:
        rt = custom_runtime(language, **custom)
        assert not catalog_commands(rt), custom
        values = {"class": "Main", "main_class": "Main", "source": "Main.java"}
        argv = rt.expand(rt.compile or rt.run, **values)
        assert wc.server_spec(rt, argv, COMPILE_LIMITS) is None, custom
        assert pch._plan(rt, "#include <cstdio>\nint main() {}\n") is None, custom
        assert go_direct.tools(rt, lambda argv: None) is None, custom
        for name in (startup.PLACEHOLDER, startup.BYTECODE):
            assert startup.prepare(rt, name, lambda argv: None) is None, custom
        assert not class_data.applies(rt), custom


@pytest.mark.parametrize(
    ("language", "binary"), [("Java 17", "javac"), ("Mono C#", "mcs"), ("Go", "go")]
)
def test_custom_compile_command_is_what_runs(language: str, binary: str) -> None:
    """`compile_cmd: /bin/true` (Java, C#) compiles nothing and `/bin/false` (Go) fails: the
    verdict says so, never the warm server's or the direct build's PASSED."""
    require_binary(binary)
    prog = "/bin/false" if language == "Go" else "/bin/true"
    key = {"Java 17": "Java", "Mono C#": "C#", "Go": "Go"}[language]
    r = judge(custom_runtime(language, compile_cmd=prog), LUCKY[key])
    assert r.verdict is not Verdict.PASSED, describe(r)
    assert r.compile is not None and not r.compile.warm, describe(r)
    assert r.runtime["compile_argv"][0] == prog, describe(r)
    if language == "Go":
        assert r.verdict is Verdict.COMPILATION_ERROR, describe(r)


def test_clang_never_gets_a_gcc_header() -> None:
    """ExecEval's Clang++17 (a custom compiler on a GCC runtime with precompiled headers): enough
    programs sharing their includes to build a header all compile with clang, no header."""
    require_binary("clang++-14")
    src = (
        "#include <cstdio>\n#include <vector>\n"
        'int main() { int n; if (scanf("%d", &n) != 1) return 1;\n'
        '  std::vector<long long> v{(1LL << (n + 1)) - 2}; printf("%lld\\n", v[0]); }\n'
    )
    rt = custom_runtime("Clang++17")
    assert rt.compile is not None and "clang" in rt.compile[0]
    for i in range(pch.BUILD_AFTER + 1):
        r = judge(rt, src + f"// {i}\n")
        assert r.verdict is Verdict.PASSED, describe(r)
        assert not any("pch" in a for a in r.runtime["compile_argv"]), describe(r)


# -- 2. a shared compile server takes no client option and keeps nothing ------------------------


def _server(language: str, source: str) -> tuple[wc.ServerSpec, tuple[str, ...], str]:
    rt = resolve(language)
    values = source_layout(rt, source)
    argv = rt.expand(rt.compile or (), **values)
    limits = COMPILE_LIMITS.scaled(memory_mb=rt.compile_memory_mb or COMPILE_LIMITS.memory_mb)
    found = wc.server_spec(rt, argv, limits)
    assert found is not None, language
    return found[0], found[1], values["source"]


PROCESSOR = (
    "import java.util.Set;\nimport javax.annotation.processing.*;\n"
    "import javax.lang.model.element.TypeElement;\n"
    '@SupportedAnnotationTypes("*")\n'
    "public class Evil extends AbstractProcessor {\n"
    "  public boolean process(Set<? extends TypeElement> a, RoundEnvironment r) {\n"
    '    throw new RuntimeException("processor ran"); } }\n'
)
USES_STASH = "public class Main { public static void main(String[] a) { new Evil(); } }\n"


def test_server_keeps_nothing_between_programs() -> None:
    """Even if an option of a client reached the server: a class written to /tmp (or /dev/shm)
    by one compile is gone for the next, and no processor option is obeyed."""
    require_binary("javac")
    spec, args, _ = _server("Java 17", USES_STASH)
    for scratch in ("/tmp/stash", "/dev/shm/stash"):
        stash = ("-proc:none", "-d", scratch, "Evil.java")
        first = wc.POOL.compile(spec, stash, "Evil.java", PROCESSOR.encode(), 8 << 20)
        assert first is None or first.ok
        use = ("-cp", scratch, *args)
        second = wc.POOL.compile(spec, use, "Main.java", USES_STASH.encode(), 8 << 20)
        assert second is None or not second.ok, second
        load = ("-processorpath", scratch, "-processor", "Evil", "-proc:full", *args)
        third = wc.POOL.compile(spec, load, "Main.java", b"public class Main {}\n", 8 << 20)
        assert third is None or b"processor ran" not in third.stderr, third


@pytest.mark.parametrize(
    "option",
    [
        ("-processor", "Evil"),
        ("-processorpath", "."),
        ("--processor-path", "."),
        ("-proc:full",),
        ("-proc:only",),
        ("-Xplugin:Evil",),
        ("@args",),
        ("-J-Dx=1",),
    ],
)
def test_server_refuses_options_that_load_code(option: tuple[str, ...]) -> None:
    """The javac server answers "compile it cold" to any option that could load or run code of a
    client (a processor, a plugin, an argument file, a JVM option), wherever it stands."""
    require_binary("javac")
    spec, args, name = _server("Java 17", "public class Main {}\n")
    got = wc.POOL.compile(spec, (*args, *option), name, b"public class Main {}\n", 8 << 20)
    assert got is None, got


# -- 3. warm compiles see what cold compiles see ------------------------------------------------

SERVER_NAMES = {
    "Java": (
        "Java 17",
        "javac",
        "public class Main { public static void main(String[] a) {\n"
        "  System.out.println(CompileServer.MAGIC); } }\n",
    ),
    "Kotlin": ("Kotlin", "kotlinc", "fun main() { println(CompileServer.MAGIC) }\n"),
    "C#": (
        "Mono C#",
        "mcs",
        "class P { static void Main() { System.Console.WriteLine(CompileServer.Magic); } }\n",
    ),
}


@pytest.mark.parametrize("lang", sorted(SERVER_NAMES))
def test_server_classes_are_invisible(lang: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A program naming the compile server's own classes: warm and cold agree (both a compile
    error), the warm compiler sees no class path but the cold one's."""
    language, binary, src = SERVER_NAMES[lang]
    require_binary(binary)
    rt = resolve(language)
    tests = (TestCase("", ("1463898929\n",)),)
    verdicts = {}
    for warm in ("1", "0"):
        monkeypatch.setenv(wc.ENV_SWITCH, warm)
        r = judge(rt, src, tests)
        assert r.compile is not None and r.compile.warm is (warm == "1"), describe(r)
        verdicts[warm] = r.verdict
    assert verdicts["1"] is verdicts["0"] is Verdict.COMPILATION_ERROR, verdicts


def test_mono_server_keeps_nothing_between_programs() -> None:
    """The mcs server: an assembly written to /tmp by one compile is gone for the next."""
    require_binary("mcs")
    lib = b"public class Stash { public static int X = 7; }\n"
    use = b"class P { static void Main() { System.Console.WriteLine(Stash.X); } }\n"
    spec, args, name = _server("Mono C#", use.decode())
    stash = ("-target:library", "-out:/tmp/stash.dll", name)
    first = wc.POOL.compile(spec, stash, name, lib, 8 << 20)
    assert first is not None and first.ok, first
    second = wc.POOL.compile(spec, ("-r:/tmp/stash.dll", *args), name, use, 8 << 20)
    assert second is None or not second.ok, second
