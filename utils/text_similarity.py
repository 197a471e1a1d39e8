"""Cheap string metrics for code completion: whitespace-normalised exact match, edit similarity.

Both follow the definitions peers use for infilling (CrossCodeEval and similar):

- exact match compares the whitespace-separated token sequences, so indentation width, trailing
  spaces and blank lines do not matter, while any change of a token does;
- edit similarity is ``1 - levenshtein(a, b) / max(len(a), len(b))`` on the two strings with
  surrounding whitespace stripped (1.0 when both are empty).

The Levenshtein distance uses the bit-parallel algorithm of Myers (1999) in Hyyro's (2001)
formulation with Python integers as bit vectors: one pass over the longer string with a handful
of big-integer operations per character, so multi-line completions of a few thousand characters
cost microseconds instead of the seconds a quadratic table takes in pure Python.
"""

from __future__ import annotations


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
