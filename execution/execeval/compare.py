"""ExecEval's output comparison, reproduced exactly (flaws included) for comparable scores.

ExecEval accepts an output when, after stripping, its lines equal the expected lines (each line
stripped), or else when the whitespace-separated tokens pair up so that

* both tokens parse as GMP/MPFR floating-point numbers read at 129-bit precision, and the
  difference (rounded to the default 53-bit context precision) is at most the double 1e-12 in
  absolute value. Comparisons with NaN are false, so ``nan`` "equals" every number and ``inf``
  equals ``inf``; integers beyond 2**129 (~39 digits) that round to the same 129-bit value are
  equal; or
* otherwise the tokens are equal as strings, ``yes``/``no``/``true``/``false`` in any case.

The number syntax is MPFR's ``mpfr_strtofr`` with automatic base detection, after gmpy2 removes
every ``_``: decimal (``e`` or ``@`` exponent), ``0x`` hexadecimal (``p`` binary or ``@`` base
exponent), ``0b`` binary, ``nan``, ``nan(chars)``, ``@nan@``, ``inf``, ``infinity``, ``@inf@`` in
any case; an empty string (e.g. ``"_"``) is zero; the exponent range is that of gmpy2's default
context (``emax = 2**30 - 1``), so ``1e400000000`` is infinite.

Everything is computed exactly with integers. Only tokens that are extreme on two counts at
once (more than 20,000 significant digits, or a decimal exponent beyond +-30,000) are rounded
via 450-digit decimal arithmetic; such a value can then differ only when it lies within
10**-400 (relative) of a rounding boundary. The texts are compared as streams (see
:mod:`execution.textstream`), with one deviation: a token or an inner whitespace run longer than
1 MiB characters only equals the very same text.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import MAX_EMAX, MIN_EMIN, ROUND_FLOOR, ROUND_HALF_EVEN, Context, Decimal

from ..textstream import (
    ChunkSource,
    batches_equal,
    normalised_line_pieces,
    pieces_equal,
    str_chunks,
    token_batches,
)

PREC = 129  # bits of each parsed number (gmpy2.mpfr(token, 129))
DIFF_PREC = 53  # gmpy2's default context precision, used for the subtraction
EMAX = 2**30 - 1  # gmpy2 default context exponent range (value < 2**EMAX)
EMIN = -(2**30) + 1
_KEYWORDS = frozenset({"yes", "no", "true", "false"})

_SPECIAL = re.compile(
    r"([+-]?)(@nan@|nan(?:\([0-9a-z]*\))?|@inf@|infinity|inf)", re.IGNORECASE | re.ASCII
)
_HEX = re.compile(
    r"([+-]?)0x([0-9a-f]*)(?:\.([0-9a-f]*))?(?:([p@])([+-]?[0-9]+))?", re.IGNORECASE | re.ASCII
)
_BIN = re.compile(
    r"([+-]?)0b([01]*)(?:\.([01]*))?(?:([ep@])([+-]?[0-9]+))?", re.IGNORECASE | re.ASCII
)
_DEC = re.compile(
    r"([+-]?)([0-9]*)(?:\.([0-9]*))?(?:([e@])([+-]?[0-9]+))?", re.IGNORECASE | re.ASCII
)

#: a plain decimal literal (sign, digits with an optional point, exponent); also the number
#: syntax of the default comparator
DECIMAL_LITERAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)

_INTEGRAL = re.compile(r"([+-]?)0*([0-9]{1,38})(?:\.0*)?", re.ASCII)


def _signed(match: re.Match[str]) -> int:
    return -int(match.group(2)) if match.group(1) == "-" else int(match.group(2))


# Limits of the exact integer path for decimal tokens.
_EXACT_DIGITS = 20_000
_EXACT_EXP10 = 30_000
_APPROX_DIGITS = 420
_APPROX = Context(prec=450, Emax=MAX_EMAX, Emin=MIN_EMIN)


@dataclass(frozen=True)
class Mpfr:
    """A parsed number: NaN, +-inf, or sign * m * 2**e with m < 2**PREC (m == 0 for zero)."""

    kind: str  # "nan", "inf" or "finite"
    negative: bool = False
    m: int = 0
    e: int = 0

    @property
    def top(self) -> int:
        """Exponent E with 2**(E-1) <= |value| < 2**E."""
        return self.m.bit_length() + self.e


_NAN = Mpfr("nan")


def execeval_outputs_equal(expected: str, actual: str) -> bool:
    """ExecEval's verdict for one expected output (ExecEval strips the program's stdout first)."""
    return execeval_streams_equal(str_chunks(expected), str_chunks(actual))


def execeval_streams_equal(expected: ChunkSource, actual: ChunkSource) -> bool:
    """ExecEval's rule on chunked text, in bounded memory: first the stripped lines, each line
    stripped (compared as one normalised stream), then the whitespace-separated tokens (a
    different count is a mismatch, so pairs can be compared as they come)."""
    if pieces_equal(normalised_line_pieces(actual()), normalised_line_pieces(expected())):
        return True
    return batches_equal(
        token_batches(actual(), str.split, str.isspace),
        token_batches(expected(), str.split, str.isspace),
        _actual_vs_expected,
    )


def _actual_vs_expected(actual: str, expected: str) -> bool:
    return execeval_tokens_equal(expected, actual)


def execeval_tokens_equal(tok1: str, tok2: str) -> bool:
    if tok1 == tok2:  # a number minus itself is 0 (or NaN): equal either way
        return True
    int1, int2 = _INTEGRAL.fullmatch(tok1), _INTEGRAL.fullmatch(tok2)
    if int1 and int2:  # integral values below 10**38 < 2**129 are exact: equal iff same value
        return _signed(int1) == _signed(int2)
    if DECIMAL_LITERAL.fullmatch(tok1) and DECIMAL_LITERAL.fullmatch(tok2):
        # Fast path: doubles decide whenever they are clearly on one side of the tolerance
        # (their error is below 1e-15 of the operands); the exact path settles the rest.
        x, y = float(tok1), float(tok2)
        if math.isfinite(x) and math.isfinite(y):
            diff, margin = abs(x - y), 1e-15 * max(abs(x), abs(y)) + 1e-27
            if diff > _P_FLOAT + margin:
                return False
            if diff < _P_FLOAT - margin:
                return True
    num1, num2 = parse_mpfr(tok1), parse_mpfr(tok2)
    if num1 is not None and num2 is not None:
        return not difference_exceeds_precision(num1, num2)
    if tok1.lower() in _KEYWORDS:
        tok1 = tok1.lower()
    if tok2.lower() in _KEYWORDS:
        tok2 = tok2.lower()
    return tok1 == tok2


# ---------------------------------------------------------------------------------------------
# Parsing (gmpy2.mpfr(token, 129)); None where gmpy2 raises ValueError.


def parse_mpfr(token: str) -> Mpfr | None:
    if not token.isascii():
        return None
    s = token.replace("_", "")
    if not s:
        return Mpfr("finite")
    match = _SPECIAL.fullmatch(s)
    if match:
        if "nan" in match.group(2).lower():
            return _NAN
        return Mpfr("inf", negative=match.group(1) == "-")
    match = _HEX.fullmatch(s) or _BIN.fullmatch(s) or _DEC.fullmatch(s)
    if match is None:
        return None
    base = 16 if match.re is _HEX else 2 if match.re is _BIN else 10
    sign, whole, frac, exp_mark, exp_digits = match.groups()
    whole, frac = whole or "", frac or ""
    if not whole and not frac:
        return None
    negative = sign == "-"
    exponent = _read_exponent(exp_digits) if exp_mark else 0
    digits = (whole + frac).lstrip("0")
    if not digits:
        return Mpfr("finite", negative=negative)
    if base == 16:
        scale = 4 * exponent if exp_mark == "@" else exponent
        return _from_dyadic(negative, int(digits, 16), scale - 4 * len(frac))
    if base == 2:
        return _from_dyadic(negative, int(digits, 2), exponent - len(frac))
    return _from_decimal(negative, digits, exponent - len(frac))


def _read_exponent(text: str) -> int:
    """MPFR saturates exponents that overflow a C long; any such value over/underflows anyway."""
    negative = text.startswith("-")
    body = text.lstrip("+-").lstrip("0") or "0"
    value = int(body) if len(body) <= 30 else 10**30
    return -value if negative else value


def _from_dyadic(negative: bool, n: int, e: int) -> Mpfr:
    m, e = _round_int(n, e, PREC)
    return _check_range(negative, m, e)


def _from_decimal(negative: bool, digits: str, exp10: int) -> Mpfr:
    """digits * 10**exp10 correctly rounded to PREC bits (digits has no leading zero)."""
    adjusted = len(digits) - 1 + exp10
    if adjusted > 323_228_497:  # >= 10**323228497 > 2**EMAX: overflow
        return Mpfr("inf", negative=negative)
    if adjusted < -323_228_498:  # < 2**(EMIN-2): rounds to zero
        return Mpfr("finite", negative=negative)
    if len(digits) <= _EXACT_DIGITS and abs(exp10) <= _EXACT_EXP10:
        n = int(Decimal(digits))  # avoids int()'s 4300-digit limit
        if exp10 >= 0:
            m, e = _round_int(n * 10**exp10, 0, PREC)
        else:
            m, e = _round_ratio(n, 10**-exp10, PREC)
        return _check_range(negative, m, e)
    return _check_range(negative, *_round_decimal_approx(digits, exp10))


def _round_int(n: int, e: int, prec: int) -> tuple[int, int]:
    """n * 2**e rounded to `prec` bits, ties to even; n >= 0."""
    extra = n.bit_length() - prec
    if extra <= 0:
        return n, e
    m, rest = n >> extra, n & ((1 << extra) - 1)
    half = 1 << (extra - 1)
    if rest > half or (rest == half and m & 1):
        m += 1
    return m, e + extra


def _round_ratio(n: int, d: int, prec: int) -> tuple[int, int]:
    """n / d rounded to `prec` bits, ties to even; n, d > 0."""
    e = n.bit_length() - d.bit_length() - prec
    while True:
        num, den = (n, d << e) if e >= 0 else (n << -e, d)
        q, r = divmod(num, den)
        if q >= 1 << prec:
            e += 1
        elif q < 1 << (prec - 1):
            e -= 1
        else:
            break
    if 2 * r > den or (2 * r == den and q & 1):
        q += 1
    return q, e


def _round_decimal_approx(digits: str, exp10: int) -> tuple[int, int]:
    """Rounding of an extreme decimal through 450-digit arithmetic (see module docstring)."""
    kept = digits[:_APPROX_DIGITS]
    if digits[_APPROX_DIGITS:].strip("0"):
        kept += "1"  # sticky digit: the dropped tail is not zero
    exp10 += len(digits) - len(kept)
    value = Decimal((0, tuple(int(c) for c in kept), exp10))
    ctx = _APPROX
    log2 = ctx.divide(ctx.ln(value), ctx.ln(Decimal(2)))
    e = int(log2.to_integral_value(rounding=ROUND_FLOOR)) + 1 - PREC
    while True:
        scaled = ctx.multiply(value, ctx.power(Decimal(2), Decimal(-e)))
        if scaled >= 2**PREC:
            e += 1
        elif scaled < 2 ** (PREC - 1):
            e -= 1
        else:
            break
    m = int(scaled.to_integral_value(rounding=ROUND_HALF_EVEN))
    return m, e


def _check_range(negative: bool, m: int, e: int) -> Mpfr:
    """Apply the context's exponent range to a rounded value."""
    if m == 0:
        return Mpfr("finite", negative=negative)
    top = m.bit_length() + e
    if top > EMAX:
        return Mpfr("inf", negative=negative)
    if top < EMIN:  # underflow: the nearest of 0 and 2**(EMIN-1), ties to zero
        above_half = top == EMIN - 1 and m != 1 << (m.bit_length() - 1)
        return Mpfr("finite", negative=negative, m=1 if above_half else 0, e=EMIN - 1)
    zeros = (m & -m).bit_length() - 1  # canonical form: odd mantissa
    m >>= zeros
    e += zeros
    return Mpfr("finite", negative=negative, m=m, e=e)


# ---------------------------------------------------------------------------------------------
# abs(num1 - num2) > PRECISION with the subtraction rounded to 53 bits.

_P_FLOAT = 1e-12
_P_NUM, _P_DEN = _P_FLOAT.as_integer_ratio()  # mpfr(1e-12, 129) is the double, exactly
_P_M, _P_E = _P_NUM, 1 - _P_DEN.bit_length()


def difference_exceeds_precision(a: Mpfr, b: Mpfr) -> bool:
    if a.kind == "nan" or b.kind == "nan":
        return False  # NaN compares false: ExecEval accepts
    if a.kind == "inf" or b.kind == "inf":
        if a.kind == "inf" and b.kind == "inf":
            return a.negative != b.negative  # inf - inf is NaN (accepted); inf - -inf is inf
        return True
    _, m, e = _subtract(a, b)
    if m == 0:
        return False
    m, e = _round_int(m, e, DIFF_PREC)
    top, p_top = m.bit_length() + e, _P_M.bit_length() + _P_E
    if top != p_top:
        return top > p_top
    low = min(e, _P_E)
    return m << (e - low) > _P_M << (_P_E - low)


def _subtract(a: Mpfr, b: Mpfr) -> tuple[bool, int, int]:
    """Exact a - b as (negative, magnitude, exponent), after shrinking a negligible operand.

    An operand smaller than 2**(top - PREC - 1) of the other cannot move the 53-bit rounding of
    the difference except through its sign, so it is replaced by a same-signed stand-in just
    below that bound; this keeps the integers small whatever the exponents.
    """
    b = Mpfr("finite", negative=not b.negative, m=b.m, e=b.e)
    if a.m == 0 or b.m == 0:
        x = b if a.m == 0 else a
        return x.negative, x.m, x.e
    if b.top <= a.top - PREC - 1:
        b = Mpfr("finite", negative=b.negative, m=1, e=a.top - PREC - 2)
    elif a.top <= b.top - PREC - 1:
        a = Mpfr("finite", negative=a.negative, m=1, e=b.top - PREC - 2)
    low = min(a.e, b.e)
    total = (-1 if a.negative else 1) * (a.m << (a.e - low)) + (-1 if b.negative else 1) * (
        b.m << (b.e - low)
    )
    return total < 0, abs(total), low
