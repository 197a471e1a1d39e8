"""Does a program's output match one of a test's expected outputs?

Two modes:

* ``default`` accepts what a Codeforces-style checker accepts: ``\\r`` dropped, the output read as
  a sequence of whitespace-separated tokens (so trailing spaces, blank lines and line breaks do
  not matter), ``yes``/``no`` in any case. Numbers: when the EXPECTED token is an integer, the
  actual token must have exactly its value, at any length (``2.0`` or ``2e0`` for ``2`` passes,
  ``123456700.0`` for ``123456789`` fails: a relative tolerance would accept wrong counts, sums
  and remainders); when the expected token is a real, the actual number is accepted within 1e-6
  absolute or relative error. Values are compared exactly in decimal, never through floats.
  ``nan``/``inf`` are plain words here: they never equal a number. Because the expected side
  decides the rule, the comparison is asymmetric (``1000001`` is accepted for ``1000000.0`` but
  ``1000000.0`` is not accepted for ``1000001``).
* ``execeval`` reproduces ExecEval's comparison bit for bit, flaws included (see
  :mod:`execution.execeval_compare`), so scores can be compared with published numbers.

In both modes a test passes if the output matches ANY of the expected outputs. Outputs are
compared as streams in bounded memory (see :mod:`execution.textstream`): a token longer than
``textstream.TOKEN_CAP`` (1 MiB) characters only equals the very same text.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from decimal import MAX_EMAX, MIN_EMIN, Context, Decimal, InvalidOperation
from typing import BinaryIO

from ..execeval.compare import DECIMAL_LITERAL, execeval_streams_equal
from ..textstream import (
    ChunkSource,
    Token,
    batches_equal,
    file_chunks,
    str_chunks,
    token_batches,
)

MODES: tuple[str, ...] = ("default", "execeval")

ABS_TOL = Decimal("1e-6")
_ONE = Decimal(1)

# ASCII whitespace only, like testlib; a non-breaking space is part of a token.
_WS = re.compile(r"[ \t\n\r\v\f]+")
# Characters str.split() treats as whitespace in ASCII text besides _WS's.
_STR_SPLIT_EXTRA = re.compile(r"[\x1c-\x1f]")
_INT = re.compile(r"[+-]?[0-9]+", re.ASCII)
_NUM = DECIMAL_LITERAL  # the plain decimal number syntax both modes recognise
_NUM_PARTS = re.compile(
    r"(?P<sign>[+-]?)(?P<whole>[0-9]*)\.?(?P<frac>[0-9]*)(?:[eE](?P<exp>[+-]?[0-9]+))?", re.ASCII
)
_YES_NO = frozenset({"yes", "no"})
# Exact subtraction needs at most this many digits; beyond it (absurd exponent gaps) a
# 100-digit rounding is used, which can only matter within 1e-100 of the tolerance boundary.
_MAX_EXACT_DIGITS = 10_000


def outputs_match(
    actual: str | bytes | BinaryIO, expected: Sequence[str], mode: str = "default"
) -> bool:
    """True if `actual` matches any entry of `expected` under `mode` ("default" or "execeval").

    `actual` is text, raw stdout bytes or a binary file holding them (a capture file: read in
    chunks, never whole, and only as far as the first difference). Raw bytes are decoded as each
    mode requires: invalid UTF-8 becomes U+FFFD by default (so it can never match by accident)
    and is dropped in `execeval` mode, as ExecEval does.
    """
    if isinstance(expected, str):
        expected = [expected]
    if mode not in MODES:
        raise ValueError(f"unknown comparator mode {mode!r}; accepted: {', '.join(MODES)}")
    errors = "ignore" if mode == "execeval" else "replace"
    if isinstance(actual, bytes):
        if len(actual) <= _SMALL:
            actual = actual.decode("utf-8", errors=errors)
        else:
            actual = io.BytesIO(actual)
    source: ChunkSource
    if isinstance(actual, str):
        if actual in expected:  # identical text matches in every mode
            return True
        source = str_chunks(actual)
    else:
        source = file_chunks(actual, errors)
    if mode == "execeval":
        return any(execeval_streams_equal(str_chunks(e), source) for e in expected)
    return any(
        batches_equal(
            default_token_batches(source()), default_token_batches(str_chunks(e)()), token_equal
        )
        for e in expected
    )


#: outputs up to this size are decoded whole (cheap); larger ones are streamed
_SMALL = 64 * 1024
_SPACE = frozenset(" \t\n\r\v\f")


def _split_default(text: str) -> list[str]:
    return tokenize(text)


def default_token_batches(chunks: Iterable[str]) -> Iterator[list[Token]]:
    """Tokens of the default mode, batch by batch (see `tokenize`)."""
    return token_batches(chunks, _split_default, _SPACE.__contains__)


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
    """Token rule of the default mode for actual token `a` and expected token `b`.

    An integer `b` demands exactly its value; a real `b` allows the 1e-6 tolerance.
    """
    if a == b:
        return True
    la = a.lower()
    if la in _YES_NO:
        return la == b.lower()
    if _INT.fullmatch(b):
        if _INT.fullmatch(a):
            return _int_key(a) == _int_key(b)
        return _NUM.fullmatch(a) is not None and _same_value(a, b)
    if _NUM.fullmatch(a) and _NUM.fullmatch(b):
        return numbers_close(a, b)
    return False


def _same_value(a: str, b: str) -> bool:
    """Exact equality of two decimal literals, at any length and any exponent."""
    return _exact_key(a) == _exact_key(b)


def _exact_key(tok: str) -> tuple[bool, str, int] | None:
    """(negative, significant digits, exponent) of a decimal literal: equal keys, equal values.

    Parsed by hand rather than with Decimal, whose exponent range ends near 1e18 (so that e.g.
    ``0e99999999999999999999`` still equals ``0``); None for a literal beyond any use.
    """
    m = _NUM_PARTS.fullmatch(tok)
    if m is None:
        return None
    sign, whole, frac, exp = m.group("sign", "whole", "frac", "exp")
    frac = frac or ""
    digits = ((whole or "") + frac).lstrip("0")
    if not digits:
        return (False, "0", 0)
    stripped = digits.rstrip("0")
    try:
        exponent = int(exp or "0") - len(frac) + (len(digits) - len(stripped))
    except ValueError:  # an exponent of thousands of digits
        return None
    return (sign == "-", stripped, exponent)


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
