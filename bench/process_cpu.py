"""CPU time of a process tree, split by what each process is (read from /proc).

A backend's cost is more than its sandboxes: the engine's own Python, and on Ray the daemons
(GCS, raylet, monitors, agents) and each node judge's Python. The benches read the CPU of this
process and every live descendant (with what each has reaped) before and after a run and book
every process to one part, so a difference between backends shows where it is spent:

- `driver`: this process's own Python (the engine, or Ray's driver);
- `node judge`: the Ray node judges' own Python (`ray::NodeJudge` workers);
- `ray daemons`: every other Ray process (`ray::...` workers, Ray's binaries and scripts);
- `programs`: the compilers, sandboxes and warm compiler servers, wherever they were started
  (what the driver or a node judge reaped counts here).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

PARTS = ("driver", "node judge", "ray daemons", "programs")
JUDGE_TITLE = "ray::NodeJudge"


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    own_s: float  # user + system CPU of the process itself
    reaped_s: float  # user + system CPU of the children it waited for
    command: str  # argv[0] (Ray renames its workers `ray::Class`)


def processes() -> dict[int, Proc]:
    """Every process /proc shows now (those that vanish while read are left out)."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        pid = int(entry.name)
        out[pid] = Proc(
            pid,
            int(fields[1]),
            (int(fields[11]) + int(fields[12])) / tick,
            (int(fields[13]) + int(fields[14])) / tick,
            argv[0].decode(errors="replace").strip(),
        )
    return out


def descendants(procs: Mapping[int, Proc], root: int) -> set[int]:
    """`root` and every process below it."""
    children: dict[int, list[int]] = {}
    for p in procs.values():
        children.setdefault(p.ppid, []).append(p.pid)
    mine, todo = {root}, [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in mine:
                mine.add(child)
                todo.append(child)
    return mine


def is_ray(command: str) -> bool:
    return command.startswith("ray::") or "/ray/" in command


def by_part(root: int | None = None) -> dict[str, float]:
    """CPU seconds so far of `root`'s tree (default: this process), by part (`PARTS`)."""
    root = os.getpid() if root is None else root
    procs = processes()
    parts = dict.fromkeys(PARTS, 0.0)
    for pid in descendants(procs, root):
        p = procs.get(pid)
        if p is None:
            continue
        if pid == root:
            parts["driver"] += p.own_s
            parts["programs"] += p.reaped_s
        elif p.command.startswith(JUDGE_TITLE):
            parts["node judge"] += p.own_s
            parts["programs"] += p.reaped_s
        elif is_ray(p.command) and not under_judge(procs, pid, root):
            parts["ray daemons"] += p.own_s + p.reaped_s
        else:
            parts["programs"] += p.own_s + p.reaped_s
    return parts


def under_judge(procs: Mapping[int, Proc], pid: int, root: int) -> bool:
    """Whether a node judge started `pid` (a compiler server, a sandbox)."""
    seen = set()
    p = procs.get(procs[pid].ppid)
    while p is not None and p.pid != root and p.pid not in seen:
        if p.command.startswith(JUDGE_TITLE):
            return True
        seen.add(p.pid)
        p = procs.get(p.ppid)
    return False


def spent(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, float]:
    """CPU seconds by part between two `by_part` readings (never below zero: a process that
    ended unreaped takes its CPU with it)."""
    return {k: max(0.0, after.get(k, 0.0) - before.get(k, 0.0)) for k in PARTS}
