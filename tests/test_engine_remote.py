"""The remote backend against real judge servers (`code-exec serve`) on loopback ports: fair
spreading, a server killed mid-batch, tokens, 503 retries, and hostile replies."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from code_eval_taskpack.execution import Engine, Job, TestCase, Verdict
from code_eval_taskpack.execution.auth import bearer_matches, bind_refusal, new_token, read_token
from code_eval_taskpack.execution.backends import get_backend
from code_eval_taskpack.execution.backends.remote.client import RemoteBackend
from code_eval_taskpack.execution.cli.main import main as cli_main
from code_eval_taskpack.execution.isolation import REQUIRED_LAYERS
from code_eval_taskpack.execution.server.http import make_server
from tests.conftest import require_runtime

ADD = "a, b = map(int, input().split())\nprint(a + b{extra})\n"


def _jobs(n: int) -> list[Job]:
    """Distinct Python programs with every common verdict (a short sleep spreads the batch)."""
    out = []
    for i in range(n):
        kind = i % 4
        body = {
            0: ADD.format(extra=f" + 0 * {i}"),
            1: ADD.format(extra=f" + 1 + 0 * {i}"),  # wrong
            2: f"import sys\nsys.exit({i % 7 + 1})\n",
            3: f"x = {i}\nwhile True:\n    x += 1\n",
        }[kind]
        src = f"import time\ntime.sleep(0.05)\n{body}"
        tests = (TestCase("1 2\n", ("3",)), TestCase("2 2\n", ("4",)))
        out.append(Job("Python 3", src, tests, time_limit_s=0.2, id=f"job{i}"))
    return out


def _start_server(*extra: str) -> tuple[subprocess.Popen[str], str]:
    """A real `code-exec serve` on an ephemeral loopback port, and its URL."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "code_eval_taskpack.execution", "serve", "--port", "0", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if "http://" not in line:
        proc.kill()
        raise AssertionError(
            f"server did not start: {line!r} {proc.stderr.read() if proc.stderr else ''}"
        )
    return proc, line.split(" on ")[-1].strip().removesuffix("/api/")


@pytest.fixture
def two_servers() -> Iterator[list[tuple[subprocess.Popen[str], str]]]:
    servers = [_start_server("--workers", "2"), _start_server("--workers", "2")]
    yield servers
    for proc, _ in servers:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)


def test_two_servers_one_killed_mid_batch(two_servers: list[Any]) -> None:
    """Every job is answered exactly once, by a server that was alive, with the local verdict."""
    (_, url1), (victim, url2) = two_servers
    backend = get_backend("remote", {"servers": f"{url1},{url2}"})
    assert isinstance(backend, RemoteBackend)
    jobs = _jobs(16)
    killed = threading.Event()

    def progress(done: int, total: int) -> None:
        if done >= 4 and not killed.is_set():
            killed.set()
            victim.send_signal(signal.SIGKILL)

    remote = Engine(backend=backend).judge_many(jobs, progress=progress)
    assert killed.is_set()
    local = Engine(backend="local").judge_many(jobs)
    assert [r.id for r in remote] == [j.id for j in jobs]
    assert [r.verdict for r in remote] == [r.verdict for r in local]
    assert {r.verdict for r in local} >= {
        Verdict.PASSED,
        Verdict.WRONG_ANSWER,
        Verdict.RUNTIME_ERROR,
        Verdict.TIME_LIMIT_EXCEEDED,
    }
    judged_by = [r.isolation["judged_by"] for r in remote]
    assert set(judged_by) == {url1, url2}  # both served before the kill
    assert all(r.isolation["backend"] == "remote" for r in remote)
    assert all(r.isolation["server_backend"] == "local" for r in remote)
    state = {s["url"]: s for s in backend.describe()["servers"]}
    assert state[url2]["out_of_rotation"] and state[url2]["failures"] >= 1
    assert state[url1]["judged"] + state[url2]["judged"] == len(jobs)


def test_cache_keys_follow_the_servers_runtime(two_servers: list[Any], tmp_path: Path) -> None:
    """Results are cached under the servers' fingerprints, and a rerun is served from cache."""
    (_, url1), (_, url2) = two_servers
    backend = get_backend("remote", {"servers": f"{url1},{url2}"})
    rt = backend.resolve("Python 3")
    local = get_backend("local").resolve("Python 3")
    assert rt.version == local.version and rt.available
    assert rt.fingerprint().startswith("remote:") and local.fingerprint() in rt.fingerprint()
    jobs = _jobs(4)
    first = Engine(backend=backend, cache=tmp_path).judge_many(jobs)
    again = Engine(backend=backend, cache=tmp_path)
    second = again.judge_many(jobs)
    assert again.judged == 0 and all(r.cached for r in second)
    assert [r.verdict for r in first] == [r.verdict for r in second]


def test_busy_server_is_retried_after_its_retry_after() -> None:
    """A server with one worker and no queue answers 503 to the others: they wait and retry."""
    srv = make_server("127.0.0.1", 0, workers=1, queue_size=0)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{srv.server_address[1]}"
        backend = RemoteBackend(servers=url)
        jobs = [j for j in _jobs(8) if j.id in ("job0", "job1", "job4", "job5")]
        results = Engine(backend=backend, workers=4).judge_many(jobs)
        assert [r.verdict for r in results] == [
            Verdict.PASSED,
            Verdict.WRONG_ANSWER,
            Verdict.PASSED,
            Verdict.WRONG_ANSWER,
        ]
        state = backend.describe()["servers"][0]
        assert state["judged"] == 4
        assert state["failures"] >= 1 and "503" in state["last_error"]
        assert not state["out_of_rotation"]  # busy is not dead
    finally:
        srv.shutdown()
        srv.server_close()


# -- tokens --------------------------------------------------------------------------------------


def _token_file(tmp_path: Path, token: str) -> Path:
    path = tmp_path / "token"
    path.write_text(token + "\n")
    path.chmod(0o600)
    return path


def test_token_rules(tmp_path: Path) -> None:
    token = new_token()
    assert read_token(_token_file(tmp_path, token)) == token
    short = _token_file(tmp_path, "tooshort")
    with pytest.raises(ValueError, match="16"):
        read_token(short)
    loose = _token_file(tmp_path, token)
    loose.chmod(0o644)
    with pytest.raises(ValueError, match="readable by others"):
        read_token(loose)
    assert bearer_matches(f"Bearer {token}", token)
    assert not bearer_matches(f"Bearer {token}x", token)
    assert not bearer_matches(f"Basic {token}", token)
    assert not bearer_matches(None, token)
    for host in ("0.0.0.0", "", "192.168.1.5", "::"):
        assert "token" in bind_refusal(host, None)
        with pytest.raises(ValueError, match="without a token"):
            make_server(host, 0)
    assert bind_refusal("127.0.0.1", None) == bind_refusal("::1", None) == ""
    assert bind_refusal("0.0.0.0", token) == ""


def test_serve_refuses_other_addresses_without_a_token(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "code_eval_taskpack.execution", "serve", "--host", "0.0.0.0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "without a token" in proc.stderr
    short = _token_file(tmp_path, "short")
    proc = subprocess.run(
        [sys.executable, "-m", "code_eval_taskpack.execution", "serve", "--token-file", str(short)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "16" in proc.stderr


def test_a_token_guards_every_endpoint(tmp_path: Path) -> None:
    import http.client

    token = new_token()
    good = _token_file(tmp_path, token)
    srv = make_server("127.0.0.1", 0, workers=1, token=token)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{srv.server_address[1]}"
    try:
        for method, path in (
            ("GET", "/api/info"),
            ("GET", "/api/all_runtimes"),
            ("POST", "/api/judge"),
        ):
            conn = http.client.HTTPConnection("127.0.0.1", srv.server_address[1], timeout=30)
            conn.request(method, path, body=b"{}" if method == "POST" else None)
            resp = conn.getresponse()
            assert resp.status == 401 and resp.getheader("WWW-Authenticate") == "Bearer"
            conn.close()
        job = _jobs(1)[0]
        ok = Engine(backend=RemoteBackend(servers=url, token_file=str(good))).judge(job)
        assert ok.verdict is Verdict.PASSED and ok.isolation["judged_by"] == url
        wrong = RemoteBackend(servers=url, token_file=str(_token_file(tmp_path, new_token())))
        assert "401" in wrong.host_refusal("required")
        r = Engine(backend=wrong, workers=1).judge(job)
        assert r.verdict is Verdict.INFRA_ERROR and "401" in r.detail
    finally:
        srv.shutdown()
        srv.server_close()


# -- hostile servers -----------------------------------------------------------------------------


def _good_result() -> dict[str, Any]:
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
        "isolation": {"backend": "local", **dict.fromkeys(REQUIRED_LAYERS, True)},
        "runtime": {"name": "Python 3"},
        "detail": "",
        "cached": False,
    }


def _runtime_info() -> dict[str, Any]:
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


def _mutations() -> dict[str, Callable[[], Any]]:
    def result(**changes: Any) -> Callable[[], Any]:
        return lambda: {"result": {**_good_result(), **changes}}

    def test0(**changes: Any) -> Callable[[], Any]:
        def make() -> Any:
            r = _good_result()
            r["tests"][0].update(changes)
            return {"result": r}

        return make

    return {
        "passed without tests": result(tests=[]),
        "unknown verdict": result(verdict="ACCEPTED"),
        "extra key": lambda: {"result": {**_good_result(), "score": 1}},
        "missing key": lambda: {
            "result": {k: v for k, v in _good_result().items() if k != "tests"}
        },
        "verdict not the first failure": test0(verdict="WRONG_ANSWER"),
        "negative time": test0(time_s=-1.0),
        "string exit code": test0(exit_code="0"),
        "compile error with tests": result(verdict="COMPILATION_ERROR"),
        "more tests than the job": lambda: {
            "result": {**_good_result(), "tests": _good_result()["tests"] * 2}
        },
        "not an object": lambda: ["PASSED"],
        "no result": lambda: {"verdict": "PASSED"},
    }


class _Hostile(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    reply: Callable[[], Any] = staticmethod(lambda: {})
    raw: bytes | None = None

    def _answer(self, payload: Any, raw: bytes | None = None) -> None:
        data = raw if raw is not None else json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        info = {"protocol": 1, "workers": 1, "isolation_policy": "required", "backend": {}}
        if "language=" in self.path:
            info["runtime"] = _runtime_info()
        self._answer(info)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        server: Any = self.server
        self._answer(server.reply(), server.raw)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.mark.parametrize("case", [*sorted(_mutations()), "not json", "huge"])
def test_hostile_replies_are_infra_errors_naming_the_server(case: str) -> None:
    srv: Any = ThreadingHTTPServer(("127.0.0.1", 0), _Hostile)
    srv.daemon_threads = True
    srv.reply = _mutations().get(case, lambda: {})
    srv.raw = {"not json": b"{'verdict': 'PASSED'", "huge": b"[" * 100_000}.get(case)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{srv.server_address[1]}"
        backend = RemoteBackend(servers=url, retries="0")
        job = _jobs(1)[0]
        result = Engine(backend=backend, workers=1).judge(job)
        assert result.verdict is Verdict.INFRA_ERROR, case
        assert url in result.detail
        assert "malformed" in result.detail or "not JSON" in result.detail
        assert not result.tests
    finally:
        srv.shutdown()
        srv.server_close()


def test_the_hostile_server_template_is_accepted_when_well_formed() -> None:
    """The hostile cases above fail because of their one change, not the template."""
    srv: Any = ThreadingHTTPServer(("127.0.0.1", 0), _Hostile)
    srv.daemon_threads = True
    srv.reply = lambda: {"result": _good_result()}
    srv.raw = None
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{srv.server_address[1]}"
        job = _jobs(1)[0]
        result = Engine(backend=RemoteBackend(servers=url), workers=1).judge(job)
        assert result.verdict is Verdict.PASSED and result.isolation["judged_by"] == url
    finally:
        srv.shutdown()
        srv.server_close()


def test_the_server_refuses_malformed_jobs() -> None:
    import http.client

    srv = make_server("127.0.0.1", 0, workers=1)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        bad = [
            b"[]",
            b'{"job": {}}',
            b'{"job": {"language": "Python 3"}, "more": 1}',
            json.dumps(
                {"job": {"language": "Python 3", "source_code": "", "unittests": [], "x": 1}}
            ).encode(),
            json.dumps(
                {
                    "job": {
                        "language": "Nope",
                        "source_code": "",
                        "unittests": [{"input": "", "output": [""]}],
                    }
                }
            ).encode(),
            json.dumps(
                {
                    "job": {
                        "language": "Python 3",
                        "source_code": "",
                        "unittests": [{"input": "", "output": [""]}],
                        "overrides": {"cpu_s": -1},
                    }
                }
            ).encode(),
            b"[" * 100_000,
        ]
        for body in bad:
            conn = http.client.HTTPConnection("127.0.0.1", srv.server_address[1], timeout=30)
            conn.request("POST", "/api/judge", body=body)
            resp = conn.getresponse()
            payload = json.loads(resp.read())
            assert resp.status == 400 and "error" in payload, body[:80]
            conn.close()
    finally:
        srv.shutdown()
        srv.server_close()


# -- ExecEval servers, options, CLI ---------------------------------------------------------------


def test_an_execeval_api_server_is_used_best_effort() -> None:
    """ExecEval's API (here: our server in its ExecEval mode) judges; results say whose verdicts
    they are, and `--isolation required` refuses such a server."""
    srv = make_server("127.0.0.1", 0, workers=2, mode="execeval")
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{srv.server_address[1]}"
        backend = RemoteBackend(servers=url, api="execeval")
        assert "ExecEval server" in backend.host_refusal("required")
        assert backend.host_refusal("best-effort") == ""
        # (ExecEval's own outcome mapping differs from ours on crashes: not compared here)
        jobs = [j for j in _jobs(4) if j.id in ("job0", "job1")]
        results = Engine(backend=backend, isolation="best-effort").judge_many(jobs)
        assert [r.verdict for r in results] == [Verdict.PASSED, Verdict.WRONG_ANSWER]
        assert all(r.isolation["execeval_server"] for r in results)
        assert all(r.isolation["judged_by"] == url for r in results)
    finally:
        srv.shutdown()
        srv.server_close()


def test_options_are_checked() -> None:
    with pytest.raises(ValueError, match="--servers"):
        get_backend("remote", {})
    with pytest.raises(ValueError, match="http://HOST:PORT"):
        get_backend("remote", {"servers": "ftp://x"})
    with pytest.raises(ValueError, match="twice"):
        get_backend("remote", {"servers": "http://a:1,http://a:1"})
    with pytest.raises(ValueError, match="bad options"):
        get_backend("remote", {"servers": "http://a:1", "colour": "red"})
    dead = RemoteBackend(servers="http://127.0.0.1:9")  # the discard port: nothing listens
    assert "no judge server reachable" in dead.host_refusal("required")
    r = Engine(backend=dead, workers=1).judge(_jobs(1)[0])
    assert r.verdict is Verdict.INFRA_ERROR and "127.0.0.1:9" in r.detail


def test_cli_backend_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "a.py"
    src.write_text(ADD.format(extra=""))
    tests = tmp_path / "tests.json"
    tests.write_text(json.dumps([{"input": "1 2\n", "output": ["3"]}]))
    argv = ["run", "--language", "Python 3", "--source", str(src), "--tests", str(tests)]
    assert cli_main([*argv, "--servers", "http://127.0.0.1:9"]) == 2
    assert "--servers" in capsys.readouterr().err  # meant for --backend remote, not local
    assert cli_main([*argv, "--backend", "remote", "--servers", "http://127.0.0.1:9"]) == 1
    assert "no judge server reachable" in capsys.readouterr().err
    srv = make_server("127.0.0.1", 0, workers=1)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{srv.server_address[1]}"
        assert cli_main([*argv, "--backend", "remote", "--servers", url]) == 0
        out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert out["verdict"] == "PASSED" and out["isolation"]["judged_by"] == url
    finally:
        srv.shutdown()
        srv.server_close()


def test_benchmark_settings_reach_the_remote_backend() -> None:
    """`exec_backend`/`exec_servers` in lm-eval metadata judge xCodeEval programs on a server;
    an option meant for another backend is refused, not ignored."""
    from code_eval_taskpack.utils.judging import CaseBuilder
    from lm_eval_tasks.xcodeeval.judging import ExecSettings, judge, settings_from

    with pytest.raises(ValueError, match="exec_servers"):
        settings_from({"exec_servers": "http://127.0.0.1:9"})  # exec_backend is local
    with pytest.raises(ValueError, match="ray_address"):
        settings_from(
            {"exec_backend": "remote", "exec_servers": "http://a:1", "ray_address": "auto"}
        )
    srv = make_server("127.0.0.1", 0, workers=1)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{srv.server_address[1]}"
        settings = settings_from(
            {"exec_backend": "remote", "exec_servers": url, "xcodeeval_exec_cache": "none"}
        )
        assert ExecSettings.thaw(settings.freeze()) == settings
        assert settings.backend_options() == {"servers": url}
        tests = CaseBuilder()([{"input": "1 2\n", "output": ["3"]}])
        progs = [
            settings.program("Python 3", ADD.format(extra=e), tests, 2.0, 256, key=k)
            for e, k in (("", "good"), (" + 1", "bad"))
        ]
        records = judge(progs, settings, progress=lambda done, total: None)
        assert [r["verdict"] for r in records] == ["PASSED", "WRONG_ANSWER"]
    finally:
        srv.shutdown()
        srv.server_close()


def test_the_wire_format_covers_every_result_field() -> None:
    """A field added to the results must be added to the checked wire format too."""
    import dataclasses

    from code_eval_taskpack.execution.backends.remote import protocol as rp
    from code_eval_taskpack.execution.types import CompileResult, TestResult

    assert set(rp._COMPILE_FIELDS) == {f.name for f in dataclasses.fields(CompileResult)}
    assert set(rp._TEST_FIELDS) == {f.name for f in dataclasses.fields(TestResult)}


def test_the_infilling_benchmark_leaves_engine_backends_alone(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A run of both benchmarks hands the infilling tasks xCodeEval's `exec_backend` too: it is
    never applied to them (they grade with their own grader) and is noted once per value."""
    import logging

    from lm_eval_tasks.code_infilling import grading

    grading._noted_backends.clear()
    plain = grading.GradingSettings.from_kwargs({})
    with caplog.at_level(logging.WARNING, logger=grading.__name__):
        for name in ("remote", "ray", "remote"):
            assert (
                grading.GradingSettings.from_kwargs({"metadata": {"exec_backend": name}}) == plain
            )
    notes = [r.getMessage() for r in caplog.records if "does not apply" in r.getMessage()]
    assert len(notes) == 2, notes
    assert all("sg_infilling_grader" in n for n in notes)
    assert "'remote'" in notes[0] and "'ray'" in notes[1]
    caplog.clear()
    assert grading.GradingSettings.from_kwargs({"exec_backend": "local"}) == plain
    assert not caplog.records


@pytest.mark.slow
def test_lm_eval_run_on_judge_servers_logs_who_judged(tmp_path: Path) -> None:
    """A real lm-eval run with `exec_backend: remote` in --metadata: the programs are judged by
    the server and every logged sample names the backend and the server."""
    from lm_eval_tasks.xcodeeval.hooks import verdict_records
    from tests import xcodeeval_support as support
    from tests.lm_fakes import run_cli

    require_runtime("Python")
    srv = make_server("127.0.0.1", 0, workers=1)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{srv.server_address[1]}"
        meta = {
            "xcodeeval_data_dir": str(support.FIXTURES),
            "xcodeeval_exec_cache": "none",
            "exec_backend": "remote",
            "exec_servers": url,
        }
        run = run_cli(
            "tests.xcodeeval_support:oracle",
            "xcodeeval_synth_greedy_python",
            tmp_path / "out",
            "--confirm_run_unsafe_code",
            "--apply_chat_template",
            include_path=support.XCE_DIR,
            metadata=meta,
        )
    finally:
        srv.shutdown()
        srv.server_close()
    assert run.report["results"]["xcodeeval_synth_greedy_python"]["pass@1,judge"] == 1.0
    records = [
        r
        for s in run.samples("xcodeeval_synth_greedy_python")
        for r in verdict_records(s["filtered_resps"][0])
    ]
    assert len(records) == 2
    assert all(r["judged_by"] == {"backend": "remote", "judged_by": url} for r in records), records
