"""Shared test conventions.

`require(tool)` skips a test with a visible reason when a toolchain is missing on a laptop, and
fails it under REQUIRE_TOOLCHAINS=1 (set by CI), so CI never skips silently.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import pytest
from hypothesis import HealthCheck, settings

# Fuzz tests run a fixed, derandomised set of examples by default (and always in CI), so the
# suite is fast and repeatable; HYPOTHESIS_PROFILE=dev explores more, with fresh randomness.
settings.register_profile(
    "ci",
    max_examples=100,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=1000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

if TYPE_CHECKING:
    from code_eval_taskpack.execution.languages import Runtime

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


def write_jsonl(path: Path, rows: Iterable[Any]) -> Path:
    """Write `rows` as JSON Lines (one object per line, newline-terminated); return `path`."""
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.fixture
def shared_data() -> Path:
    require(SHARED_DATA.is_dir(), f"shared data folder {SHARED_DATA} is missing")
    return SHARED_DATA


def require_runtime(name: str) -> Runtime:
    """The engine's runtime for `name`, skipping (laptop) or failing (CI) when it is unusable."""
    from code_eval_taskpack.execution import resolve

    rt = resolve(name)
    require(rt.available, f"runtime {rt.name} ({name}) is unavailable: {rt.reason}")
    return rt


def load_yaml(path: Path) -> Any:
    """An lm-eval task YAML file as plain data, its `!function`-style tags read as None."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("!", lambda loader, suffix, node: None)
    return yaml.load(path.read_text(encoding="utf-8"), Loader=Loader)


class HubCall(NamedTuple):
    repo_id: str
    filename: str
    revision: str | None


def serve_hub(monkeypatch: pytest.MonkeyPatch, root: Path | None) -> list[HubCall]:
    """Replace the Hub download seam: serve `root/filename` (FileNotFoundError if absent), or
    fail every download as offline when `root` is None. Returns the live list of calls made."""
    from code_eval_taskpack.utils import download

    calls: list[HubCall] = []

    def fake_fetch(repo_id: str, filename: str, revision: str | None = None) -> Path:
        calls.append(HubCall(repo_id, filename, revision))
        if root is None:
            raise OSError("offline: tests never reach the Hub")
        path = root / filename
        if not path.is_file():
            raise FileNotFoundError(filename)
        return path

    monkeypatch.setattr(download, "fetch_hub_file", fake_fetch)
    return calls


@pytest.fixture
def repos(tmp_path: Path) -> Path:
    """A folder holding the infilling fixture's git repository (see tests/infilling_support.py)."""
    from tests.infilling_support import build_repos

    require_binary("git")
    build_repos(tmp_path / "repos")
    return tmp_path / "repos"


# -- backends ---------------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--backend",
        default="local",
        help="engine backend the engine suites judge with (registered name; default local; "
        "'recording' is the tests' own delegating backend)",
    )


def pytest_configure(config: pytest.Config) -> None:
    from code_eval_taskpack.execution.backends import set_default_backend
    from tests.recording_backend import register

    register()
    set_default_backend(config.getoption("backend"))


@pytest.fixture(autouse=True)
def _remote_backends_end_with_their_test() -> Iterator[None]:
    """A remote backend made by name lives for the process (`get_backend`), and with it what its
    servers said they are; a test's servers listen on ports a later test's servers may get, so
    the backends made for them end with the test."""
    yield
    from code_eval_taskpack.execution.backends import BUILT_IN, register_backend

    register_backend("remote", BUILT_IN["remote"], replace=True)


@pytest.fixture(scope="session")
def backend_name(pytestconfig: pytest.Config) -> str:
    """The backend every `Engine()` of this run judges with (`--backend NAME`)."""
    return str(pytestconfig.getoption("backend"))
