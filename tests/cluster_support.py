"""What the cluster tests share: a PATH without some toolchains, Python jobs of every common
verdict, and a recorder of the answers a backend hands over."""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from code_eval_taskpack.execution import Job, TestCase
from code_eval_taskpack.execution.types import Result

ADD = "a, b = map(int, input().split())\nprint(a + b{extra})\n"


def path_without(tools: Iterable[str], where: Path) -> str:
    """A PATH (one folder of links to every program of the host's /usr/bin but `tools`): a
    host that lacks those toolchains and has everything else."""
    skip = set(tools)
    where.mkdir(parents=True, exist_ok=True)
    for entry in os.scandir("/usr/bin"):
        if entry.name not in skip and not (where / entry.name).exists():
            (where / entry.name).symlink_to(entry.path)
    return str(where)


def python_jobs(n: int, sleep: float = 0.05, prefix: str = "py") -> list[Job]:
    """Distinct Python programs: passed, wrong answer, runtime error, time limit in turn."""
    out = []
    for i in range(n):
        body = {
            0: ADD.format(extra=f" + 0 * {i}"),
            1: ADD.format(extra=f" + 1 + 0 * {i}"),
            2: f"import sys\nsys.exit({i % 7 + 1})\n",
            3: f"x = {i}\nwhile True:\n    x += 1\n",
        }[i % 4]
        src = f"import time\ntime.sleep({sleep})\n{body}"
        tests = (TestCase("1 2\n", ("3",)), TestCase("2 2\n", ("4",)))
        out.append(Job("Python 3", src, tests, time_limit_s=0.2, id=f"{prefix}{i}"))
    return out


class Answers:
    """Counts the answers a backend hands over per job index (each must come exactly once)."""

    def __init__(self) -> None:
        self.counts: Counter[int] = Counter()
        self.judged_by: list[str] = []  # who judged each answer, in order
        self._lock = threading.Lock()

    def wrap(self, on_result: Callable[[int, Result], None]) -> Callable[[int, Result], None]:
        def counted(i: int, result: Result) -> None:
            with self._lock:
                self.counts[i] += 1
                self.judged_by.append(str(result.isolation.get("judged_by")))
            on_result(i, result)

        return counted

    def exactly_once(self, n: int) -> bool:
        return sorted(self.counts) == list(range(n)) and set(self.counts.values()) == {1}


def count_answers(backend: Any, answers: Answers) -> None:
    """Make `backend.judge_batch` report every answer to `answers` (on the instance only)."""
    original = backend.judge_batch

    def judge_batch(items: Any, on_result: Any, **kwargs: Any) -> None:
        original(items, answers.wrap(on_result), **kwargs)

    backend.judge_batch = judge_batch
