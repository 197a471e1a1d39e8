"""xCodeEval metric arithmetic, shared by the lm-eval tasks and the scoring CLI.

Execution verdicts become pass@k through `utils.passk` (the project's only estimator). Engine
failures (INFRA_ERROR) are not the model's fault: they are left out of a problem's sample count
and counted separately, and a problem left with fewer than k judged samples gets NaN for pass@k
so that a broken toolchain can never look like a weak model.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from utils.passk import pass_at_k

PASSED = "PASSED"
INFRA_ERROR = "INFRA_ERROR"
DEFAULT_KS = (1, 5, 10, 20)


def ks_for(n: int, ks: Sequence[int] = DEFAULT_KS) -> list[int]:
    """The k values reported for n samples per problem (k <= n)."""
    return [k for k in ks if k <= n]


def passk_from_verdicts(verdicts: Sequence[str], ks: Sequence[int]) -> dict[str, float]:
    """pass@k of one problem from its samples' verdicts; INFRA_ERROR samples are not counted."""
    judged = [v for v in verdicts if v != INFRA_ERROR]
    correct = sum(v == PASSED for v in judged)
    return {
        f"pass@{k}": pass_at_k(len(judged), correct, k) if len(judged) >= k else math.nan
        for k in ks
    }


def language_table(
    problems: Mapping[str, Mapping[str, Sequence[str]]], ks: Sequence[int]
) -> dict[str, dict[str, Any]]:
    """Per-language pass@k (mean over problems) plus the unweighted mean over languages.

    `problems` maps language -> src_uid -> verdicts of that problem's samples. A k is reported
    for a language only if every problem there has at least k judged samples.
    """
    table: dict[str, dict[str, Any]] = {}
    for lang in sorted(problems):
        per_problem = [passk_from_verdicts(v, ks) for v in problems[lang].values()]
        verdicts = [x for v in problems[lang].values() for x in v]
        row: dict[str, Any] = {
            "problems": len(per_problem),
            "samples": len(verdicts),
            "infra_errors": sum(v == INFRA_ERROR for v in verdicts),
        }
        for k in ks:
            vals = [p[f"pass@{k}"] for p in per_problem]
            row[f"pass@{k}"] = (
                math.nan if not vals or any(math.isnan(x) for x in vals) else sum(vals) / len(vals)
            )
        table[lang] = row
    if table:
        mean: dict[str, Any] = {
            "problems": sum(r["problems"] for r in table.values()),
            "samples": sum(r["samples"] for r in table.values()),
            "infra_errors": sum(r["infra_errors"] for r in table.values()),
        }
        for k in ks:
            vals = [r[f"pass@{k}"] for r in table.values()]
            mean[f"pass@{k}"] = sum(vals) / len(vals)  # NaN propagates, on purpose
        table["mean"] = mean
    return table


# --------------------------------------------------------------------------- classification


def f1(tp: int, fp: int, fn: int) -> float:
    """F1 of one class; 0 when the class has support or predictions but no true positive."""
    denom = 2 * tp + fp + fn
    return 0.0 if denom == 0 else 2 * tp / denom


def multilabel_macro_f1(
    pairs: Iterable[tuple[Iterable[str], Iterable[str]]], vocabulary: Iterable[str]
) -> float:
    """Macro-F1 over `vocabulary` of (predicted tags, gold tags) pairs.

    Labels that are neither gold nor predicted anywhere in the evaluated rows carry no
    information (F1 is 0/0) and are left out of the average; predictions outside the vocabulary
    cannot match any gold tag and are ignored.
    """
    vocab = list(dict.fromkeys(vocabulary))
    counts = {t: [0, 0, 0] for t in vocab}  # tp, fp, fn
    for pred, gold in pairs:
        p, g = set(pred), set(gold)
        for t in vocab:
            if t in p and t in g:
                counts[t][0] += 1
            elif t in p:
                counts[t][1] += 1
            elif t in g:
                counts[t][2] += 1
    scores = [f1(*c) for c in counts.values() if any(c)]
    return sum(scores) / len(scores) if scores else math.nan


def binary_scores(
    pairs: Iterable[tuple[str | None, str]], classes: Sequence[str]
) -> dict[str, float]:
    """Accuracy and macro-F1 over `classes` of (prediction, gold); None = unparsable answer."""
    items = list(pairs)
    if not items:
        return {"accuracy": math.nan, "macro_f1": math.nan}
    accuracy = sum(p == g for p, g in items) / len(items)
    # one label per row: the single-class case of the multi-label macro-F1
    macro = multilabel_macro_f1((((p,) if p is not None else (), (g,)) for p, g in items), classes)
    return {"accuracy": accuracy, "macro_f1": macro}


# --------------------------------------------------------------------------- retrieval


def rank_of_positive(scores: Sequence[float], n_positive: int) -> int:
    """1-based rank of the best positive among candidates; the first `n_positive` are positive.

    Ties are broken against the positive, so a model scoring everything equal is not rewarded.
    """
    if not 1 <= n_positive <= len(scores):
        raise ValueError(f"need 1 <= n_positive <= {len(scores)}, got {n_positive}")
    best = max(scores[:n_positive])
    return 1 + sum(s >= best for s in scores[n_positive:])
