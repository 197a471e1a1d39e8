"""Oracle check of a grading set-up: grade every row's gold middle, which must resolve.

A row whose gold middle does not resolve is a problem of the environment (a missing dependency,
a wrong test command, a checkout without the commit) or of the row itself, and would count
against every model; run this once before trusting `_exec` numbers.

    code-eval oracle infilling --grader local --repos-dir DIR \
        [--data FILE] [--test-cmd "python -m pytest -rA"] [--limit N] [--output OUT.jsonl]
        [--control]
    code-eval oracle infilling --bundled [--repos-dir DIR] [--control]

`--control` also grades a do-nothing middle per row (`return None` at the middle's indentation),
which must not resolve: a row whose tests pass it cannot tell a right middle from a wrong one.
`--bundled` grades the rows shipped with the pack (`bundled.py`) with the local grader, building
their checkout in `--repos-dir` (default: a folder of the pack's cache) when it is missing; it
needs no network.

Exit status 0 when every gold middle resolved (and, with `--control`, no control did), 1
otherwise, 2 (one line on stderr) when the rows or the set-up cannot be used at all (no rows, a
bad setting, no Docker for `swebench`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from code_eval_taskpack.utils.errors import DataError
from lm_eval_tasks.code_infilling.documents import rows_from
from lm_eval_tasks.code_infilling.grading import (
    GradingSettings,
    GradingUnavailable,
    grade,
    preflight,
)

PROG = "code-eval oracle infilling"


def do_nothing(middle: str) -> str:
    """The control middle: `return None`, indented like the first line of `middle`."""
    first = next((line for line in middle.split("\n") if line.strip()), "")
    return first[: len(first) - len(first.lstrip())] + "return None\n"


def run(
    kwargs: dict[str, Any], limit: int | None = None, control: bool = False
) -> list[dict[str, Any]]:
    """Outcome records of the gold middles of the rows selected by `kwargs` (as the tasks
    select them, see `documents.rows_from`), the first `limit` of them when given; with
    `control`, followed by the outcomes of each row's `do_nothing` middle (`"control": true`)."""
    _, rows = rows_from(kwargs)
    rows = rows[:limit]
    settings = GradingSettings.from_kwargs(kwargs)
    preflight(rows, settings)
    for row in rows:
        row["grading"] = settings.to_json()
    docs = rows + rows if control else rows
    middles = [row["middle"] for row in rows]
    if control:
        middles += [do_nothing(row["middle"]) for row in rows]
    outcomes = grade(docs, middles)
    for number, outcome in enumerate(outcomes):
        outcome["control"] = number >= len(rows)
    return outcomes


def bundled_kwargs(repos_dir: str | None) -> dict[str, Any]:
    """Settings that grade the bundled rows locally, their checkout built when missing."""
    from code_eval_taskpack.utils.download import cache_root
    from lm_eval_tasks.code_infilling import bundled

    where = Path(repos_dir).absolute() if repos_dir else cache_root() / "infilling_bundled_repos"
    checkout = bundled.build_checkout(where)
    print(f"bundled rows: {bundled.ROWS}\ncheckout: {checkout}", file=sys.stderr)
    return {"grader": "local", "repos_dir": str(where), "sg_infilling_data": str(bundled.ROWS)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Grade the gold middles; all must resolve."
    )
    parser.add_argument("--grader", choices=["swebench", "local"], default="swebench")
    parser.add_argument(
        "--repos-dir", help="folder of <owner>__<name> git checkouts (local grader)"
    )
    parser.add_argument("--test-cmd", help="test command (local grader)")
    parser.add_argument(
        "--data",
        help="local parquet or JSONL file (default: $SG_INFILLING_DATA, else the Hub file)",
    )
    parser.add_argument("--limit", type=int, help="first N rows only")
    parser.add_argument(
        "--workers", type=int, help="instances graded in parallel (default: 2, 1 on one CPU)"
    )
    parser.add_argument("--output", help="write one JSON outcome per line here")
    parser.add_argument(
        "--control",
        action="store_true",
        help="also grade a do-nothing middle per row (`return None`); none may resolve",
    )
    parser.add_argument(
        "--bundled",
        action="store_true",
        help="the rows shipped with the pack, local grader, checkout built in --repos-dir",
    )
    args = parser.parse_args(argv)
    kwargs: dict[str, Any] = {"grader": args.grader}
    if args.bundled:
        kwargs = bundled_kwargs(args.repos_dir)
    for key, value in (
        ("repos_dir", None if args.bundled else args.repos_dir),
        ("test_cmd", args.test_cmd),
        ("sg_infilling_data", args.data),
        ("sg_infilling_workers", args.workers),
    ):
        if value is not None:
            kwargs[key] = value
    try:
        outcomes = run(kwargs, args.limit, control=args.control)
    except (DataError, ValueError, GradingUnavailable) as exc:
        # unusable input or set-up: one line naming the cause, like the other commands
        print(f"{PROG}: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    if args.output:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(o) + "\n" for o in outcomes)
    for o in outcomes:
        state = "ERROR" if o["error"] else ("resolved" if o["resolved"] else "UNRESOLVED")
        kind = "control" if o["control"] else "gold"
        print(f"{o['id']}\t{kind}\t{state}\t{o['error'] or o['detail']}")
    gold = [o for o in outcomes if not o["control"]]
    controls = [o for o in outcomes if o["control"]]
    resolved = sum(bool(o["resolved"]) for o in gold)
    print(f"{resolved}/{len(gold)} gold middles resolved", file=sys.stderr)
    # a control counts as rejected only when graded: a grading error proves nothing
    rejected = sum(not o["resolved"] and not o["error"] for o in controls)
    if controls:
        print(f"{rejected}/{len(controls)} do-nothing middles rejected", file=sys.stderr)
    return 0 if resolved == len(gold) and rejected == len(controls) else 1


if __name__ == "__main__":
    sys.exit(main())
