"""Write a report of lm-eval runs: Markdown, CSV and JSON tables, PNG figures.

    code-eval report RESULTS... --out DIR [--title TEXT]

RESULTS are lm-eval output folders (`--output_path` of `lm_eval`), leaderboard folders, or
results_*.json files. Writes DIR/report.md, DIR/leaderboard.csv, DIR/leaderboard.json and
DIR/figures/*.png, and prints the path of report.md. Without matplotlib (the `report` extra) it
writes everything but the figures and says so.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from collections import Counter
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


def draw_figures(
    charts: dict[str, fig.LanguageBars],
    verdicts: dict[str, dict[str, Counter[str]]],
    figdir: Path,
) -> tuple[list[Path], list[str]]:
    """The PNGs of a report, and a note for every chart not drawn (nothing to show)."""
    figdir.mkdir(parents=True, exist_ok=True)
    taken: set[str] = set()
    pngs: list[Path] = []
    notes: list[str] = []
    for name, chart in charts.items():
        png = fig.draw_language_bars(chart, figdir / f"{fig.safe_name(name, taken)}.png")
        if png is None:
            notes.append(f"{chart.title}: not drawn, every value is n/a")
        else:
            pngs.append(png)
    if len(verdicts) > 1:
        pngs.append(fig.draw_verdict_overview(verdicts, figdir / "verdicts_all_models.png"))
    for model, counts in verdicts.items():
        path = figdir / f"verdicts_{fig.safe_name(model, taken)}.png"
        pngs.append(fig.draw_verdicts(model, counts, path))
    return pngs, notes


def write_report(
    inputs: Sequence[Path],
    out: Path,
    title: str = "Evaluation report",
    preamble: list[str] | None = None,
) -> Path:
    """Write the report; without matplotlib everything but the figures (and say so on stderr
    and in the report)."""
    runs = find_runs(inputs)
    table = build(runs)
    charts = fig.language_bars(runs)
    verdicts = fig.verdict_counts(runs)
    out.mkdir(parents=True, exist_ok=True)
    pngs: list[Path] = []
    notes: list[str] = []
    if fig.matplotlib_available():
        pngs, notes = draw_figures(charts, verdicts, out / "figures")
    else:
        print(f"warning: {fig.MISSING_EXTRA}", file=sys.stderr)
        notes.append(fig.MISSING_EXTRA)
    write_csv(table, out / "leaderboard.csv")
    data = table.to_dict()
    data["per_language"] = {k: c.to_dict() for k, c in charts.items()}
    data["verdicts"] = {m: {lang: dict(c) for lang, c in v.items()} for m, v in verdicts.items()}
    data["runs"] = [{"file": str(r.results_file), "row": r.label} for r in runs]
    data["figure_notes"] = notes
    (out / "leaderboard.json").write_text(
        json.dumps(strict_json(data), indent=2, allow_nan=False), encoding="utf-8"
    )
    report = out / "report.md"
    report.write_text(
        document(title, table, charts, verdicts, pngs, out, preamble, notes), encoding="utf-8"
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
