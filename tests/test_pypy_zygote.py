"""The PyPy 3 zygote (execution/pypy_zygote.c, frame words Z/W of launcher.c): a test forked from
the interpreter stopped at its script's open is the cold command's twin. The diffs of
tests/test_zygote.py, run as PyPy 3: what the interpreter and the process observe of themselves,
every Python program of the shared ChatGPT set on its tests, and hostile programs that go after
the zygote."""

from __future__ import annotations

import json

import pytest

from code_eval_taskpack.execution import Job, TestCase, config, runner
from code_eval_taskpack.execution.backends.local import LocalBackend
from code_eval_taskpack.execution.compare import outputs_match
from code_eval_taskpack.execution.host_probe import host_isolation
from code_eval_taskpack.execution.languages import resolve
from code_eval_taskpack.execution.limits import Limits
from code_eval_taskpack.execution.runner import judge_with
from code_eval_taskpack.execution.sandbox import Sandbox
from code_eval_taskpack.execution.strategies import Host
from code_eval_taskpack.execution.types import Verdict
from tests.conftest import require, require_binary
from tests.test_zygote import ENDINGS, FIND_ZYGOTE, PROBE, observed, shared_python_jobs
from tests.test_zygote import Pair as CPythonPair

PYPY = "PyPy 3"
LIMITS = Limits(cpu_s=2, wall_s=10, memory_mb=256)


@pytest.fixture(scope="module", autouse=True)
def pypy() -> None:
    require_binary("pypy3")
    iso = host_isolation()
    require(iso.namespaces and iso.cgroups, "the zygote needs namespaces and cgroups")


class Pair(CPythonPair):
    def __init__(self, src: str, limits: Limits = LIMITS) -> None:
        super().__init__(src, limits, PYPY)


# -- what the program observes of itself ------------------------------------------------------

#: the CPython probe, with what PyPy 3.9 lacks read softly, and what PyPy has of its own
PYPY_PROBE = (
    PROBE.replace('"orig_argv": sys.orig_argv', '"orig_argv": getattr(sys, "orig_argv", None)')
    .replace("gc.get_threshold()", 'getattr(gc, "get_threshold", lambda: None)()')
    .replace("sorted(os.sched_getaffinity(0))", 'status["Cpus_allowed_list"]')
    .replace(
        "print(json.dumps(",
        "import __pypy__\n"
        "out['pypy'] = [sys.pypy_version_info[:], sys.implementation.name,\n"
        "    threading.get_native_id() == os.getpid(), threading.main_thread().native_id,\n"
        "    threading.current_thread() is threading.main_thread(), sys.pypy_translation_info,\n"
        "    sorted(k for k in os.environ), repr(sys.stdin.buffer), repr(sys.stdout.buffer),\n"
        "    sys.stdin.buffer.raw.closefd, sys.stdout.buffer.raw.mode]\n"
        "out['pypy'][3] = out['pypy'][3] == os.getpid()\n"
        "print(json.dumps(",
    )
)


def test_the_program_observes_what_a_cold_start_gives() -> None:
    pair = Pair(PYPY_PROBE)
    inputs = [b"first test\n", b"second\n" * 1000, b""]
    cold, warm = pair.cold(inputs), pair.warm(inputs)
    for c, w in zip(cold, warm, strict=True):
        assert c.exit_code == w.exit_code == 0, (c.stderr, w.stderr)
        a, b = json.loads(c.stdout), json.loads(w.stdout)
        # the one known observable: the file the process executes is the zygote's binary
        assert a.pop("exe") == pair.argv[0]
        assert b.pop("exe") == pair.plan.warm_start
        assert [m for m in a.pop("maps_python") if m != pair.argv[0]] == [
            m for m in b.pop("maps_python") if m != pair.plan.warm_start
        ]
        soft, hard = a["rlimits"]["RLIMIT_NPROC"]
        assert b["rlimits"].pop("RLIMIT_NPROC") == [soft + 1, hard + 1]
        del a["rlimits"]["RLIMIT_NPROC"]
        for key in sorted(a):
            assert a[key] == b[key], key
        assert a["executable"] == pair.argv[0] and a["argv"] == ["main.py"]
        assert a["ids"][0] == 1 and a["ids"][1] and a["ids"][2]
        assert a["stdin_size"] == len(a["stdin"].encode())
        assert a["dumpable"] == 1 and a["fds"][:3] == ["0", "1", "2"]  # PyPy closes files late
        assert a["mask"] == [] and a["status"]["Threads"] == "1"
        assert a["pypy"][2:5] == [True, True, True]


#: and where the script runs: the interpreter's frames below it, its file and path
PYPY_ENDINGS = ENDINGS | {
    "stack": (
        "import inspect, os, sys, traceback\n"
        "print(len(inspect.stack()), repr(sys._getframe().f_back), traceback.format_stack())\n"
        "print(__file__, os.path.abspath(__file__), sys.path[0], __name__, __package__)\n"
    ),
    "multiprocessing": (
        "import multiprocessing as mp\n"
        "def sq(x):\n    return x * x\n"
        "if __name__ == '__main__':\n"
        "    with mp.get_context('fork').Pool(2) as p:\n        print(p.map(sq, range(5)))\n"
    ),
    "input": "a = input()\nb = input()\nprint(a[::-1], b)\ninput()\n",
}


@pytest.mark.parametrize("name", sorted(PYPY_ENDINGS))
def test_endings_match_cold(name: str) -> None:
    pair = Pair(PYPY_ENDINGS[name])
    inputs = [b"1 2 3\nabc\n", b"4 5\n"]
    cold, warm = pair.cold(inputs), pair.warm(inputs)
    assert [observed(o) for o in cold] == [observed(o) for o in warm]


def test_a_script_that_is_not_there_or_not_a_file_is_reported_as_cold() -> None:
    # the zygote stops at the open: a main.py PyPy cannot open is B's error, as it is cold's
    src = "import os\nos.unlink('/box/main.py')\nos.mkdir('/box/main.py')\nprint('gone')\n"
    pair = Pair(src)
    cold, warm = pair.cold([b"", b""]), pair.warm([b"", b""], expect_warm=False)
    assert [observed(o) for o in cold] == [observed(o) for o in warm]
    assert warm[1].exit_code not in (0, None)
    assert pair.notes == ["", "not_ready"]  # B saw the folder and the test ran cold


# -- the shared ChatGPT programs --------------------------------------------------------------


def test_every_shared_python_program_judged_warm_as_cold() -> None:
    jobs = list(shared_python_jobs(PYPY))
    assert len(jobs) == 106
    differ, warm_tests = [], 0
    for ident, src, tests, limits in jobs:
        pair = Pair(src, limits)
        inputs = [t.input.encode() for t in tests]
        cold, warm = pair.cold(inputs), pair.warm(inputs)
        warm_tests += len(warm)
        for t, c, w in zip(tests, cold, warm, strict=True):
            verdicts = [(observed(o), outputs_match(o.stdout, t.output, "default")) for o in (c, w)]
            if verdicts[0] != verdicts[1]:
                differ.append((ident, verdicts))
    assert not differ, differ[:3]
    assert warm_tests >= 200


def test_the_judge_runs_pypy_warm_and_the_switch_restores_cold(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    src = "import sys\nprint(sum(map(int, sys.stdin.read().split())))\n"
    tests = (TestCase("1 2\n", ("3",)), TestCase("5 5\n", ("10",)), TestCase("1\n", ("2",)))
    job = Job(language=PYPY, source_code=src, tests=tests, stop_on_first_fail=False)
    runtime = resolve(PYPY)
    served: list[bool] = []
    close = Sandbox.close

    def recording_close(self: Sandbox) -> None:
        if not self._closed:
            served.append(self.warm_ready)
        close(self)

    monkeypatch.setattr(Sandbox, "close", recording_close)
    results = {}
    for on in (True, False):
        with config.using(config.EngineConfig(zygote=on)):
            results[on] = judge_with(runtime, job, backend=LocalBackend())
    assert served == [True, False]
    for r in results.values():
        assert [t.verdict for t in r.tests] == [Verdict.PASSED] * 2 + [Verdict.WRONG_ANSWER]
        assert r.runtime["run_argv"] == results[True].runtime["run_argv"]
    # the start-up is counted in: a warm test's CPU time is never below the interpreter's start
    assert min(t.time_s for t in results[True].tests) > 0.01


# -- hostile programs -------------------------------------------------------------------------


def _kill_and_judge(sig: str, notes: set[str]) -> None:
    src = FIND_ZYGOTE + (
        "import signal, sys\nz = zygote()\ndata = sys.stdin.read()\n"
        f"if data == 'attack' and z:\n    os.kill(z, signal.{sig})\n"
        "print(data, z is not None)\n"
    )
    pair = Pair(src)
    inputs = [b"attack", b"next", b"last"]
    warm = pair.warm(inputs, expect_warm=False)
    cold = pair.cold(inputs)
    assert [o.stdout for o in warm] == [b"attack True\n", b"next False\n", b"last False\n"]
    assert [o.stdout for o in cold] == [b"attack False\n", b"next False\n", b"last False\n"]
    assert all(o.exit_code == 0 and not o.error for o in warm)
    assert pair.notes[1] in notes  # the second test ran cold, and so did every later one


def test_a_program_that_kills_its_zygote_leaves_later_tests_judged_cold() -> None:
    # init finds the zygote reaped, or (a large process still being torn down) its socket closed
    _kill_and_judge("SIGKILL", {"gone", "no_process"})


def test_a_program_that_stops_its_zygote_leaves_later_tests_judged_cold() -> None:
    _kill_and_judge("SIGSTOP", {"not_waiting"})


def test_the_zygote_is_out_of_reach() -> None:
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
    out = Pair(src).warm([b""])[0]
    got = dict(eval(out.stdout))
    assert got["ptrace"] == "EPERM"
    assert all(got[k] in ("EACCES", "EPERM") for k in ("mem", "environ", "fd", "maps", "fd/3"))


def test_children_that_try_to_outlive_the_test_are_gone_and_the_zygote_serves_on() -> None:
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
    pair = Pair(src)
    warm, cold = pair.warm(inputs), pair.cold(inputs)
    assert warm[0].stdout == cold[0].stdout == b"spawned\n"
    assert warm[1].stdout == b"1 False True\n"
    assert cold[1].stdout == b"0 False False\n"


def test_memory_and_cpu_limits_keep_their_verdicts() -> None:
    hog = "x = []\nwhile True:\n    x.append(bytearray(1 << 20))\n"
    burn = "while True:\n    pass\n"
    limits = Limits(cpu_s=0.5, wall_s=5, memory_mb=96)
    for src, verdict in ((hog, Verdict.MEMORY_LIMIT_EXCEEDED), (burn, Verdict.TIME_LIMIT_EXCEEDED)):
        pair = Pair(src, limits)
        cold, warm = pair.cold([b""]), pair.warm([b"", b""])
        for out in [*cold, *warm]:
            assert runner.test_verdict(out)[0] is verdict, (out.stderr[-300:], out.cpu_s)
        if verdict is Verdict.TIME_LIMIT_EXCEEDED:  # the zygote's start-up is counted in
            assert all(0.5 <= o.cpu_s < 0.8 for o in [*cold, *warm])


def test_what_a_program_changes_reaches_the_next_test_only_as_cold_allows() -> None:
    src = (
        FIND_ZYGOTE
        + r"""
import resource, sys
if sys.stdin.read() == "first":
    open("/box/left", "w").write("state")
    sys.modules["json"] = "poisoned"
    z = zygote()
    if z:  # a program of the same uid may change its zygote's attributes
        os.setpriority(os.PRIO_PROCESS, z, 19)
        import ctypes  # PyPy 3.9's os has no sched_setaffinity
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
    pair = Pair(src)
    warm, cold = pair.warm(inputs, expect_warm=False), pair.cold(inputs)
    assert [o.stdout for o in warm] == [o.stdout for o in cold]
    assert warm[1].stdout.startswith(b"state False 0 True")
    assert pair.notes[1] == "not_ready"


def test_a_program_starts_as_many_processes_as_cold() -> None:
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
    pair = Pair(src, Limits(cpu_s=2, wall_s=10, memory_mb=256, processes=8))
    cold, warm = pair.cold([b"", b""]), pair.warm([b"", b""])
    assert [o.stdout for o in warm] == [o.stdout for o in cold]
    count, err = cold[0].stdout.split()
    assert 0 < int(count) < 8 and err == b"11"


def test_signals_sent_to_the_zygote_never_reach_a_later_test() -> None:
    # SIGINT would trip PyPy's own handler: blocked in the zygote, never pending in a test
    src = FIND_ZYGOTE + (
        "import signal, sys, time\nz = zygote()\n"
        "if sys.stdin.read() == 'poke':\n"
        "    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1, signal.SIGCONT,\n"
        "              signal.SIGWINCH, signal.SIGCHLD, signal.SIGPIPE):\n"
        "        os.kill(z, s)\n"
        "    time.sleep(0.05)\n"
        "print(sum(range(10 ** 5)), z is not None)\n"
    )
    pair = Pair(src)
    warm = pair.warm([b"poke", b"after", b"again"])
    assert [o.stdout for o in warm] == [b"4999950000 True\n"] * 3
    assert all(o.exit_code == 0 and not o.stderr for o in warm)
    assert pair.notes == ["", "", ""]


# -- fail closed ------------------------------------------------------------------------------


def test_no_zygote_of_an_interpreter_that_is_not_pypys_main() -> None:
    from code_eval_taskpack.execution import pypy_zygote

    python3 = resolve("Python 3").binary
    assert python3 is not None
    made, why = pypy_zygote.zygote_binary(python3)
    assert made is None and "is not a main calling pypy_main_startup" in why


def test_the_zygote_never_runs_a_script_by_itself() -> None:
    import subprocess

    plan, argv = Pair("print('ran')\n").plan, Pair("print('ran')\n").argv
    binary = plan.ours[-1]
    # without init's control socket on fd 3
    out = subprocess.run([str(binary), *argv[1:]], capture_output=True, text=True, cwd="/")
    assert out.returncode == 127 and "control socket" in out.stderr and "ran" not in out.stdout
    # a command that does not end with a script: no zygote, every test cold
    with Sandbox(ro_paths=plan.ro_paths, files={"main.py": b"print('ran')\n"}) as sb:
        for bad in ([*argv[:-1], "-c", "print('ran')"], argv[:-1]):
            assert not sb.start_warm(bad, executable=plan.warm_start, limits=LIMITS)
            assert "does not end with a script" in sb.zygote_note


@pytest.mark.parametrize("language", ["Python 3", PYPY])
def test_a_clients_own_command_gets_no_zygote(language: str) -> None:
    # the PyPy seam is the catalog command's script: a custom argv (ExecEval's execute_cmd or
    # execute_flags) could put it anywhere, so neither zygote takes one
    from code_eval_taskpack.execution.strategies import strategy
    from tests.test_speedup_fail_closed import custom_runtime

    host = Host(LocalBackend(), "required", None)
    name = "zygote" if language == "Python 3" else "pypy_zygote"
    job = Job(language=language, source_code="print(1)\n", tests=())
    with config.using(config.EngineConfig(zygote=True)):
        assert strategy(name).applies(resolve(language), job, host)
        for custom in ({"execute_flags": "-v"}, {"execute_cmd": resolve(language).binary or ""}):
            assert not strategy(name).applies(custom_runtime(language, **custom), job, host)
