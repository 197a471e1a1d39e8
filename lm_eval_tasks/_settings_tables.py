"""Render each benchmark README's table of settings from the benchmark's declarations.

    python -m lm_eval_tasks._settings_tables [--check]

The text between a README's settings-table markers is replaced by `utils.settings.render_table`
of the declarations; `--check` changes nothing and fails when a README is out of date (a test
runs it), so the tables can never disagree with what the code reads.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from code_eval_taskpack.utils.settings import Setting, replace_table
from lm_eval_tasks.clozetest_maxmin import settings as cloze
from lm_eval_tasks.code_infilling import settings as infill
from lm_eval_tasks.xcodeeval import settings as xce

FOLDER = Path(__file__).resolve().parent

# README (relative to this folder) -> [(module named in its markers, declarations)]
TABLES: dict[str, list[tuple[str, Sequence[Setting]]]] = {
    "clozetest_maxmin/README.md": [("clozetest_maxmin.settings.SETTINGS", cloze.SETTINGS)],
    "xcodeeval/README.md": [("xcodeeval.settings.SETTINGS", xce.SETTINGS)],
    "code_infilling/README.md": [
        (
            "code_infilling.settings.DATA_SETTINGS",
            (*infill.DATA_SETTINGS, *infill.BUDGET_SETTINGS),
        ),
        ("code_infilling.settings.GRADING_SETTINGS", infill.GRADING_SETTINGS),
    ],
}


def rendered(folder: Path = FOLDER) -> dict[Path, tuple[str, str]]:
    """README path -> (its current text, its text with every table rendered)."""
    out = {}
    for relpath, tables in TABLES.items():
        path = folder / relpath
        text = path.read_text(encoding="utf-8")
        new = text
        for module, declarations in tables:
            new = replace_table(new, module, declarations)
        out[path] = (text, new)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="fail if a README is out of date")
    args = parser.parse_args(argv)
    stale = [path for path, (old, new) in rendered().items() if old != new]
    if args.check:
        for path in stale:
            print(f"out of date: {path} (run python -m lm_eval_tasks._settings_tables)")
        return 1 if stale else 0
    for path in stale:
        path.write_text(rendered()[path][1], encoding="utf-8")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
