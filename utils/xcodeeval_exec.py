"""Running xCodeEval candidate programs through the execution engine, as one batch.

Both the lm-eval tasks (in their judging filter) and `python -m utils.xcodeeval_score` come here,
so limits, comparator choice and verdict bookkeeping exist once. Every call is a single
`Engine.judge_many` over all programs of a task run: the engine parallelises, de-duplicates and
caches; the tasks never judge document by document.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from utils.settings import FALSE_WORDS, as_bool, as_int, lookup

log = logging.getLogger("xcodeeval")


@dataclass(frozen=True)
class Program:
    """One candidate program and the problem it must solve."""

    language: str  # any name the engine accepts (xCodeEval `lang` or cluster)
    source_code: str
    tests: Sequence[Mapping[str, Any]]  # [{"input": str, "output": [str, ...]}]
    time_limit_s: float  # the problem's own limit; the engine applies the runtime factor
    memory_limit_mb: int
    key: str = ""


# ExecEval's limits when a request names none (the xCodeEval scripts never do): its default
# `cpu` of 2 seconds, applied as a wall-clock timeout of cpu x the runtime's time-limit factor,
# and an RLIMIT_AS of 2 GiB. ExecEval ignores the problem's own time and memory limits.
EXECEVAL_TIME_LIMIT_S = 2.0
EXECEVAL_MEMORY_MB = 2048


@dataclass(frozen=True)
class ExecSettings:
    """How programs are judged.

    Default: our comparator, and the problem's own time and memory limits (the engine multiplies
    the time by the runtime's factor). `execeval_compat` reproduces what ExecEval applied to the
    paper's numbers: its output comparison (flaws included) and its limits, which ignore the
    problem: 2 s times the runtime's factor (ExecEval's factors are the engine's) and 2048 MB.
    Our engine still measures CPU time and enforces memory with a cgroup (see the README).
    Tests run until the first failure in both modes, as ExecEval does.
    """

    execeval_compat: bool = False
    workers: int | None = None
    cache: str | None = "default"  # "default": the engine's cache dir; None: no cache; else a dir
    exec_backend: str = "local"  # the engine backend programs run on (execution.backends)

    @property
    def comparator(self) -> str:
        return "execeval" if self.execeval_compat else "default"

    def limits(self, program: Program) -> tuple[float, int]:
        """(time limit before the runtime factor, memory limit in MB) of one program's job."""
        if self.execeval_compat:
            return EXECEVAL_TIME_LIMIT_S, EXECEVAL_MEMORY_MB
        return program.time_limit_s, program.memory_limit_mb

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> ExecSettings:
        return cls(**raw)

    def engine_cache(self) -> Path | None:
        if self.cache is None:
            return None
        if self.cache == "default":
            from execution.cache import default_cache_dir

            return default_cache_dir()
        return Path(self.cache)


def settings_from(kwargs: Mapping[str, Any]) -> ExecSettings:
    """`xcodeeval_execeval_compat`, `xcodeeval_workers`, `xcodeeval_exec_cache` (a directory,
    or `none` to judge everything afresh) and `exec_backend` (a registered engine backend,
    default `local`) from metadata or the environment."""
    compat = as_bool(
        lookup(kwargs, "xcodeeval_execeval_compat", env="XCODEEVAL_EXECEVAL_COMPAT", default=False),
        "xcodeeval_execeval_compat",
    )
    workers = lookup(kwargs, "xcodeeval_workers", env="XCODEEVAL_WORKERS")
    cache = lookup(kwargs, "xcodeeval_exec_cache", env="XCODEEVAL_EXEC_CACHE", default="default")
    if str(cache).strip().lower() in {"none", *FALSE_WORDS}:
        cache = None
    backend = str(lookup(kwargs, "exec_backend", env="CODE_EVAL_EXEC_BACKEND", default="local"))
    from execution.backends import get_backend

    get_backend(backend)  # an unknown name fails here, naming the registered ones
    return ExecSettings(
        compat,
        None
        if workers in (None, "")
        else as_int(workers, "xcodeeval_workers", env="XCODEEVAL_WORKERS", minimum=1),
        cache,
        backend,
    )


def _record(result: Any) -> dict[str, Any]:
    """The part of an engine Result worth keeping in logged samples."""
    failed = next((i for i, t in enumerate(result.tests) if str(t.verdict) != "PASSED"), None)
    detail = result.detail
    stderr = ""
    if failed is not None:
        t = result.tests[failed]
        detail = detail or t.detail or (f"signal {t.signal}" if t.signal else "")
        stderr = t.stderr
    if str(result.verdict) == "COMPILATION_ERROR" and result.compile is not None:
        detail = detail or result.compile.detail
        stderr = result.compile.stderr or result.compile.stdout
    return {
        "verdict": str(result.verdict),
        "failed_test": failed,
        "tests_run": len(result.tests),
        "detail": detail[:500],
        "stderr": stderr[-500:],
        "runtime": {k: result.runtime[k] for k in ("name", "version") if k in result.runtime},
    }


def judge_programs(
    programs: Sequence[Program],
    settings: ExecSettings,
    label: str = "xcodeeval",
    progress: Callable[..., Any] | None = None,
) -> list[dict[str, Any]]:
    """Verdict records ({verdict, failed_test, tests_run, detail, stderr, runtime}), input order."""
    if not programs:
        return []
    from execution import Engine
    from execution.types import Job, TestCase

    test_cache: dict[int, tuple[TestCase, ...]] = {}

    def cases(tests: Sequence[Mapping[str, Any]]) -> tuple[TestCase, ...]:
        key = id(tests)  # the same problem's tests are shared by all its samples
        if key not in test_cache:
            test_cache[key] = tuple(TestCase.from_dict(dict(t)) for t in tests)
        return test_cache[key]

    jobs = []
    for i, p in enumerate(programs):
        time_limit_s, memory_limit_mb = settings.limits(p)
        jobs.append(
            Job(
                language=p.language,
                source_code=p.source_code,
                tests=cases(p.tests),
                time_limit_s=time_limit_s,
                memory_limit_mb=memory_limit_mb,
                stop_on_first_fail=True,
                comparator=settings.comparator,
                id=p.key or str(i),
            )
        )
    engine = Engine(
        workers=settings.workers,
        cache=settings.engine_cache(),
        comparator=settings.comparator,
        backend=settings.exec_backend,
    )
    bar = None
    if progress is None:
        from execution.progress import Progress

        bar = Progress(len(jobs), desc=f"judging {label}")
        progress = lambda done, total: bar.update(done)  # noqa: E731
    try:
        results = engine.judge_many(jobs, progress=progress)
    finally:
        if bar is not None:
            bar.close()
    if len(results) != len(jobs):
        raise RuntimeError(f"engine returned {len(results)} results for {len(jobs)} jobs")
    records = [
        {**_record(r), "limits": {"time_s": j.time_limit_s, "memory_mb": j.memory_limit_mb}}
        for r, j in zip(results, jobs, strict=True)
    ]
    counts = Counter(r["verdict"] for r in records)
    summary = ", ".join(f"{v} {n}" for v, n in counts.most_common())
    log.info(
        "%s: judged %d programs (%s comparator, %s): %s",
        label,
        len(records),
        settings.comparator,
        (
            f"ExecEval limits {EXECEVAL_TIME_LIMIT_S:g} s x runtime factor, {EXECEVAL_MEMORY_MB} MB"
            if settings.execeval_compat
            else "problem limits x runtime factor"
        ),
        summary,
    )
    if counts.get("INFRA_ERROR"):
        examples = sorted({r["detail"] for r in records if r["verdict"] == "INFRA_ERROR"})[:3]
        log.error(
            "%s: %d of %d programs hit an ENGINE failure (INFRA_ERROR), not counted as model "
            "failures; affected problems report NaN when fewer than k samples remain. Causes: %s",
            label,
            counts["INFRA_ERROR"],
            len(records),
            "; ".join(examples) or "unknown",
        )
    return records
