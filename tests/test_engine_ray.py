"""The Ray backend on a local Ray cluster started by the tests (2 CPUs): verdicts equal the
local backend's, a worker killed mid-batch loses no job and answers none twice, an interrupted
run resumes from the cache, a mixed cluster is reported, and a cluster first used from a
short-lived thread outlives that thread."""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from code_eval_taskpack.execution import Engine, Job, Verdict
from code_eval_taskpack.execution.backends import get_backend
from code_eval_taskpack.execution.backends.ray.cluster import (
    ACTOR_CLASS,
    RayBackend,
    merge_node_runtimes,
)
from tests.cluster_support import python_jobs
from tests.conftest import require


def _jobs(n: int, sleep: float = 0.05) -> list[Job]:
    return python_jobs(n, sleep, prefix="job")


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """An empty home for the module's cluster: where Ray would write a token of its own."""
    path = tmp_path_factory.mktemp("ray-home")
    saved = os.environ.get("HOME")
    os.environ["HOME"] = str(path)
    yield path
    if saved is None:
        os.environ.pop("HOME", None)
    else:
        os.environ["HOME"] = saved


@pytest.fixture(scope="module")
def cluster(home: Path) -> Iterator[RayBackend]:
    try:
        import ray  # noqa: F401
    except ImportError:
        require(False, "Ray is not installed (pip install -e '.[ray]')")
    backend = get_backend("ray", {"num_cpus": "2"})
    assert isinstance(backend, RayBackend)
    assert backend.host_refusal("required") == ""
    yield backend
    backend.close()


def test_the_started_cluster_token_is_the_users_alone(cluster: RayBackend, home: Path) -> None:
    """Whoever holds a cluster's token runs code on it: the token of the cluster the backend
    starts is in a file of mode 600 in a folder of mode 700, never in Ray's world-readable
    `~/.ray/auth_token`, nor on any process's command line."""
    cluster.nodes()  # connected
    assert not (home / ".ray").exists()
    path = Path(os.environ["RAY_AUTH_TOKEN_PATH"])
    for item, mode in ((path, 0o600), (path.parent, 0o700)):
        st = item.lstat()
        assert (stat.S_IMODE(st.st_mode), st.st_uid) == (mode, os.geteuid()), item
    token = path.read_bytes().strip()
    assert len(token) >= 32
    for entry in os.listdir("/proc"):
        with contextlib.suppress(OSError):
            assert token not in Path(f"/proc/{entry}/cmdline").read_bytes(), entry


def _task_workers() -> list[int]:
    """Pids of the Ray workers holding a node's judge (Ray names them after the actor)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if cmd.startswith(f"ray::{ACTOR_CLASS}".encode()):
            pids.append(int(entry))
    return pids


def test_verdicts_equal_local_and_results_name_the_node(cluster: RayBackend) -> None:
    jobs = _jobs(8)
    engine = Engine(backend=cluster)
    assert engine.workers == 2  # the cluster's CPUs
    remote = engine.judge_many(jobs)
    local = Engine(backend="local").judge_many(jobs)
    assert [r.id for r in remote] == [j.id for j in jobs]
    assert [r.verdict for r in remote] == [r.verdict for r in local]
    assert {r.verdict for r in remote} == {
        Verdict.PASSED,
        Verdict.WRONG_ANSWER,
        Verdict.RUNTIME_ERROR,
        Verdict.TIME_LIMIT_EXCEEDED,
    }
    rt = cluster.resolve("Python 3")
    assert rt.fingerprint().startswith("ray:") and rt.available
    for r in remote:
        assert r.isolation["backend"] == "ray" and r.isolation["node_backend"] == "local"
        assert r.isolation["node"]["node_id"] and r.isolation["judged_by"].startswith("ray:")
        assert r.runtime["version"] == rt.version  # the version that judged, from the node
        assert not r.isolation["missing"]  # the node's sandbox had every layer
    single = Engine(backend=cluster).judge(jobs[1])
    assert single.verdict is Verdict.WRONG_ANSWER and single.id == "job1"


def test_a_worker_killed_mid_batch_loses_and_repeats_nothing(cluster: RayBackend) -> None:
    jobs = _jobs(16, sleep=0.3)  # 4 tasks of 4 jobs, 2 at a time
    killed: list[int] = []
    lock = threading.Lock()

    def progress(done: int, total: int) -> None:
        with lock:
            if done and not killed:
                for pid in _task_workers()[:1]:
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)

    results = Engine(backend=cluster).judge_many(jobs, progress=progress)
    assert killed, "no Ray worker was running a judging task to kill"
    assert [r.id for r in results] == [j.id for j in jobs]
    local = Engine(backend="local").judge_many(jobs)
    assert [r.verdict for r in results] == [r.verdict for r in local]


def test_an_interrupted_run_resumes_from_the_cache(cluster: RayBackend, tmp_path: Path) -> None:
    jobs = _jobs(12, sleep=0.01)

    def stop(done: int, total: int) -> None:
        if done:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        Engine(backend=cluster, cache=tmp_path).judge_many(jobs, progress=stop)
    again = Engine(backend=cluster, cache=tmp_path)
    results = again.judge_many(jobs)
    assert 0 < again.judged < len(jobs)  # the first chunk came from the cache
    assert sum(r.cached for r in results) == len(jobs) - again.judged
    assert [r.id for r in results] == [j.id for j in jobs]


def test_a_mixed_cluster_is_reported(cluster: RayBackend) -> None:
    """Two nodes reporting different compiler versions: the key joins both, and it says so."""
    from code_eval_taskpack.execution.backends.ray.cluster import node_runtime
    from code_eval_taskpack.execution.languages.registry import resolve

    ray = cluster._ray()
    here = ray.get(ray.remote(num_cpus=0)(node_runtime).remote("Python 3"))
    other = {**here, "version": "9.9.9", "fingerprint": here["fingerprint"] + "-other"}
    rt, mixed = merge_node_runtimes(resolve("Python 3"), [here, other])
    assert mixed and rt.version == f"{here['version']} / 9.9.9"
    assert here["fingerprint"] in rt.fingerprint() and "-other" in rt.fingerprint()
    same, mixed = merge_node_runtimes(resolve("Python 3"), [here, dict(here)])
    assert not mixed and same.fingerprint() == "ray:" + here["fingerprint"]
    assert cluster.describe()["mixed_runtimes"] == {}  # this one-node cluster is not mixed


def _cluster_services() -> dict[str, str]:
    """This process's children that run the local cluster (GCS, raylet): name -> process state
    (`Z`: killed, not yet reaped)."""
    found = {}
    for entry in os.listdir("/proc"):
        with contextlib.suppress(OSError):
            stat_line = Path(f"/proc/{entry}/stat").read_text()
            name = stat_line[stat_line.index("(") + 1 : stat_line.rindex(")")]
            state, ppid = stat_line[stat_line.rindex(")") + 2 :].split()[:2]
            if int(ppid) == os.getpid() and name in ("gcs_server", "raylet"):
                found[name] = state
    return found


def test_a_cluster_first_used_from_a_short_lived_thread_outlives_it(cluster: RayBackend) -> None:
    """Ray starts a local cluster's processes with PR_SET_PDEATHSIG, which fires when the thread
    that started them ends: a cluster first used from a judging pool's thread was SIGKILLed when
    the pool ended, and the driver then ended the whole process (the hostile suite on Ray)."""
    cluster.close()  # the next use starts a new local cluster: from the pool's thread
    job = _jobs(1)[0]
    with ThreadPoolExecutor(max_workers=1) as pool:
        first = pool.submit(lambda: Engine(backend=cluster).judge(job)).result()
    assert first.verdict is Verdict.PASSED
    time.sleep(0.5)  # the pool's thread has ended: a parent-death signal has been sent by now
    services = _cluster_services()
    assert set(services) == {"gcs_server", "raylet"}, services
    assert "Z" not in services.values(), f"the cluster died with the thread: {services}"
    assert Engine(backend=cluster).judge(job).verdict is Verdict.PASSED
