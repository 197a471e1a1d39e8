"""The PyPy 3 zygote (execution/speedups/zygotes/pypy_zygote.c, frame words Z/W of launcher.c): a test forked from
the interpreter stopped at its script's open is the cold command's twin. The diffs of
tests/test_zygote.py, run as PyPy 3: what the interpreter and the process observe of themselves,
how programs end, and what is PyPy's own (its seam, signals blocked in the zygote). The shared
ChatGPT programs, the judge's switch and the hostile programs that go after a zygote are
tests/test_zygote.py's, run for both interpreters."""

from __future__ import annotations

from functools import partial

import pytest

from code_eval_taskpack.execution import Job
from code_eval_taskpack.execution.backends.local import LocalBackend
from code_eval_taskpack.execution.languages.registry import resolve
from code_eval_taskpack.execution.sandbox.command import Sandbox
from code_eval_taskpack.execution.speedups import Host
from tests.test_zygote import (
    ENDINGS,
    LIMITS,
    PROBE,
    assert_ends_as_cold,
    observed,
    probe_cold_and_warm,
    require_zygote_host,
    switches,
)
from tests.test_zygote import Pair as BasePair

PYPY = "PyPy 3"


@pytest.fixture(scope="module", autouse=True)
def pypy() -> None:
    require_zygote_host("pypy3")


#: a program run cold and warm as PYPY
Pair = partial(BasePair, language=PYPY)


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
    for a in probe_cold_and_warm(pair, [b"first test\n", b"second\n" * 1000, b""]):
        assert a["executable"] == pair.argv[0] and a["argv"] == ["main.py"]
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
    assert_ends_as_cold(Pair(PYPY_ENDINGS[name]), [b"1 2 3\nabc\n", b"4 5\n"])


def test_a_script_that_is_not_there_or_not_a_file_is_reported_as_cold() -> None:
    # the zygote stops at the open: a main.py PyPy cannot open is B's error, as it is cold's
    src = "import os\nos.unlink('/box/main.py')\nos.mkdir('/box/main.py')\nprint('gone')\n"
    pair = Pair(src)
    cold, warm = pair.cold([b"", b""]), pair.warm([b"", b""], expect_warm=False)
    assert [observed(o) for o in cold] == [observed(o) for o in warm]
    assert warm[1].exit_code not in (0, None)
    assert pair.notes == ["", "not_ready"]  # B saw the folder and the test ran cold


# -- fail closed ------------------------------------------------------------------------------


def test_no_zygote_of_an_interpreter_that_is_not_pypys_main() -> None:
    from code_eval_taskpack.execution.speedups.zygotes import pypy as pypy_zygote

    python3 = resolve("Python 3").binary
    assert python3 is not None
    made, why = pypy_zygote.zygote_binary(python3)
    assert made is None and "is not a main calling ['pypy_main_startup']" in why


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
    from code_eval_taskpack.execution.speedups import strategy
    from tests.test_speedup_fail_closed import custom_runtime

    host = Host(LocalBackend(), "required", None, switches(True))
    name = "cpython_zygote" if language == "Python 3" else "pypy_zygote"
    job = Job(language=language, source_code="print(1)\n", tests=())
    assert strategy(name).applies(resolve(language), job, host)
    for custom in ({"execute_flags": "-v"}, {"execute_cmd": resolve(language).binary or ""}):
        assert not strategy(name).applies(custom_runtime(language, **custom), job, host)
