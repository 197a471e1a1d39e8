"""Judge one batch of jobs with one engine build, in its own process, and report what it cost.

`judge_speed.py` runs this file once per measured batch, with the engine under test on the path:
today's package (`code_eval_taskpack.execution`) or the baseline tree checked out at an older
commit, whose package was still the top-level `execution` (`--package execution`). Jobs are plain
JSON (the same file for both), so nothing of one engine's types leaks into the other.

Reported per program: verdict, whether the result or the compile came from a cache, the compile's
CPU seconds and the tests' CPU seconds as the results record them (`CompileResult.time_s`,
`TestResult.time_s`: user + system CPU of the sandboxed processes). Reported per batch: wall
seconds of `judge_many`, and the CPU of this process and of all its reaped descendants
(`getrusage`), which also counts what the results do not: sandbox set-up, the engine's own work,
compilers or helpers the engine keeps running between programs (counted once they are reaped,
which is why the engine is closed before the figures are taken).
"""

from __future__ import annotations

import argparse
import importlib
import json
import resource
import sys
import time
from pathlib import Path
from typing import Any

DEFAULT_PACKAGE = "code_eval_taskpack.execution"


def _cpu(who: int) -> float:
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def _module(package: str, *names: str) -> Any:
    """The first of `names` (a module of `package`, newest layout first) that the engine being
    measured has: a baseline commit may predate the engine's sub-packages."""
    for name in names[:-1]:
        try:
            return importlib.import_module(f"{package}.{name}")
        except ModuleNotFoundError:
            continue
    return importlib.import_module(f"{package}.{names[-1]}")


def _close_helpers(engine: Any, package: str) -> None:
    """End what the engine keeps running between programs (so their CPU is reaped and counted):
    the engine's own `close()` if it has one, and the pool of warm compiler servers."""
    close = getattr(engine, "close", None)
    if callable(close):
        close()
    try:
        warm = _module(package, "speedups.warm_compiler", "warm_compiler")
    except ModuleNotFoundError:
        return  # an engine without warm compilers
    pool = getattr(warm, "POOL", None)
    if pool is not None:
        pool.close()


def judge_jobs(
    jobs: list[dict[str, Any]],
    workers: int,
    cache_dir: str | None,
    package: str = DEFAULT_PACKAGE,
) -> dict[str, Any]:
    """Judge `jobs` (dicts: id, language, source_code, tests, time_limit_s, memory_limit_mb)
    with a fresh engine of `package`; `cache_dir` None judges without a result cache."""
    types = importlib.import_module(f"{package}.types")
    engine_mod = _module(package, "judge.engine", "engine")
    cache_mod = _module(package, "caches.results", "cache")
    built = [
        types.Job(
            language=j["language"],
            source_code=j["source_code"],
            tests=tuple(
                types.TestCase(input=t["input"], output=tuple(t["output"])) for t in j["tests"]
            ),
            time_limit_s=float(j["time_limit_s"]),
            memory_limit_mb=int(j["memory_limit_mb"]),
            id=j["id"],
        )
        for j in jobs
    ]
    cache = cache_mod.ResultCache(cache_dir) if cache_dir else None
    engine = engine_mod.Engine(workers=workers, cache=cache)
    self0, kids0 = _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    results = engine.judge_many(built)
    wall = time.perf_counter() - start
    _close_helpers(engine, package)
    self1, kids1 = _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN)
    rows = []
    for job, r in zip(jobs, results, strict=True):
        comp = r.compile
        rows.append(
            {
                "id": job["id"],
                "language": job["language"],
                "verdict": r.verdict.value,
                "cached": bool(r.cached),
                "compile_cached": bool(comp is not None and comp.cached),
                "compile_s": float(comp.time_s) if comp is not None else 0.0,
                "run_s": float(sum(t.time_s for t in r.tests)),
                "detail": (r.detail or "")[:300],
            }
        )
    return {
        "package": package,
        "workers": workers,
        "wall_s": wall,
        "engine_cpu_s": self1 - self0,
        "children_cpu_s": kids1 - kids0,
        "judged": int(getattr(engine, "judged", -1)),
        "results": rows,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=Path, required=True, help="JSON list of jobs")
    ap.add_argument("--out", type=Path, required=True, help="where the JSON report goes")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--cache", default=None, help="result cache dir (fresh); none: no cache")
    ap.add_argument("--package", default=DEFAULT_PACKAGE, help="the engine package to import")
    args = ap.parse_args(argv)
    jobs = json.loads(args.jobs.read_text(encoding="utf-8"))
    report = judge_jobs(jobs, args.workers, args.cache, args.package)
    args.out.write_text(json.dumps(report), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
