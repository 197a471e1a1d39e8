"""Where a warm CPython test's time goes, in one run: the steps of a test forked from an
initialised interpreter against the same steps in the process that initialised it.

    python bench/cpython_fork_costs.py [--children 50]

A small embedding of CPython (built here with the interpreter's own static library, as the
zygote is) initialises with the zygote's command line (`-W ignore -OO -s -S`), then, per child:
fork and exit at once; fork, run a two-line script and exit without finalising; fork, run the
script, finalise (`Py_FinalizeEx`) and exit. Each figure is the mean wall per child, parent side
(fork to reaped). Last, the same interpreter runs the script and finalises in-process, once per
fresh process, without a fork: what those steps cost where the heap is the process's own. The
difference is the copy-on-write faults of the forked heap, counted per child from
`getrusage`'s minor faults. Outside the sandbox (no sandbox round trip, no cgroup), so the figures
are the interpreter's alone.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from code_eval_taskpack.execution.languages.registry import resolve  # noqa: E402
from code_eval_taskpack.execution.sandbox.c_binary import c_compiler, compile_c  # noqa: E402
from code_eval_taskpack.execution.speedups.zygotes.cpython import embedding_flags  # noqa: E402

SCRIPT = 'import sys\nprint(sum(map(int, "1 2 3".split())))\n'
ARGS = ["-W", "ignore", "-OO", "-s", "-S", "main.py"]

EMBED = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void run_script(void) {
    FILE *f = fopen("main.py", "r");
    if (!f || PyRun_SimpleFileExFlags(f, "main.py", 1, NULL) != 0) _exit(3);
    fflush(stdout);
}

int main(int argc, char **argv) {
    const char *mode = getenv("BENCH_MODE");
    int children = atoi(getenv("BENCH_CHILDREN"));
    double t0 = now_ms();
    PyPreConfig pre;
    PyPreConfig_InitPythonConfig(&pre);
    if (PyStatus_Exception(Py_PreInitializeFromBytesArgs(&pre, argc, argv))) return 2;
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    if (PyStatus_Exception(PyConfig_SetBytesArgv(&config, argc, argv))) return 2;
    if (PyStatus_Exception(Py_InitializeFromConfig(&config))) return 2;
    PyConfig_Clear(&config);
    int null = open("/dev/null", O_WRONLY);
    if (strcmp(mode, "inprocess") == 0) {
        dup2(null, 1);
        double t1 = now_ms();
        run_script();
        double t2 = now_ms();
        if (Py_FinalizeEx() != 0) return 4;
        double t3 = now_ms();
        fprintf(stderr, "{\"init\": %f, \"run\": %f, \"finalise\": %f}\n", t1 - t0, t2 - t1,
                t3 - t2);
        return 0;
    }
    double total = 0;
    long faults = 0;
    for (int i = 0; i < children; i++) {
        struct rusage before, after;
        getrusage(RUSAGE_CHILDREN, &before);
        double t = now_ms();
        PyOS_BeforeFork();
        pid_t pid = fork();
        if (pid == 0) {
            PyOS_AfterFork_Child();
            dup2(null, 1);
            if (strcmp(mode, "exit") == 0) _exit(0);
            run_script();
            if (strcmp(mode, "run") == 0) _exit(0);
            _exit(Py_FinalizeEx() == 0 ? 0 : 4);
        }
        PyOS_AfterFork_Parent();
        int status;
        if (pid < 0 || waitpid(pid, &status, 0) != pid || status != 0) return 5;
        total += now_ms() - t;
        getrusage(RUSAGE_CHILDREN, &after);
        faults += after.ru_minflt - before.ru_minflt;
    }
    fprintf(stderr, "{\"ms\": %f, \"faults\": %f}\n", total / children, (double)faults / children);
    return 0;
}
"""


def build(folder: Path) -> Path:
    cc = c_compiler()
    if cc is None:
        raise SystemExit("no C compiler")
    interpreter = resolve("Python 3").binary
    if interpreter is None:
        raise SystemExit("no Python 3 here")
    made = embedding_flags(interpreter)
    if isinstance(made, str):
        raise SystemExit(made)
    flags, libs, _ = made
    source = folder / "embed.c"
    source.write_text(EMBED)
    binary, why = compile_c(
        cc, flags, source, libs, folder / "embed", what="embedding", timeout_s=300
    )
    if binary is None:
        raise SystemExit(why)
    return binary


def measure(binary: Path, folder: Path, mode: str, children: int) -> dict[str, float]:
    env = {"BENCH_MODE": mode, "BENCH_CHILDREN": str(children), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run(
        [str(binary), *ARGS], cwd=folder, env=env, capture_output=True, text=True, timeout=300
    )
    if proc.returncode != 0:
        raise SystemExit(f"{mode}: exit {proc.returncode}: {proc.stderr[-400:]}")
    return dict(json.loads(proc.stderr.strip().splitlines()[-1]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--children", type=int, default=50, help="forked children per figure")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "main.py").write_text(SCRIPT)
        binary = build(folder)
        forked = {m: measure(binary, folder, m, args.children) for m in ("exit", "run", "finalise")}
        own = [measure(binary, folder, "inprocess", 0) for _ in range(9)]
    run_own = statistics.median(r["run"] for r in own)
    fin_own = statistics.median(r["finalise"] for r in own)
    ex, run, fin = (forked[m] for m in ("exit", "run", "finalise"))
    print(
        f"forked child, mean of {args.children} (ms): fork+exit {ex['ms']:.2f}  "
        f"+script {run['ms'] - ex['ms']:.2f}  +finalisation {fin['ms'] - run['ms']:.2f}  "
        f"(minor faults a child: {ex['faults']:.0f}, {run['faults']:.0f}, {fin['faults']:.0f})"
    )
    print(
        f"in the process that made the heap, median of 9 (ms): script {run_own:.2f}  "
        f"finalisation {fin_own:.2f}  (initialisation {statistics.median(r['init'] for r in own):.2f})"
    )
    extra = (fin["ms"] - ex["ms"]) - (run_own + fin_own)
    print(
        f"a forked test's script and finalisation cost {extra:.2f} ms more than in-process: the "
        f"{fin['faults'] - ex['faults']:.0f} copy-on-write faults of the zygote's heap"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
