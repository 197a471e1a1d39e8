"""The judging engine: a worker pool over sandboxed runs, with a result cache.

`Engine.judge(job)` judges one program; `Engine.judge_many(jobs)` judges a batch in input order on
a pool sized to the CPUs (one program per CPU: more would let programs steal each other's CPU and
turn CPU-time limits into a load test). Identical jobs are judged once. With a cache, each result
is looked up before judging and stored the moment its job finishes, so an interrupted batch loses
nothing. Engine failures come back as INFRA_ERROR results (never cached, never raised as the
program's fault); only caller errors such as an unknown language or a job outside the fixed
bounds of `execution.inputs` (`InvalidJob`, a ValueError) raise, before anything runs.
"""

from __future__ import annotations

import dataclasses
import threading
import traceback
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from ..backends import Backend, get_backend
from ..backends.base import oversized_source, verdict_under_policy
from ..caches.compiles import CompileCache
from ..caches.results import ResultCache, job_key
from ..config import EngineConfig, or_env
from ..execeval.compat import execeval_line_ends
from ..inputs import DEFAULT_INPUT_LIMITS, InputLimits, validate_job
from ..isolation import check_policy
from ..languages.registry import Runtime
from ..limits import cpu_count
from ..run.compare import MODES
from ..types import Job, Result, Verdict


class Engine:
    """Judge programs. `comparator` applies to jobs that keep the default comparator.

    `isolation` is the policy: "required" (default) judges a program only in a session with
    every layer its backend promises (`Backend.required_layers`), else its result is an
    INFRA_ERROR naming the missing layers; "best-effort" runs with what the host offers (results
    list what is missing). `backend` is where programs run: a registered name
    (`execution.backends`, default "local") or a `Backend` instance. `config` holds the engine
    switches (`execution.config`), handed to the backend with every program (a session backend's
    build plans obey them, a job backend sends their speed-ups on); None follows the environment
    as it is when a program is judged (`classic_build` is the registry's, chosen when it is
    loaded).
    """

    def __init__(
        self,
        workers: int | None = None,
        cache: ResultCache | str | Path | None = None,
        comparator: str = "default",
        isolation: str = "required",
        input_limits: InputLimits = DEFAULT_INPUT_LIMITS,
        backend: str | Backend | None = None,
        config: EngineConfig | None = None,
    ) -> None:
        if comparator not in MODES:
            raise ValueError(f"unknown comparator {comparator!r}; use one of {MODES}")
        self.isolation = check_policy(isolation)
        # the switches (config.py); None follows the environment as it is when a program is
        # judged, checked here so that a bad value is an error now rather than per program
        self.config = config
        if config is None:
            EngineConfig.from_env()
        self.backend = get_backend(backend)  # unknown names raise ValueError
        self.workers = (
            max(1, int(workers)) if workers else (self.backend.parallelism() or cpu_count())
        )
        if cache is None or isinstance(cache, ResultCache):
            self.cache = cache
        else:
            self.cache = ResultCache(Path(cache))
        self.comparator = comparator
        self.input_limits = input_limits
        # compiled programs are reused across jobs (same runtime and source, other tests)
        self.compiled = CompileCache(self.cache.root / "compiled" if self.cache else None)
        self.judged = 0  # programs actually run (not served from the cache), for reporting
        self._lock = threading.Lock()
        # one program per worker at a time, however many threads call judge() / judge_many()
        self._slots = threading.BoundedSemaphore(self.workers)

    def isolation_refusal(self) -> str:
        """Why this engine's policy cannot judge anything on this host ("" when it can)."""
        return self.backend.host_refusal(self.isolation)

    def key(self, job: Job, runtime: Runtime) -> str:
        """Cache key of an effective `job` judged by `runtime` on this engine's backend (the
        local backend's keys are those of caches made before backends existed)."""
        return job_key(job, self.backend.runtime_fingerprint(runtime), self.isolation)

    def _cached(self, key: str, job: Job) -> Result | None:
        """The cached result under `key` when its isolation snapshot meets this engine's policy
        for the layers its backend promises (the one check `verdict_under_policy` makes for
        every backend), else None: judged again, and the weaker entry replaced."""
        if self.cache is None:
            return None

        def meets_policy(hit: Result) -> bool:
            checked = verdict_under_policy(
                hit, job, self.isolation, self.backend.required_layers, self.input_limits, "cache"
            )
            return checked is hit and hit.verdict is not Verdict.INFRA_ERROR

        return self.cache.get_key(key, meets_policy)

    # -- single job -------------------------------------------------------------------------

    def _effective(self, job: Job) -> tuple[Job, Runtime]:
        if job.comparator not in MODES:
            raise ValueError(f"job {job.id!r}: unknown comparator {job.comparator!r}")
        runtime = self.backend.resolve(job.language)  # raises UnknownLanguageError
        validate_job(job, self.input_limits)  # raises InvalidJob (a ValueError)
        if job.comparator == "default" and self.comparator != "default":
            job = dataclasses.replace(job, comparator=self.comparator)
        if job.comparator == "execeval":  # ExecEval's comparison comes with its line ends
            job = execeval_line_ends(job)
        return job, runtime

    def switches(self, config: EngineConfig | None = None) -> EngineConfig:
        """The switches a program is judged with now: `config` if given, else this engine's,
        else the environment's as it is at this call."""
        if config is not None:
            return config
        return or_env(self.config)

    def judge(self, job: Job, config: EngineConfig | None = None) -> Result:
        """Judge one program (cache first); `config`, when given, holds the switches this one
        program is judged with instead of the engine's (a judge server's driver sends them)."""
        eff, runtime = self._effective(job)
        key = self.key(eff, runtime) if self.cache is not None else ""
        return self._judge_resolved(eff, runtime, key, job.id, config)

    def judge_as(self, job: Job, runtime: Runtime) -> Result:
        """Judge one program with an explicit runtime instead of the registry's entry for its
        language (e.g. ExecEval's compile and run commands over a registry runtime; the
        runtime's fingerprint covers its commands, so cache keys stay distinct)."""
        eff, _ = self._effective(job)
        key = self.key(eff, runtime) if self.cache is not None else ""
        return self._judge_resolved(eff, runtime, key, job.id)

    def _judge_resolved(
        self,
        job: Job,
        runtime: Runtime,
        key: str,
        job_id: str,
        config: EngineConfig | None = None,
    ) -> Result:
        """Judge a resolved job whose cache key is `key` (computed once by the caller)."""
        hit = self._cached(key, job)
        if hit is not None:
            hit.id = job_id
            return hit
        result = self._run(job, runtime, config)
        result.id = job_id
        if self.cache is not None:
            self.cache.put_key(key, result)
        return result

    def _run(self, job: Job, runtime: Runtime, config: EngineConfig | None = None) -> Result:
        with self._slots:
            with self._lock:
                self.judged += 1
            try:
                if not runtime.available:
                    return _unavailable(runtime)
                oversized = oversized_source(job, runtime, self.input_limits)
                if oversized is not None:  # whichever backend judges, and whatever its limits
                    return oversized
                return self.backend.judge(
                    job,
                    runtime,
                    compiled=self.compiled,
                    policy=self.isolation,
                    input_limits=self.input_limits,
                    config=self.switches(config),
                )
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
        keys: Sequence[str] | None = None,
    ) -> list[Result]:
        """Judge every job (results in input order); identical jobs are judged once.

        `keys`, when given, are the jobs' cache keys (`Engine.key` of each job as this engine
        judges it), so a caller that already computed them does not hash every job again."""
        prepared = [self._effective(j) for j in jobs]  # unknown languages fail before any work
        if keys is None:
            keys = [self.key(eff, rt) for eff, rt in prepared]
        elif len(keys) != len(jobs):
            raise ValueError(f"{len(keys)} keys for {len(jobs)} jobs")
        groups: dict[str, list[int]] = {}
        for i, key in enumerate(keys):
            groups.setdefault(key, []).append(i)
        results: list[Result | None] = [None] * len(jobs)
        total = len(jobs)
        done = 0
        if progress is not None:
            progress(0, total)

        def deliver(idx: list[int], res: Result) -> None:
            nonlocal done
            for n, i in enumerate(idx):
                r = res if n == 0 else Result.from_dict(res.to_dict())
                r.id = jobs[i].id
                results[i] = r
            done += len(idx)
            if progress is not None:
                progress(done, total)

        switches = self.switches()
        self.backend.expect([prepared[idx[0]] for idx in groups.values()], switches)
        if self.backend.supports_batches:
            self._judge_batch(prepared, groups, deliver, switches)
            return [r for r in results if r is not None]
        pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="judge")
        try:
            futures = {
                pool.submit(self._judge_resolved, *prepared[idx[0]], key, "", switches): idx
                for key, idx in groups.items()
            }
            for fut in as_completed(futures):
                deliver(futures[fut], fut.result())
        except BaseException:
            # Ctrl-C or a failing progress callback: drop queued jobs; running ones end soon
            # (their results are already cached as they finish)
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
        return [r for r in results if r is not None]

    def _judge_batch(
        self,
        prepared: Sequence[tuple[Job, Runtime]],
        groups: Mapping[str, list[int]],
        deliver: Callable[[list[int], Result], None],
        switches: EngineConfig,
    ) -> None:
        """Batches on a backend that judges them whole (e.g. a cluster): cache hits and
        unavailable runtimes are answered here, the rest go to `Backend.judge_batch` in one
        call; each result is cached the moment it arrives (a killed run resumes) and only the
        first answer of a job counts, whatever the backend retries."""
        todo: list[tuple[str, list[int]]] = []
        for key, idx in groups.items():
            runtime = prepared[idx[0]][1]
            hit = self._cached(key, prepared[idx[0]][0])
            if hit is not None:
                deliver(idx, hit)
            elif not runtime.available:
                deliver(idx, _unavailable(runtime))
            else:
                todo.append((key, idx))
        if not todo:
            return
        with self._lock:
            self.judged += len(todo)
        answered = [False] * len(todo)
        lock = threading.Lock()

        def on_result(n: int, result: Result) -> None:
            with lock:
                if not 0 <= n < len(todo) or answered[n]:
                    return  # a retried task answering again: the first answer stands
                answered[n] = True
                key, idx = todo[n]
                if self.cache is not None:
                    self.cache.put_key(key, result)
                deliver(idx, result)

        items = [prepared[idx[0]] for _, idx in todo]
        try:
            self.backend.judge_batch(
                items,
                on_result,
                policy=self.isolation,
                input_limits=self.input_limits,
                config=switches,
            )
        except Exception as exc:  # the backend failed as a whole: what is unanswered is ours
            failure = f"engine error: {exc!r}\n{traceback.format_exc(limit=5)}"
        else:
            failure = "the backend returned no result for this job"
        for n, (_, idx) in enumerate(todo):
            if not answered[n]:
                _job, runtime = prepared[idx[0]]
                on_result(
                    n,
                    Result(
                        verdict=Verdict.INFRA_ERROR, runtime=_safe_info(runtime), detail=failure
                    ),
                )


def _unavailable(runtime: Runtime) -> Result:
    return Result(
        verdict=Verdict.INFRA_ERROR,
        runtime=runtime.info(),
        detail=f"runtime {runtime.name} unavailable: {runtime.reason}",
    )


def isolation_refusal(
    policy: str, backend: str | Backend | None = None, options: Mapping[str, str] | None = None
) -> str:
    """Why `policy` cannot judge anything on `backend` ("" when it can), from its once-per-process
    probe; for front ends (CLI, server) that should refuse before taking any work."""
    check_policy(policy)
    return get_backend(backend, options).host_refusal(policy)


def _safe_info(runtime: Runtime) -> dict[str, object]:
    try:
        return runtime.info()
    except Exception:
        return {"name": runtime.name}
