"""The CPython zygote (execution/speedups/zygotes/cpython_zygote.c, frame words Z/W of launcher.c): a test forked from the
pre-initialised interpreter is the cold command's twin. Cold and warm runs of the same programs
are diffed: what the interpreter and the process observe of themselves, every Python program of
the shared ChatGPT set on its tests, and hostile programs that go after the zygote."""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from code_eval_taskpack.execution import Job, TestCase, config
from code_eval_taskpack.execution.backends.local import LocalBackend
from code_eval_taskpack.execution.languages.registry import resolve
from code_eval_taskpack.execution.limits import Limits, run_limits
from code_eval_taskpack.execution.run import runner
from code_eval_taskpack.execution.run.compare import outputs_match
from code_eval_taskpack.execution.run.runner import judge_with, source_layout
from code_eval_taskpack.execution.sandbox.command import Sandbox
from code_eval_taskpack.execution.sandbox.host_probe import host_isolation
from code_eval_taskpack.execution.sandbox.outcome import (
    WARM_OOM_NOTE,
    CommandOutcome,
    ForkedTestMemoryKill,
    default_env,
)
from code_eval_taskpack.execution.speedups import BuildPlan, Host, build_plan
from code_eval_taskpack.execution.types import Verdict
from tests.conftest import require, require_binary

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import judge_workload

LIMITS = Limits(cpu_s=2, wall_s=10, memory_mb=256)


def switches(on: bool) -> config.EngineConfig:
    """Every zygote on (CPython's own switch is off by default) or all off."""
    return config.EngineConfig(zygote=on, cpython_zygote=on)


def require_zygote_host(binary: str) -> None:
    """The interpreter, and the namespaces and cgroups a zygote needs (a failure in CI)."""
    require_binary(binary)
    iso = host_isolation()
    require(iso.namespaces and iso.cgroups, "the zygote needs namespaces and cgroups")


@pytest.fixture(scope="module", autouse=True)
def cpython() -> None:
    require_zygote_host("python3")


#: the interpreters with a zygote: the shared programs, the judge's switch and the hostile
#: programs are run for each
WARM_LANGUAGES = ("Python 3", "PyPy 3")


@pytest.fixture(params=WARM_LANGUAGES)
def language(request: pytest.FixtureRequest) -> str:
    if request.param == "PyPy 3":
        require_zygote_host("pypy3")
    return str(request.param)


def plan_for(src: str, language: str = "Python 3") -> tuple[BuildPlan, list[str]]:
    runtime = resolve(language)
    job = Job(language=language, source_code=src, tests=())
    values = source_layout(runtime, src)
    values["memory_mb"] = "256"
    host = Host(LocalBackend(), "required", None, switches(True))
    plan = build_plan(runtime, job, host, values, "")
    assert plan.warm_start, f"no zygote for {language}: {plan.applied}"
    return plan, runtime.expand(plan.run_argv, **plan.values)


class Pair:
    """One program run cold in one sandbox and warm in another (same files, same argv)."""

    def __init__(self, src: str, limits: Limits = LIMITS, language: str = "Python 3") -> None:
        self.plan, self.argv = plan_for(src, language)
        self.source = resolve(language).source
        self.src = src
        self.language = language
        self.limits = limits
        self.env = default_env("/box")
        self.notes: list[str] = []

    def _box(self) -> Sandbox:
        return Sandbox(
            ro_paths=self.plan.ro_paths,
            files={self.source: self.src.encode()},
            purposes=("compile", "run"),
        )

    def cold(self, inputs: Sequence[bytes]) -> list[CommandOutcome]:
        with self._box() as sb:
            return [self._run(sb, i, False) for i in inputs]

    def warm(self, inputs: Sequence[bytes], expect_warm: bool = True) -> list[CommandOutcome]:
        """The program's tests forked from its zygote; after a forked test the memory cgroup
        killed, what the runner does: every test again, cold, in a fresh sandbox."""
        try:
            return self._warm(inputs, expect_warm)
        except ForkedTestMemoryKill:
            self.notes.append(WARM_OOM_NOTE)
            return self.cold(inputs)

    def _warm(self, inputs: Sequence[bytes], expect_warm: bool) -> list[CommandOutcome]:
        with self._box() as sb:
            started = sb.start_warm(
                self.argv,
                executable=self.plan.warm_start,
                limits=self.limits,
                env=self.env,
                purpose="run",
            )
            assert started, sb.zygote_note
            outs = []
            for i in inputs:
                outs.append(self._run(sb, i, True))
                self.notes.append(sb.zygote_note)
            if expect_warm:  # never a pass by falling back to cold
                assert sb.warm_ready, sb.zygote_note
            return outs

    def _run(self, sb: Sandbox, stdin: bytes, warm: bool) -> CommandOutcome:
        return sb.run(
            self.argv, limits=self.limits, stdin=stdin, env=self.env, purpose="run", warm=warm
        )


def observed(out: CommandOutcome) -> tuple[object, ...]:
    """What a verdict and a report are made of (times and memory figures aside)."""
    return (
        runner.test_verdict(out),
        out.exit_code,
        out.signal,
        out.stdout,
        out.stderr,
        out.timed_out,
        out.memory_exceeded,
        out.output_exceeded,
        out.error,
    )


# -- what the program observes of itself ------------------------------------------------------

PROBE = r"""
import sys
MODULES = sorted(sys.modules)
import ctypes, gc, json, os, re, resource, signal, threading
import __main__
libc = ctypes.CDLL(None, use_errno=True)
status = {}
for line in open("/proc/self/status"):
    k, _, v = line.partition(":")
    if k in ("Uid", "Gid", "Groups", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb",
             "NoNewPrivs", "Seccomp", "Seccomp_filters", "SigBlk", "SigIgn", "SigCgt",
             "Threads", "Cpus_allowed_list", "Umask", "FDSize", "Name"):
        status[k] = v.strip()
name = ctypes.create_string_buffer(16)
libc.prctl(16, name)  # PR_GET_NAME
def fd_info(fd):
    st = os.fstat(fd)
    return [oct(st.st_mode), st.st_blksize, os.lseek(fd, 0, os.SEEK_CUR),
            os.get_inheritable(fd), os.get_blocking(fd)]
def io_info(f):
    return [f.encoding, f.errors, f.line_buffering, f.write_through, f.isatty(),
            f.seekable(), type(f.buffer).__name__, f.buffer.raw._blksize, f.newlines]
umask = os.umask(0); os.umask(umask)
rl = {n: resource.getrlimit(getattr(resource, n)) for n in sorted(dir(resource))
      if n.startswith("RLIMIT_")}
data = sys.stdin.read()
out = {
    "modules": MODULES, "path": sys.path, "argv": sys.argv, "orig_argv": sys.orig_argv,
    "executable": sys.executable, "base_executable": sys._base_executable,
    "prefix": [sys.prefix, sys.exec_prefix, sys.base_prefix, sys.platlibdir],
    "flags": repr(sys.flags), "xoptions": sys._xoptions, "warnoptions": sys.warnoptions,
    "main": [__main__.__file__, repr(__main__.__spec__), type(__main__.__loader__).__name__,
             __main__.__loader__.name, __main__.__loader__.path, __main__.__cached__,
             __main__.__package__, __name__, type(__builtins__).__name__],
    "environ": dict(os.environ), "cwd": os.getcwd(),
    "fds": sorted(os.listdir("/proc/self/fd"), key=int), "fd_info": [fd_info(i) for i in range(3)],
    "stdin_size": os.fstat(0).st_size, "stdin": data,
    "io": [io_info(sys.stdin), io_info(sys.stdout), io_info(sys.stderr)],
    "signals": {s.name: repr(signal.getsignal(s)) for s in signal.valid_signals()
                if isinstance(s, signal.Signals) and s not in (signal.SIGKILL, signal.SIGSTOP)},
    "mask": sorted(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, [])),
    "rlimits": rl, "status": status,
    "cgroup": [re.sub(r"code-exec-\d+-\d+", "SET", l) for l in open("/proc/self/cgroup")],
    # the uid is the sandbox's own (one per sandbox): its sameness is compared, not its number
    "ids": [os.getppid(), os.getsid(0) == os.getpid(), os.getpgrp() == os.getpid(),
            len({os.getuid(), os.geteuid(), os.getgid(), os.getegid()}), os.getgroups(),
            status.pop("Uid").split() == [str(os.getuid())] * 4,
            status.pop("Gid").split() == [str(os.getgid())] * 4],
    "umask": umask, "dumpable": libc.prctl(3, 0, 0, 0, 0),
    "nice": os.getpriority(os.PRIO_PROCESS, 0), "sched": os.sched_getscheduler(0),
    "affinity": sorted(os.sched_getaffinity(0)),
    "oom": open("/proc/self/oom_score_adj").read(),
    "gc": [gc.isenabled(), gc.get_threshold()], "recursion": sys.getrecursionlimit(),
    "switch": sys.getswitchinterval(), "threads": threading.active_count(),
    "exe": os.readlink("/proc/self/exe"),
    "comm": [open("/proc/self/comm").read(), name.value.decode()],
    "stat_flags": int(open("/proc/self/stat").read().rpartition(")")[2].split()[6]),
    "maps_python": sorted({l.split()[-1] for l in open("/proc/self/maps")
                           if "python" in l.split()[-1] or ".so" in l.split()[-1]}),
}
print(json.dumps(out, indent=0, sort_keys=True))
"""


#: the kernel's process flags a forked test cannot share with the cold process: PF_FORKNOEXEC
#: (set at a fork, cleared by an exec only) and PF_SUPERPRIV (a capability was used: by the
#: sandbox before the cold command's exec, which keeps it; a fork clears it)
PF_FORKNOEXEC, PF_SUPERPRIV = 0x40, 0x100


def assert_stat_flags_differ_only_by_the_fork(cold: int, warm: int) -> None:
    """/proc/self/stat's flags: the forked test's has PF_FORKNOEXEC, the cold one's not, and
    they agree on every other flag but PF_SUPERPRIV (README, "What a program can tell")."""
    assert warm & PF_FORKNOEXEC and not cold & PF_FORKNOEXEC
    mask = ~(PF_FORKNOEXEC | PF_SUPERPRIV)
    assert cold & mask == warm & mask


def probe_cold_and_warm(pair: Pair, inputs: Sequence[bytes]) -> list[dict[str, Any]]:
    """Run the probe cold and warm; assert that every field it printed is the same but the
    known observables of a zygote; return the cold runs' fields for the caller's own checks."""
    cold, warm = pair.cold(inputs), pair.warm(inputs)
    fields = []
    for c, w in zip(cold, warm, strict=True):
        assert c.exit_code == w.exit_code == 0, (c.stderr, w.stderr)
        a, b = json.loads(c.stdout), json.loads(w.stdout)
        # the one known observable: the file the process executes is the zygote's binary
        assert a.pop("exe") == pair.argv[0]
        assert b.pop("exe") == pair.plan.warm_start
        # which ELF files are mapped: the interpreter's own image is the zygote's file
        assert [m for m in a.pop("maps_python") if m != pair.argv[0]] == [
            m for m in b.pop("maps_python") if m != pair.plan.warm_start
        ]
        # and RLIMIT_NPROC is one more: the zygote is a process of the uid too, so that a
        # program may start exactly as many processes as cold (README, "CPython zygote")
        assert_stat_flags_differ_only_by_the_fork(a.pop("stat_flags"), b.pop("stat_flags"))
        soft, hard = a["rlimits"]["RLIMIT_NPROC"]
        assert b["rlimits"].pop("RLIMIT_NPROC") == [soft + 1, hard + 1]
        del a["rlimits"]["RLIMIT_NPROC"]
        for key in sorted(a):
            assert a[key] == b[key], key
        assert a["ids"][0] == 1 and a["ids"][1] and a["ids"][2]
        assert a["stdin_size"] == len(a["stdin"].encode())
        fields.append(a)
    return fields


def test_the_program_observes_what_a_cold_start_gives() -> None:
    for a in probe_cold_and_warm(Pair(PROBE), [b"first test\n", b"second\n" * 1000]):
        assert a["dumpable"] == 1 and a["fds"] == ["0", "1", "2", "3"]
        assert a["comm"] == ["python3.11\n", "python3.11"] and a["status"]["FDSize"] == "64"


ENDINGS = {
    "traceback": "def f(x):\n    return 1 // x\nprint('before')\nf(0)\n",
    "exit_code": "import sys\nprint('partial', end='')\nsys.exit(3)\n",
    "exit_message": "import sys\nsys.exit('bad input')\n",
    "keyboard_interrupt": "print('x')\nraise KeyboardInterrupt\n",
    "os_exit_unflushed": "import os, sys\nsys.stdout.write('lost?')\nos._exit(5)\n",
    "unflushed_at_exit": "import sys\nsys.stdout.write('kept ' * 10000)\n",
    "thread_at_exit": (
        "import threading, time\n"
        "def late():\n    time.sleep(0.05)\n    print('thread done', flush=True)\n"
        "threading.Thread(target=late).start()\nprint('main done')\n"
    ),
    "recursion": "import sys\ndef r(n):\n    return r(n + 1)\nr(0)\n",
    "syntax_error": "print('never'\n",
    "atexit": "import atexit\natexit.register(lambda: print('atexit ran'))\nprint('body')\n",
    "stdin_lines": "import sys\nfor line in sys.stdin:\n    print(line.strip()[::-1])\n",
    "fast_input": (
        "import os, sys\ndata = os.read(0, os.fstat(0).st_size).split()\n"
        "print(sum(map(int, data)))\n"
    ),
    "signal_self": "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n",
    "stderr_write": "import sys\nprint('err', file=sys.stderr)\nprint('out')\n",
}


def assert_ends_as_cold(pair: Pair, inputs: Sequence[bytes]) -> None:
    """Every outcome of `pair`'s program on `inputs` the same warm as cold."""
    cold, warm = pair.cold(inputs), pair.warm(inputs)
    assert [observed(o) for o in cold] == [observed(o) for o in warm]


@pytest.mark.parametrize("name", sorted(ENDINGS))
def test_endings_match_cold(name: str) -> None:
    assert_ends_as_cold(Pair(ENDINGS[name]), [b"1 2 3\nabc\n"])


# -- the shared ChatGPT programs --------------------------------------------------------------


def shared_jobs(
    language: str = "Python 3", cluster: str = "Python"
) -> Iterator[tuple[str, str, list[TestCase], Limits]]:
    """The shared programs of `cluster` with their sample tests and the judge's limits for them,
    as `language` runs them."""
    runtime = resolve(language)
    programs = [p for p in judge_workload.shared_programs() if p["lang_cluster"] == cluster]
    for job in judge_workload.jobs_for(programs):
        tests = [TestCase.from_dict(t) for t in job["tests"]]
        limits = run_limits(
            job["time_limit_s"],
            job["memory_limit_mb"],
            runtime.time_factor,
            runtime.as_headroom_mb,
            None,
        )
        yield job["id"], job["source_code"], tests, limits


def at_the_memory_edge(pair: Pair, stdin: bytes, warm: CommandOutcome) -> bool:
    """Whether the cold command's verdict on `stdin` changes between 1 MB below and 1 MB above
    the memory limit, and the warm one is one of the two: the kernel's own charges to a run set
    (a few hundred KB, more after a test was killed) then decide it, cold as warm."""
    verdicts = []
    for step in (-1, 1):
        limits = dataclasses.replace(pair.limits, memory_mb=pair.limits.memory_mb + step)
        (out,) = Pair(pair.src, limits, pair.language).cold([stdin])
        verdicts.append(runner.test_verdict(out)[0])
    return verdicts[0] != verdicts[1] and runner.test_verdict(warm)[0] in verdicts


def assert_shared_programs_judged_warm_as_cold(language: str, cluster: str) -> None:
    """The 106 shared programs of `cluster`, run as `language` on their sample tests: every
    outcome and verdict the same warm as cold, but for a test whose cold verdict changes
    within 1 MB of its memory limit (`at_the_memory_edge`; one of the shared Python programs
    as PyPy, a loop that needs its 256 MB but for less than 1 MB)."""
    jobs = list(shared_jobs(language, cluster))
    assert len(jobs) == 106
    differ: list[tuple[str, object]] = []
    edge: list[tuple[str, object]] = []
    warm_tests = 0
    for ident, src, tests, limits in jobs:
        pair = Pair(src, limits, language)
        inputs = [t.input.encode() for t in tests]
        cold, warm = pair.cold(inputs), pair.warm(inputs)
        warm_tests += len(warm)
        for t, stdin, c, w in zip(tests, inputs, cold, warm, strict=True):
            verdicts = [(observed(o), outputs_match(o.stdout, t.output, "default")) for o in (c, w)]
            if verdicts[0] != verdicts[1]:
                (edge if at_the_memory_edge(pair, stdin, w) else differ).append((ident, verdicts))
    assert not differ, differ[:3]
    assert len(edge) <= 1, edge
    assert warm_tests >= 200


def test_every_shared_python_program_judged_warm_as_cold(language: str) -> None:
    assert_shared_programs_judged_warm_as_cold(language, "Python")


#: CPU seconds below any start of the interpreter (PyPy's and Ruby's cost more)
START_S = {"Python 3": 0.003, "PyPy 3": 0.01, "Ruby 3": 0.005}
#: a program that sums its input, per language
PY_SUM = "import sys\nprint(sum(map(int, sys.stdin.read().split())))\n"
SUM_SRC = {
    "Python 3": PY_SUM,
    "PyPy 3": PY_SUM,
    "Ruby 3": "puts $stdin.read.split.sum(&:to_i)\n",
}


def assert_judged_warm_and_cold_by_the_switch(
    monkeypatch: pytest.MonkeyPatch, language: str
) -> None:
    """Three tests judged with the switch on (the first cold, the two later ones from the
    zygote) and off (none): the same verdicts and command, the start-up counted in."""
    tests = (TestCase("1 2\n", ("3",)), TestCase("5 5\n", ("10",)), TestCase("1\n", ("2",)))
    job = Job(
        language=language, source_code=SUM_SRC[language], tests=tests, stop_on_first_fail=False
    )
    runtime = resolve(language)
    served: list[bool] = []
    close = Sandbox.close

    def recording_close(self: Sandbox) -> None:
        if not self._closed:  # once per sandbox (its __del__ closes again)
            served.append(self.warm_ready)
        close(self)

    monkeypatch.setattr(Sandbox, "close", recording_close)
    results = {}
    for on in (True, False):
        results[on] = judge_with(runtime, job, backend=LocalBackend(), config=switches(on))
    assert served == [True, False]
    for r in results.values():
        assert [t.verdict for t in r.tests] == [Verdict.PASSED] * 2 + [Verdict.WRONG_ANSWER]
        assert r.runtime["run_argv"] == results[True].runtime["run_argv"]
    # the start-up is counted in: a warm test's CPU time is never below the interpreter's start
    assert min(t.time_s for t in results[True].tests) > START_S[language]


def test_the_judge_runs_warm_and_the_switch_restores_cold(
    monkeypatch: pytest.MonkeyPatch, language: str
) -> None:
    assert_judged_warm_and_cold_by_the_switch(monkeypatch, language)


# -- hostile programs -------------------------------------------------------------------------

FIND_ZYGOTE = r"""
import os
def zygote():
    me = open("/proc/self/cmdline", "rb").read()
    for d in os.listdir("/proc"):
        if d.isdigit() and int(d) not in (1, os.getpid()):
            try:
                if open(f"/proc/{d}/cmdline", "rb").read() == me:
                    return int(d)
            except OSError:
                pass
    return None
"""


def _kill_and_judge(language: str, sig: str, notes: set[str]) -> None:
    src = FIND_ZYGOTE + (
        "import signal, sys\nz = zygote()\ndata = sys.stdin.read()\n"
        f"if data == 'attack' and z:\n    os.kill(z, signal.{sig})\n"
        "print(data, z is not None)\n"
    )
    pair = Pair(src, language=language)
    inputs = [b"attack", b"next", b"last"]
    warm = pair.warm(inputs, expect_warm=False)
    cold = pair.cold(inputs)
    assert [o.stdout for o in warm] == [b"attack True\n", b"next False\n", b"last False\n"]
    assert [o.stdout for o in cold] == [b"attack False\n", b"next False\n", b"last False\n"]
    assert all(o.exit_code == 0 and not o.error for o in warm)
    assert pair.notes[1] in notes  # the second test ran cold, and so did every later one


def test_a_program_that_kills_its_zygote_leaves_later_tests_judged_cold(language: str) -> None:
    # init finds the zygote reaped or, a large process still being torn down, its socket
    # closed: as it sends the request ("request") or waits for the answer ("no_process")
    _kill_and_judge(language, "SIGKILL", {"gone", "request", "no_process"})


def test_a_program_that_stops_its_zygote_leaves_later_tests_judged_cold(language: str) -> None:
    _kill_and_judge(language, "SIGSTOP", {"not_waiting"})


def test_the_zygote_is_out_of_reach(language: str) -> None:
    src = (
        FIND_ZYGOTE
        + r"""
import ctypes, errno
z = zygote()
res = {}
for what in ("mem", "environ", "fd", "maps", "fd/3"):
    try:
        open(f"/proc/{z}/{what}", "rb").read(16) if what != "fd" else os.listdir(f"/proc/{z}/fd")
        res[what] = "open"
    except OSError as e:
        res[what] = errno.errorcode[e.errno]
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.restype = ctypes.c_long
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
r = libc.ptrace(16, z, None, None)  # PTRACE_ATTACH
res["ptrace"] = errno.errorcode[ctypes.get_errno()] if r != 0 else "attached"
print(sorted(res.items()))
"""
    )
    out = Pair(src, language=language).warm([b""])[0]
    got = dict(eval(out.stdout))
    assert got["ptrace"] == "EPERM"
    assert all(got[k] in ("EACCES", "EPERM") for k in ("mem", "environ", "fd", "maps", "fd/3"))


def test_children_that_try_to_outlive_the_test_are_gone_and_the_zygote_serves_on(
    language: str,
) -> None:
    src = (
        FIND_ZYGOTE
        + r"""
import sys, time
if sys.stdin.read() == "spawn":
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            time.sleep(0.3)
            open("/box/late", "w").write("survived")
            os._exit(0)
        os._exit(0)
    print("spawned")
else:
    time.sleep(0.4)
    mine = [d for d in os.listdir("/proc") if d.isdigit()
            and os.stat(f"/proc/{d}").st_uid == os.getuid() and int(d) != os.getpid()]
    print(len(mine), os.path.exists("/box/late"), zygote() is not None)
"""
    )
    inputs = [b"spawn", b"check"]
    pair = Pair(src, language=language)
    warm, cold = pair.warm(inputs), pair.cold(inputs)
    assert warm[0].stdout == cold[0].stdout == b"spawned\n"
    # warm: the zygote is the one other process of the uid; nothing of the first test is left
    assert warm[1].stdout == b"1 False True\n"
    assert cold[1].stdout == b"0 False False\n"


#: a memory limit the interpreter starts under with room to spare (PyPy's start needs more)
HOG_MB = {"Python 3": 64, "PyPy 3": 96}


def test_memory_and_cpu_limits_keep_their_verdicts(language: str) -> None:
    hog = "x = []\nwhile True:\n    x.append(bytearray(1 << 20))\n"
    burn = "while True:\n    pass\n"
    limits = Limits(cpu_s=0.5, wall_s=5, memory_mb=HOG_MB[language])
    for src, verdict in ((hog, Verdict.MEMORY_LIMIT_EXCEEDED), (burn, Verdict.TIME_LIMIT_EXCEEDED)):
        pair = Pair(src, limits, language)
        cold, warm = pair.cold([b""]), pair.warm([b"", b""])
        for out in [*cold, *warm]:
            assert runner.test_verdict(out)[0] is verdict, (out.stderr[-300:], out.cpu_s)
        if verdict is Verdict.TIME_LIMIT_EXCEEDED:  # the zygote's start-up is counted in
            assert all(0.5 <= o.cpu_s < 0.8 for o in [*cold, *warm])
        else:  # the forked test's OOM is no verdict: the program was judged again cold
            assert pair.notes == [WARM_OOM_NOTE]


#: a program that logs each run of it in its work dir, then balloons on "hog", and on
#: "forked-hog" only when forked by the zygote (whose binary /proc/self/exe names)
RUNS_LOGGED = """
import os, sys
what = sys.stdin.read()
with open("/box/runs", "a") as f:
    f.write(what + "\\n")
forked = os.path.basename(os.readlink("/proc/self/exe")) == "zygote"
if what == "hog" or (what == "forked-hog" and forked):
    x = []
    while True:
        x.append(bytearray(1 << 20))
print(open("/box/runs").read().split())
"""


def test_a_forked_test_the_memory_cgroup_kills_never_runs_again_where_it_ran(
    language: str,
) -> None:
    """The zygote's pages are charged once in the run set, and a forked test's writes to them
    again, so a forked test reaches the memory limit before the cold command: its OOM is never
    a verdict. Run again in its sandbox, it would see what the killed run wrote there; the
    program is judged again instead, cold from its first test: each test runs once, as cold."""
    limits = Limits(cpu_s=2, wall_s=10, memory_mb=HOG_MB[language])
    pair = Pair(RUNS_LOGGED, limits, language)
    inputs = [b"a", b"forked-hog", b"hog", b"b"]
    cold, warm = pair.cold(inputs), pair.warm(inputs)
    assert [observed(o) for o in warm] == [observed(o) for o in cold]
    assert runner.test_verdict(cold[2])[0] is Verdict.MEMORY_LIMIT_EXCEEDED
    assert cold[1].stdout == b"['a', 'forked-hog']\n"
    assert cold[3].stdout == b"['a', 'forked-hog', 'hog', 'b']\n"
    assert pair.notes == ["", WARM_OOM_NOTE]


#: a counter in the work dir, read and incremented by each test; a forked test balloons
COUNTER = """
import os, sys
try:
    n = int(open("count").read())
except FileNotFoundError:
    n = 0
open("count", "w").write(str(n + 1))
if sys.stdin.read() == "hog" and os.path.basename(os.readlink("/proc/self/exe")) == "zygote":
    x = []
    while True:
        x.append(bytearray(1 << 20))
print(n)
"""


def test_the_judge_counts_each_test_once_after_a_forked_memory_kill(language: str) -> None:
    """A counter file read and incremented per test: 0 1 2 judged cold, and 0 1 2 with the
    zygote, whose second test the memory cgroup kills (judged again, cold)."""
    tests = tuple(TestCase(i, (str(n),)) for n, i in enumerate(("a", "hog", "b")))
    job = Job(
        language=language,
        source_code=COUNTER,
        tests=tests,
        stop_on_first_fail=False,
        memory_limit_mb=HOG_MB[language],
    )
    runtime = resolve(language)
    results = {}
    for on in (True, False):
        results[on] = judge_with(runtime, job, backend=LocalBackend(), config=switches(on))
    for r in results.values():
        assert [t.stdout for t in r.tests] == ["0\n", "1\n", "2\n"]
        assert r.verdict is Verdict.PASSED
    assert WARM_OOM_NOTE in results[True].isolation["notes"]
    assert WARM_OOM_NOTE not in results[False].isolation["notes"]


#: a program's own CPU clocks at its first line, as its interpreter's libraries read them
CLOCKS = """
import resource, time
r = resource.getrusage(resource.RUSAGE_SELF)
print(time.process_time(), time.thread_time(), r.ru_utime + r.ru_stime,
      time.clock_gettime(time.CLOCK_PROCESS_CPUTIME_ID))
"""


def assert_clocks_count_the_start(pair: Pair) -> None:
    """Each of the program's own CPU clocks, read at its first line, includes the interpreter's
    start when forked as when cold (the sandbox charges a forked test that start as well, so a
    program pacing itself by its clock would otherwise be charged more than it saw)."""
    inputs = [b"", b"", b""]
    cold, warm = pair.cold(inputs), pair.warm(inputs)
    readings = {
        kind: [[float(x) for x in o.stdout.split()] for o in outs]
        for kind, outs in (("cold", cold), ("warm", warm))
    }
    for field in range(len(readings["cold"][0])):
        least_cold = min(r[field] for r in readings["cold"])
        assert least_cold > 0, readings
        # a clock from the fork reads the script's few instructions only (far below half)
        assert min(r[field] for r in readings["warm"]) >= least_cold / 2, (field, readings)


def test_the_programs_cpu_clocks_count_the_start_as_cold(language: str) -> None:
    assert_clocks_count_the_start(Pair(CLOCKS, language=language))


def test_what_a_program_changes_reaches_the_next_test_only_as_cold_allows(language: str) -> None:
    # affinity by ctypes and /proc: PyPy 3.9's os has no sched_setaffinity
    src = (
        FIND_ZYGOTE
        + r"""
import ctypes, resource, sys
if sys.stdin.read() == "first":
    open("/box/left", "w").write("state")
    sys.modules["json"] = "poisoned"
    z = zygote()
    if z:  # a program of the same uid may change its zygote's attributes
        os.setpriority(os.PRIO_PROCESS, z, 19)
        one = ctypes.c_ulong(1)
        ctypes.CDLL(None).sched_setaffinity(z, ctypes.sizeof(one), ctypes.byref(one))
        resource.prlimit(z, resource.RLIMIT_NOFILE, (16, 16))
        resource.prlimit(z, resource.RLIMIT_DATA, (1 << 30, 1 << 30))
    print("changed")
else:
    line = [l for l in open("/proc/self/status") if l.startswith("Cpus_allowed_list")][0]
    CPUS = sum(int(b or a) - int(a) + 1 for a, _, b in
               (r.partition("-") for r in line.split()[1].split(",")))
    print(open("/box/left").read(), "json" in sys.modules, os.getpriority(os.PRIO_PROCESS, 0),
          CPUS == os.cpu_count(), resource.getrlimit(resource.RLIMIT_NOFILE),
          resource.getrlimit(resource.RLIMIT_DATA))
"""
    )
    inputs = [b"first", b"second"]
    pair = Pair(src, language=language)
    warm, cold = pair.warm(inputs, expect_warm=False), pair.cold(inputs)
    assert [o.stdout for o in warm] == [o.stdout for o in cold]
    assert warm[1].stdout.startswith(b"state False 0 True")
    # a hard limit lowered on the zygote cannot be raised again by its process: that test ran cold
    assert pair.notes[1] == "not_ready"


def test_a_program_starts_as_many_processes_as_cold(language: str) -> None:
    src = r"""
import os, time
n = 0
try:
    while n < 64:
        if os.fork() == 0:
            time.sleep(5)
            os._exit(0)
        n += 1
except OSError as e:
    print(n, e.errno)
"""
    pair = Pair(src, Limits(cpu_s=2, wall_s=10, memory_mb=256, processes=8), language)
    cold, warm = pair.cold([b"", b""]), pair.warm([b"", b""])
    assert [o.stdout for o in warm] == [o.stdout for o in cold]
    count, err = cold[0].stdout.split()
    assert 0 < int(count) < 8 and err == b"11"  # EAGAIN at the ceiling, warm as cold


#: signals a program sends its zygote that leave it serving: SIGINT trips CPython's own handler
#: in its zygote (a forked test must not inherit it); PyPy's zygote blocks every signal from
#: its seam on, so the ones that would end it are survived too (none is pending in a test)
SURVIVED = {
    "Python 3": ("SIGINT", "SIGCONT", "SIGWINCH", "SIGCHLD"),
    "PyPy 3": ("SIGINT", "SIGTERM", "SIGUSR1", "SIGCONT", "SIGWINCH", "SIGCHLD", "SIGPIPE"),
}


def test_signals_the_zygote_survives_never_reach_a_later_test(language: str) -> None:
    signals = ", ".join(f"signal.{name}" for name in SURVIVED[language])
    src = FIND_ZYGOTE + (
        "import signal, sys, time\nz = zygote()\n"
        "if sys.stdin.read() == 'poke':\n"
        f"    for s in ({signals}):\n"
        "        os.kill(z, s)\n"
        "    time.sleep(0.05)\n"
        "print(sum(range(10 ** 5)), z is not None)\n"
    )
    pair = Pair(src, language=language)
    warm = pair.warm([b"poke", b"after", b"again"])
    assert [o.stdout for o in warm] == [b"4999950000 True\n"] * 3
    assert all(o.exit_code == 0 and not o.stderr for o in warm)
    assert pair.notes == ["", "", ""]
