"""Write a report of lm-eval runs: Markdown, CSV and JSON tables, PNG figures.

    code-eval report RESULTS... --out DIR [--title TEXT]

RESULTS are lm-eval output folders (`--output_path` of `lm_eval`), leaderboard folders, or
results_*.json files. Writes DIR/report.md, DIR/leaderboard.csv, DIR/leaderboard.json and
DIR/figures/*.png, and prints the path of report.md.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path

from lm_eval_tasks.reporting import figures as fig
from lm_eval_tasks.reporting.markdown import document
from lm_eval_tasks.reporting.results import ResultsError, find_runs
from lm_eval_tasks.reporting.table import Table, build
from lm_eval_tasks.xcodeeval.score import strict_json


def write_csv(table: Table, path: Path) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["model", "normalised_average", "columns_averaged", "primary_columns",
                    *[c.key for c in table.columns]])  # fmt: skip
        for model, cells in table.rows.items():
            avg, n, total = table.average(model)
            w.writerow(
                [model, "" if math.isnan(avg) else f"{avg:.4f}", n, total]
                + [
                    "" if c.key not in cells or math.isnan(cells[c.key].value)
                    else f"{cells[c.key].value:.6f}"
                    for c in table.columns
                ]
            )  # fmt: skip


def write_report(
    inputs: Sequence[Path],
    out: Path,
    title: str = "Evaluation report",
    preamble: list[str] | None = None,
) -> Path:
    runs = find_runs(inputs)
    table = build(runs)
    charts = fig.language_bars(runs)
    verdicts = fig.verdict_counts(runs)
    out.mkdir(parents=True, exist_ok=True)
    figdir = out / "figures"
    figdir.mkdir(exist_ok=True)
    pngs: list[Path] = []
    for name, chart in charts.items():
        pngs.append(fig.draw_language_bars(chart, figdir / f"{fig.safe_name(name)}.png"))
    for model, counts in verdicts.items():
        pngs.append(
            fig.draw_verdicts(model, counts, figdir / f"verdicts_{fig.safe_name(model)}.png")
        )
    write_csv(table, out / "leaderboard.csv")
    data = table.to_dict()
    data["per_language"] = {
        k: {"title": c.title, "values": c.values, "chance": c.chance} for k, c in charts.items()
    }
    data["verdicts"] = {m: {lang: dict(c) for lang, c in v.items()} for m, v in verdicts.items()}
    data["runs"] = [str(r.results_file) for r in runs]
    (out / "leaderboard.json").write_text(
        json.dumps(strict_json(data), indent=2, allow_nan=False), encoding="utf-8"
    )
    report = out / "report.md"
    report.write_text(
        document(title, table, charts, verdicts, pngs, out, preamble), encoding="utf-8"
    )
    return report


def main(argv: Sequence[str] | None = None) -> int:
    """Subcommand `code-eval report`."""
    p = argparse.ArgumentParser(
        prog="code-eval report",
        description="Leaderboard table (Markdown, CSV, JSON) and PNG figures from lm-eval runs.",
    )
    p.add_argument("results", nargs="+", type=Path, help="lm-eval output or leaderboard folders")
    p.add_argument("--out", type=Path, required=True, help="folder to write the report into")
    p.add_argument("--title", default="Evaluation report")
    args = p.parse_args(argv)
    try:
        path = write_report(args.results, args.out, args.title)
    except ResultsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
