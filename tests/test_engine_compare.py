"""Output comparison: golden cases for both modes and properties of the default comparator.

The `execeval` golden values were obtained from ExecEval's own comparison (gmpy2 2.3.2), and
`test_execeval_matches_gmpy2` re-derives them against gmpy2 when it is installed.
"""

from __future__ import annotations

import importlib.util
import random
from decimal import Decimal, localcontext

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from code_eval_taskpack.execution.execeval.compare import execeval_tokens_equal, parse_mpfr
from code_eval_taskpack.execution.run.compare import MODES, outputs_match, tokenize
from tests.conftest import require

# --------------------------------------------------------------------------------------------
# default mode: golden cases

DEFAULT_GOLDEN = [
    # (actual, expected outputs, verdict)
    ("3\n", ["3"], True),
    ("3", ["4"], False),
    ("1 2  \n\n\n", ["1 2"], True),  # trailing spaces and blank lines
    ("1\r\n2\r\n", ["1\n2"], True),  # \r\n
    ("1\n2", ["1 2"], True),  # line breaks are whitespace, as in Codeforces checkers
    ("1 2 3", ["1 2"], False),  # extra token
    ("", [""], True),
    ("", ["0"], False),
    ("YES", ["yes"], True),
    ("Yes", ["yES"], True),
    ("NO", ["yes"], False),
    ("TRUE", ["true"], False),  # only yes/no are case-insensitive
    ("Hello", ["hello"], False),
    ("nan", ["1.0"], False),  # NaN never equals a number
    ("1.0", ["nan"], False),
    ("nan", ["nan"], True),  # identical text
    ("inf", ["1e999"], False),
    ("-inf", ["inf"], False),
    # integers: exact, any length, no float conversion
    ("1" * 39, ["1" * 38 + "2"], False),
    ("7" + "0" * 38, ["7" + "0" * 37 + "1"], False),  # equal for ExecEval (see below)
    ("9" * 400, ["9" * 400], True),
    ("9" * 400, ["9" * 399 + "8"], False),
    ("1000000", ["1000001"], False),  # integers are never "close"
    ("007", ["7"], True),
    ("+5", ["5"], True),
    ("-0", ["0"], True),
    ("-5", ["5"], False),
    # reals: 1e-6 absolute or relative
    ("0.000001", ["0.0"], True),
    ("1.000001", ["1.0"], True),  # exactly on the boundary (decimal, no binary rounding)
    ("1.0000011", ["1.0"], False),
    ("0.0000011", ["0.0"], False),
    ("0.0000010000000001", ["0.0"], False),  # past the boundary by 1e-16: exact, not binary
    ("0.00000099999999999", ["0.0"], True),
    ("1000001", ["1000000.0"], True),  # relative 1e-6 (the expected token is a real)
    ("1000000.0", ["1000000.999"], True),
    ("1e9", ["1000000999.0"], True),
    ("1e9", ["1000001001.0"], False),
    # an integer expected token demands exactly its value, whatever the actual token's form
    ("2.0", ["2"], True),
    ("2e0", ["2"], True),
    ("-0.0", ["0"], True),
    ("1e9", ["1000000000"], True),
    ("1.2345678e+17", ["123456780000000000"], True),
    ("0e99999999999999999999", ["0"], True),  # beyond Decimal's exponent range
    ("123456700.0", ["123456789"], False),
    ("1.2345678e+17", ["123456780000000001"], False),
    ("1000000.0", ["1000001"], False),
    ("1000001.0", ["1000000"], False),
    ("1e9", ["1000000999"], False),
    ("2.0000001", ["2"], False),
    ("1e99999999999999999999", ["1"], False),
    ("3.14159265", ["3.1415929"], True),
    ("3.1416", ["3.14159265"], False),
    (".5", ["0.5"], True),
    ("5.", ["5"], True),
    ("1e-300", ["0.0"], True),
    ("1e-300", ["0"], False),  # exact for an integer
    ("0x10", ["16"], False),  # not a decimal number
    ("1_0", ["10"], False),
    # any expected output
    ("2", ["1", "2", "3"], True),
    ("4", ["1", "2", "3"], False),
    ("b a", ["a b", "b a"], True),
    ("x", [], False),
]


@pytest.mark.parametrize(("actual", "expected", "verdict"), DEFAULT_GOLDEN)
def test_default_golden(actual: str, expected: list[str], verdict: bool) -> None:
    assert outputs_match(actual, expected) is verdict


# --------------------------------------------------------------------------------------------
# execeval mode: golden cases, flaws included

FORTY = "1234567890123456789012345678901234567890"
EXECEVAL_GOLDEN = [
    # NaN equals any number (the comparison with NaN is false, so nothing fails)
    ("nan", ["5"], True),
    ("5", ["nan"], True),
    ("NaN", ["-1e300"], True),
    ("nan", ["abc"], False),  # not a number: compared as text
    ("inf", ["inf"], True),
    ("inf", ["-inf"], False),
    ("inf", ["1e400000000"], True),  # overflow of the 2**30 exponent range
    ("1e400000000", ["2e400000000"], True),
    ("inf", ["1e300"], False),
    # 129-bit precision: 39-digit integers above 2**129 may collapse
    ("7" + "0" * 38, ["7" + "0" * 37 + "1"], True),
    ("7" + "0" * 37 + "1", ["7" + "0" * 37 + "2"], False),
    ("7" + "0" * 37 + "3", ["7" + "0" * 37 + "4"], True),
    ("9" * 39, ["1" + "0" * 39], True),
    ("123456789012345678901234567890123456789", ["123456789012345678901234567890123456788"], False),
    (FORTY, [FORTY[:-1] + "1"], False),
    (str(10**44), [str(10**44 + 12345)], True),
    (str(10**44), [str(10**44 + 10**7)], False),
    # absolute tolerance 1e-12 (the double), difference rounded to 53 bits
    ("1", ["1.000000000001"], True),
    ("1", ["1.000000000002"], False),
    ("0", ["0.000000000001"], True),
    ("0", ["-0.000000000001"], True),
    ("0", ["0.0000000000011"], False),
    ("1000", ["1000.000000000001"], True),
    ("0.1", ["0.1000000000009"], True),
    ("1", ["1.000001"], False),  # the usual 1e-6 rule would accept this
    ("2.0", ["2"], True),
    ("-0", ["0"], True),
    # MPFR syntax
    ("16", ["0x10"], True),
    ("10", ["1_0"], True),
    ("0", ["_"], True),
    ("2", ["0b1e1"], True),
    ("100", ["1@2"], True),
    ("8", ["0x1p3"], True),
    # \r\n and whitespace
    ("1\r\n2\r\n", ["1\n2"], True),
    ("1 2\r\n", ["1\r\n2"], True),
    ("  a   b  \n\n", ["a b"], True),
    ("1 2 3", ["1 2"], False),
    # yes/no/true/false case-insensitive, other words exact
    ("YES", ["yes"], True),
    ("Yes", ["YES"], True),
    ("TRUE", ["true"], True),
    ("False", ["false"], True),
    ("Hello", ["hello"], False),
    # any expected output
    ("2", ["1", "2"], True),
    ("3", ["1", "2"], False),
]


@pytest.mark.parametrize(("actual", "expected", "verdict"), EXECEVAL_GOLDEN)
def test_execeval_golden(actual: str, expected: list[str], verdict: bool) -> None:
    assert outputs_match(actual, expected, mode="execeval") is verdict


def test_modes_disagree_where_execeval_is_flawed() -> None:
    for actual, expected in [("nan", ["5"]), ("7" + "0" * 38, ["7" + "0" * 37 + "1"])]:
        assert outputs_match(actual, expected, "execeval")
        assert not outputs_match(actual, expected, "default")
    assert outputs_match("1.000001", ["1.0"], "default")
    assert not outputs_match("1.000001", ["1.0"], "execeval")


def test_unknown_mode_is_an_error() -> None:
    with pytest.raises(ValueError, match="execeval"):
        outputs_match("1", ["1"], mode="exact")
    assert set(MODES) == {"default", "execeval"}


@pytest.mark.parametrize(
    ("token", "ok"),
    [
        ("1e5", True),
        (".5", True),
        ("5.", True),
        ("nan(abc)", True),
        ("Infinity", True),
        ("@nan@", True),
        ("0x1.8p1", True),
        ("1e", False),
        ("e5", False),
        ("1p3", False),
        ("infinit", False),
        ("nan(", False),
        ("1,5", False),
        ("٣", False),  # non-ASCII digit
        ("+", False),
        ("0x", False),
    ],
)
def test_execeval_number_syntax(token: str, ok: bool) -> None:
    assert (parse_mpfr(token) is not None) is ok


def test_execeval_huge_tokens_are_fast_and_exact() -> None:
    big = "1" + "0" * 30_000  # beyond int()'s 4300-digit limit
    assert execeval_tokens_equal(big, big + ".0")
    assert not execeval_tokens_equal(big, "2" + "0" * 30_000)
    assert execeval_tokens_equal("1e-99999", "0")
    assert not execeval_tokens_equal("1e99999", "0")


# --------------------------------------------------------------------------------------------
# properties (default mode unless stated)

WORDS = st.text(alphabet="abcxyzYESNOyesno!?#", min_size=1, max_size=6)
INTS = st.integers(min_value=-(10**60), max_value=10**60).map(str)
REALS = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e12, max_value=1e12).map(repr)
TOKEN = st.one_of(WORDS, INTS, REALS, st.sampled_from(["nan", "inf", "-inf", "YES", "no"]))
SPACE = st.text(alphabet=" \t\n\r", min_size=1, max_size=4)


@settings(max_examples=200, deadline=None)
@given(st.lists(TOKEN, max_size=8), st.sampled_from(MODES))
def test_reflexive(tokens: list[str], mode: str) -> None:
    text = " ".join(tokens)
    assert outputs_match(text, [text], mode)


@settings(max_examples=200, deadline=None)
@given(st.lists(TOKEN, min_size=1, max_size=8), st.data())
def test_whitespace_insensitive(tokens: list[str], data: st.DataObject) -> None:
    seps = data.draw(st.lists(SPACE, min_size=len(tokens) + 1, max_size=len(tokens) + 1))
    spaced = seps[0] + "".join(t + s for t, s in zip(tokens, seps[1:], strict=True))
    canonical = "\n".join(tokens)
    assert outputs_match(spaced, [canonical])
    assert outputs_match(canonical, [spaced])
    assert tokenize(spaced) == tokens


def _is_int(token: str) -> bool:
    return token.lstrip("+-").isdigit()


@settings(max_examples=300, deadline=None)
@given(TOKEN, TOKEN)
def test_symmetric_unless_an_integer_is_expected(a: str, b: str) -> None:
    """Only an integer expected token makes the rule one-sided (exact instead of 1e-6)."""
    assume(_is_int(a) == _is_int(b))
    assert outputs_match(a, [b]) == outputs_match(b, [a])


@settings(max_examples=300, deadline=None)
@given(
    st.integers(min_value=-(10**30), max_value=10**30),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.integers(min_value=0, max_value=6),
    st.sampled_from(["f", "e"]),
)
def test_integer_expected_needs_the_exact_value(x: int, y: int, places: int, form: str) -> None:
    """Any spelling of y (12.0, 1.2e+1, ...) passes for an expected x exactly when y == x."""
    spelled = f"{Decimal(y):.{places}{form}}" if form == "f" else f"{Decimal(y):e}"
    assert outputs_match(spelled, [str(x)]) is (x == y)
    assert outputs_match(spelled, [str(y)])


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=10**7, max_value=10**30), st.data())
def test_integer_expected_rejects_values_within_the_real_tolerance(
    x: int, data: st.DataObject
) -> None:
    """A wrong count within 1e-6 relative of the right one fails, even spelled as a real."""
    near = x + data.draw(st.integers(min_value=1, max_value=x // 10**7))
    assert not outputs_match(f"{near}.0", [str(x)])
    assert outputs_match(f"{near}.0", [f"{x}.0"])  # an expected real keeps its tolerance


@settings(max_examples=300, deadline=None)
@given(
    st.integers(min_value=-(10**80), max_value=10**80),
    st.integers(min_value=-(10**80), max_value=10**80),
)
def test_integers_exact(x: int, y: int) -> None:
    assert outputs_match(str(x), [str(y)]) is (x == y)
    assert outputs_match("0" + str(abs(x)), [str(abs(x))])


@settings(max_examples=300, deadline=None)
@given(
    st.decimals(min_value=-(10**9), max_value=10**9, allow_nan=False, places=9),
    st.integers(min_value=1, max_value=10**6),
    st.sampled_from([-1, 1]),
)
def test_tolerance_boundary(x: Decimal, k: int, sign: int) -> None:
    """Within 1e-6*max(1,|x|,|y|) always passes, beyond it never; symmetric either way."""
    scale = max(Decimal(1), abs(x))
    inside = x + sign * scale * Decimal("1e-6") * Decimal(k) / Decimal(10**6) / Decimal(2)
    outside = x + sign * scale * Decimal("1e-6") * (Decimal(2) + Decimal(k) / Decimal(10**6))
    for y, verdict in ((inside, True), (outside, False)):
        a, b = f"{x:f}", f"{y:f}"
        assume(not (_is_int(a) or _is_int(b)))  # reals: integers are compared exactly
        assert outputs_match(a, [b]) is verdict
        assert outputs_match(b, [a]) is verdict


@settings(max_examples=300, deadline=None)
@given(
    st.decimals(min_value=Decimal("-0.5"), max_value=Decimal("0.5"), places=12),
    st.sampled_from([-1, 1]),
    st.integers(min_value=1, max_value=10**6),
)
def test_tolerance_exact_boundary(x: Decimal, sign: int, k: int) -> None:
    """Exactly 1e-6 apart passes; any excess, however small, fails (no binary rounding)."""
    with localcontext() as ctx:
        ctx.prec = 100  # the default 28 digits would round the excess away
        at = x + sign * Decimal("1e-6")
        past = at + sign * Decimal(k) * Decimal("1e-30")
    assert outputs_match(f"{x:f}", [f"{at:f}"])
    assert not outputs_match(f"{x:f}", [f"{past:f}"])
    assert not outputs_match(f"{past:f}", [f"{x:f}"])


@settings(max_examples=200, deadline=None)
@given(TOKEN, st.lists(TOKEN, max_size=4), st.sampled_from(MODES))
def test_any_expected_output(actual: str, expected: list[str], mode: str) -> None:
    assert outputs_match(actual, expected, mode) == any(
        outputs_match(actual, [e], mode) for e in expected
    )


@settings(max_examples=200, deadline=None)
@given(st.lists(TOKEN, min_size=1, max_size=6), st.integers(min_value=0, max_value=5))
def test_nan_never_matches_a_number_by_default(tokens: list[str], i: int) -> None:
    i %= len(tokens)
    assume(tokens[i] not in {"nan", "inf", "-inf"})
    assume(tokens[i].lstrip("-").replace(".", "", 1).replace("e", "").isdigit())
    swapped = [*tokens[:i], "nan", *tokens[i + 1 :]]
    assert not outputs_match(" ".join(swapped), [" ".join(tokens)])
    assert outputs_match(" ".join(swapped), [" ".join(tokens)], "execeval")


@settings(max_examples=300, deadline=None)
@given(
    st.decimals(min_value=-1000, max_value=1000, allow_nan=False, places=6),
    st.integers(min_value=-100, max_value=100),
)
def test_execeval_tolerance(x: Decimal, k: int) -> None:
    """ExecEval: differences up to ~1e-13 always pass, from 2e-12 never (for |x| <= 1000)."""
    near = x + Decimal(k) * Decimal("1e-15")
    far = x + (Decimal(2) + abs(Decimal(k))) * Decimal("1e-12") * (1 if k >= 0 else -1)
    assert outputs_match(f"{x:f}", [f"{near:f}"], "execeval")
    assert not outputs_match(f"{x:f}", [f"{far:f}"], "execeval")


def test_execeval_matches_gmpy2() -> None:
    """Differential check of the MPFR reproduction against ExecEval's own library."""
    require(importlib.util.find_spec("gmpy2") is not None, "gmpy2 is not installed")
    import gmpy2

    precision = gmpy2.mpfr(1e-12, 129)

    def reference(a: str, b: str) -> bool:
        try:
            return not abs(gmpy2.mpfr(a, 129) - gmpy2.mpfr(b, 129)) > precision
        except ValueError:
            words = {"yes", "no", "true", "false"}
            a = a.lower() if a.lower() in words else a
            b = b.lower() if b.lower() in words else b
            return a == b

    rng = random.Random(20240601)
    alphabet = "0123456789.eE+-_xXbBpP@naifNAIFty()"
    pairs = [
        (actual, expected[0])
        for actual, expected, _ in EXECEVAL_GOLDEN
        if len(expected) == 1 and len(actual.split()) == 1 and len(expected[0].split()) == 1
    ]
    for _ in range(4000):
        kind = rng.random()
        if kind < 0.35:
            a = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 8)))
        elif kind < 0.7:
            a = str(rng.randint(0, 10 ** rng.randint(1, 45))) + rng.choice(["", ".5", "e-3", "e40"])
        else:
            x = rng.choice([1e-12, 1.0, 0.1, 1e38, 1e39, 3.0]) * rng.choice([1, -1, 1 + 1e-15])
            a = repr(x)
        i = rng.randrange(len(a))
        b = a[:i] + rng.choice("0123456789") + a[i + 1 :] if rng.random() < 0.7 else a
        pairs.append((a, b))
    for a, b in pairs:
        assert execeval_tokens_equal(a, b) is reference(a, b), (a, b)


def test_raw_bytes_are_decoded_per_mode() -> None:
    """Invalid UTF-8 never matches by default; ExecEval drops it (errors="ignore")."""
    assert not outputs_match(b"4\xff2\n", ["42"])
    assert outputs_match(b"4\xff2\n", ["42"], "execeval")
    assert outputs_match(b"42\n", ["42"])
