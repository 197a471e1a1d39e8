"""Shared test conventions.

`require(tool)` skips a test with a visible reason when a toolchain is missing on a laptop, and
fails it under REQUIRE_TOOLCHAINS=1 (set by CI), so CI never skips silently.
"""

from __future__ import annotations

import contextlib
import functools
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
    from code_eval_taskpack.execution.languages.registry import Runtime

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
    """The engine's runtime for `name`, skipping (laptop) or failing (CI) when it is unusable;
    skipped, saying so, when the run's backend (`--backend`) declares it does not hold the
    language (`not_held_by_backend`)."""
    from code_eval_taskpack.execution import resolve

    rt = resolve(name)
    require(rt.available, f"runtime {rt.name} ({name}) is unavailable: {rt.reason}")
    why = not_held_by_backend(rt.cluster)
    if why:
        pytest.skip(why)
    return rt


@functools.cache
def backend_clusters() -> frozenset[str] | None:
    """The language clusters the run's backend holds, when it declares them (a judge image
    of a subset: `clusters()`), else None (it holds what this host has)."""
    from code_eval_taskpack.execution.backends import default_backend_name, get_backend

    clusters = getattr(get_backend(default_backend_name()), "clusters", None)
    return clusters() if clusters is not None else None


def not_held_by_backend(cluster: str) -> str:
    """Why the run's backend does not judge `cluster` ("" when it does): its judge image holds
    other languages, by its build (CI: Makefile `CI_IMAGE_LANGS`); the case runs on the
    backends that hold it (the local one in every run), never silently: pytest reports it."""
    from code_eval_taskpack.execution.backends import default_backend_name

    held = backend_clusters()
    if held is None or cluster in held:
        return ""
    return (
        f"the {default_backend_name()} backend's judge image holds {', '.join(sorted(held))}, "
        f"not {cluster}: judged on the backends that hold it"
    )


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
        "'recording' is the tests' own delegating backend; 'podman' the container backend with "
        "rootful podman as its front-end)",
    )
    parser.addoption(
        "--comparator",
        default="default",
        choices=("default", "execeval"),
        help="comparison mode of the hostile suite's jobs (execeval: ExecEval-compatible, its "
        "comparator and its line-end rule)",
    )


#: what `--backend remote` and `--backend ray` started for the run (stopped at its end), and
#: the factory of the backend they judge with
_STARTED: list[contextlib.AbstractContextManager[Any]] = []
_RUN_FACTORIES: dict[str, Any] = {}


def pytest_configure(config: pytest.Config) -> None:
    from code_eval_taskpack.execution.backends import register_backend, set_default_backend
    from tests.recording_backend import register

    register()
    name = config.getoption("backend")
    if name in ("remote", "ray", "podman"):
        # they judge on servers, a cluster or podman's containers: the parity suite's own,
        # started for the run
        from tests.backend_params import BACKENDS

        started = BACKENDS[name]()
        backend = started.__enter__()
        _STARTED.append(started)
        name = backend.name  # podman's containers are the container backend's, by that name
        _RUN_FACTORIES[name] = lambda **_: backend
        register_backend(name, _RUN_FACTORIES[name], replace=True)
    set_default_backend(name)


def pytest_unconfigure(config: pytest.Config) -> None:
    from code_eval_taskpack.execution.backends import default_backend_name, get_backend

    # the run's backend stops what it started (the container backend: its warm containers)
    close = getattr(get_backend(default_backend_name()), "close", None)
    if close is not None and default_backend_name() == "container":
        close()
    while _STARTED:
        _STARTED.pop().__exit__(None, None, None)


@pytest.fixture(autouse=True)
def _remote_backends_end_with_their_test() -> Iterator[None]:
    """A remote backend made by name lives for the process (`get_backend`), and with it what its
    servers said they are; a test's servers listen on ports a later test's servers may get, so
    the backends made for them end with the test."""
    yield
    from code_eval_taskpack.execution.backends import BUILT_IN, register_backend

    register_backend("remote", _RUN_FACTORIES.get("remote", BUILT_IN["remote"]), replace=True)


@pytest.fixture(scope="session")
def backend_name(pytestconfig: pytest.Config) -> str:
    """The backend every `Engine()` of this run judges with (`--backend NAME`)."""
    return str(pytestconfig.getoption("backend"))
