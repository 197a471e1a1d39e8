"""Oracle check of a grading set-up: grade every row's gold middle, which must resolve.

A row whose gold middle does not resolve is a problem of the environment (a missing dependency,
a wrong test command, a checkout without the commit) or of the row itself, and would count
against every model; run this once before trusting `_exec` numbers.

    code-eval oracle infilling --grader local --repos-dir DIR \
        [--data FILE] [--test-cmd "python -m pytest -rA"] [--limit N] [--output OUT.jsonl]

Exit status 0 when every gold middle resolved, 1 otherwise, 2 (one line on stderr) when the rows
or the set-up cannot be used at all (no rows, a bad setting, no Docker for `swebench`).
"""

from __future__ import annotations

import argparse
import json
import sys
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


def run(kwargs: dict[str, Any], limit: int | None = None) -> list[dict[str, Any]]:
    """Outcome records of the gold middles of the rows selected by `kwargs` (as the tasks
    select them, see `documents.rows_from`), the first `limit` of them when given."""
    _, rows = rows_from(kwargs)
    rows = rows[:limit]
    settings = GradingSettings.from_kwargs(kwargs)
    preflight(rows, settings)
    for row in rows:
        row["grading"] = settings.to_json()
    return grade(rows, [row["middle"] for row in rows])


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
    args = parser.parse_args(argv)
    kwargs: dict[str, Any] = {"grader": args.grader}
    for key, value in (
        ("repos_dir", args.repos_dir),
        ("test_cmd", args.test_cmd),
        ("sg_infilling_data", args.data),
        ("sg_infilling_workers", args.workers),
    ):
        if value is not None:
            kwargs[key] = value
    try:
        outcomes = run(kwargs, args.limit)
    except (DataError, ValueError, GradingUnavailable) as exc:
        # unusable input or set-up: one line naming the cause, like the other commands
        print(f"{PROG}: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    if args.output:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(o) + "\n" for o in outcomes)
    for o in outcomes:
        state = "ERROR" if o["error"] else ("resolved" if o["resolved"] else "UNRESOLVED")
        print(f"{o['id']}\t{state}\t{o['error'] or o['detail']}")
    resolved = sum(bool(o["resolved"]) for o in outcomes)
    print(f"{resolved}/{len(outcomes)} gold middles resolved", file=sys.stderr)
    return 0 if resolved == len(outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
