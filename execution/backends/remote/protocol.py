"""What a judge server and the remote backend say to each other, checked strictly both ways.

`POST /api/judge` takes `{"job": <job>}` (a batch record: language, source_code, unittests,
limits, comparator, stop_on_first_fail, plus the optional `overrides`) and answers
`{"result": <Result.to_dict()>, "server": {...}}`; `GET /api/info` says what the server is
(engine version, workers, isolation) and `GET /api/info?language=NAME` adds the runtime that
judges that language there (its fingerprint goes into the client's cache keys). A server's reply
is hostile input to the client: anything that is not exactly a well-formed result, consistent
with the job it answers, is a `ProtocolError` (the client turns it into INFRA_ERROR naming the
server), never a verdict.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from ...errors import DataError
from ...judge.jobfile import job_from_record
from ...limits import RunOverrides
from ...types import CompileResult, Job, Result, TestResult, Verdict

#: largest reply the client reads, whatever the job (results keep only a head of each output)
MAX_REPLY_BYTES = 64 * 1024 * 1024
#: largest `/api/info` or `/api/all_runtimes` reply
INFO_REPLY_BYTES = 4 * 1024 * 1024
#: JSON bytes one character of a result may take (ensure_ascii: an astral one is 12 bytes)
JSON_BYTES_PER_CHAR = 12
#: characters of a result beyond its tests' outputs: details, compile output, isolation, runtime
RESULT_BASE_CHARS = 64 * 1024
#: characters of one test's detail and numbers, beyond its stdout and stderr heads
TEST_EXTRA_CHARS = 2048
#: JSON values (counted as separators and brackets) of a result beyond its tests, and per test
RESULT_BASE_VALUES = 4096
TEST_VALUES = 64
#: longest text field of a result (outputs are cut to a few thousand characters by the runner)
MAX_TEXT_CHARS = 1024 * 1024
PROTOCOL_VERSION = 1
OVERRIDE_FIELDS = ("cpu_s", "wall_s", "open_files", "nproc_rlimit", "stack_mb")


class ProtocolError(ValueError):
    """A malformed or inconsistent message."""


# -- bounded replies -----------------------------------------------------------------------------


def result_reply_bound(job: Job) -> tuple[int, int]:
    """(bytes, JSON values) the reply to `job` can hold at most: what the runner keeps of a
    program's output (`runner.REPORT_CHARS` per stream and test, `COMPILE_REPORT_CHARS` of the
    compiler's) for the job's number of tests, at the widest JSON escaping."""
    from ...run.runner import COMPILE_REPORT_CHARS, REPORT_CHARS  # the runner imports the backends

    n = len(job.tests)
    chars = RESULT_BASE_CHARS + 2 * COMPILE_REPORT_CHARS + n * (2 * REPORT_CHARS + TEST_EXTRA_CHARS)
    size = min(MAX_REPLY_BYTES, JSON_BYTES_PER_CHAR * chars)
    return size, RESULT_BASE_VALUES + n * TEST_VALUES


def execeval_reply_bound(job: Job) -> tuple[int, int]:
    """The same for an ExecEval server, whose entries repeat each test's input and expected
    outputs and carry the program's whole output (cut at the overall cap)."""
    echo = sum(len(t.input) + sum(len(o) + 8 for o in t.output) for t in job.tests)
    size, values = result_reply_bound(job)
    values += sum(len(t.output) for t in job.tests)
    return min(
        MAX_REPLY_BYTES, size + JSON_BYTES_PER_CHAR * echo + len(job.tests) * (1 << 20)
    ), values


#: a JSON string, matched without backtracking (possessive quantifiers)
_JSON_STRING = re.compile(rb'"[^"\\]*+(?:\\.[^"\\]*+)*+"', re.DOTALL)


def parse_bounded(raw: bytes | bytearray, max_values: int) -> Any:
    """`raw` as JSON when it holds at most about `max_values` values, else ProtocolError. The
    values are counted before parsing (separators and brackets outside strings), so a reply of
    many tiny values (`[[],[],...]`: some 60 bytes of objects per 3 bytes of text) is refused
    instead of multiplying its size in memory; strings cost what their text does."""
    skeleton = _JSON_STRING.sub(b"", raw)
    values = sum(skeleton.count(c) for c in (b",", b":", b"[", b"{"))
    del skeleton
    if values > max_values:
        raise ProtocolError(
            f"reply of {values} JSON values, over the {max_values} a result can hold"
        )
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        raise ProtocolError("reply is not JSON") from None


# -- jobs (client -> server) ---------------------------------------------------------------------


def job_to_wire(job: Job) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": "remote",
        "language": job.language,
        "source_code": job.source_code,
        "unittests": [t.to_dict() for t in job.tests],
        "time_limit_s": job.time_limit_s,
        "memory_limit_mb": job.memory_limit_mb,
        "stop_on_first_fail": job.stop_on_first_fail,
        "comparator": job.comparator,
    }
    if job.overrides is not None:
        record["overrides"] = job.overrides.to_dict()
    return record


def job_from_wire(raw: Any) -> Job:
    """A job record from a client -> Job (raises ProtocolError naming the field)."""
    if not isinstance(raw, dict):
        raise ProtocolError("field 'job': must be an object")
    unknown = sorted(
        set(raw)
        - {
            "id",
            "language",
            "source_code",
            "unittests",
            "time_limit_s",
            "memory_limit_mb",
            "stop_on_first_fail",
            "comparator",
            "overrides",
        }
    )
    if unknown:
        raise ProtocolError(f"field 'job.{unknown[0]}': unknown field")
    try:
        job = job_from_record({**raw, "id": "remote"}, "request", None)
    except DataError as exc:
        raise ProtocolError(f"field 'job.{exc.field}': {exc.message}") from None
    over = raw.get("overrides")
    if over is None:
        return Job(**{**_job_fields(job), "id": ""})
    if not isinstance(over, dict) or set(over) - set(OVERRIDE_FIELDS):
        raise ProtocolError(f"field 'job.overrides': an object with keys among {OVERRIDE_FIELDS}")
    values: dict[str, Any] = {}
    for name in OVERRIDE_FIELDS:
        value = over.get(name)
        if value is None:
            continue
        floats = name in ("cpu_s", "wall_s")
        if isinstance(value, bool) or not isinstance(value, int | float if floats else int):
            raise ProtocolError(f"field 'job.overrides.{name}': must be a number")
        if not (math.isfinite(value) and 0 < value <= 100_000):
            raise ProtocolError(f"field 'job.overrides.{name}': out of range")
        values[name] = float(value) if floats else int(value)
    return Job(**{**_job_fields(job), "id": "", "overrides": RunOverrides(**values)})


def _job_fields(job: Job) -> dict[str, Any]:
    return {
        "language": job.language,
        "source_code": job.source_code,
        "tests": job.tests,
        "time_limit_s": job.time_limit_s,
        "memory_limit_mb": job.memory_limit_mb,
        "stop_on_first_fail": job.stop_on_first_fail,
        "comparator": job.comparator,
        "overrides": job.overrides,
    }


# -- results (server -> client) ------------------------------------------------------------------

_TEST_FIELDS: dict[str, tuple[type, ...]] = {
    "verdict": (str,),
    "time_s": (int, float),
    "wall_s": (int, float),
    "memory_mb": (int, float),
    "exit_code": (int, type(None)),
    "signal": (str, type(None)),
    "stdout": (str,),
    "stderr": (str,),
    "detail": (str,),
}
_COMPILE_FIELDS: dict[str, tuple[type, ...]] = {
    "ok": (bool,),
    "time_s": (int, float),
    "stdout": (str,),
    "stderr": (str,),
    "cached": (bool,),
    "detail": (str,),
    "warm": (bool,),
    "wall_s": (int, float, type(None)),
}
_RESULT_FIELDS = ("id", "verdict", "tests", "compile", "isolation", "runtime", "detail", "cached")


def _fields(raw: Any, spec: dict[str, tuple[type, ...]], where: str) -> dict[str, Any]:
    if not isinstance(raw, dict) or set(raw) != set(spec):
        raise ProtocolError(f"{where}: expected exactly the keys {sorted(spec)}")
    for key, types in spec.items():
        value = raw[key]
        if isinstance(value, bool) and bool not in types:
            raise ProtocolError(f"{where}.{key}: wrong type")
        if not isinstance(value, types):
            raise ProtocolError(f"{where}.{key}: wrong type")
        if isinstance(value, float) and not (math.isfinite(value) and value >= 0):
            raise ProtocolError(f"{where}.{key}: not a finite non-negative number")
        if isinstance(value, str) and len(value) > MAX_TEXT_CHARS:
            raise ProtocolError(f"{where}.{key}: longer than {MAX_TEXT_CHARS} characters")
    return dict(raw)


def _verdict(value: Any, where: str) -> Verdict:
    try:
        return Verdict(value)
    except ValueError:
        raise ProtocolError(f"{where}: unknown verdict {str(value)[:40]!r}") from None


def result_from_wire(raw: Any, job: Job) -> Result:
    """A server's `result` for `job` -> Result, or ProtocolError when it is malformed or cannot
    be the judgement of that job (a verdict that is not its first failing test's, more tests
    than the job has, tests run after a failure with stop-on-first-fail...)."""
    if not isinstance(raw, dict) or set(raw) != set(_RESULT_FIELDS):
        raise ProtocolError(f"result: expected exactly the keys {list(_RESULT_FIELDS)}")
    verdict = _verdict(raw["verdict"], "result.verdict")
    if not isinstance(raw["tests"], list) or len(raw["tests"]) > len(job.tests):
        raise ProtocolError("result.tests: not a list of at most one entry per test")
    tests = []
    for i, t in enumerate(raw["tests"]):
        f = _fields(t, _TEST_FIELDS, f"result.tests[{i}]")
        f["verdict"] = _verdict(f["verdict"], f"result.tests[{i}].verdict")
        if isinstance(f["exit_code"], int) and abs(f["exit_code"]) > 1 << 16:
            raise ProtocolError(f"result.tests[{i}].exit_code: out of range")
        tests.append(TestResult(**f))
    compile_ = None
    if raw["compile"] is not None:
        compile_ = CompileResult(**_fields(raw["compile"], _COMPILE_FIELDS, "result.compile"))
    for key in ("isolation", "runtime"):
        if not isinstance(raw[key], dict):
            raise ProtocolError(f"result.{key}: must be an object")
    if not isinstance(raw["detail"], str) or len(raw["detail"]) > MAX_TEXT_CHARS:
        raise ProtocolError("result.detail: must be a string")
    if not isinstance(raw["id"], str) or not isinstance(raw["cached"], bool):
        raise ProtocolError("result.id / result.cached: wrong type")
    _check_consistent(verdict, tests, job)
    return Result(
        verdict=verdict,
        tests=tests,
        compile=compile_,
        isolation=dict(raw["isolation"]),
        runtime=dict(raw["runtime"]),
        detail=raw["detail"],
    )


def _check_consistent(verdict: Verdict, tests: list[TestResult], job: Job) -> None:
    """The runner's rule: the program's verdict is its first failing test's, else PASSED after
    every test; with stop-on-first-fail nothing runs after the first failure."""
    if verdict is Verdict.INFRA_ERROR:
        return
    if verdict is Verdict.COMPILATION_ERROR:
        if tests:
            raise ProtocolError("result: a compilation error with test results")
        return
    failing = [i for i, t in enumerate(tests) if t.verdict is not Verdict.PASSED]
    if any(t.verdict is Verdict.COMPILATION_ERROR for t in tests):
        raise ProtocolError("result.tests: a test cannot have a compilation error")
    if not failing:
        if verdict is not Verdict.PASSED or len(tests) != len(job.tests):
            raise ProtocolError("result: every test passed but the verdict is not PASSED")
        return
    if tests[failing[0]].verdict is not verdict:
        raise ProtocolError("result.verdict: not the first failing test's verdict")
    if job.stop_on_first_fail and failing[0] != len(tests) - 1:
        raise ProtocolError("result.tests: tests ran after the first failure")


def info_runtime_from_wire(raw: Any, language: str) -> dict[str, Any]:
    """The `runtime` entry of `/api/info?language=...`, checked."""
    spec: dict[str, tuple[type, ...]] = {
        "name": (str,),
        "cluster": (str,),
        "version": (str,),
        "binary": (str, type(None)),
        "available": (bool,),
        "reason": (str,),
        "fingerprint": (str,),
        "time_factor": (int, float),
    }
    f = _fields(raw, spec, f"info.runtime({language})")
    if len(f["fingerprint"]) > 4096 or not f["fingerprint"]:
        raise ProtocolError("info.runtime.fingerprint: empty or too long")
    return f
