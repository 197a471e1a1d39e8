"""xCodeEval's pass@k tables: which k a sample count reports, per-language and mean pass@k.

The arithmetic itself (pass@k from verdicts, macro-F1, ranks) is shared by every benchmark and
lives in `utils.metrics`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from code_eval_taskpack.utils.metrics import INFRA_ERROR, passk_from_verdicts

DEFAULT_KS = (1, 5, 10, 20)


def ks_for(n: int, ks: Sequence[int] = DEFAULT_KS) -> list[int]:
    """The k values reported for n samples per problem (k <= n)."""
    return [k for k in ks if k <= n]


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
