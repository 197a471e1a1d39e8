"""The HTTP server under concurrent load and against slow clients (real HTTP on 127.0.0.1)."""

from __future__ import annotations

import http.client
import json
import socket
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

from code_eval_taskpack.execution.server.http import DEFAULT_QUEUE_SIZE, ExecServer, make_server
from tests.conftest import require_runtime


@contextmanager
def running(**kwargs: Any) -> Iterator[ExecServer]:
    srv = make_server("127.0.0.1", 0, **kwargs)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join(timeout=10)


def _post(srv: ExecServer, body: Any) -> tuple[int, dict[str, str], Any]:
    host, port = srv.server_address[:2]
    conn = http.client.HTTPConnection(str(host), port, timeout=300)
    try:
        conn.request(
            "POST",
            "/api/execute_code",
            body=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        resp = conn.getresponse()
        return resp.status, dict(resp.getheaders()), json.loads(resp.read())
    finally:
        conn.close()


def _program(i: int, sleep_s: float = 0.0) -> dict[str, Any]:
    pause = f"import time; time.sleep({sleep_s})\n" if sleep_s else ""
    return {
        "language": "Python 3",
        "source_code": f"{pause}print({i})\n",
        "unittests": [{"input": "", "output": [str(i)]}],
    }


def test_default_queue_answers_64_concurrent_requests_with_verdicts() -> None:
    require_runtime("Python 3")
    assert DEFAULT_QUEUE_SIZE >= 64
    n = 64
    with running(workers=2) as srv:
        start = threading.Barrier(n)

        def one(i: int) -> tuple[int, Any]:
            start.wait()
            status, _, reply = _post(srv, _program(i))
            return status, reply

        with ThreadPoolExecutor(max_workers=n) as pool:
            answers = list(pool.map(one, range(n)))
    assert [status for status, _ in answers] == [200] * n
    # each client got its own program's verdict: nothing lost, nothing swapped or duplicated
    for i, (_, reply) in enumerate(answers):
        (entry,) = reply["data"]
        assert entry["exec_outcome"] == "PASSED" and entry["result"] == str(i)


def test_full_queue_answers_503_with_retry_after() -> None:
    require_runtime("Python 3")
    n = 8
    with running(workers=1, queue_size=1) as srv:
        assert srv.capacity == 2
        start = threading.Barrier(n)

        def one(i: int) -> tuple[int, dict[str, str], Any]:
            start.wait()
            return _post(srv, _program(i, sleep_s=3))

        with ThreadPoolExecutor(max_workers=n) as pool:
            answers = list(pool.map(one, range(n)))
    statuses = [status for status, _, _ in answers]
    assert set(statuses) <= {200, 503}, statuses
    assert 1 <= statuses.count(200) <= n - 1 and statuses.count(503) >= 1
    for i, (status, headers, reply) in enumerate(answers):
        if status == 503:
            assert int(headers["Retry-After"]) >= 1
            assert "busy" in reply["error"]
        else:
            assert reply["data"][0]["result"] == str(i)


def _stalled(srv: ExecServer, data: bytes) -> socket.socket:
    host, port = srv.server_address[:2]
    sock = socket.create_connection((str(host), port), timeout=60)
    sock.sendall(data)
    return sock


def _read_all(sock: socket.socket) -> bytes:
    chunks: list[bytes] = []
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def test_stalled_clients_time_out_without_blocking_others() -> None:
    require_runtime("Python 3")
    with running(workers=1, header_timeout=2.0, body_timeout=2.0) as srv:
        # half a header block, and a body that never arrives: more stalled clients than workers
        half_headers = [
            _stalled(srv, b"POST /api/execute_code HTTP/1.1\r\nHost: x\r\nContent-Ty")
            for _ in range(3)
        ]
        short_body = _stalled(
            srv,
            b'POST /api/execute_code HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"lang',
        )
        status, _, reply = _post(srv, _program(7))
        assert status == 200 and reply["data"][0]["exec_outcome"] == "PASSED"
        for sock in [*half_headers, short_body]:
            answer = _read_all(sock)  # the server answers, then closes the connection
            sock.close()
            assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
            assert b"stalled" in answer
        # the server still serves
        status, _, reply = _post(srv, _program(8))
        assert status == 200 and reply["data"][0]["result"] == "8"
