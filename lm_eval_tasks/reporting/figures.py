"""PNG figures of a report (matplotlib, the `report` extra), and the per-language numbers they show.

- per-language bars of every per-language headline (xCodeEval pass@k, cloze accuracy), one bar
  per model with its 95% interval (`intervals`), and the chance line where chance is not 0; up to
  three models side by side, more as one panel per language with one row per model;
- the verdict shares per language from logged samples (stacked to 100%, only the verdicts that
  occur), one figure per model, plus one row per model across all languages when there are
  several: the first thing to look at when a language scores zero.

Languages are named as the language catalogue names them (`benchmarks.display_language`). A
chart with nothing to show (all n/a, e.g. a predict-only cloze run) is not drawn; the report says so.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from code_eval_taskpack.execution.types import Verdict
from lm_eval_tasks.reporting import intervals as ci
from lm_eval_tasks.reporting.benchmarks import (
    CHANCE_MAJORITY,
    Headline,
    display_language,
    language_of,
    per_language_headlines,
)
from lm_eval_tasks.reporting.results import Run, verdict_records

VERDICTS = [v.value for v in Verdict]
# one colour per verdict in every figure: green passes, warm colours the model's failures, grey
# the engine's own failure
VERDICT_COLOURS = {
    "PASSED": "#2ca02c",
    "WRONG_ANSWER": "#d62728",
    "TIME_LIMIT_EXCEEDED": "#ff7f0e",
    "MEMORY_LIMIT_EXCEEDED": "#e377c2",
    "RUNTIME_ERROR": "#9467bd",
    "OUTPUT_LIMIT_EXCEEDED": "#bcbd22",
    "COMPILATION_ERROR": "#8c564b",
    "INFRA_ERROR": "#7f7f7f",
}
MISSING_EXTRA = (
    "figures not drawn: they need matplotlib, the `report` extra "
    "(pip install code-eval-taskpack[report])"
)
SIDE_BY_SIDE_MODELS = 3  # more models than this: one panel per language


@dataclass
class LanguageBars:
    """One chart: values[model][language] in 0-1, their 95% intervals, chance[language] (0-1)
    where chance is not zero."""

    title: str
    metric: str
    values: dict[str, dict[str, float]] = field(default_factory=dict)
    chance: dict[str, float] = field(default_factory=dict)
    intervals: dict[str, dict[str, ci.Interval]] = field(default_factory=dict)

    @property
    def languages(self) -> list[str]:
        return sorted({lang for vals in self.values.values() for lang in vals})

    @property
    def empty(self) -> bool:
        """Nothing to draw: every value is n/a."""
        return all(math.isnan(v) for vals in self.values.values() for v in vals.values())

    def interval_note(self) -> str:
        methods = {i.method for per in self.intervals.values() for i in per.values()}
        return ci.describe(methods)

    def to_dict(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "values": self.values,
            "chance": self.chance,
            "intervals_95": {
                m: {
                    lang: {"low": i.low, "high": i.high, "method": i.method, "n": i.n}
                    for lang, i in per.items()
                }
                for m, per in self.intervals.items()
            },
        }


# metrics every problem scores 0 or 1 in: from the value and the problem count alone (no
# logged samples) their interval is still known
_BINARY_METRICS = ("exact_match", "acc")


def _interval(run: Run, task: str, h: Headline, value: float) -> ci.Interval | None:
    scores = [
        float(s[h.metric])
        for s in run.logged(task)
        if s.get("filter", h.filter) == h.filter and isinstance(s.get(h.metric), (int, float))
    ]
    if scores:
        return ci.of_scores(scores)
    n = run.size(task)
    binary = h.metric in _BINARY_METRICS or (h.metric == "pass@1" and "_greedy" in h.group)
    if math.isnan(value) or n <= 0 or not binary:
        return None
    k = round(value * n)
    return ci.wilson(k, n) if abs(k - value * n) < 1e-6 else None


def language_bars(runs: list[Run]) -> dict[str, LanguageBars]:
    """Per-language values of every per-language headline, keyed by chart name."""
    charts: dict[str, LanguageBars] = {}
    for run in runs:
        for task in run.tasks():
            for h, slug in per_language_headlines(task):
                _add_bar(charts, run, task, h, slug)
    return charts


def _add_bar(charts: dict[str, LanguageBars], run: Run, task: str, h: Headline, slug: str) -> None:
    value = run.value(task, h.metric, h.filter)
    if value is None:
        return
    lang = display_language(slug)
    name = f"{h.group}.{h.metric}.{h.filter}".replace("@", "at")
    chart = charts.setdefault(
        name, LanguageBars(f"{h.benchmark}: {h.metric} ({h.filter}) per language", h.metric)
    )
    chart.values.setdefault(run.label, {})[lang] = value
    interval = _interval(run, task, h, value)
    if interval is not None:
        chart.intervals.setdefault(run.label, {})[lang] = interval
    if h.chance == CHANCE_MAJORITY:
        share = run.value(task, "gold_max_share", h.filter)
        if share is not None and not math.isnan(share):
            chart.chance[lang] = max(share, 1 - share)


def verdict_counts(runs: list[Run]) -> dict[str, dict[str, Counter[str]]]:
    """model -> language -> verdict counts, from the logged samples of execution tasks."""
    out: dict[str, dict[str, Counter[str]]] = defaultdict(lambda: defaultdict(Counter))
    for run in runs:
        for task in sorted(run.samples):
            found = language_of(task)
            for sample in run.logged(task):
                records = verdict_records(sample)
                if not records:
                    continue
                doc = sample.get("doc") or {}
                lang = display_language(
                    str(doc.get("lang_cluster") or (found[1] if found else task))
                )
                for rec in records:
                    out[run.label][lang][str(rec["verdict"])] += 1
    return {m: dict(v) for m, v in out.items()}


def matplotlib_available() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _plt():  # type: ignore[no-untyped-def]
    import matplotlib

    matplotlib.use("Agg")  # files only, never a display
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, path: Path) -> Path:
    fig.savefig(path, dpi=110, bbox_inches="tight")
    _plt().close(fig)
    return path


def draw_language_bars(chart: LanguageBars, path: Path) -> Path | None:
    """The chart as a PNG at `path`; None (nothing written) when every value is n/a."""
    if chart.empty:
        return None
    if len(chart.values) <= SIDE_BY_SIDE_MODELS:
        return _side_by_side(chart, path)
    return _panels(chart, path)


def _caption(chart: LanguageBars) -> str:
    note = chart.interval_note()
    return f"error bars: {note}" if note else "no interval: per-problem scores not logged"


def _side_by_side(chart: LanguageBars, path: Path) -> Path:
    plt = _plt()
    langs, models = chart.languages, list(chart.values)
    fig, ax = plt.subplots(figsize=(max(6.5, 0.75 * len(langs) * len(models) + 2.5), 4.4))
    width = 0.8 / len(models)
    for i, model in enumerate(models):
        xs = [j + i * width - 0.4 + width / 2 for j in range(len(langs))]
        vals = [100 * chart.values[model].get(lang, math.nan) for lang in langs]
        per = chart.intervals.get(model, {})
        lows = [
            v - 100 * per[lang].low if lang in per else 0
            for v, lang in zip(vals, langs, strict=True)
        ]
        highs = [
            100 * per[lang].high - v if lang in per else 0
            for v, lang in zip(vals, langs, strict=True)
        ]
        shown = [0 if math.isnan(v) else v for v in vals]
        ax.bar(
            xs,
            shown,
            width,
            label=model,
            yerr=[
                [0 if math.isnan(x) else x for x in lows],
                [0 if math.isnan(x) else x for x in highs],
            ],
            capsize=3,
            error_kw={"elinewidth": 1, "ecolor": "#333333"},
        )
        for x, v, lang in zip(xs, vals, langs, strict=True):
            top = 100 * per[lang].high if lang in per else (0 if math.isnan(v) else v)
            ax.annotate(
                "n/a" if math.isnan(v) else f"{v:.1f}",
                (x, top),
                xytext=(0, 2),
                textcoords="offset points",
                ha="center",
                va="bottom",
                fontsize=8,
            )
    for j, lang in enumerate(langs):
        if lang in chart.chance:
            ax.hlines(
                100 * chart.chance[lang], j - 0.45, j + 0.45, colors="red", linestyles="dashed"
            )
    if chart.chance:
        ax.plot([], [], "r--", label="chance (majority label)")
    ax.set_xticks(range(len(langs)), langs)
    ax.set_xlim(-0.6, len(langs) - 0.4)
    ax.set_ylim(0, 112)
    ax.set_yticks(range(0, 101, 20))
    ax.set_ylabel(f"{chart.metric} (%)")
    ax.set_title(chart.title, fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.text(0.01, -0.02, _caption(chart), fontsize=7, ha="left", va="top")
    return _save(fig, path)


def _panels(chart: LanguageBars, path: Path) -> Path:
    """One panel per language, one horizontal bar per model: legible with 20 models."""
    plt = _plt()
    langs, models = chart.languages, list(chart.values)
    cols = min(4, len(langs))
    rows = math.ceil(len(langs) / cols)
    height = 0.26 * len(models) + 0.9
    fig, axes = plt.subplots(
        rows, cols, figsize=(3.0 * cols + 2.5, height * rows + 0.6), sharey=True, squeeze=False
    )
    ys = list(range(len(models)))
    for idx, ax in enumerate(axes.flat):
        if idx >= len(langs):
            ax.set_visible(False)
            continue
        lang = langs[idx]
        vals = [100 * chart.values[m].get(lang, math.nan) for m in models]
        lows, highs = [], []
        for m, v in zip(models, vals, strict=True):
            i = chart.intervals.get(m, {}).get(lang)
            ok = i is not None and not math.isnan(v)
            lows.append(v - 100 * i.low if ok and i else 0)
            highs.append(100 * i.high - v if ok and i else 0)
        ax.barh(
            ys,
            [0 if math.isnan(v) else v for v in vals],
            0.7,
            xerr=[lows, highs],
            capsize=2,
            color="#1f77b4",
            error_kw={"elinewidth": 0.8, "ecolor": "#333333"},
        )
        for y, v, high in zip(ys, vals, highs, strict=True):
            end = 0 if math.isnan(v) else v + high  # right of the whisker, never on it
            ax.annotate(
                "n/a" if math.isnan(v) else f"{v:.0f}",
                (end, y),
                xytext=(3, 0),
                textcoords="offset points",
                va="center",
                fontsize=6.5,
            )
        if lang in chart.chance:
            ax.axvline(100 * chart.chance[lang], color="red", linestyle="dashed", linewidth=1)
        ax.set_title(lang, fontsize=9)
        ax.set_xlim(0, 115)
        ax.set_xticks(range(0, 101, 25))
        ax.set_xlabel(f"{chart.metric} (%)", fontsize=7)
        ax.tick_params(labelsize=7)
        ax.grid(axis="x", alpha=0.3)
        ax.set_axisbelow(True)
    axes[0][0].set_yticks(ys, models)
    axes[0][0].invert_yaxis()  # first model on top
    for r in range(rows):
        axes[r][0].tick_params(axis="y", labelsize=7)
    chance = "; red dashed line: chance (majority label)" if chart.chance else ""
    fig.suptitle(chart.title, fontsize=10)
    fig.text(0.01, 0.0, _caption(chart) + chance, fontsize=7, ha="left", va="top")
    fig.tight_layout()
    return _save(fig, path)


def _stacked_shares(ax: Any, rows: list[tuple[str, Counter[str]]]) -> list[str]:
    """Horizontal bars stacked to 100%, one per row; the verdicts that occur, in enum order."""
    present = [v for v in VERDICTS if any(c.get(v, 0) for _, c in rows)]
    ys = list(range(len(rows)))
    left = [0.0] * len(rows)
    for verdict in present:
        shares = [100 * c.get(verdict, 0) / (sum(c.values()) or 1) for _, c in rows]
        ax.barh(ys, shares, 0.7, left=left, label=verdict, color=VERDICT_COLOURS.get(verdict))
        for y, x0, share in zip(ys, left, shares, strict=True):
            if share >= 7:
                ax.text(
                    x0 + share / 2,
                    y,
                    f"{share:.0f}",
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="white",
                )
        left = [a + b for a, b in zip(left, shares, strict=True)]
    for y, (_, c) in zip(ys, rows, strict=True):
        ax.text(101, y, f"n={sum(c.values())}", va="center", fontsize=7)
    ax.set_yticks(ys, [name for name, _ in rows])
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xticks(range(0, 101, 20))
    ax.set_xlabel("share of judged programs (%)")
    return present


def _verdict_figure(rows: list[tuple[str, Counter[str]]], title: str, path: Path) -> Path:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(9.0, 0.32 * len(rows) + 1.9))
    _stacked_shares(ax, rows)
    ax.set_title(title, fontsize=10)
    # beside the bars (right of the n= labels), never over them
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.1, 1.0), frameon=False)
    return _save(fig, path)


def draw_verdicts(model: str, counts: dict[str, Counter[str]], path: Path, note: str = "") -> Path:
    """One model: one row per language."""
    rows = [(lang, counts[lang]) for lang in sorted(counts)]
    return _verdict_figure(rows, f"Verdicts per language: {model}{note}", path)


def draw_verdict_overview(verdicts: dict[str, dict[str, Counter[str]]], path: Path) -> Path:
    """Every model: one row each, its programs of all languages together."""
    rows = []
    for model, per_lang in verdicts.items():
        total: Counter[str] = Counter()
        for c in per_lang.values():
            total.update(c)
        rows.append((model, total))
    return _verdict_figure(rows, "Verdicts per model (all languages)", path)


def safe_name(text: str, taken: set[str] | None = None) -> str:
    """A file name from a label: letters, digits and `._-` only, no leading dot or dash, at most
    100 characters; unique (case-insensitively) among `taken`, to which it is added."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", text)
    name = name.lstrip(".-")[:100].strip("_") or "model"
    if taken is None:
        return name
    unique, i = name, 2
    while unique.casefold() in taken:
        unique, i = f"{name}-{i}", i + 1
    taken.add(unique.casefold())
    return unique
