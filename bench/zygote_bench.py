"""CPython, PyPy 3 or Ruby tests forked from the zygote against cold interpreter starts, in one run.

    python bench/zygote_bench.py [--quick] [--tests 40] [--workers 1] [--repeat 1]
                                 [--language "Python 3" | "PyPy 3" | "Ruby 3"]

1. Per-test cost inside one sandbox (the engine's `Sandbox.run` round trip, median of --tests):
   the fork floor (a trivial C program), the language cold (the catalog's run argv), and warm
   (forked from the zygote). Figures: milliseconds, warm minus floor, cold / warm.
2. The 106 Python (or, for Ruby, Ruby) programs of the judge-speed workload (the shared ChatGPT
   programs with their sample tests) run as the language, judged with the zygote off, on, on, off
   (CODE_EVAL_ZYGOTE, and for CPython CODE_EVAL_CPYTHON_ZYGOTE), no caches:
   mean wall seconds, the ratio, and whether every verdict is identical in all four rounds.
   `--repeat N` gives every program each sample test N times (as many tests as xCodeEval's
   hidden unit tests have). `--quick` judges the first 30.
The machine's load (`uptime`) is printed before and after: ratios are what this bench says,
absolute figures move with the load.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import judge_workload  # noqa: E402

from code_eval_taskpack.execution import Job, TestCase, config  # noqa: E402
from code_eval_taskpack.execution.backends.local import LocalBackend  # noqa: E402
from code_eval_taskpack.execution.languages.registry import resolve  # noqa: E402
from code_eval_taskpack.execution.limits import Limits  # noqa: E402
from code_eval_taskpack.execution.run.runner import judge_with, source_layout  # noqa: E402
from code_eval_taskpack.execution.sandbox.command import Sandbox  # noqa: E402
from code_eval_taskpack.execution.sandbox.outcome import default_env  # noqa: E402
from code_eval_taskpack.execution.sandbox.view import SharedFolder  # noqa: E402
from code_eval_taskpack.execution.speedups import Host, build_plan  # noqa: E402

LIMITS = Limits(cpu_s=2, wall_s=10, memory_mb=256)
PYTHON_SRC = "import sys\nprint(sum(map(int, sys.stdin.read().split())))\n"
#: the per-test figure's program, and the workload's programs (their cluster), per language
SOURCES = {
    "Python 3": PYTHON_SRC,
    "PyPy 3": PYTHON_SRC,
    "Ruby 3": "puts $stdin.read.split.sum(&:to_i)\n",
}
CLUSTERS = {"Python 3": "Python", "PyPy 3": "Python", "Ruby 3": "Ruby"}


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def _median_ms(box: Sandbox, argv: list[str], n: int, warm: bool) -> float:
    env = default_env("/box")
    times = []
    for _ in range(n):
        t = time.perf_counter()
        out = box.run(argv, limits=LIMITS, stdin=b"1 2 3\n", env=env, purpose="run", warm=warm)
        times.append(time.perf_counter() - t)
        if out.exit_code != 0 or out.error:
            raise SystemExit(f"bench command failed: {out.error or out.stderr[-300:]!r}")
    if warm and not box.warm_ready:
        raise SystemExit(f"the zygote stopped serving: {box.zygote_note}")
    return statistics.median(times) * 1000


def per_test_costs(n: int, language: str = "Python 3") -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o755)  # the sandbox's uid executes the floor program from there
        c_src = Path(tmp, "floor.c")
        c_src.write_text("int main(void) { return 0; }\n")
        floor = Path(tmp, "floor")
        subprocess.run(["gcc", "-O2", "-o", str(floor), str(c_src)], check=True)
        runtime = resolve(language)
        src = SOURCES[language]
        job = Job(language=language, source_code=src, tests=())
        values = source_layout(runtime, src) | {"memory_mb": "256"}
        switches = config.EngineConfig(zygote=True, cpython_zygote=True)
        plan = build_plan(
            runtime, job, Host(LocalBackend(), "required", None, switches), values, ""
        )
        if not plan.warm_start:
            raise SystemExit(f"no zygote for {language} on this host")
        argv = runtime.expand(plan.run_argv, **plan.values)
        folder = SharedFolder(tmp)
        files = {runtime.source: src.encode()}
        with Sandbox(ro_paths=[*plan.ro_paths, folder], files=files) as box:
            fork_floor = _median_ms(box, [folder.inside_of(floor)], n, False)
            cold = _median_ms(box, argv, n, False)
            started = box.start_warm(
                argv, executable=plan.warm_start, limits=LIMITS, env=default_env("/box")
            )
            if not started:
                raise SystemExit(f"the zygote did not start: {box.zygote_note}")
            warm = _median_ms(box, argv, n, True)
    return {"floor": fork_floor, "cold": cold, "warm": warm}


def _jobs(count: int | None, repeat: int = 1, language: str = "Python 3") -> list[Job]:
    cluster = CLUSTERS[language]
    programs = [p for p in judge_workload.shared_programs() if p["lang_cluster"] == cluster]
    rows = judge_workload.jobs_for(programs)[:count]
    return [
        Job(
            language=language,
            source_code=r["source_code"],
            tests=tuple(TestCase.from_dict(t) for t in r["tests"]) * repeat,
            time_limit_s=r["time_limit_s"],
            memory_limit_mb=r["memory_limit_mb"],
            id=r["id"],
        )
        for r in rows
    ]


def judge_all(jobs: list[Job], zygote: bool, workers: int) -> tuple[float, list[str]]:
    runtime = resolve(jobs[0].language)
    backend = LocalBackend()
    switches = config.EngineConfig(zygote=zygote, cpython_zygote=zygote)

    def one(job: Job) -> str:
        r = judge_with(runtime, job, backend=backend, config=switches)
        return f"{r.verdict.value}|{[t.verdict.value for t in r.tests]}"

    t = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        verdicts = list(pool.map(one, jobs))
    return time.perf_counter() - t, verdicts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="30 programs, 20 tests per figure")
    parser.add_argument("--tests", type=int, default=40, help="runs per per-test figure")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument(
        "--repeat", type=int, default=1, help="each sample test N times (hidden tests are many)"
    )
    parser.add_argument("--language", default="Python 3", choices=sorted(SOURCES))
    args = parser.parse_args(argv)
    n = 20 if args.quick else args.tests
    print(f"load before: {uptime()}")
    costs = per_test_costs(n, args.language)
    print(
        f"per test (median of {n}, ms): fork floor {costs['floor']:.2f}  "
        f"{args.language} cold {costs['cold']:.2f}  warm {costs['warm']:.2f}  "
        f"(warm - floor {costs['warm'] - costs['floor']:.2f} ms, "
        f"cold / warm {costs['cold'] / costs['warm']:.2f}x)"
    )
    jobs = _jobs(30 if args.quick else None, args.repeat, args.language)
    judge_all(jobs[:2], True, 1)  # build the zygote and the bytecode once, outside the figures
    # cold, warm, warm, cold: what drifts with the load weighs on both alike
    cold_s, cold_v = judge_all(jobs, False, args.workers)
    warm_s, warm_v = judge_all(jobs, True, args.workers)
    warm2_s, warm2_v = judge_all(jobs, True, args.workers)
    cold2_s, cold2_v = judge_all(jobs, False, args.workers)
    cold_s, warm_s = (cold_s + cold2_s) / 2, (warm_s + warm2_s) / 2
    same = sum(
        len({a, b, c, d}) == 1 for a, b, c, d in zip(cold_v, warm_v, warm2_v, cold2_v, strict=True)
    )
    print(
        f"{len(jobs)} {CLUSTERS[args.language]} programs as {args.language}, {sum(len(j.tests) for j in jobs)} tests, "
        f"{args.workers} worker(s), mean of 2 rounds: cold {cold_s:.2f}s  warm {warm_s:.2f}s  "
        f"cold / warm {cold_s / warm_s:.2f}x  identical verdicts {same}/{len(jobs)}"
    )
    print(f"load after: {uptime()}")
    return 0 if same == len(jobs) else 1


if __name__ == "__main__":
    raise SystemExit(main())
