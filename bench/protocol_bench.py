"""The paper protocol's judging cost: programs per second per core, local and Ray, projected to
one model's full xCodeEval program-synthesis run (952 problems x 11 languages x 20 samples =
209,440 programs) on 64 cores. One run, two measurements per backend, on N CPUs (default: this
machine's):

- `equal`: the equal-weight judge workload (`judge_workload.py`: real and hand-written programs
  of the 11 languages, the first `--per-language` of each), on the problems' public sample tests
  (about 2 a program). Local with N workers against a local Ray cluster of N CPUs: the ratio is
  what the Ray backend costs against one machine judging alone.
- `hidden`: the same programs with `--tests` tests each, the size of a hidden test set. The
  hidden tests (`unittest_db.json`) are not in the shared data (its README), and neither the
  shared reference (REFERENCE.md sections 2 and 7: the file's format, and 1,831 sample tests for
  848 programs) nor the data give their number per problem: `--tests` is an assumption, stated
  in the output (default `HIDDEN_TESTS`). The tests are the problem's sample tests cycled, so a
  wrong program stops at its first failing test (stop on first fail, as ExecEval and xCodeEval
  judge) and a right one runs them all, as on the hidden set.

From the two measurements the cost is split into a per-program part (compile, sandbox) and a
per-test part, so the projection can be redone for another tests-per-program figure. Every
run starts with empty caches; Ray's start-up (cluster, node judges) is outside the timing, the
warm-up of compilers is not (it happens in the timed batch on both backends). Verdicts of the
two backends must agree (else the bench fails).

Run: `python bench/protocol_bench.py` (`make bench`), `--per-language 4` for a quick look.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import judge_workload as wl  # noqa: E402

from code_eval_taskpack.execution import Engine, Job, TestCase  # noqa: E402
from code_eval_taskpack.execution.backends.raycluster import RayBackend  # noqa: E402
from code_eval_taskpack.execution.types import Result  # noqa: E402

PROBLEMS, LANGUAGES, SAMPLES = 952, 11, 20
PROTOCOL_PROGRAMS = PROBLEMS * LANGUAGES * SAMPLES  # 209,440
PROJECTED_CORES = 64
#: the assumed size of a hidden test set (see the module docstring: not in the shared data)
HIDDEN_TESTS = 50
GOAL_S = 600.0


@dataclass
class Run:
    backend: str
    workload: str
    programs: int
    tests: int  # tests the programs were given in all
    wall_s: float
    cpus: int
    verdicts: list[str]
    sandbox_cpu_s: float  # compile and test CPU the results record

    @property
    def busy(self) -> float:
        """Share of the CPUs' wall time that went into the sandboxed compiles and tests."""
        return self.sandbox_cpu_s / (self.wall_s * self.cpus)

    @property
    def per_core(self) -> float:
        return self.programs / self.wall_s / self.cpus


def workload(per_language: int, tests: int | None) -> list[Job]:
    """The first `per_language` programs of each language, on sample tests (None) or `tests`
    tests cycled from the samples."""
    programs = wl.equal_workload()
    chosen: list[dict[str, Any]] = []
    for lang in sorted({p["lang_cluster"] for p in programs}):
        chosen += [p for p in programs if p["lang_cluster"] == lang][:per_language]
    jobs = []
    for j in wl.jobs_for(chosen):
        samples = [TestCase(t["input"], tuple(t["output"])) for t in j["tests"]]
        cases = samples if tests is None else [samples[k % len(samples)] for k in range(tests)]
        jobs.append(
            Job(
                j["language"],
                j["source_code"],
                tuple(cases),
                time_limit_s=float(j["time_limit_s"]),
                memory_limit_mb=int(j["memory_limit_mb"]),
                id=j["id"],
            )
        )
    return jobs


def measure(engine: Engine, jobs: list[Job], backend: str, name: str, cpus: int) -> Run:
    start = time.perf_counter()
    results: list[Result] = engine.judge_many(jobs)
    wall = time.perf_counter() - start
    if any(r.cached for r in results):
        raise SystemExit(f"bench: {backend} {name}: cache hits in a cold run")
    return Run(
        backend,
        name,
        len(jobs),
        sum(len(j.tests) for j in jobs),
        wall,
        cpus,
        [r.verdict.value for r in results],
        sum(
            (r.compile.time_s if r.compile else 0.0) + sum(t.time_s for t in r.tests)
            for r in results
        ),
    )


def cold_caches(root: Path, name: str) -> None:
    """A fresh cache folder (precompiled headers, start-up files, launcher) for the next run:
    no run profits from what an earlier one left on disk or in warm compilers."""
    from code_eval_taskpack.execution import warm_compiler

    warm_compiler.POOL.close()
    os.environ["CODE_EVAL_CACHE"] = str(root / name)


def local_run(jobs: list[Job], name: str, cpus: int, root: Path) -> Run:
    cold_caches(root, f"local-{name}")
    return measure(Engine(workers=cpus, backend="local"), jobs, "local", name, cpus)


def ray_run(jobs: list[Job], name: str, cpus: int, root: Path) -> Run:
    """On a local Ray cluster started for this run (its nodes see the fresh cache folder)."""
    cold_caches(root, f"ray-{name}")
    ray = RayBackend(num_cpus=str(cpus))
    try:
        warm = Job("Python 3", "print(1)\n", (TestCase("", ("1",)),))
        Engine(backend=ray).judge(warm)  # the cluster and its node judges, outside the timing
        return measure(Engine(backend=ray), jobs, "ray", name, cpus)
    finally:
        ray.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--per-language", type=int, default=12, help="programs per language")
    ap.add_argument("--tests", type=int, default=HIDDEN_TESTS, help="tests per program (hidden)")
    ap.add_argument("--cpus", type=int, default=len(os.sched_getaffinity(0)))
    args = ap.parse_args(argv)
    equal, hidden = workload(args.per_language, None), workload(args.per_language, args.tests)
    cpus = args.cpus
    saved = os.environ.get("CODE_EVAL_CACHE")
    with tempfile.TemporaryDirectory(prefix="protocol-bench-") as tmp:
        try:
            runs = [
                local_run(equal, "equal", cpus, Path(tmp)),
                ray_run(equal, "equal", cpus, Path(tmp)),
                local_run(hidden, "hidden", cpus, Path(tmp)),
                ray_run(hidden, "hidden", cpus, Path(tmp)),
            ]
        finally:
            if saved is None:
                os.environ.pop("CODE_EVAL_CACHE", None)
            else:
                os.environ["CODE_EVAL_CACHE"] = saved
    by = {(r.backend, r.workload): r for r in runs}
    for name in ("equal", "hidden"):
        a, b = by[("local", name)].verdicts, by[("ray", name)].verdicts
        diff = [(j.id, x, y) for j, x, y in zip(equal, a, b, strict=True) if x != y]
        if diff:
            print(f"bench: {name}: local and ray disagree on {len(diff)}: {diff[:5]}")
            return 1
    load = os.getloadavg()[0]
    n = len(equal)
    sample_tests = by[("local", "equal")].tests / n
    print(
        f"protocol bench: {n} programs ({args.per_language} per language, 11 languages), "
        f"{cpus} CPUs, load average {load:.1f}"
    )
    for r in runs:
        print(
            f"  {r.backend:5} {r.workload:6} {r.tests / r.programs:5.1f} tests/program: "
            f"{r.wall_s:7.1f} s, {r.programs / r.wall_s:6.2f} programs/s, "
            f"{r.per_core:6.3f} programs/s/core, {r.busy:4.0%} of CPU time in sandboxes"
        )
    ratio_eq = by[("ray", "equal")].per_core / by[("local", "equal")].per_core
    ratio_hid = by[("ray", "hidden")].per_core / by[("local", "hidden")].per_core
    print(
        f"  ray {cpus} CPUs / local {cpus} workers: equal workload x{ratio_eq:.2f}, "
        f"hidden-sized x{ratio_hid:.2f} (programs/s)"
    )
    print(
        f"  tests per program: {args.tests} assumed for a hidden set (not in the shared data); "
        f"the sample tests are {sample_tests:.1f} a program"
    )
    for backend in ("local", "ray"):
        eq, hid = by[(backend, "equal")], by[(backend, "hidden")]
        # core-seconds per program = fixed + per_test * tests (two points)
        c_eq, c_hid = 1 / eq.per_core, 1 / hid.per_core
        per_test = max(0.0, (c_hid - c_eq) / max(1e-9, args.tests - sample_tests))
        fixed = max(0.0, c_eq - per_test * sample_tests)
        wall = PROTOCOL_PROGRAMS * c_hid / PROJECTED_CORES
        verdict = "within" if wall <= GOAL_S else "over"
        print(
            f"  {backend}: {fixed:.3f} core-s per program + {per_test * 1000:.1f} core-ms per test;"
            f" {PROTOCOL_PROGRAMS:,} programs x {args.tests} tests on {PROJECTED_CORES} cores: "
            f"{wall / 60:.1f} min ({verdict} the {GOAL_S / 60:.0f}-min goal)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
