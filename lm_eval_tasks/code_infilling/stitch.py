"""Turning a generated middle into a patch of the task's repository.

The benchmark's file is the state after the gold change: ``prefix + middle + suffix``. A
generated middle replaces the gold one inside that file, while the gold change to everything
else (other hunks, other files) is kept. The model patch is therefore the gold `patch` followed
by a second diff of `file_path` from the gold file to the stitched one; when the generation
equals the gold middle there is no second diff and the model patch is exactly the gold patch.
`git apply` and GNU `patch` both apply successive diffs of one file in order.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from code_eval_taskpack.execution.repo_tests.patching import file_diff


def gold_file(row: Mapping[str, Any]) -> str:
    return str(row["prefix"]) + str(row["middle"]) + str(row["suffix"])


def stitched_file(row: Mapping[str, Any], middle: str) -> str:
    return str(row["prefix"]) + middle + str(row["suffix"])


def correction_diff(row: Mapping[str, Any], middle: str) -> str:
    """The diff turning the gold file into the stitched one ("" when they are equal)."""
    return file_diff(str(row["file_path"]), gold_file(row), stitched_file(row, middle))


def model_patch(row: Mapping[str, Any], middle: str) -> str:
    """Gold patch + correction: the whole gold change with the generated middle in place."""
    gold = str(row["patch"])
    correction = correction_diff(row, middle)
    if not correction:
        return gold
    return (gold if gold.endswith("\n") else gold + "\n") + correction
