"""Writing and applying unified diffs in a scratch copy of a repository.

Application follows the SWE-bench harness: `git apply` first, then GNU `patch` with fuzz as a
fallback, so both grading backends accept the same patches. Which one worked is recorded;
callers that know a file's intended content should check it afterwards, since fuzz can land a
hunk in the wrong place.
"""

from __future__ import annotations

import difflib
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

GIT = ("git", "-c", "safe.directory=*", "-c", "core.autocrlf=false")
_NO_NEWLINE = "\\ No newline at end of file\n"


def split_lines(text: str) -> list[str]:
    """`text` as git sees its lines: split after each "\\n" only, line ends kept.

    `str.splitlines` also breaks at \\r, \\x0b, \\x0c, \\x1c-\\x1e, \\x85, \\u2028 and
    \\u2029, which are ordinary characters inside a line for git and patch; a diff built from
    such lines has hunks that match nothing in the file. A CRLF line keeps its "\\r\\n"; a last
    line without a newline is returned as it is.
    """
    lines = text.split("\n")
    last = lines.pop()
    return [line + "\n" for line in lines] + ([last] if last else [])


def file_diff(path: str, old: str, new: str, context: int = 3) -> str:
    """A git-style unified diff turning `old` into `new` for `path` ("" when they are equal)."""
    if old == new:
        return ""
    diff = difflib.unified_diff(
        split_lines(old), split_lines(new), f"a/{path}", f"b/{path}", n=context
    )
    out = [f"diff --git a/{path} b/{path}\n"]
    for number, line in enumerate(diff):
        if number < 2:  # the ---/+++ header; later lines starting so are content
            out.append(line.rstrip("\n") + "\n")
            continue
        out.append(line)
        if not line.endswith("\n"):
            out.append("\n" + _NO_NEWLINE)
    return "".join(out)


@dataclass
class ApplyResult:
    ok: bool
    method: str  # "git apply", "patch --fuzz=5", or "" when nothing worked
    log: str


def _run(
    argv: list[str], cwd: Path, stdin: str | None = None, timeout: float = 120.0
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv,
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def apply_patch(repo: Path, patch: str, *, allow_fuzz: bool = True) -> ApplyResult:
    """Apply `patch` (paths a/ b/) to the work tree at `repo`; on failure the tree is unchanged.

    `git apply` is atomic. GNU `patch` is not, so it first runs with `--dry-run` and only applies
    when every hunk would.
    """
    if not patch.strip():
        return ApplyResult(ok=True, method="empty", log="")
    if not patch.endswith("\n"):
        patch += "\n"
    logs = []
    res = _run([*GIT, "apply", "--verbose", "--whitespace=nowarn", "-"], repo, stdin=patch)
    if res.returncode == 0:
        return ApplyResult(ok=True, method="git apply", log=res.stdout + res.stderr)
    logs.append(f"$ git apply\n{res.stdout}{res.stderr}")
    if allow_fuzz and shutil.which("patch"):
        base = ["patch", "--batch", "--fuzz=5", "-p1", "--forward", "--no-backup-if-mismatch"]
        dry = _run([*base, "--dry-run"], repo, stdin=patch)
        logs.append(f"$ patch --fuzz=5 --dry-run\n{dry.stdout}{dry.stderr}")
        if dry.returncode == 0:
            res = _run(base, repo, stdin=patch)
            if res.returncode == 0:
                return ApplyResult(ok=True, method="patch --fuzz=5", log=res.stdout + res.stderr)
            logs.append(f"$ patch --fuzz=5\n{res.stdout}{res.stderr}")
    return ApplyResult(ok=False, method="", log="\n".join(logs))


def scratch_copy(source: Path, commit: str, dest: Path) -> None:
    """A fresh work tree of `source` at `commit` in `dest` (a shared clone: nothing is written
    to `source`, objects are read through git's alternates)."""
    res = _run(
        # absolute: git runs in dest's parent, where a relative source names another folder
        [*GIT, "clone", "--quiet", "--shared", "--no-checkout", str(source.absolute()), str(dest)],
        dest.parent,
        timeout=600,
    )
    if res.returncode != 0:
        raise RuntimeError(f"git clone of {source} failed: {res.stderr.strip()}")
    res = _run([*GIT, "checkout", "--quiet", "--detach", commit], dest, timeout=600)
    if res.returncode != 0:
        raise RuntimeError(f"commit {commit} not found in {source}: {res.stderr.strip()}")


def has_commit(repo: Path, commit: str) -> bool:
    res = _run([*GIT, "cat-file", "-e", f"{commit}^{{commit}}"], repo)
    return res.returncode == 0


def touched_files(patch: str) -> list[str]:
    """Paths a unified diff creates or changes, from its `+++ ...` lines (`b/` dropped, deleted
    files and diffs without such lines, e.g. pure renames or mode changes, give none)."""
    paths: list[str] = []
    for line in patch.split("\n"):  # not splitlines: \x0c etc. are not line ends in a diff
        if line.startswith("+++ "):
            target = line[4:].split("\t")[0].strip()
            if target != "/dev/null":
                path = target[2:] if target.startswith("b/") else target
                if path not in paths:
                    paths.append(path)
    return paths
