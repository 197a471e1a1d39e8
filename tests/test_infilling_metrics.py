"""Exact match and edit similarity against hand-computed values; Levenshtein against a table."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from code_eval_taskpack.utils.metrics import edit_similarity, exact_match, levenshtein
from lm_eval_tasks.code_infilling import utils as task_utils


def _table(a: str, b: str) -> int:
    """Textbook quadratic Levenshtein, the reference for the bit-parallel one."""
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


@pytest.mark.parametrize(
    ("a", "b", "distance"),
    [
        ("", "", 0),
        ("abc", "", 3),
        ("kitten", "sitting", 3),
        ("flaw", "lawn", 2),
        ("x = 1", "x = 10", 1),
    ],
)
def test_levenshtein_known_values(a: str, b: str, distance: int) -> None:
    assert levenshtein(a, b) == levenshtein(b, a) == distance


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab \nxy", max_size=70), st.text(alphabet="ab \nxy", max_size=70))
def test_levenshtein_matches_the_table(a: str, b: str) -> None:
    assert levenshtein(a, b) == _table(a, b)


def test_exact_match_ignores_whitespace_layout_only() -> None:
    gold = "    if n % 2:\n        return ordered[mid]\n"
    assert exact_match("  if n % 2:\n\n   return ordered[mid]", gold)
    assert not exact_match("    if n % 2:\n        return ordered[mid + 1]\n", gold)
    assert not exact_match("    if n%2:\n        return ordered[mid]\n", gold)  # tokens differ


def test_edit_similarity_hand_computed() -> None:
    # "return a" vs "return ab": one insertion over 9 characters.
    assert edit_similarity("return a", "return ab") == pytest.approx(1 - 1 / 9)
    # Surrounding whitespace is stripped first: "x = 1" vs "x = 2" is one substitution in 5.
    assert edit_similarity("\n  x = 1\n", "x = 2") == pytest.approx(0.8)
    assert edit_similarity("", "") == 1.0
    assert edit_similarity("abc", "") == 0.0


def test_per_row_scores_and_means_in_the_task_hooks() -> None:
    doc = {"middle": "    return x\n"}
    assert task_utils.score(doc, ["  return x"]) == {"exact_match": 1.0, "edit_similarity": 1.0}
    row = task_utils.score(doc, ["    return y\n"])
    assert row == {"exact_match": 0.0, "edit_similarity": pytest.approx(1 - 1 / 8)}
    outcome = {"middle": "    return x\n", "resolved": True, "error": ""}
    assert task_utils.score_exec(doc, [json.dumps(outcome)])["pass@1"] == 1.0
    broken = {"middle": "    return x\n", "resolved": False, "error": "sandbox failure"}
    scored = task_utils.score_exec(doc, [json.dumps(broken)])
    assert scored["pass@1"] is None and scored["grading_error"] == 1.0
    # Grading errors are left out of pass@1 (and reported as grading_error).
    assert task_utils.mean_of_graded([1.0, 0.0, None, 1.0]) == pytest.approx(2 / 3)
