"""Per-benchmark facts the report needs, declared once as data.

Each `Headline` names one number a leaderboard shows: which lm-eval task or group reports it, under
which metric and filter, the protocol it belongs to, and its chance baseline for the normalised
average. Two protocols never share a column: the report adds the run-time parts of a protocol
(tests used, comparator, languages covered, grader) to the column key.
"""

from __future__ import annotations

from dataclasses import dataclass

from code_eval_taskpack.utils import languages
from lm_eval_tasks.clozetest_maxmin.data import LANGUAGES as CLOZE_LANGUAGES
from lm_eval_tasks.code_infilling.fim import task_variants as infilling_variants
from lm_eval_tasks.xcodeeval import kinds as xce_kinds

# the per-language task suffixes, from the language catalogue (utils/languages.toml)
XCODEEVAL_LANGUAGES: tuple[str, ...] = tuple(languages.xcodeeval_slugs())
# the infilling tasks' prompt formats (sg_infilling_<format>[_exec]), from its format table
INFILLING_FORMATS: tuple[str, ...] = infilling_variants()

# How a column's chance baseline is found (Open LLM Leaderboard normalisation: subtract it,
# rescale to 0-100).
CHANCE_ZERO = "zero"  # pass@k, exact match of free text: a random answer scores 0
CHANCE_MAJORITY = "majority_label"  # A/B: the majority-label rate measured from the answers


@dataclass(frozen=True)
class Headline:
    """One leaderboard number of one benchmark."""

    benchmark: str  # "xCodeEval", "ClozeTest-maxmin", "Multi-line infilling"
    kind: str  # "xcodeeval", "cloze", "infilling": how the protocol's run-time parts are read
    group: str  # the lm-eval task or group that reports it
    subtask_prefix: str  # per-language (or per-format) tasks: prefix + suffix
    suffixes: tuple[str, ...]
    metric: str
    filter: str
    protocol: str  # the fixed part of the protocol, stated in the report
    chance: str = CHANCE_ZERO
    weight_by_size: bool = False  # how the group averages its subtasks
    secondary: bool = False  # shown, but not in the normalised average

    @property
    def label(self) -> str:
        return f"{self.benchmark} {self.metric}"


def _xce(kind: xce_kinds.Kind, sampling: xce_kinds.Sampling) -> Headline:
    """The headline of one execution kind's group under one sampling protocol."""
    group = kind.task(sampling.name)
    metric = f"pass@{sampling.headline_k}"
    return Headline(
        f"xCodeEval {kind.stem}",
        "xcodeeval",
        group,
        group + "_",
        XCODEEVAL_LANGUAGES,
        metric,
        "judge",
        f"{kind.title}, {sampling.describe()}, {metric}",
    )


HEADLINES: tuple[Headline, ...] = (
    *(
        _xce(kind, sampling)
        for kind in xce_kinds.of_family(xce_kinds.EXECUTION)
        for sampling in (xce_kinds.GREEDY, xce_kinds.PAPER)
    ),
    *(
        Headline(
            "ClozeTest-maxmin",
            "cloze",
            group,
            prefix,
            CLOZE_LANGUAGES,
            metric,
            filt,
            protocol,
            CHANCE_MAJORITY,
            weight_by_size=micro,
        )
        for group, prefix, metric, filt, protocol, micro in (
            (
                "clozetest_maxmin",
                "clozetest_maxmin_",
                "exact_match",
                "first_capital",
                "A/B generation, OpenCompass parse (first capital), micro average",
                True,
            ),
            (
                "clozetest_maxmin",
                "clozetest_maxmin_",
                "exact_match",
                "letter",
                "A/B generation, letter parse, micro average",
                True,
            ),
            (
                "clozetest_maxmin_macro",
                "clozetest_maxmin_",
                "exact_match",
                "first_capital",
                "A/B generation, OpenCompass parse (first capital), macro average",
                False,
            ),
            (
                "clozetest_maxmin_macro",
                "clozetest_maxmin_",
                "exact_match",
                "letter",
                "A/B generation, letter parse, macro average",
                False,
            ),
            (
                "clozetest_maxmin_ll",
                "clozetest_maxmin_ll_",
                "acc",
                "none",
                "log-likelihood of max vs min, micro average",
                True,
            ),
        )
    ),
    *(
        Headline(
            "Multi-line infilling",
            "infilling",
            f"sg_infilling_{fmt}_exec",
            f"sg_infilling_{fmt}_exec",
            ("",),
            metric,
            filt,
            f"{fmt} prompt format, {what}",
            secondary=secondary,
        )
        for fmt in INFILLING_FORMATS
        for metric, filt, what, secondary in (
            ("pass@1", "graded", "repository tests", False),
            ("exact_match", "graded", "exact match of the middle", True),
            ("edit_similarity", "graded", "edit similarity of the middle", True),
        )
    ),
    *(
        Headline(
            "Multi-line infilling",
            "infilling",
            f"sg_infilling_{fmt}",
            f"sg_infilling_{fmt}",
            ("",),
            metric,
            "middle",
            f"{fmt} prompt format, {what}",
            secondary=True,
        )
        for fmt in INFILLING_FORMATS
        for metric, what in (
            ("exact_match", "exact match of the middle"),
            ("edit_similarity", "edit similarity of the middle"),
        )
    ),
)

# Per-task counts that must never be lost from a report (metric name -> what it means).
WARNING_METRICS = {
    "infra_errors": "programs the engine could not judge (INFRA_ERROR, not the model's fault)",
    "unscored_rows": "rows not scored (missing problem or tests, or unavailable runtime)",
    "truncated_tests": "hidden tests their publisher cut short (ending in `...`): no program "
    "passes their problems; kept as the paper did unless the run dropped them",
    "unavailable_runtime_rows": "rows whose runtime is unavailable on this machine",
    "grading_error": "rows the repository grader could not grade",
}


def per_language_headlines(task: str) -> list[tuple[Headline, str]]:
    """Every (headline family, language) a per-language task reports, one per metric and filter
    (the A/B cloze task reports both filters), for per-language charts."""
    found: dict[tuple[str, str], tuple[Headline, str]] = {}
    best = 0
    for h in HEADLINES:
        if h.kind == "infilling" or not task.startswith(h.subtask_prefix):
            continue
        if task[len(h.subtask_prefix) :] in h.suffixes:
            best = max(best, len(h.subtask_prefix))
    for h in HEADLINES:
        if h.kind == "infilling" or len(h.subtask_prefix) != best or not best:
            continue
        suffix = task[len(h.subtask_prefix) :]
        if task.startswith(h.subtask_prefix) and suffix in h.suffixes:
            found.setdefault((h.metric, h.filter), (h, suffix))
    return list(found.values())


def language_of(task: str) -> tuple[Headline, str] | None:
    """(headline family, language) of a per-language task name."""
    found = per_language_headlines(task)
    return found[0] if found else None


def display_language(name: str) -> str:
    """The catalogue's name of a language, whichever way a run spells it (task suffix `cpp`,
    cluster `C++`, fence tag `js`), so every table and figure names it one way."""
    cluster = languages.xcodeeval_slugs().get(name)
    lang = languages.for_tag(cluster or name)
    return lang.name if lang is not None else name
