"""Rebuild the bundled infilling rows (`bundled.py`) from the `requests` 2.31.0 sdist on PyPI.

    python -m lm_eval_tasks.code_infilling.build_bundled [--sdist FILE] [--out DIR] [--check]

Steps: download the sdist with pip (`pip download --no-deps --no-binary :all: requests==2.31.0`)
or take `--sdist`, check its sha256, keep the files the graded tests import (`SUBSET`) in a
normalised archive, cut each selected function (`SELECTION`) into prefix / body / suffix,
build the git checkout with one base commit per row (`bundled.build_checkout`'s layout), run
the row's test file in the engine's sandbox at the release and at the row's base, and write
`FAIL_TO_PASS` (fail at the base, pass at the release) and `PASS_TO_PASS` (pass at both).
A selected body that no test of its file needs is an error. `--check` rebuilds into a temporary
folder and compares with the committed files (exit 1 on any difference).
"""

from __future__ import annotations

import argparse
import ast
import gzip
import hashlib
import io
import json
import shlex
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from code_eval_taskpack.execution.repo_tests.in_sandbox import run_tests
from code_eval_taskpack.execution.repo_tests.local import DEFAULT_TEST_CMD
from code_eval_taskpack.execution.repo_tests.log_parsers import PASSING
from code_eval_taskpack.execution.repo_tests.patching import file_diff, scratch_copy
from code_eval_taskpack.execution.repo_tests.signed_report import ReportChannel, verify
from lm_eval_tasks.code_infilling import bundled

PACKAGE, VERSION = "requests", "2.31.0"
SDIST = f"{PACKAGE}-{VERSION}.tar.gz"
SDIST_URL = f"https://pypi.org/project/{PACKAGE}/{VERSION}/#files"
SDIST_SHA256 = "942c5a758f98d790eaed1a29cb6eefc7ffb0d1cf7af05c3d2791656dbd6ad1e1"
#: the package, the test files of the rows and what they import, the pytest configuration
SUBSET_PREFIXES = ("requests/",)
SUBSET_FILES = (
    "LICENSE",
    "NOTICE",
    "pyproject.toml",
    "tests/__init__.py",
    "tests/compat.py",
    "tests/conftest.py",
    "tests/utils.py",
    "tests/test_hooks.py",
    "tests/test_structures.py",
    "tests/test_utils.py",
)


@dataclass(frozen=True)
class Pick:
    """A function whose body becomes a row's middle, and the test file that covers it."""

    file_path: str
    function: str  # qualified: `name` or `Class.name`
    test_file: str


SELECTION = (
    Pick("requests/hooks.py", "dispatch_hook", "tests/test_hooks.py"),
    Pick("requests/structures.py", "CaseInsensitiveDict.__eq__", "tests/test_structures.py"),
    Pick("requests/utils.py", "guess_json_utf", "tests/test_utils.py"),
    Pick("requests/utils.py", "unquote_unreserved", "tests/test_utils.py"),
)

#: runs a test file in a work tree and returns every test's status
TestRunner = Callable[[Path, str], dict[str, str]]


def fetch_sdist(folder: Path) -> Path:
    """The sdist downloaded from PyPI by pip into `folder`, its sha256 checked."""
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
         "--no-binary", ":all:", f"{PACKAGE}=={VERSION}", "-d", str(folder)],
        check=True,
    )  # fmt: skip
    return folder / SDIST


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def subset(sdist: Path) -> dict[str, bytes]:
    """The kept files of the sdist by path inside the project (sha256 of the sdist checked)."""
    digest = sha256(sdist.read_bytes())
    if digest != SDIST_SHA256:
        raise ValueError(f"{sdist}: sha256 {digest}, expected {SDIST_SHA256} (PyPI's file)")
    top = f"{PACKAGE}-{VERSION}/"
    files: dict[str, bytes] = {}
    with tarfile.open(sdist, "r:gz") as tar:
        for member in tar.getmembers():
            name = member.name.removeprefix(top)
            keep = name in SUBSET_FILES or (
                name.startswith(SUBSET_PREFIXES) and name.endswith(".py") and "/" not in
                name.removeprefix(SUBSET_PREFIXES[0])
            )  # fmt: skip
            if member.isfile() and keep:
                handle = tar.extractfile(member)
                assert handle is not None
                files[name] = handle.read()
    missing = [f for f in SUBSET_FILES if f not in files]
    if missing:
        raise ValueError(f"{sdist}: missing {missing}")
    return files


def archive_bytes(files: Mapping[str, bytes]) -> bytes:
    """A tar.gz of `files` that depends on nothing but their names and contents."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(files):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(files[name]), 0o644, 0
            tar.addfile(info, io.BytesIO(files[name]))
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=9, mtime=0) as gz:
        gz.write(raw.getvalue())
    return out.getvalue()


def split_function(text: str, function: str, where: str) -> tuple[str, str, str]:
    """(prefix, body, suffix) of `function` in the source `text`: the body is every line after
    the signature and docstring to the function's last line."""
    node: ast.AST = ast.parse(text)
    for part in function.split("."):
        found = [
            n for n in ast.iter_child_nodes(node)
            if isinstance(n, ast.FunctionDef | ast.ClassDef) and n.name == part
        ]  # fmt: skip
        if len(found) != 1:
            raise ValueError(f"{where}: {function} not found once")
        node = found[0]
    assert isinstance(node, ast.FunctionDef) and node.end_lineno is not None
    body = node.body
    has_doc = (
        isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    )
    start = (body[0].end_lineno or 0) + 1 if has_doc else body[0].lineno
    lines = text.split("\n")
    keep = [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])
    prefix = "".join(keep[: start - 1])
    middle = "".join(keep[start - 1 : node.end_lineno])
    suffix = "".join(keep[node.end_lineno :])
    if middle.count("\n") < 2:
        raise ValueError(f"{where}: the body of {function} has fewer than two lines")
    return prefix, middle, suffix


def sandbox_statuses(work: Path, test_file: str) -> dict[str, str]:
    """Every test's status when `test_file` runs in the sandbox in `work`, from the grader's
    signed report (the same command and plugin as the local grader). Tests whose id holds the
    work tree's path (parametrised by `__file__`) are left out: their id differs in every
    scratch copy, so no grader could ever find them."""
    with tempfile.TemporaryDirectory(prefix="bundled-report-") as tmp:
        channel = ReportChannel.create(Path(tmp))
        argv = [*shlex.split(DEFAULT_TEST_CMD), *channel.args, test_file]
        ran = run_tests(argv, cwd=work, extra_writable=[channel.directory], extra_env=channel.env)
        report = verify(
            ran.stdout, channel.key, ran.exit_code, plugin_loaded=channel.plugin_loaded()
        )
        if not report.trusted:
            tail = (ran.stdout + ran.stderr).decode("utf-8", "replace")[-2000:]
            raise RuntimeError(
                f"{test_file} in {work}: no trusted report ({report.problem})\n{tail}"
            )
        return {t: s for t, s in report.statuses.items() if str(work) not in t}


def build_rows(
    files: Mapping[str, bytes],
    repos_dir: Path,
    run: TestRunner = sandbox_statuses,
    picks: Sequence[Pick] = SELECTION,
) -> tuple[list[dict[str, Any]], str]:
    """The rows of `picks` cut from `files`, with the checkout built in `repos_dir`; returns
    (rows, release commit). A row depends only on its own pick (its base commit is a child of
    the release), so any part of `SELECTION` gives the same rows as the whole."""
    rows: list[dict[str, Any]] = []
    for pick in picks:
        text = files[pick.file_path].decode("utf-8")
        prefix, middle, suffix = split_function(text, pick.function, pick.file_path)
        instance = f"psf__requests-{VERSION}-{pick.function}"
        rows.append({
            "repo": bundled.REPO,
            "instance_id": instance,
            "base_commit": "",
            "file_path": pick.file_path,
            "prefix": prefix,
            "suffix": suffix,
            "middle": middle,
            "context": [],
            "patch": file_diff(pick.file_path, bundled.base_text(
                {"prefix": prefix, "middle": middle, "suffix": suffix}), text),
            "test_patch": "",
            "problem_statement": (
                f"The body of `{pick.function}` in {pick.file_path} of requests {VERSION} "
                "(the released file, the body removed); tests: " + pick.test_file
            ),
            "hints_text": "",
            "created_at": "",
            "version": VERSION.rsplit(".", 1)[0],
            "environment_setup_commit": "",
            "FAIL_TO_PASS": "",
            "PASS_TO_PASS": "",
        })  # fmt: skip
    repo = repos_dir / bundled.REPO.replace("/", "__")
    release, bases = bundled.make_repository(repo, files, rows)
    at_release: dict[str, dict[str, str]] = {}
    for pick, row, base in zip(picks, rows, bases, strict=True):
        row["base_commit"] = base
        if pick.test_file not in at_release:
            at_release[pick.test_file] = _statuses_at(repo, release, pick.test_file, run)
        before = _statuses_at(repo, base, pick.test_file, run)
        after = at_release[pick.test_file]
        good = sorted(t for t, s in after.items() if s in PASSING)
        f2p = [t for t in good if before.get(t) not in PASSING]
        p2p = [t for t in good if before.get(t) in PASSING]
        if not f2p:
            raise ValueError(f"{row['instance_id']}: no test of {pick.test_file} needs the body")
        row["FAIL_TO_PASS"], row["PASS_TO_PASS"] = json.dumps(f2p), json.dumps(p2p)
    return rows, release


def _statuses_at(repo: Path, commit: str, test_file: str, run: TestRunner) -> dict[str, str]:
    with tempfile.TemporaryDirectory(prefix="bundled-work-") as tmp:
        work = Path(tmp) / "repo"
        scratch_copy(repo, commit, work)
        return run(work, test_file)


def rendered(
    files: Mapping[str, bytes], rows: Sequence[Mapping[str, Any]], release: str, sdist_sha: str
) -> dict[str, bytes]:
    """The bundled folder's files by name."""
    manifest = {
        "source": {"package": PACKAGE, "version": VERSION, "sdist": SDIST, "url": SDIST_URL,
                   "sha256": sdist_sha},
        "rebuild": "python -m lm_eval_tasks.code_infilling.build_bundled",
        "files": {name: sha256(data) for name, data in sorted(files.items())},
        "release_commit": release,
        "rows": [
            {"instance_id": r["instance_id"], "file_path": r["file_path"],
             "base_commit": r["base_commit"]}
            for r in rows
        ],
    }  # fmt: skip
    return {
        bundled.ARCHIVE.name: archive_bytes(files),
        bundled.MANIFEST.name: (json.dumps(manifest, indent=2) + "\n").encode(),
        bundled.ROWS.name: "".join(
            json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows
        ).encode("utf-8"),
    }


def build(sdist: Path, run: TestRunner = sandbox_statuses) -> dict[str, bytes]:
    files = subset(sdist)
    with tempfile.TemporaryDirectory(prefix="bundled-repos-") as tmp:
        rows, release = build_rows(files, Path(tmp), run)
    return rendered(files, rows, release, SDIST_SHA256)


def differences(made: Mapping[str, bytes], folder: Path) -> list[str]:
    """Names of the files of `made` that differ from `folder`'s (the archive by its members,
    since gzip's bytes may differ between zlib versions)."""
    out = []
    for name, data in made.items():
        path = folder / name
        if not path.is_file():
            out.append(f"{name}: missing")
        elif name == bundled.ARCHIVE.name:
            if bundled.read_archive(path) != bundled.read_archive_bytes(data):
                out.append(f"{name}: other files")
        elif path.read_bytes() != data:
            out.append(f"{name}: differs")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lm_eval_tasks.code_infilling.build_bundled",
        description="Rebuild the bundled infilling rows from the requests sdist on PyPI.",
    )
    parser.add_argument("--sdist", type=Path, help=f"a local {SDIST} (default: pip download)")
    parser.add_argument("--out", type=Path, default=bundled.FOLDER, help="folder to write")
    parser.add_argument(
        "--check", action="store_true", help="compare with the folder instead of writing"
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bundled-sdist-") as tmp:
        made = build(args.sdist or fetch_sdist(Path(tmp)))
    if args.check:
        diff = differences(made, args.out)
        for line in diff:
            print(line, file=sys.stderr)
        print("bundled rows up to date" if not diff else "bundled rows differ", file=sys.stderr)
        return 1 if diff else 0
    args.out.mkdir(parents=True, exist_ok=True)
    for name, data in made.items():
        (args.out / name).write_bytes(data)
    print(f"wrote {', '.join(sorted(made))} to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
