"""The ExecEval-compatible HTTP API, over real HTTP on 127.0.0.1 (ephemeral port)."""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from code_eval_taskpack.execution.execeval.compat import EXECEVAL_RUNTIMES
from code_eval_taskpack.execution.languages.registry import accepted_names, resolve
from code_eval_taskpack.execution.server.http import ExecServer, make_server
from tests.conftest import require_runtime
from tests.engine_programs import ADD_PY

TESTS = [
    {"input": "1 2\n", "output": ["3"]},
    {"input": "1 1\n", "output": ["3"]},  # wrong on purpose
    {"input": "5 5\n", "output": ["10"]},
]


@pytest.fixture(scope="module")
def server() -> Iterator[ExecServer]:
    srv = make_server("127.0.0.1", 0, workers=2)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()
    thread.join(timeout=10)


def _request(
    srv: ExecServer, method: str, path: str, body: Any = None, raw: bytes | None = None
) -> tuple[int, Any]:
    host, port = srv.server_address[:2]
    conn = http.client.HTTPConnection(str(host), port, timeout=120)
    try:
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        headers = {"Content-Type": "application/json"} if data is not None else {}
        conn.request(method, path, body=data, headers=headers)
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


def test_all_runtimes(server: ExecServer) -> None:
    status, runtimes = _request(server, "GET", "/api/all_runtimes")
    assert status == 200
    fields = {
        "runtime_name",
        "compile_cmd",
        "compile_flags",
        "execute_cmd",
        "execute_flags",
        "timelimit_factor",
        "is_compiled",
        "has_sanitizer",
    }
    for entry in runtimes:
        assert fields <= entry.keys()
    by_name = {e["runtime_name"]: e for e in runtimes}
    # every accepted name, and every ExecEval runtime name in its exact spelling
    assert set(by_name) == set(accepted_names()) | set(EXECEVAL_RUNTIMES)
    for name in ("Clang++11", "Clang++14", "Clang++17", "Clang++20", "Java 1.5", "JavaScript"):
        assert name in by_name
    for name in ("Node js", "Node.js", "Javascript"):
        assert by_name[name]["runtime"] == "Node.js"
    assert all(isinstance(e["timelimit_factor"], int) for e in runtimes)
    for name in (
        "GNU C11",
        "GNU C++17",
        "Mono C#",
        "Java 17",
        "PyPy 3",
        "Python 3",
        "Node.js",
        "Go",
    ):
        assert name in by_name
    assert by_name["GNU C++17"]["is_compiled"] and by_name["GNU C++17"]["timelimit_factor"] == 1
    assert not by_name["Python 3"]["is_compiled"] and by_name["Python 3"]["timelimit_factor"] == 3


def test_execute_code_stops_on_first_fail(server: ExecServer) -> None:
    require_runtime("Python 3")
    body = {"language": "Python 3", "source_code": ADD_PY, "unittests": TESTS, "limits": {}}
    status, reply = _request(server, "POST", "/api/execute_code", body)
    assert status == 200, reply
    data = reply["data"]
    assert [d["exec_outcome"] for d in data] == ["PASSED", "WRONG_ANSWER"]
    first = data[0]
    assert set(first) == {
        "input",
        "output",
        "result",
        "exec_outcome",
        "time_consumed",
        "peak_memory_consumed",
    }
    assert first["input"] == "1 2\n" and first["output"] == ["3"] and first["result"] == "3"
    assert data[1]["result"] == "2"
    assert isinstance(first["time_consumed"], float)
    assert first["peak_memory_consumed"].endswith(" kB")
    assert int(first["peak_memory_consumed"].split()[0]) > 0


def test_execute_code_all_tests_limits_and_comparator(server: ExecServer) -> None:
    require_runtime("Python 3")
    body = {
        "language": "PyPy 3" if resolve("PyPy 3").available else "Python 3",
        "source_code": ADD_PY,
        "unittests": TESTS,
        "stop_on_first_fail": False,
        "limits": {"cpu": 2, "_as": 512 * 1024 * 1024},
        "compile_cmd": None,
        "block_network": True,
        "use_sanitizer": False,
    }
    status, reply = _request(server, "POST", "/api/execute_code", body)
    assert status == 200, reply
    assert [d["exec_outcome"] for d in reply["data"]] == ["PASSED", "WRONG_ANSWER", "PASSED"]

    nan = {"language": "Python 3", "source_code": "print('nan')", "unittests": TESTS[:1]}
    status, reply = _request(server, "POST", "/api/execute_code", nan)
    assert reply["data"][0]["exec_outcome"] == "WRONG_ANSWER"
    status, reply = _request(server, "POST", "/api/execute_code", {**nan, "comparator": "execeval"})
    assert reply["data"][0]["exec_outcome"] == "PASSED"  # ExecEval's NaN flaw, on request


def test_time_limit_from_limits_cpu(server: ExecServer) -> None:
    require_runtime("Python 3")
    body = {
        "language": "Python 3",
        "source_code": "while True:\n    pass\n",
        "unittests": TESTS[:1],
        "limits": {"cpu": 0.1},
    }
    status, reply = _request(server, "POST", "/api/execute_code", body)
    assert status == 200
    assert reply["data"][0]["exec_outcome"] == "TIME_LIMIT_EXCEEDED"


def test_compilation_error_is_one_entry(server: ExecServer) -> None:
    require_runtime("GNU C11")
    body = {"language": "GNU C11", "source_code": "int main( {", "unittests": TESTS}
    status, reply = _request(server, "POST", "/api/execute_code", body)
    assert status == 200
    (entry,) = reply["data"]
    assert entry["exec_outcome"] == "COMPILATION_ERROR"
    assert entry["input"] == "" and entry["output"] == []
    assert "error" in entry["result"]


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ({"language": "Klingon", "source_code": "x", "unittests": TESTS}, "GNU C++17"),
        ({"source_code": "x", "unittests": TESTS}, "'language' is required"),
        ({"language": "Python 3", "unittests": TESTS}, "source_code"),
        ({"language": "Python 3", "source_code": "x"}, "unittests"),
        ({"language": "Python 3", "source_code": "x", "unittests": [{"input": "1"}]}, "output"),
        ({"language": "Python 3", "source_code": "x", "unittests": TESTS, "limits": 3}, "limits"),
        (
            {"language": "Python 3", "source_code": "x", "unittests": TESTS, "limits": {"cpu": -1}},
            "positive",
        ),
        (
            {"language": "Python 3", "source_code": "x", "unittests": TESTS, "compile_cmd": "nope"},
            "compile_cmd",
        ),
        ([1, 2], "JSON object"),
    ],
)
def test_bad_requests_are_400(server: ExecServer, body: Any, needle: str) -> None:
    status, reply = _request(server, "POST", "/api/execute_code", body)
    assert status == 400
    assert needle in reply["error"]


def test_malformed_json_and_unknown_paths(server: ExecServer) -> None:
    status, reply = _request(server, "POST", "/api/execute_code", raw=b"{not json")
    assert status == 400 and "invalid JSON" in reply["error"]
    assert _request(server, "GET", "/api/nothing")[0] == 404
    assert _request(server, "POST", "/api/nothing", {"a": 1})[0] == 404


def test_concurrent_requests(server: ExecServer) -> None:
    require_runtime("Python 3")

    def one(i: int) -> list[str]:
        body = {
            "language": "Python 3",
            "source_code": f"print(int(input().split()[0]) + {i % 2})",
            "unittests": [{"input": "1 2\n", "output": ["1"]}],
        }
        status, reply = _request(server, "POST", "/api/execute_code", body)
        assert status == 200
        return [d["exec_outcome"] for d in reply["data"]]

    with ThreadPoolExecutor(max_workers=4) as pool:
        outcomes = list(pool.map(one, range(6)))
    assert outcomes == [["PASSED"], ["WRONG_ANSWER"]] * 3
