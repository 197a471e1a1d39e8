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
is always blocked; a request is validated like a batch line (`jobfile.job_from_record`: e.g. a
time limit of at most 600 s). Extensions: `time_limit_s`, `memory_limit_mb` and `comparator`
("default" or "execeval") at the top level of the request.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from execution.engine import Engine
from execution.errors import DataError
from execution.jobfile import job_from_record, positive_number
from execution.languages import accepted_names, resolve
from execution.types import Job, Result, TestResult, Verdict

MAX_BODY_BYTES = 256 * 1024 * 1024
MIB = 1024 * 1024


class BadRequest(ValueError):
    pass


def job_from_request(body: Any, comparator: str = "default") -> Job:
    """ExecEval request -> Job (validated as a batch record); raises BadRequest for the client."""
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object")
    for key in ("compile_cmd", "compile_flags", "execute_cmd", "execute_flags"):
        if body.get(key) not in (None, ""):
            raise BadRequest(
                f"'{key}' is not supported: the runtime registry decides how programs are built and run"
            )
    limits = body.get("limits") or {}
    if not isinstance(limits, dict):
        raise BadRequest("'limits' must be an object")
    # where each record field came from, to name it in an error as the client sent it
    origin = {"time_limit_s": "time_limit_s" if "time_limit_s" in body else "limits.cpu"}
    memory: Any = 256
    if body.get("memory_limit_mb") is not None:
        memory, origin["memory_limit_mb"] = body["memory_limit_mb"], "memory_limit_mb"
    elif limits.get("memory_mb") is not None:
        memory, origin["memory_limit_mb"] = limits["memory_mb"], "limits.memory_mb"
    elif limits.get("_as") not in (None, -1):
        memory, origin["memory_limit_mb"] = limits["_as"], "limits._as"
        if positive_number(memory):
            memory /= MIB
    if positive_number(memory):
        memory = max(1, math.ceil(memory))  # a fraction of a MB (e.g. `_as` bytes) rounds up
    record = {
        "id": "request",
        "language": body.get("language"),
        "source_code": body.get("source_code"),
        "unittests": body.get("unittests"),
        "time_limit_s": body.get("time_limit_s", limits.get("cpu", 2)),
        "memory_limit_mb": memory,
        "stop_on_first_fail": body.get("stop_on_first_fail", True),
        "comparator": body.get("comparator", comparator),
    }
    try:
        job = job_from_record(record, "request", None)
    except DataError as exc:
        field = origin.get(exc.field or "", exc.field)
        raise BadRequest(f"field {field!r}: {exc.message}" if field else exc.message) from None
    return dataclasses.replace(job, id="")


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
        except RecursionError:
            self._send(HTTPStatus.BAD_REQUEST, {"error": "invalid JSON: nested too deeply"})
            return
        except BadRequest as exc:
            self._send(HTTPStatus.BAD_REQUEST, {"error": str(exc)})
            return
        except ValueError as exc:  # e.g. an integer of more than 4300 digits
            self._send(HTTPStatus.BAD_REQUEST, {"error": f"invalid JSON: {exc}"})
            return
        result = self.server.engine.judge(job)  # the engine runs one program per worker at a time
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
