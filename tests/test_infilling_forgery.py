"""Wrong middles that try to forge their own pass under the local grader must resolve nothing.

Each middle replaces the body of the fixture's `median` and so runs inside the sandboxed pytest
process when a test calls it, as a model's code would. The signed report (see
`execution/repo_tests/signed_report.py`) decides; the printed log never does.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import textwrap
from pathlib import Path

import pytest

from code_eval_taskpack.execution.repo_tests import pytest_plugin, signed_report
from code_eval_taskpack.execution.repo_tests.log_parsers import parse_pytest
from lm_eval_tasks.code_infilling import data
from lm_eval_tasks.code_infilling.grading import GradingSettings, grade
from tests.infilling_support import ROWS_FILE

WRONG_ANSWER = "return sorted(values)[len(values) // 2]\n"


def _body(code: str) -> str:
    return textwrap.indent(textwrap.dedent(code).lstrip("\n"), "    ")


def _fake_log(ids: list[str]) -> str:
    bar = "=" * 20
    return (
        f"{bar} test session starts {bar}\ncollected {len(ids)} items\n\n"
        f"{bar} short test summary info {bar}\n"
        + "".join(f"PASSED {t}\n" for t in ids)
        + f"{bar} {len(ids)} passed in 0.01s {bar}\n"
    )


def _attacks(ids: list[str]) -> dict[str, str]:
    fake = _fake_log(ids)
    marker = pytest_plugin.MARKER
    return {
        # The attack of the issue: a fake summary on every open descriptor (pytest's saved real
        # stdout among them), then an exit before pytest can print anything.
        "every_fd_then_exit": _body(
            f"""
            import os
            fake = {fake!r}.encode()
            for fd in range(1024):
                try:
                    os.write(fd, fake)
                except OSError:
                    pass
            os._exit(0)
            """
        ),
        # A fake summary printed normally (captured by pytest), then an exit.
        "print_then_exit": _body(
            f"""
            import os, sys
            print({fake!r})
            sys.stdout.flush()
            sys.__stdout__.write({fake!r})
            sys.__stdout__.flush()
            os._exit(0)
            """
        ),
        # Replace the plugin's hooks and helpers by ones that record every test as passed,
        # then answer wrongly: pluggy keeps the functions bound at registration.
        "patch_plugin_hooks": _body(
            f"""
            import sys
            for module in list(sys.modules.values()):
                if getattr(module, "MARKER", None) == {marker!r}:
                    module._status = lambda report: "PASSED"
                    module.pytest_runtest_logreport = lambda report: None
                    module.pytest_collectreport = lambda report: None
                    module.pytest_unconfigure = lambda config: None
            {WRONG_ANSWER}"""
        ),
        # Look for the key in the environment and command line (and in any file they name),
        # sign a final record claiming every test passed with each candidate, write it
        # everywhere and exit.
        "environ_secret": _body(
            f"""
            import base64, hashlib, hmac, json, os
            seen = []
            for name in ("/proc/self/environ", "/proc/self/cmdline"):
                with open(name, "rb") as handle:
                    seen += [v for v in handle.read().split(b"\\0") if v]
            candidates = []
            for item in seen:
                value = item.split(b"=", 1)[-1]
                candidates.append(value)
                try:
                    with open(value, "rb") as handle:
                        candidates.append(handle.read().strip())
                except OSError:
                    pass
            try:
                candidates.append(os.read(0, 4096).strip())
            except OSError:
                pass
            ids = {ids!r}
            final = {{"pid": os.getpid(), "exitstatus": 0, "collected": ids,
                     "statuses": {{t: "PASSED" for t in ids}}, "collection_errors": []}}
            for kind, body in (("start", {{"pid": os.getpid()}}), ("final", final)):
                payload = base64.b64encode(json.dumps(body, sort_keys=True).encode()).decode()
                for key in candidates:
                    mac = hmac.new(key, (kind + " " + payload).encode(), hashlib.sha256)
                    line = "\\n{marker} " + kind + " " + payload + " " + mac.hexdigest() + "\\n"
                    for fd in range(1024):
                        try:
                            os.write(fd, line.encode())
                        except OSError:
                            pass
            os._exit(0)
            """
        ),
        # Let pytest finish (the final record says tests failed), then leave with status 0.
        "exit_zero_at_exit": _body(
            f"""
            import atexit, os
            atexit.register(os._exit, 0)
            {WRONG_ANSWER}"""
        ),
    }


@pytest.fixture
def row(repos: Path) -> dict:
    loaded = data.load_rows(ROWS_FILE)[0]
    loaded["grading"] = GradingSettings(grader="local", repos_dir=str(repos)).to_json()
    return loaded


def test_forged_results_resolve_nothing(row: dict) -> None:
    ids = [*json.loads(row["FAIL_TO_PASS"]), *json.loads(row["PASS_TO_PASS"])]
    attacks = _attacks(ids)
    names = [*attacks, "gold"]
    graded = grade([row] * len(names), [*attacks.values(), row["middle"]])
    outcomes = dict(zip(names, graded, strict=True))
    gold = outcomes.pop("gold")
    assert gold["resolved"], gold["detail"]  # the same batch grades a real pass
    for name, outcome in outcomes.items():
        assert outcome["patch_applied"] and not outcome["error"], (name, outcome["error"])
        assert not outcome["resolved"], (name, outcome["detail"])
    # The fake summary did reach the log: the text parser alone would have passed it.
    forged_log = outcomes["every_fd_then_exit"]["log_tail"]
    assert all(parse_pytest(forged_log).status_of(t) == "PASSED" for t in ids)
    assert "ended before pytest finished" in outcomes["every_fd_then_exit"]["detail"]
    assert "ended before pytest finished" in outcomes["print_then_exit"]["detail"]
    assert "bad signature" in outcomes["environ_secret"]["detail"]
    assert "exited with 0" in outcomes["exit_zero_at_exit"]["detail"]
    # Patching the plugin module changed nothing: the report is trusted and says what failed.
    patched = outcomes["patch_plugin_hooks"]
    assert not patched["detail"].startswith("test report rejected"), patched["detail"]
    assert patched["test_status"]["tests/test_stats.py::test_median_even"] == "FAILED"
    assert patched["test_status"]["tests/test_stats.py::test_mean"] == "PASSED"


def _record(key: bytes, kind: str, body: dict) -> str:
    payload = base64.b64encode(json.dumps(body, sort_keys=True).encode()).decode()
    mac = hmac.new(key, f"{kind} {payload}".encode(), hashlib.sha256).hexdigest()
    return f"{pytest_plugin.MARKER} {kind} {payload} {mac}"


KEY = b"k" * 64
IDS = ["t.py::a", "t.py::b"]


def _final(exitstatus: int | None = 0, **changes: object) -> dict:
    body: dict = {
        "pid": 1,
        "exitstatus": exitstatus,
        "collected": IDS,
        "statuses": dict.fromkeys(IDS, "PASSED"),
        "collection_errors": [],
    }
    body.update(changes)
    return body


def _log(*lines: str) -> bytes:
    return ("noise\n" + "\n".join(lines) + "\nmore noise\n").encode()


def test_verify_accepts_only_a_complete_consistent_signed_report() -> None:
    start = _record(KEY, "start", {"pid": 1})
    good = signed_report.verify(_log(start, _record(KEY, "final", _final())), KEY, 0)
    assert good.trusted and good.statuses == dict.fromkeys(IDS, "PASSED")
    failed = _final(1, statuses={"t.py::a": "PASSED", "t.py::b": "FAILED"})
    assert signed_report.verify(_log(start, _record(KEY, "final", failed)), KEY, 1).trusted
    cases = {
        "bad signature": _log(start, _record(b"x" * 64, "final", _final())),
        "imitates": _log(start, "x " + _record(KEY, "final", _final())),
        "ended before": _log(start),
        "start record is missing": _log(_record(KEY, "final", _final())),
        "unexpected report records": _log(start, *[_record(KEY, "final", _final())] * 2),
        "exited with 0": _log(start, _record(KEY, "final", _final(1))),
        "never collected": _log(start, _record(KEY, "final", _final(collected=IDS[:1]))),
        "exit status 0 although": _log(start, _record(KEY, "final", failed | {"exitstatus": 0})),
        "every reported test passed": _log(start, _record(KEY, "final", _final(1))),
    }
    for reason, log in cases.items():
        exit_code = 1 if reason == "every reported test passed" else 0
        result = signed_report.verify(log, KEY, exit_code)
        assert not result.trusted and reason in result.problem, (reason, result.problem)
        assert result.statuses == {}
    # Stopped at a time limit after its session: no exit status to compare (never resolved).
    late = _log(start, _record(KEY, "final", _final()))
    assert signed_report.verify(late, KEY, None, killed=True).trusted
    assert "exited with None" in signed_report.verify(late, KEY, None).problem
    collection_error = _final(0, collection_errors=["t.py"])
    result = signed_report.verify(_log(start, _record(KEY, "final", collection_error)), KEY, 0)
    assert "exit status 0 although" in result.problem
    # No record at all while the key file was never read: the plugin did not load (set-up).
    unloaded = signed_report.verify(b"ImportError\n", KEY, 4, plugin_loaded=False)
    assert not unloaded.started and not unloaded.problem and not unloaded.trusted


def test_plugin_loaded_is_read_from_the_key_file(tmp_path: Path) -> None:
    channel = signed_report.ReportChannel.create(tmp_path / "report")
    assert not channel.plugin_loaded()  # the key is still there: nothing consumed it
    assert (tmp_path / "report" / f"{signed_report.PLUGIN_MODULE}.py").is_file()
    channel.key_file.write_bytes(b"something else")  # a file the tests wrote instead
    assert channel.plugin_loaded()
    channel.key_file.unlink()
    assert channel.plugin_loaded()
    other = signed_report.ReportChannel.create(tmp_path / "other")
    assert other.key != channel.key and len(other.key) == 64
