"""Answer parsing and per-document scores for ClozeTest-maxmin.

Two parses of a generated reply are reported side by side:
- `first_capital`: OpenCompass's rule, the first upper-case character of the reply ("" if none).
  "The answer is B." becomes "T" and is wrong; this is what OpenCompass's numbers measure.
- `letter`: the first standalone capital A or B, or the word max/min (any case), mapped to A/B.
  "The answer is B." becomes "B".
Without gold answers (predict-only mode) every score is NaN, so no aggregate can pass for a 0.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

_LETTER = re.compile(r"\b(?:(A|B)\b|(max|min)\b)", re.IGNORECASE)
_WORD_TO_LETTER = {"max": "A", "min": "B"}
NAN = float("nan")


def first_capital(text: str) -> str:
    for char in text:
        if char.isupper():
            return char
    return ""


def letter(text: str) -> str:
    for match in _LETTER.finditer(text):
        standalone, word = match.group(1), match.group(2)
        if standalone is not None and standalone in "AB":  # a lower-case "a" is an article
            return standalone
        if word is not None:
            return _WORD_TO_LETTER[word.lower()]
    return ""


def _apply(parse: Any, resps: Iterable[Sequence[str]]) -> list[list[str]]:
    return [[parse(r) for r in group] for group in resps]


def first_capital_filter(
    resps: Iterable[Sequence[str]], docs: Sequence[dict[str, Any]]
) -> list[list[str]]:
    """lm-eval `custom` filter: OpenCompass's first-capital parse of every response."""
    return _apply(first_capital, resps)


def letter_filter(
    resps: Iterable[Sequence[str]], docs: Sequence[dict[str, Any]]
) -> list[list[str]]:
    """lm-eval `custom` filter: the robust A/B parse of every response."""
    return _apply(letter, resps)


def _gold_max_share(doc: dict[str, Any]) -> float:
    return float(doc["label"] == "max") if doc["label"] else NAN


def generation_scores(doc: dict[str, Any], results: Sequence[Any]) -> dict[str, float]:
    """exact_match of the filtered reply against the gold letter; NaN without gold."""
    gold = doc["gold"]
    prediction = results[0] if results else ""
    if isinstance(prediction, list | tuple):  # a filter chain without take_first
        prediction = prediction[0] if prediction else ""
    score = float(prediction == gold) if gold else NAN
    return {"exact_match": score, "gold_max_share": _gold_max_share(doc)}


# ---------------------------------------------------------------------------------------------
# Log-likelihood variant: the shared context is CodeXGLUE's input up to the mask (docstring, then
# code); each continuation is the candidate word plus the rest of the function, so comparing
# P(continuation | context) compares the likelihood of the two whole texts.


def ll_context(doc: dict[str, Any]) -> str:
    return " ".join(part for part in (doc["nl_text"], doc["code_prefix"]) if part)


def ll_choices(doc: dict[str, Any]) -> list[str]:
    lead = " " if ll_context(doc) else ""
    tail = f" {doc['code_suffix']}" if doc["code_suffix"] else ""
    return [f"{lead}{word}{tail}" for word in ("max", "min")]


def ll_scores(doc: dict[str, Any], results: Sequence[Any]) -> dict[str, float]:
    """acc: 1 if the gold word's whole-function log-likelihood is the larger; NaN without gold."""
    lls = [float(r[0]) if isinstance(r, list | tuple) else float(r) for r in results]
    if len(lls) != 2 or any(math.isnan(x) for x in lls):
        raise ValueError(f"clozetest_maxmin_ll: expected two log-likelihoods, got {results!r}")
    predicted = "max" if lls[0] >= lls[1] else "min"
    score = float(predicted == doc["label"]) if doc["label"] else NAN
    return {"acc": score, "gold_max_share": _gold_max_share(doc)}
