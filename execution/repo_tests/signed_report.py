"""The grader's side of the signed pytest report (`pytest_plugin`): set-up and verification.

A run's statuses are trusted only when its output holds exactly one valid ``start`` and one
valid ``final`` record in that order, no record-like line fails its signature, every reported
test was collected, and the final record agrees with the process: its exit status equals the
command's, exit status 0 comes with no failed test or collection error, and exit status 1 (tests
failed) with at least one. Anything else rejects the run with the reason; a run without a start
record is a set-up problem (the plugin never loaded: the code under test runs only after it has
started) only when the key file is still there with the key in it; when the plugin has consumed
the key, a missing start record means the code under test tampered with the output.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import pytest_plugin
from .pytest_plugin import KEY_FILE_ENV, MARKER, sign

#: The module name the plugin is loaded under inside the sandbox (`-p NAME`).
PLUGIN_MODULE = "_code_eval_pytest_report"
_FAILING = {"FAILED", "ERROR"}


@dataclass(frozen=True)
class ReportChannel:
    """What one test run needs: the key, the files to place and the extra arguments/env."""

    key: bytes
    directory: Path  # holds the plugin module and, until pytest starts, the key file

    @classmethod
    def create(cls, directory: Path) -> ReportChannel:
        """Write the plugin and a fresh key file into `directory` (made if missing)."""
        directory.mkdir(parents=True, exist_ok=True)
        source = Path(pytest_plugin.__file__).read_text(encoding="utf-8")
        (directory / f"{PLUGIN_MODULE}.py").write_text(source, encoding="utf-8")
        key = secrets.token_hex(32).encode()
        channel = cls(key=key, directory=directory)
        channel.key_file.write_bytes(key)
        channel.key_file.chmod(0o600)
        return channel

    @property
    def key_file(self) -> Path:
        return self.directory / "key"

    def plugin_loaded(self) -> bool:
        """False only when the key file still holds the key: nothing has read and removed it.
        (The code under test runs after the plugin removed it, so it cannot fake this: a file
        it writes there cannot hold the key it never saw.)"""
        try:
            return self.key_file.read_bytes() != self.key
        except OSError:
            return True

    @property
    def args(self) -> list[str]:
        return ["-p", PLUGIN_MODULE]

    @property
    def env(self) -> dict[str, str]:
        return {KEY_FILE_ENV: str(self.key_file), "PYTHONPATH": str(self.directory)}


@dataclass
class VerifiedReport:
    """The outcome of checking a run's output; `statuses` is usable only when `trusted`."""

    started: bool = False
    problem: str = ""
    exitstatus: int | None = None
    collected: list[str] = field(default_factory=list)
    statuses: dict[str, str] = field(default_factory=dict)

    @property
    def trusted(self) -> bool:
        return self.started and not self.problem


def _records(output: str, key: bytes) -> tuple[list[tuple[str, dict[str, Any]]], str]:
    """Valid records in order, and the first reason a record-like line is not one."""
    records: list[tuple[str, dict[str, Any]]] = []
    for number, line in enumerate(output.split("\n"), start=1):
        if MARKER not in line:
            continue
        parts = line.split(" ")
        if len(parts) != 4 or parts[0] != MARKER:
            return records, f"output line {number} imitates a report record"
        _, kind, payload, mac = parts
        if not hmac.compare_digest(sign(key, kind, payload), mac):
            return records, f"output line {number} carries a report record with a bad signature"
        try:
            data = json.loads(base64.b64decode(payload, validate=True))
        except (binascii.Error, ValueError) as exc:  # pragma: no cover - we signed it
            return records, f"output line {number}: unreadable signed record ({exc})"
        if not isinstance(data, dict):  # pragma: no cover - we signed it
            return records, f"output line {number}: signed record is not an object"
        records.append((kind, data))
    return records, ""


def verify(
    stdout: bytes,
    key: bytes,
    exit_code: int | None,
    *,
    plugin_loaded: bool = True,
    killed: bool = False,
) -> VerifiedReport:
    """Check a run's output against the rules in the module docstring. `plugin_loaded` is
    `ReportChannel.plugin_loaded()` after the run. `killed`: the grader stopped the process at
    a limit after its session (e.g. a thread that never ends), so it has no exit status to
    compare; such a run is never resolved (`model.decide`), its statuses are only shown."""
    text = stdout.decode("utf-8", "replace")
    records, problem = _records(text, key)
    result = VerifiedReport(started=plugin_loaded)
    if problem:
        result.problem = problem
        return result
    kinds = [kind for kind, _ in records]
    if not plugin_loaded:
        return result  # a set-up problem: `started` is False
    if not kinds or kinds[0] != "start":
        result.problem = "the plugin's start record is missing from the output (output tampered)"
        return result
    if kinds == ["start"]:
        result.problem = "the test process ended before pytest finished its session"
        return result
    if kinds != ["start", "final"]:
        result.problem = f"unexpected report records {kinds}"
        return result
    final = records[1][1]
    statuses = final.get("statuses")
    collected = final.get("collected")
    errors = final.get("collection_errors")
    exitstatus = final.get("exitstatus")
    if (
        not isinstance(statuses, dict)
        or not isinstance(collected, list)
        or not isinstance(errors, list)
    ):  # pragma: no cover - we signed it
        result.problem = "malformed final record"
        return result
    result.exitstatus = exitstatus if isinstance(exitstatus, int) else None
    if exitstatus != exit_code and not killed:
        result.problem = (
            f"the process exited with {exit_code} but pytest's session ended with {exitstatus}"
        )
        return result
    stray = sorted(set(statuses) - set(collected))
    if stray:
        result.problem = f"statuses reported for tests never collected: {stray[:5]}"
        return result
    failing = [t for t, s in statuses.items() if s in _FAILING] + list(errors)
    if exitstatus == 0 and failing:
        result.problem = f"exit status 0 although {failing[:5]} failed"
        return result
    if exitstatus == 1 and not failing:
        result.problem = "exit status 1 (tests failed) although every reported test passed"
        return result
    result.collected = [str(t) for t in collected]
    result.statuses = {str(t): str(s) for t, s in statuses.items()}
    return result


__all__ = ["PLUGIN_MODULE", "ReportChannel", "VerifiedReport", "verify"]
