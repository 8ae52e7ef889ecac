"""Numpy-only numeric cores that the analysis modules call (no polars, no I/O).

Plain arrays in, arrays (or plain floats) out. Each section belongs to one analysis family and
says which module calls it; add new cores in a new clearly headed section.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations

import numpy as np

__all__ = [
    "SubsetDeviations",
    "first_reached",
    "last_crossing",
    "mean_pairwise_abs_diff",
    "percentile_levels",
    "subset_deviations",
]

# =================================================================================================
# Prompt-sensitivity moments and ReliableEval subset resampling (issue 3)
# Called by evalstats.moments and evalstats.resampling.
# =================================================================================================

#: Moments the subset kernels know: name -> moment index.
SUBSET_MOMENTS: tuple[str, ...] = ("mean", "variance")


def mean_pairwise_abs_diff(values: np.ndarray) -> float:
    """Mean of ``|y_i - y_j|`` over all unordered pairs ``i < j`` of the finite ``values``.

    Uses the sorted-order identity ``sum_{i<j} |y_i - y_j| = sum_k (2k - m - 1) y_(k)``
    (1-based ``k``, ``m`` values), O(m log m). NaN when fewer than two values are finite.

    Examples
    --------
    >>> mean_pairwise_abs_diff(np.array([0.0, 1.0, 1.0]))
    0.6666666666666666
    """
    y = np.sort(np.asarray(values, dtype=float)[np.isfinite(values)])
    m = y.size
    if m < 2:
        return float("nan")
    k = np.arange(1, m + 1, dtype=float)
    return float(np.dot(2.0 * k - m - 1.0, y) / (m * (m - 1) / 2.0))


def percentile_levels(delta: float, *, compat: str | None = None) -> tuple[float, float]:
    """Percentiles (0-100) of the delta/2 and 1 - delta/2 bounds of CI_delta.

    The Reliable-Eval reference script truncates both to integers
    (``int(100 * delta / 2)``, ``int(100 * (1 - delta / 2))``); ``compat="reliable-eval"``
    reproduces that, the default keeps them exact.

    Examples
    --------
    >>> percentile_levels(0.05)
    (2.5, 97.5)
    >>> percentile_levels(0.05, compat="reliable-eval")
    (2.0, 97.0)
    """
    lo, hi = 100.0 * (delta / 2.0), 100.0 * (1.0 - delta / 2.0)
    if compat == "reliable-eval":
        return float(int(lo)), float(int(hi))
    return lo, hi


@dataclass(frozen=True)
class SubsetDeviations:
    """Per subset size ``n = 1..N``: the summary of ``|moment(S') - moment(reference)|``.

    Arrays have length ``N`` (index ``n - 1``) and shape ``(len(moments), N)`` for the values.
    ``draws`` keeps, per moment, the raw deviations of each size when ``keep_draws`` was set.
    """

    moments: tuple[str, ...]
    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray
    exhaustive: np.ndarray
    draws: tuple[tuple[np.ndarray, ...], ...] | None = None


def _moment_devs(
    s1: np.ndarray, s2: np.ndarray, n: int, ref_var: float, moments: tuple[str, ...]
) -> list[np.ndarray]:
    """Deviations of each moment from sums of centred scores (``s1``) and their squares."""
    m = s1 / n
    out = []
    for name in moments:
        if name == "mean":
            out.append(np.abs(m))
        else:  # population variance of the subset, as np.var (the paper's Eq. 3)
            out.append(np.abs(np.maximum(s2 / n - m * m, 0.0) - ref_var))
    return out


def subset_deviations(
    x: np.ndarray,
    *,
    moments: tuple[str, ...] = SUBSET_MOMENTS,
    n_resamples: int = 5000,
    replace: bool = False,
    delta: float = 0.1,
    compat: str | None = None,
    rng: np.random.Generator,
    keep_draws: bool = False,
) -> SubsetDeviations:
    """Distribution of ``|mu_i(S') - mu_i(S_D)|`` for subsets ``S'`` of every size ``n = 1..N``.

    Parameters
    ----------
    x : numpy.ndarray
        The ``N`` unit scores of one group (one per variant).
    moments : tuple of str
        Any of ``"mean"`` and ``"variance"`` (population form).
    n_resamples : int
        Subsets per size when not enumerated.
    replace : bool
        ``False``: subsets without replacement (the pool view; enumerated when
        ``C(N, n) <= n_resamples``). ``True``: samples with replacement (bootstrap), never
        enumerated.
    delta : float
        CI_delta percentiles are ``delta/2`` and ``1 - delta/2``: order statistics of the
        deviations (numpy's ``inverted_cdf``), interpolated only with ``compat``.
    compat : {None, 'reliable-eval'}
        ``'reliable-eval'``: enumerate only ``n <= 2`` (the reference script's ``max_k``), and
        integer-truncated percentiles.
    rng : numpy.random.Generator
    keep_draws : bool
        Keep the raw deviations per size.

    Notes
    -----
    Scores are centred on the pool mean first, so the mean deviation of a subset is
    ``|sum(xc[S']) / n|`` and its population variance ``sum(xc^2)/n - (sum(xc)/n)^2``. Random
    subsets of every size come from one matrix of ``n_resamples`` random permutations (rows):
    the first ``n`` entries of a uniform permutation are a uniform ``n``-subset, so the prefix
    sums give every ``n`` at once in O(n_resamples * N). Subsets of one size share the
    permutations of the others; each size's distribution is still exact in law. Enumerated
    sizes use the complement of size ``N - n`` when that is smaller.
    """
    x = np.asarray(x, dtype=float)
    N = x.size
    xc = x - x.mean()
    q_lo, q_hi = percentile_levels(delta, compat=compat)
    # order statistics (the smallest value with at least the level's share at or below it), so
    # with few distinct subsets the bound is a deviation that occurs; the reference script
    # interpolates, which falls between two of them and below the true quantile
    how = "linear" if compat == "reliable-eval" else "inverted_cdf"
    M = len(moments)
    mean = np.empty((M, N))
    low = np.empty((M, N))
    high = np.empty((M, N))
    exhaustive = np.zeros(N, dtype=bool)
    draws: list[list[np.ndarray]] = [[np.empty(0)] * N for _ in range(M)]

    def enumerable(n: int) -> bool:
        if replace:
            return False
        if compat == "reliable-eval":
            return n <= 2
        return math.comb(N, n) <= n_resamples

    random_sizes = [n for n in range(1, N + 1) if not enumerable(n)]
    total1, total2 = float(xc.sum()), float((xc * xc).sum())
    ref_var = total2 / N
    for n in range(1, N + 1):
        if not enumerable(n):
            continue
        exhaustive[n - 1] = True
        k = min(n, N - n)
        if k == 0:  # the subset is the pool itself: no deviation by definition
            s1 = np.zeros(1)
            s2 = np.array([total2])
        else:
            idx = np.fromiter(
                (i for c in combinations(range(N), k) for i in c), dtype=np.intp
            ).reshape(-1, k)
            s1 = xc[idx].sum(axis=1)
            s2 = (xc[idx] ** 2).sum(axis=1)
            if k != n:
                s1, s2 = total1 - s1, total2 - s2
        for j, d in enumerate(_moment_devs(s1, s2, n, ref_var, moments)):
            mean[j, n - 1] = d.mean()
            low[j, n - 1], high[j, n - 1] = np.percentile(d, [q_lo, q_hi], method=how)
            if keep_draws:
                draws[j][n - 1] = d
    if random_sizes:
        R = int(n_resamples)
        if replace:
            perm = xc[rng.integers(0, N, size=(R, N))]
        else:
            perm = rng.permuted(np.broadcast_to(xc, (R, N)), axis=1)
        c1 = np.cumsum(perm, axis=1)
        c2 = np.cumsum(perm * perm, axis=1)
        cols = np.asarray(random_sizes) - 1
        sizes = np.asarray(random_sizes, dtype=float)
        devs = _moment_devs(c1[:, cols], c2[:, cols], sizes, ref_var, moments)  # type: ignore[arg-type]
        for j, d in enumerate(devs):
            mean[j, cols] = d.mean(axis=0)
            pl_, ph_ = np.percentile(d, [q_lo, q_hi], axis=0, method=how)
            low[j, cols], high[j, cols] = pl_, ph_
            if keep_draws:
                for c_i, col in enumerate(cols):
                    draws[j][col] = d[:, c_i]
    kept = tuple(tuple(d) for d in draws) if keep_draws else None
    return SubsetDeviations(tuple(moments), mean, low, high, exhaustive, kept)


def first_reached(high: np.ndarray, epsilon: float, *, strict: bool = False) -> int | None:
    """Smallest ``n`` (1-based) with ``high[n-1] <= epsilon`` (``<`` when ``strict``), or None.

    The first crossing, as the Reliable-Eval reference script reads n*; :func:`last_crossing`
    is the n after which the bound stays below epsilon.

    Examples
    --------
    >>> first_reached(np.array([0.3, 0.1, 0.05]), 0.1)
    2
    >>> first_reached(np.array([0.3, 0.1, 0.05]), 0.1, strict=True)
    3
    """
    ok = high < epsilon if strict else high <= epsilon
    hits = np.flatnonzero(ok)
    return int(hits[0]) + 1 if hits.size else None


def last_crossing(high: np.ndarray, epsilon: float, *, strict: bool = False) -> int | None:
    """Smallest ``n`` (1-based) with ``high[m-1] <= epsilon`` for every ``m >= n``, or None.

    The bound may dip below epsilon and rise above it again (a moment that is small at n = 1,
    Monte Carlo noise); n* is where it stays below. ``strict`` compares with ``<``.

    Examples
    --------
    >>> last_crossing(np.array([0.05, 0.3, 0.1, 0.05]), 0.1)
    3
    >>> last_crossing(np.array([0.05, 0.3, 0.1, 0.2]), 0.1) is None
    True
    """
    ok = high < epsilon if strict else high <= epsilon
    bad = np.flatnonzero(~ok)
    if bad.size == 0:
        return 1 if ok.size else None
    n = int(bad[-1]) + 2
    return n if n <= ok.size else None
