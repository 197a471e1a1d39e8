"""One batch on the Ray cluster: shares, calls in flight, and what happens when a node is lost.

Each node keeps about two jobs per CPU in flight (calls of whole programs, up to the backend's
`chunk` jobs), so its engine never waits for the driver. A call that fails because its worker
or node was lost puts its programs back: on the same node (a new judge) while the node lives and
its judge was not restarted too often, else on another node that may judge the language; a
program lost `TASK_RETRIES` times, or left with no node that may judge it, is an INFRA_ERROR.
A call whose judge raised (an engine failure on the node, not a lost node) is an INFRA_ERROR at
once. Every job is answered exactly once: a late answer of a call given up is never read.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections import deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ...config import EngineConfig
from ...inputs import InputLimits
from ...isolation import REQUIRED_LAYERS
from ...languages.registry import Runtime
from ...types import Job, Result, Verdict
from ..base import verdict_under_policy
from .dispatch import (
    MAX_ACTOR_RESTARTS,
    TASK_RETRIES,
    NodeState,
    Program,
    programs,
    share,
    steal,
)

if TYPE_CHECKING:
    from .cluster import RayBackend

log = logging.getLogger(__name__)

#: jobs in flight per CPU of a node
IN_FLIGHT_PER_CPU = 2
#: seconds between looks at the calls in flight
WAIT_S = 5.0
#: seconds the nodes may take to take in their shares before judging starts regardless (a node
#: lost meanwhile shows in its first call)
EXPECT_S = 30.0


@dataclasses.dataclass
class Call:
    node: NodeState
    judge: Any  # the judge handle the call went to
    progs: list[Program]

    @property
    def jobs(self) -> int:
        return sum(len(p.items) for p in self.progs)


class BatchRun:
    """Judge `items` on the backend's cluster, calling `on_result(i, result)` once per job."""

    def __init__(
        self,
        backend: RayBackend,
        ray: Any,
        items: Sequence[tuple[Job, Runtime]],
        on_result: Callable[[int, Result], None],
        policy: str,
        input_limits: InputLimits,
        config: EngineConfig,
    ) -> None:
        self.backend = backend
        self.ray = ray
        self.items = items
        self.on_result = on_result
        self.policy = policy
        self.input_limits = input_limits
        self.switches = config.speedups()  # the driver's speed-ups, sent with every call
        self.answered: set[int] = set()
        self.nodes: dict[str, NodeState] = {}
        self.queues: dict[str, deque[Program]] = {}
        self.eligible: dict[str, list[str]] = {}
        self.in_flight: dict[Any, Call] = {}
        self.restarts: dict[str, int] = {}
        self.lost: dict[str, str] = {}  # node name -> why it left this batch

    # -- answers ---------------------------------------------------------------------------

    def answer(self, i: int, result: Result) -> None:
        if i in self.answered:
            return
        self.answered.add(i)
        self.on_result(i, result)

    def fail(self, prog: Program, detail: str) -> None:
        for i in prog.items:
            runtime = self.items[i][1]
            result = Result(
                verdict=Verdict.INFRA_ERROR,
                runtime=runtime.info(),
                detail=detail
                + (f" (earlier: {'; '.join(prog.failures[-3:])})" if prog.failures else ""),
                isolation={"backend": "ray", "eligible_nodes": self.names(prog.language)},
            )
            self.answer(i, result)

    def names(self, language: str) -> list[str]:
        return sorted(
            self.nodes[n].name for n in self.eligible.get(language, ()) if n in self.nodes
        )

    def deliver(self, call: Call, node: dict[str, str], dicts: list[dict[str, Any]]) -> None:
        flat = [i for p in call.progs for i in p.items]
        if len(dicts) != len(flat):
            for prog in call.progs:
                self.fail(prog, f"Ray node {call.node.name} answered a wrong count")
            return
        language = {i: p.language for p in call.progs for i in p.items}
        for i, raw in zip(flat, dicts, strict=True):
            result = Result.from_dict(raw)
            result.isolation = {
                **result.isolation,
                "backend": "ray",
                "node_backend": result.isolation.get("backend"),
                "node": node,
                "judged_by": f"ray:{node['host']}/{node['node_id'][:12]}",
                "eligible_nodes": self.names(language[i]),
            }
            # the node's local backend promised the local sandbox's layers
            where = f"Ray node {node['host']}"
            result = verdict_under_policy(
                result, self.items[i][0], self.policy, REQUIRED_LAYERS, self.input_limits, where
            )
            self.answer(i, result)

    # -- nodes -----------------------------------------------------------------------------

    def start(self, nodes: dict[str, NodeState]) -> None:
        """Judges on `nodes`; a node whose judge does not come up leaves the batch."""
        for nid, why in self.backend.start_judges(nodes).items():
            self.leave(nid, why)

    def leave(self, nid: str, why: str) -> None:
        """The node leaves this batch: its queued programs go to the other nodes."""
        node = self.nodes.pop(nid, None)
        if node is None:
            return
        self.lost[node.name] = why
        log.warning("Ray node %s left the batch: %s", node.name, why)
        for prog in self.queues.pop(nid, deque()):
            self.place(prog, front=False)

    def place(self, prog: Program, front: bool = True) -> None:
        """Queue `prog` on the live node that may judge it with the least work per CPU."""
        nodes = [n for n in self.eligible.get(prog.language, ()) if n in self.nodes]
        if not nodes:
            lost = "; ".join(f"{k}: {v}" for k, v in self.lost.items())
            self.fail(
                prog,
                f"no live Ray node may judge {prog.language}"
                + (f" (lost: {lost})" if lost else ""),
            )
            return
        best = min(
            nodes, key=lambda n: sum(len(p.items) for p in self.queues[n]) / self.nodes[n].cpus
        )
        if front:
            self.queues[best].appendleft(prog)
        else:
            self.queues[best].append(prog)

    def lost_call(self, call: Call, exc: Exception) -> None:
        """A call failed with its worker or node: its programs go back (or fail for good)."""
        node = call.node
        why = f"{type(exc).__name__}: {str(exc)[:300]}"
        if node.judge is call.judge:  # the first failure seen of this judge
            self.backend.drop_judge(node)
            alive = {n["node_id"] for n in self.backend.nodes()}
            self.restarts[node.node_id] = self.restarts.get(node.node_id, 0) + 1
            if node.node_id not in alive:
                self.leave(node.node_id, f"node lost ({why})")
            elif self.restarts[node.node_id] > MAX_ACTOR_RESTARTS:
                self.leave(node.node_id, f"judge lost {self.restarts[node.node_id]} times ({why})")
        for prog in call.progs:
            prog.attempts += 1
            prog.failures.append(f"{node.name}: {why}")
            if prog.attempts > TASK_RETRIES:
                self.fail(prog, f"lost {prog.attempts} times with its Ray worker or node")
            else:
                self.place(prog)

    # -- calls -----------------------------------------------------------------------------

    def top_up(self) -> None:
        """Fill every node's calls in flight (restarting a lost judge on a live node)."""
        busy: dict[str, int] = {}
        for call in self.in_flight.values():
            busy[call.node.node_id] = busy.get(call.node.node_id, 0) + call.jobs
        idle = [n for n, node in self.nodes.items() if node.judge is None]
        if idle and any(self.queues[n] for n in self.nodes):
            self.start({n: self.nodes[n] for n in idle})
        for nid in list(self.nodes):
            node = self.nodes.get(nid)
            if node is None or node.judge is None:
                continue
            while busy.get(nid, 0) < IN_FLIGHT_PER_CPU * node.cpus:
                progs = self.take(nid)
                if not progs:
                    break
                call = Call(node, node.judge, progs)
                jobs = [
                    dataclasses.replace(self.items[i][0], id="") for p in progs for i in p.items
                ]
                ref = node.judge.judge.remote(jobs, self.policy, self.input_limits, self.switches)
                self.in_flight[ref] = call
                busy[nid] = busy.get(nid, 0) + call.jobs

    def take(self, nid: str) -> list[Program]:
        """Programs for one call to `nid`: from its queue, else taken from another node's."""
        limit = self.backend.chunk
        q = self.queues[nid]
        out: list[Program] = []
        while q and (not out or sum(len(p.items) for p in out) + len(q[0].items) <= limit):
            out.append(q.popleft())
        if not out:
            cpus = {n: s.cpus for n, s in self.nodes.items()}
            stolen = steal(nid, self.queues, cpus, self.eligible)
            if stolen is not None:
                out.append(stolen)
        return out

    def run(self) -> None:
        self.nodes = self.backend.live_nodes()
        progs = programs(self.items)
        for name in {p.language for p in progs}:
            self.eligible[name] = self.backend.eligible(name)
        cpus = {n: s.cpus for n, s in self.nodes.items()}
        self.queues, homeless = share(progs, cpus, self.eligible)
        for prog in homeless:
            self.fail(prog, f"no live Ray node may judge {prog.language}")
        wanted = {n: s for n, s in self.nodes.items() if self.queues[n]}
        self.start(wanted)
        announced = []
        for nid, q in self.queues.items():  # each node's share, announced to its engine
            node = self.nodes.get(nid)
            if q and node is not None and node.judge is not None:
                firsts = [dataclasses.replace(self.items[p.items[0]][0], id="") for p in q]
                announced.append(node.judge.expect.remote(firsts, self.policy, self.input_limits))
        if announced:  # a threaded judge may start a later call first: its header would be lost
            self.ray.wait(announced, num_returns=len(announced), timeout=EXPECT_S)
        try:
            self.top_up()
            while self.in_flight:
                ready, _ = self.ray.wait(list(self.in_flight), num_returns=1, timeout=WAIT_S)
                for ref in ready:
                    call = self.in_flight.pop(ref)
                    self.collect(ref, call)
                self.top_up()
        finally:
            for ref in self.in_flight:  # interrupted: drop what is still queued
                with contextlib.suppress(Exception):
                    self.ray.cancel(ref)
        for nid, q in self.queues.items():  # nothing should be left; never silently
            for prog in q:
                self.fail(prog, f"left unjudged on Ray node {nid[:12]}")

    def collect(self, ref: Any, call: Call) -> None:
        from ray.exceptions import RayTaskError

        try:
            node, dicts = self.ray.get(ref)
        except RayTaskError as exc:  # the node's judge raised: an engine failure there
            for prog in call.progs:
                self.fail(prog, f"Ray node {call.node.name} failed judging: {str(exc)[:500]}")
            return
        except Exception as exc:  # the worker or node was lost
            self.lost_call(call, exc)
            return
        self.deliver(call, node, dicts)
