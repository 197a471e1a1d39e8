"""What the Ray backend keeps on each node: one long-lived judge per node.

A fresh engine per Ray task would lose everything that makes the local backend fast: warm
compiler servers (`warm_compiler.py`) live in the process that compiles, precompiled headers are
built only for an include list a batch announces enough programs of (`pch.expect`), and the
compile cache is the engine's memory. So each node runs one `NodeJudge` actor, sized to the
node's CPUs (it reserves them, so two drivers never oversubscribe a node), holding one local
engine per isolation policy and input limits for as long as the driver keeps the cluster: its
warm servers, headers and compiled programs serve every batch the node judges. The driver
announces each node's share of a batch (`expect`) before sending its programs, and sends every
job of one program to the same node.

Plain data crosses the cluster (jobs in, result dictionaries out), never live objects; the
node's local backend enforces the policy it is given, and the driver checks every result's
isolation snapshot again (`base.verdict_under_policy`).
"""

from __future__ import annotations

import importlib
import os
import socket
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ...config import EngineConfig
from ...inputs import InputLimits
from ...languages.registry import resolve
from ...types import Job

if TYPE_CHECKING:
    from ...judge.engine import Engine

#: the name Ray gives the actor's worker process (`ray::NodeJudge...`)
ACTOR_CLASS = "NodeJudge"


def node_identity() -> dict[str, str]:
    """This node as results name it: host name, address and Ray node id."""
    import ray

    node_id = ray.get_runtime_context().get_node_id()
    try:
        address = ray.util.get_node_ip_address()
    except Exception:
        address = ""
    return {"host": socket.gethostname(), "address": address, "node_id": node_id}


def node_auth_mode() -> str:
    """How this node's Ray processes authenticate ("token" or "disabled"): its workers inherit
    the node's `RAY_AUTH_MODE`, so a node started without token authentication says so."""
    try:
        raylet = importlib.import_module("ray._raylet")  # Ray's own, pinned (no public API)
        token = raylet.get_authentication_mode() == raylet.AuthenticationMode.TOKEN
        return "token" if token else "disabled"
    except Exception:  # a Ray without token authentication
        return "disabled"


class NodeJudge:
    """The judge of one node (a threaded Ray actor): one engine per (policy, input limits),
    each with the node's CPUs as workers, kept for the actor's life."""

    def __init__(self, cpus: int) -> None:
        self.cpus = max(1, int(cpus))
        self._engines: dict[tuple[str, InputLimits, EngineConfig | None], Engine] = {}
        self._lock = threading.Lock()

    def _engine(
        self, policy: str, input_limits: InputLimits, config: EngineConfig | None = None
    ) -> Engine:
        from ...judge.engine import Engine
        from ..local import LocalBackend

        with self._lock:
            engine = self._engines.get((policy, input_limits, config))
            if engine is None:
                engine = Engine(
                    workers=self.cpus,
                    isolation=policy,
                    input_limits=input_limits,
                    backend=LocalBackend(),
                    config=config,
                )
                self._engines[(policy, input_limits, config)] = engine
            return engine

    def identity(self) -> dict[str, Any]:
        """The node, the actor's pid and its CPUs (also: the actor is up)."""
        return {**node_identity(), "pid": os.getpid(), "cpus": self.cpus}

    def expect(self, jobs: Sequence[Job], policy: str, input_limits: InputLimits) -> int:
        """Announce this node's share of a batch (what is worth preparing once for many of its
        programs, e.g. a precompiled header); returns how many programs were announced."""
        engine = self._engine(policy, input_limits)
        engine.backend.expect([(job, resolve(job.language)) for job in jobs])
        return len(jobs)

    def judge(
        self,
        jobs: Sequence[Job],
        policy: str,
        input_limits: InputLimits,
        switches: Mapping[str, Any] | None = None,
    ) -> tuple[dict[str, str], list[dict[str, Any]]]:
        """Judge `jobs` with this node's engine (in parallel up to its CPUs, across every call
        in flight) under the driver's speed-up `switches` (`config.SPEEDUPS` only, validated);
        results as dictionaries, in order."""
        # the node's own switches (its environment now) with the driver's speed-ups in place
        config = EngineConfig.from_env().with_speedups(switches)
        engine = self._engine(policy, input_limits, config)
        results = engine.judge_many(list(jobs))
        return node_identity(), [r.to_dict() for r in results]
