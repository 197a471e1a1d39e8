"""Parsers that turn a test runner's console output into per-test statuses.

A repository's tests are judged by what the runner printed, so a parser must be strict about
what counts as a result line and must never invent one: a test it does not find is reported
missing, and the caller counts a missing test as failed.

`pytest -rA` ends with a "short test summary info" block with one line per test:
``STATUS node_id`` for PASSED/XPASS, ``STATUS node_id - message`` for FAILED/ERROR/XFAIL, and
``SKIPPED [n] file:line: reason`` (no node id). Verbose runs (`-v`) also print
``node_id STATUS [ NN%]`` while running; both forms are read, the summary wins.

Result lines count only after pytest's own session header (``=== test session starts ===``),
which pytest prints before it imports any test: a log whose summary has no header before it was
not written by a pytest session (`RunnerLog.rejected` says so) and yields no result. (`-q`
suppresses the header, so such logs are not accepted.) A header does not make a log
trustworthy: code under test can print a whole fake session. The local grader therefore decides
from the signed report of its pytest plugin (`execution.repo_tests.signed_report`), not from
this parser.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

PASSED = "PASSED"
FAILED = "FAILED"
ERROR = "ERROR"
SKIPPED = "SKIPPED"
XFAIL = "XFAIL"
XPASS = "XPASS"
MISSING = "MISSING"

#: Statuses that count as a passing test (an expected failure is the test doing its job).
PASSING = frozenset({PASSED, XFAIL})

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_HEADER = re.compile(r"^=+ test session starts =+$")
_SUMMARY_LINE = re.compile(r"^(PASSED|FAILED|ERROR|XFAIL|XPASS) (\S.*)$")
_VERBOSE_LINE = re.compile(
    r"^(\S+::\S.*?) (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)(?: +\[ *\d+%\])?$"
)


@dataclass
class RunnerLog:
    """Result lines found in a log: (status, text after the status) in order of appearance."""

    entries: list[tuple[str, str]] = field(default_factory=list)
    rejected: str = ""  # why the log's results were not accepted ("" when they were)

    def status_of(self, test_id: str) -> str:
        """Status of `test_id` (last report wins), or MISSING."""
        return self.statuses([test_id])[test_id]

    def statuses(self, test_ids: Iterable[str]) -> dict[str, str]:
        """Status of each of `test_ids` (last report wins), or MISSING, in one pass over the log.

        A FAILED/ERROR line carries `` - message`` after the id and ids may themselves contain
        spaces (parametrised tests), so a line matches an id when it is the id or starts with
        ``id + " - "``. Only the lengths of the wanted ids are tried at each line, so the pass
        costs lines x distinct id lengths, not lines x ids.
        """
        wanted = list(test_ids)
        ids = set(wanted)
        lengths = sorted({len(t) for t in ids})
        found: dict[str, str] = {}
        for status, rest in self.entries:
            for n in lengths:
                if n > len(rest):
                    break
                if (n == len(rest) or rest.startswith(" - ", n)) and rest[:n] in ids:
                    found[rest[:n]] = status
        return {t: found.get(t, MISSING) for t in wanted}

    @property
    def count(self) -> int:
        return len(self.entries)


def parse_pytest(output: str) -> RunnerLog:
    """Per-test results of a pytest run with `-rA` (and optionally `-v`)."""
    verbose: list[tuple[str, str]] = []
    summary: list[tuple[str, str]] = []
    in_summary = False
    header = False
    # Lines end at "\n" only: `str.splitlines` would also break at \x0c, \x1c, \x85, \u2028...,
    # which a test's failure message can carry into its summary line and so forge another one.
    for raw in output.split("\n"):
        line = _ANSI.sub("", raw).rstrip()
        if not header:
            header = _HEADER.match(line) is not None
            if not header and "short test summary info" in line and line.startswith("="):
                return RunnerLog(rejected="a test summary without pytest's session header")
            continue
        if "short test summary info" in line and line.startswith("="):
            in_summary = True
            continue
        if in_summary:
            m = _SUMMARY_LINE.match(line)
            if m:
                summary.append((m.group(1), m.group(2)))
                continue
            if line.startswith("="):
                in_summary = False
            continue
        m = _VERBOSE_LINE.match(line)
        if m:
            verbose.append((m.group(2), m.group(1)))
    # Summary lines come last so they win in `status_of`.
    return RunnerLog(entries=verbose + summary)


PARSERS: dict[str, Callable[[str], RunnerLog]] = {"pytest": parse_pytest}


def get_parser(name: str) -> Callable[[str], RunnerLog]:
    try:
        return PARSERS[name]
    except KeyError:
        raise ValueError(f"unknown test log parser {name!r}; known: {sorted(PARSERS)}") from None


__all__ = [
    "ERROR",
    "FAILED",
    "MISSING",
    "PASSED",
    "PASSING",
    "SKIPPED",
    "XFAIL",
    "XPASS",
    "RunnerLog",
    "get_parser",
    "parse_pytest",
]
