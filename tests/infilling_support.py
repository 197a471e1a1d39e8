"""Test support for the multi-line infilling tests: a real git repository and real-schema rows.

`tests/fixtures/infilling/mathlib_base/` holds the files of a tiny project at its base commit.
`build_repos(dir)` turns them into `dir/acme__mathlib`, a git repository whose commit hashes are
fixed by fixed author/committer names and dates, followed by one later commit (so grading must
really check out `base_commit`). `rows.jsonl` holds benchmark rows in the dataset's schema for
that repository: the gold patch implements `median` (and exports it), the test patch adds its
tests; FAIL_TO_PASS/PASS_TO_PASS are JSON strings as in SWE-bench.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from tests.conftest import TASKS_DIR
from tests.lm_fakes import Script, ScriptedLM
from tests.lm_fakes import evaluate as lm_evaluate

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "infilling"
BASE_FILES = FIXTURES / "mathlib_base"
ROWS_FILE = FIXTURES / "rows.jsonl"
REPO = "acme/mathlib"
TASK_DIR = TASKS_DIR / "code_infilling"

_ENV = {
    "GIT_AUTHOR_NAME": "Fixture",
    "GIT_AUTHOR_EMAIL": "fixture@example.invalid",
    "GIT_COMMITTER_NAME": "Fixture",
    "GIT_COMMITTER_EMAIL": "fixture@example.invalid",
    "GIT_AUTHOR_DATE": "2024-01-01T00:00:00+00:00",
    "GIT_COMMITTER_DATE": "2024-01-01T00:00:00+00:00",
    "GIT_CONFIG_NOSYSTEM": "1",
    "HOME": "/nonexistent",
}


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, **_ENV}
    res = subprocess.run(
        ["git", "-c", "init.defaultBranch=main", "-c", "core.autocrlf=false", *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return res.stdout.strip()


def build_repos(repos_dir: Path) -> tuple[Path, str]:
    """`repos_dir/acme__mathlib` at base commit + one later commit; returns (path, base hash)."""
    repo = repos_dir / REPO.replace("/", "__")
    shutil.copytree(BASE_FILES, repo)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    base = git(repo, "rev-parse", "HEAD")
    (repo / "README.md").write_text("mathlib: later history the grader must not see.\n")
    git(repo, "commit", "-q", "-am", "later")
    return repo, base


def load_rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in ROWS_FILE.read_text().splitlines() if line.strip()]


def _row_for(prompt: str) -> dict[str, Any]:
    """The fixture row a prompt was built from: the one whose prefix end occurs latest in it."""
    best, best_end = None, -1
    for row in load_rows():
        tail = row["prefix"][-120:]
        at = prompt.rfind(tail)
        if at >= 0 and at + len(tail) > best_end:
            best, best_end = row, at + len(tail)
    if best is None:
        raise AssertionError("prompt matches no fixture row")
    return best


def oracle(kind: str, context: str, extra: Any) -> str:
    """Scripted model answering every FIM prompt with the gold middle."""
    return _row_for(context)["middle"] + "<|endoftext|>"


def chat_oracle(kind: str, context: str, extra: Any) -> str:
    """Scripted chat model: prose plus a fenced block holding the gold middle, unindented first
    line included as-is."""
    return "Here are the missing lines:\n```python\n" + _row_for(context)["middle"] + "```\nDone."


def wrong(kind: str, context: str, extra: Any) -> str:
    """Scripted model whose median is wrong for even lengths, in a still-valid file."""
    return "    return sorted(values)[len(values) // 2]\n"


def any_format_oracle(kind: str, context: str, extra: Any) -> str:
    """Gold middle followed by the task's first stop string and junk (which must be cut);
    a fenced reply for the chat prompt."""
    if "<MISSING LINES>" in context:
        return chat_oracle(kind, context, extra)
    until = list(extra.get("until") or [])
    tail = (until[0] + "def junk(): pass\n") if until else ""
    return _row_for(context)["middle"] + tail


def evaluate(
    script: Script, tasks: list[str], **metadata: Any
) -> tuple[dict[str, Any], ScriptedLM]:
    """An infilling run over the fixture rows, logging samples, with unsafe code allowed."""
    return lm_evaluate(
        script,
        tasks,
        {"sg_infilling_data": str(ROWS_FILE), **metadata},
        include_path=TASK_DIR,
        log_samples=True,
        confirm_run_unsafe_code=True,
    )
