"""A second backend defined only in the tests: it runs every command through the local sandbox
and records each call, proving a backend can be added without touching the runner or engine."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from code_eval_taskpack.execution.backends import (
    LocalBackend,
    Session,
    SessionBackend,
    register_backend,
)
from code_eval_taskpack.execution.limits import Limits
from code_eval_taskpack.execution.sandbox.outcome import CommandOutcome


@dataclass
class Calls:
    """What the recording backend saw, per kind of call."""

    opened: list[tuple[str, ...]] = field(default_factory=list)  # file names per session
    runs: list[tuple[str | None, tuple[str, ...]]] = field(default_factory=list)  # purpose, argv
    closed: int = 0


class RecordingSession:
    def __init__(self, inner: Session, calls: Calls, lock: threading.Lock) -> None:
        self._inner = inner
        self._calls = calls
        self._lock = lock
        self.workdir = inner.workdir

    def run(
        self,
        argv: Sequence[str],
        *,
        limits: Limits,
        stdin: bytes = b"",
        env: Mapping[str, str] | None = None,
        purpose: str | None = None,
        output_head: int | None = None,
        warm: bool = False,
    ) -> CommandOutcome:
        with self._lock:
            self._calls.runs.append((purpose, tuple(argv)))
        return self._inner.run(
            argv,
            limits=limits,
            stdin=stdin,
            env=env,
            purpose=purpose,
            output_head=output_head,
            warm=warm,
        )

    def start_warm(
        self,
        argv: Sequence[str],
        *,
        executable: str,
        limits: Limits,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        purpose: str | None = None,
    ) -> bool:
        return self._inner.start_warm(
            argv, executable=executable, limits=limits, env=env, cwd=cwd, purpose=purpose
        )

    def isolation_snapshot(self) -> dict[str, Any]:
        return self._inner.isolation_snapshot()

    def close(self) -> None:
        with self._lock:
            self._calls.closed += 1
        self._inner.close()


class RecordingBackend(SessionBackend):
    """Delegates to the local backend; its results and cache keys carry its own name."""

    name = "recording"
    required_layers = LocalBackend.required_layers

    def __init__(self) -> None:
        self.local = LocalBackend()
        self.calls = Calls()
        self._lock = threading.Lock()

    def _open(
        self,
        files: Mapping[str, bytes],
        purposes: Sequence[str],
        policy: str,
        ro_paths: Sequence[str],
    ) -> Session:
        with self._lock:
            self.calls.opened.append(tuple(files))
        inner = self.local._open(files, purposes, policy, ro_paths)
        return RecordingSession(inner, self.calls, self._lock)

    def host_refusal(self, policy: str) -> str:
        return self.local.host_refusal(policy)


def register() -> None:
    """Register "recording" once per process (later calls keep the first registration)."""
    with contextlib.suppress(ValueError):
        register_backend("recording", RecordingBackend)
