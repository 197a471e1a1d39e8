"""Execution grading of generated middles: settings, early checks and the batched grading call.

Settings (declared in `settings.GRADING_SETTINGS`) come from lm-eval's `--metadata` (or the
environment) once, when the task's dataset is built; they are stored frozen with every document
(`grading`, a JSON string) so the filter that grades a task's whole batch needs nothing but its
documents, and every logged sample records how it was graded.
"""

from __future__ import annotations

import json
import logging
import shlex
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from code_eval_taskpack.execution.repo_tests import RepoTestJob, RepoTestOutcome
from code_eval_taskpack.execution.repo_tests.outcome_cache import OutcomeCache
from code_eval_taskpack.utils.settings import Frozen, lookup, parse_settings, regroup
from lm_eval_tasks.code_infilling.settings import GRADER_KEY, GRADING_SETTINGS
from lm_eval_tasks.code_infilling.stitch import model_patch, stitched_file
from lm_eval_tasks.xcodeeval.settings import EXEC_BACKEND

if TYPE_CHECKING:
    from code_eval_taskpack.execution.repo_tests.local import LocalConfig
    from code_eval_taskpack.execution.repo_tests.swebench_backend import SwebenchConfig

log = logging.getLogger(__name__)


class GradingUnavailable(RuntimeError):
    """Execution grading cannot run here; raised before any generation is done."""


@dataclass(frozen=True)
class GradingSettings(Frozen):
    grader: str = "swebench"
    # local backend
    repos_dir: str = ""
    test_cmd: str = "python -m pytest -rA"
    log_parser: str = "pytest"
    workers: int = 2
    test_cpu_s: float = 900.0
    test_wall_s: float = 1800.0
    test_memory_mb: int = 4096
    # swebench backend
    swebench_namespace: str = "swebench"
    swebench_allow_pull: bool = False
    swebench_timeout_s: int = 1800
    swebench_work_dir: str = ""
    model_name: str = "code-infilling"
    # both: the outcome cache ("none": no cache, "default": <cache root>/repo_tests, else a dir)
    cache: str = "none"

    @classmethod
    def from_kwargs(cls, kwargs: Mapping[str, Any]) -> GradingSettings:
        """Read the declared `sg_infilling_*` keys (plus the short `grader`, `repos_dir`,
        `test_cmd`); each field is its key without the `sg_infilling_` prefix. xCodeEval's
        `exec_backend` is never read (see `note_other_backend`)."""
        values = parse_settings(GRADING_SETTINGS, kwargs)
        settings = cls(**{key.removeprefix("sg_infilling_"): v for key, v in values.items()})
        note_other_backend(kwargs, settings)
        return settings

    def to_json(self) -> str:
        return self.freeze()

    @classmethod
    def from_json(cls, text: str) -> GradingSettings:
        return cls.thaw(text)


_noted_backends: set[str] = set()


def note_other_backend(kwargs: Mapping[str, Any], settings: GradingSettings) -> None:
    """Warn once per value when the run sets xCodeEval's engine backend (`exec_backend`).

    lm-eval hands every task of a run the same metadata, so a run of both benchmarks gives the
    infilling tasks `exec_backend` too. It is not theirs: they run repository tests with their
    own grader (`sg_infilling_grader`), so the value is left alone here, never applied, and the
    warning names the setting that is."""
    backend = lookup(kwargs, EXEC_BACKEND.key)
    if backend in (None, "", "local") or str(backend) in _noted_backends:
        return
    _noted_backends.add(str(backend))
    log.warning(
        "%s=%r is xCodeEval's engine backend and does not apply to the infilling tasks: they "
        "grade with %s (now %r; swebench or local)",
        EXEC_BACKEND.key,
        backend,
        GRADER_KEY,
        settings.grader,
    )


def job_for(doc: Mapping[str, Any], middle: str) -> RepoTestJob:
    """The grading job of one document with `middle` stitched in."""
    return RepoTestJob(
        id=str(doc["row_id"]),
        repo=str(doc["repo"]),
        base_commit=str(doc["base_commit"]),
        patch=model_patch(doc, middle),
        test_patch=str(doc["test_patch"]),
        fail_to_pass=tuple(json.loads(doc["FAIL_TO_PASS"])),
        pass_to_pass=tuple(json.loads(doc["PASS_TO_PASS"])),
        expected_files=((str(doc["file_path"]), stitched_file(doc, middle)),),
        extra={
            "instance_id": str(doc["instance_id"]),
            "version": str(doc.get("version") or ""),
            "environment_setup_commit": str(doc.get("environment_setup_commit") or ""),
            "gold_patch": str(doc["patch"]),
            "problem_statement": str(doc.get("problem_statement") or ""),
            "hints_text": str(doc.get("hints_text") or ""),
            "created_at": str(doc.get("created_at") or ""),
        },
    )


class Grader(Protocol):
    """A repository grader: checks up front whether it can run, then grades a batch of jobs.
    Each one builds its own typed configuration from the shared `GradingSettings`."""

    name: str

    def preflight(self, jobs: Sequence[RepoTestJob], settings: GradingSettings) -> list[str]:
        """Every reason grading could not succeed here (empty when it can)."""
        ...

    def grade_many(
        self, jobs: Sequence[RepoTestJob], settings: GradingSettings
    ) -> list[RepoTestOutcome]:
        """One outcome per job, in order."""
        ...

    def identity(self, settings: GradingSettings) -> dict[str, Any]:
        """Everything of this grader that decides an outcome besides the job (the cache key)."""
        ...


class LocalGrader:
    """Runs each repository's test command in the engine's sandbox on this host."""

    name = "local"

    def config(self, settings: GradingSettings) -> LocalConfig:
        from code_eval_taskpack.execution.repo_tests.in_sandbox import TEST_LIMITS
        from code_eval_taskpack.execution.repo_tests.local import LocalConfig

        limits = TEST_LIMITS.scaled(
            cpu_s=settings.test_cpu_s,
            wall_s=settings.test_wall_s,
            memory_mb=settings.test_memory_mb,
        )
        return LocalConfig(
            repos_dir=Path(settings.repos_dir).expanduser().absolute(),
            test_cmd=tuple(shlex.split(settings.test_cmd)),
            log_parser=settings.log_parser,
            limits=limits,
            workers=settings.workers,
        )

    def preflight(self, jobs: Sequence[RepoTestJob], settings: GradingSettings) -> list[str]:
        from code_eval_taskpack.execution.repo_tests import local

        if not settings.repos_dir:
            return [
                'the local grader needs "repos_dir" (a folder of <owner>__<name> git checkouts)'
            ]
        return local.preflight(jobs, self.config(settings))

    def grade_many(
        self, jobs: Sequence[RepoTestJob], settings: GradingSettings
    ) -> list[RepoTestOutcome]:
        from code_eval_taskpack.execution.repo_tests import local

        return local.grade_many(jobs, self.config(settings))

    def identity(self, settings: GradingSettings) -> dict[str, Any]:
        config = self.config(settings)
        return {
            "grader": self.name,
            "test_cmd": list(config.test_cmd),
            "executable": _executable(config.test_cmd[0]) if config.test_cmd else "",
            "log_parser": config.log_parser,
            "limits": repr(config.limits),
        }


class SwebenchGrader:
    """Delegates to the SWE-bench harness (its Docker images)."""

    name = "swebench"

    def config(self, settings: GradingSettings) -> SwebenchConfig:
        from code_eval_taskpack.execution.repo_tests.swebench_backend import SwebenchConfig

        namespace = settings.swebench_namespace
        return SwebenchConfig(
            work_dir=Path(settings.swebench_work_dir).expanduser()
            if settings.swebench_work_dir
            else None,
            model_name=settings.model_name,
            namespace=None if namespace.lower() in {"", "none"} else namespace,
            max_workers=settings.workers,
            timeout_s=settings.swebench_timeout_s,
            allow_pull=settings.swebench_allow_pull,
        )

    def preflight(self, jobs: Sequence[RepoTestJob], settings: GradingSettings) -> list[str]:
        from code_eval_taskpack.execution.repo_tests import swebench_backend

        return swebench_backend.preflight(jobs, self.config(settings))

    def grade_many(
        self, jobs: Sequence[RepoTestJob], settings: GradingSettings
    ) -> list[RepoTestOutcome]:
        from code_eval_taskpack.execution.repo_tests import swebench_backend

        return swebench_backend.grade_many(jobs, self.config(settings))

    def identity(self, settings: GradingSettings) -> dict[str, Any]:
        from code_eval_taskpack.execution.repo_tests import swebench_backend

        config = self.config(settings)
        return {
            "grader": self.name,
            "harness": swebench_backend.PINNED_VERSION,
            "namespace": config.namespace,
            "timeout_s": config.timeout_s,
        }


def _executable(name: str) -> str:
    """The program a test command runs, resolved, with its size and time (an upgrade of the
    interpreter is another grader)."""
    found = shutil.which(name)
    if found is None:
        return name
    real = Path(found).resolve()
    stat = real.stat()
    return f"{real}:{stat.st_size}:{stat.st_mtime_ns}"


def outcome_cache(settings: GradingSettings) -> OutcomeCache | None:
    """The cache `settings.cache` names, or None when caching is off."""
    from code_eval_taskpack.execution.caches.files import cache_root

    where = settings.cache.strip()
    if where.lower() in {"", "none", "off"}:
        return None
    return OutcomeCache(cache_root() / "repo_tests" if where == "default" else where)


#: graders by the name `sg_infilling_grader` takes; a new grader is one more entry
GRADER_REGISTRY: dict[str, Grader] = {"swebench": SwebenchGrader(), "local": LocalGrader()}


def grader_for(settings: GradingSettings) -> Grader:
    """The registered grader `settings.grader` names (ValueError naming the known ones)."""
    grader = GRADER_REGISTRY.get(settings.grader)
    if grader is None:
        raise ValueError(f"unknown grader {settings.grader!r}; use one of {tuple(GRADER_REGISTRY)}")
    return grader


def preflight(rows: Sequence[Mapping[str, Any]], settings: GradingSettings) -> None:
    """Raise GradingUnavailable, listing every problem, when grading could not succeed."""
    jobs = [job_for(row, str(row["middle"])) for row in rows]
    problems = grader_for(settings).preflight(jobs, settings)
    if problems:
        shown = "\n  - ".join(problems[:20])
        more = f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else ""
        raise GradingUnavailable(
            f"execution grading ({settings.grader}) cannot run, so no generation was started:\n"
            f"  - {shown}{more}\n"
            "Use the sg_infilling_<format> tasks for the cheap metrics only, or "
            '--metadata \'{"grader": "local", "repos_dir": DIR, "test_cmd": "python -m pytest -rA"}\'.'
        )


def grade(docs: Sequence[Mapping[str, Any]], middles: Sequence[str]) -> list[dict[str, Any]]:
    """Grade every (document, middle) pair in one batch per settings; outcome dicts in order."""
    records: list[dict[str, Any]] = [{} for _ in docs]
    for settings, members in regroup(docs, "grading", GradingSettings.thaw):
        jobs = [job_for(docs[i], middles[i]) for i in members]
        graded = _grade_cached(jobs, settings)
        for i, outcome, job in zip(members, graded, jobs, strict=True):
            if outcome.error:
                log.warning("grading error for %s: %s", outcome.id, outcome.error)
            records[i] = {**outcome.to_dict(), "middle": middles[i], "model_patch": job.patch}
    return records


def _grade_cached(jobs: Sequence[RepoTestJob], settings: GradingSettings) -> list[RepoTestOutcome]:
    """Outcomes of `jobs` in order: cached ones read back, the others graded (and stored
    unless they are grading errors)."""
    grader = grader_for(settings)
    cache = outcome_cache(settings)
    identity = grader.identity(settings) if cache is not None else {}
    found: list[RepoTestOutcome | None] = [
        cache.get(job, identity) if cache is not None else None for job in jobs
    ]
    todo = [i for i, outcome in enumerate(found) if outcome is None]
    log.info(
        "grading %d infilling rows with the %s grader (%d graded, %d from the result cache)",
        len(jobs),
        settings.grader,
        len(todo),
        len(jobs) - len(todo),
    )
    if todo:
        graded = grader.grade_many([jobs[i] for i in todo], settings)
        for i, outcome in zip(todo, graded, strict=True):
            found[i] = outcome
            if cache is not None:
                cache.put(jobs[i], identity, outcome)
    return [outcome for outcome in found if outcome is not None]
