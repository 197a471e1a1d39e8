"""PNG figures of a report (matplotlib, the `report` extra), and the per-language numbers they show.

- per-language bars of every per-language headline (xCodeEval pass@k, cloze accuracy), one bar
  per model, with the chance line where chance is not 0;
- the verdict distribution per language from logged samples, one bar per member of the engine's
  `Verdict`: the first thing to look at when a language scores zero.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from code_eval_taskpack.execution.types import Verdict
from lm_eval_tasks.reporting.benchmarks import CHANCE_MAJORITY, language_of
from lm_eval_tasks.reporting.results import Run, samples, verdict_records

VERDICTS = [v.value for v in Verdict]


@dataclass
class LanguageBars:
    """One chart: values[model][language] in 0-1, chance[language] (0-1) if not zero."""

    title: str
    metric: str
    values: dict[str, dict[str, float]] = field(default_factory=dict)
    chance: dict[str, float] = field(default_factory=dict)


def language_bars(runs: list[Run]) -> dict[str, LanguageBars]:
    """Per-language values of every per-language headline, keyed by chart name."""
    charts: dict[str, LanguageBars] = {}
    for run in runs:
        for task in run.tasks():
            found = language_of(task)
            if found is None:
                continue
            h, lang = found
            value = run.value(task, h.metric, h.filter)
            if value is None:
                continue
            name = f"{h.group}.{h.metric}.{h.filter}".replace("@", "at")
            chart = charts.setdefault(
                name, LanguageBars(f"{h.benchmark}: {h.metric} ({h.filter}) per language", h.metric)
            )
            chart.values.setdefault(run.model, {})[lang] = value
            if h.chance == CHANCE_MAJORITY:
                share = run.value(task, "gold_max_share", h.filter)
                if share is not None and not math.isnan(share):
                    chart.chance[lang] = max(share, 1 - share)
    return charts


def verdict_counts(runs: list[Run]) -> dict[str, dict[str, Counter[str]]]:
    """model -> language -> verdict counts, from the logged samples of execution tasks."""
    out: dict[str, dict[str, Counter[str]]] = defaultdict(lambda: defaultdict(Counter))
    for run in runs:
        for task, path in sorted(run.samples.items()):
            found = language_of(task)
            for sample in samples(path):
                records = verdict_records(sample)
                if not records:
                    continue
                doc = sample.get("doc") or {}
                lang = str(doc.get("lang_cluster") or (found[1] if found else task))
                for rec in records:
                    out[run.model][lang][str(rec["verdict"])] += 1
    return {m: dict(v) for m, v in out.items()}


def _plt():  # type: ignore[no-untyped-def]
    import matplotlib

    matplotlib.use("Agg")  # files only, never a display
    import matplotlib.pyplot as plt

    return plt


def draw_language_bars(chart: LanguageBars, path: Path) -> Path:
    plt = _plt()
    langs = sorted({lang for vals in chart.values.values() for lang in vals})
    models = list(chart.values)
    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(langs) * max(1, len(models)) + 2), 4.2))
    width = 0.8 / max(1, len(models))
    for i, model in enumerate(models):
        xs = [j + i * width - 0.4 + width / 2 for j in range(len(langs))]
        vals = [100 * chart.values[model].get(lang, math.nan) for lang in langs]
        bars = ax.bar(xs, [0 if math.isnan(v) else v for v in vals], width, label=model)
        for bar, v in zip(bars, vals, strict=True):
            ax.annotate(
                "n/a" if math.isnan(v) else f"{v:.1f}",
                (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                ha="center", va="bottom", fontsize=8,
            )  # fmt: skip
    for j, lang in enumerate(langs):
        if lang in chart.chance:
            y = 100 * chart.chance[lang]
            ax.hlines(y, j - 0.45, j + 0.45, colors="red", linestyles="dashed")
    if chart.chance:
        ax.plot([], [], "r--", label="chance (majority label)")
    ax.set_xticks(range(len(langs)), langs)
    ax.set_ylim(0, 105)
    ax.set_ylabel(f"{chart.metric} (%)")
    ax.set_title(chart.title, fontsize=10)
    ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def draw_verdicts(model: str, counts: dict[str, Counter[str]], path: Path, note: str = "") -> Path:
    plt = _plt()
    langs = sorted(counts)
    fig, ax = plt.subplots(figsize=(max(7.0, 1.1 * len(langs) + 3) + 2.5, 4.5))
    width = 0.8 / len(VERDICTS)
    colors = plt.get_cmap("tab10")
    for i, verdict in enumerate(VERDICTS):
        xs = [j + i * width - 0.4 + width / 2 for j in range(len(langs))]
        ys = [counts[lang].get(verdict, 0) for lang in langs]
        ax.bar(xs, ys, width, label=verdict, color=colors(i))
    ax.set_xticks(range(len(langs)), langs)
    ax.set_ylabel("programs")
    ax.set_title(f"Verdicts per language: {model}{note}", fontsize=10)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))  # beside, never over bars
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def safe_name(text: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in text)[:120]
