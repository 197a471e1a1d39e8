"""The one cache folder and how files get into it: every cache of the engine (results, compiled
programs, the launcher and zygotes, headers, preludes, archives) lives below `cache_root(config)`, and
is written whole or not at all (`atomic_write`, `atomic_folder`), so a reader never sees half a
file and two writers racing both end with a whole one."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from ..config import EngineConfig, or_env


def cache_root(config: EngineConfig | None = None) -> Path:
    """The project's one cache directory: the configuration's `cache` (None: `$CODE_EVAL_CACHE`
    now), else `~/.cache/code_eval_taskpack`.

    Everything cached lives below it: results (`exec/`), the sandbox launcher (`launcher/`),
    downloads (`urls/`). Always absolute (a relative `$CODE_EVAL_CACHE` is taken from the
    current directory here, once): its paths are handed to sandboxes, whose working directory is
    their own."""
    chosen = or_env(config).cache
    base = str(chosen) if chosen is not None else str(Path.home() / ".cache" / "code_eval_taskpack")
    with _roots_lock:  # once per value: a later chdir of the process does not move the cache
        return _roots.setdefault(base, absolute(base))


_roots: dict[str, Path] = {}
_roots_lock = threading.Lock()


def absolute(path: str | os.PathLike[str]) -> Path:
    """A configured path as an absolute one (`~` expanded, relative to the current directory):
    what the engine hands a sandbox or a compiler must not depend on their working directory."""
    return Path(os.path.abspath(Path(path).expanduser()))


def default_cache_dir(config: EngineConfig | None = None) -> Path:
    """Where judged results are cached: `<cache_root>/exec`."""
    return cache_root(config) / "exec"


def atomic_write(path: Path, data: bytes) -> None:
    """Write `data` to `path` via a temporary file + os.replace: a reader (or a process killed
    mid-write) sees the old file or the whole new one, never a torn one. Raises OSError."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def atomic_folder(path: Path, build: Callable[[Path], None]) -> None:
    """Make the folder `path` by `build(tmp)` in a temporary sibling, made readable by every uid
    (a sandbox's own reads it) and renamed into place: a reader sees no folder or the whole one.
    When another process renamed its own first, that one stays. Whatever `build` raises is
    raised, with the temporary folder removed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}-", dir=path.parent))
    try:
        build(tmp)
        for folder, _, files in os.walk(tmp):
            os.chmod(folder, 0o755)
            for name in files:
                os.chmod(os.path.join(folder, name), 0o644)
        with contextlib.suppress(OSError):  # another process won the race
            tmp.rename(path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
