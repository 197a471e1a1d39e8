"""ExecEval compatibility: its runtime names, commands, resource limits and outcome set.

ExecEval is the xCodeEval authors' execution server; their client (`eval_passk.py`) sends every
request with ExecEval's runtime names, per-language `limits` and optional custom commands. This
module holds the facts of ExecEval's shipped configuration (its `config.yaml` commands and its
`ResourceLimits` defaults, see `../shared/docs/EXECEVAL_RUNTIMES.md`) and turns a request into
what our engine runs:

- `execeval_runtime`: a registry runtime whose compile and run argv are ExecEval's command line
  for that runtime name (or the request's custom `compile_cmd`/`compile_flags`/`execute_cmd`/
  `execute_flags`), split with shlex into an argv (never run by a shell), adapted only where the
  tool here differs (`csc` -> Mono `mcs`, JDK 17 `javac` without `-target 1.x`, `clang++-14` ->
  another compiler when it is not installed); each adaptation is reported;
- `execeval_limits`: the request's `limits` with ExecEval's meaning and defaults (`cpu`, 2 s,
  only as the wall clock `cpu` x time factor: ExecEval passes every limit but `cpu` to prlimit,
  so it has no CPU-time limit; `_as` 2 GiB, +1 GiB for JVM languages, applied as the memory
  cgroup limit instead of an address-space limit; `nofile`; `nproc` as RLIMIT_NPROC; no `limits`
  at all is the runtime's `limits_by_lang.yaml` entry) and a report of what was applied and what
  was not;
- `execeval_line_ends`: ExecEval's line-end rule, applied to every job judged with its comparator
  (every `\r` removed from the source, the tests' inputs and their expected outputs);
- `execeval_outcome`: our verdict of a test mapped onto ExecEval's six outcomes, with ExecEval's
  rules (a crash with empty stderr, or stderr naming a memory error, is MEMORY_LIMIT_EXCEEDED; a
  time kill is TIME_LIMIT_EXCEEDED whatever stderr holds).
"""

from __future__ import annotations

import math
import os
import re
import shlex
import shutil
from dataclasses import dataclass, replace
from typing import Any

from ..languages.registry import Runtime
from ..limits import RunOverrides, cpu_count
from ..sandbox.outcome import DEFAULT_PATH
from ..sandbox.view import is_system_path
from ..types import EXECEVAL_VERDICTS, Job, TestCase, TestResult, Verdict

MIB = 1024 * 1024
#: ExecEval's `ResourceLimits` defaults (applied to every field a request leaves out)
DEFAULT_LIMITS: dict[str, int] = {
    "core": 0,
    "data": -1,
    "fsize": 0,
    "sigpending": 0,
    "rss": -1,
    "nofile": 4,
    "msgqueue": 0,
    "rtprio": 0,
    "stack": -1,
    "cpu": 2,
    "nproc": 1,
    "_as": 2 * 1024**3,
    "locks": 0,
}
#: ExecEval gives JVM runtimes this much more address space than `_as` (the VM itself)
VM_EXTRA_MB = 1024
#: the largest memory limit a request may ask for (MB); `_as: -1` (unlimited) means this
MAX_MEMORY_MB = 16384
MAX_TIME_S = 600.0
MAX_COMMAND_CHARS = 4096
#: RLIMIT_NOFILE / RLIMIT_NPROC when a request says -1 (unlimited)
UNLIMITED_NOFILE = 1024
UNLIMITED_NPROC = 128

_C_FLAGS = (
    "-fno-optimize-sibling-calls -w -fno-strict-aliasing -DONLINE_JUDGE -include limits.h "
    "-fno-asm -s -O2 -DONLINE_JUDGE -include math.h -static -lm"
)
_CXX_MATH_FIRST = "-s -x c++ -O2 -w -DONLINE_JUDGE -include math.h -include limits.h -static -lm"
_CXX_LIMITS_FIRST = "-s -x c++ -O2 -w -DONLINE_JUDGE -include limits.h -include math.h -static -lm"
_CXX_PEDANTIC = (
    "-s -x c++ -O2 -w -DONLINE_JUDGE -pedantic -include limits.h -include math.h -static -lm"
)
_CLANG_PEDANTIC = (
    "-s -x c++ -O2 -w -pedantic -DONLINE_JUDGE -include limits.h -include math.h -static -lm"
)
_JAVA_RUN = (
    "-DONLINE_JUDGE=true -Xlog:disable -Xmx2g -XX:ReservedCodeCacheSize=64m "
    "-XX:-UseCompressedClassPointers -Xss256k"
)


@dataclass(frozen=True)
class ExecEvalRuntime:
    """One runtime of ExecEval's list: its exact name and shipped commands."""

    name: str
    compile_cmd: str
    compile_flags: str
    execute_cmd: str
    execute_flags: str

    @property
    def vm(self) -> bool:
        """ExecEval's `extend_mem_for_vm` runtimes: the JVM ones."""
        return self.name.startswith(("Java", "Kotlin"))


def _table() -> list[ExecEvalRuntime]:
    rows: list[tuple[str, str, str, str, str]] = [
        ("GNU C", "gcc", _C_FLAGS, "", ""),
        ("GNU C11", "gcc", "-std=c11 " + _C_FLAGS, "", ""),
        ("GNU C++", "g++", _CXX_MATH_FIRST, "", ""),
        ("GNU C++0x", "g++", "-std=c++0x " + _CXX_MATH_FIRST, "", ""),
        ("GNU C++11", "g++", "-std=c++11 " + _CXX_MATH_FIRST, "", ""),
        ("GNU C++14", "g++", "-std=c++14 " + _CXX_MATH_FIRST, "", ""),
        ("GNU C++17", "g++", "-std=c++17 " + _CXX_LIMITS_FIRST, "", ""),
        ("GNU C++17 (64)", "g++", "-std=c++17 " + _CXX_LIMITS_FIRST, "", ""),
        ("GNU C++20 (64)", "g++", "-std=c++20 " + _CXX_LIMITS_FIRST, "", ""),
        ("GNU C++20", "g++", "-std=c++20 " + _CXX_LIMITS_FIRST, "", ""),
        ("GNU C++17 Diagnostics", "g++", "-std=c++17 " + _CXX_PEDANTIC, "", ""),
        ("Clang++17 Diagnostics", "clang++-14", "-std=c++17 " + _CLANG_PEDANTIC, "", ""),
        ("Clang++17", "clang++-14", "-std=c++17 " + _CXX_LIMITS_FIRST, "", ""),
        ("Clang++20 Diagnostics", "clang++-14", "-std=c++20 " + _CLANG_PEDANTIC, "", ""),
        ("Clang++20", "clang++-14", "-std=c++20 " + _CXX_LIMITS_FIRST, "", ""),
        ("Clang++14", "clang++-14", "-std=c++14 " + _CXX_LIMITS_FIRST, "", ""),
        ("Clang++11", "clang++-14", "-std=c++11 " + _CXX_LIMITS_FIRST, "", ""),
        ("MS C++", "g++", _CXX_MATH_FIRST, "", ""),
        ("MS C++ 2017", "g++", _CXX_MATH_FIRST, "", ""),
    ]
    for cs in ("MS C#", "C# 10", "C# 8", "Mono C#", ".NET Core C#"):
        rows.append((cs, "csc", "-o -nologo", "mono", ""))
    for name, exe in (
        ("PyPy 2", "pypy2"),
        ("Python 2", "python2"),
        ("PyPy 3", "pypy3"),
        ("PyPy 3-64", "pypy3"),
        ("Python 3", "python3"),
        ("Python 3 + libs", "python3"),
    ):
        rows.append((name, exe, "-W ignore -m py_compile", exe, "-W ignore -OO -s -S"))
    for js in ("JavaScript", "Node js", "Node.js"):
        rows.append((js, "node", "--check", "node", ""))
    rows += [
        ("Rust", "rustc", "-O", "", ""),
        ("Rust 2021", "rustc", "--edition 2021 -O", "", ""),
        ("Rust 2018", "rustc", "--edition 2018 -O", "", ""),
        ("Rust 2015", "rustc", "--edition 2015 -O", "", ""),
    ]
    for java, target in (
        ("Java 6", "-target 1.6 "),
        ("Java 7", "-target 1.7 "),
        ("Java 1.5", "-target 1.5 "),
        ("Java 8", ""),
        ("Java 11", ""),
        ("Java 17", ""),
    ):
        rows.append((java, "javac", f'{target}-nowarn -cp ".;*"', "java", _JAVA_RUN))
    rows += [
        ("PHP", "php", "-l", "php", ""),
        ("PHP 8.1", "php", "-l", "php", ""),
        ("Go", "go", "build", "", ""),
        ("Ruby", "ruby", "-c", "ruby", ""),
        ("Ruby 3", "ruby", "-c", "ruby", ""),
    ]
    for kt, version in (
        ("Kotlin", "1.7"),
        ("Kotlin 1.4", "1.4"),
        ("Kotlin 1.5", "1.5"),
        ("Kotlin 1.6", "1.6"),
        ("Kotlin 1.7", "1.7"),
    ):
        flags = f"-nowarn -language-version {version} -include-runtime"
        rows.append((kt, "kotlinc", flags, "java", _JAVA_RUN + " -jar"))
    return [ExecEvalRuntime(*row) for row in rows]


#: ExecEval's runtime list, by exact name (the spelling its clients filter on)
EXECEVAL_RUNTIMES: dict[str, ExecEvalRuntime] = {r.name: r for r in _table()}


def _limits_by_lang() -> dict[str, dict[str, int]]:
    table: dict[str, dict[str, int]] = {}
    for entry in EXECEVAL_RUNTIMES.values():
        name = entry.name
        if name.startswith(("GNU C", "Clang++", "MS C++")):
            table[name] = {"nofile": 0}
        elif entry.compile_cmd == "csc":
            table[name] = {"nofile": 4, "nproc": 4, "fsize": 1073741824}
        elif entry.execute_cmd == "node":
            table[name] = {"nofile": 25, "nproc": 25}
        elif entry.vm:
            table[name] = {"nofile": 25, "nproc": 23}
        elif name == "Go":
            table[name] = {"nofile": 0, "nproc": 7}
        elif name.startswith("Ruby"):
            table[name] = {"nofile": 10}
        else:  # Python, PyPy, Rust, PHP
            table[name] = {"nofile": 4}
    return table


#: ExecEval's per-runtime limits (`limits_by_lang.yaml`, see ../shared/docs/EXECEVAL_RUNTIMES.md):
#: its client sends the runtime's entry as `limits` with every request, and its server applies
#: the entry itself to a request whose `limits` is missing or null
EXECEVAL_LIMITS_BY_LANG: dict[str, dict[str, int]] = _limits_by_lang()


class CompatError(ValueError):
    """A request field that cannot be honoured; `field` names it as the client sent it."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(f"field {field!r}: {message}")


def execeval_entry(name: str) -> ExecEvalRuntime | None:
    """ExecEval's entry for a runtime name: exact spelling first, then case/space-insensitive."""
    if name in EXECEVAL_RUNTIMES:
        return EXECEVAL_RUNTIMES[name]
    key = "".join(name.split()).casefold()
    for entry in EXECEVAL_RUNTIMES.values():
        if "".join(entry.name.split()).casefold() == key:
            return entry
    return None


# -- commands ---------------------------------------------------------------------------------


def split_command(field: str, value: Any) -> list[str] | None:
    """A client's command-line string -> argv (shlex, no shell); None or "" keeps the default."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise CompatError(field, f"must be a string or null, got {type(value).__name__}")
    if "\0" in value:
        raise CompatError(field, "contains a NUL byte")
    if len(value) > MAX_COMMAND_CHARS:
        raise CompatError(field, f"longer than {MAX_COMMAND_CHARS} characters")
    try:
        return shlex.split(value)
    except ValueError as exc:
        raise CompatError(field, f"cannot be split into arguments: {exc}") from None


_PROGRAM = re.compile(r"^[A-Za-z0-9_.+-]+$")


def _host_program(name: str) -> str | None:
    """Where the sandbox finds `name` (its PATH is DEFAULT_PATH; only system dirs are bound)."""
    if name.startswith("/"):
        real = os.path.realpath(name)
        return name if is_system_path(real) and os.access(name, os.X_OK) else None
    found = shutil.which(name, path=DEFAULT_PATH)
    if found is None or not is_system_path(os.path.realpath(found)):
        return None
    return found


def _escape(token: str) -> str:
    """A client token inside an argv template (`Runtime.expand` runs str.format on each)."""
    return token.replace("{", "{{").replace("}", "}}")


def _program(
    field: str, tokens: list[str], runtime: Runtime, adaptations: list[str], client: bool
) -> list[str]:
    """The argv template of a command: its program resolved for the sandbox, options escaped."""
    if not tokens:
        raise CompatError(field, "names no program")
    prog, rest = tokens[0], [_escape(t) for t in tokens[1:]]
    own = {os.path.basename(c) for c in runtime.binary_candidates}
    if prog == "csc":
        adaptations.append("csc (Roslyn) is not available here: Mono's mcs compiles instead")
        prog = "mcs"
    if not prog.startswith("/") and not _PROGRAM.match(prog):
        raise CompatError(field, f"program {prog!r} is not a plain name or an absolute path")
    if os.path.basename(prog) in own and (not prog.startswith("/") or prog == runtime.binary):
        return ["{binary}", *rest]
    if _host_program(prog) is None:
        if client:
            raise CompatError(field, f"program {prog!r} is not installed on this server")
        if prog.startswith("clang++"):
            for alt in ("clang++", "g++"):
                if _host_program(alt) is not None:
                    adaptations.append(f"{prog} is not installed here: {alt} compiles instead")
                    return [alt, *rest]
        # ExecEval's name for the runtime's own tool (e.g. pypy2): the registry's binary, which
        # reports the runtime unavailable when it is missing
        adaptations.append(f"{prog}: the runtime's own binary runs instead")
        return ["{binary}", *rest]
    return [_escape(prog), *rest]


def _drop_option(flags: list[str], option: str, why: str, adaptations: list[str]) -> list[str]:
    """Remove `option VALUE` pairs that the tool here cannot accept."""
    out: list[str] = []
    skip = False
    for i, tok in enumerate(flags):
        if skip:
            skip = False
            continue
        if tok == option and i + 1 < len(flags):
            adaptations.append(f"`{option} {flags[i + 1]}` dropped: {why}")
            skip = True
            continue
        out.append(tok)
    return out


@dataclass(frozen=True)
class Commands:
    """What runs: argv templates of the compile (None: none) and of each test, and why they
    differ from ExecEval's shipped line, if they do."""

    compile: tuple[str, ...] | None
    run: tuple[str, ...]
    adaptations: tuple[str, ...]


def execeval_commands(
    entry: ExecEvalRuntime, runtime: Runtime, custom: dict[str, Any] | None = None
) -> Commands:
    """ExecEval's compile and run commands for `entry` on `runtime`'s toolchain, with the
    request's custom commands (`compile_cmd`, `compile_flags`, `execute_cmd`, `execute_flags`)
    in place of the defaults they name."""
    custom = custom or {}
    parts: dict[str, list[str] | None] = {
        k: split_command(k, custom.get(k))
        for k in ("compile_cmd", "compile_flags", "execute_cmd", "execute_flags")
    }
    adapt: list[str] = []

    def pick(key: str, default: str) -> tuple[list[str], bool]:
        value = parts[key]
        return (shlex.split(default), False) if value is None else (value, True)

    ccmd, c_client = pick("compile_cmd", entry.compile_cmd)
    cflags, _ = pick("compile_flags", entry.compile_flags)
    ecmd, e_client = pick("execute_cmd", entry.execute_cmd)
    eflags, _ = pick("execute_flags", entry.execute_flags)
    cflags = [_escape(t) for t in cflags]
    eflags = [_escape(t) for t in eflags]
    cluster = runtime.cluster
    src = "{source}"
    compile_prog = _program("compile_cmd", ccmd, runtime, adapt, c_client) if ccmd else []
    run_prog = _program("execute_cmd", ecmd, runtime, adapt, e_client) if ecmd else []
    if cluster in ("C", "C++", "Rust"):
        compile_argv = [*compile_prog, *cflags, src, "-o", "main"]
        run_argv = [*run_prog, *eflags, "./main"] if run_prog else ["./main"]
    elif cluster == "Go":
        compile_argv = [*compile_prog, *cflags, "-o", "main", src]
        run_argv = [*run_prog, *eflags, "./main"] if run_prog else ["./main"]
    elif cluster == "C#":
        if compile_prog and compile_prog[0] in ("{binary}", "mcs"):
            # mcs reads `-o X` as an output file: Roslyn's `-o` (optimize) is `-optimize+`
            cflags = ["-optimize+" if t == "-o" else t for t in cflags]
            adapt.append("csc's `-o` (optimize) passed to mcs as `-optimize+`")
            # csc references System.Numerics by default (csc.rsp); mcs needs it named
            cflags = [*cflags, "-r:System.Numerics.dll"]
        compile_argv = [*compile_prog, *cflags, "-out:main.exe", src]
        run_argv = [*(run_prog or ["mono"]), *eflags, "main.exe"]
    elif cluster == "Java":
        if "-source" not in cflags and "--release" not in cflags:
            cflags = _drop_option(cflags, "-target", "JDK 17's javac needs -source too", adapt)
        compile_argv = [*compile_prog, *cflags, src]
        run_argv = [*(run_prog or ["java"]), *eflags, "{main_class}"]
    elif cluster == "Kotlin":  # kotlinc 1.7 here too: every `-language-version` of ExecEval's
        compile_argv = [*compile_prog, *cflags, src, "-d", "main.jar"]
        run_argv = [*(run_prog or ["java"]), *eflags, "main.jar"]
    else:  # interpreted: a syntax check, then the interpreter
        compile_argv = [*compile_prog, *cflags, src]
        run_argv = [*run_prog, *eflags, src]
    if not run_argv or run_argv == [src]:
        raise CompatError("execute_cmd", f"{entry.name} needs an interpreter to run the program")
    return Commands(
        compile=tuple(compile_argv) if compile_prog else None,
        run=tuple(run_argv),
        adaptations=tuple(dict.fromkeys(adapt)),
    )


def execeval_runtime(runtime: Runtime, commands: Commands) -> Runtime:
    """`runtime` (toolchain, source layout, environment) running `commands` instead of its own
    argv; the commands are part of the runtime's registry entry, hence of its fingerprint and
    of every cache key."""
    entry = {"execeval_commands": {"compile": commands.compile, "run": commands.run}}
    return runtime.with_entry(entry, compile=commands.compile, run=commands.run)


# -- limits -----------------------------------------------------------------------------------


@dataclass
class LimitsPlan:
    """A request's limits as our engine applies them, and the report the response carries."""

    time_limit_s: float
    memory_mb: int
    overrides: RunOverrides
    applied: dict[str, Any]
    not_applied: dict[str, str]


def _int_limit(raw: dict[str, Any], key: str) -> int:
    value = raw.get(key, DEFAULT_LIMITS[key])
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CompatError(f"limits.{key}", f"must be an integer, got {type(value).__name__}")
    if not math.isfinite(value) or value != int(value) or value < -1:
        raise CompatError(f"limits.{key}", "must be -1 (unlimited) or a non-negative integer")
    return int(value)


def execeval_limits(entry: ExecEvalRuntime, runtime: Runtime, raw: Any) -> LimitsPlan:
    """ExecEval's meaning of `limits` on our mechanisms: an object's absent fields take the
    `ResourceLimits` defaults; no `limits` at all (missing or null) is the runtime's entry of
    `limits_by_lang.yaml` over those defaults, as ExecEval's server does."""
    if raw is None:
        raw = dict(EXECEVAL_LIMITS_BY_LANG.get(entry.name, {}))
    if not isinstance(raw, dict):
        raise CompatError("limits", f"must be an object, got {type(raw).__name__}")
    unknown = sorted(set(raw) - set(DEFAULT_LIMITS) - {"memory_mb"})
    if unknown:
        raise CompatError(
            f"limits.{unknown[0]}",
            f"unknown limit; ExecEval's are {', '.join(DEFAULT_LIMITS)} (and memory_mb, in MB)",
        )
    applied: dict[str, Any] = {}
    not_applied: dict[str, str] = {}
    cpu = raw.get("cpu", DEFAULT_LIMITS["cpu"])
    if isinstance(cpu, bool) or not isinstance(cpu, int | float) or not 0 < cpu <= MAX_TIME_S:
        raise CompatError("limits.cpu", f"must be a positive number of seconds, <= {MAX_TIME_S}")
    wall = float(cpu) * runtime.time_factor
    # ExecEval gives prlimit every limit but `cpu`: its only time limit is the wall clock. The
    # CPU budget here is the most CPU the wall budget allows on this machine, so the wall clock
    # decides, as there (a budget of `cpu` alone would stop a Python program at 2 s of CPU that
    # ExecEval lets run for 6 s)
    cpu_budget = wall * cpu_count()
    applied["cpu"] = (
        f"{wall:g} s of wall clock (cpu x time factor {runtime.time_factor:g}): "
        "TIME_LIMIT_EXCEEDED; no CPU-time limit below it, as ExecEval"
    )
    if raw.get("memory_mb") is not None:
        mem = raw["memory_mb"]
        if isinstance(mem, bool) or not isinstance(mem, int | float) or not mem >= 1:
            raise CompatError("limits.memory_mb", "must be a number of MB, at least 1")
        memory_mb = math.ceil(mem)
        applied["memory_mb"] = f"{memory_mb} MB (memory cgroup)"
    else:
        as_bytes = _int_limit(raw, "_as")
        if as_bytes == -1:
            memory_mb = MAX_MEMORY_MB
            applied["_as"] = f"unlimited: the engine's maximum, {MAX_MEMORY_MB} MB (memory cgroup)"
        else:
            memory_mb = max(1, math.ceil(as_bytes / MIB)) + (VM_EXTRA_MB if entry.vm else 0)
            extra = f" (+{VM_EXTRA_MB} MB for the VM, as ExecEval)" if entry.vm else ""
            applied["_as"] = f"{memory_mb} MB{extra} as a memory cgroup limit, not address space"
    if memory_mb > MAX_MEMORY_MB:
        raise CompatError("limits._as", f"over the engine's maximum of {MAX_MEMORY_MB} MB")
    nofile = _int_limit(raw, "nofile")
    if nofile == -1:
        nofile = UNLIMITED_NOFILE
    applied["nofile"] = nofile
    nproc = _int_limit(raw, "nproc")
    if nproc == -1:
        nproc = UNLIMITED_NPROC
    # 0 and 1 forbid the same thing to a running program (a new process or thread); 0 would
    # also stop the exec itself here, where the limit is set before the program's uid
    applied["nproc"] = max(1, nproc)
    stack = _int_limit(raw, "stack")
    stack_mb = None
    if stack == -1:
        applied["stack"] = f"unlimited: the memory limit, {memory_mb} MB"
    else:
        stack_mb = max(1, math.ceil(stack / MIB))
        applied["stack"] = f"{stack_mb} MB"
    if _int_limit(raw, "core") == 0:
        applied["core"] = 0
    else:
        not_applied["core"] = "core dumps are always off here"
    not_applied["fsize"] = (
        "stdout and stderr are captured to files here, so RLIMIT_FSIZE stays at the output cap"
    )
    for key in ("data", "rss", "sigpending", "msgqueue", "rtprio", "locks"):
        if key in raw:
            not_applied[key] = "not applied (no effect on the verdicts of judged programs)"
    overrides = RunOverrides(
        cpu_s=cpu_budget,
        wall_s=wall,
        open_files=nofile,
        nproc_rlimit=max(1, nproc),
        stack_mb=stack_mb,
    )
    return LimitsPlan(float(cpu), memory_mb, overrides, applied, not_applied)


# -- line ends --------------------------------------------------------------------------------


def _no_cr(text: str) -> str:
    return text.replace("\r", "")


def execeval_line_ends(job: Job) -> Job:
    """`job` as ExecEval runs it: every `\r` removed from the source code, each test's input and
    each expected output, before anything runs (its `convert_crlf_to_lf`, applied to the code
    and to every unit test). xCodeEval's hidden tests use CRLF line ends, so a program that keeps
    the `\r` it reads fails here where ExecEval passed it unless the rule is applied; the
    unchanged job is returned when there is no `\r` (the common case: no copy)."""
    if "\r" not in job.source_code and not any(
        "\r" in t.input or any("\r" in o for o in t.output) for t in job.tests
    ):
        return job
    tests = tuple(TestCase(_no_cr(t.input), tuple(_no_cr(o) for o in t.output)) for t in job.tests)
    return replace(job, source_code=_no_cr(job.source_code), tests=tests)


# -- outcomes ---------------------------------------------------------------------------------

#: ExecEval's outcome set
OUTCOMES = tuple(v.value for v in EXECEVAL_VERDICTS)
_MEMORY_WORDS = ("out of memory", "bad_alloc", "bad alloc", "memoryerror")


def execeval_outcome(t: TestResult) -> str:
    """ExecEval's outcome for one judged test (never INFRA_ERROR: the caller handles it)."""
    v = t.verdict
    if v is Verdict.TIME_LIMIT_EXCEEDED:
        # ExecEval's one time limit is its wall clock, and a test it stops is TLE whatever it
        # printed; the CPU budget of `execeval_limits` never fires before that wall clock
        return "TIME_LIMIT_EXCEEDED"
    if v is Verdict.OUTPUT_LIMIT_EXCEEDED:
        return "WRONG_ANSWER"  # ExecEval has no output cap: it compares what was printed
    if v is Verdict.RUNTIME_ERROR:
        text = t.stderr.lower()
        if not t.stderr or any(w in text for w in _MEMORY_WORDS):
            return "MEMORY_LIMIT_EXCEEDED"
        return "RUNTIME_ERROR"
    return v.value
