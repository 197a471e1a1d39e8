"""The judge agent's protocol, run on this host with the local backend (no container needed):
a batch announcement builds a precompiled header as a local batch does, the driver's speed-up
switches apply and are validated, and jobs judged at once are answered under their own ids."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from code_eval_taskpack.execution import Job, TestCase
from code_eval_taskpack.execution.backends.container import agent
from code_eval_taskpack.execution.config import BY_FIELD
from code_eval_taskpack.execution.speedups import pch
from code_eval_taskpack.execution.types import job_to_dict
from tests.conftest import require_runtime
from tests.engine_programs import HELLO
from tests.test_engine_pch import SUM

ROOT = Path(__file__).resolve().parent.parent


def _job(source: str) -> dict[str, object]:
    tests = (TestCase("2 3\n", ("5",)), TestCase("10 4\n", ("14",)))
    return job_to_dict(Job("GNU C++17", source, tests))


def test_an_announced_batch_gets_its_header_and_the_switches_apply(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = require_runtime("GNU C++17")
    monkeypatch.setenv(BY_FIELD["cache"].env, str(tmp_path))
    monkeypatch.setattr(pch, "_seen", {})
    monkeypatch.setattr(pch, "_expected", {})
    programs = [{"language": "GNU C++17", "source_code": SUM}] * pch.BUILD_AFTER
    assert agent.handle({"expect": programs}) == {"expected": pch.BUILD_AFTER}
    plain = runtime.expand(runtime.compile or ())
    answer = agent.handle({"job": _job(SUM), "policy": "required"})
    result = answer["result"]
    assert result["verdict"] == "PASSED", answer
    assert result["runtime"]["compile_argv"] != plain  # compiled with the header
    # the driver's switch turns it off (another source: the compile cache would serve this one)
    answer = agent.handle({"job": _job(SUM + "// b\n"), "engine": {"pch": False}})
    assert answer["result"]["verdict"] == "PASSED", answer
    assert answer["result"]["runtime"]["compile_argv"] == plain


@pytest.mark.parametrize(
    "request_",
    [
        {"job": {"language": "C", "source_code": ""}, "engine": {"classic_build": True}},
        {"job": {"language": "C", "source_code": ""}, "engine": {"pch": "yes"}},
        {"job": {"language": "C", "source_code": ""}, "engine": ["pch"]},
        {"expect": "GNU C++17"},
        {"expect": [{"language": "GNU C++17"}]},
        {"expect": [{"language": "Fortran 77", "source_code": ""}]},
        ["job"],
    ],
)
def test_bad_requests_are_errors(request_: object) -> None:
    answer = agent.handle(request_)
    assert set(answer) == {"error"} and "bad request" in answer["error"], answer


def test_jobs_at_once_are_answered_under_their_ids() -> None:
    require_runtime("Python 3")
    job = job_to_dict(Job("Python 3", HELLO["Python"], (TestCase("", ("Hello, World!",)),)))
    lines = [
        {"id": 1, "job": job},
        {"id": 2, "expect": [{"language": "C", "source_code": HELLO["C"]}]},
        {"id": 3, "job": {**job, "id": "second"}},
        {"id": 4, "job": {"language": "C"}},
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "code_eval_taskpack.execution.backends.container.agent", "--jobs", "2"],
        input="".join(json.dumps(line) + "\n" for line in lines) + "not json\n",
        capture_output=True, text=True, timeout=300, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    greeting, *answers = [json.loads(line) for line in proc.stdout.splitlines()]
    assert greeting["ready"] is True
    by_id = {a["id"]: a for a in answers}
    assert set(by_id) == {1, 2, 3, 4, None}, answers
    assert by_id[1]["result"]["verdict"] == by_id[3]["result"]["verdict"] == "PASSED"
    assert by_id[3]["result"]["id"] == "second"
    assert by_id[2] == {"id": 2, "expected": 1}
    assert "bad request" in by_id[4]["error"] and "bad request" in by_id[None]["error"]
