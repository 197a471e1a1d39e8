"""95% intervals of a per-language score, so a bar says how far it could move by chance.

With 106 problems a language's pass@1 near 30% is known to about +-9 points: differences smaller
than that between two bars say nothing. Two intervals, chosen by what the scores are made of:

- Wilson score interval when every problem scores 0 or 1 (greedy pass@1, exact match, accuracy):
  exact enough at n=100 and never outside [0, 1], unlike the normal approximation at 0% or 100%;
- percentile bootstrap over problems when a problem's score is a fraction (pass@k estimated
  from n samples per problem): problems are resampled with replacement, the samples of a problem
  stay together, so the interval reflects the spread between problems.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

Z95 = 1.959963984540054  # the standard normal's 97.5% quantile
BOOTSTRAP_RESAMPLES = 2000
WILSON = "Wilson"
BOOTSTRAP = "bootstrap"


@dataclass(frozen=True)
class Interval:
    low: float  # 0-1
    high: float  # 0-1
    method: str  # WILSON or BOOTSTRAP
    n: int  # problems


def wilson(successes: int, n: int, z: float = Z95) -> Interval:
    """Wilson score interval of `successes` out of `n`."""
    if n <= 0 or not 0 <= successes <= n:
        raise ValueError(f"wilson: need 0 <= successes <= n and n > 0, got {successes}/{n}")
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    # at 0 or n successes one bound is exactly 0 or 1 (not its rounding error)
    low = 0.0 if successes == 0 else centre - half
    high = 1.0 if successes == n else centre + half
    return Interval(low, high, WILSON, n)


def bootstrap(
    values: Sequence[float], resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0
) -> Interval:
    """Percentile bootstrap interval of the mean of per-problem scores (seeded: the same
    report twice draws the same bars)."""
    n = len(values)
    if n == 0:
        raise ValueError("bootstrap: no values")
    rng = random.Random(seed)
    means = sorted(sum(rng.choices(values, k=n)) / n for _ in range(resamples))
    low = means[int(0.025 * (resamples - 1))]
    high = means[math.ceil(0.975 * (resamples - 1))]
    return Interval(low, high, BOOTSTRAP, n)


def of_scores(values: Sequence[float]) -> Interval | None:
    """The interval of a mean over problems, from the problems' own scores."""
    clean = [v for v in values if not math.isnan(v)]
    if not clean:
        return None
    if all(v in (0.0, 1.0) for v in clean):
        return wilson(int(sum(clean)), len(clean))
    return bootstrap(clean)


def describe(methods: set[str]) -> str:
    """One line saying which interval the error bars show."""
    parts = []
    if WILSON in methods:
        parts.append("95% Wilson score interval (each problem passes or fails)")
    if BOOTSTRAP in methods:
        parts.append(
            f"95% percentile bootstrap over problems ({BOOTSTRAP_RESAMPLES} resamples; "
            "per-problem pass@k from several samples)"
        )
    return "; ".join(parts)
