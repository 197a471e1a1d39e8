"""Per-test start-up cost of the interpreted and JVM languages, with and without their start-up
strategies, in one run (ratios only mean something within one run on a shared machine).

1. Per test, through the engine (local backend, no result cache): an empty program and a typical
   one (a real program of the workload or of the shared ChatGPT programs, its first sample test
   repeated). Wall ms/test = (T(n2 tests) - T(n1 tests)) / (n2 - n1), which cancels the compile
   and the sandbox set-up; CPU ms/test = the median of the tests' own CPU time as the engine
   measured it. Java runs with the class-data sharing archive on and off (`CODE_EVAL_JVM_CDS`).
2. Fidelity: every Java program of the equal workload judged with the archive off and on; every
   verdict, exit code, stdout and stderr must be identical (prints the differences).

    python bench/startup_floors_bench.py [--quick] [--only "Java 17"]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from code_eval_taskpack.execution.config import EngineConfig
from code_eval_taskpack.execution.judge.engine import Engine
from code_eval_taskpack.execution.types import Job, Result, TestCase, Verdict

HERE = Path(__file__).resolve().parent
EQUAL = HERE / "workload" / "equal.jsonl"
SHARED = Path(os.environ.get("SHARED_DATA") or HERE.parent.parent / "shared" / "data")
PROBLEMS = SHARED / "xcodeeval_sample" / "problem_descriptions.jsonl"
CHATGPT = SHARED / "xcodeeval_chatgpt_direct" / "predictions.jsonl"

EMPTY = {
    "Java 17": "public class Main { public static void main(String[] a) { } }\n",
    "Kotlin": "fun main() { }\n",
    "Node.js": "\n",
    "PHP": "<?php\n",
    "Ruby 3": "\n",
    "PyPy 3": "\n",
    "Python 3": "\n",
}
#: where the typical program comes from: the workload's own language, or a ChatGPT cluster
TYPICAL = {
    "Java 17": ("equal", "Java"),
    "Kotlin": ("equal", "Kotlin"),
    "Node.js": ("equal", "Javascript"),
    "PHP": ("chatgpt", "PHP"),
    "Ruby 3": ("chatgpt", "Ruby"),
    "PyPy 3": ("chatgpt", "Python"),
    "Python 3": ("chatgpt", "Python"),
}
#: the languages measured with their start-up strategy off, then on
SWITCHED = {"Java 17"}


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _samples() -> dict[str, tuple[str, str]]:
    return {
        p["src_uid"]: (p["sample_inputs"][0], p["sample_outputs"][0])
        for p in _rows(PROBLEMS)
        if p.get("sample_inputs")
    }


def typical(language: str) -> tuple[str, TestCase]:
    """A real program of `language` and its first sample test: the first correct one."""
    where, cluster = TYPICAL[language]
    samples = _samples()
    if where == "equal":
        rows = [r for r in _rows(EQUAL) if r["lang_cluster"] == cluster and r["kind"] == "ok"]
    else:
        rows = [
            r
            for r in _rows(CHATGPT)
            if r["lang_cluster"] == cluster and r["execeval_hidden_tests_passed"]
        ]
    row = next(r for r in rows if r["src_uid"] in samples)
    given, expected = samples[row["src_uid"]]
    return row["source_code"], TestCase(input=given, output=(expected,))


def per_test(
    engine: Engine, language: str, source: str, test: TestCase, n1: int, n2: int
) -> dict[str, Any]:
    def judge(n: int) -> tuple[float, Result]:
        job = Job(language=language, source_code=source, tests=(test,) * n)
        start = time.perf_counter()
        result = engine.judge(job)
        return time.perf_counter() - start, result

    judge(1)  # compile (and any start-up artefact) once
    t1, _ = judge(n1)
    t2, big = judge(n2)
    cpu = statistics.median(t.time_s for t in big.tests) if big.tests else 0.0
    return {
        "wall_ms": (t2 - t1) / (n2 - n1) * 1e3,
        "cpu_ms": cpu * 1e3,
        "verdict": big.verdict.value,
    }


def bench_costs(languages: list[str], n1: int, n2: int, rounds: int) -> None:
    """Each program's modes measured in turn, `rounds` times (the load changes between two
    measurements less than over a whole series): the medians."""
    header = (
        f"{'language':10s} {'program':8s} {'mode':6s} {'wall ms/test':>12s} {'cpu ms/test':>12s}"
    )
    print(f"{header}  verdict")
    for language in languages:
        modes = (
            {"off": EngineConfig(jvm_cds=False), "on": EngineConfig(jvm_cds=True)}
            if language in SWITCHED
            else {"as is": EngineConfig()}
        )
        engines = {mode: Engine(workers=1, config=switches) for mode, switches in modes.items()}
        for label, source, test in (
            ("empty", EMPTY[language], TestCase(input="", output=("",))),
            ("typical", *typical(language)),
        ):
            got: dict[str, list[dict[str, Any]]] = {mode: [] for mode in modes}
            for _ in range(rounds):
                for mode, engine in engines.items():
                    got[mode].append(per_test(engine, language, source, test, n1, n2))
            for mode, samples in got.items():
                wall = statistics.median(g["wall_ms"] for g in samples)
                cpu = statistics.median(g["cpu_ms"] for g in samples)
                verdicts = "/".join(sorted({g["verdict"] for g in samples}))
                print(
                    f"{language:10s} {label:8s} {mode:6s} {wall:12.1f} {cpu:12.1f}  {verdicts}",
                    flush=True,
                )


def bench_fidelity(limit: int | None) -> int:
    samples = _samples()
    rows = [r for r in _rows(EQUAL) if r["lang_cluster"] == "Java"][:limit]
    jobs = []
    for r in rows:
        given, expected = samples[r["src_uid"]]
        jobs.append(Job("Java 17", r["source_code"], (TestCase(given, (expected,)),), id=r["id"]))
    judged = {}
    for on in (False, True):
        engine = Engine(workers=2, config=EngineConfig(jvm_cds=on))
        start = time.perf_counter()
        judged[on] = engine.judge_many(jobs)
        seconds = time.perf_counter() - start
        # the tests that ran to their end (a time-out's seconds are the limit's, not start-up)
        ended = [
            t for r in judged[on] for t in r.tests if t.verdict is not Verdict.TIME_LIMIT_EXCEEDED
        ]
        cpu, tests = sum(t.time_s for t in ended), len(ended)
        print(
            f"fidelity: {len(jobs)} Java programs, archive {'on' if on else 'off'}: {seconds:.1f} s;"
            f" {tests} tests not timed out: run CPU {cpu:.2f} s ({cpu / max(tests, 1) * 1e3:.1f} ms)"
        )
    diffs = 0
    for cold, warm in zip(judged[False], judged[True], strict=True):
        a = (cold.verdict, [(t.verdict, t.exit_code, t.stdout, t.stderr) for t in cold.tests])
        b = (warm.verdict, [(t.verdict, t.exit_code, t.stdout, t.stderr) for t in warm.tests])
        if a != b:
            diffs += 1
            print(f"  DIFFERS {cold.id}: {a!r:.200} != {b!r:.200}")
    print(f"fidelity: {diffs} of {len(jobs)} programs differ")
    return diffs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer tests and programs")
    parser.add_argument("--only", action="append", help="a language (repeatable)")
    args = parser.parse_args()
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    languages = args.only or list(EMPTY)
    n1, n2, rounds = (2, 8, 2) if args.quick else (3, 15, 3)
    bench_costs(languages, n1, n2, rounds)
    diffs = bench_fidelity(24 if args.quick else None) if "Java 17" in languages else 0
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
