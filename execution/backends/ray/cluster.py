"""The Ray backend: batches judged on a Ray cluster, each node by its own long-lived judge.

`--backend ray [--ray-address auto|HOST:PORT] [--token-file FILE]` (`pip install
code-eval-taskpack[ray]`; without an address a local cluster is started for the process). Each
node with CPUs gets one `NodeJudge` actor (`node.py`) that reserves the node's CPUs and keeps
a local engine with its warm compiler servers, precompiled headers and compile cache for as long
as the backend is connected. A batch is shared among the nodes (`dispatch.py`): the jobs of
one program go to one node, programs opening with the same headers stay together, each node's
share is announced to its engine before any of it is judged, and a node that runs dry takes work
from the others. The driver stores each result in the engine's cache the moment it comes back,
so a killed run resumes where it stopped.

Faults (`batch.py`): a call lost with its worker or node is sent again (to a new judge on the
same node when the node lives, else to another node that may judge the language), at most
`TASK_RETRIES` times; every job gets exactly one result, and a job no node could judge is an
INFRA_ERROR (never cached).

Toolchains are the nodes' own: `resolve` asks every node for the runtime's fingerprint, a result
records the node that judged it, the version it used (`isolation["node"]`, `runtime`) and the
nodes that could judge its language (`isolation["eligible_nodes"]`); a cluster whose nodes
disagree (a mixed cluster) is reported in `describe()["mixed_runtimes"]` and in the cache key
(the joined fingerprints), never hidden. A node judges a language when its toolchain is there
and, if the node declares any `judge:<cluster>` Ray resource (`ray start --resources
'{"judge:C++": 1}'`), when it declares that language's. Every node needs this package at the same
version; the cluster must require Ray's token authentication (`auth.py`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ...auth import TokenError
from ...config import EngineConfig, or_env
from ...inputs import DEFAULT_INPUT_LIMITS, InputLimits
from ...isolation import SandboxError, check_policy
from ...languages.registry import Runtime, resolve
from ...types import Job, Result
from ..base import JobBackend
from .auth import TokenEnvironment, node_refusal
from .dispatch import NodeState
from .node import ACTOR_CLASS, NodeJudge, node_auth_mode, node_identity

log = logging.getLogger(__name__)

#: most jobs in one call to a node's judge (whole programs; a bigger program goes alone)
DEFAULT_CHUNK = 1
#: the Ray resource a node declares for each language cluster it judges (`judge:C++`)
LANGUAGE_RESOURCE = "judge:"
#: seconds a node's judge may take to come up before the node is left out of a batch
ACTOR_START_S = 120.0


__all__ = ["ACTOR_CLASS", "RayBackend", "merge_node_runtimes", "node_identity", "node_runtime"]


# -- what runs on a node -------------------------------------------------------------------------


def node_runtime(language: str) -> dict[str, Any]:
    """The runtime judging `language` on this node (task body)."""
    from ..local import LocalBackend

    rt = resolve(language)
    return {
        "node": node_identity(),
        "version": rt.version,
        "binary": rt.binary,
        "available": rt.available,
        "reason": rt.reason,
        "fingerprint": LocalBackend().runtime_fingerprint(rt),
    }


# -- the driver ----------------------------------------------------------------------------------


def declared_languages(resources: Mapping[str, Any]) -> set[str] | None:
    """The language clusters a node declares it judges (`judge:<cluster>` resources), or None
    when it declares none (it then judges whatever its toolchains allow)."""
    names = {
        str(k)[len(LANGUAGE_RESOURCE) :]
        for k, v in resources.items()
        if str(k).startswith(LANGUAGE_RESOURCE) and isinstance(v, int | float) and v > 0
    }
    return names or None


def node_judges(runtime: Runtime, probe: Mapping[str, Any], declared: set[str] | None) -> str:
    """Why a node may not judge `runtime` ("" when it may): a declared language list without
    the runtime's cluster (or name), or the toolchain missing there."""
    if declared is not None and runtime.cluster not in declared and runtime.name not in declared:
        return f"declares no {LANGUAGE_RESOURCE}{runtime.cluster} resource"
    if not probe.get("available"):
        return str(probe.get("reason") or "toolchain not available")
    return ""


def merge_node_runtimes(
    base: Runtime, per_node: Sequence[Mapping[str, Any]]
) -> tuple[Runtime, bool]:
    """The runtime as the cluster's nodes that may judge it report it, and whether they
    disagree (mixed): the fingerprint joins every distinct fingerprint of those nodes, so a
    cache entry is never reused after any of their toolchains changed. A node that may not
    judge the runtime (`why_not`) does not count; with none left the runtime is unavailable."""
    usable = [n for n in per_node if n["available"] and not n.get("why_not")]
    counted = usable or list(per_node)
    fps = sorted({str(n["fingerprint"]) for n in counted})
    versions = sorted({str(n["version"]) for n in counted})
    reason = ""
    if not usable:
        why = "; ".join(
            f"{n['node']['host']}/{str(n['node']['node_id'])[:12]}: "
            f"{n.get('why_not') or n['reason']}"
            for n in per_node
        )
        reason = f"no Ray node may judge {base.name}: {why or 'no node'}"
    first = counted[0] if counted else {}
    rt = dataclasses.replace(
        base,
        _lock=threading.Lock(),
        _binary=(None, reason) if reason else (str(first.get("binary") or "ray"), ""),
        _version=" / ".join(versions) or "unknown",
        _fingerprint="ray:" + "||".join(fps),
    )
    return rt, len(fps) > 1


def init_on_lasting_thread(init: Callable[[], object]) -> threading.Event | None:
    """Run `init` (`ray.init`) so that the processes it starts outlive the calling thread;
    returns the event that ends the thread keeping them (None on the main thread).

    Ray starts a local cluster's processes (GCS, raylet, monitor) with PR_SET_PDEATHSIG=SIGKILL,
    which the kernel sends when the *thread* that forked them ends, not the process: a cluster
    first used from a short-lived thread (a judging pool's, a server's request thread) was
    SIGKILLed with that thread, and the driver then ended the whole process once the GCS had
    been unreachable for 60 s. Off the main thread, `init` runs on a daemon thread that stays
    until the backend disconnects (or the process ends, which takes the cluster with it)."""
    if threading.current_thread() is threading.main_thread():
        init()
        return None
    stop, ready = threading.Event(), threading.Event()
    failure: list[BaseException] = []

    def keep() -> None:
        try:
            init()
        except BaseException as exc:  # handed to the caller, raised there
            failure.append(exc)
            return
        finally:
            ready.set()
        stop.wait()

    threading.Thread(target=keep, name="ray-cluster-keeper", daemon=True).start()
    ready.wait()
    if failure:
        raise failure[0]
    return stop


class RayBackend(JobBackend):
    """Judges batches on a Ray cluster, one long-lived local engine per node."""

    name = "ray"
    required_layers = ()  # each node's local backend enforces the policy it is given
    supports_batches = True

    def __init__(
        self, address: str = "", chunk: str = "", num_cpus: str = "", token_file: str = ""
    ) -> None:
        self.address = address.strip()
        self.chunk = int(chunk) if chunk else DEFAULT_CHUNK
        if not 1 <= self.chunk <= 1000:
            raise ValueError("chunk must be between 1 and 1000 jobs per call")
        self.num_cpus = int(num_cpus) if num_cpus else None
        if self.num_cpus is not None and (self.num_cpus < 1 or self.address):
            raise ValueError("num_cpus applies to a local cluster (no address), at least 1")
        self.auth = TokenEnvironment(token_file, starts_cluster=not self.address)
        self._lock = threading.Lock()
        self._start_lock = threading.Lock()
        self._runtimes: dict[str, tuple[Runtime, list[dict[str, Any]]]] = {}
        self._mixed: set[str] = set()
        self._judges: dict[str, Any] = {}  # node id -> its NodeJudge handle
        self._auth_modes: dict[str, str] = {}  # node id -> what it reported
        self._started = False
        self._connected = False
        self._keeper: threading.Event | None = None  # ends the thread that started the cluster

    # -- the cluster -------------------------------------------------------------------------

    def _ray(self) -> Any:
        """The `ray` module, connected with token authentication (a local cluster is started
        when no address is given)."""
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
                try:
                    self.auth.apply()
                except TokenError as exc:  # never a cluster whose token others can read
                    self.auth.restore()
                    raise SandboxError(f"Ray token authentication: {exc}") from exc
                try:
                    self._keeper = init_on_lasting_thread(lambda: ray.init(**kwargs))
                except Exception as exc:
                    self.auth.restore()
                    where = self.address or "(local)"
                    raise SandboxError(f"cannot connect to the Ray cluster {where}: {exc}") from exc
                self._started = not self.address
                self._connected = True
        return ray

    def close(self) -> None:
        """Stop the node judges, disconnect (and stop the local cluster this backend started)."""
        if not self._connected and not self._judges:
            return
        import ray

        with self._lock:
            judges, self._judges = list(self._judges.values()), {}
        for judge in judges:
            with contextlib.suppress(Exception):
                ray.kill(judge)
        if self._connected:
            ray.shutdown()
            self._connected = self._started = False
            self.auth.restore()
            if self._keeper is not None:  # only now: its end would SIGKILL the cluster
                self._keeper.set()
                self._keeper = None
        with self._lock:  # what the nodes reported is of that cluster: a reconnect asks again
            self._runtimes.clear()
            self._mixed.clear()

    def nodes(self) -> list[dict[str, Any]]:
        """The cluster's live nodes: id, address, CPUs and resources."""
        ray = self._ray()
        return [
            {
                "node_id": n["NodeID"],
                "address": n.get("NodeManagerAddress", ""),
                "cpus": int(n.get("Resources", {}).get("CPU", 0)),
                "resources": dict(n.get("Resources", {})),
            }
            for n in ray.nodes()
            if n.get("Alive")
        ]

    def live_nodes(self) -> dict[str, NodeState]:
        """The live nodes that have CPUs, with the judges already running on them."""
        out = {}
        for n in self.nodes():
            if n["cpus"] > 0:
                nid = n["node_id"]
                out[nid] = NodeState(nid, f"{n['address']}/{nid[:12]}", n["cpus"], n["resources"])
                with self._lock:
                    out[nid].judge = self._judges.get(nid)
        return out

    def _on_node(self, node_id: str) -> Any:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        return NodeAffinitySchedulingStrategy(node_id, soft=False)

    def check_auth(self) -> str:
        """Why the cluster may not judge for want of authentication ("" when every node with
        CPUs reports token mode); each node is asked once."""
        ray = self._ray()
        todo = [n for n in self.live_nodes() if n not in self._auth_modes]
        if todo:
            probe = ray.remote(num_cpus=0)(node_auth_mode)
            modes = ray.get(
                [probe.options(scheduling_strategy=self._on_node(n)).remote() for n in todo]
            )
            with self._lock:
                self._auth_modes.update(zip(todo, modes, strict=True))
        with self._lock:
            return node_refusal({n[:12]: m for n, m in self._auth_modes.items()})

    def start_judges(self, nodes: Mapping[str, NodeState]) -> dict[str, str]:
        """A judge on every node in `nodes` that has none, sized to its CPUs; waits until they
        are up. Returns the nodes whose judge did not come up, and why."""
        ray = self._ray()
        with self._start_lock:  # one judge per node, whichever thread asks first
            return self._start_judges(ray, nodes)

    def _start_judges(self, ray: Any, nodes: Mapping[str, NodeState]) -> dict[str, str]:
        actor = ray.remote(NodeJudge)
        started = {}
        for nid, node in nodes.items():
            with self._lock:
                node.judge = node.judge or self._judges.get(nid)
            if node.judge is None:
                node.judge = actor.options(
                    num_cpus=node.cpus,
                    max_concurrency=4 * node.cpus + 4,
                    max_restarts=0,
                    max_task_retries=0,
                    scheduling_strategy=self._on_node(nid),
                ).remote(node.cpus)
                started[node.judge.identity.remote()] = nid
        failed: dict[str, str] = {}
        if started:
            ready, late = ray.wait(list(started), num_returns=len(started), timeout=ACTOR_START_S)
            for ref in ready:
                try:
                    ray.get(ref)
                except Exception as exc:
                    failed[started[ref]] = f"its judge failed to start: {exc!r}"[:500]
            for ref in late:
                failed[started[ref]] = f"its judge did not start within {ACTOR_START_S:.0f} s"
        for nid, node in nodes.items():
            if nid in failed:
                with contextlib.suppress(Exception):
                    ray.kill(node.judge)
                node.judge = None
            elif node.judge is not None:
                with self._lock:
                    self._judges[nid] = node.judge
        return failed

    def drop_judge(self, node: NodeState) -> None:
        """Forget (and stop) a node's judge that was lost or failed."""
        ray = self._ray()
        with self._lock:
            if self._judges.get(node.node_id) is node.judge:
                del self._judges[node.node_id]
        if node.judge is not None:
            with contextlib.suppress(Exception):
                ray.kill(node.judge)
        node.judge = None

    # -- the backend interface ---------------------------------------------------------------

    def host_refusal(self, policy: str) -> str:
        check_policy(policy)
        try:
            nodes = self.nodes()
            if not any(n["cpus"] for n in nodes):
                return "the Ray cluster has no node with a CPU"
            return self.check_auth()
        except Exception as exc:
            return f"Ray cluster {self.address or '(local)'} not reachable: {exc}"

    def parallelism(self) -> int | None:
        try:
            return sum(n["cpus"] for n in self.nodes()) or None
        except Exception:
            return None

    def resolve(self, language: str) -> Runtime:
        """The registry's runtime (unknown names raise here) as the nodes that may judge it run
        it; a cluster without token authentication is refused here (SandboxError)."""
        base = resolve(language)
        with self._lock:
            hit = self._runtimes.get(base.name)
        if hit is not None:
            return hit[0]
        ray = self._ray()
        refusal = self.check_auth()
        if refusal:
            raise SandboxError(refusal)
        nodes = self.live_nodes()
        probe = ray.remote(num_cpus=0)(node_runtime)
        refs = [
            probe.options(scheduling_strategy=self._on_node(nid)).remote(language) for nid in nodes
        ]
        per_node = ray.get(refs)
        for entry in per_node:
            node = nodes[entry["node"]["node_id"]]
            entry["why_not"] = node_judges(base, entry, declared_languages(node.resources))
            entry["name"] = node.name
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

    def eligible(self, runtime_name: str) -> list[str]:
        """The node ids that may judge the runtime (as `resolve` found them)."""
        with self._lock:
            _, per_node = self._runtimes.get(runtime_name, (None, []))
        return [
            str(n["node"]["node_id"]) for n in per_node if n["available"] and not n.get("why_not")
        ]

    def runtime_fingerprint(self, runtime: Runtime) -> str:
        return runtime.fingerprint()  # already the nodes' (see resolve)

    def describe(self) -> dict[str, Any]:
        with self._lock:
            mixed = {
                name: sorted({f"{n['node']['host']}: {n['version']}" for n in nodes})
                for name, (_, nodes) in self._runtimes.items()
                if name in self._mixed
            }
            judges = {
                name: sorted(
                    str(n.get("name", "")) for n in nodes if n["available"] and not n.get("why_not")
                )
                for name, (_, nodes) in self._runtimes.items()
            }
            auth = dict(self._auth_modes)
        return {
            "name": self.name,
            "required_layers": [],
            "address": self.address or "local",
            "chunk": self.chunk,
            "mixed_runtimes": mixed,
            "judging_nodes": judges,
            "auth_modes": auth,
        }

    def judge(
        self,
        job: Job,
        runtime: Runtime,
        *,
        compiled: Any = None,
        policy: str = "required",
        input_limits: InputLimits = DEFAULT_INPUT_LIMITS,
        config: EngineConfig | None = None,
    ) -> Result:
        got: list[Result] = []
        self.judge_batch(
            [(job, runtime)],
            lambda n, r: got.append(r),
            policy=policy,
            input_limits=input_limits,
            config=config,
        )
        if not got:
            raise SandboxError("the Ray cluster returned no result")
        return got[0]

    def judge_batch(
        self,
        items: Sequence[tuple[Job, Runtime]],
        on_result: Callable[[int, Result], None],
        *,
        policy: str = "required",
        input_limits: InputLimits = DEFAULT_INPUT_LIMITS,
        config: EngineConfig | None = None,
    ) -> None:
        """Share the batch among the nodes and hand over each result as it comes back (each
        job exactly once), with the speed-ups of `config` (None: the environment's now); see
        `ray_batch.BatchRun`."""
        from .batch import BatchRun

        ray = self._ray()
        refusal = self.check_auth()
        if refusal:
            raise SandboxError(refusal)
        BatchRun(self, ray, items, on_result, policy, input_limits, or_env(config)).run()
