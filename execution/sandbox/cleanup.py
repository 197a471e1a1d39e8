"""Cleanup of what engines killed with SIGKILL left behind: their work dirs and cgroups, removed
once per process by the first sandbox."""

from __future__ import annotations

import logging
import os
import tempfile
import threading
from pathlib import Path

from . import cgroups
from .fstree import remove_tree

log = logging.getLogger(__name__)

_cleanup_lock = threading.Lock()


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_cleaned = False


def cleanup_stale_once() -> None:
    """Remove work dirs and cgroups left behind by engines that were killed (SIGKILL).

    Best-effort: what cannot be removed is logged and left; it never stops this engine."""
    global _cleaned
    with _cleanup_lock:
        if _cleaned:
            return
        _cleaned = True
    try:
        stale = list(Path(tempfile.gettempdir()).glob("code-exec-*-*"))
    except OSError as exc:
        log.warning("stale sandbox cleanup: cannot list %s: %s", tempfile.gettempdir(), exc)
        stale = []
    for d in stale:
        pid = d.name.split("-")[2]
        if pid.isdigit() and int(pid) != os.getpid() and not _pid_alive(int(pid)):
            try:
                failed = remove_tree(d)
            except Exception as exc:  # a hostile tree must never stop the engine
                failed = [f"{d}: {exc!r}"]
            if failed:
                log.warning(
                    "stale sandbox cleanup: could not remove %d entr%s of %s, left in place: %s",
                    len(failed),
                    "y" if len(failed) == 1 else "ies",
                    d,
                    "; ".join(failed[:5]),
                )
    try:
        cgroups.cleanup_stale(_pid_alive)
    except Exception as exc:
        log.warning("stale cgroup cleanup failed, left in place: %r", exc)
