"""Execution pass@k of candidate programs, in any of the engine's languages.

The arithmetic behind the `code_exec` evaluate metric, importable on its own: every candidate of
every problem is judged in ONE engine batch (sandboxed, parallel, cached), then pass@k per problem
with the unbiased estimator, averaged over problems. Engine failures (INFRA_ERROR) never count as
the model's failures: they are left out of a problem's samples and counted, and a problem left
with fewer than k judged samples makes pass@k NaN.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from typing import Any

from ..judging import CaseBuilder, Program, cache_dir, judge_programs
from ..metrics import INFRA_ERROR, passk_from_verdicts

OPT_IN_VARIABLE = "HF_ALLOW_CODE_EVAL"
OPT_IN_MESSAGE = f"""
################################################################################
                                  !!!WARNING!!!
################################################################################
This metric runs untrusted, model-generated programs. They run inside this pack's
sandbox (namespaces, seccomp, cgroup limits, an unprivileged user), which reduces
but cannot remove the risk of running hostile code. Read execution/README.md.

To run it, opt in as for the Hub's `code_eval` metric:
    import os; os.environ["{OPT_IN_VARIABLE}"] = "1"
or `export {OPT_IN_VARIABLE}="1"` in the shell.
################################################################################
"""


class MetricInputError(ValueError):
    """Bad predictions or references: the message names the row and the field."""


def require_opt_in() -> None:
    if os.environ.get(OPT_IN_VARIABLE) != "1":
        raise ValueError(OPT_IN_MESSAGE)


def _tests(ref: Mapping[str, Any], row: int) -> list[dict[str, Any]]:
    """Tests as [{"input", "output": [..]}]; also accepts the column layout `datasets` produces
    for a sequence of dicts ({"input": [...], "output": [[...], ...]})."""
    raw = ref.get("tests")
    if isinstance(raw, Mapping):
        inputs, outputs = raw.get("input"), raw.get("output")
        if (
            not isinstance(inputs, list)
            or not isinstance(outputs, list)
            or len(inputs) != len(outputs)
        ):
            raise MetricInputError(f"references[{row}].tests: input and output lists differ")
        raw = [{"input": i, "output": o} for i, o in zip(inputs, outputs, strict=True)]
    if not isinstance(raw, list) or not raw:
        raise MetricInputError(f"references[{row}].tests: needs a non-empty list of tests")
    tests = []
    for j, t in enumerate(raw):
        if not isinstance(t, Mapping) or not isinstance(t.get("input"), str):
            raise MetricInputError(f"references[{row}].tests[{j}]: needs a string 'input'")
        out = t.get("output")
        out = [out] if isinstance(out, str) else out
        if not isinstance(out, list) or not out or not all(isinstance(o, str) for o in out):
            raise MetricInputError(
                f"references[{row}].tests[{j}].output: a string or a non-empty list of strings"
            )
        tests.append({"input": t["input"], "output": list(out)})
    return tests


DEFAULT_TIME_LIMIT_S = 2.0
DEFAULT_MEMORY_LIMIT_MB = 256


def with_default_limits(references: Any) -> Any:
    """References with the optional limits filled in (`datasets` needs every field present)."""
    if not isinstance(references, (list, tuple)):
        return references
    return [
        {"time_limit_s": DEFAULT_TIME_LIMIT_S, "memory_limit_mb": DEFAULT_MEMORY_LIMIT_MB, **r}
        if isinstance(r, Mapping)
        else r
        for r in references
    ]


def _number(ref: Mapping[str, Any], key: str, default: float, row: int) -> float:
    value = ref.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise MetricInputError(f"references[{row}].{key}: a positive number, got {value!r}")
    if value <= 0:
        raise MetricInputError(f"references[{row}].{key}: a positive number, got {value!r}")
    return float(value)


def compute(
    predictions: Sequence[Sequence[str]],
    references: Sequence[Mapping[str, Any]],
    k: Sequence[int] = (1, 10, 100),
    num_workers: int | None = None,
    comparator: str = "default",
    cache: str | None = "default",
) -> dict[str, Any]:
    """pass@k (k up to the fewest candidates of a problem), per-candidate verdict records, and
    the INFRA_ERROR count. `references[i]` = {"language", "tests", "time_limit_s"?,
    "memory_limit_mb"?}; `predictions[i]` = the candidate programs of problem i."""
    require_opt_in()
    if len(predictions) != len(references):
        raise MetricInputError(
            f"{len(predictions)} predictions for {len(references)} references: one list of "
            "candidates per reference"
        )
    if comparator not in ("default", "execeval"):
        raise MetricInputError(f"comparator: 'default' or 'execeval', got {comparator!r}")
    ks = sorted({int(x) for x in k})
    if not ks or ks[0] < 1:
        raise MetricInputError(f"k: positive integers, got {list(k)!r}")
    from code_eval_taskpack.execution.languages.registry import resolve

    cases = CaseBuilder()
    programs: list[Program] = []
    sizes: list[int] = []
    for i, (cands, ref) in enumerate(zip(predictions, references, strict=True)):
        if isinstance(cands, str) or not all(isinstance(c, str) for c in cands):
            raise MetricInputError(f"predictions[{i}]: a list of candidate programs (strings)")
        if not isinstance(ref, Mapping):
            raise MetricInputError(f"references[{i}]: a mapping with language and tests")
        language = ref.get("language")
        if not isinstance(language, str) or not language:
            raise MetricInputError(f"references[{i}].language: a language name is required")
        try:
            resolve(language)
        except ValueError as exc:
            raise MetricInputError(f"references[{i}].language: {exc}") from exc
        tests = _tests(ref, i)
        time_s = _number(ref, "time_limit_s", DEFAULT_TIME_LIMIT_S, i)
        memory = int(_number(ref, "memory_limit_mb", DEFAULT_MEMORY_LIMIT_MB, i))
        sizes.append(len(cands))
        programs.extend(
            Program(
                language=language,
                source_code=code,
                tests=cases(tests),
                time_limit_s=time_s,
                memory_limit_mb=memory,
                comparator=comparator,
                id=f"{i}#{j}",
            )
            for j, code in enumerate(cands)
        )
    records = judge_programs(
        programs,
        workers=num_workers,
        cache=cache_dir(cache),
        comparator=comparator,
        label="code_exec",
    )
    per_problem: list[list[dict[str, Any]]] = []
    it = iter(records)
    for n in sizes:
        per_problem.append([next(it) for _ in range(n)])
    n_min = min(sizes) if sizes else 0
    reported = [x for x in ks if x <= n_min]
    out: dict[str, Any] = {}
    scores = [passk_from_verdicts([r["verdict"] for r in recs], reported) for recs in per_problem]
    for x in reported:
        vals = [s[f"pass@{x}"] for s in scores]
        out[f"pass@{x}"] = math.nan if any(math.isnan(v) for v in vals) else sum(vals) / len(vals)
    out["verdicts"] = [[r["verdict"] for r in recs] for recs in per_problem]
    out["details"] = per_problem
    out["infra_errors"] = sum(r["verdict"] == INFRA_ERROR for r in records)
    return out
