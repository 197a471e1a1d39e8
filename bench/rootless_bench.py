"""Cost of rootless accounting: the sandbox init sampling its pid namespace (no cgroups).

Without cgroups the init samples /proc of its namespace every NS_SAMPLE_MS while a command runs
(CPU time and memory of every process). This prints, for the same static C programs:

1. per-test time of a short program, cgroup path vs sampling path (ms/test and difference);
2. the init's own CPU while a program sleeps 1 s (1 process) and while 16 processes sleep 1 s:
   CPU per second of wall time, i.e. the sampling cost, and per sample.

The sampling path is forced in-process by making cgroup creation fail (as a non-root user it
is the natural path). Run: `python bench/rootless_bench.py` (about a minute).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from code_eval_taskpack.execution.limits import Limits
from code_eval_taskpack.execution.sandbox import cgroups, host_probe
from code_eval_taskpack.execution.sandbox.command import NS_SAMPLE_MS, Sandbox

QUICK_C = "int main(void) { return 0; }\n"
SLEEPERS_C = r"""
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int n = atoi(argv[1]);
    for (int i = 1; i < n; i++)
        if (fork() == 0) { sleep(1); _exit(0); }
    sleep(1);
    while (wait(NULL) > 0) {}
    return 0;
}
"""


@contextmanager
def no_cgroups(active: bool) -> Iterator[None]:
    real = cgroups.CgroupSet.create
    probed = host_probe._host
    if active:

        def refuse(tag: str) -> cgroups.CgroupSet:
            raise OSError("disabled by the benchmark")

        cgroups.CgroupSet.create = refuse  # type: ignore[method-assign,assignment]
        # the once-per-process host probe runs again under the refusal (a cgroup failing after
        # a probe that found cgroups is a job error, never a quiet fallback)
        host_probe._host = None
    try:
        yield
    finally:
        cgroups.CgroupSet.create = real  # type: ignore[method-assign]
        host_probe._host = probed


def build(d: Path, name: str, src: str) -> str:
    (d / f"{name}.c").write_text(src)
    subprocess.run(["gcc", "-O2", "-static", "-o", str(d / name), str(d / f"{name}.c")], check=True)
    os.chmod(d / name, 0o755)
    return str(d / name)


def init_cpu(sb: Sandbox) -> float:
    """CPU seconds of the sandbox's init (the launcher's child), from the host's /proc."""
    assert sb._proc is not None
    outer = sb._proc.pid
    kids = Path(f"/proc/{outer}/task/{outer}/children").read_text().split()
    stat = Path(f"/proc/{kids[0]}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def per_test_ms(prog: str, d: Path, n: int = 150) -> float:
    times = []
    with Sandbox(ro_paths=[str(d)]) as sb:
        for _ in range(3):
            t0 = time.perf_counter()
            for _ in range(n):
                out = sb.run([prog], limits=Limits(cpu_s=2))
                assert out.exit_code == 0, out
            times.append((time.perf_counter() - t0) / n * 1000)
    return statistics.median(times)


def sampling_cost(prog: str, d: Path, procs: int) -> float:
    """Init CPU seconds per wall second while `procs` processes sleep 1 s."""
    with Sandbox(ro_paths=[str(d)]) as sb:
        sb.run([prog, "1"], limits=Limits(cpu_s=2))  # warm up
        c0, t0 = init_cpu(sb), time.perf_counter()
        out = sb.run([prog, str(procs)], limits=Limits(cpu_s=2, wall_s=10))
        c1, t1 = init_cpu(sb), time.perf_counter()
        assert out.exit_code == 0, out
    return (c1 - c0) / (t1 - t0)


def main() -> None:
    d = Path(tempfile.mkdtemp(prefix="rootless-bench-"))
    try:
        os.chmod(d, 0o755)
        quick = build(d, "quick", QUICK_C)
        sleepers = build(d, "sleepers", SLEEPERS_C)
        have_cgroups = bool(cgroups.layout().version)
        if have_cgroups:
            cg = per_test_ms(quick, d)
        with no_cgroups(True):
            ns = per_test_ms(quick, d)
            one = sampling_cost(sleepers, d, 1)
            many = sampling_cost(sleepers, d, 16)
        print(f"rootless accounting (sample every {NS_SAMPLE_MS} ms)")
        if have_cgroups:
            print(
                f"  per test, short program: cgroup {cg:.2f} ms, sampling {ns:.2f} ms "
                f"(+{ns - cg:.2f} ms, ratio {ns / cg:.2f})"
            )
        else:
            print(f"  per test, short program: sampling {ns:.2f} ms (no cgroups here)")
        per_s = 1000 / NS_SAMPLE_MS
        for label, cost in (("1 process", one), ("16 processes", many)):
            print(
                f"  init CPU while {label} sleep: {cost * 100:.2f}% of a core "
                f"({cost / per_s * 1e6:.0f} us per sample)"
            )
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
