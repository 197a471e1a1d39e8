"""An ExecEval-compatible HTTP API over the engine (standard library only).

For the remote backend (`execution/backends/remote/client.py`): `GET /api/info[?language=NAME]` says
what judges here (engine version, workers, policy, the runtime's fingerprint) and `POST
/api/judge` takes one whole Job and answers its whole Result (`backends/remote/protocol.py`).
The server binds to 127.0.0.1 unless given a token (`execution/auth.py`): then every request
needs it as a bearer token (401 otherwise).

`POST /api/execute_code` takes ExecEval's request `{language, source_code, unittests, limits,
compile_cmd, compile_flags, execute_cmd, execute_flags, block_network, stop_on_first_fail,
use_sanitizer}` and answers `{"data": [{input, output, result, exec_outcome, time_consumed,
peak_memory_consumed}, ...], "execution": {...}}` (a compilation error is one entry with an
empty input; `execution` says what ran: mode, runtime, compile and run argv, adaptations, the
limits applied and not applied), or `{"error": ...}` with 400 for a bad request (the field named),
500 for an engine failure and 503 with `Retry-After` when the queue is full. `GET
/api/all_runtimes` lists every accepted name, ExecEval's exact spellings included.

Two modes (`serve --mode`, or `"mode"` in a request):
- `execeval`: what ExecEval does, for identical numbers: its compile and run commands per
  runtime, its limits with its defaults, its comparator, its outcome set and mapping, and tests not
  run after the first failure listed with `exec_outcome: null` (`execution/execeval/compat.py`);
- `default`: the registry's commands, `limits.cpu` as the problem's CPU time limit scaled by the
  runtime's factor, memory `limits.memory_mb` (or `limits._as` bytes, else 256 MB) through the
  memory cgroup, our verdicts (OUTPUT_LIMIT_EXCEEDED included), tests not run omitted.
Custom commands are accepted in both modes: they are split with shlex into an argv (no shell),
validated, and run in the same sandbox with the same limits. See execution/README.md for the
compatibility table.

Load: the listen backlog is large, at most `workers + queue_size` requests are admitted (judging
or waiting for a worker); any other gets 503 with `Retry-After`. Reading a request's line and
headers, then its body, each have a deadline: a slow or stalled client gets 408 and its connection
closed, and never holds an engine worker (bodies are read before admission). The bodies held at
once, all connections together, stay within `BODY_BUDGET_BYTES` (503 with `Retry-After` beyond).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import socket
import threading
import time
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

from ..auth import bearer_matches, bind_refusal
from ..backends import get_backend
from ..backends.remote.protocol import PROTOCOL_VERSION, ProtocolError, job_from_wire
from ..config import current, using
from ..errors import DataError
from ..execeval.compat import (
    DEFAULT_LIMITS,
    EXECEVAL_RUNTIMES,
    CompatError,
    execeval_commands,
    execeval_entry,
    execeval_limits,
    execeval_outcome,
    execeval_runtime,
)
from ..inputs import InvalidJob, validate_job
from ..judge.engine import Engine
from ..judge.jobfile import job_from_record, positive_number
from ..languages.registry import Runtime, UnknownLanguageError, accepted_names, resolve
from ..run.compare import MODES as COMPARATORS
from ..types import Job, Result, TestResult, Verdict
from ..version import ENGINE_VERSION

MAX_BODY_BYTES = 256 * 1024 * 1024
#: bytes of request bodies held at once, all connections together (each body is read whole
#: before admission, so without it many large bodies in flight would multiply memory)
BODY_BUDGET_BYTES = 2 * MAX_BODY_BYTES
#: seconds a handler keeps reading (and dropping) the body of a request refused unread
DISCARD_S = 1.0
MIB = 1024 * 1024
SERVER_MODES = ("default", "execeval")
#: requests admitted beyond the ones being judged (each waits for a worker)
DEFAULT_QUEUE_SIZE = 64
#: listen backlog: connections the kernel holds before the accept loop takes them
LISTEN_BACKLOG = 1024
HEADER_TIMEOUT_S = 10.0
BODY_TIMEOUT_S = 60.0
CUSTOM_FIELDS = ("compile_cmd", "compile_flags", "execute_cmd", "execute_flags")


class BadRequest(ValueError):
    pass


@dataclasses.dataclass
class Prepared:
    """A validated request: the job, the runtime that judges it and what the response reports."""

    job: Job
    runtime: Runtime
    mode: str
    report: dict[str, Any]


def _flag(body: dict[str, Any], key: str, default: bool) -> bool:
    """A flag read as ExecEval reads it: `form.get(key, default)`, then used by truthiness.

    Accepted: JSON booleans; integers (what `eval_passk.py --use_sanitizer 0` sends, its flags
    being parsed by `fire`), 0 false and any other true; null, which `form.get` returns as None,
    hence false (not the default). Refused, naming the field: strings (ExecEval takes any
    non-empty one, "false" and "0" included, as true: the sender cannot have meant that),
    floats, lists and objects (no client of ExecEval's sends them for a flag)."""
    if key not in body:
        return default
    value = body[key]
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value != 0
    if isinstance(value, str):
        why = "ExecEval would read any non-empty string, even 'false' or '0', as true"
    else:
        why = f"got {type(value).__name__}"
    raise BadRequest(f"field {key!r}: must be true, false, an integer (0 is false) or null; {why}")


def prepare_request(body: Any, mode: str = "default", comparator: str = "default") -> Prepared:
    """ExecEval request -> validated job and runtime; raises BadRequest naming the field."""
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object")
    mode = body.get("mode", mode)
    if mode not in SERVER_MODES:
        raise BadRequest(f"field 'mode': must be one of {', '.join(SERVER_MODES)}")
    language = body.get("language")
    if not isinstance(language, str) or not language.strip():
        raise BadRequest("field 'language': 'language' is required (a non-empty string)")
    try:
        base = resolve(language)
    except UnknownLanguageError as exc:
        raise BadRequest(f"field 'language': {exc}") from None
    custom = {k: body.get(k) for k in CUSTOM_FIELDS}
    has_custom = any(v not in (None, "") for v in custom.values())
    block_network = _flag(body, "block_network", True)
    use_sanitizer = _flag(body, "use_sanitizer", False)
    limits = body.get("limits")
    notes: list[str] = []
    if not block_network:
        notes.append("block_network=false not applied: the sandbox never has a network")
    if use_sanitizer:
        notes.append("use_sanitizer not applied: programs are compiled as sent")
    runtime = base
    adaptations: tuple[str, ...] = ()
    try:
        if mode == "execeval" or has_custom:
            entry = execeval_entry(language) or EXECEVAL_RUNTIMES[base.name]
            commands = execeval_commands(entry, base, custom)
            runtime = execeval_runtime(base, commands)
            adaptations = commands.adaptations
        if mode == "execeval":
            plan = execeval_limits(entry, base, limits)
            time_limit: Any = body.get("time_limit_s", plan.time_limit_s)
            memory: Any = body.get("memory_limit_mb", plan.memory_mb)
            overrides = plan.overrides
            limit_report: dict[str, Any] = {
                "applied": plan.applied,
                "not_applied": plan.not_applied,
            }
        else:
            time_limit, memory, limit_report = _default_limits(body, limits)
            overrides = None
    except CompatError as exc:
        raise BadRequest(str(exc)) from None
    record = {
        "id": "request",
        "language": language,
        "source_code": body.get("source_code"),
        "unittests": body.get("unittests"),
        "time_limit_s": time_limit,
        "memory_limit_mb": memory,
        "stop_on_first_fail": _flag(body, "stop_on_first_fail", True),
        "comparator": body.get(
            "comparator",
            "execeval" if mode == "execeval" and comparator == "default" else comparator,
        ),
    }
    origin = {
        "time_limit_s": "time_limit_s" if "time_limit_s" in body else "limits.cpu",
        "memory_limit_mb": "memory_limit_mb"
        if "memory_limit_mb" in body
        else (
            "limits.memory_mb"
            if isinstance(limits, dict) and "memory_mb" in limits
            else "limits._as"
        ),
    }
    try:
        job = job_from_record(record, "request", None)
    except DataError as exc:
        field = origin.get(exc.field or "", exc.field)
        raise BadRequest(f"field {field!r}: {exc.message}" if field else exc.message) from None
    job = dataclasses.replace(job, id="", overrides=overrides)
    report = {
        "mode": mode,
        "runtime": base.name,
        "adaptations": list(adaptations),
        "limits": limit_report,
        "notes": notes,
    }
    return Prepared(job=job, runtime=runtime, mode=mode, report=report)


def _default_limits(body: dict[str, Any], limits: Any) -> tuple[Any, Any, dict[str, Any]]:
    """Default mode: `limits.cpu` (problem time limit, scaled by the runtime's factor) and
    memory (`memory_limit_mb`, `limits.memory_mb`, `limits._as` bytes, else 256 MB)."""
    if limits is None:
        limits = {}
    if not isinstance(limits, dict):
        raise BadRequest("field 'limits': 'limits' must be an object")
    unknown = sorted(set(limits) - set(DEFAULT_LIMITS) - {"memory_mb"})
    if unknown:
        raise BadRequest(
            f"field 'limits.{unknown[0]}': unknown limit; ExecEval's are "
            f"{', '.join(DEFAULT_LIMITS)} (and memory_mb, in MB)"
        )
    memory: Any = 256
    if body.get("memory_limit_mb") is not None:
        memory = body["memory_limit_mb"]
    elif limits.get("memory_mb") is not None:
        memory = limits["memory_mb"]
    elif limits.get("_as") not in (None, -1):
        memory = limits["_as"]
        if positive_number(memory):
            memory /= MIB
    if positive_number(memory):
        memory = max(1, math.ceil(memory))  # a fraction of a MB (e.g. `_as` bytes) rounds up
    time_limit = body.get("time_limit_s", limits.get("cpu", 2))
    applied = {
        "cpu": "problem time limit x the runtime's time factor (CPU)",
        "memory_mb": "memory cgroup",
    }
    not_applied = {
        k: "ignored in default mode (the engine's own limits apply)"
        for k in limits
        if k not in ("cpu", "_as", "memory_mb")
    }
    return time_limit, memory, {"applied": applied, "not_applied": not_applied}


def job_from_request(body: Any, comparator: str = "default") -> Job:
    """ExecEval request -> Job in the default mode (validated as a batch record)."""
    return prepare_request(body, "default", comparator).job


def response_from_result(prepared: Prepared | Job, result: Result) -> dict[str, Any]:
    """ExecEval's `{"data": [...]}` for a judged job, plus what ran (`execution`)."""
    if isinstance(prepared, Job):
        job, mode, report = prepared, "default", None
    else:
        job, mode, report = prepared.job, prepared.mode, dict(prepared.report)
    compat = mode == "execeval"
    out: dict[str, Any]
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
        out = {"data": [entry]}
    else:
        data = [
            _entry(job.tests[i].input, list(job.tests[i].output), t, compat)
            for i, t in enumerate(result.tests)
        ]
        if compat:  # ExecEval lists every test; the ones not run have no outcome
            data += [
                {
                    "input": t.input,
                    "output": list(t.output),
                    "result": None,
                    "exec_outcome": None,
                    "time_consumed": None,
                    "peak_memory_consumed": None,
                }
                for t in job.tests[len(result.tests) :]
            ]
        out = {"data": data}
    if report is not None:
        report["runtime_version"] = result.runtime.get("version")
        report["compile"] = result.runtime.get("compile_argv")
        report["execute"] = result.runtime.get("run_argv")
        out["execution"] = report
    return out


def _entry(test_input: str, expected: list[str], t: TestResult, compat: bool) -> dict[str, Any]:
    if t.verdict in (Verdict.PASSED, Verdict.WRONG_ANSWER):
        shown = t.stdout.strip()
    else:
        shown = t.stderr or t.detail or t.stdout
    return {
        "input": test_input,
        "output": expected,
        "result": shown,
        "exec_outcome": execeval_outcome(t) if compat else t.verdict.value,
        "time_consumed": t.time_s,
        "peak_memory_consumed": f"{round(t.memory_mb * 1024)} kB",
    }


def _factor(value: float) -> int | float:
    """ExecEval's time factors are integers: keep that type when the value is one."""
    return int(value) if float(value).is_integer() else value


def all_runtimes(mode: str = "default") -> list[dict[str, Any]]:
    """ExecEval's runtime list: every name ExecEval lists (its exact spellings) and every other
    accepted name, with ExecEval's keys and types (extra keys: runtime, cluster, version...).
    In `execeval` mode the commands shown are ExecEval's shipped ones, else the registry's."""
    names = list(EXECEVAL_RUNTIMES) + [n for n in accepted_names() if n not in EXECEVAL_RUNTIMES]
    out = []
    for name in names:
        rt = resolve(name)
        entry = EXECEVAL_RUNTIMES.get(name)
        if mode == "execeval" and entry is not None:
            shown = {
                "compile_cmd": entry.compile_cmd,
                "compile_flags": entry.compile_flags,
                "execute_cmd": entry.execute_cmd,
                "execute_flags": entry.execute_flags,
                "is_compiled": True,
            }
        else:
            compile_argv = _show_argv(rt.binary, rt.compile or ())
            run_argv = _show_argv(rt.binary, rt.run)
            shown = {
                "compile_cmd": compile_argv[0] if compile_argv else "",
                "compile_flags": " ".join(compile_argv[1:]),
                "execute_cmd": run_argv[0] if run_argv else "",
                "execute_flags": " ".join(run_argv[1:]),
                "is_compiled": rt.is_compiled,
            }
        out.append(
            {
                "runtime_name": name,
                **shown,
                "timelimit_factor": _factor(rt.time_factor),
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
    """The HTTP server: a real listen backlog, a bounded admission queue, read deadlines."""

    daemon_threads = True
    request_queue_size = LISTEN_BACKLOG

    def __init__(
        self,
        address: tuple[str, int],
        engine: Engine,
        comparator: str = "default",
        mode: str = "default",
        queue_size: int = DEFAULT_QUEUE_SIZE,
        header_timeout: float = HEADER_TIMEOUT_S,
        body_timeout: float = BODY_TIMEOUT_S,
        token: str | None = None,
        body_budget: int = BODY_BUDGET_BYTES,
    ) -> None:
        refusal = bind_refusal(address[0], token)
        if refusal:
            raise ValueError(refusal)
        if mode not in SERVER_MODES:
            raise ValueError(f"unknown mode {mode!r}; use one of {SERVER_MODES}")
        if comparator not in COMPARATORS:
            raise ValueError(f"unknown comparator {comparator!r}; use one of {COMPARATORS}")
        if queue_size < 0:
            raise ValueError("queue_size must be >= 0")
        super().__init__(address, Handler)
        self.engine = engine
        self.comparator = comparator
        self.mode = mode
        self.queue_size = queue_size
        self.capacity = engine.workers + queue_size
        self.header_timeout = header_timeout
        self.body_timeout = body_timeout
        self.token = token
        self._admitted = 0
        self._admit_lock = threading.Lock()
        self.body_budget = body_budget
        self._body_bytes = 0

    def reserve_body(self, length: int) -> bool:
        """Room for a body of `length` bytes within the budget of all bodies held at once."""
        with self._admit_lock:
            if self._body_bytes + length > self.body_budget:
                return False
            self._body_bytes += length
            return True

    def release_body(self, length: int) -> None:
        with self._admit_lock:
            self._body_bytes -= length

    def admit(self) -> bool:
        """Take a place (judging or waiting for a worker); False when all are taken."""
        with self._admit_lock:
            if self._admitted >= self.capacity:
                return False
            self._admitted += 1
            return True

    def release(self) -> None:
        with self._admit_lock:
            self._admitted -= 1

    def retry_after(self) -> int:
        """Seconds a refused client should wait: roughly one queue turn per worker."""
        with self._admit_lock:
            waiting = max(0, self._admitted - self.engine.workers)
        return max(1, min(60, math.ceil((waiting + 1) / self.engine.workers)))


class _Deadline:
    """Ends the reading side of a connection when a phase (headers, body) takes too long: the
    blocked read returns end-of-file and the handler answers 408."""

    def __init__(self, conn: socket.socket, seconds: float) -> None:
        self.expired = False
        self._conn = conn
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        self.expired = True
        with contextlib.suppress(OSError):
            self._conn.shutdown(socket.SHUT_RD)

    def cancel(self) -> None:
        self._timer.cancel()


class Handler(BaseHTTPRequestHandler):
    server: ExecServer
    protocol_version = "HTTP/1.1"
    _deadline: _Deadline | None = None
    _timed_out = False

    def handle_one_request(self) -> None:
        """One request, its line and headers read under the header deadline."""
        self._deadline = _Deadline(self.connection, self.server.header_timeout)
        try:
            super().handle_one_request()
        finally:
            self._end_phase()
            if self._timed_out:
                self.close_connection = True

    def _end_phase(self) -> bool:
        """Stop the current deadline; True when it had already expired (answer 408)."""
        if self._deadline is None:
            return self._timed_out
        self._deadline.cancel()
        if self._deadline.expired:
            self._timed_out = True
        self._deadline = None
        return self._timed_out

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """Errors the standard library raises (bad request line...) as JSON, and as 408 when
        the cause is a read deadline."""
        if self._end_phase():
            self._send_timeout()
            return
        text = message or HTTPStatus(code).phrase
        self._send(HTTPStatus(code), {"error": text}, close=True)

    def _send_timeout(self) -> None:
        try:
            self._send(
                HTTPStatus.REQUEST_TIMEOUT,
                {"error": "request not received in time (slow or stalled client)"},
                close=True,
            )
        except OSError:
            self.close_connection = True

    def do_GET(self) -> None:
        if self._end_phase():
            self._send_timeout()
            return
        self._guarded(self._get)

    def do_POST(self) -> None:
        if self._end_phase():
            self._send_timeout()
            return
        self._guarded(self._post)

    def _guarded(self, handler: Callable[[], None]) -> None:
        """An unexpected error answers 500 with its message instead of dropping the client; a
        server with a token answers 401 to any request without it (before reading a body)."""
        token = self.server.token
        if token is not None and not bearer_matches(self.headers.get("Authorization"), token):
            self._send(
                HTTPStatus.UNAUTHORIZED,
                {"error": "a bearer token is required"},
                close=True,
                headers={"WWW-Authenticate": "Bearer"},
            )
            return
        try:
            handler()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as exc:
            self._send(
                HTTPStatus.INTERNAL_SERVER_ERROR, {"error": f"engine failure: {exc!r}"}, close=True
            )

    def _get(self) -> None:
        path, _, query = self.path.partition("?")
        if path.rstrip("/") == "/api/all_runtimes":
            self._send(HTTPStatus.OK, all_runtimes(self.server.mode))
        elif path.rstrip("/") == "/api/info":
            status, payload = server_info(self.server, query)
            self._send(status, payload)
        else:
            self._send(HTTPStatus.NOT_FOUND, {"error": f"no such endpoint: GET {self.path}"})

    def _read_body(self) -> bytes | None:
        """The body, read under the body deadline (None: an answer was already sent)."""
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            self._send(
                HTTPStatus.LENGTH_REQUIRED, {"error": "Content-Length is required"}, close=True
            )
            return None
        if length < 0 or length > MAX_BODY_BYTES:
            self._send(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                {"error": f"body over {MAX_BODY_BYTES} bytes"},
                close=True,
            )
            return None
        if not self.server.reserve_body(length):
            self._send(
                HTTPStatus.SERVICE_UNAVAILABLE,
                {"error": "server busy: too many request bytes in flight"},
                close=True,
                headers={"Retry-After": str(self.server.retry_after())},
            )
            self._discard_unread(length)
            return None
        raw: bytes | None = None
        try:
            self._deadline = _Deadline(self.connection, self.server.body_timeout)
            raw = self.rfile.read(length)
            if self._end_phase() or len(raw) < length:
                raw = None
        finally:
            if raw is None:
                # given back before the 408 goes out: a client that reads it may retry at once
                self.server.release_body(length)
        if raw is None:
            self._send_timeout()
        return raw

    def _post(self) -> None:
        raw = self._read_body()
        if raw is None:
            return
        try:
            self._post_body(raw)
        finally:
            self.server.release_body(len(raw))

    def _post_body(self, raw: bytes) -> None:
        path = self.path.rstrip("/")
        if path == "/api/judge":
            self._judge(raw)
            return
        if path != "/api/execute_code":
            self._send(HTTPStatus.NOT_FOUND, {"error": f"no such endpoint: POST {self.path}"})
            return
        try:
            body = json.loads(raw)
            prepared = prepare_request(body, self.server.mode, self.server.comparator)
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
        try:
            # the job's fixed bounds (sizes, counts, numbers) are checked before it is admitted
            validate_job(prepared.job, self.server.engine.input_limits)
        except InvalidJob as exc:
            self._send(HTTPStatus.BAD_REQUEST, {"error": str(exc)})
            return
        if not self._admit():
            return
        try:
            # the engine runs one program per worker at a time; admitted requests wait here
            result = self.server.engine.judge_as(prepared.job, prepared.runtime)
        finally:
            self.server.release()
        if result.verdict is Verdict.INFRA_ERROR:
            self._send(
                HTTPStatus.INTERNAL_SERVER_ERROR, {"error": f"engine failure: {result.detail}"}
            )
            return
        self._send(HTTPStatus.OK, response_from_result(prepared, result))

    def _admit(self) -> bool:
        """A place for one request, else 503 with `Retry-After` (and False)."""
        if self.server.admit():
            return True
        retry = self.server.retry_after()
        self._send(
            HTTPStatus.SERVICE_UNAVAILABLE,
            {"error": f"server busy: {self.server.capacity} requests queued or running"},
            headers={"Retry-After": str(retry)},
        )
        return False

    def _judge(self, raw: bytes) -> None:
        """`POST /api/judge`: one whole Job in, its whole Result out (INFRA_ERROR included:
        the client decides what an engine failure means). An `engine` object beside the job
        holds the driver's speed-up switches (`config.SPEEDUPS`, booleans only)."""
        try:
            body = json.loads(raw)
            if not isinstance(body, dict) or set(body) not in ({"job"}, {"job", "engine"}):
                raise ProtocolError('the body must be {"job": {...}} (and "engine": {...})')
            job = job_from_wire(body["job"])
            validate_job(job, self.server.engine.input_limits)
            # the driver's speed-up switches (config.SPEEDUPS only: never isolation), validated
            switches = (self.server.engine.config or current()).with_speedups(body.get("engine"))
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
            self._send(HTTPStatus.BAD_REQUEST, {"error": f"invalid JSON: {exc!r}"[:500]})
            return
        except ValueError as exc:  # ProtocolError, InvalidJob, a huge integer
            self._send(HTTPStatus.BAD_REQUEST, {"error": str(exc)[:2000]})
            return
        if not self._admit():
            return
        try:
            with using(switches):
                result = self.server.engine.judge(job)
        finally:
            self.server.release()
        self._send(
            HTTPStatus.OK,
            {"result": result.to_dict(), "server": {"engine_version": ENGINE_VERSION}},
        )

    def _send(
        self,
        status: HTTPStatus,
        payload: Any,
        close: bool = False,
        headers: dict[str, str] | None = None,
    ) -> None:
        data = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(data)

    def _discard_unread(self, length: int) -> None:
        """After a refusal sent without reading the body: read and drop what the client still
        sends (64 KiB at a time, never held, for at most DISCARD_S), so that closing does not
        reset the connection before the client has read the answer (an RST drops it)."""
        deadline = time.monotonic() + DISCARD_S
        left = length
        with contextlib.suppress(OSError):
            self.wfile.flush()
            while left > 0:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self.connection.settimeout(remaining)
                chunk = self.connection.recv(min(left, 1 << 16))
                if not chunk:
                    break
                left -= len(chunk)

    def log_message(self, format: str, *args: Any) -> None:
        """Silenced: one access-log line per request would drown the batch output; the engine
        reports through its results instead."""


def server_info(server: ExecServer, query: str) -> tuple[HTTPStatus, dict[str, Any]]:
    """`GET /api/info[?language=NAME]`: what judges here (engine version, workers, backend,
    isolation policy) and, with a language, the runtime that judges it here."""
    engine = server.engine
    info: dict[str, Any] = {
        "protocol": PROTOCOL_VERSION,
        "engine_version": ENGINE_VERSION,
        "workers": engine.workers,
        "capacity": server.capacity,
        "mode": server.mode,
        "isolation_policy": engine.isolation,
        "backend": engine.backend.describe(),
    }
    params = parse_qs(query, max_num_fields=4)
    names = params.get("language")
    if names:
        try:
            rt = engine.backend.resolve(names[0])
        except UnknownLanguageError as exc:
            return HTTPStatus.BAD_REQUEST, {"error": f"field 'language': {exc}"}
        info["runtime"] = {
            **{k: v for k, v in rt.info().items() if k in ("name", "cluster", "version")},
            "binary": rt.binary,
            "available": rt.available,
            "reason": rt.reason,
            "fingerprint": engine.backend.runtime_fingerprint(rt),
            "time_factor": rt.time_factor,
        }
    return HTTPStatus.OK, info


def make_server(
    host: str = "127.0.0.1",
    port: int = 5000,
    workers: int | None = None,
    comparator: str = "default",
    mode: str = "default",
    queue_size: int = DEFAULT_QUEUE_SIZE,
    header_timeout: float = HEADER_TIMEOUT_S,
    body_timeout: float = BODY_TIMEOUT_S,
    isolation: str = "required",
    backend: str | None = None,
    token: str | None = None,
    backend_options: dict[str, str] | None = None,
    body_budget: int = BODY_BUDGET_BYTES,
) -> ExecServer:
    refusal = bind_refusal(host, token)  # before anything is built
    if refusal:
        raise ValueError(refusal)
    return ExecServer(
        (host, port),
        Engine(
            workers=workers,
            isolation=isolation,
            backend=get_backend(backend, backend_options),
        ),
        comparator=comparator,
        mode=mode,
        queue_size=queue_size,
        header_timeout=header_timeout,
        body_timeout=body_timeout,
        token=token,
        body_budget=body_budget,
    )


def serve(
    host: str = "127.0.0.1",
    port: int = 5000,
    workers: int | None = None,
    comparator: str = "default",
    mode: str = "default",
    queue_size: int = DEFAULT_QUEUE_SIZE,
    isolation: str = "required",
    backend: str | None = None,
    token: str | None = None,
    backend_options: dict[str, str] | None = None,
) -> None:
    server = make_server(
        host,
        port,
        workers,
        comparator,
        mode,
        queue_size,
        isolation=isolation,
        backend=backend,
        token=token,
        backend_options=backend_options,
    )
    bound_host, bound_port = server.server_address[:2]
    print(
        f"serving the ExecEval-compatible API ({mode} mode) on "
        f"http://{bound_host!s}:{bound_port}/api/",
        flush=True,
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
