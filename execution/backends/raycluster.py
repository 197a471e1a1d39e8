"""The Ray backend: batches judged on a Ray cluster, each node with its own local backend.

`--backend ray [--ray-address auto|HOST:PORT]` (`pip install code-eval-taskpack[ray]`; without an
address a local cluster is started for the process). A batch becomes Ray tasks of `chunk` jobs
each (one CPU per task: one program per CPU, as locally); a task judges its jobs one after the
other with the node's local backend (its sandbox, its toolchains, its isolation policy) and
sends back plain result dictionaries. The driver stores each result in the engine's cache the
moment its task ends, so a killed run resumes where it stopped; a task Ray retries after a lost
worker answers once (the engine keeps the first answer of a job).

Toolchains are the nodes' own: `resolve` asks every node for the runtime's fingerprint, a result
records the node that judged it and the version it used (`isolation["node"]`, `runtime`), and a
cluster whose nodes disagree (a mixed cluster) is reported in `describe()["mixed_runtimes"]` and in
the cache key (the joined fingerprints), never hidden. Every node needs this package installed at
the same version and the toolchains it should judge (see README, "Scaling out").
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import socket
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..inputs import DEFAULT_INPUT_LIMITS, InputLimits
from ..isolation import REQUIRED_LAYERS, check_policy
from ..languages import Runtime, resolve
from ..sandbox import SandboxError
from ..types import Job, Result, Verdict
from .base import Backend, Session, verdict_under_policy

log = logging.getLogger(__name__)

#: jobs per Ray task: enough to amortise a task's overhead, few enough to spread a batch
DEFAULT_CHUNK = 4
#: times Ray runs a task again after its worker died
TASK_RETRIES = 3


# -- what runs on a node -------------------------------------------------------------------------


def node_identity() -> dict[str, str]:
    """This node as results name it: host name, address and Ray node id."""
    import ray

    node_id = ray.get_runtime_context().get_node_id()
    try:
        address = ray.util.get_node_ip_address()
    except Exception:
        address = ""
    return {"host": socket.gethostname(), "address": address, "node_id": node_id}


def node_runtime(language: str) -> dict[str, Any]:
    """The runtime judging `language` on this node (task body)."""
    from .local import LocalBackend

    rt = resolve(language)
    return {
        "node": node_identity(),
        "version": rt.version,
        "binary": rt.binary,
        "available": rt.available,
        "reason": rt.reason,
        "fingerprint": LocalBackend().runtime_fingerprint(rt),
    }


def judge_chunk(
    jobs: list[Job], policy: str, input_limits: InputLimits
) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """Judge `jobs` one after the other with this node's local backend (task body); results
    go back as dictionaries (plain data crosses the cluster, never live objects)."""
    from ..engine import Engine
    from .local import LocalBackend

    engine = Engine(workers=1, isolation=policy, input_limits=input_limits, backend=LocalBackend())
    node = node_identity()
    out = []
    for job in jobs:
        result = engine.judge(job)
        out.append(result.to_dict())
    return node, out


# -- the driver ----------------------------------------------------------------------------------


def merge_node_runtimes(
    base: Runtime, per_node: Sequence[Mapping[str, Any]]
) -> tuple[Runtime, bool]:
    """The runtime as the cluster's nodes report it, and whether they disagree (mixed): the
    fingerprint joins every distinct node fingerprint, so a cache entry is never reused after
    any node's toolchain changed."""
    fps = sorted({str(n["fingerprint"]) for n in per_node})
    versions = sorted({str(n["version"]) for n in per_node})
    usable = [n for n in per_node if n["available"]]
    first = (usable or list(per_node))[0]
    reason = "" if usable else f"unavailable on every node: {first['reason']}"
    rt = dataclasses.replace(
        base,
        _lock=threading.Lock(),
        _binary=(None, reason) if reason else (str(first["binary"] or "ray"), ""),
        _version=" / ".join(versions) or "unknown",
        _fingerprint="ray:" + "||".join(fps),
    )
    return rt, len(fps) > 1


class RayBackend(Backend):
    """Judges batches as Ray tasks, each node with its own local backend."""

    name = "ray"
    required_layers = ()  # each node's local backend enforces the policy it is given
    supports_batches = True

    def __init__(self, address: str = "", chunk: str = "", num_cpus: str = "") -> None:
        self.address = address.strip()
        self.chunk = int(chunk) if chunk else DEFAULT_CHUNK
        if not 1 <= self.chunk <= 1000:
            raise ValueError("chunk must be between 1 and 1000 jobs per task")
        self.num_cpus = int(num_cpus) if num_cpus else None
        if self.num_cpus is not None and (self.num_cpus < 1 or self.address):
            raise ValueError("num_cpus applies to a local cluster (no address), at least 1")
        self._lock = threading.Lock()
        self._runtimes: dict[str, tuple[Runtime, list[dict[str, Any]]]] = {}
        self._mixed: set[str] = set()
        self._started = False

    # -- the cluster -------------------------------------------------------------------------

    def _ray(self) -> Any:
        """The `ray` module, connected (a local cluster is started when no address is given)."""
        try:
            import ray
        except ImportError:
            raise SandboxError(
                "the ray backend needs Ray: pip install 'code-eval-taskpack[ray]'"
            ) from None
        with self._lock:
            if not ray.is_initialized():
                kwargs: dict[str, Any] = {
                    "include_dashboard": False,
                    "log_to_driver": False,
                    "configure_logging": False,
                }
                if self.address:
                    kwargs["address"] = self.address
                else:
                    kwargs["num_cpus"] = self.num_cpus or len(os.sched_getaffinity(0))
                ray.init(**kwargs)
                self._started = True
        return ray

    def close(self) -> None:
        """Disconnect (and stop the local cluster this backend started)."""
        if self._started:
            import ray

            ray.shutdown()
            self._started = False

    def nodes(self) -> list[dict[str, Any]]:
        """The cluster's live nodes: id, address and CPUs."""
        ray = self._ray()
        return [
            {
                "node_id": n["NodeID"],
                "address": n.get("NodeManagerAddress", ""),
                "cpus": int(n.get("Resources", {}).get("CPU", 0)),
            }
            for n in ray.nodes()
            if n.get("Alive")
        ]

    # -- the backend interface ---------------------------------------------------------------

    def _open(
        self,
        files: Mapping[str, bytes],
        purposes: Sequence[str],
        policy: str,
        ro_paths: Sequence[str],
    ) -> Session:
        raise SandboxError("the ray backend judges whole programs on its nodes")

    def host_refusal(self, policy: str) -> str:
        check_policy(policy)
        try:
            nodes = self.nodes()
        except Exception as exc:
            return f"Ray cluster {self.address or '(local)'} not reachable: {exc}"
        if not any(n["cpus"] for n in nodes):
            return "the Ray cluster has no node with a CPU"
        return ""

    def parallelism(self) -> int | None:
        try:
            return sum(n["cpus"] for n in self.nodes()) or None
        except Exception:
            return None

    def resolve(self, language: str) -> Runtime:
        """The registry's runtime (unknown names raise here) as the nodes run it."""
        base = resolve(language)
        with self._lock:
            hit = self._runtimes.get(base.name)
        if hit is not None:
            return hit[0]
        ray = self._ray()
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        probe = ray.remote(num_cpus=0)(node_runtime)
        refs = [
            probe.options(
                scheduling_strategy=NodeAffinitySchedulingStrategy(n["node_id"], soft=False)
            ).remote(language)
            for n in self.nodes()
        ]
        per_node = ray.get(refs)
        rt, mixed = merge_node_runtimes(base, per_node)
        with self._lock:
            self._runtimes[base.name] = (rt, per_node)
            if mixed:
                self._mixed.add(base.name)
        if mixed:
            log.warning(
                "mixed Ray cluster: %s differs between nodes: %s",
                base.name,
                "; ".join(f"{n['node']['host']}: {n['version']}" for n in per_node),
            )
        return rt

    def runtime_fingerprint(self, runtime: Runtime) -> str:
        return runtime.fingerprint()  # already the nodes' (see resolve)

    def describe(self) -> dict[str, Any]:
        with self._lock:
            mixed = {
                name: sorted({f"{n['node']['host']}: {n['version']}" for n in nodes})
                for name, (_, nodes) in self._runtimes.items()
                if name in self._mixed
            }
        return {
            "name": self.name,
            "required_layers": [],
            "address": self.address or "local",
            "chunk": self.chunk,
            "mixed_runtimes": mixed,
        }

    def judge(
        self,
        job: Job,
        runtime: Runtime,
        *,
        compiled: Any = None,
        policy: str = "required",
        input_limits: InputLimits = DEFAULT_INPUT_LIMITS,
    ) -> Result:
        got: list[Result] = []
        self.judge_batch(
            [(job, runtime)],
            lambda n, r: got.append(r),
            policy=policy,
            input_limits=input_limits,
        )
        if not got:
            raise SandboxError("the Ray task returned no result")
        return got[0]

    def judge_batch(
        self,
        items: Sequence[tuple[Job, Runtime]],
        on_result: Callable[[int, Result], None],
        *,
        policy: str = "required",
        input_limits: InputLimits = DEFAULT_INPUT_LIMITS,
    ) -> None:
        """One task per `chunk` jobs; each task's results are handed over as it ends. A task
        that fails after Ray's retries answers INFRA_ERROR for its jobs (never cached)."""
        ray = self._ray()
        task = ray.remote(num_cpus=1, max_retries=TASK_RETRIES, retry_exceptions=False)(judge_chunk)
        pending: dict[Any, list[int]] = {}
        for start in range(0, len(items), self.chunk):
            idx = list(range(start, min(start + self.chunk, len(items))))
            jobs = [dataclasses.replace(items[i][0], id="") for i in idx]
            pending[task.remote(jobs, policy, input_limits)] = idx
        try:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    idx = pending.pop(ref)
                    try:
                        node, dicts = ray.get(ref)
                    except Exception as exc:  # the task failed for good (retries spent)
                        for i in idx:
                            on_result(i, _failed(items[i][1], f"Ray task failed: {exc!r}"))
                        continue
                    if len(dicts) != len(idx):
                        for i in idx:
                            on_result(i, _failed(items[i][1], "Ray task answered a wrong count"))
                        continue
                    for i, raw in zip(idx, dicts, strict=True):
                        result = Result.from_dict(raw)
                        result.isolation = {
                            **result.isolation,
                            "backend": self.name,
                            "node_backend": result.isolation.get("backend"),
                            "node": node,
                            "judged_by": f"ray:{node['host']}/{node['node_id'][:12]}",
                        }
                        # the node's local backend promised the local sandbox's layers
                        where = f"Ray node {node['host']}"
                        job = items[i][0]
                        result = verdict_under_policy(
                            result, job, policy, REQUIRED_LAYERS, input_limits, where
                        )
                        on_result(i, result)
        finally:
            for ref in pending:  # interrupted: stop what is still queued or running
                with contextlib.suppress(Exception):
                    ray.cancel(ref, force=True)


def _failed(runtime: Runtime, detail: str) -> Result:
    return Result(
        verdict=Verdict.INFRA_ERROR,
        runtime=runtime.info(),
        detail=detail,
        isolation={"backend": "ray"},
    )
