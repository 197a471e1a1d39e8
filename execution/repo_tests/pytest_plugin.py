"""A pytest plugin that reports each test's outcome to the grader in signed records.

The local grader copies this file (standard library only) into the test sandbox and loads it
with ``-p``, which pytest imports before it captures output, reads conftest files or imports a
single test module. At import the plugin

- takes the per-run key from the file named by ``CODE_EVAL_REPORT_KEY_FILE``, deletes the file
  and removes the variable from the environment (the key never appears in the environment,
  the command line or any file the code under test can still open);
- keeps a private duplicate of the real stdout, the channel of its records;
- writes a signed ``start`` record.

Outcomes are recorded from pytest's own reports; after the session has finished
(`pytest_unconfigure`, when the final exit status is known) one signed ``final`` record lists the
collected tests, each test's status, collection errors and the exit status. A record is one line
``MARKER kind payload mac`` with a base64 JSON payload and an HMAC-SHA256 over kind and payload.

Why this resists forged output: the code under test can print any text, including pytest-like
summaries and record-like lines, to any file descriptor, but it cannot sign without the key, and
a run it ends early (`os._exit`) has no final record. State lives in closures whose functions
pluggy bound at registration, so reassigning this module's attributes changes nothing. What an
in-process attacker can still do (reach the closures through the garbage collector, patch
pytest in memory) is described in the infilling README's threat model.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
from typing import Any

MARKER = "@@code-eval-pytest-report@@"
KEY_FILE_ENV = "CODE_EVAL_REPORT_KEY_FILE"
#: A teardown error turns these into ERROR (pytest's -rA summary lists the ERROR line last).
_CLEAN = {None, "PASSED", "XFAIL", "XPASS", "SKIPPED"}


def sign(
    key: bytes, kind: str, payload: str, _new: Any = hmac.new, _sha256: Any = hashlib.sha256
) -> str:
    """The record MAC (shared with the grader, which imports this module to verify). Library
    functions are bound as defaults when the module is imported, like everything the hooks use."""
    return str(_new(key, f"{kind} {payload}".encode(), _sha256).hexdigest())


def encode_record(
    key: bytes,
    kind: str,
    data: dict[str, Any],
    _dumps: Any = json.dumps,
    _b64: Any = base64.b64encode,
    _sign: Any = sign,
    _marker: str = MARKER,
) -> str:
    payload = _b64(_dumps(data, sort_keys=True).encode()).decode()
    return f"{_marker} {kind} {payload} {_sign(key, kind, payload)}"


def _read_key() -> bytes | None:
    path = os.environ.pop(KEY_FILE_ENV, None)
    if not path:
        return None
    try:
        with open(path, "rb") as handle:
            key = handle.read().strip()
        os.unlink(path)
    except OSError:
        # A key left readable to the code under test is worthless: report nothing, and the
        # grader, finding its key file intact, reports that the plugin did not start.
        return None
    return key or None


def _status(report: Any) -> str | None:
    """One phase's contribution to a test's status, as pytest's -rA summary names it."""
    xfail = hasattr(report, "wasxfail")
    if report.when == "call":
        if report.passed:
            return "XPASS" if xfail else "PASSED"
        if report.skipped:
            return "XFAIL" if xfail else "SKIPPED"
        return "FAILED"
    if report.failed:
        return "ERROR"
    if report.when == "setup" and report.skipped:
        return "XFAIL" if xfail else "SKIPPED"
    return None


def _install() -> dict[str, Any]:
    """The hook functions, closed over the key, the output channel and the recorded state."""
    key = _read_key()
    if key is None:  # not started by the grader: record nothing, so nothing can be trusted
        return {}
    # Everything the hooks call is bound here, at import, before any code under test runs:
    # rebinding this module's names or `os.write`/`json.dumps` later changes nothing (patching
    # the internals those functions use is the residual risk described in the README).
    status_of, encode, write, getpid = _status, encode_record, os.write, os.getpid
    out = os.dup(1)
    state: dict[str, Any] = {"config": None, "session": None, "final": False}
    statuses: dict[str, str] = {}
    collected: list[str] = []
    collection_errors: list[str] = []

    def emit(kind: str, data: dict[str, Any]) -> None:
        line = "\n" + encode(key, kind, data) + "\n"
        write(out, line.encode())

    def node(nodeid: str) -> str:
        config = state["config"]
        return config.cwd_relative_nodeid(nodeid) if config is not None else nodeid

    def pytest_configure(config: Any) -> None:
        if state["config"] is None:
            state["config"] = config

    def pytest_sessionstart(session: Any) -> None:
        if state["session"] is None:
            state["session"] = session

    def pytest_collectreport(report: Any) -> None:
        if report.failed:
            collection_errors.append(node(report.nodeid))

    def pytest_collection_finish(session: Any) -> None:
        if session is state["session"]:
            collected[:] = [node(item.nodeid) for item in session.items]

    def pytest_runtest_logreport(report: Any) -> None:
        status = status_of(report)
        if status is None:
            return
        test = node(report.nodeid)
        if report.when == "teardown" and statuses.get(test) not in _CLEAN:
            return  # a failed call stays FAILED; a teardown error after it changes nothing
        statuses[test] = status

    def pytest_unconfigure(config: Any) -> None:
        if config is not state["config"] or state["final"]:
            return
        state["final"] = True
        session = state["session"]
        exitstatus = None if session is None else int(session.exitstatus)
        emit(
            "final",
            {
                "pid": getpid(),
                "exitstatus": exitstatus,
                "collected": collected,
                "statuses": statuses,
                "collection_errors": collection_errors,
            },
        )

    emit("start", {"pid": getpid()})
    return {
        "pytest_configure": pytest_configure,
        "pytest_sessionstart": pytest_sessionstart,
        "pytest_collectreport": pytest_collectreport,
        "pytest_collection_finish": pytest_collection_finish,
        "pytest_runtest_logreport": pytest_runtest_logreport,
        "pytest_unconfigure": pytest_unconfigure,
    }


if not __name__.endswith(
    "execution.repo_tests.pytest_plugin"
):  # loaded by pytest inside the sandbox
    globals().update(_install())
