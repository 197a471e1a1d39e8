"""The engine's HTTP server (standard library only): one threading server on one port for two
APIs, ExecEval's (`POST /api/execute_code`, `GET /api/all_runtimes`: `execution/execeval/api.py`)
and the remote backend's judge server (`POST /api/judge`, `GET /api/info`:
`execution/backends/remote/judge_api.py`). Here: reading requests, admitting them and sending
the answers.

The server binds to 127.0.0.1 unless given a token (`execution/auth.py`): then every request
needs it as a bearer token (401 otherwise). An unexpected error is answered 500 with its message.

Load: the listen backlog is large, at most `workers + queue_size` requests are admitted (judging
or waiting for a worker); any other gets 503 with `Retry-After`. Reading a request's line and
headers, then its body, each have a deadline (`execution/deadline.py`): a slow or stalled client
gets 408 and its connection closed, and never holds an engine worker (bodies are read before
admission). The bodies held at once, all connections together, stay within `BODY_BUDGET_BYTES`
(503 with `Retry-After` beyond).
"""

from __future__ import annotations

import contextlib
import json
import math
import socket
import threading
import time
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ..auth import bearer_matches, bind_refusal
from ..backends import get_backend
from ..backends.remote.judge_api import judge, parse_judge, server_info
from ..deadline import Deadline
from ..execeval.api import SERVER_MODES, Reply, all_runtimes, execute_code, parse_execute_code
from ..judge.engine import Engine
from ..judge.jobfile import job_from_record
from ..run.compare import MODES as COMPARATORS

MAX_BODY_BYTES = 256 * 1024 * 1024
#: bytes of request bodies held at once, all connections together (each body is read whole
#: before admission, so without it many large bodies in flight would multiply memory)
BODY_BUDGET_BYTES = 2 * MAX_BODY_BYTES
#: seconds a handler keeps reading (and dropping) the body of a request refused unread
DISCARD_S = 1.0
#: requests admitted beyond the ones being judged (each waits for a worker)
DEFAULT_QUEUE_SIZE = 64
#: listen backlog: connections the kernel holds before the accept loop takes them
LISTEN_BACKLOG = 1024
HEADER_TIMEOUT_S = 10.0
BODY_TIMEOUT_S = 60.0


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


class Handler(BaseHTTPRequestHandler):
    server: ExecServer
    protocol_version = "HTTP/1.1"
    _deadline: Deadline | None = None
    _timed_out = False

    def handle_one_request(self) -> None:
        """One request, its line and headers read under the header deadline."""
        self._deadline = Deadline(self.connection, self.server.header_timeout, socket.SHUT_RD)
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
            status, payload = server_info(
                self.server.engine, query, self.server.capacity, self.server.mode
            )
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
            self._deadline = Deadline(self.connection, self.server.body_timeout, socket.SHUT_RD)
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
        """Routes a body: each API parses it (a bad one is answered at once), then judges it
        once admitted."""
        path = self.path.rstrip("/")
        engine = self.server.engine
        if path == "/api/judge":
            request = parse_judge(raw, engine)
            if isinstance(request, tuple):
                self._send(*request)
            else:
                self._admitted(lambda: judge(engine, request))
        elif path == "/api/execute_code":
            prepared = parse_execute_code(
                raw, engine, self.server.mode, self.server.comparator, job_from_record
            )
            if isinstance(prepared, tuple):
                self._send(*prepared)
            else:
                self._admitted(lambda: execute_code(engine, prepared))
        else:
            self._send(HTTPStatus.NOT_FOUND, {"error": f"no such endpoint: POST {self.path}"})

    def _admitted(self, work: Callable[[], Reply]) -> None:
        """Runs `work` in an admitted place (it may wait for an engine worker) and sends its
        answer, else answers 503."""
        if not self._admit():
            return
        try:
            status, payload = work()
        finally:
            self.server.release()
        self._send(status, payload)

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
