"""The remote backend as a cluster: real judge servers (`code-exec serve`) on loopback ports, one
of them without ruby. A server without a language's toolchain receives no job of it (results say
which servers could judge), and a server killed by pid mid-batch loses no job and answers none
twice: every job gets the local verdict, nothing unjudged is cached, a rerun is served from the
cache."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from code_eval_taskpack.execution import Engine, Job, TestCase, Verdict
from code_eval_taskpack.execution.backends.remote.client import RemoteBackend
from tests.cluster_support import path_without, python_jobs
from tests.conftest import require_binary

SERVE_ARGS = ("--port", "0", "--workers", "1")
RUBY_ADD = "a, b = gets.split.map(&:to_i)\nputs a + b + {k}\n"


def _serve(env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "code_eval_taskpack.execution", "serve", *SERVE_ARGS],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if "http://" not in line:
        proc.kill()
        raise AssertionError(f"server did not start: {line!r}")
    return proc, line.split(" on ")[-1].strip().removesuffix("/api/")


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Any]]:
    require_binary("ruby")
    no_ruby = path_without(["ruby"], tmp_path_factory.mktemp("bin"))
    started = [_serve(dict(os.environ)), _serve(dict(os.environ, PATH=no_ruby))]
    yield started
    for proc, _ in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)


def _counting(backend: RemoteBackend) -> Counter[str]:
    """Counts `backend.judge` calls per job source (one per distinct job, whatever happens)."""
    calls: Counter[str] = Counter()
    original = backend.judge
    lock = threading.Lock()

    def judge(job: Job, runtime: Any, **kwargs: Any) -> Any:
        with lock:
            calls[job.source_code] += 1
        return original(job, runtime, **kwargs)

    backend.judge = judge  # type: ignore[method-assign]
    return calls


def test_a_server_without_a_toolchain_receives_none_of_its_jobs(servers: list[Any]) -> None:
    (_, full), (_, no_ruby) = servers
    backend = RemoteBackend(servers=f"{full},{no_ruby}")
    tests = (TestCase("1 2\n", ("3",)), TestCase("2 2\n", ("4",)))
    ruby = [Job("Ruby 3", RUBY_ADD.format(k=k), tests, id=f"rb{k}") for k in range(3)]
    jobs = python_jobs(6) + ruby
    results = Engine(backend=backend, workers=4).judge_many(jobs)
    local = Engine(backend="local").judge_many(jobs)
    assert [r.verdict for r in results] == [r.verdict for r in local]
    assert Verdict.INFRA_ERROR not in {r.verdict for r in results}
    for job, r in zip(jobs, results, strict=True):
        if job.language == "Ruby 3":
            assert r.isolation["judged_by"] == full and r.isolation["eligible_servers"] == [full]
        else:
            assert r.isolation["eligible_servers"] == [full, no_ruby]
    python_servers = {r.isolation["judged_by"] for r in results if r.id.startswith("py")}
    assert python_servers == {full, no_ruby}
    assert "Ruby 3" in backend.describe()["mixed_runtimes"]  # the two servers differ: said


def test_a_server_killed_mid_batch(servers: list[Any], tmp_path: Path) -> None:
    (_, full), (victim, url) = servers
    backend = RemoteBackend(servers=f"{full},{url}")
    calls = _counting(backend)
    jobs = python_jobs(12, sleep=0.3, prefix="k")
    killed = threading.Event()

    def progress(done: int, total: int) -> None:
        if done >= 2 and not killed.is_set():
            killed.set()
            os.kill(victim.pid, signal.SIGKILL)

    results = Engine(backend=backend, cache=tmp_path).judge_many(jobs, progress=progress)
    assert killed.is_set()
    assert sorted(calls.values()) == [1] * len(jobs)  # one answer per job
    local = Engine(backend="local").judge_many(jobs)
    assert [r.id for r in results] == [j.id for j in jobs]
    assert [r.verdict for r in results] == [r.verdict for r in local]
    state = {s["url"]: s for s in backend.describe()["servers"]}
    assert state[url]["out_of_rotation"] and state[url]["judged"] >= 1
    assert state[full]["judged"] + state[url]["judged"] == len(jobs)  # none judged twice
    again = Engine(backend=backend, cache=tmp_path)
    rerun = again.judge_many(jobs)
    assert again.judged == 0 and all(r.cached for r in rerun)  # every result was cached
    assert [r.verdict for r in rerun] == [r.verdict for r in local]
