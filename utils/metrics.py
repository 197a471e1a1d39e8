"""The unbiased pass@k estimator (Chen et al., 2021), the only pass@k in the project."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np


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


def mean_pass_at_k(samples: Iterable[Sequence[bool]], ks: Sequence[int]) -> dict[str, float]:
    """Average pass@k over problems, each given as its list of per-sample pass/fail flags.

    A k larger than a problem's sample count is left out of the table rather than estimated.
    """
    rows = [list(s) for s in samples]
    out: dict[str, float] = {}
    for k in ks:
        vals = [pass_at_k(len(r), sum(bool(x) for x in r), k) for r in rows if len(r) >= k]
        if vals and len(vals) == len(rows):
            out[f"pass@{k}"] = float(np.mean(vals))
    return out
