"""How the Ray backend shares a batch among nodes (no cluster needed): a program's jobs stay
together, no node gets a language it may not judge, shares follow the CPUs, programs opening
with the same headers stay on one node within its share, and a dry node takes work."""

from __future__ import annotations

from collections import deque

from code_eval_taskpack.execution import Job, TestCase
from code_eval_taskpack.execution.backends.ray.dispatch import Program, programs, share, steal
from code_eval_taskpack.execution.languages.registry import Runtime, resolve

T = (TestCase("1\n", ("1",)),)
CPP = "#include <cstdio>\n#include <{h}>\nint main() {{ return {k}; }}\n"


def _items(jobs: list[Job]) -> list[tuple[Job, Runtime]]:
    return [(j, resolve(j.language)) for j in jobs]


def test_programs_group_the_jobs_of_one_source() -> None:
    a = Job("Python 3", "print(1)\n", T)
    b = Job("Python 3", "print(2)\n", T)
    other_tests = Job("Python 3", "print(1)\n", (TestCase("2\n", ("1",)),))
    progs = programs(_items([a, b, other_tests]))
    assert [p.items for p in progs] == [[0, 2], [1]]


def test_shares_follow_eligibility_cpus_and_headers() -> None:
    jobs = [Job("Python 3", f"print({k})\n", T) for k in range(12)]
    jobs += [Job("GNU C++17", CPP.format(h="vector" if k % 2 else "map", k=k), T) for k in range(8)]
    progs = programs(_items(jobs))
    cpus = {"big": 3, "small": 1}
    eligible = {"Python 3": ["big", "small"], "GNU C++17": ["big"]}
    queues, homeless = share(progs, cpus, eligible)
    assert not homeless
    assert all(p.language == "Python 3" for p in queues["small"])  # no C++ there
    assert sum(len(p.items) for p in queues["big"]) == 15  # 3/4 of the 20 jobs
    for q in queues.values():  # a node judges its share in batch order
        firsts = [p.items[0] for p in q]
        assert firsts == sorted(firsts)
    vector = {p.affinity for p in queues["big"] if "vector" in p.affinity}
    assert len(vector) == 1  # one include list, one node
    none, lost = share(progs, {"small": 1}, {"Python 3": ["small"]})
    assert {p.language for p in lost} == {"GNU C++17"} and len(none["small"]) == 12


def test_a_dry_node_takes_work_it_may_judge() -> None:
    jobs = [Job("GNU C11", f"int main(void){{return {k};}}\n", T) for k in range(3)]
    jobs += [Job("Python 3", f"print({k})\n", T) for k in range(3)]
    progs = programs(_items(jobs))
    eligible = {"GNU C11": ["a"], "Python 3": ["a", "b"]}
    queues = {"a": deque(progs), "b": deque[Program]()}  # b ran dry
    taken = steal("b", queues, {"a": 1, "b": 1}, eligible)
    assert taken is not None and taken.language == "Python 3" and taken.items == [5]  # the back
    while (p := steal("b", queues, {"a": 1, "b": 1}, eligible)) is not None:
        assert p.language == "Python 3"
    assert all(p.language == "GNU C11" for p in queues["a"])  # C stays where it may be judged
