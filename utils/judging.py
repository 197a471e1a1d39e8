"""Judging a batch of candidate programs with the execution engine, for any benchmark.

A benchmark turns its candidates into `Program`s (the engine's own `Job`: language, source,
tests, limits, comparator) and calls `judge_programs` once per task run: the engine
parallelises, de-duplicates and caches; no benchmark judges document by document. What comes
back is one small record per program, the part of the engine's result worth keeping in logged
samples, with the batch's verdict counts logged and engine failures (INFRA_ERROR) shouted.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from code_eval_taskpack.execution.types import Job, TestCase

_log = logging.getLogger("judging")

# A candidate program to judge IS the engine's job (one type, not a copy of its fields).
Program = Job


class CaseBuilder:
    """Engine test cases of a benchmark's test dicts ({"input", "output": [...]}), built once per
    list: all samples of a problem share one tests list, hence one tuple of cases."""

    def __init__(self) -> None:
        self._by_list: dict[int, tuple[Sequence[Mapping[str, Any]], tuple[TestCase, ...]]] = {}

    def __call__(self, tests: Sequence[Mapping[str, Any]]) -> tuple[TestCase, ...]:
        hit = self._by_list.get(id(tests))
        if hit is None or hit[0] is not tests:  # the list is kept alive, so ids stay unique
            hit = (tests, tuple(TestCase.from_dict(dict(t)) for t in tests))
            self._by_list[id(tests)] = hit
        return hit[1]


#: what a record keeps of the runtime that judged it, as the judging registry reported it (a
#: remote server's or Ray node's may differ from this machine's): reports read them from here
RUNTIME_FIELDS = ("name", "version", "time_factor", "as_headroom_mb")


def result_record(result: Any) -> dict[str, Any]:
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
        "runtime": {k: result.runtime[k] for k in RUNTIME_FIELDS if k in result.runtime},
        "judged_by": judged_by(result.isolation),
    }


#: where a backend records who judged a program (`isolation` keys; see execution/backends)
_JUDGE_PLACES = (
    "judged_by",
    "node",
    "container",
    "execeval_server",
    "failed_servers",
    "servers_out_of_rotation",
)


def judged_by(isolation: dict[str, Any]) -> dict[str, Any]:
    """The backend that judged a program and, beyond one process, the server, node or image
    (and the judge servers that failed or were out of rotation meanwhile): kept in every
    logged sample so a score says where its verdicts came from."""
    out: dict[str, Any] = {"backend": isolation.get("backend", "local")}
    out.update({k: isolation[k] for k in _JUDGE_PLACES if k in isolation})
    return out


def cache_dir(setting: str | None) -> Path | None:
    """A benchmark's verdict-cache setting as a directory: "default" is the engine's result cache,
    None judges everything afresh, anything else is a directory."""
    if setting is None:
        return None
    if setting == "default":
        from code_eval_taskpack.execution.caches.files import default_cache_dir

        return default_cache_dir()
    from code_eval_taskpack.execution.caches.files import absolute

    return absolute(setting)  # sandboxes and compilers get its paths: never cwd-relative


def judge_programs(
    programs: Sequence[Program],
    *,
    workers: int | None,
    cache: Path | None,
    comparator: str,
    label: str,
    backend: str = "local",
    backend_options: Mapping[str, str] | None = None,
    isolation: str = "required",
    limits_note: str = "",
    progress: Callable[..., Any] | None = None,
    logger: logging.Logger | None = None,
) -> list[dict[str, Any]]:
    """Verdict records ({verdict, failed_test, tests_run, detail, stderr, runtime, limits}) of
    `programs`, in input order, from one engine batch. `limits_note` says in the log which
    limits the benchmark applied; `isolation` is the engine's policy; `logger` is the benchmark's
    own (this module's by default)."""
    log = logger or _log
    if not programs:
        return []
    from code_eval_taskpack.execution import Engine
    from code_eval_taskpack.execution.backends import get_backend

    jobs = list(programs)
    engine = Engine(
        workers=workers,
        cache=cache,
        comparator=comparator,
        isolation=isolation,
        backend=get_backend(backend, backend_options),
    )
    bar = None
    if progress is None:
        from code_eval_taskpack.execution.judge.progress import Progress

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
        {**result_record(r), "limits": {"time_s": j.time_limit_s, "memory_mb": j.memory_limit_mb}}
        for r, j in zip(results, jobs, strict=True)
    ]
    counts = Counter(r["verdict"] for r in records)
    summary = ", ".join(f"{v} {n}" for v, n in counts.most_common())
    served = sum(bool(r.cached) for r in results)
    log.info(
        "%s: judged %d programs (%d executed, %d from the verdict cache; %s comparator%s): %s",
        label,
        len(records),
        len(records) - served,
        served,
        comparator,
        f", {limits_note}" if limits_note else "",
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
