"""ExecEval's own client against our server: the request bodies its `eval_passk.py` builds (the
keys and value types of ../shared/docs/EXECEVAL_RUNTIMES.md), sent over real HTTP to a real server
on 127.0.0.1 in `execeval` mode, must come back with `data` and ExecEval's verdicts. The client
drops every reply without `data` from pass@k silently, so a refusal here is a lost sample there.
"""

from __future__ import annotations

import http.client
import json
import math
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from code_eval_taskpack.execution.execeval.compat import (
    EXECEVAL_LIMITS_BY_LANG,
    EXECEVAL_RUNTIMES,
    execeval_limits,
)
from code_eval_taskpack.execution.languages.registry import resolve
from code_eval_taskpack.execution.server.http import ExecServer, make_server
from lm_eval_tasks.xcodeeval.execeval_client import ExecEvalClient, evaluate, shared_samples
from tests.conftest import require_runtime

#: the keys of every `POST /api/execute_code` body of eval_passk.py, in its order
EVAL_PASSK_KEYS = (
    "language",
    "source_code",
    "unittests",
    "limits",
    "compile_cmd",
    "compile_flags",
    "execute_cmd",
    "execute_flags",
    "block_network",
    "stop_on_first_fail",
    "use_sanitizer",
)
TESTS = [
    {"input": "1 2\n", "output": ["3"]},
    {"input": "2 2\n", "output": ["5"]},  # wrong on purpose
    {"input": "2 3\n", "output": ["5"]},
]
PROGRAMS = {
    "Python 3": "a, b = map(int, input().split())\nprint(a + b)\n",
    "GNU C11": '#include <stdio.h>\nint main(void){int a,b;scanf("%d %d",&a,&b);'
    'printf("%d\\n",a+b);return 0;}\n',
}
STOPPED = ["PASSED", "WRONG_ANSWER", None]  # ExecEval lists the test it did not run as null
ALL_RUN = ["PASSED", "WRONG_ANSWER", "PASSED"]


@pytest.fixture(scope="module")
def server() -> Iterator[ExecServer]:
    srv = make_server("127.0.0.1", 0, workers=2, mode="execeval")
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()
    thread.join(timeout=10)


def eval_passk_body(
    language: str,
    source: str,
    cpu: int | float = 2,
    block_network: Any = True,
    stop_on_first_fail: Any = True,
    use_sanitizer: Any = False,
) -> dict[str, Any]:
    """One body as eval_passk.py builds it: the runtime's `limits_by_lang.yaml` entry with `cpu`
    from the problem, the four commands null, the three flags as its command line gave them."""
    body = {
        "language": language,
        "source_code": source,
        "unittests": TESTS,
        "limits": {**EXECEVAL_LIMITS_BY_LANG[language], "cpu": cpu},
        "compile_cmd": None,
        "compile_flags": None,
        "execute_cmd": None,
        "execute_flags": None,
        "block_network": block_network,
        "stop_on_first_fail": stop_on_first_fail,
        "use_sanitizer": use_sanitizer,
    }
    assert tuple(body) == EVAL_PASSK_KEYS
    return body


def post(srv: ExecServer, body: Any) -> tuple[int, Any]:
    """POST as `requests.post(url, json=body)` does: a JSON body, Content-Type application/json."""
    host, port = srv.server_address[:2]
    conn = http.client.HTTPConnection(str(host), port, timeout=120)
    try:
        data = json.dumps(body, allow_nan=False).encode("utf-8")
        conn.request(
            "POST", "/api/execute_code", body=data, headers={"Content-Type": "application/json"}
        )
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


def outcomes(reply: Any) -> list[str | None]:
    assert isinstance(reply, dict) and "data" in reply, reply  # eval_passk drops it otherwise
    return [d["exec_outcome"] for d in reply["data"]]


# -- the three flags, in every shape eval_passk's command line sends them ----------------------


@pytest.mark.parametrize("language", sorted(PROGRAMS))
@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ((True, True, 0), STOPPED),  # the authors' README: --use_sanitizer 0
        ((True, True, False), STOPPED),  # eval_passk's defaults
        ((1, 1, 0), STOPPED),  # --block_network 1 --stop_on_first_fail 1
        ((1, 0, 1), ALL_RUN),  # --stop_on_first_fail 0: every test runs
        ((True, False, 2), ALL_RUN),  # any other integer is true, as in ExecEval
        ((None, None, None), ALL_RUN),  # form.get gives None for null: false there
    ],
)
def test_eval_passk_flags_are_judged(
    server: ExecServer, language: str, flags: tuple[Any, Any, Any], expected: list[Any]
) -> None:
    require_runtime(language)
    block, stop, sanitizer = flags
    body = eval_passk_body(language, PROGRAMS[language], 1, block, stop, sanitizer)
    status, reply = post(server, body)
    assert status == 200 and outcomes(reply) == expected, reply
    notes = " ".join(reply["execution"]["notes"])
    assert ("use_sanitizer not applied" in notes) == bool(sanitizer)
    assert ("block_network=false not applied" in notes) == (not block)


@pytest.mark.parametrize("field", ["block_network", "stop_on_first_fail", "use_sanitizer"])
@pytest.mark.parametrize("value", ["false", "0", "", 0.0, 1.5, [], {"x": 1}])
def test_flag_shapes_execeval_misreads_are_refused(
    server: ExecServer, field: str, value: Any
) -> None:
    """ExecEval reads a string flag by truthiness ("false" is true), so no sender means what it
    gets; floats, arrays and objects are no flag: a 400 naming the field, nothing judged."""
    body = {**eval_passk_body("Python 3", PROGRAMS["Python 3"]), field: value}
    status, reply = post(server, body)
    assert status == 400 and f"field {field!r}" in reply["error"], reply
    assert "data" not in reply


def test_readme_run_drops_no_sample(server: ExecServer, shared_data: Path) -> None:
    """eval_passk's loop with `--use_sanitizer 0` on real programs: every sample judged."""
    require_runtime("Python 3")
    samples, db = shared_samples(
        shared_data / "xcodeeval_chatgpt_direct" / "predictions.jsonl",
        shared_data / "xcodeeval_sample" / "problem_descriptions.jsonl",
    )
    subset = [s for s in samples if s["lang"] == "Python 3"][:6]
    url = f"http://127.0.0.1:{server.server_address[1]}"
    report = evaluate(ExecEvalClient(url), subset, db, ks=(1,), n_workers=2, use_sanitizer=0)
    assert report.errors == [] and len(report.results) == len(subset)
    assert not math.isnan(report.pass_at_k["pass@1"])
    # the same programs as the default eval_passk flags judge them
    plain = evaluate(ExecEvalClient(url), subset, db, ks=(1,), n_workers=2)
    assert [(r.index, r.outcome) for r in sorted(report.results, key=lambda r: r.index)] == [
        (r.index, r.outcome) for r in sorted(plain.results, key=lambda r: r.index)
    ]


# -- the other fields ---------------------------------------------------------------------------


def test_cpu_from_the_problem_int_or_float(server: ExecServer) -> None:
    """`cpu` is the problem's time limit: 1 for "1 second", 0.5 for "0.5 seconds"; a string
    is refused (ExecEval multiplies it by the time factor and adds 1: a TypeError there)."""
    require_runtime("Python 3")
    for cpu in (1, 0.5, 2.0):
        status, reply = post(server, eval_passk_body("Python 3", PROGRAMS["Python 3"], cpu))
        assert status == 200 and outcomes(reply) == STOPPED, (cpu, reply)
    for bad in ("1", None, True, 0, -1):
        body = eval_passk_body("Python 3", PROGRAMS["Python 3"])
        body["limits"]["cpu"] = bad
        status, reply = post(server, body)
        assert status == 400 and "field 'limits.cpu'" in reply["error"], (bad, reply)


def test_missing_optional_fields_take_execevals_defaults(server: ExecServer) -> None:
    """ExecEval reads every field but language, source_code and unittests with `form.get`: the
    commands default to the runtime's, the flags to true/true/false, and no `limits` (missing or
    null) to the runtime's `limits_by_lang.yaml` entry; `{}` is ResourceLimits' own defaults."""
    require_runtime("GNU C11")
    minimal = {"language": "GNU C11", "source_code": PROGRAMS["GNU C11"], "unittests": TESTS}
    status, reply = post(server, minimal)
    assert status == 200 and outcomes(reply) == STOPPED, reply
    assert reply["execution"]["limits"]["applied"]["nofile"] == 0  # GNU C11's entry
    status, reply = post(server, {**minimal, "limits": None})
    assert status == 200 and reply["execution"]["limits"]["applied"]["nofile"] == 0
    status, reply = post(server, {**minimal, "limits": {}})
    assert status == 200 and reply["execution"]["limits"]["applied"]["nofile"] == 4
    for field in ("language", "source_code", "unittests"):
        status, reply = post(server, {k: v for k, v in minimal.items() if k != field})
        assert status == 400 and f"field {field!r}" in reply["error"], reply


def test_limits_by_lang_is_the_documented_table() -> None:
    """The table our client sends and our server falls back to is the one shipped with
    eval_passk.py (EXECEVAL_RUNTIMES.md), for every ExecEval runtime name."""
    assert set(EXECEVAL_LIMITS_BY_LANG) == set(EXECEVAL_RUNTIMES)
    assert EXECEVAL_LIMITS_BY_LANG["Go"] == {"nofile": 0, "nproc": 7}
    assert EXECEVAL_LIMITS_BY_LANG["Mono C#"] == {"nofile": 4, "nproc": 4, "fsize": 1073741824}
    assert EXECEVAL_LIMITS_BY_LANG["Kotlin 1.6"] == {"nofile": 25, "nproc": 23}
    assert EXECEVAL_LIMITS_BY_LANG["Node js"] == {"nofile": 25, "nproc": 25}
    assert EXECEVAL_LIMITS_BY_LANG["Ruby"] == {"nofile": 10}
    assert EXECEVAL_LIMITS_BY_LANG["PyPy 3-64"] == {"nofile": 4}
    assert EXECEVAL_LIMITS_BY_LANG["Clang++20 Diagnostics"] == {"nofile": 0}


# -- time: ExecEval's only time limit is its wall clock -----------------------------------------

# a CPU-bound loop that has printed to stderr, as the shared PHP programs ExecEval judged TLE
SPIN_PY = "import sys\nsys.stderr.write('reading input\\n')\nwhile True:\n    pass\n"


def test_cpu_bound_program_is_tle_as_execeval(server: ExecServer) -> None:
    """ExecEval gives prlimit every limit but `cpu`: a CPU-bound program runs until the wall
    clock (`cpu` x time factor) and is TIME_LIMIT_EXCEEDED, never the silent-kill
    MEMORY_LIMIT_EXCEEDED; the default mode's own verdict is unchanged."""
    require_runtime("Python 3")
    body = eval_passk_body("Python 3", SPIN_PY, cpu=0.5)
    body["unittests"] = TESTS[:1]
    status, reply = post(server, body)
    assert status == 200 and outcomes(reply) == ["TIME_LIMIT_EXCEEDED"], reply
    status, reply = post(server, {**body, "mode": "default"})
    assert status == 200 and outcomes(reply) == ["TIME_LIMIT_EXCEEDED"], reply


def test_cpu_budget_never_fires_before_the_wall_clock() -> None:
    """The plan's CPU budget is at least the wall clock on every CPU of the machine, so a test
    is stopped by the wall clock, as in ExecEval, and never earlier by CPU time."""
    from code_eval_taskpack.execution.limits import cpu_count

    for name in ("Python 3", "GNU C11", "Mono C#", "Go", "Java 8"):
        plan = execeval_limits(EXECEVAL_RUNTIMES[name], resolve(name), {"cpu": 2})
        wall = plan.overrides.wall_s
        assert wall == 2 * resolve(name).time_factor
        assert plan.overrides.cpu_s is not None and plan.overrides.cpu_s >= wall * cpu_count()
