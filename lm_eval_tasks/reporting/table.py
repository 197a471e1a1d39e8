"""The leaderboard table: one row per model, one column per (headline, protocol).

The protocol of a column is the headline's fixed protocol plus what the run decided: tests used and
comparator (xCodeEval), grader (infilling), the languages covered when a run has only some of a
group's tasks, and `--limit`. Two runs with different protocols land in different columns.

Normalised average, as the Open LLM Leaderboard computes it: each value minus its chance baseline,
rescaled so that chance is 0 and a perfect score 100 (below chance counts as 0), then averaged over
the primary columns a model has; NaN or missing values are n/a and left out, and the count of
columns averaged is shown next to the average.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from lm_eval_tasks.reporting.benchmarks import (
    CHANCE_MAJORITY,
    HEADLINES,
    WARNING_METRICS,
    Headline,
    language_of,
)
from lm_eval_tasks.reporting.results import Run, verdict_records

TRUE_WORDS = {"1", "true", "yes", "on"}


@dataclass(frozen=True)
class Column:
    headline: Headline
    protocol: str  # full protocol, stated in the report

    @property
    def key(self) -> str:
        return f"{self.headline.label} [{self.protocol}]"


@dataclass
class Cell:
    value: float  # 0-1, may be NaN (reported NaN: predict-only, too few judged samples)
    chance: float  # 0-1, NaN when it cannot be measured

    @property
    def normalised(self) -> float:
        """0-100; NaN when the value or its chance baseline is unknown."""
        if math.isnan(self.value) or math.isnan(self.chance) or self.chance >= 1:
            return math.nan
        return max(0.0, (self.value - self.chance) / (1 - self.chance)) * 100


@dataclass
class Table:
    columns: list[Column] = field(default_factory=list)
    rows: dict[str, dict[str, Cell]] = field(default_factory=dict)  # model -> column key -> cell
    warnings: list[str] = field(default_factory=list)

    def average(self, model: str) -> tuple[float, int, int]:
        """(normalised average, columns averaged, primary columns in the table)."""
        primary = [c for c in self.columns if not c.headline.secondary]
        vals = [
            self.rows[model][c.key].normalised
            for c in primary
            if c.key in self.rows[model] and not math.isnan(self.rows[model][c.key].normalised)
        ]
        avg = sum(vals) / len(vals) if vals else math.nan
        return avg, len(vals), len(primary)

    def to_dict(self) -> dict[str, Any]:
        def num(x: float) -> float | None:
            return None if math.isnan(x) else x

        return {
            "columns": [
                {
                    "key": c.key,
                    "benchmark": c.headline.benchmark,
                    "metric": c.headline.metric,
                    "filter": c.headline.filter,
                    "protocol": c.protocol,
                    "chance": c.headline.chance,
                    "secondary": c.headline.secondary,
                }
                for c in self.columns
            ],
            "rows": [
                {
                    "model": model,
                    "normalised_average": num(self.average(model)[0]),
                    "columns_averaged": self.average(model)[1],
                    "primary_columns": self.average(model)[2],
                    "values": {
                        k: {
                            "value": num(cell.value),
                            "chance": num(cell.chance),
                            "normalised": num(cell.normalised),
                        }
                        for k, cell in cells.items()
                    },
                }
                for model, cells in self.rows.items()
            ],
            "warnings": list(self.warnings),
        }


def _truthy(x: Any) -> bool:
    return str(x).strip().lower() in TRUE_WORDS


def _measure(run: Run, h: Headline) -> tuple[float, float, list[str]] | None:
    """(value, chance, tasks it came from) of a headline in one run, or None if absent."""
    chance_of = _chance_reader(run, h)
    value = run.value(h.group, h.metric, h.filter)
    if value is not None:
        subs = [h.subtask_prefix + s for s in h.suffixes if h.subtask_prefix + s in run.tasks()]
        return value, chance_of(h.group), subs or [h.group]
    siblings = [
        o.group
        for o in HEADLINES
        if o.subtask_prefix == h.subtask_prefix and (o.metric, o.filter) == (h.metric, h.filter)
    ]
    if any(run.value(g, h.metric, h.filter) is not None for g in siblings):
        return None  # a group of the same tasks was run: its own columns say it
    present: list[tuple[str, float | None]] = [
        (s, run.value(h.subtask_prefix + s, h.metric, h.filter))
        for s in h.suffixes
        if h.subtask_prefix + s in run.tasks()
    ]
    found = [(s, v) for s, v in present if v is not None]
    if not found:
        return None
    if (
        len(found) == 1
        and not h.weight_by_size
        and any(o.weight_by_size and o.group in siblings for o in HEADLINES)
    ):
        return None  # one language: micro and macro averages are the same column
    tasks = [h.subtask_prefix + s for s, _ in found]
    weights = [run.size(t) if h.weight_by_size else 1 for t in tasks]
    total = sum(weights) or 1
    vals = [v for _, v in found]
    value = sum(w * v for w, v in zip(weights, vals, strict=True)) / total
    chances = [chance_of(t) for t in tasks]
    chance = sum(w * c for w, c in zip(weights, chances, strict=True)) / total
    return value, chance, tasks


def _chance_reader(run: Run, h: Headline) -> Any:
    def chance(task: str) -> float:
        if h.chance != CHANCE_MAJORITY:
            return 0.0
        share = run.value(task, "gold_max_share", h.filter)
        if share is None or math.isnan(share):
            return math.nan
        return max(share, 1 - share)  # always answering the majority label scores this

    return chance


def _doc_fields(run: Run, task: str) -> dict[str, Any]:
    """The bookkeeping fields an xCodeEval document carries (`_tests`, `_exec`, row counters),
    from the first logged sample of `task`; empty without logged samples."""
    for sample in run.logged(task):
        doc = sample.get("doc")
        if isinstance(doc, dict):
            out = {k: v for k, v in doc.items() if k.startswith("_")}
            exec_settings = out.get("_exec")
            if isinstance(exec_settings, str):
                try:
                    out["_exec"] = json.loads(exec_settings)
                except ValueError:
                    out["_exec"] = {}
            return out
    return {}


TEST_KINDS = ("sample", "hidden", "hidden without truncated")


def tests_used(run: Run, task: str, filter_name: str = "judge") -> str | None:
    """The tests that judged an xCodeEval task ("sample", "hidden" or "hidden without
    truncated"), from its recorded protocol, else its reported counter (older results files),
    else its logged documents, else its metadata; None when the run does not say."""
    recorded = run.protocol(task).get("tests")
    if recorded in TEST_KINDS:
        return str(recorded)
    if run.has(task, "sample_tests_only", filter_name):
        return "sample" if run.value(task, "sample_tests_only", filter_name) else "hidden"
    kind = _doc_fields(run, task).get("_tests")
    if kind in TEST_KINDS:
        return str(kind)
    meta = run.metadata(task)
    if "xcodeeval_sample_tests" in meta:
        return "sample" if _truthy(meta["xcodeeval_sample_tests"]) else "hidden"
    return None


def counters(run: Run, task: str) -> dict[str, float]:
    """The per-task counters of WARNING_METRICS: as the run's protocol records them (older results
    files: reported beside pass@k, any filter), else
    rebuilt from the logged samples (INFRA_ERROR verdicts, the documents' row counters)."""
    row = run.tasks().get(task) or {}
    out: dict[str, float] = {}
    recorded = run.protocol(task)
    cut = recorded.get("truncated_tests")
    if isinstance(cut, dict) and isinstance(cut.get("tests"), int):
        out["truncated_tests"] = float(cut["tests"])
    for key, raw in [*recorded.items(), *row.items()]:
        metric, _, _filt = key.partition(",")
        if metric in WARNING_METRICS and isinstance(raw, (int, float)):
            out[metric] = max(out.get(metric, 0.0), float(raw))
    logged = run.logged(task) if not set(WARNING_METRICS) <= set(out) else []
    if logged and any(verdict_records(s) for s in logged):
        out.setdefault(
            "infra_errors",
            float(sum(r["verdict"] == "INFRA_ERROR" for s in logged for r in verdict_records(s))),
        )
        doc = _doc_fields(run, task)
        for metric in ("unscored_rows", "unavailable_runtime_rows"):
            if isinstance(doc.get(f"_{metric}"), (int, float)):
                out.setdefault(metric, float(doc[f"_{metric}"]))
    return out


def _protocol(run: Run, h: Headline, tasks: list[str]) -> str:
    parts = [h.protocol]
    meta = run.metadata(tasks[0]) if tasks else {}
    if h.kind == "xcodeeval":
        kinds = {tests_used(run, t, h.filter) for t in tasks}
        if "sample" in kinds:
            parts.append("SAMPLE tests (not comparable with the paper)")
        elif kinds == {"hidden"}:
            parts.append("hidden tests")
        elif kinds == {"hidden without truncated"}:
            parts.append("hidden tests WITHOUT the truncated ones (not the paper's protocol)")
        else:
            parts.append("tests not recorded")
        recorded = run.protocol(tasks[0]).get("comparator") if tasks else None
        exec_settings = _doc_fields(run, tasks[0]).get("_exec") if tasks else None
        if recorded:
            compat = recorded == "execeval"
        elif isinstance(exec_settings, dict) and "execeval_compat" in exec_settings:
            compat = bool(exec_settings["execeval_compat"])
        else:
            compat = _truthy(meta.get("xcodeeval_execeval_compat", False))
        parts.append("ExecEval comparator" if compat else "default comparator")
    if h.kind == "infilling" and h.group.endswith("_exec"):
        grader = meta.get("sg_infilling_grader") or meta.get("grader") or "swebench"
        parts.append(f"grader {grader}")
    if h.suffixes != ("",):
        covered = [t[len(h.subtask_prefix) :] for t in tasks]
        if run.value(h.group, h.metric, h.filter) is None and len(covered) < len(h.suffixes):
            parts.append(
                f"{len(covered)} of {len(h.suffixes)} languages: {', '.join(sorted(covered))}"
            )
    if run.limit is not None:
        parts.append(f"--limit {run.limit:g}")
    return "; ".join(parts)


def run_warnings(run: Run) -> list[str]:
    """What must never be lost from a report about one run."""
    where = f"{run.label} ({run.results_file.parent.name})"
    out: list[str] = []
    if run.limit is not None:
        out.append(f"{where}: --limit {run.limit:g} run: a partial evaluation, not a score")
    for task, row in sorted(run.tasks().items()):
        for metric, raw in sorted(counters(run, task).items()):
            if raw > 0:
                shown = f"{raw:g}" if metric != "grading_error" else f"{raw:.2%} of rows"
                out.append(f"{where}: {task}: {metric} = {shown}: {WARNING_METRICS[metric]}")
        predict_only = _truthy(run.metadata(task).get("clozetest_predict_only", False))
        nan_metrics = sorted(
            k
            for k, v in row.items()
            if isinstance(v, float) and math.isnan(v) and "_stderr" not in k
        )
        if predict_only and task.startswith("clozetest"):
            out.append(f"{where}: {task}: predict-only run (no answers): accuracy is NaN (n/a)")
        elif nan_metrics:
            out.append(f"{where}: {task}: NaN for {', '.join(nan_metrics)}")
    sample_tasks = [
        t
        for t in run.tasks()
        if t.startswith("xcodeeval_") and language_of(t) and tests_used(run, t) == "sample"
    ]
    if sample_tasks:
        out.append(
            f"{where}: SAMPLE-TEST scoring in {len(sample_tasks)} xCodeEval tasks: public sample "
            "tests only, not comparable with hidden-test numbers"
        )
    return out


def build(runs: list[Run]) -> Table:
    """The table of `runs`, one row per run label (`results.label_runs`); a later run with the
    same label and column replaces an earlier one (and says so in the warnings)."""
    table = Table()
    seen: dict[str, Column] = {}
    origin: dict[tuple[str, str], str] = {}
    for run in runs:
        row = table.rows.setdefault(run.label, {})
        for h in HEADLINES:
            got = _measure(run, h)
            if got is None:
                continue
            value, chance, tasks = got
            col = Column(h, _protocol(run, h, tasks))
            if col.key not in seen:
                seen[col.key] = col
                table.columns.append(col)
            if col.key in row:
                table.warnings.append(
                    f"{run.label}: {col.key} appears in several runs; the latest "
                    f"({run.results_file}) replaces {origin[(run.label, col.key)]}"
                )
            row[col.key] = Cell(value, chance)
            origin[(run.label, col.key)] = str(run.results_file)
        table.warnings.extend(run_warnings(run))
    rows_of: dict[str, set[str]] = {}
    for run in runs:
        rows_of.setdefault(run.model, set()).add(run.label)
    for model, labels in rows_of.items():
        if len(labels) > 1:
            table.warnings.append(
                f"{model}: runs with different settings kept in {len(labels)} separate rows: "
                + "; ".join(sorted(labels))
            )
    order = {h: i for i, h in enumerate(HEADLINES)}
    table.columns.sort(key=lambda c: (order[c.headline], c.protocol))
    counts = Counter(c.headline for c in table.columns)
    for h, n in counts.items():
        if n > 1:
            table.warnings.append(
                f"{h.label} ({h.group}) appears under {n} protocols: kept in separate columns"
            )
    return table
