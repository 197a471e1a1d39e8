"""The SWE-bench backend without Docker: its input files, its report reading, its early checks.

`fixtures/infilling/swebench_run/` is a harness working directory written by hand (no Docker
here) in the layout and formats swebench 4.1.0 writes (`logs/run_evaluation/<run_id>/<model>/
<instance_id>/report.json`, `run_instance.log`, `test_output.txt`, and the run summary
`<model>.<run_id>.json`), for five instances: resolved, unresolved (one FAIL_TO_PASS failure,
one PASS_TO_PASS test skipped), patch not applied, never run, and tests timed out. Its README
says what each file follows.
"""

from __future__ import annotations

import json
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from code_eval_taskpack.execution.repo_tests import RepoTestJob, swebench_backend
from lm_eval_tasks.code_infilling import data
from lm_eval_tasks.code_infilling import utils as task_utils
from lm_eval_tasks.code_infilling.grading import (
    GradingSettings,
    GradingUnavailable,
    job_for,
    preflight,
)
from tests.infilling_support import FIXTURES, ROWS_FILE

RUN_DIR = FIXTURES / "swebench_run"
F2P = (
    "tests/test_stats.py::test_median_odd",
    "tests/test_stats.py::test_median_even",
    "tests/test_api.py::test_exports_median",
)
P2P = ("tests/test_stats.py::test_mean", "tests/test_stats.py::test_spread")


def _job(instance_id: str, patch: str = "diff --git a/x b/x\n", row: int = 1) -> RepoTestJob:
    return RepoTestJob(
        id=f"{instance_id}#{row}",
        repo="acme/mathlib",
        base_commit="0" * 40,
        patch=patch,
        test_patch="diff --git a/t b/t\n",
        fail_to_pass=F2P,
        pass_to_pass=P2P,
        extra={"instance_id": instance_id, "version": "0.1", "gold_patch": "GOLD"},
    )


def test_predictions_and_dataset_files(tmp_path: Path) -> None:
    rows = data.load_rows(ROWS_FILE)
    jobs = [job_for(rows[0], "    return 1\n")]
    dataset, predictions = swebench_backend.write_inputs(jobs, tmp_path, "org/model")
    (pred,) = [json.loads(line) for line in predictions.read_text().splitlines()]
    assert pred == {
        "instance_id": "acme__mathlib-1",
        "model_name_or_path": "org/model",
        "model_patch": jobs[0].patch,
    }
    assert pred["model_patch"].startswith(rows[0]["patch"])  # gold change kept, then the correction
    (instance,) = [json.loads(line) for line in dataset.read_text().splitlines()]
    for key in (
        "repo",
        "instance_id",
        "base_commit",
        "test_patch",
        "version",
        "environment_setup_commit",
    ):
        assert instance[key] == rows[0][key], key
    assert instance["patch"] == rows[0]["patch"]  # the harness's gold patch, not the model's
    assert json.loads(instance["FAIL_TO_PASS"]) == json.loads(rows[0]["FAIL_TO_PASS"])
    assert isinstance(instance["PASS_TO_PASS"], str)  # JSON strings, as in SWE-bench


def test_harness_command_line(tmp_path: Path) -> None:
    config = swebench_backend.SwebenchConfig(namespace=None, max_workers=3, timeout_s=99)
    argv = swebench_backend.harness_argv(config, tmp_path / "d.jsonl", tmp_path / "p.jsonl", "r1")
    assert argv[1:3] == ["-m", "swebench.harness.run_evaluation"]
    pairs = dict(zip(argv[3::2], argv[4::2], strict=True))
    assert pairs == {
        "--dataset_name": str(tmp_path / "d.jsonl"),
        "--split": "test",
        "--predictions_path": str(tmp_path / "p.jsonl"),
        "--run_id": "r1",
        "--max_workers": "3",
        "--timeout": "99",
        "--namespace": "none",
        "--report_dir": str(tmp_path),
    }


def test_reading_a_harness_run_directory() -> None:
    jobs = [_job(f"acme__mathlib-{i}") for i in (1, 2, 3, 4, 5)]
    resolved, unresolved, not_applied, missing, timed_out = (
        swebench_backend.read_outcome(job, RUN_DIR, "fixture-run", "org/model") for job in jobs
    )
    assert resolved.resolved and resolved.patch_applied and not resolved.error
    assert (
        resolved.tests_run == 5
        and resolved.fail_to_pass_passed == 3
        and resolved.pass_to_pass_passed == 2
    )
    assert not unresolved.resolved and unresolved.patch_applied and not unresolved.error
    assert unresolved.test_status["tests/test_stats.py::test_median_even"] == "FAILED"
    assert unresolved.test_status["tests/test_stats.py::test_spread"] == "SKIPPED"
    assert unresolved.fail_to_pass_passed == 2 and unresolved.tests_run == 4
    assert not not_applied.patch_applied and not not_applied.resolved
    assert not_applied.detail == "patch did not apply" and not not_applied.error
    assert not_applied.log_tail.split("\n")[0].endswith(">>>>> Patch Apply Failed:")
    assert "Hunk #1 FAILED" in not_applied.log_tail
    assert missing.error and "produced nothing" in missing.error and not missing.resolved
    # A timeout is the patch's verdict (unresolved), not a failure of the grading machinery.
    assert not timed_out.error and not timed_out.resolved and timed_out.patch_applied
    assert timed_out.command["timed_out"] is True
    assert "1800 s time limit" in timed_out.detail
    assert timed_out.log_tail.endswith("Timeout error: 1800 seconds exceeded.")
    assert set(timed_out.test_status.values()) == {"MISSING"}
    assert (timed_out.fail_to_pass_total, timed_out.pass_to_pass_total) == (3, 2)
    outcomes = (resolved, unresolved, not_applied, missing, timed_out)
    assert {o.backend for o in outcomes} == {"swebench"}


def test_a_timed_out_instance_counts_against_pass_at_1() -> None:
    outcome = swebench_backend.read_outcome(
        _job("acme__mathlib-5"), RUN_DIR, "fixture-run", "org/model"
    )
    doc = {"middle": "    return 1\n"}
    record = {**outcome.to_dict(), "middle": "    while True:\n        pass\n"}
    scored = task_utils.score_exec(doc, [json.dumps(record)])
    assert scored["pass@1"] == 0.0 and scored["grading_error"] == 0.0
    crashed = swebench_backend.read_outcome(
        _job("acme__mathlib-4"), RUN_DIR, "fixture-run", "org/model"
    )
    record = {**crashed.to_dict(), "middle": "    return 1\n"}
    assert task_utils.score_exec(doc, [json.dumps(record)])["pass@1"] is None


# The logged `git diff` of a model patch that quotes both markers (its lines are prefixed).
GIT_DIFF_LOG = (
    "2024-05-01 12:00:01,981 - INFO - Git diff before:\n"
    "diff --git a/m.py b/m.py\n"
    "@@ -1 +1,4 @@\n"
    " x = 1\n"
    '+msg = """\n'
    "+2024-05-01 12:00:02,000 - INFO - >>>>> Patch Apply Failed\n"
    "+swebench.harness.utils.EvaluationError: {id}: Test timed out after 1 seconds.\n"
    '+"""\n'
)


@pytest.mark.parametrize(
    "failure",
    [
        "2024-05-01 12:00:03,000 - ERROR - Error in evaluating model for {id}: 500 Server Error\n",
        "2024-05-01 12:00:03,000 - INFO - Traceback (most recent call last):\n"
        "swebench.harness.docker_build.BuildImageError: Error building image {id}\n",
    ],
    ids=["docker error", "image build error"],
)
def test_harness_failures_stay_grading_errors(tmp_path: Path, failure: str) -> None:
    """Only real log records count: a model patch quoting the markers cannot turn a failure of
    the harness into a verdict on the patch."""
    instance_id = "acme__mathlib-6"
    inst = tmp_path / "logs" / "run_evaluation" / "r" / "org__model" / instance_id
    inst.mkdir(parents=True)
    log = (GIT_DIFF_LOG + failure).format(id=instance_id)
    (inst / "run_instance.log").write_text(log, encoding="utf-8")
    outcome = swebench_backend.read_outcome(_job(instance_id), tmp_path, "r", "org/model")
    assert outcome.error and "stopped before grading" in outcome.error
    assert not outcome.resolved and not outcome.command.get("timed_out")
    assert swebench_backend.timed_out_after(log, instance_id) is None


def test_a_timeout_counts_only_for_its_own_instance() -> None:
    line = "swebench.harness.utils.EvaluationError: other-1: Test timed out after 9 seconds."
    assert swebench_backend.timed_out_after(line, "acme__mathlib-6") is None
    assert swebench_backend.timed_out_after(line, "other-1") == 9
    assert swebench_backend.timed_out_after(line, "other-") is None


def test_image_names_follow_the_harness_scheme() -> None:
    arch = swebench_backend.arch()
    assert swebench_backend.instance_image("django__django-11099", "swebench") == (
        f"swebench/sweb.eval.{arch}.django_1776_django-11099:latest"
    )
    assert (
        swebench_backend.instance_image("Acme__Lib-1", None)
        == f"sweb.eval.{arch}.acme__lib-1:latest"
    )


FAKE_HARNESS = textwrap.dedent(
    '''
    """Stand-in for swebench.harness.run_evaluation: records its call, writes reports."""
    import argparse, json, os, pathlib
    p = argparse.ArgumentParser()
    for flag in ("--dataset_name", "--split", "--predictions_path", "--run_id", "--max_workers",
                 "--timeout", "--namespace", "--report_dir"):
        p.add_argument(flag, required=True)
    a = p.parse_args()
    if os.environ.get("FAKE_HARNESS_CRASH"):
        raise SystemExit("docker.errors.DockerException: Error while fetching server API version")
    with open(os.environ["FAKE_HARNESS_CALLS"], "a") as fh:
        fh.write(json.dumps({"cwd": os.getcwd(), **vars(a)}) + "\\n")
    ids = {json.loads(l)["instance_id"] for l in open(a.dataset_name)}
    for line in open(a.predictions_path):
        pred = json.loads(line)
        assert pred["instance_id"] in ids
        d = pathlib.Path("logs/run_evaluation", a.run_id, pred["model_name_or_path"].replace("/", "__"), pred["instance_id"])
        d.mkdir(parents=True)
        if "APPLYFAIL" in pred["model_patch"]:
            (d / "run_instance.log").write_text(
                "2024-05-01 12:00:00,000 - INFO - >>>>> Patch Apply Failed:\\nerror: patch failed\\n")
            continue
        if "HANG" in pred["model_patch"]:
            (d / "test_output.txt").write_text("collected 5 items\\n\\nTimeout error: 7 seconds exceeded.")
            (d / "run_instance.log").write_text(
                "2024-05-01 12:00:00,000 - INFO - Traceback (most recent call last):\\n"
                "swebench.harness.utils.EvaluationError: " + pred["instance_id"]
                + ": Test timed out after 7 seconds.\\nCheck (x) for more information.\\n")
            continue
        ok = "RESOLVE" in pred["model_patch"]
        report = {pred["instance_id"]: {"patch_successfully_applied": True, "resolved": ok,
                  "tests_status": {"FAIL_TO_PASS": {"success": [], "failure": []},
                                   "PASS_TO_PASS": {"success": [], "failure": []}}}}
        (d / "report.json").write_text(json.dumps(report))
    '''
)


@pytest.fixture
def fake_harness(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Put FAKE_HARNESS on PYTHONPATH as `swebench.harness.run_evaluation`; returns the file
    where it records each of its runs."""
    pkg = tmp_path / "fake" / "swebench" / "harness"
    pkg.mkdir(parents=True)
    (pkg.parent / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "run_evaluation.py").write_text(FAKE_HARNESS)
    calls = tmp_path / "calls.jsonl"
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "fake"))
    monkeypatch.setenv("FAKE_HARNESS_CALLS", str(calls))
    return calls


def test_grade_many_runs_the_harness_once_per_round(tmp_path: Path, fake_harness: Path) -> None:
    calls = fake_harness
    jobs = [
        _job("acme__mathlib-1", "RESOLVE", row=1),
        _job("acme__mathlib-1", "nope", row=2),  # same instance: needs a second harness run
        _job("acme__mathlib-5", "APPLYFAIL", row=3),
        _job("acme__mathlib-6", "HANG", row=4),
    ]
    config = swebench_backend.SwebenchConfig(
        work_dir=tmp_path / "work", model_name="org/model", python=sys.executable
    )
    outcomes = swebench_backend.grade_many(jobs, config, run_name="t")
    assert [o.id for o in outcomes] == [j.id for j in jobs]
    assert [o.resolved for o in outcomes] == [True, False, False, False]
    assert [o.patch_applied for o in outcomes] == [True, True, False, True]
    assert [bool(o.error) for o in outcomes] == [False] * 4
    assert outcomes[3].command["timed_out"] and "7 s time limit" in outcomes[3].detail
    runs = [json.loads(line) for line in calls.read_text().splitlines()]
    assert len(runs) == 2 and runs[0]["run_id"] != runs[1]["run_id"]
    assert all(Path(r["cwd"]).parent == tmp_path / "work" for r in runs)


def test_a_crashed_harness_is_a_grading_error_with_its_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_harness: Path
) -> None:
    monkeypatch.setenv("FAKE_HARNESS_CRASH", "1")
    config = swebench_backend.SwebenchConfig(work_dir=tmp_path / "work", python=sys.executable)
    (outcome,) = swebench_backend.grade_many([_job("acme__mathlib-1", "RESOLVE")], config)
    assert outcome.error and "harness.log" in outcome.error and not outcome.resolved
    assert "DockerException" in outcome.log_tail


def test_missing_docker_is_detected_before_generation(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    rows = data.load_rows(ROWS_FILE)
    settings = GradingSettings(grader="swebench")
    # No docker binary on PATH at all.
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    assert "not installed" in swebench_backend.docker_problem()
    with pytest.raises(GradingUnavailable, match=r"`docker` command is not installed"):
        preflight(rows, settings)


def test_unreachable_docker_daemon_is_detected(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    docker = shutil.which("docker")
    if docker is None:  # exercise the daemon check with a docker CLI that cannot connect
        fake = tmp_path / "bin" / "docker"
        fake.parent.mkdir()
        fake.write_text("#!/bin/sh\necho 'Cannot connect to the Docker daemon' >&2\nexit 1\n")
        fake.chmod(0o755)
        monkeypatch.setenv("PATH", f"{fake.parent}:/usr/bin:/bin")
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-daemon.sock")
    problem = swebench_backend.docker_problem()
    assert problem.startswith("the Docker daemon is not reachable"), problem
    with pytest.raises(GradingUnavailable, match="Docker daemon is not reachable"):
        preflight(data.load_rows(ROWS_FILE), GradingSettings(grader="swebench"))


def test_package_version_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib import metadata

    def fake_version(name: str) -> str:
        assert name == "swebench"
        return "5.0.1"

    monkeypatch.setattr(metadata, "version", fake_version)
    assert "4.1.0 is required" in swebench_backend.package_problem()

    def not_installed(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", not_installed)
    assert "pip install 'swebench==4.1.0'" in swebench_backend.package_problem()
