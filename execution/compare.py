"""Does a program's output match one of a test's expected outputs?

Two modes:

* ``default`` accepts what a Codeforces-style checker accepts: ``\\r`` dropped, the output read as
  a sequence of whitespace-separated tokens (so trailing spaces, blank lines and line breaks do
  not matter), integer tokens compared exactly at any length, other numbers accepted within 1e-6
  absolute or relative error, ``yes``/``no`` in any case. ``nan``/``inf`` are plain words here: they
  never equal a number.
* ``execeval`` reproduces ExecEval's comparison bit for bit, flaws included (see
  :mod:`execution.execeval_compare`), so scores can be compared with published numbers.

In both modes a test passes if the output matches ANY of the expected outputs.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from decimal import MAX_EMAX, MIN_EMIN, Context, Decimal, InvalidOperation

from execution.execeval_compare import execeval_outputs_equal

MODES: tuple[str, ...] = ("default", "execeval")

ABS_TOL = Decimal("1e-6")
_ONE = Decimal(1)

# ASCII whitespace only, like testlib; a non-breaking space is part of a token.
_WS = re.compile(r"[ \t\n\r\v\f]+")
# Characters str.split() treats as whitespace in ASCII text besides _WS's.
_STR_SPLIT_EXTRA = re.compile(r"[\x1c-\x1f]")
_INT = re.compile(r"[+-]?[0-9]+", re.ASCII)
_NUM = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)
_YES_NO = frozenset({"yes", "no"})
# Exact subtraction needs at most this many digits; beyond it (absurd exponent gaps) a
# 100-digit rounding is used, which can only matter within 1e-100 of the tolerance boundary.
_MAX_EXACT_DIGITS = 10_000


def outputs_match(actual: str | bytes, expected: Sequence[str], mode: str = "default") -> bool:
    """True if `actual` matches any entry of `expected` under `mode` ("default" or "execeval").

    Raw stdout bytes are decoded as each mode requires: invalid UTF-8 becomes U+FFFD by default
    (so it can never match by accident) and is dropped in `execeval` mode, as ExecEval does.
    """
    if isinstance(expected, str):
        expected = [expected]
    if isinstance(actual, bytes):
        actual = actual.decode("utf-8", errors="ignore" if mode == "execeval" else "replace")
    if mode not in MODES:
        raise ValueError(f"unknown comparator mode {mode!r}; accepted: {', '.join(MODES)}")
    if actual in expected:  # identical text matches in every mode
        return True
    if mode == "default":
        got = tokenize(actual)
        return any(tokens_match(got, tokenize(e)) for e in expected)
    if mode == "execeval":
        return any(execeval_outputs_equal(e, actual) for e in expected)
    raise ValueError(f"unknown comparator mode {mode!r}; accepted: {', '.join(MODES)}")


def tokenize(text: str) -> list[str]:
    """Whitespace-separated tokens of `text` (``\\r`` counts as whitespace)."""
    if text.isascii() and not _STR_SPLIT_EXTRA.search(text):
        return text.split()  # same result for such text, at C speed
    return [t for t in _WS.split(text) if t]


def tokens_match(actual: Sequence[str], expected: Sequence[str]) -> bool:
    if actual == expected:  # the common case, compared at C speed
        return True
    return len(actual) == len(expected) and all(
        token_equal(a, e) for a, e in zip(actual, expected, strict=True)
    )


def token_equal(a: str, b: str) -> bool:
    """Token rule of the default mode; symmetric in its arguments."""
    if a == b:
        return True
    la = a.lower()
    if la in _YES_NO:
        return la == b.lower()
    if _INT.fullmatch(a) and _INT.fullmatch(b):
        return _int_key(a) == _int_key(b)
    if _NUM.fullmatch(a) and _NUM.fullmatch(b):
        return numbers_close(a, b)
    return False


def _int_key(tok: str) -> tuple[bool, str]:
    """(negative, digits) of an integer token without converting it (any length, no float)."""
    negative = tok.startswith("-")
    digits = tok.lstrip("+-").lstrip("0") or "0"
    return (negative and digits != "0", digits)


def numbers_close(a: str, b: str) -> bool:
    """|a - b| <= 1e-6 * max(1, |a|, |b|), decided exactly (no binary rounding at the boundary).

    Doubles decide every case farther than 1e-9 (relative) from the boundary: their rounding
    errors are below 4e-10 of the tolerance. The rest is computed exactly in decimal.
    """
    fa, fb = float(a), float(b)
    if math.isfinite(fa) and math.isfinite(fb):
        approx, tol = abs(fa - fb), 1e-6 * max(1.0, abs(fa), abs(fb))
        if approx < tol * (1 - 1e-9):
            return True
        if approx > tol * (1 + 1e-9):
            return False
    try:
        x, y = Decimal(a), Decimal(b)
    except (InvalidOperation, ValueError):
        return False
    if not (x.is_finite() and y.is_finite()):
        return False
    digits = _digits_needed(x, y)
    ctx = Context(prec=digits or 100, Emax=MAX_EMAX, Emin=MIN_EMIN)
    diff = ctx.subtract(x, y).copy_abs()
    scale = max(_ONE, x.copy_abs(), y.copy_abs())
    return diff <= ctx.multiply(scale, ABS_TOL)


def _digits_needed(x: Decimal, y: Decimal) -> int:
    """Digits that make x - y and max(..) * 1e-6 exact (0 if not representable reasonably)."""
    tops = [d.adjusted() for d in (x, y) if not d.is_zero()] + [0]
    low = min(int(x.as_tuple().exponent), int(y.as_tuple().exponent), 0)
    need = max(tops) - low + 4
    return need if need <= _MAX_EXACT_DIGITS else 0
