"""Rows shipped with the pack, so the infilling benchmark and its local grader run offline.

`bundled/` holds a few rows in the dataset's schema cut from a real repository, `requests`
2.31.0 as published on PyPI (one of SWE-bench's repositories), and what it takes to grade them:

- `rows.jsonl`: each row's middle is the real body of one function, its prefix and suffix the
  rest of the released file;
- `psf__requests-2.31.0.tar.gz`: the files of the PyPI sdist that the graded tests import (the
  `requests` package and four files of its own test suite), unchanged;
- `manifest.json`: where they come from (the sdist's name, URL and sha256, each file's sha256)
  and the commits below.

`build_checkout(repos_dir)` turns the archive into `repos_dir/psf__requests`, the git checkout
the local grader needs: the release as one commit and, per row, a child commit where the row's
function body is `raise NotImplementedError`, the row's `base_commit`. The row's `patch` puts the
released body back; `FAIL_TO_PASS` are the tests of the row's test file that fail at the base and
pass at the release, `PASS_TO_PASS` those that pass at both (found by running them in the
engine's sandbox, see `build_bundled`). Fixed author, committer and dates make every commit hash
the same on every machine, and each is checked against the rows.

These rows are for the local grader only: their base commits exist in this checkout, not on
GitHub, so the SWE-bench harness cannot build them.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import tarfile
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from code_eval_taskpack.execution.caches.files import atomic_folder
from code_eval_taskpack.execution.repo_tests import checkout_dir
from code_eval_taskpack.utils.errors import DataError

FOLDER = Path(__file__).resolve().parent / "bundled"
ROWS = FOLDER / "rows.jsonl"
ARCHIVE = FOLDER / "psf__requests-2.31.0.tar.gz"
MANIFEST = FOLDER / "manifest.json"
REPO = "psf/requests"
RELEASE_MESSAGE = "requests 2.31.0 from PyPI (the files the bundled rows' tests need)"

_GIT_ENV = {
    "GIT_AUTHOR_NAME": "code-eval-taskpack",
    "GIT_AUTHOR_EMAIL": "bundled@code-eval-taskpack.invalid",
    "GIT_COMMITTER_NAME": "code-eval-taskpack",
    "GIT_COMMITTER_EMAIL": "bundled@code-eval-taskpack.invalid",
    "GIT_AUTHOR_DATE": "2023-05-22T00:00:00+00:00",
    "GIT_COMMITTER_DATE": "2023-05-22T00:00:00+00:00",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


def git(repo: Path, *args: str) -> str:
    """Run git in `repo` with the fixed identity and dates (reproducible hashes)."""
    done = subprocess.run(
        ["git", "-c", "init.defaultBranch=release", "-c", "core.autocrlf=false", *args],
        cwd=repo,
        env={**os.environ, **_GIT_ENV},
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} in {repo} failed: {done.stderr.strip()}")
    return done.stdout.strip()


def stub(middle: str) -> str:
    """The body a base commit has instead of `middle`: `raise NotImplementedError`, indented
    like the middle's first statement."""
    first = next((line for line in middle.split("\n") if line.strip()), "")
    indent = first[: len(first) - len(first.lstrip())]
    return f"{indent}raise NotImplementedError\n"


def base_text(row: Mapping[str, Any]) -> str:
    """The row's file at its base commit."""
    return str(row["prefix"]) + stub(str(row["middle"])) + str(row["suffix"])


def read_archive(archive: Path = ARCHIVE) -> dict[str, bytes]:
    """The archive's files by relative path (see `read_archive_bytes`)."""
    return read_archive_bytes(archive.read_bytes(), archive)


def read_archive_bytes(data: bytes, where: Path | str = "archive") -> dict[str, bytes]:
    """Files of a tar.gz by relative path; anything but plain files under relative paths
    without `..` is refused (the archive is data, never trusted to place files)."""
    files: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in tar.getmembers():
            path = PurePosixPath(member.name)
            if not member.isfile() or path.is_absolute() or ".." in path.parts:
                raise DataError(where, f"unexpected archive member {member.name!r}")
            handle = tar.extractfile(member)
            assert handle is not None  # a regular file
            files[str(path)] = handle.read()
    return files


def load_rows(path: Path = ROWS) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _commit_all(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--no-verify", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def make_repository(
    repo: Path, files: Mapping[str, bytes], rows: Sequence[Mapping[str, Any]]
) -> tuple[str, list[str]]:
    """Write `files` into the empty folder `repo` as the release commit and add one base commit
    per row (branch `base-<n>`, 1-based); returns (release hash, base hashes in row order)."""
    repo.mkdir(parents=True, exist_ok=True)
    for name, data in sorted(files.items()):
        target = repo / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    git(repo, "init", "-q")
    release = _commit_all(repo, RELEASE_MESSAGE)
    bases = []
    for number, row in enumerate(rows, start=1):
        git(repo, "checkout", "-q", "-b", f"base-{number}", release)
        (repo / str(row["file_path"])).write_bytes(base_text(row).encode("utf-8"))
        bases.append(_commit_all(repo, f"{row['instance_id']}: body removed"))
    git(repo, "checkout", "-q", "release")
    return release, bases


def build_checkout(
    repos_dir: Path, rows_path: Path = ROWS, archive: Path = ARCHIVE, manifest: Path = MANIFEST
) -> Path:
    """`repos_dir/psf__requests` for the bundled rows (built once; an existing one is checked).

    Every commit hash must equal the manifest's and the rows' `base_commit`: a mismatch means
    the bundled files were changed, and is an error naming the row."""
    rows = load_rows(rows_path)
    expected = json.loads(manifest.read_text(encoding="utf-8"))
    where = checkout_dir(Path(repos_dir), REPO)
    if not where.exists():

        def build(tmp: Path) -> None:
            release, bases = make_repository(tmp, read_archive(archive), rows)
            if release != expected["release_commit"]:
                raise DataError(
                    manifest, f"release commit {release} built, manifest says otherwise"
                )
            for number, (row, made) in enumerate(zip(rows, bases, strict=True), start=1):
                if made != row["base_commit"]:
                    raise DataError(
                        rows_path, f"base commit {made} built", row=number, field="base_commit"
                    )

        atomic_folder(where, build)
    for number, row in enumerate(rows, start=1):
        try:
            git(where, "cat-file", "-e", f"{row['base_commit']}^{{commit}}")
        except RuntimeError as exc:
            raise DataError(
                where, f"not the bundled checkout: {exc}", row=number, field="base_commit"
            ) from exc
    return where
