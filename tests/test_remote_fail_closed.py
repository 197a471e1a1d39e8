"""The remote backend fails closed against hostile judge servers on 127.0.0.1: a server that
drips its reply is cut at the request's deadline, a reply larger than any result of the job is
refused without being held or parsed whole, a server dropped mid-batch is said on stderr and in
the results, and the isolation policy holds on the lm-eval path (`judge_programs`) too."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from code_eval_taskpack.execution import Engine, Job, TestCase, Verdict
from code_eval_taskpack.execution.backends.remote import client as remote
from code_eval_taskpack.execution.backends.remote.client import RemoteBackend
from code_eval_taskpack.execution.isolation import REQUIRED_LAYERS
from code_eval_taskpack.execution.server.http import make_server
from code_eval_taskpack.utils.judging import judge_programs
from tests.conftest import require_runtime

ADD = "a, b = map(int, input().split())\nprint(a + b)\n"
TESTS = (TestCase("1 2\n", ("3",)), TestCase("2 2\n", ("4",)))


def _job(i: int = 0) -> Job:
    return Job("Python 3", ADD + f"# {i}\n", TESTS, time_limit_s=1.0, id=f"job{i}")


def _runtime_info() -> dict[str, Any]:
    from code_eval_taskpack.execution.backends import get_backend

    rt = get_backend("local").resolve("Python 3")
    return {
        "name": rt.name,
        "cluster": rt.cluster,
        "version": rt.version,
        "binary": rt.binary,
        "available": True,
        "reason": "",
        "fingerprint": rt.fingerprint(),
        "time_factor": rt.time_factor,
    }


def _passed(isolation: dict[str, Any]) -> dict[str, Any]:
    test = {
        "verdict": "PASSED",
        "time_s": 0.01,
        "wall_s": 0.02,
        "memory_mb": 5.0,
        "exit_code": 0,
        "signal": None,
        "stdout": "3\n",
        "stderr": "",
        "detail": "",
    }
    return {
        "id": "",
        "verdict": "PASSED",
        "tests": [test, dict(test, stdout="4\n")],
        "compile": None,
        "isolation": isolation,
        "runtime": {"name": "Python 3"},
        "detail": "",
        "cached": False,
    }


class _Hostile(BaseHTTPRequestHandler):
    """Speaks our protocol on GET (policy `required`); POST does what `server.attack` says."""

    protocol_version = "HTTP/1.1"

    def _send(self, data: bytes, length: bool = True) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if length:
            self.send_header("Content-Length", str(len(data)))
        else:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        server: Any = self.server
        if server.attack.startswith("execeval"):  # a foreign ExecEval server: no /api/info
            if self.path.startswith("/api/all_runtimes"):
                self._send(json.dumps([{"runtime_name": "Python 3", "execute_cmd": "py"}]).encode())
            elif server.attack == "execeval-html":
                self.send_error(404)  # Flask's own error page
            else:
                data = b'{"error": "not found"}'
                self.send_response(404)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            return
        info = {"protocol": 1, "workers": 1, "isolation_policy": "required", "backend": {}}
        if "language=" in self.path:
            info["runtime"] = _runtime_info()
        self._send(json.dumps(info).encode())

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        server: Any = self.server
        attack = server.attack
        if attack == "drip":  # one byte at a time, each well within a socket timeout
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")
            end = time.monotonic() + 60
            while time.monotonic() < end:
                try:
                    self.wfile.write(b" ")
                    self.wfile.flush()
                except OSError:
                    return
                time.sleep(0.3)
        elif attack == "reset":  # dies mid-batch: no answer at all
            self.close_connection = True
        elif attack in ("huge", "huge-streamed", "many-values"):
            size = {"many-values": 900_000}.get(attack, 60 * 1024 * 1024)
            head, tail = b'{"result": {"tests": [', b"[]]}}"
            self._send(head + b"[]," * ((size - len(head)) // 3) + tail, attack != "huge-streamed")
        elif attack == "weak-snapshot":  # advertises `required`, judged without namespaces
            snapshot = {"backend": "local", **dict.fromkeys(REQUIRED_LAYERS, True)}
            snapshot["pid_namespace"] = snapshot["mount_namespace"] = False
            self._send(json.dumps({"result": _passed(snapshot)}).encode())
        elif attack.startswith("execeval"):
            entries = [{"exec_outcome": "PASSED", "result": o, "time_consumed": 0.01} for o in "34"]
            self._send(json.dumps({"data": entries}).encode())

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def hostile_server(attack: str) -> Iterator[tuple[str, Any]]:
    """A hostile server's URL and the server (its `attack` may be changed while it runs)."""
    srv: Any = ThreadingHTTPServer(("127.0.0.1", 0), _Hostile)
    srv.daemon_threads = True
    srv.attack = attack
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}", srv
    finally:
        srv.shutdown()
        srv.server_close()


@contextmanager
def hostile(attack: str) -> Iterator[str]:
    with hostile_server(attack) as (url, _):
        yield url


@contextmanager
def real_server(**kwargs: Any) -> Iterator[str]:
    srv = make_server("127.0.0.1", 0, workers=1, **kwargs)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
        srv.server_close()


# -- bounded exchanges ---------------------------------------------------------------------------


def test_a_dripping_server_is_cut_at_the_deadline() -> None:
    """A reply dripped a byte every 0.3 s never trips a per-read timeout; the request's own
    deadline (2 s here) ends it, and the job is an INFRA_ERROR naming the server."""
    with hostile("drip") as url:
        backend = RemoteBackend(servers=url, timeout="2", retries="0")
        got: list[Any] = []
        worker = threading.Thread(
            target=lambda: got.append(Engine(backend=backend, workers=1).judge(_job())),
            daemon=True,
        )
        worker.start()
        worker.join(timeout=30)  # the guard: far beyond the deadline, far below the drip
        assert got, "the client was still waiting on the dripping server"
        (result,) = got
        assert result.verdict is Verdict.INFRA_ERROR
        assert url in result.detail and "timed out" in result.detail


CLIENT = """
import json, resource, sys, tracemalloc
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))  # a runaway fails, not the machine
from code_eval_taskpack.execution import Job, TestCase
from code_eval_taskpack.execution.backends.remote.client import RemoteBackend
tests = (TestCase("1 2\\n", ("3",)), TestCase("2 2\\n", ("4",)))
job = Job("Python 3", "print(3)\\n", tests)
out = []
for url in sys.argv[1:]:
    backend = RemoteBackend(servers=url, retries="0")
    rt = backend.resolve("Python 3")
    tracemalloc.start()
    result = backend.judge(job, rt, policy="required")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    out.append({"verdict": result.verdict.value, "detail": result.detail, "peak": peak})
print(json.dumps(out))
"""


def test_replies_are_capped_at_what_a_result_can_be() -> None:
    """60 MiB replies (announced or streamed) and a reply of a million tiny values to a job of
    two tests: each is refused, and the client never holds more than a few MiB for it."""
    attacks = ("huge", "huge-streamed", "many-values")
    with hostile(attacks[0]) as u1, hostile(attacks[1]) as u2, hostile(attacks[2]) as u3:
        proc = subprocess.run(
            [sys.executable, "-c", CLIENT, u1, u2, u3],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert proc.returncode == 0, proc.stderr[-2000:]
    answers = json.loads(proc.stdout.strip().splitlines()[-1])
    for attack, url, answer in zip(attacks, (u1, u2, u3), answers, strict=True):
        assert answer["verdict"] == "INFRA_ERROR", (attack, answer)
        assert url in answer["detail"], (attack, answer)
        assert answer["peak"] < 16 * 1024 * 1024, (attack, answer)


def test_a_server_dropped_mid_batch_is_said_on_stderr_and_in_the_results(
    capfd: pytest.CaptureFixture[str],
) -> None:
    require_runtime("Python 3")
    with hostile("reset") as bad, real_server() as good:
        backend = RemoteBackend(servers=f"{bad},{good}")
        jobs = [_job(i) for i in range(3)]
        results = Engine(backend=backend, workers=1).judge_many(jobs)
        records = judge_programs(
            [_job(9)],
            workers=1,
            cache=None,
            comparator="default",
            label="drop",
            backend="remote",
            backend_options={"servers": f"{bad},{good}"},
            progress=lambda done, total: None,
        )
    err = capfd.readouterr().err
    assert f"judge server {bad} taken out of rotation" in err, err
    assert [r.verdict for r in results] == [Verdict.PASSED] * 3
    assert all(r.isolation["judged_by"] == good for r in results)
    failed = [r for r in results if "failed_servers" in r.isolation]
    assert failed and all(bad in f for r in failed for f in r.isolation["failed_servers"])
    assert all("RemoteDisconnected" in r.isolation["failed_servers"][0] for r in failed)
    others = [r for r in results if r not in failed]
    assert others and all(bad in r.isolation["servers_out_of_rotation"][0] for r in others)
    # the logged samples of a benchmark say it too
    (record,) = records
    assert record["verdict"] == "PASSED"
    assert bad in json.dumps(record["judged_by"]), record


# -- the policy on every path --------------------------------------------------------------------


def _lm_eval_path(url: str) -> dict[str, Any]:
    (record,) = judge_programs(
        [_job()],
        workers=1,
        cache=None,
        comparator="default",
        label="policy",
        backend="remote",
        backend_options={"servers": url},
        progress=lambda done, total: None,
    )
    return record


def test_judge_programs_refuses_a_best_effort_server() -> None:
    require_runtime("Python 3")
    with real_server(isolation="best-effort") as url:
        record = _lm_eval_path(url)
        assert record["verdict"] == "INFRA_ERROR", record
        assert "--isolation best-effort" in record["detail"] and url in record["detail"]
        # the CLI refuses it with the same check, before any work
        assert "--isolation best-effort" in RemoteBackend(servers=url).host_refusal("required")
        best = Engine(backend=RemoteBackend(servers=url), isolation="best-effort")
        assert best.judge(_job()).verdict is Verdict.PASSED


@pytest.mark.parametrize("attack", ["execeval", "execeval-html"])
def test_judge_programs_refuses_a_foreign_execeval_server(attack: str) -> None:
    """Found by its missing `/api/info` (a JSON or an HTML 404) and refused under `required`."""
    with hostile(attack) as url:
        record = _lm_eval_path(url)
        assert record["verdict"] == "INFRA_ERROR", record
        assert "ExecEval server" in record["detail"] and url in record["detail"]
        best = Engine(backend=RemoteBackend(servers=url), isolation="best-effort")
        assert best.judge(_job()).verdict is Verdict.PASSED


def test_a_server_that_falls_is_asked_again_what_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    """One of ours hangs up mid-job, then comes back on its URL as an ExecEval server: the next
    job is refused as on an ExecEval server, not sent to it as to the server it was."""
    monkeypatch.setattr(remote, "DEAD_FOR_S", 0.2)
    with hostile_server("reset") as (url, srv):
        backend = RemoteBackend(servers=url, retries="0")
        engine = Engine(backend=backend, workers=1)
        first = engine.judge(_job(1))
        assert first.verdict is Verdict.INFRA_ERROR and "RemoteDisconnected" in first.detail
        srv.attack = "execeval"
        time.sleep(0.3)  # back in rotation
        second = engine.judge(_job(2))
        assert second.verdict is Verdict.INFRA_ERROR, second
        assert f"judge server {url} is an ExecEval server" in second.detail, second.detail
        assert backend.describe()["servers"][0]["kind"] == "execeval"
        best = Engine(backend=backend, workers=1, isolation="best-effort").judge(_job(3))
        assert best.verdict is Verdict.PASSED and best.isolation["execeval_server"], best


def test_a_result_judged_without_required_layers_is_not_a_verdict() -> None:
    """A server that advertises `required` but whose result shows namespaces inactive."""
    with hostile("weak-snapshot") as url:
        record = _lm_eval_path(url)
        assert record["verdict"] == "INFRA_ERROR", record
        assert "pid_namespace" in record["detail"] and "mount_namespace" in record["detail"]
        assert url in record["detail"]


# -- the other direction: the judge server bounds what it is sent ------------------------------


def test_the_server_bounds_the_bodies_it_holds_at_once() -> None:
    """Bodies are read whole before admission: a client announcing a large body and dripping it
    takes its part of the budget, and another large body meanwhile gets 503 with Retry-After
    instead of one more copy in memory; the stalled client gets 408 and its part comes back."""
    import http.client
    import socket

    srv = make_server("127.0.0.1", 0, workers=1, body_timeout=2.0, body_budget=1 << 20)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    port = srv.server_address[1]
    big = json.dumps({"job": {"language": "Nope", "pad": " " * 700_000}}).encode()

    def post() -> tuple[int, dict[str, str]]:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            conn.request("POST", "/api/judge", body=big)
            resp = conn.getresponse()
            resp.read()
            return resp.status, dict(resp.getheaders())
        finally:
            conn.close()

    try:
        stalled = socket.create_connection(("127.0.0.1", port), timeout=30)
        stalled.sendall(b"POST /api/judge HTTP/1.1\r\nContent-Length: 700000\r\n\r\n{")
        guard = time.monotonic() + 10
        while srv._body_bytes == 0 and time.monotonic() < guard:  # headers read, body reserved
            time.sleep(0.02)
        status, headers = post()
        assert status == 503 and int(headers["Retry-After"]) >= 1
        answer = stalled.recv(4096)  # the body deadline: 408, connection closed
        stalled.close()
        assert answer.startswith(b"HTTP/1.1 408"), answer[:100]
        status, _ = post()
        assert status == 400  # read and refused on its merits: the budget was given back
    finally:
        srv.shutdown()
        srv.server_close()
