"""The infilling graders' outcome cache: keyed on everything that decides an outcome, and never
remembering a grading error."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from code_eval_taskpack.execution.repo_tests import RepoTestJob, RepoTestOutcome
from code_eval_taskpack.execution.repo_tests import local as local_grader
from code_eval_taskpack.execution.repo_tests.outcome_cache import OutcomeCache, outcome_key
from code_eval_taskpack.execution.version import ENGINE_VERSION
from lm_eval_tasks.code_infilling import grading
from lm_eval_tasks.code_infilling.grading import GradingSettings

JOB = RepoTestJob(
    id="row-1",
    repo="owner/name",
    base_commit="0" * 40,
    patch="--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n",
    test_patch="--- a/t.py\n+++ b/t.py\n@@ -0,0 +1 @@\n+def test(): pass\n",
    fail_to_pass=("t.py::test",),
    pass_to_pass=(),
    expected_files=(("m.py", "x = 2\n"),),
    extra={"instance_id": "owner__name-1"},
)
GRADER = {"grader": "local", "test_cmd": ["python", "-m", "pytest"], "limits": "L"}


def test_the_key_covers_what_decides_the_outcome_but_not_the_id() -> None:
    key = outcome_key(JOB, GRADER)
    assert outcome_key(dataclasses.replace(JOB, id="row-2"), GRADER) == key
    changed: list[dict[str, Any]] = [
        {"repo": "owner/other"},
        {"base_commit": "1" * 40},
        {"patch": JOB.patch.replace("x = 2", "x = 3")},
        {"expected_files": (("m.py", "x = 3\n"),)},
        {"test_patch": JOB.test_patch + "+\n"},
        {"fail_to_pass": ("t.py::other",)},
        {"pass_to_pass": ("t.py::test",)},
        {"extra": {"instance_id": "owner__name-1", "version": "2"}},
    ]
    for change in changed:
        assert outcome_key(dataclasses.replace(JOB, **change), GRADER) != key, change
    for grader in (
        {**GRADER, "test_cmd": ["python", "-m", "pytest", "-x"]},
        {**GRADER, "limits": "M"},
        {"grader": "swebench", "namespace": "swebench"},
    ):
        assert outcome_key(JOB, grader) != key, grader


def test_stored_outcomes_come_back_under_the_asking_id(tmp_path: Path) -> None:
    cache = OutcomeCache(tmp_path)
    outcome = RepoTestOutcome(id="row-1", patch_applied=True, resolved=True, backend="local")
    assert cache.get(JOB, GRADER) is None
    assert cache.put(JOB, GRADER, outcome)
    again = cache.get(dataclasses.replace(JOB, id="row-9"), GRADER)
    assert again == dataclasses.replace(outcome, id="row-9")
    assert cache.get(JOB, {**GRADER, "limits": "M"}) is None
    assert (cache.stats.hits, cache.stats.stores) == (1, 1)


def test_a_grading_error_is_never_stored_nor_served(tmp_path: Path) -> None:
    cache = OutcomeCache(tmp_path)
    failed = RepoTestOutcome(id="row-1", error="cannot prepare owner/name")
    assert not cache.put(JOB, GRADER, failed)
    assert list(tmp_path.rglob("*.json")) == []
    # an entry planted with an error (or not an outcome at all) is a miss
    path = cache.path_for(outcome_key(JOB, GRADER))
    path.parent.mkdir(parents=True)
    entry = {"key": outcome_key(JOB, GRADER), "outcome": {**failed.to_dict(), "id": ""}}
    path.write_text(json.dumps({**entry, "engine": ENGINE_VERSION}))
    assert cache.get(JOB, GRADER) is None
    path.write_text(json.dumps({**entry, "engine": ENGINE_VERSION, "outcome": {"id": ""}}))
    assert cache.get(JOB, GRADER) is None and cache.stats.corrupt == 1


def count_local_grades(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids of the jobs the real local grader grades from now on (it still grades them)."""
    calls: list[str] = []
    grade_one = local_grader.grade_one

    def counting(job: RepoTestJob, config: Any) -> RepoTestOutcome:
        calls.append(job.id)
        return grade_one(job, config)

    monkeypatch.setattr(local_grader, "grade_one", counting)
    return calls


def test_the_local_grader_grades_a_failed_job_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A job the grader cannot prepare (no checkout: an infrastructure error) is graded again
    on every run: the sandbox is asked each time, nothing is cached."""
    calls = count_local_grades(monkeypatch)
    settings = GradingSettings(
        grader="local", repos_dir=str(tmp_path / "no-checkouts"), cache=str(tmp_path / "cache")
    )
    for _ in range(2):
        (outcome,) = grading._grade_cached([JOB], settings)
        assert outcome.error.startswith("cannot prepare owner/name")
    assert calls == ["row-1", "row-1"]
    assert list((tmp_path / "cache").rglob("*.json")) == []
