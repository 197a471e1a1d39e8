"""An ExecEval-compatible HTTP API over the engine (standard library only).

`POST /api/execute_code` takes ExecEval's request `{language, source_code, unittests, limits?,
stop_on_first_fail?, ...}` and answers `{"data": [{input, output, result, exec_outcome,
time_consumed, peak_memory_consumed}, ...]}` (one entry per test run; a compilation error is one
entry with an empty input), or `{"error": ...}` with status 400 for a bad request (an unknown
language included) and 500 for an engine failure. `GET /api/all_runtimes` lists every accepted
language name with ExecEval's runtime fields.

Differences from ExecEval, on purpose: `limits.cpu` is the problem's time limit in CPU seconds
(scaled by the runtime's factor, as ExecEval does) and memory is limited by cgroup to
`limits.memory_mb` (or `limits._as` bytes when given, else 256 MB) rather than by address space;
custom compile/execute commands are refused (the registry decides how programs run); the network
is always blocked. Extensions: `time_limit_s`, `memory_limit_mb` and `comparator` ("default" or
"execeval") at the top level of the request.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from execution.compare import MODES
from execution.engine import Engine
from execution.errors import DataError
from execution.jobfile import parse_tests
from execution.languages import UnknownLanguageError, accepted_names, resolve
from execution.types import Job, Result, TestResult, Verdict

MAX_BODY_BYTES = 256 * 1024 * 1024
MIB = 1024 * 1024


class BadRequest(ValueError):
    pass


def job_from_request(body: Any, comparator: str = "default") -> Job:
    """ExecEval request -> Job; raises BadRequest with a message for the client."""
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object")
    language = body.get("language")
    if not isinstance(language, str) or not language.strip():
        raise BadRequest("'language' is required")
    try:
        resolve(language)
    except UnknownLanguageError as exc:
        raise BadRequest(str(exc)) from None
    source = body.get("source_code")
    if not isinstance(source, str):
        raise BadRequest("'source_code' must be a string")
    try:
        tests = parse_tests(body.get("unittests"), "request", field="unittests")
    except DataError as exc:
        raise BadRequest(str(exc)) from None
    for key in ("compile_cmd", "compile_flags", "execute_cmd", "execute_flags"):
        if body.get(key) not in (None, ""):
            raise BadRequest(
                f"'{key}' is not supported: the runtime registry decides how programs are built and run"
            )
    limits = body.get("limits") or {}
    if not isinstance(limits, dict):
        raise BadRequest("'limits' must be an object")
    time_limit = _number(body.get("time_limit_s", limits.get("cpu", 2)), "time limit (limits.cpu)")
    memory_mb: float = 256
    if body.get("memory_limit_mb") is not None:
        memory_mb = _number(body["memory_limit_mb"], "memory_limit_mb")
    elif limits.get("memory_mb") is not None:
        memory_mb = _number(limits["memory_mb"], "limits.memory_mb")
    elif limits.get("_as") not in (None, -1):
        memory_mb = _number(limits["_as"], "limits._as") / MIB
    stop = body.get("stop_on_first_fail", True)
    if not isinstance(stop, bool):
        raise BadRequest("'stop_on_first_fail' must be true or false")
    mode = body.get("comparator", comparator)
    if mode not in MODES:
        raise BadRequest(f"unknown comparator {mode!r}; use one of {', '.join(MODES)}")
    return Job(
        language=language,
        source_code=source,
        tests=tests,
        time_limit_s=time_limit,
        memory_limit_mb=max(1, math.ceil(memory_mb)),
        stop_on_first_fail=stop,
        comparator=mode,
    )


def _number(value: Any, what: str) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise BadRequest(f"{what} must be a positive number")
    return float(value)


def response_from_result(job: Job, result: Result) -> dict[str, Any]:
    """ExecEval's `{"data": [...]}` for a judged job."""
    if result.verdict is Verdict.COMPILATION_ERROR:
        message = result.compile.stderr if result.compile else result.detail
        entry: dict[str, Any] = {
            "input": "",
            "output": [],
            "result": message or result.detail,
            "exec_outcome": Verdict.COMPILATION_ERROR.value,
            "time_consumed": None,
            "peak_memory_consumed": None,
        }
        return {"data": [entry]}
    data = [
        _entry(job.tests[i].input, list(job.tests[i].output), t) for i, t in enumerate(result.tests)
    ]
    return {"data": data}


def _entry(test_input: str, expected: list[str], t: TestResult) -> dict[str, Any]:
    if t.verdict in (Verdict.PASSED, Verdict.WRONG_ANSWER):
        shown = t.stdout.strip()
    else:
        shown = t.stderr or t.detail or t.stdout
    return {
        "input": test_input,
        "output": expected,
        "result": shown,
        "exec_outcome": t.verdict.value,
        "time_consumed": t.time_s,
        "peak_memory_consumed": f"{round(t.memory_mb * 1024)} kB",
    }


def all_runtimes() -> list[dict[str, Any]]:
    """ExecEval's runtime list, one entry per accepted name (extra keys: cluster, version...)."""
    out = []
    for name in accepted_names():
        rt = resolve(name)
        compile_argv = _show_argv(rt.binary, rt.compile or ())
        run_argv = _show_argv(rt.binary, rt.run)
        out.append(
            {
                "runtime_name": name,
                "compile_cmd": compile_argv[0] if compile_argv else "",
                "compile_flags": " ".join(compile_argv[1:]),
                "execute_cmd": run_argv[0] if run_argv else "",
                "execute_flags": " ".join(run_argv[1:]),
                "timelimit_factor": rt.time_factor,
                "is_compiled": rt.is_compiled,
                "has_sanitizer": False,
                "runtime": rt.name,
                "cluster": rt.cluster,
                "version": rt.version,
                "available": rt.available,
            }
        )
    return out


class _KeepPlaceholders(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def _show_argv(binary: str | None, argv: tuple[str, ...]) -> list[str]:
    """A runtime's argv for display: the real binary filled in, other placeholders kept."""
    values = _KeepPlaceholders(binary=binary or "{binary}")
    return [a.format_map(values) for a in argv]


class ExecServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self, address: tuple[str, int], engine: Engine, comparator: str = "default"
    ) -> None:
        super().__init__(address, Handler)
        self.engine = engine
        self.comparator = comparator
        # One program per engine worker at a time, however many requests are in flight.
        self.slots = threading.BoundedSemaphore(engine.workers)


class Handler(BaseHTTPRequestHandler):
    server: ExecServer
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self._guarded(self._get)

    def do_POST(self) -> None:
        self._guarded(self._post)

    def _guarded(self, handler: Callable[[], None]) -> None:
        """An unexpected error answers 500 with its message instead of dropping the client."""
        try:
            handler()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as exc:
            self._send(
                HTTPStatus.INTERNAL_SERVER_ERROR, {"error": f"engine failure: {exc!r}"}, close=True
            )

    def _get(self) -> None:
        if self.path.rstrip("/") == "/api/all_runtimes":
            self._send(HTTPStatus.OK, all_runtimes())
        else:
            self._send(HTTPStatus.NOT_FOUND, {"error": f"no such endpoint: GET {self.path}"})

    def _post(self) -> None:
        if self.path.rstrip("/") != "/api/execute_code":
            self._drain()
            self._send(HTTPStatus.NOT_FOUND, {"error": f"no such endpoint: POST {self.path}"})
            return
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            self._send(
                HTTPStatus.LENGTH_REQUIRED, {"error": "Content-Length is required"}, close=True
            )
            return
        if length < 0 or length > MAX_BODY_BYTES:
            self._send(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                {"error": f"body over {MAX_BODY_BYTES} bytes"},
                close=True,
            )
            return
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw)
            job = job_from_request(body, self.server.comparator)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            self._send(HTTPStatus.BAD_REQUEST, {"error": f"invalid JSON: {exc}"})
            return
        except BadRequest as exc:
            self._send(HTTPStatus.BAD_REQUEST, {"error": str(exc)})
            return
        with self.server.slots:
            result = self.server.engine.judge(job)
        if result.verdict is Verdict.INFRA_ERROR:
            self._send(
                HTTPStatus.INTERNAL_SERVER_ERROR, {"error": f"engine failure: {result.detail}"}
            )
            return
        self._send(HTTPStatus.OK, response_from_result(job, result))

    def _drain(self) -> None:
        try:
            length = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            return
        if 0 < length <= MAX_BODY_BYTES:
            self.rfile.read(length)

    def _send(self, status: HTTPStatus, payload: Any, close: bool = False) -> None:
        data = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """Silenced: one access-log line per request would drown the batch output; the engine
        reports through its results instead."""


def make_server(
    host: str = "127.0.0.1",
    port: int = 5000,
    workers: int | None = None,
    comparator: str = "default",
) -> ExecServer:
    return ExecServer((host, port), Engine(workers=workers), comparator=comparator)


def serve(
    host: str = "127.0.0.1",
    port: int = 5000,
    workers: int | None = None,
    comparator: str = "default",
) -> None:
    server = make_server(host, port, workers, comparator)
    bound_host, bound_port = server.server_address[:2]
    print(
        f"serving the ExecEval-compatible API on http://{bound_host!s}:{bound_port}/api/",
        flush=True,
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
