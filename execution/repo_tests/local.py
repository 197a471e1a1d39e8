"""Local repository-test grading: the user's own checkout and environment, the engine's sandbox.

Per job: a scratch clone of `<repos_dir>/<owner>__<name>` at `base_commit`, the candidate patch
applied (and checked against `expected_files`), the task's test patch applied, the test command
run on the test files named by the wanted test ids inside the sandbox with the grader's pytest
plugin, the plugin's signed report verified (`signed_report`: the printed log, which the code
under test can forge, decides nothing), and the FAIL_TO_PASS/PASS_TO_PASS rule applied
(`model.decide`). Jobs run in parallel threads; each one spends its time in git and in the
sandboxed test process.
"""

from __future__ import annotations

import shlex
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from ..isolation import SandboxError
from ..limits import Limits
from ..sandbox.outcome import CommandOutcome
from .in_sandbox import TEST_LIMITS, run_tests
from .log_parsers import get_parser
from .model import (
    LOG_TAIL,
    RepoTestJob,
    RepoTestOutcome,
    checkout_dir,
    decide,
)
from .patching import apply_patch, has_commit, scratch_copy, touched_files
from .signed_report import ReportChannel, verify

DEFAULT_TEST_CMD = "python -m pytest -rA"


@dataclass(frozen=True)
class LocalConfig:
    repos_dir: Path
    test_cmd: tuple[str, ...] = tuple(shlex.split(DEFAULT_TEST_CMD))
    log_parser: str = "pytest"  # the only runner: statuses come from its signed report
    limits: Limits = TEST_LIMITS
    workers: int = 2
    extra_readonly: tuple[Path, ...] = field(default_factory=tuple)


def target_files(job: RepoTestJob) -> list[str]:
    """Test files to pass to the runner: the file part of `file::test` ids; when some id has no
    file part (e.g. a bare test name), also the files the test patch touches."""
    files: list[str] = []
    bare = False
    for test_id in (*job.fail_to_pass, *job.pass_to_pass):
        head, sep, _ = test_id.partition("::")
        if sep and head:
            if head not in files:
                files.append(head)
        else:
            bare = True
    if bare or not files:
        files.extend(f for f in touched_files(job.test_patch) if f not in files)
    return files


def preflight(jobs: Iterable[RepoTestJob], config: LocalConfig) -> list[str]:
    """Problems that would make grading impossible, found before any work is done."""
    problems: list[str] = []
    if not Path(config.repos_dir).is_dir():
        return [f"repos_dir {config.repos_dir} is not a directory"]
    if not config.test_cmd or shutil.which(config.test_cmd[0]) is None:
        problems.append(f"test command {shlex.join(config.test_cmd)!r}: executable not found")
    try:
        get_parser(config.log_parser)
    except ValueError as exc:
        problems.append(str(exc))
    has_checkout: dict[str, bool] = {}
    seen: set[tuple[str, str]] = set()
    for job in jobs:
        where = checkout_dir(config.repos_dir, job.repo)
        if job.repo not in has_checkout:
            has_checkout[job.repo] = (where / ".git").exists()
            if not has_checkout[job.repo]:
                problems.append(f"{job.repo}: no git checkout at {where}")
        if has_checkout[job.repo] and (job.repo, job.base_commit) not in seen:
            seen.add((job.repo, job.base_commit))
            if not has_commit(where, job.base_commit):
                problems.append(f"{job.repo}: commit {job.base_commit} not in {where}")
    return problems


def _tail(data: bytes | str) -> str:
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    return text[-LOG_TAIL:]


@dataclass
class _TestRun:
    """What the test step left for `decide`: nothing when an earlier step stopped the job."""

    statuses: Mapping[str, str] = field(default_factory=dict)
    killed: str | None = None  # the limit the test command had to be stopped at
    note: str = ""  # a limit hit that does not void the result, written before the detail


def _run_job(job: RepoTestJob, config: LocalConfig, outcome: RepoTestOutcome) -> _TestRun:
    """Prepare, patch and test one job, recording each step in `outcome`."""
    source = checkout_dir(config.repos_dir, job.repo)
    with tempfile.TemporaryDirectory(prefix="repo-tests-") as tmp:
        work = Path(tmp) / "repo"
        try:
            scratch_copy(source, job.base_commit, work)
        except (RuntimeError, OSError) as exc:
            outcome.error = f"cannot prepare {job.repo} at {job.base_commit}: {exc}"
            return _TestRun()
        applied = apply_patch(work, job.patch)
        outcome.apply_method = applied.method
        if not applied.ok:
            outcome.detail = "patch did not apply"
            outcome.log_tail = _tail(applied.log)
            return _TestRun()
        outcome.patch_applied = True
        for path, content in job.expected_files:
            target = work / path
            # Bytes, then decode: text mode would turn CRLF and lone CR into "\n" and so report a
            # correctly patched CRLF file as different from its expected content.
            actual = (
                target.read_bytes().decode("utf-8", errors="replace") if target.is_file() else None
            )
            if actual != content:
                outcome.error = (
                    f"after `{applied.method}`, {path} is not the expected content "
                    "(hunks applied elsewhere, or the task's file content disagrees with its patch)"
                )
                return _TestRun()
        tests = apply_patch(work, job.test_patch, allow_fuzz=False)
        if not tests.ok:
            outcome.error = "the task's test patch did not apply on top of the patch"
            outcome.log_tail = _tail(tests.log)
            return _TestRun()
        channel = ReportChannel.create(Path(tmp) / "report")
        argv = [*config.test_cmd, *channel.args, *target_files(job)]
        try:
            ran = run_tests(
                argv,
                cwd=work,
                limits=config.limits,
                extra_readonly=config.extra_readonly,
                extra_writable=[channel.directory],
                extra_env=channel.env,
            )
        except SandboxError as exc:
            outcome.error = f"sandbox failure: {exc}"
            return _TestRun()
        outcome.isolation = dict(ran.isolation)
        outcome.command = {
            "argv": argv,
            "exit_code": ran.exit_code,
            "signal": ran.signal,
            "timed_out": ran.timed_out,
            "memory_exceeded": ran.memory_exceeded,
            "output_exceeded": ran.output_exceeded,
            "cpu_s": round(ran.cpu_s, 3),
            "wall_s": round(ran.wall_s, 3),
            "peak_memory_mb": round(ran.peak_memory_mb, 1),
        }
        if ran.error:
            outcome.error = f"sandbox could not run the test command: {ran.error}"
        stdout = ran.stdout.decode("utf-8", "replace")
        outcome.log_tail = _tail(stdout + "\n" + ran.stderr.decode("utf-8", "replace"))
        run = _TestRun(statuses=_trusted_statuses(job, channel, ran, outcome))
        if ran.timed_out:
            run.killed = f"test command hit its {ran.timeout_kind or ''} time limit"
        elif ran.memory_exceeded:
            run.note = "test command hit its memory limit"
        return run


def _trusted_statuses(
    job: RepoTestJob, channel: ReportChannel, ran: CommandOutcome, outcome: RepoTestOutcome
) -> dict[str, str]:
    """The wanted tests' statuses from the plugin's signed report, or none when the report is
    missing or cannot be trusted (see `signed_report`); the printed log never decides."""
    report = verify(
        ran.stdout,
        channel.key,
        ran.exit_code,
        plugin_loaded=channel.plugin_loaded(),
        killed=ran.timed_out,
    )
    if report.problem:
        outcome.detail = f"test report rejected: {report.problem}"
        return {}
    if not report.started:
        if not outcome.error:
            outcome.error = (
                "the grader's pytest plugin did not load: the test command must run pytest "
                "and accept -p (see log_tail)"
            )
        return {}
    outcome.tests_run = len(report.statuses)
    wanted = (*job.fail_to_pass, *job.pass_to_pass)
    return {t: report.statuses[t] for t in wanted if t in report.statuses}


def grade_one(job: RepoTestJob, config: LocalConfig) -> RepoTestOutcome:
    """One job's outcome; never raises: a crash of the grading code becomes its grading error,
    so an engine bug cannot lose the other jobs' outcomes."""
    outcome = RepoTestOutcome(id=job.id, backend="local")
    try:
        run = _run_job(job, config, outcome)
    except Exception as exc:
        outcome = RepoTestOutcome(id=job.id, backend="local", error=f"grader crashed: {exc!r}")
        run = _TestRun()
    decide(outcome, run.statuses, job.fail_to_pass, job.pass_to_pass, killed=run.killed)
    if run.note:
        outcome.detail = f"{run.note}; {outcome.detail}"
    return outcome


def grade_many(
    jobs: Sequence[RepoTestJob],
    config: LocalConfig,
    progress: Callable[[int, int], None] | None = None,
) -> list[RepoTestOutcome]:
    """Grade every job (in parallel, `config.workers` at a time); outcomes in input order."""
    results: list[RepoTestOutcome | None] = [None] * len(jobs)
    done = 0
    lock = threading.Lock()

    def one(index: int) -> None:
        nonlocal done
        results[index] = grade_one(jobs[index], config)
        with lock:  # reports stay in order and none is lost between the threads
            done += 1
            if progress:
                progress(done, len(jobs))

    with ThreadPoolExecutor(max_workers=max(1, config.workers)) as pool:
        list(pool.map(one, range(len(jobs))))
    return [r for r in results if r is not None]
