"""How the Ray backend shares a batch among nodes (plain data, no Ray needed here).

A batch is cut into *programs*: the jobs of one runtime and source (they share a compile, so
they go to one node, whose compile cache serves all but the first). Each program goes to a node
that may judge its language (`eligible`), the least loaded for its CPUs, and programs that open
with the same standard headers are kept on the node that already has some of them, within its
share (so a precompiled header is worth building there). A node whose queue runs dry takes a
program from the back of the longest queue it may judge (work stealing), so a node that judges
slow languages does not hold the batch up.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...languages.registry import Runtime
from ...speedups import pch
from ...types import Job

#: times a program is sent again after the worker or node judging it was lost
TASK_RETRIES = 3
#: judges started again on one live node within one batch before the node is left out
MAX_ACTOR_RESTARTS = 2


@dataclass
class NodeState:
    """A live node as a batch uses it: its CPUs and its judge (None until started)."""

    node_id: str
    name: str  # host/node-id prefix, as results name it
    cpus: int
    resources: dict[str, Any]
    judge: Any = None


@dataclass
class Program:
    """The jobs of one program (indices into the batch) and what is known of their fate."""

    items: list[int]
    language: str  # the runtime's registry name
    affinity: str  # programs with the same one share a precompiled header
    attempts: int = 0  # calls that were lost with their node or worker
    failures: list[str] = field(default_factory=list)


def programs(items: Sequence[tuple[Job, Runtime]]) -> list[Program]:
    """The batch's programs, in order of first appearance."""
    found: dict[tuple[str, str], Program] = {}
    for i, (job, runtime) in enumerate(items):
        key = (runtime.name, job.source_code)
        prog = found.get(key)
        if prog is None:
            headers = pch.leading_headers(job.source_code) if runtime.pch_build else ()
            affinity = runtime.name + "|" + ",".join(headers)
            found[key] = prog = Program(items=[], language=runtime.name, affinity=affinity)
        prog.items.append(i)
    return list(found.values())


def share(
    progs: Sequence[Program],
    cpus: Mapping[str, int],
    eligible: Mapping[str, Sequence[str]],
) -> tuple[dict[str, deque[Program]], list[Program]]:
    """Each node's queue of programs, and the programs no live node may judge."""
    queues: dict[str, deque[Program]] = {n: deque() for n in cpus}
    load = dict.fromkeys(cpus, 0)
    homeless: list[Program] = []
    total_cpus = sum(cpus.values()) or 1
    total = sum(len(p.items) for p in progs)
    home: dict[str, str] = {}  # affinity -> the node holding programs of it
    for prog in sorted(progs, key=lambda p: p.affinity):
        nodes = [n for n in eligible.get(prog.language, ()) if n in cpus and cpus[n] > 0]
        if not nodes:
            homeless.append(prog)
            continue
        best = min(nodes, key=lambda n: (load[n] / cpus[n], n))
        kept = home.get(prog.affinity)
        if kept in nodes and kept is not None:
            fair = total * cpus[kept] / total_cpus
            if load[kept] + len(prog.items) <= fair:
                best = kept
        home[prog.affinity] = best
        queues[best].append(prog)
        load[best] += len(prog.items)
    for q in queues.values():  # a node judges its share in batch order
        ordered = sorted(q, key=lambda p: p.items[0])
        q.clear()
        q.extend(ordered)
    return queues, homeless


def steal(
    thief: str,
    queues: Mapping[str, deque[Program]],
    cpus: Mapping[str, int],
    eligible: Mapping[str, Sequence[str]],
) -> Program | None:
    """A program `thief` may judge, from the back of the queue with the most work per CPU."""
    victims = sorted(
        (n for n in queues if n != thief and queues[n]),
        key=lambda n: -sum(len(p.items) for p in queues[n]) / max(1, cpus.get(n, 1)),
    )
    for victim in victims:
        q = queues[victim]
        for k in range(len(q) - 1, -1, -1):
            if thief in eligible.get(q[k].language, ()):
                prog = q[k]
                del q[k]
                return prog
    return None
