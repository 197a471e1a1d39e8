"""Local repository-test grading on a real git repository with rows in the dataset's schema."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from code_eval_taskpack.execution.repo_tests import RepoTestJob, local
from code_eval_taskpack.execution.repo_tests.log_parsers import MISSING, parse_pytest
from code_eval_taskpack.execution.repo_tests.patching import apply_patch, file_diff, scratch_copy
from lm_eval_tasks.code_infilling import data, stitch
from lm_eval_tasks.code_infilling.grading import (
    GradingSettings,
    GradingUnavailable,
    grade,
    job_for,
    preflight,
)
from tests.conftest import write_jsonl
from tests.infilling_support import ROWS_FILE, git

GOLD_FIX = "gold"
EQUIVALENT = (
    "    s = sorted(values)\n"
    "    half, odd = divmod(len(s), 2)\n"
    "    return s[half] if odd else (s[half - 1] + s[half]) / 2\n"
)
WRONG = "    return sorted(values)[len(values) // 2]\n"
SYNTAX_ERROR = "    return sorted(values[\n"


@pytest.fixture
def rows(repos: Path) -> list[dict]:
    loaded = data.load_rows(ROWS_FILE)
    settings = GradingSettings(grader="local", repos_dir=str(repos))
    for row in loaded:
        row["grading"] = settings.to_json()
    return loaded


def test_fixture_commit_is_reproducible(repos: Path, rows: list[dict]) -> None:
    repo = repos / "acme__mathlib"
    assert git(repo, "rev-list", "--max-parents=0", "HEAD") == rows[0]["base_commit"]
    assert git(repo, "rev-parse", "HEAD") != rows[0]["base_commit"]  # later history exists


def test_gold_equivalent_wrong_and_broken_middles(rows: list[dict]) -> None:
    row = rows[0]
    middles = [row["middle"], EQUIVALENT, WRONG, SYNTAX_ERROR]
    outcomes = grade([row] * len(middles), middles)
    gold, same, wrong, broken = outcomes
    assert gold["resolved"] and gold["patch_applied"] and not gold["error"]
    assert gold["tests_run"] == 5 and set(gold["test_status"].values()) == {"PASSED"}
    assert gold["model_patch"] == row["patch"]
    assert gold["isolation"].get("backend") == "local"
    assert same["resolved"], same["log_tail"]
    assert not wrong["resolved"] and wrong["patch_applied"] and not wrong["error"]
    assert wrong["test_status"]["tests/test_stats.py::test_median_even"] == "FAILED"
    assert wrong["test_status"]["tests/test_stats.py::test_median_odd"] == "PASSED"
    assert not broken["resolved"] and broken["patch_applied"] and not broken["error"]
    assert "SyntaxError" in broken["log_tail"]
    assert all(status != "PASSED" for status in broken["test_status"].values())


def test_second_hole_of_the_same_instance(rows: list[dict]) -> None:
    row = rows[1]
    ok, bad = grade([row, row], [row["middle"], "    return ordered[mid]\n"])
    assert ok["resolved"] and not bad["resolved"]
    assert bad["test_status"]["tests/test_stats.py::test_median_even"] == "FAILED"


def test_stitched_patch_for_the_gold_middle_is_the_gold_change(
    rows: list[dict], tmp_path: Path
) -> None:
    row = rows[0]
    assert stitch.model_patch(row, row["middle"]) == row["patch"]
    assert stitch.correction_diff(row, row["middle"]) == ""
    # Applied to the base commit, gold patch + correction gives prefix + generation + suffix,
    # and keeps the rest of the gold change (the export in __init__.py).
    work = tmp_path / "work"
    scratch_copy(tmp_path / "repos" / "acme__mathlib", row["base_commit"], work)
    assert apply_patch(work, stitch.model_patch(row, EQUIVALENT)).method == "git apply"
    assert (work / row["file_path"]).read_text() == row["prefix"] + EQUIVALENT + row["suffix"]
    assert "median" in (work / "mathlib" / "__init__.py").read_text()


def test_patch_that_does_not_apply_is_reported(rows: list[dict]) -> None:
    job = job_for(rows[0], rows[0]["middle"])
    broken = job.patch.replace("-    raise NotImplementedError", "-    raise NotImplementedError()")
    broken = broken.replace("def median(values):", "def median_of(values):")
    bad = RepoTestJob(**{**job.__dict__, "patch": broken, "id": "bad"})
    config = local.LocalConfig(repos_dir=Path(json.loads(rows[0]["grading"])["repos_dir"]))
    (outcome,) = local.grade_many([bad], config)
    assert not outcome.patch_applied and not outcome.resolved
    assert outcome.detail == "patch did not apply" and outcome.tests_run == 0
    assert not outcome.error  # the patch's fault, not the grader's
    assert "git apply" in outcome.log_tail


def test_a_test_missing_from_the_report_counts_as_failed(rows: list[dict]) -> None:
    job = job_for(rows[0], rows[0]["middle"])
    ghost = RepoTestJob(
        **{**job.__dict__, "fail_to_pass": (*job.fail_to_pass, "tests/test_stats.py::test_ghost")}
    )
    config = local.LocalConfig(repos_dir=Path(json.loads(rows[0]["grading"])["repos_dir"]))
    (outcome,) = local.grade_many([ghost], config)
    assert outcome.patch_applied and not outcome.resolved
    assert outcome.test_status["tests/test_stats.py::test_ghost"] == MISSING
    assert outcome.fail_to_pass_passed == 3 and outcome.fail_to_pass_total == 4


def test_file_content_disagreeing_with_the_patch_is_a_grading_error(rows: list[dict]) -> None:
    row = dict(rows[0])
    row["suffix"] = row["suffix"] + "# a line the gold patch never wrote\n"
    (outcome,) = grade([row], [row["middle"]])
    assert outcome["error"] and "not the expected content" in outcome["error"]
    assert not outcome["resolved"]


def test_preflight_names_missing_checkouts_and_commits(rows: list[dict], tmp_path: Path) -> None:
    settings = GradingSettings(grader="local", repos_dir=str(tmp_path / "repos"))
    preflight(rows, settings)  # all present: no error
    other = [dict(rows[0], base_commit="0" * 40), dict(rows[0], repo="acme/absent")]
    with pytest.raises(GradingUnavailable) as info:
        preflight(other, settings)
    text = str(info.value)
    assert f"commit {'0' * 40} not in" in text and "acme/absent: no git checkout" in text
    with pytest.raises(GradingUnavailable, match="repos_dir"):
        preflight(rows, GradingSettings(grader="local"))
    with pytest.raises(GradingUnavailable, match="executable not found"):
        preflight(
            rows,
            GradingSettings(
                grader="local", repos_dir=str(tmp_path / "repos"), test_cmd="no-such-runner -x"
            ),
        )


def test_target_files_come_from_test_ids_or_the_test_patch(rows: list[dict]) -> None:
    job = job_for(rows[0], rows[0]["middle"])
    assert local.target_files(job) == ["tests/test_stats.py", "tests/test_api.py"]
    bare = RepoTestJob(**{**job.__dict__, "fail_to_pass": ("test_median_odd",)})
    assert local.target_files(bare) == ["tests/test_stats.py", "tests/test_api.py"]


def test_file_diff_round_trip_without_final_newline(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "a.txt").write_text("one\ntwo")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "x")
    patch = file_diff("a.txt", "one\ntwo", "one\nTWO\nthree")
    assert "\\ No newline at end of file" in patch
    assert apply_patch(repo, patch).ok
    assert (repo / "a.txt").read_text() == "one\nTWO\nthree"
    assert file_diff("a.txt", "same", "same") == ""


PYTEST_LOG = """\
============================= test session starts ==============================
collected 5 items

tests/test_a.py .F.x                                                     [ 80%]
tests/test_b.py E                                                        [100%]

==================================== ERRORS ====================================
=========================== short test summary info ============================
PASSED tests/test_a.py::test_one
PASSED tests/test_a.py::test_param[a - b]
FAILED tests/test_a.py::test_two - assert 1 == 2
XFAIL tests/test_a.py::test_three - known bug
SKIPPED [1] tests/test_a.py:20: needs network
ERROR tests/test_b.py::test_four - NameError: name 'x' is not defined
============ 1 failed, 2 passed, 1 xfailed, 1 error in 0.12s ============
"""


def test_pytest_summary_parser() -> None:
    log = parse_pytest(PYTEST_LOG)
    assert log.count == 5
    assert log.status_of("tests/test_a.py::test_one") == "PASSED"
    assert log.status_of("tests/test_a.py::test_param[a - b]") == "PASSED"
    assert log.status_of("tests/test_a.py::test_two") == "FAILED"
    assert log.status_of("tests/test_a.py::test_three") == "XFAIL"
    assert log.status_of("tests/test_b.py::test_four") == "ERROR"
    assert log.status_of("tests/test_a.py::test_t") == MISSING  # no prefix matching
    assert log.status_of("tests/test_a.py::test_skipped") == MISSING
    verbose = parse_pytest(
        "===== test session starts =====\ntests/test_a.py::test_one PASSED        [ 50%]\n"
    )
    assert verbose.status_of("tests/test_a.py::test_one") == "PASSED"
    assert not log.rejected and not verbose.rejected


def test_a_summary_without_the_session_header_is_rejected() -> None:
    """Only text after pytest's own header counts; a summary before it (or without it) voids
    the log, and a verbose-looking line before the header is ignored."""
    headless = PYTEST_LOG.split("\n", 1)[1]
    log = parse_pytest(headless)
    assert log.count == 0 and "session header" in log.rejected
    assert log.status_of("tests/test_a.py::test_one") == MISSING
    forged_first = headless + PYTEST_LOG.replace("PASSED", "FAILED")
    assert parse_pytest(forged_first).count == 0  # a fake summary printed before the header
    early = parse_pytest("tests/test_c.py::test_x PASSED\n" + PYTEST_LOG)
    assert early.status_of("tests/test_c.py::test_x") == MISSING and not early.rejected
    assert early.count == 5


@pytest.mark.parametrize("separator", ["\x0c", "\u2028"])
def test_a_failure_message_cannot_forge_a_summary_line(tmp_path: Path, separator: str) -> None:
    """A real pytest run whose failure message holds a line separator other than "\\n"."""
    (tmp_path / "test_t.py").write_text(
        "def test_b():\n    assert False\n\n\n"
        "def test_z():\n"
        f"    raise ValueError('boom' + {separator!a} + 'PASSED test_t.py::test_b')\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-rA", "-p", "no:cacheprovider", "test_t.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert f"boom{separator}PASSED test_t.py::test_b" in done.stdout  # pytest keeps it verbatim
    log = parse_pytest(done.stdout)
    assert log.status_of("test_t.py::test_b") == "FAILED"
    assert log.status_of("test_t.py::test_z") == "FAILED"
    assert log.count == 2


def test_a_hanging_middle_hits_the_time_limit(rows: list[dict], repos: Path) -> None:
    row = dict(rows[0])
    row["grading"] = GradingSettings(
        grader="local", repos_dir=str(repos), test_cpu_s=3, test_wall_s=20
    ).to_json()
    (outcome,) = grade([row], ["    while True:\n        pass\n"])
    assert outcome["command"]["timed_out"] and not outcome["resolved"] and not outcome["error"]
    assert "time limit" in outcome["detail"]


def test_oracle_command_checks_that_gold_middles_resolve(
    repos: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from lm_eval_tasks.code_infilling import oracle

    out = tmp_path / "oracle.jsonl"
    argv = [
        "--grader",
        "local",
        "--repos-dir",
        str(repos),
        "--data",
        str(ROWS_FILE),
        "--output",
        str(out),
    ]
    assert oracle.main(argv) == 0
    assert "2/2 gold middles resolved" in capsys.readouterr().err
    assert all(json.loads(line)["resolved"] for line in out.read_text().splitlines())
    # A broken test environment (here a conftest that cannot import) makes it fail loudly.
    (repos / "acme__mathlib" / "conftest.py").write_text("import nonexistent_plugin\n")
    tree = repos / "acme__mathlib"
    git(tree, "add", "conftest.py")
    git(tree, "commit", "-q", "-m", "break")
    broken = [
        dict(json.loads(line), base_commit=git(tree, "rev-parse", "HEAD"))
        for line in ROWS_FILE.read_text().splitlines()
    ]
    bad_rows = tmp_path / "rows.jsonl"
    write_jsonl(bad_rows, broken)
    assert (
        oracle.main(
            [
                "--grader",
                "local",
                "--repos-dir",
                str(repos),
                "--data",
                str(bad_rows),
                "--limit",
                "1",
            ]
        )
        == 1
    )
    assert "UNRESOLVED" in capsys.readouterr().out


def test_xcodeeval_backend_is_never_applied_to_infilling(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """lm-eval hands every task of a run the same metadata: xCodeEval's `exec_backend` reaches
    the infilling tasks too, which grade with `sg_infilling_grader` and say so once."""
    from lm_eval_tasks.code_infilling import grading

    monkeypatch.setattr(grading, "_noted_backends", set())
    monkeypatch.setenv("CODE_EVAL_EXEC_BACKEND", "ray")  # xCodeEval's variable: not read
    base = {"grader": "local", "repos_dir": "/r"}
    with caplog.at_level(logging.WARNING, logger=grading.__name__):
        plain = GradingSettings.from_kwargs(base)
        local = GradingSettings.from_kwargs({**base, "exec_backend": "local"})
        assert caplog.records == []
        nested = GradingSettings.from_kwargs({**base, "metadata": {"exec_backend": "ray"}})
        again = GradingSettings.from_kwargs({**base, "exec_backend": "ray"})
        other = GradingSettings.from_kwargs({"exec_backend": "remote"})
    assert plain == local == nested == again and plain.grader == "local"
    assert other == GradingSettings.from_kwargs({})
    notes = [r.getMessage() for r in caplog.records]
    assert len(notes) == 2, notes  # once per value
    assert "exec_backend='ray'" in notes[0] and "sg_infilling_grader (now 'local'" in notes[0]
    assert "exec_backend='remote'" in notes[1] and "(now 'swebench'" in notes[1]


def test_a_run_of_both_benchmarks_builds_the_infilling_exec_task(repos: Path) -> None:
    from lm_eval_tasks import protocol
    from lm_eval_tasks.code_infilling.documents import build_docs

    mine = {"sg_infilling_data": str(ROWS_FILE), "grader": "local", "repos_dir": str(repos)}
    both = {**mine, "metadata": {"exec_backend": "ray", "ray_address": "auto"}}
    protocol.check_settings(both)
    task = {"sg_infilling_exec": True, "sg_infilling_variant": "starcoder"}
    docs = build_docs(**task, **both)
    assert docs and [d["grading"] for d in docs] == [
        d["grading"] for d in build_docs(**task, **mine)
    ]
    assert json.loads(docs[0]["grading"])["grader"] == "local"
