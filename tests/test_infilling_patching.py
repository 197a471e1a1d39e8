"""Diffs built for stitched middles apply with real `git apply` and give the exact file bytes.

Files are written and read as bytes so no newline translation hides a wrong line end.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from code_eval_taskpack.execution.repo_tests import RepoTestJob, local
from code_eval_taskpack.execution.repo_tests.in_sandbox import TEST_LIMITS
from code_eval_taskpack.execution.repo_tests.patching import (
    apply_patch,
    file_diff,
    split_lines,
    touched_files,
)
from lm_eval_tasks.code_infilling import stitch
from tests.conftest import require_binary
from tests.infilling_support import git

# (old file, new file): characters `str.splitlines` treats as line ends but git does not,
# CRLF files, files without a final newline, and content lines that look like diff headers.
CASES = {
    "form feed": ("a = 1\n\x0c\ndef f():\n    return 1\n", "a = 1\n\x0c\ndef f():\n    return 2\n"),
    "form feed inside a changed line": ("x = 1  \x0c# page\ny = 2\n", "x = 3  \x0c# page\ny = 2\n"),
    "vertical tab": ("s = 'a\x0bb'\nt = 1\n", "s = 'a\x0bb'\nt = 2\n"),
    "file separators": ("a\x1cb\x1dc\x1ed\nz = 0\n", "a\x1cb\x1dc\x1ed\nz = 1\n"),
    "unicode line separators": (
        "s = 'x\x85y\u2028z\u2029w'\nn = 1\n",
        "s = 'x\x85y\u2028z\u2029w'\nn = 2\n",
    ),
    "lone carriage return": ("a = 1\rb = 2\nc = 3\n", "a = 1\rb = 2\nc = 4\n"),
    "crlf": ("a = 1\r\nb = 2\r\nc = 3\r\n", "a = 1\r\nb = 20\r\nc = 3\r\n"),
    "crlf, line added at the end": ("a = 1\r\nb = 2\r\n", "a = 1\r\nb = 2\r\nc = 3\r\n"),
    "no final newline, last line changed": ("one\ntwo", "one\nTWO\nthree"),
    "no final newline, earlier line changed": ("one\ntwo\nthree", "ONE\ntwo\nthree"),
    "final newline removed": ("one\ntwo\n", "one\ntwo"),
    "final newline added": ("one\ntwo", "one\ntwo\n"),
    "crlf without final newline": ("a\r\nb\r\nc", "a\r\nB\r\nc"),
    "last line starts like a header": ("x = 1\n-- y", "x = 1\n++ z"),
    "lines starting like headers": ("--- a\n+++ b\nc\n", "--- A\n+++ b\nc\n"),
}


def _repo(tmp_path: Path, name: str, content: str) -> Path:
    require_binary("git")
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / name).write_bytes(content.encode("utf-8"))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    return repo


@pytest.mark.parametrize(("old", "new"), list(CASES.values()), ids=list(CASES))
def test_file_diff_applies_with_git_apply(tmp_path: Path, old: str, new: str) -> None:
    repo = _repo(tmp_path, "m.py", old)
    result = apply_patch(repo, file_diff("m.py", old, new), allow_fuzz=False)
    assert result.ok and result.method == "git apply", result.log
    assert (repo / "m.py").read_bytes() == new.encode("utf-8")


def test_a_form_feed_line_stays_one_line_of_the_hunk() -> None:
    old = "a = 1\n\x0c\ndef f():\n    return 1\n"
    patch = file_diff("m.py", old, old.replace("return 1", "return 2"))
    assert patch == (
        "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1,4 +1,4 @@\n"
        " a = 1\n \x0c\n def f():\n-    return 1\n+    return 2\n"
    )


def test_split_lines_breaks_at_newlines_only() -> None:
    assert split_lines("a\x0cb\r\nc\u2028d\ne") == ["a\x0cb\r\n", "c\u2028d\n", "e"]
    assert split_lines("a\n\n") == ["a\n", "\n"]
    assert split_lines("") == []


def test_touched_files_ignores_header_lookalikes_after_other_line_breaks() -> None:
    patch = (
        "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n"
        "-x = 1\n+x = '\x0c+++ b/evil.py'\n"
    )
    assert touched_files(patch) == ["m.py"]


def test_local_grading_of_a_crlf_file(tmp_path: Path) -> None:
    """A CRLF file is stitched, patched, checked and tested as it is; a run killed at its time
    limit is unresolved even when its tests were reported passed before it hung."""
    base_file = "def f():\r\n    return 1\r\n\r\n\r\nLIMIT = 3\r\n"
    repos = tmp_path / "repos"
    repos.mkdir()
    _repo(tmp_path, "calc.py", base_file).rename(repos / "acme__calc")
    base = git(repos / "acme__calc", "rev-parse", "HEAD")
    row = {
        "file_path": "calc.py",
        "prefix": "def f():\r\n",
        "middle": "    return 2\r\n",
        "suffix": "\r\n\r\nLIMIT = 3\r\n",
    }
    row["patch"] = file_diff("calc.py", base_file, stitch.gold_file(row))
    test_patch = (
        "diff --git a/test_calc.py b/test_calc.py\nnew file mode 100644\n"
        "--- /dev/null\n+++ b/test_calc.py\n@@ -0,0 +1,5 @@\n"
        "+from calc import f\n+\n+\n+def test_f():\n+    assert f() == 2\n"
    )
    middles = {
        "gold": row["middle"],
        "wrong": "    return 3\r\n",
        "hangs after its tests": (
            "    import threading, time\r\n"
            "    threading.Thread(target=time.sleep, args=(600,)).start()\r\n"
            "    return 2\r\n"
        ),
    }
    jobs = [
        RepoTestJob(
            id=name,
            repo="acme/calc",
            base_commit=base,
            patch=stitch.model_patch(row, middle),
            test_patch=test_patch,
            fail_to_pass=("test_calc.py::test_f",),
            pass_to_pass=(),
            expected_files=(("calc.py", stitch.stitched_file(row, middle)),),
        )
        for name, middle in middles.items()
    ]
    config = local.LocalConfig(repos_dir=repos, limits=TEST_LIMITS.scaled(wall_s=8.0))
    gold, wrong, hangs = local.grade_many(jobs, config)
    assert gold.resolved and not gold.error and gold.apply_method == "git apply", gold
    assert not wrong.resolved and not wrong.error and wrong.patch_applied
    assert wrong.test_status == {"test_calc.py::test_f": "FAILED"}
    assert hangs.command["timed_out"] and not hangs.error
    assert hangs.test_status == {"test_calc.py::test_f": "PASSED"} and not hangs.resolved


@pytest.mark.parametrize("eol", ["\n", "\r\n"], ids=["lf", "crlf"])
@pytest.mark.parametrize("final_newline", [True, False], ids=["final-newline", "no-final-newline"])
def test_model_patch_with_form_feeds_applies_on_the_base_file(
    tmp_path: Path, eol: str, final_newline: bool
) -> None:
    """Gold patch then correction, as graded: both diffs apply in order with `git apply`."""
    lines = ["import os", "\x0c", "def f(x):", "    return x", "", "\x0c", "def g():", "    pass"]
    base = eol.join(lines) + (eol if final_newline else "")
    prefix = eol.join(lines[:4]) + eol + "\x0c" + eol + "def h(y):" + eol
    gold_middle = "    y = y + 1\x0c" + eol + "    return y" + eol
    suffix = eol + "\x0c" + eol + "def g():" + eol + "    pass" + (eol if final_newline else "")
    row = {
        "file_path": "pkg/m.py",
        "prefix": prefix,
        "middle": gold_middle,
        "suffix": suffix,
        "patch": file_diff("pkg/m.py", base, prefix + gold_middle + suffix),
    }
    generated = "    return y * 2" + eol
    repo = _repo(tmp_path, "m.py", "")
    (repo / "pkg").mkdir()
    (repo / "pkg" / "m.py").write_bytes(base.encode("utf-8"))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "file")
    result = apply_patch(repo, stitch.model_patch(row, generated), allow_fuzz=False)
    assert result.ok and result.method == "git apply", result.log
    assert (repo / "pkg" / "m.py").read_bytes() == stitch.stitched_file(row, generated).encode()
