"""The task folder must survive a non-editable install, and every YAML in it must be indexed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT, SHARED_DATA, TASKS_DIR, load_yaml, require, require_binary


def _declared_names() -> set[str]:
    names: set[str] = set()
    for path in TASKS_DIR.rglob("*.yaml"):
        doc = load_yaml(path) or {}
        for key in ("task", "group"):
            if isinstance(doc.get(key), str):
                names.add(doc[key])
    return names


def _shipped_by_git() -> list[str]:
    out = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return [line for line in out.stdout.splitlines() if (ROOT / line).is_file()]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel built from a clean copy of the tracked tree (no stale build/ can leak in)."""
    require_binary("git")
    src = tmp_path_factory.mktemp("src")
    for rel in _shipped_by_git():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, src / rel)
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            *(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"),
            *("-w", str(out), str(src)),
        ],
        check=True,
    )
    (built,) = out.glob("*.whl")
    return built


def test_wheel_ships_task_files(wheel: Path) -> None:
    shipped = set(zipfile.ZipFile(wheel).namelist())
    expected = {
        str(p.relative_to(ROOT))
        for p in TASKS_DIR.rglob("*")
        if (p.suffix in {".yaml", ".py", ".json", ".md"} or p.name.endswith("_yaml"))
        and "__pycache__" not in p.parts
    }
    assert expected, "no task files found"
    assert expected <= shipped, f"missing from the wheel: {sorted(expected - shipped)[:10]}"
    assert {
        "code_eval_taskpack/execution/languages/languages.toml",
        "code_eval_taskpack/execution/sandbox/launcher.c",
        "code_eval_taskpack/execution/speedups/java/CompileServer.java",
        "code_eval_taskpack/execution/speedups/zygotes/zygote_protocol.h",
        "code_eval_taskpack/execution/speedups/mono/CompileServer.cs",
        "code_eval_taskpack/utils/languages.toml",
    } <= shipped
    # the generic folder names are never top-level import names of the installed pack
    assert not any(name.startswith(("execution/", "utils/")) for name in shipped)


def test_tasks_load_from_a_non_editable_install(wheel: Path, tmp_path: Path) -> None:
    """Install the wheel into a bare folder and load a real task from the installed copy, from a
    working directory whose own `utils.py` and `execution.py` would shadow generic names."""
    require(SHARED_DATA.is_dir(), f"shared data folder {SHARED_DATA} is missing")
    target = tmp_path / "site"
    subprocess.run(
        [
            *(sys.executable, "-m", "pip", "install", "--no-deps", "-q"),
            *("--target", str(target), str(wheel)),
        ],
        check=True,
    )
    probe = textwrap.dedent(
        f"""
        import json, lm_eval_tasks
        import code_eval_taskpack.execution, code_eval_taskpack.utils
        from lm_eval.tasks import TaskManager, get_task_dict
        meta = {{"clozetest_data_dir": {str(SHARED_DATA / "codexglue_clozetest_maxmin")!r},
                 "clozetest_predict_only": True}}
        tm = TaskManager(include_path=str(lm_eval_tasks.PATH), include_defaults=False, metadata=meta)
        task = get_task_dict(["clozetest_maxmin_ruby"], tm)["clozetest_maxmin_ruby"]
        print(json.dumps({{"path": str(lm_eval_tasks.PATH), "docs": len(list(task.test_docs())),
                          "engine": code_eval_taskpack.execution.__file__,
                          "utils": code_eval_taskpack.utils.__file__}}))
        """
    )
    env = {**os.environ, "PYTHONPATH": str(target)}
    # research code often has its own utils.py: it sits first on sys.path and must not matter
    for name in ("utils.py", "execution.py"):
        (tmp_path / name).write_text("raise SystemExit('the user module was imported')\n")
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["path"].startswith(str(target)), report
    assert report["engine"].startswith(str(target)) and report["utils"].startswith(str(target))
    assert report["docs"] == 38


def test_every_declared_task_and_group_is_indexed() -> None:
    from lm_eval.tasks import TaskManager

    declared = _declared_names()
    assert declared, "no tasks declared"
    indexed = set(TaskManager(include_path=str(TASKS_DIR), include_defaults=False).all_tasks)
    assert declared <= indexed, (
        f"declared but not indexed (broken YAML?): {sorted(declared - indexed)}"
    )


def test_setup_cfg_lists_every_package() -> None:
    """`packages` in setup.cfg is explicit (the folders map onto other import names): every
    folder with an __init__.py must be listed, or the wheel silently lacks it."""
    import configparser

    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    listed = set(cfg["options"]["packages"].split())
    mapping = dict(line.split(" = ") for line in cfg["options"]["package_dir"].strip().splitlines())
    expected = set()
    for init in ROOT.glob("**/__init__.py"):
        rel = init.parent.relative_to(ROOT)
        if rel.parts[0] not in ("execution", "utils", "lm_eval_tasks"):
            continue
        name = ".".join(rel.parts)
        for package, folder in mapping.items():
            if rel.parts[0] == folder:
                name = ".".join((package, *rel.parts[1:]))
        expected.add(name)
    assert listed == expected, (sorted(expected - listed), sorted(listed - expected))
