"""Metrics any benchmark of the pack reports: pass@k, classification, retrieval, text similarity.

- pass@k: the unbiased estimator (Chen et al., 2021), the only pass@k in the project, and
  `passk_from_verdicts`, which turns one problem's engine verdicts into pass@k. Engine failures
  (INFRA_ERROR) are not the model's fault: they are left out of the sample count, and a problem
  left with fewer than k judged samples gets NaN, so a broken toolchain never looks like a weak
  model.
- classification: per-class F1, (multi-label) macro-F1 and accuracy.
- retrieval: rank of the best positive candidate (its inverse is the reciprocal rank of MRR).
- text similarity for code completion: whitespace-normalised exact match and edit similarity,
  as peers define them for infilling (CrossCodeEval and similar):

  - exact match compares the whitespace-separated token sequences, so indentation width,
    trailing spaces and blank lines do not matter, while any change of a token does;
  - edit similarity is ``1 - levenshtein(a, b) / max(len(a), len(b))`` on the two strings with
    surrounding whitespace stripped (1.0 when both are empty).

  The Levenshtein distance uses the bit-parallel algorithm of Myers (1999) in Hyyro's (2001)
  formulation with Python integers as bit vectors: one pass over the longer string with a
  handful of big-integer operations per character, so multi-line completions of a few thousand
  characters cost microseconds instead of the seconds a quadratic table takes in pure Python.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

PASSED = "PASSED"
INFRA_ERROR = "INFRA_ERROR"

# --------------------------------------------------------------------------- pass@k


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of k samples drawn from n (c of them correct) passes.

    Computed as 1 - prod_{i=n-c+1..n} (1 - k/i), which is exact and stable for large n.
    Requires k <= n: reporting pass@k with fewer than k samples would silently overstate it.
    """
    if not 0 <= c <= n:
        raise ValueError(f"pass_at_k: need 0 <= c <= n, got n={n}, c={c}")
    if not 1 <= k <= n:
        raise ValueError(f"pass_at_k: need 1 <= k <= n, got n={n}, k={k}")
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def passk_from_verdicts(verdicts: Sequence[str], ks: Sequence[int]) -> dict[str, float]:
    """pass@k of one problem from its samples' verdicts; INFRA_ERROR samples are not counted."""
    judged = [v for v in verdicts if v != INFRA_ERROR]
    correct = sum(v == PASSED for v in judged)
    return {
        f"pass@{k}": pass_at_k(len(judged), correct, k) if len(judged) >= k else math.nan
        for k in ks
    }


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


# --------------------------------------------------------------------------- text similarity


def exact_match(prediction: str, reference: str) -> bool:
    """True when both strings have the same whitespace-separated tokens."""
    return prediction.split() == reference.split()


def levenshtein(a: str, b: str) -> int:
    """Number of single-character insertions, deletions and substitutions turning `a` into `b`."""
    if len(a) < len(b):
        a, b = b, a
    m = len(b)
    if m == 0:
        return len(a)
    # Bit i of peq[c] is set when b[i] == c.
    peq: dict[str, int] = {}
    for i, ch in enumerate(b):
        peq[ch] = peq.get(ch, 0) | (1 << i)
    mask = (1 << m) - 1
    top = 1 << (m - 1)
    pv, mv, score = mask, 0, m
    for ch in a:
        eq = peq.get(ch, 0)
        xv = eq | mv
        xh = ((((eq & pv) + pv) & mask) ^ pv) | eq
        ph = (mv | ~(xh | pv)) & mask
        mh = pv & xh
        if ph & top:
            score += 1
        elif mh & top:
            score -= 1
        ph = ((ph << 1) | 1) & mask
        mh = (mh << 1) & mask
        pv = (mh | ~(xv | ph)) & mask
        mv = ph & xv
    return score


def edit_similarity(prediction: str, reference: str) -> float:
    """1 - normalised Levenshtein distance of the stripped strings, in [0, 1]."""
    a, b = prediction.strip(), reference.strip()
    longest = max(len(a), len(b))
    if longest == 0:
        return 1.0
    return 1.0 - levenshtein(a, b) / longest
