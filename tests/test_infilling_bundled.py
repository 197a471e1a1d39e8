"""The infilling rows shipped with the pack (`lm_eval_tasks/code_infilling/bundled.py`): real
function bodies of requests 2.31.0 from PyPI, in the dataset's schema, graded offline by the
local grader (real pytest of the real repository in the sandbox)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from code_eval_taskpack.execution.repo_tests.patching import apply_patch, scratch_copy
from code_eval_taskpack.utils.errors import DataError
from lm_eval_tasks.code_infilling import build_bundled, bundled, data, oracle
from lm_eval_tasks.code_infilling.grading import GradingSettings, grade

# dispatch_hook with the hook's return value ignored: plausible, still valid code, and wrong
WRONG_DISPATCH = (
    "    hooks = hooks or {}\n"
    "    hooks = hooks.get(key)\n"
    "    if hooks:\n"
    '        if hasattr(hooks, "__call__"):\n'
    "            hooks = [hooks]\n"
    "        for hook in hooks:\n"
    "            hook(hook_data, **kwargs)\n"
    "    return hook_data\n"
)


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repos = tmp_path_factory.mktemp("bundled_repos")
    bundled.build_checkout(repos)
    return repos


def test_bundled_rows_validate_and_are_the_released_files() -> None:
    rows = data.load_rows(bundled.ROWS)  # the benchmark's own schema checks
    raw = bundled.load_rows()
    files = bundled.read_archive()
    manifest = json.loads(bundled.MANIFEST.read_text())
    assert len(rows) == len(build_bundled.SELECTION) == 4
    assert manifest["source"]["sha256"] == build_bundled.SDIST_SHA256
    assert {n: hashlib.sha256(d).hexdigest() for n, d in files.items()} == manifest["files"]
    for row, pick in zip(raw, build_bundled.SELECTION, strict=True):
        released = files[row["file_path"]].decode()
        assert row["prefix"] + row["middle"] + row["suffix"] == released
        assert row["file_path"] == pick.file_path and row["middle"].count("\n") >= 2
        assert json.loads(row["FAIL_TO_PASS"]) and json.loads(row["PASS_TO_PASS"]) is not None
    size = sum(p.stat().st_size for p in bundled.FOLDER.iterdir())
    assert size < 300_000, size


def test_checkout_is_reproducible_and_patches_restore_the_release(checkout: Path) -> None:
    repo = checkout / "psf__requests"
    manifest = json.loads(bundled.MANIFEST.read_text())
    assert bundled.git(repo, "rev-parse", "release") == manifest["release_commit"]
    for row in bundled.load_rows():
        work = checkout.parent / f"work-{row['base_commit'][:8]}"
        scratch_copy(repo, row["base_commit"], work)
        assert (work / row["file_path"]).read_text() == bundled.base_text(row)
        assert apply_patch(work, row["patch"]).ok
        assert (work / row["file_path"]).read_text() == row["prefix"] + row["middle"] + row[
            "suffix"
        ]
    # a checkout that is not the bundled one is refused, naming the row
    other = checkout.parent / "other"
    (other / "psf__requests").mkdir(parents=True)
    bundled.git(other / "psf__requests", "init", "-q")
    with pytest.raises(DataError, match=r"row 1.*base_commit"):
        bundled.build_checkout(other)


def test_gold_resolves_and_wrong_middles_fail_with_the_local_grader(
    checkout: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    row = data.load_rows(bundled.ROWS)[0]
    assert row["instance_id"].endswith("dispatch_hook")
    row["grading"] = GradingSettings(grader="local", repos_dir=str(checkout)).to_json()
    gold, wrong = grade([row] * 2, [row["middle"], WRONG_DISPATCH])
    assert gold["resolved"] and not gold["error"], gold["log_tail"]
    assert gold["fail_to_pass_passed"] == gold["fail_to_pass_total"] == 2
    assert gold["model_patch"] == row["patch"]
    assert wrong["patch_applied"] and not wrong["resolved"] and not wrong["error"]
    assert wrong["fail_to_pass_passed"] < wrong["fail_to_pass_total"]
    # the oracle command on the bundled rows: gold resolves, the do-nothing control does not;
    # `--repos-dir` relative to the working directory, as `make demo` passes it
    out = tmp_path / "oracle.jsonl"
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    relative = os.path.relpath(checkout, tmp_path / "work")
    argv = ["--bundled", "--control", "--repos-dir", relative, "--limit", "1"]
    assert oracle.main([*argv, "--output", str(out)]) == 0
    err = capsys.readouterr().err
    assert "1/1 gold middles resolved" in err and "1/1 do-nothing middles rejected" in err
    gold_run, control = (json.loads(line) for line in out.read_text().splitlines())
    assert gold_run["resolved"] and not gold_run["control"] and control["control"]
    assert not control["resolved"] and not control["error"] and control["patch_applied"]


def test_rebuild_from_the_archive_reproduces_the_committed_rows(tmp_path: Path) -> None:
    """The offline part of the rebuild script (everything after the download), for the
    cheapest pick: its tests really run in the sandbox at the release and at its base."""
    picks = build_bundled.SELECTION[:1]
    rows, release = build_bundled.build_rows(bundled.read_archive(), tmp_path, picks=picks)
    committed = bundled.load_rows()[: len(picks)]
    assert release == json.loads(bundled.MANIFEST.read_text())["release_commit"]
    assert json.loads(json.dumps(rows)) == committed
    # written back, every committed file is byte for byte what the script writes
    made = build_bundled.rendered(
        bundled.read_archive(), bundled.load_rows(), release, build_bundled.SDIST_SHA256
    )
    assert build_bundled.differences(made, bundled.FOLDER) == []
