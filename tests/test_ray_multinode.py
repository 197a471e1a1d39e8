"""The Ray backend on a real multi-node cluster on one machine: a head (no CPUs) and two worker
nodes, each its own raylet process (`ray.cluster_utils.Cluster`), with token authentication.
A node without a language's toolchain, or not declaring it, receives no job of it, and results
say which nodes could judge; a worker node killed by pid mid-batch loses no job and answers
none twice, nothing unjudged is cached, and a rerun is served from the cache."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from code_eval_taskpack.execution import Engine, Job, TestCase, Verdict
from code_eval_taskpack.execution.backends.ray.auth import TokenEnvironment, node_refusal
from code_eval_taskpack.execution.backends.ray.cluster import RayBackend, merge_node_runtimes
from tests.cluster_support import Answers, count_answers, path_without, python_jobs
from tests.conftest import require

#: the head notices a dead node after 3 missed health checks of 0.5 s (default: 5 of 3 s)
FAST_FAILURE = {
    "health_check_initial_delay_ms": 0,
    "health_check_period_ms": 500,
    "health_check_failure_threshold": 3,
}
C_ADD = (
    '#include <stdio.h>\nint main(void){{int a,b;scanf("%d %d",&a,&b);printf("%d\\n",a+b+{k});}}\n'
)
RUBY_ADD = "a, b = gets.split.map(&:to_i)\nputs a + b + {k}\n"


@dataclass
class Nodes:
    backend: RayBackend
    full: Any  # the worker node with every toolchain, declaring no language
    partial: Any  # the worker node declaring Python and Ruby, without ruby on its PATH
    address: str
    token_file: Path

    def name(self, node: Any) -> str:
        return next(s.name for s in self.backend.live_nodes().values() if s.node_id == node.node_id)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Nodes]:
    try:
        from ray.cluster_utils import Cluster
    except ImportError:
        require(False, "Ray is not installed (pip install -e '.[ray]')")
    require(all(map(shutil.which, ("gcc", "ruby"))), "gcc and ruby are needed on this host")
    tmp = tmp_path_factory.mktemp("ray")
    token_file = tmp / "token"
    token_file.write_text(secrets.token_hex(32))
    token_file.chmod(0o600)
    env = TokenEnvironment(str(token_file))
    env.apply()  # every node process inherits token mode and the token file
    ray_cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 0, "_system_config": FAST_FAILURE},
    )
    try:
        full = ray_cluster.add_node(num_cpus=1)
        partial = ray_cluster.add_node(
            num_cpus=1,
            resources={"judge:Python": 1, "judge:Ruby": 1},
            env_vars={"PATH": path_without(["ruby"], tmp / "bin")},
        )
        ray_cluster.wait_for_nodes()
        backend = RayBackend(address=ray_cluster.address, token_file=str(token_file))
        yield Nodes(backend, full, partial, ray_cluster.address, token_file)
        backend.close()
    finally:
        ray_cluster.shutdown()
        env.restore()


def _mixed_jobs() -> list[Job]:
    tests = (TestCase("1 2\n", ("3",)), TestCase("2 2\n", ("4",)))
    c = [Job("GNU C11", C_ADD.format(k=k), tests, id=f"c{k}") for k in range(3)]
    rb = [Job("Ruby 3", RUBY_ADD.format(k=k), tests, id=f"rb{k}") for k in range(2)]
    return python_jobs(6) + c + rb


def test_a_node_receives_only_the_languages_it_can_judge(cluster: Nodes) -> None:
    backend = cluster.backend
    assert backend.host_refusal("required") == ""
    assert set(backend.describe()["auth_modes"].values()) == {"token"}
    jobs = _mixed_jobs()
    answers = Answers()
    count_answers(backend, answers)
    results = Engine(backend=backend).judge_many(jobs)
    del backend.judge_batch  # the class's own again
    local = Engine(backend="local").judge_many(jobs)
    assert answers.exactly_once(len(jobs))
    assert [r.verdict for r in results] == [r.verdict for r in local]
    assert Verdict.INFRA_ERROR not in {r.verdict for r in results}
    full, partial = cluster.name(cluster.full), cluster.name(cluster.partial)
    by = {j.id: r.isolation for j, r in zip(jobs, results, strict=True)}
    for jid, iso in by.items():
        node = iso["judged_by"].split("/")[-1]
        if jid.startswith(("c", "rb")):  # C: not declared there; Ruby: no ruby there
            assert iso["eligible_nodes"] == [full] and full.endswith(node)
        else:
            assert iso["eligible_nodes"] == sorted([full, partial])
    judging = backend.describe()["judging_nodes"]
    assert judging["GNU C11"] == [full] and judging["Ruby 3"] == [full]
    assert judging["Python 3"] == sorted([full, partial])
    python_nodes = {by[j.id]["judged_by"].split("/")[-1] for j in jobs if j.id.startswith("py")}
    assert python_nodes == {full.split("/")[-1], partial.split("/")[-1]}  # shared by both


def test_a_language_no_node_may_judge_is_unavailable(cluster: Nodes) -> None:
    """With the one node judging C told off as well, C is unavailable, each node saying why."""
    from code_eval_taskpack.execution.languages.registry import resolve

    cluster.backend.resolve("GNU C11")
    per_node = [dict(n) for n in cluster.backend._runtimes["GNU C11"][1]]
    assert sorted(bool(n["why_not"]) for n in per_node) == [False, True]
    ruby = cluster.backend._runtimes["Ruby 3"][1]  # declared there, but no ruby on its PATH
    assert sorted(str(n["why_not"])[:23] for n in ruby) == ["", "toolchain not installed"]
    for n in per_node:
        n["why_not"] = n["why_not"] or "declares no judge:C resource"
    rt, _ = merge_node_runtimes(resolve("GNU C11"), per_node)
    assert not rt.available and "no Ray node may judge GNU C11" in rt.reason
    assert rt.reason.count("declares no judge:C resource") == 2
    assert node_refusal({"a": "token", "b": "disabled"}).startswith("Ray node(s) b run without")
    assert node_refusal({"a": "token"}) == ""


def test_a_client_without_the_token_is_refused(cluster: Nodes) -> None:
    """A driver with a wrong token cannot join the cluster (Ray's token authentication)."""
    code = (
        "import sys\nfrom ray._raylet import GcsClient\n"
        "print(len(GcsClient(address=sys.argv[1]).internal_kv_keys(b'', None, timeout=20)))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}

    def ask(token: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", code, cluster.address],
            env=env | {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token},
            capture_output=True,
            text=True,
            timeout=120,
        )

    wrong = ask(secrets.token_hex(32))
    assert wrong.returncode != 0 and "token" in wrong.stderr.lower(), wrong.stdout
    right = ask(cluster.token_file.read_text())  # the same request with the cluster's token
    assert right.returncode == 0 and int(right.stdout) > 0, right.stderr


def _raylet_pid(node: Any) -> int:
    return int(node.all_processes["raylet"][0].process.pid)


def test_a_worker_node_killed_mid_batch(cluster: Nodes, tmp_path: Path) -> None:
    """Every job gets exactly one result, the local verdict; the batch finishes on the other
    node; nothing unjudged is cached, and a rerun is served from the cache."""
    backend = cluster.backend
    jobs = python_jobs(16, sleep=0.3, prefix="k")
    victim = cluster.partial
    victim_name = cluster.name(victim)
    killed = threading.Event()

    answers = Answers()
    answered_before: list[int] = []

    def progress(done: int, total: int) -> None:
        judged_there = any(b.endswith(victim.node_id[:12]) for b in answers.judged_by)
        if judged_there and not killed.is_set():
            killed.set()
            answered_before.append(done)
            os.kill(_raylet_pid(victim), signal.SIGKILL)

    count_answers(backend, answers)
    engine = Engine(backend=backend, cache=tmp_path)
    results = engine.judge_many(jobs, progress=progress)
    del backend.judge_batch
    assert killed.is_set() and answered_before[0] < len(jobs) // 2  # killed mid-batch
    assert answers.exactly_once(len(jobs))
    local = Engine(backend="local").judge_many(jobs)
    assert [r.id for r in results] == [j.id for j in jobs]
    assert [r.verdict for r in results] == [r.verdict for r in local]
    survivors = {r.isolation["judged_by"] for r in results}
    assert len(survivors) == 2  # the victim judged some before it died, the rest went on
    assert victim_name not in {n.name for n in backend.live_nodes().values()}
    again = Engine(backend=backend, cache=tmp_path)
    rerun = again.judge_many(jobs)
    assert again.judged == 0 and all(r.cached for r in rerun)
    assert [r.verdict for r in rerun] == [r.verdict for r in local]
