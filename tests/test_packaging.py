"""The task folder must survive a non-editable install, and every YAML in it must be indexed."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import yaml

from tests.conftest import ROOT, TASKS_DIR


class _Loader(yaml.SafeLoader):
    """Reads lm-eval YAML without resolving `!function` tags."""


_Loader.add_multi_constructor("!", lambda loader, suffix, node: None)


def _declared_names() -> set[str]:
    names: set[str] = set()
    for path in TASKS_DIR.rglob("*.yaml"):
        doc = yaml.load(path.read_text(), Loader=_Loader) or {}
        for key in ("task", "group"):
            if isinstance(doc.get(key), str):
                names.add(doc[key])
    return names


def test_wheel_ships_task_files(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        check=True,
    )
    (wheel,) = tmp_path.glob("*.whl")
    shipped = set(zipfile.ZipFile(wheel).namelist())
    expected = {
        str(p.relative_to(ROOT))
        for p in TASKS_DIR.rglob("*")
        if (p.suffix in {".yaml", ".py", ".json", ".md"} or p.name.endswith("_yaml"))
        and "__pycache__" not in p.parts
    }
    assert expected, "no task files found"
    assert expected <= shipped, f"missing from the wheel: {sorted(expected - shipped)[:10]}"
    assert "execution/languages.toml" in shipped


def test_every_declared_task_and_group_is_indexed() -> None:
    from lm_eval.tasks import TaskManager

    declared = _declared_names()
    assert declared, "no tasks declared"
    indexed = set(TaskManager(include_path=str(TASKS_DIR), include_defaults=False).all_tasks)
    assert declared <= indexed, (
        f"declared but not indexed (broken YAML?): {sorted(declared - indexed)}"
    )
