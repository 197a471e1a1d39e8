"""`code-exec batch`: judge a JSONL file of jobs, resumably.

The input is read twice: a first pass validates every line (so a typo on line 9,000 stops the
batch before an hour of judging) and counts identical jobs; the second pass judges in chunks and
appends results to `OUTPUT.partial`, renamed to OUTPUT once every line is written, so the output
file is complete and in input order or absent. Resuming relies on the result cache: the engine
stores each result the moment its job finishes, so a batch killed midway and started again
re-judges only the jobs that had not finished. Identical jobs (same cache key) are judged once
per batch, even without a cache.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..backends import Backend
from ..caches.results import ResultCache
from ..types import CompileResult, Job, Result, Verdict
from .engine import Engine
from .jobfile import read_jobs
from .progress import Progress


@dataclass
class BatchStats:
    """What a batch run did: `judged` programs were run, `cached` came from the cache,
    `duplicates` reused the result of an identical job of the same batch."""

    total: int = 0
    unique: int = 0
    judged: int = 0
    cached: int = 0
    duplicates: int = 0
    infra_errors: int = 0

    def to_dict(self) -> dict[str, int]:
        return dataclasses.asdict(self)


def output_record(result: Result) -> dict[str, Any]:
    """One output record: `id` first, then the result fields (`compile` is always an object)."""
    record = result.to_dict()
    if record.get("compile") is None:
        record["compile"] = CompileResult(ok=True, detail="no compilation step").to_dict()
    return {"id": record.pop("id"), **record}


def run_batch(
    input_path: str | Path,
    output_path: str | Path,
    *,
    workers: int | None = None,
    cache: ResultCache | None = None,
    comparator: str = "default",
    show_progress: bool = True,
    chunk_size: int = 256,
    isolation: str = "required",
    backend: str | Backend | None = None,
) -> BatchStats:
    """Judge every line of `input_path` into `output_path`; raises DataError on a bad line.
    `isolation` is the policy and `backend` where programs run (see `Engine`)."""
    engine = Engine(workers=workers, cache=cache, isolation=isolation, backend=backend)
    keys: list[str] = []
    for _, job in read_jobs(input_path, comparator):  # pass 1: validate everything first
        keys.append(engine.key(job, engine.backend.resolve(job.language)))
    uses = Counter(keys)
    stats = BatchStats(total=len(keys), unique=len(uses), duplicates=len(keys) - len(uses))

    output_path = Path(output_path)
    partial = output_path.with_name(output_path.name + ".partial")
    progress = Progress(stats.unique, desc="judging", enabled=show_progress)
    memo: dict[str, Result] = {}  # results still needed by a later identical job
    finished = 0

    def write_chunk(fh: Any, chunk: list[tuple[str, Job]]) -> None:
        nonlocal finished
        fresh: dict[str, Job] = {}
        for key, job in chunk:
            if key not in memo and key not in fresh:
                fresh[key] = job
        base = finished

        def on_progress(done: int, _total: int) -> None:
            progress.update(base + done)

        results = engine.judge_many(list(fresh.values()), progress=on_progress, keys=list(fresh))
        finished += len(fresh)
        for key, result in zip(fresh, results, strict=True):
            memo[key] = result
            if result.verdict is Verdict.INFRA_ERROR:
                stats.infra_errors += 1
            elif result.cached:
                stats.cached += 1
        for key, job in chunk:
            result = dataclasses.replace(memo[key], id=job.id)
            fh.write(json.dumps(output_record(result)) + "\n")  # ASCII: lone surrogates stay valid
            uses[key] -= 1
            if uses[key] == 0:
                del memo[key]

    judged_before = engine.judged
    with open(partial, "w", encoding="utf-8") as fh:
        chunk: list[tuple[str, Job]] = []
        for index, (_, job) in enumerate(read_jobs(input_path, comparator)):  # pass 2
            chunk.append((keys[index], job))
            if len(chunk) >= chunk_size:
                write_chunk(fh, chunk)
                fh.flush()
                chunk = []
        if chunk:
            write_chunk(fh, chunk)
    progress.close()
    os.replace(partial, output_path)
    stats.judged = engine.judged - judged_before
    return stats
