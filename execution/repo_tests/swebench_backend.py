"""Grading with the official SWE-bench harness (`pip install swebench==4.1.0`, Docker required).

The harness is run as a separate process exactly as a user would run it:
``python -m swebench.harness.run_evaluation --dataset_name DATASET.jsonl --predictions_path
PREDICTIONS.jsonl --run_id RUN ...`` in a work directory. Its inputs are written here:

- a local dataset file (JSONL, one SWE-bench instance per line: repo, instance_id, version,
  base_commit, patch, test_patch, FAIL_TO_PASS, PASS_TO_PASS, environment_setup_commit, ...),
  which the harness accepts instead of a Hub dataset name; 4.1.0 builds each instance's test
  specification from `repo` and `version`, so no other column is needed;
- predictions (JSONL of ``{instance_id, model_name_or_path, model_patch}``).

Its outputs are read back per instance: ``logs/run_evaluation/<run_id>/<model>/<instance_id>/
report.json`` (``{id: {patch_successfully_applied, resolved, tests_status: {FAIL_TO_PASS:
{success, failure}, PASS_TO_PASS: {...}}}}``), or, when the harness wrote no report, the
instance's ``run_instance.log``. Two early stops there are verdicts on the patch, not grading
failures: a logged ``>>>>> Patch Apply Failed`` (the patch did not apply), and a test run that
exceeded the harness's ``--timeout`` (4.1.0 then appends ``Timeout error: N seconds exceeded.``
to ``test_output.txt`` and logs the traceback of ``EvaluationError: <id>: Test timed out after
N seconds.``, writing no report). A timed-out instance is unresolved, as in the local backend
and in SWE-bench's own resolved rate (resolved over all instances), although the harness's run
summary lists it among its errors. Anything else without a report (an image that would not
build, a crashed Docker call) is a grading error. Markers are matched at the start of a log
line, where the logged `git diff` of the model's patch (every line prefixed) cannot put them.
An instance id can appear only once per harness run, so jobs sharing an instance are graded in
successive runs.

`preflight` finds, before any model output exists, everything that would make the harness fail:
the package missing or of another version, no Docker CLI, no reachable daemon, instance images
absent (the harness would otherwise pull tens of GB), unknown repo/version pairs.
"""

from __future__ import annotations

import json
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .log_parsers import FAILED, PASSED, SKIPPED
from .model import LOG_TAIL, RepoTestJob, RepoTestOutcome, decide

PINNED_VERSION = "4.1.0"
HARNESS_MODULE = "swebench.harness.run_evaluation"
APPLY_FAILED_MARKER = ">>>>> Patch Apply Failed"
#: A record of the harness's instance logger ("%(asctime)s - %(levelname)s - %(message)s").
_LOG_RECORD = r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} - [A-Z]+ - "
_APPLY_FAILED = re.compile(_LOG_RECORD + re.escape(APPLY_FAILED_MARKER), re.MULTILINE)
INSTANCE_FIELDS = (
    "repo",
    "instance_id",
    "base_commit",
    "patch",
    "test_patch",
    "problem_statement",
    "hints_text",
    "created_at",
    "version",
    "FAIL_TO_PASS",
    "PASS_TO_PASS",
    "environment_setup_commit",
)


@dataclass(frozen=True)
class SwebenchConfig:
    work_dir: Path | None = None  # default: a new temporary directory per grading call
    model_name: str = "code-infilling"
    namespace: str | None = "swebench"  # prebuilt images on Docker Hub; None = build locally
    max_workers: int = 2
    timeout_s: int = 1800
    allow_pull: bool = False  # let the harness pull missing images instead of refusing
    python: str = sys.executable
    harness_timeout_s: float | None = None  # whole-run limit for the harness process


def _instance_id(job: RepoTestJob) -> str:
    """The SWE-bench instance a job grades (its own id when the task data names none)."""
    return job.extra.get("instance_id", job.id)


def arch() -> str:
    return "arm64" if platform.machine() in {"aarch64", "arm64"} else "x86_64"


def instance_image(instance_id: str, namespace: str | None, tag: str = "latest") -> str:
    """The harness's image name for an instance (its naming scheme, reproduced)."""
    name = f"sweb.eval.{arch()}.{instance_id.lower()}:{tag}"
    if namespace:
        name = f"{namespace}/{name}".replace("__", "_1776_")
    return name


def _docker(args: Sequence[str], timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["docker", *args], capture_output=True, text=True, timeout=timeout, check=False
    )


def docker_problem() -> str:
    """Why Docker cannot be used here, or "" when the CLI reaches a daemon."""
    if shutil.which("docker") is None:
        return "the `docker` command is not installed (the SWE-bench harness runs tests in Docker)"
    try:
        res = _docker(["info", "--format", "{{.ServerVersion}}"])
    except subprocess.TimeoutExpired:
        return "the Docker daemon did not answer `docker info` within 30 s"
    if res.returncode != 0 or not res.stdout.strip():
        reason = (res.stderr or res.stdout).strip().splitlines()
        return "the Docker daemon is not reachable: " + (
            reason[-1] if reason else "docker info failed"
        )
    return ""


def package_problem() -> str:
    """Why the pinned harness cannot be used, or ""."""
    from importlib import metadata

    try:
        version = metadata.version("swebench")
    except metadata.PackageNotFoundError:
        return (
            f"the SWE-bench harness is not installed: pip install 'swebench=={PINNED_VERSION}' "
            "(or this project's [swebench] extra)"
        )
    if version != PINNED_VERSION:
        return (
            f"swebench {version} is installed but {PINNED_VERSION} is required: 5.x expects "
            "image/eval_script/log_parser columns these rows do not carry"
        )
    return ""


def unknown_specs(jobs: Sequence[RepoTestJob]) -> list[str]:
    """repo/version pairs the installed harness has no test specification for."""
    try:
        from swebench.harness.constants import MAP_REPO_VERSION_TO_SPECS
    except ImportError:
        return []
    bad = []
    for job in jobs:
        version = job.extra.get("version", "")
        if version not in MAP_REPO_VERSION_TO_SPECS.get(job.repo, {}):
            bad.append(
                f"{job.id}: SWE-bench {PINNED_VERSION} knows no spec for {job.repo} version {version!r}"
            )
    return bad


def spec_problem(jobs: Sequence[RepoTestJob]) -> str:
    """Build the harness's test specification of one instance, as the harness will: for many
    repositories that downloads requirement files from GitHub, so a machine without that access
    fails here rather than after generation."""
    if not jobs:
        return ""
    try:
        from swebench.harness.test_spec.test_spec import make_test_spec
    except ImportError:
        return ""
    try:
        make_test_spec(instance_record(jobs[0]))  # type: ignore[arg-type]
    except Exception as exc:
        return f"the harness cannot build the test specification of {jobs[0].id}: {exc!r:.300}"
    return ""


def missing_images(jobs: Sequence[RepoTestJob], namespace: str | None) -> list[str]:
    if not namespace:
        return []  # the harness builds images itself
    res = _docker(["image", "ls", "--format", "{{.Repository}}:{{.Tag}}"], timeout=120)
    present = set(res.stdout.split())
    wanted = sorted({instance_image(_instance_id(job), namespace) for job in jobs})
    return [image for image in wanted if image not in present]


def preflight(jobs: Sequence[RepoTestJob], config: SwebenchConfig) -> list[str]:
    """Everything that would make grading fail, as messages (empty: ready)."""
    problems = [p for p in (package_problem(), docker_problem()) if p]
    problems += unknown_specs(jobs)
    if not problems:
        problems += [p for p in (spec_problem(jobs),) if p]
    if not problems and not config.allow_pull:
        missing = missing_images(jobs, config.namespace)
        if missing:
            problems.append(
                f"{len(missing)} SWE-bench instance image(s) are not present locally, e.g. "
                f"{missing[0]}; pull them first (`docker pull IMAGE`), allow the harness to pull "
                "them, or build them with namespace none"
            )
    return problems


def write_inputs(
    jobs: Sequence[RepoTestJob], directory: Path, model_name: str
) -> tuple[Path, Path]:
    """The harness's dataset and predictions files for one run (instance ids must be unique)."""
    directory.mkdir(parents=True, exist_ok=True)
    dataset, predictions = directory / "dataset.jsonl", directory / "predictions.jsonl"
    with dataset.open("w", encoding="utf-8") as ds, predictions.open("w", encoding="utf-8") as pr:
        for job in jobs:
            instance = instance_record(job)
            ds.write(json.dumps(instance) + "\n")
            pred = {
                "instance_id": instance["instance_id"],
                "model_name_or_path": model_name,
                "model_patch": job.patch,
            }
            pr.write(json.dumps(pred) + "\n")
    return dataset, predictions


def instance_record(job: RepoTestJob) -> dict[str, Any]:
    extra = dict(job.extra)
    record: dict[str, Any] = {name: extra.get(name, "") for name in INSTANCE_FIELDS}
    record.update(
        repo=job.repo,
        instance_id=_instance_id(job),
        base_commit=job.base_commit,
        patch=extra.get("gold_patch", ""),
        test_patch=job.test_patch,
        FAIL_TO_PASS=json.dumps(list(job.fail_to_pass)),
        PASS_TO_PASS=json.dumps(list(job.pass_to_pass)),
    )
    if not record["environment_setup_commit"]:
        record["environment_setup_commit"] = job.base_commit
    return record


def harness_argv(
    config: SwebenchConfig, dataset: Path, predictions: Path, run_id: str
) -> list[str]:
    return [
        config.python,
        "-m",
        HARNESS_MODULE,
        "--dataset_name",
        str(dataset),
        "--split",
        "test",
        "--predictions_path",
        str(predictions),
        "--run_id",
        run_id,
        "--max_workers",
        str(config.max_workers),
        "--timeout",
        str(config.timeout_s),
        "--namespace",
        config.namespace or "none",
        "--report_dir",
        str(dataset.parent),
    ]


def _model_dir(model_name: str) -> str:
    return model_name.replace("/", "__")


def read_outcome(
    job: RepoTestJob, directory: Path, run_id: str, model_name: str
) -> RepoTestOutcome:
    """One job's outcome from the harness's files in `directory` (its working directory)."""
    instance_id = _instance_id(job)
    outcome = RepoTestOutcome(id=job.id, backend="swebench")
    outcome.command = {"harness": HARNESS_MODULE, "run_id": run_id, "work_dir": str(directory)}
    inst_dir = directory / "logs" / "run_evaluation" / run_id / _model_dir(model_name) / instance_id
    report_file = inst_dir / "report.json"
    f2p, p2p = list(job.fail_to_pass), list(job.pass_to_pass)
    outcome.fail_to_pass_total, outcome.pass_to_pass_total = len(f2p), len(p2p)
    if report_file.is_file():
        try:
            entry = json.loads(report_file.read_text(encoding="utf-8"))[instance_id]
            outcome.patch_applied = bool(entry["patch_successfully_applied"])
            resolved = bool(entry["resolved"])
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            outcome.error = f"unreadable harness report {report_file}: {exc!r}"
            return outcome
        reported: dict[str, str] = {}
        for group in ("FAIL_TO_PASS", "PASS_TO_PASS"):
            lists = entry.get("tests_status", {}).get(group, {})
            reported.update({t: PASSED for t in lists.get("success", [])})
            reported.update({t: FAILED for t in lists.get("failure", [])})
        outcome.tests_run = len(reported)
        outcome.apply_method = "swebench harness"
        if not outcome.patch_applied:
            outcome.detail = "patch did not apply"
        # The harness leaves tests it saw skipped out of both lists.
        decide(outcome, {t: reported.get(t, SKIPPED) for t in (*f2p, *p2p)}, f2p, p2p)
        outcome.resolved = resolved  # the harness's own verdict is authoritative
        return outcome
    log_file = inst_dir / "run_instance.log"
    log = log_file.read_text(encoding="utf-8", errors="replace") if log_file.is_file() else ""
    outcome.log_tail = log[-LOG_TAIL:]
    apply_failed = _APPLY_FAILED.search(log)
    timeout_s = timed_out_after(log, instance_id)
    if apply_failed:
        outcome.detail = "patch did not apply"
        # From the marker on: the tools' complaint, not the tracebacks logged after it.
        outcome.log_tail = log[apply_failed.start() :][:LOG_TAIL]
    elif timeout_s is not None:
        outcome.patch_applied = True  # the harness runs the tests only after applying the patch
        outcome.apply_method = "swebench harness"
        outcome.command["timed_out"] = True
        test_output = inst_dir / "test_output.txt"
        if test_output.is_file():
            text = test_output.read_text(encoding="utf-8", errors="replace")
            outcome.log_tail = text[-LOG_TAIL:]
        # No test result is known, so every test counts as failed and the counts say nothing.
        outcome.detail = "counted as unresolved"
        decide(
            outcome, {}, f2p, p2p, killed=f"tests exceeded the harness's {timeout_s} s time limit"
        )
    elif log:
        outcome.error = f"the harness stopped before grading this instance (see {log_file})"
    else:
        outcome.error = f"the harness produced nothing for this instance (expected {report_file})"
    return outcome


def timed_out_after(log: str, instance_id: str) -> int | None:
    """The harness's test time limit in seconds when `log` (a `run_instance.log`) records that
    the tests of `instance_id` exceeded it, else None."""
    line = re.compile(
        rf"^(?:[\w.]+\.)?EvaluationError: {re.escape(instance_id)}: "
        r"Test timed out after (\d+) seconds\.\s*$",
        re.MULTILINE,
    )
    found = line.search(log)
    return int(found.group(1)) if found else None


def _rounds(jobs: Sequence[RepoTestJob]) -> list[list[int]]:
    """Job indices split so no instance id repeats within a round."""
    rounds: list[list[int]] = []
    seen: list[set[str]] = []
    for index, job in enumerate(jobs):
        instance_id = _instance_id(job)
        for members, ids in zip(rounds, seen, strict=True):
            if instance_id not in ids:
                members.append(index)
                ids.add(instance_id)
                break
        else:
            rounds.append([index])
            seen.append({instance_id})
    return rounds


def grade_many(
    jobs: Sequence[RepoTestJob], config: SwebenchConfig, run_name: str = "infilling"
) -> list[RepoTestOutcome]:
    """Run the harness over all jobs and return their outcomes in input order."""
    results: list[RepoTestOutcome | None] = [None] * len(jobs)
    base = config.work_dir or Path(tempfile.mkdtemp(prefix="swebench-run-"))
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for number, members in enumerate(_rounds(jobs)):
        run_id = f"{run_name}-{stamp}-{number}"
        directory = base / run_id
        chosen = [jobs[i] for i in members]
        dataset, predictions = write_inputs(chosen, directory, config.model_name)
        argv = harness_argv(config, dataset, predictions, run_id)
        with (directory / "harness.log").open("w", encoding="utf-8") as log:
            try:
                subprocess.run(
                    argv,
                    cwd=directory,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    timeout=config.harness_timeout_s,
                    check=False,
                )
            except subprocess.TimeoutExpired:
                log.write(f"\nharness killed after {config.harness_timeout_s} s\n")
        harness_log = directory / "harness.log"
        harness_tail: str | None = None  # read once, and only when some job needs it
        for index in members:
            outcome = read_outcome(jobs[index], directory, run_id, config.model_name)
            if outcome.error and not outcome.log_tail:
                if harness_tail is None:
                    text = harness_log.read_text(encoding="utf-8", errors="replace")
                    harness_tail = text[-LOG_TAIL:]
                outcome.log_tail = harness_tail
                outcome.error += f"; the harness's own output is in {harness_log}"
            results[index] = outcome
    return [r for r in results if r is not None]
