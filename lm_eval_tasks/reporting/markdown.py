"""The written report: the leaderboard table with every column's protocol, per-language tables,
verdict counts, figures and the warnings that must never be lost."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

from lm_eval_tasks.reporting.figures import VERDICTS, LanguageBars
from lm_eval_tasks.reporting.intervals import Interval
from lm_eval_tasks.reporting.table import Table

ROWS_NOTE = (
    "Rows: one per model and run settings. `(--limit N)` marks a partial run; settings in "
    "`[...]` are those in which runs of one model differ, so different runs are never merged."
)


def pct(x: float | None) -> str:
    return "n/a" if x is None or math.isnan(x) else f"{100 * x:.1f}"


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|")


def leaderboard_md(table: Table) -> list[str]:
    cols = table.columns
    head = ["model", "normalised avg (0-100)", *[f"C{i + 1}" for i in range(len(cols))]]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    models = sorted(table.rows, key=lambda m: -_sortable(table.average(m)[0]))
    for model in models:
        avg, n, total = table.average(model)
        cells = [
            pct(table.rows[model][c.key].value) if c.key in table.rows[model] else "n/a"
            for c in cols
        ]
        avg_text = "n/a" if math.isnan(avg) else f"{avg:.1f}"
        lines.append(
            f"| {_md_escape(model)} | {avg_text} ({n} of {total} columns) | "
            + " | ".join(cells)
            + " |"
        )
    lines += ["", "Columns (values in %; the protocol is part of each column):", ""]
    for i, c in enumerate(cols):
        chance = "majority-label rate of the answers" if c.headline.chance != "zero" else "0"
        role = "secondary, not averaged" if c.headline.secondary else "averaged"
        lines.append(
            f"- **C{i + 1}** {c.headline.benchmark}, `{c.headline.group}` {c.headline.metric} "
            f"(filter `{c.headline.filter}`): {_md_escape(c.protocol)}. Chance baseline: {chance}; {role}."
        )
    lines += [
        "",
        "Normalised average (Open LLM Leaderboard style): each primary column's value minus its "
        "chance baseline, divided by (100% - chance), times 100, below chance counted as 0, averaged "
        "over the columns the model has (NaN and missing values are n/a and left out; the count is "
        "shown). Columns with different protocols are never merged, so an average over different "
        "column sets does not compare models.",
    ]
    return lines


def _sortable(x: float) -> float:
    return -1.0 if math.isnan(x) else x


def _with_interval(value: float | None, interval: Interval | None) -> str:
    if interval is None or value is None or math.isnan(value):
        return pct(value)
    return f"{pct(value)} [{pct(interval.low)}, {pct(interval.high)}]"


def language_md(chart: LanguageBars) -> list[str]:
    langs = chart.languages
    lines = [f"#### {chart.title}", ""]
    note = chart.interval_note()
    if note:
        lines += [f"Values in %, [low, high]: {note}.", ""]
    lines += ["| model | " + " | ".join(langs) + " |", "|" + "---|" * (len(langs) + 1)]
    for model, vals in chart.values.items():
        per = chart.intervals.get(model, {})
        lines.append(
            f"| {_md_escape(model)} | "
            + " | ".join(_with_interval(vals.get(x), per.get(x)) for x in langs)
            + " |"
        )
    if chart.chance:
        lines.append(
            "| chance (majority label) | "
            + " | ".join(pct(chart.chance.get(x)) for x in langs)
            + " |"
        )
    return lines


def verdicts_md(model: str, counts: dict[str, Counter[str]]) -> list[str]:
    """Counts per language, in the columns of the verdicts that occur (the rest are all 0)."""
    present = [v for v in VERDICTS if any(c.get(v, 0) for c in counts.values())]
    absent = [v for v in VERDICTS if v not in present]
    lines = [f"#### Verdicts: {_md_escape(model)}", ""]
    lines += ["| language | " + " | ".join(present) + " | total |"]
    lines.append("|" + "---|" * (len(present) + 2))
    for lang in sorted(counts):
        c = counts[lang]
        lines.append(
            f"| {lang} | "
            + " | ".join(str(c.get(v, 0)) for v in present)
            + f" | {sum(c.values())} |"
        )
    if absent:
        lines += ["", f"No program had {', '.join(absent)}."]
    return lines


def document(
    title: str,
    table: Table,
    charts: dict[str, LanguageBars],
    verdicts: dict[str, dict[str, Counter[str]]],
    figures: list[Path],
    out_dir: Path,
    preamble: list[str] | None = None,
    figure_notes: list[str] | None = None,
) -> str:
    lines = [f"# {title}", ""]
    lines += preamble or []
    lines += ["## Warnings", ""]
    lines += [f"- {w}" for w in table.warnings] or ["- none"]
    lines += ["", "## Leaderboard", "", ROWS_NOTE, ""]
    lines += leaderboard_md(table) if table.columns else ["No headline metric found in the runs."]
    if charts:
        lines += ["", "## Per language", ""]
        for chart in charts.values():
            lines += [*language_md(chart), ""]
    if verdicts:
        lines += ["## Verdict distribution (from logged samples)", ""]
        for model, counts in verdicts.items():
            lines += [*verdicts_md(model, counts), ""]
    if figures or figure_notes:
        lines += ["## Figures", ""]
        lines += [f"- {n}" for n in figure_notes or []]
        if figure_notes:
            lines.append("")
        for f in figures:
            lines.append(f"![{f.stem}]({f.relative_to(out_dir)})")
    return "\n".join(lines) + "\n"
