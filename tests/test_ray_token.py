"""The token of a Ray cluster the backend starts itself is this user's alone, or there is no
cluster: made 600 in a folder of 700 before Ray runs, removed when the backend closes, and a
folder or file that cannot be made so stops the start (no cluster whose token others can read).
The cluster started with it: `tests/test_engine_ray.py`."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path
from typing import Any

import pytest

from code_eval_taskpack.execution.auth import TokenError
from code_eval_taskpack.execution.backends.ray import auth as ray_auth
from code_eval_taskpack.execution.backends.ray.auth import TOKEN_PATH_ENV, TokenEnvironment
from code_eval_taskpack.execution.isolation import SandboxError


@pytest.fixture(autouse=True)
def _no_ray_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in (ray_auth.MODE_ENV, ray_auth.TOKEN_ENV, TOKEN_PATH_ENV):
        monkeypatch.delenv(key, raising=False)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_a_started_cluster_gets_a_private_token_removed_on_restore() -> None:
    env = TokenEnvironment(starts_cluster=True)
    os.umask(old := os.umask(0o000))  # the most permissive umask: the modes must not follow it
    try:
        env.apply()
    finally:
        os.umask(old)
    path = Path(os.environ[TOKEN_PATH_ENV])
    try:
        assert (_mode(path), _mode(path.parent)) == (0o600, 0o700)
        assert len(path.read_text()) == 64
    finally:
        env.restore()
    assert TOKEN_PATH_ENV not in os.environ and not path.parent.exists()


def test_a_joined_cluster_gets_no_token_made_here() -> None:
    env = TokenEnvironment(starts_cluster=False)
    env.apply()
    try:
        assert TOKEN_PATH_ENV not in os.environ  # the nodes' own token, from Ray's sources
    finally:
        env.restore()


def _shared_folder(tmp_path: Path) -> Any:
    def mkdtemp(prefix: str = "") -> str:
        folder = tmp_path / f"{prefix}shared"
        folder.mkdir(mode=0o755)
        folder.chmod(0o755)
        return str(folder)

    return mkdtemp


def test_a_folder_others_can_enter_stops_the_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "mkdtemp", _shared_folder(tmp_path))
    with pytest.raises(TokenError, match="not this user's alone"):
        TokenEnvironment(starts_cluster=True).apply()
    assert TOKEN_PATH_ENV not in os.environ and list(tmp_path.iterdir()) == []


def test_the_backend_starts_no_cluster_without_a_private_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ray = pytest.importorskip("ray")
    from code_eval_taskpack.execution.backends.ray.cluster import RayBackend

    def init(**kwargs: Any) -> None:
        raise AssertionError("Ray started with a token others could read")

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", init)
    monkeypatch.setattr(tempfile, "mkdtemp", _shared_folder(tmp_path))
    with pytest.raises(SandboxError, match="Ray token authentication"):
        RayBackend(num_cpus="1").nodes()
    assert ray_auth.MODE_ENV not in os.environ
