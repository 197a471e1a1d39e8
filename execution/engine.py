"""The judging engine: a worker pool over sandboxed runs, with a result cache.

`Engine.judge(job)` judges one program; `Engine.judge_many(jobs)` judges a batch in input order on
a pool sized to the CPUs (one program per CPU: more would let programs steal each other's CPU and
turn CPU-time limits into a load test). Identical jobs are judged once. With a cache, each result
is looked up before judging and stored the moment its job finishes, so an interrupted batch loses
nothing. Engine failures come back as INFRA_ERROR results (never cached, never raised as the
program's fault); only caller errors such as an unknown language raise.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from execution.cache import ResultCache, job_key
from execution.compile_cache import CompileCache
from execution.languages import Runtime, resolve
from execution.runner import judge_with
from execution.types import Job, Result, Verdict

COMPARATORS = ("default", "execeval")


def cpu_count() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


class Engine:
    """Judge programs. `comparator` applies to jobs that keep the default comparator."""

    def __init__(
        self,
        workers: int | None = None,
        cache: ResultCache | str | Path | None = None,
        comparator: str = "default",
    ) -> None:
        if comparator not in COMPARATORS:
            raise ValueError(f"unknown comparator {comparator!r}; use one of {COMPARATORS}")
        self.workers = max(1, int(workers)) if workers else cpu_count()
        if cache is None or isinstance(cache, ResultCache):
            self.cache = cache
        else:
            self.cache = ResultCache(Path(cache))
        self.comparator = comparator
        # compiled programs are reused across jobs (same runtime and source, other tests)
        self.compiled = CompileCache(self.cache.root / "compiled" if self.cache else None)
        self.judged = 0  # programs actually run (not served from the cache), for reporting
        self._lock = threading.Lock()

    # -- single job -------------------------------------------------------------------------

    def _effective(self, job: Job) -> tuple[Job, Runtime]:
        if job.comparator not in COMPARATORS:
            raise ValueError(f"job {job.id!r}: unknown comparator {job.comparator!r}")
        runtime = resolve(job.language)  # raises UnknownLanguageError
        if job.comparator == "default" and self.comparator != "default":
            job = dataclasses.replace(job, comparator=self.comparator)
        return job, runtime

    def judge(self, job: Job) -> Result:
        """Judge one program (cache first)."""
        eff, runtime = self._effective(job)
        return self._judge_resolved(eff, runtime, job.id)

    def _judge_resolved(self, job: Job, runtime: Runtime, job_id: str) -> Result:
        if self.cache is not None:
            hit = self.cache.get(job, runtime)
            if hit is not None:
                hit.id = job_id
                return hit
        result = self._run(job, runtime)
        result.id = job_id
        if self.cache is not None:
            self.cache.put(job, runtime, result)
        return result

    def _run(self, job: Job, runtime: Runtime) -> Result:
        with self._lock:
            self.judged += 1
        try:
            if not runtime.available:
                return Result(
                    verdict=Verdict.INFRA_ERROR,
                    runtime=runtime.info(),
                    detail=f"runtime {runtime.name} unavailable: {runtime.reason}",
                )
            return judge_with(runtime, job, job.comparator, self.compiled)
        except Exception as exc:  # an engine bug must not become the program's fault
            return Result(
                verdict=Verdict.INFRA_ERROR,
                runtime=_safe_info(runtime),
                detail=f"engine error: {exc!r}\n{traceback.format_exc(limit=5)}",
            )

    # -- batches ----------------------------------------------------------------------------

    def judge_many(
        self,
        jobs: Sequence[Job],
        progress: Callable[[int, int], None] | None = None,
    ) -> list[Result]:
        """Judge every job (results in input order); identical jobs are judged once."""
        prepared = [self._effective(j) for j in jobs]  # unknown languages fail before any work
        groups: dict[str, list[int]] = {}
        for i, (eff, rt) in enumerate(prepared):
            groups.setdefault(job_key(eff, rt), []).append(i)
        results: list[Result | None] = [None] * len(jobs)
        total = len(jobs)
        done = 0
        if progress is not None:
            progress(0, total)
        pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="judge")
        try:
            futures = {
                pool.submit(self._judge_resolved, prepared[idx[0]][0], prepared[idx[0]][1], ""): idx
                for idx in groups.values()
            }
            for fut in as_completed(futures):
                idx = futures[fut]
                res = fut.result()
                for n, i in enumerate(idx):
                    r = res if n == 0 else Result.from_dict(res.to_dict())
                    r.cached = res.cached
                    r.id = jobs[i].id
                    results[i] = r
                done += len(idx)
                if progress is not None:
                    progress(done, total)
        except BaseException:
            # Ctrl-C or a failing progress callback: drop queued jobs; running ones end soon
            # (their results are already cached as they finish)
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
        return [r for r in results if r is not None]


def _safe_info(runtime: Runtime) -> dict[str, object]:
    try:
        return runtime.info()
    except Exception:
        return {"name": runtime.name}
