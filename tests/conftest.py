"""Shared test conventions.

`require(tool)` skips a test with a visible reason when a toolchain is missing on a laptop, and
fails it under REQUIRE_TOOLCHAINS=1 (set by CI), so CI never skips silently.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"
TASKS_DIR = ROOT / "lm_eval_tasks"

sys.path.insert(0, str(ROOT))


def toolchains_required() -> bool:
    return os.environ.get("REQUIRE_TOOLCHAINS", "") not in ("", "0")


def require(condition: bool, reason: str) -> None:
    """Skip (laptop) or fail (REQUIRE_TOOLCHAINS=1) when `condition` is false."""
    if condition:
        return
    if toolchains_required():
        pytest.fail(f"REQUIRE_TOOLCHAINS=1 but {reason}")
    pytest.skip(reason)  # laptop only: under REQUIRE_TOOLCHAINS=1 the line above fails instead


def require_binary(name: str) -> str:
    path = shutil.which(name)
    require(path is not None, f"toolchain {name!r} is not installed (run `make toolchains`)")
    assert path is not None
    return path


@pytest.fixture
def shared_data() -> Path:
    require(SHARED_DATA.is_dir(), f"shared data folder {SHARED_DATA} is missing")
    return SHARED_DATA
