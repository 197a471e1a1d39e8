"""ExecEval drop-in: the server's `execeval` mode against ExecEval's documented behaviour, and the
authors' `eval_passk.py` protocol (our own client, `lm_eval_tasks/xcodeeval/execeval_client.py`) on real programs."""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from code_eval_taskpack.execution import types
from code_eval_taskpack.execution.execeval.compat import (
    EXECEVAL_RUNTIMES,
    MAX_MEMORY_MB,
    CompatError,
    execeval_commands,
    execeval_limits,
    execeval_outcome,
)
from code_eval_taskpack.execution.languages.registry import CLUSTERS, resolve
from code_eval_taskpack.execution.server.http import ExecServer, make_server
from code_eval_taskpack.execution.types import Verdict
from lm_eval_tasks.xcodeeval.execeval_client import (
    CLUSTER_RUNTIME,
    LIMITS_BY_LANG,
    OUTCOMES,
)
from tests.conftest import require_runtime

TESTS = [
    {"input": "1 2\n", "output": ["3"]},
    {"input": "2 2\n", "output": ["5"]},  # wrong on purpose
    {"input": "2 3\n", "output": ["5"]},
]
ADD_PY = "a, b = map(int, input().split())\nprint(a + b)\n"


@pytest.fixture(scope="module")
def server() -> Iterator[ExecServer]:
    srv = make_server("127.0.0.1", 0, workers=2, mode="execeval")
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()
    thread.join(timeout=10)


def _post(srv: ExecServer, body: dict[str, Any], mode: str | None = None) -> tuple[int, Any]:
    host, port = srv.server_address[:2]
    conn = http.client.HTTPConnection(str(host), port, timeout=300)
    payload = {
        "unittests": TESTS,
        "limits": LIMITS_BY_LANG.get(body["language"], {}),
        "compile_cmd": None,
        "compile_flags": None,
        "execute_cmd": None,
        "execute_flags": None,
        "block_network": True,
        "stop_on_first_fail": True,
        "use_sanitizer": False,
        **body,
    }
    if mode is not None:
        payload["mode"] = mode
    try:
        conn.request("POST", "/api/execute_code", body=json.dumps(payload).encode())
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


def _outcomes(reply: Any) -> list[str | None]:
    return [d["exec_outcome"] for d in reply["data"]]


# -- outcome mapping and limits (no program runs) ---------------------------------------------


@pytest.mark.parametrize(
    ("verdict", "stderr", "detail", "expected"),
    [
        (Verdict.PASSED, "", "", "PASSED"),
        (Verdict.WRONG_ANSWER, "", "", "WRONG_ANSWER"),
        (Verdict.OUTPUT_LIMIT_EXCEEDED, "", "output limit exceeded", "WRONG_ANSWER"),
        (Verdict.TIME_LIMIT_EXCEEDED, "", "wall time limit", "TIME_LIMIT_EXCEEDED"),
        # ExecEval has no CPU-time limit (prlimit gets every limit but `cpu`): a time kill is TLE
        (Verdict.TIME_LIMIT_EXCEEDED, "", "cpu time limit", "TIME_LIMIT_EXCEEDED"),
        (Verdict.TIME_LIMIT_EXCEEDED, "PHP Notice", "wall time limit", "TIME_LIMIT_EXCEEDED"),
        (Verdict.RUNTIME_ERROR, "", "killed by SIGSEGV", "MEMORY_LIMIT_EXCEEDED"),
        (
            Verdict.RUNTIME_ERROR,
            "Traceback...\nMemoryError\n",
            "exit code 1",
            "MEMORY_LIMIT_EXCEEDED",
        ),
        (Verdict.RUNTIME_ERROR, "std::bad_alloc", "killed by SIGABRT", "MEMORY_LIMIT_EXCEEDED"),
        (Verdict.RUNTIME_ERROR, "ValueError: x", "exit code 1", "RUNTIME_ERROR"),
        (Verdict.MEMORY_LIMIT_EXCEEDED, "", "OOM", "MEMORY_LIMIT_EXCEEDED"),
    ],
)
def test_outcome_mapping_is_execevals(
    verdict: Verdict, stderr: str, detail: str, expected: str
) -> None:
    got = execeval_outcome(types.TestResult(verdict=verdict, stderr=stderr, detail=detail))
    assert got == expected and got in OUTCOMES


def test_cluster_runtimes_are_execeval_names_of_their_cluster() -> None:
    """The client's runtime for a cluster comes from the engine registry: every cluster has one,
    ExecEval knows its name, and it is a runtime of that cluster."""
    assert set(CLUSTER_RUNTIME) == set(CLUSTERS)
    for cluster, name in CLUSTER_RUNTIME.items():
        assert name in EXECEVAL_RUNTIMES and resolve(name).cluster == cluster, (cluster, name)
    # the names the published ExecEval run of the shared predictions used (MapCoder's client)
    assert {c: CLUSTER_RUNTIME[c] for c in ("C", "C#", "Python", "Ruby", "Rust")} == {
        "C": "GNU C",
        "C#": "C# 10",
        "Python": "Python 3",
        "Ruby": "Ruby",
        "Rust": "Rust",
    }
    assert CLUSTER_RUNTIME["C++"] == resolve("C++").name == "GNU C++17"


def test_limits_have_execevals_meaning_and_defaults() -> None:
    entry, rt = EXECEVAL_RUNTIMES["Python 3"], resolve("Python 3")
    plan = execeval_limits(entry, rt, {"nofile": 4})
    assert plan.memory_mb == 2048 and plan.time_limit_s == 2.0
    assert plan.overrides.wall_s == 2.0 * rt.time_factor
    assert plan.overrides.cpu_s is not None and plan.overrides.cpu_s >= plan.overrides.wall_s
    assert plan.overrides.open_files == 4 and plan.overrides.nproc_rlimit == 1
    assert "fsize" in plan.not_applied
    java = execeval_limits(EXECEVAL_RUNTIMES["Java 8"], resolve("Java 8"), {})
    assert java.memory_mb == 2048 + 1024  # ExecEval's extra GiB for the VM
    assert execeval_limits(entry, rt, {"_as": -1}).memory_mb == MAX_MEMORY_MB
    assert execeval_limits(entry, rt, {"_as": 512 * 1024 * 1024}).memory_mb == 512
    for bad in ({"nofile": "4"}, {"nofile": -2}, {"cpu": 0}, {"_as": 10**15}, {"bogus": 1}):
        with pytest.raises(CompatError):
            execeval_limits(entry, rt, bad)


def test_commands_are_execevals_and_custom_ones_are_an_argv() -> None:
    c = execeval_commands(EXECEVAL_RUNTIMES["GNU C11"], resolve("GNU C11"))
    assert c.compile is not None
    # ExecEval's own order: -lm before the source file
    assert c.compile.index("-lm") < c.compile.index("{source}")
    assert "-std=c11" in c.compile and c.run == ("./main",)
    custom = execeval_commands(
        EXECEVAL_RUNTIMES["Python 3"],
        resolve("Python 3"),
        {"execute_flags": "-W ignore '{binary}' ; rm -rf /"},
    )
    # shlex tokens, braces escaped for the argv template, no shell
    assert custom.run[1:] == ("-W", "ignore", "{{binary}}", ";", "rm", "-rf", "/", "{source}")
    for field, value in (
        ("compile_cmd", "gcc\0x"),
        ("compile_cmd", "no-such-compiler"),
        ("compile_flags", "'unterminated"),
        ("execute_cmd", 3),
        ("compile_cmd", "../gcc"),
    ):
        with pytest.raises(CompatError, match=field):
            execeval_commands(EXECEVAL_RUNTIMES["GNU C11"], resolve("GNU C11"), {field: value})


# -- real programs through the server ---------------------------------------------------------


def test_python_syntax_error_and_silent_exit(server: ExecServer) -> None:
    require_runtime("Python 3")
    status, reply = _post(server, {"language": "Python 3", "source_code": "print(1 +\n"})
    assert status == 200 and _outcomes(reply) == ["COMPILATION_ERROR"]
    status, reply = _post(
        server, {"language": "Python 3", "source_code": "print(1 +\n"}, mode="default"
    )
    assert _outcomes(reply) == ["RUNTIME_ERROR"]
    silent = {"language": "Python 3", "source_code": "import sys\nsys.exit(3)\n"}
    assert _outcomes(_post(server, silent)[1]) == ["MEMORY_LIMIT_EXCEEDED", None, None]
    assert _outcomes(_post(server, silent, mode="default")[1]) == ["RUNTIME_ERROR"]


def test_tests_not_run_are_null_entries(server: ExecServer) -> None:
    require_runtime("Python 3")
    status, reply = _post(server, {"language": "Python 3", "source_code": ADD_PY})
    assert status == 200
    assert _outcomes(reply) == ["PASSED", "WRONG_ANSWER", None]
    assert [d["input"] for d in reply["data"]] == [t["input"] for t in TESTS]
    assert reply["data"][2]["result"] is None and reply["data"][2]["time_consumed"] is None
    execution = reply["execution"]
    assert execution["mode"] == "execeval"
    assert execution["compile"][1:] == ["-W", "ignore", "-m", "py_compile", "main.py"]
    assert execution["execute"][1:] == ["-W", "ignore", "-OO", "-s", "-S", "main.py"]
    assert execution["limits"]["applied"]["nofile"] == 4
    status, reply = _post(server, {"language": "Python 3", "source_code": ADD_PY}, mode="default")
    assert _outcomes(reply) == ["PASSED", "WRONG_ANSWER"]


def test_c_and_cpp_compile_as_execeval(server: ExecServer) -> None:
    require_runtime("GNU C11")
    # libm after the source here; before it in ExecEval, so sqrt of a runtime value cannot link
    sqrt_c = (
        "#include <stdio.h>\n#include <math.h>\nint main(void){double x;"
        'if(scanf("%lf",&x)!=1)return 1;volatile double y=x;printf("%d\\n",(int)sqrt(y)+2);}\n'
    )
    assert _outcomes(_post(server, {"language": "GNU C11", "source_code": sqrt_c})[1]) == [
        "COMPILATION_ERROR"
    ]
    default = _post(server, {"language": "GNU C11", "source_code": sqrt_c}, mode="default")[1]
    assert _outcomes(default) == ["PASSED", "WRONG_ANSWER"]
    # INT_MAX and pow without their headers: the implicit includes, in both modes
    cpp = (
        "#include <iostream>\nint main(){long long a,b;std::cin>>a>>b;"
        "if(a>INT_MAX)return 1;std::cout<<(long long)pow(a,1)+b<<std::endl;}\n"
    )
    for mode in ("execeval", "default"):
        _, reply = _post(server, {"language": "GNU C++17", "source_code": cpp}, mode=mode)
        assert _outcomes(reply)[:2] == ["PASSED", "WRONG_ANSWER"], reply
        assert "-include" in reply["execution"]["compile"]


def test_clang_runtimes_compile(server: ExecServer) -> None:
    require_runtime("GNU C++17")
    src = "#include <iostream>\nint main(){int a,b;std::cin>>a>>b;std::cout<<a+b<<std::endl;}\n"
    status, reply = _post(server, {"language": "Clang++17", "source_code": src})
    assert status == 200 and _outcomes(reply) == ["PASSED", "WRONG_ANSWER", None], reply
    compiler = reply["execution"]["compile"][0]
    if "clang++-14" not in compiler:  # a substitute is always reported
        assert any("clang++-14" in a for a in reply["execution"]["adaptations"])


def test_request_limits_are_applied(server: ExecServer) -> None:
    require_runtime("Python 3")
    opens = "fs = [open('/dev/null') for _ in range(5)]\n" + ADD_PY
    assert _outcomes(_post(server, {"language": "Python 3", "source_code": opens})[1]) == [
        "RUNTIME_ERROR",
        None,
        None,
    ]
    assert _outcomes(
        _post(server, {"language": "Python 3", "source_code": opens}, mode="default")[1]
    ) == ["PASSED", "WRONG_ANSWER"]
    forks = "import os\nos.fork() or print(3)\n"
    one = [TESTS[0]]
    assert _outcomes(
        _post(server, {"language": "Python 3", "source_code": forks, "unittests": one})[1]
    ) == ["RUNTIME_ERROR"]  # nproc 1 (ExecEval's default): no new process
    # 400 MB: over our default 256 MB, under ExecEval's 2 GiB
    big = "s = b'x' * (400 * 1024 * 1024)\n" + ADD_PY
    assert _outcomes(
        _post(server, {"language": "Python 3", "source_code": big, "unittests": one})[1]
    ) == ["PASSED"]
    assert _outcomes(
        _post(
            server, {"language": "Python 3", "source_code": big, "unittests": one}, mode="default"
        )[1]
    ) == ["MEMORY_LIMIT_EXCEEDED"]


def test_custom_commands_run_in_the_sandbox(server: ExecServer) -> None:
    require_runtime("GNU C11")
    src = '#include <stdio.h>\nint main(void){printf("%d\\n", VALUE);return 0;}\n'
    body = {
        "language": "GNU C11",
        "source_code": src,
        "unittests": [{"input": "", "output": ["7"]}],
        "compile_cmd": "gcc",
        "compile_flags": "-O0 -DVALUE=7 -static",
    }
    for mode in ("execeval", "default"):
        status, reply = _post(server, body, mode=mode)
        assert status == 200 and _outcomes(reply) == ["PASSED"], reply
        argv = reply["execution"]["compile"]
        assert argv[1:] == ["-O0", "-DVALUE=7", "-static", "main.c", "-o", "main"]
    # no shell: `;` is an argument (a missing input file for gcc), nothing else runs
    status, reply = _post(server, {**body, "compile_flags": "-DVALUE=7 ; echo hi"})
    assert status == 200 and _outcomes(reply) == ["COMPILATION_ERROR"]
    status, reply = _post(server, {**body, "compile_flags": "-O2\0"})
    assert status == 400 and "compile_flags" in reply["error"]
    status, reply = _post(server, {**body, "execute_cmd": "/root/secret-tool"})
    assert status == 400 and "execute_cmd" in reply["error"]


def test_all_runtimes_in_execeval_mode(server: ExecServer) -> None:
    host, port = server.server_address[:2]
    conn = http.client.HTTPConnection(str(host), port, timeout=60)
    conn.request("GET", "/api/all_runtimes")
    runtimes = json.loads(conn.getresponse().read())
    conn.close()
    by_name = {r["runtime_name"]: r for r in runtimes}
    assert set(EXECEVAL_RUNTIMES) <= set(by_name)
    gnu_c = by_name["GNU C"]
    assert gnu_c["compile_cmd"] == "gcc" and gnu_c["compile_flags"].endswith("-static -lm")
    assert by_name["Python 3"]["compile_flags"] == "-W ignore -m py_compile"
    assert by_name["Python 3"]["timelimit_factor"] == 3
    for r in runtimes:
        assert isinstance(r["is_compiled"], bool) and isinstance(r["has_sanitizer"], bool)
        assert isinstance(r["timelimit_factor"], int)
