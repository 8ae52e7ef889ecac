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
    "is_constant",
    "last_crossing",
    "mean_pairwise_abs_diff",
    "mls_interval",
    "percentile_levels",
    "snap_ties",
    "subset_deviations",
    "two_way_mean_squares",
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
        c2 = np.cumsum(np.multiply(perm, perm, out=perm), axis=1, out=perm)
        cols = np.asarray(random_sizes) - 1
        if cols.size < N:
            c1, c2 = c1[:, cols], c2[:, cols]
        sizes = np.asarray(random_sizes, dtype=float)
        # the deviations as _moment_devs computes them, in place: one (R, N) array per moment
        m = np.divide(c1, sizes, out=c1)
        devs = []
        for name in moments:
            if name == "mean":
                devs.append(np.abs(m))
        if "variance" in moments:
            v = np.divide(c2, sizes, out=c2)
            v -= np.multiply(m, m, out=m)
            np.maximum(v, 0.0, out=v)
            v -= ref_var
            devs.insert(list(moments).index("variance"), np.abs(v, out=v))
        for j, d in enumerate(devs):
            mean[j, cols] = d.mean(axis=0)
            if keep_draws:
                for c_i, col in enumerate(cols):
                    draws[j][col] = d[:, c_i].copy()
            if how == "inverted_cdf":
                # order statistics: select them in place (what np.percentile does on a copy)
                k_lo, k_hi = (_inverted_cdf_index(q, R) for q in (q_lo, q_hi))
                d.partition(sorted({k_lo, k_hi}), axis=0)
                low[j, cols], high[j, cols] = d[k_lo], d[k_hi]
            else:
                pl_, ph_ = np.percentile(d, [q_lo, q_hi], axis=0, method=how)
                low[j, cols], high[j, cols] = pl_, ph_
    kept = tuple(tuple(d) for d in draws) if keep_draws else None
    return SubsetDeviations(tuple(moments), mean, low, high, exhaustive, kept)


def _inverted_cdf_index(q: float, n: int) -> int:
    """0-based index of numpy's ``inverted_cdf`` percentile ``q`` (0-100) among ``n`` sorted values."""
    return min(max(math.ceil(q / 100.0 * n) - 1, 0), n - 1)


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


# =================================================================================================
# Variance of prompt effects net of noise (issue 18)
# Called by evalstats.moments.prompt_spread.
# =================================================================================================


def two_way_mean_squares(y: np.ndarray) -> tuple[float, float, int, int]:
    """Column and interaction mean squares of a complete rows x columns table (one value per cell).

    ``y`` has shape (items, variants). Returns ``(MS_columns, MS_interaction, df_columns,
    df_interaction)`` with MS_columns = I Σ_v (ȳ.v − ȳ..)² / (V − 1) and MS_interaction =
    Σ (y − ȳi. − ȳ.v + ȳ..)² / ((I − 1)(V − 1)).

    Examples
    --------
    >>> two_way_mean_squares(np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 0.0]]))
    (0.16666666666666666, 0.16666666666666666, 1, 2)
    """
    i, v = y.shape
    row = y.mean(axis=1, keepdims=True)
    col = y.mean(axis=0, keepdims=True)
    grand = float(y.mean())
    df_c, df_i = v - 1, (i - 1) * (v - 1)
    ms_c = float(i * np.sum((col - grand) ** 2) / df_c) if df_c > 0 else float("nan")
    resid = y - row - col + grand
    ms_i = float(np.sum(resid**2) / df_i) if df_i > 0 else float("nan")
    return ms_c, ms_i, df_c, df_i


def mls_interval(
    s1: float, df1: float, s2: float, df2: float, confidence_level: float
) -> tuple[float, float]:
    """Modified large-sample interval for θ = s1 − s2, a difference of independent mean squares.

    ``s1`` and ``s2`` are scaled mean squares (``c1 S1²`` and ``c2 S2²``) with ``df1`` and
    ``df2`` degrees of freedom. Graybill and Wang (1980) / Ting et al. (1990), as in Burdick
    and Graybill (1992, "Confidence Intervals on Variance Components"): with F_{a: m, n} the
    upper-a point,
    G_i = 1 − 1/F_{a: df_i, ∞}, H_i = 1/F_{1−a: df_i, ∞} − 1,
    G12 = ((F_{a: df1, df2} − 1)² − G1² F_{a}² − H2²) / F_{a},
    H12 = ((1 − F_{1−a: df1, df2})² − H1² F_{1−a}² − G2²) / F_{1−a},
    L = θ̂ − sqrt(G1² s1² + H2² s2² + G12 s1 s2), U = θ̂ + sqrt(H1² s1² + G2² s2² + H12 s1 s2),
    a = (1 − confidence_level) / 2. It keeps close to nominal coverage when θ is 0 or near it,
    where Satterthwaite's interval fails. ``df2 = inf`` is allowed.

    Examples
    --------
    >>> lo, hi = mls_interval(0.004, 29, 0.002, 1000, 0.95)
    >>> round(lo, 5), round(hi, 5)
    (0.00052, 0.00523)
    """
    from scipy import stats

    a = (1.0 - confidence_level) / 2.0
    theta = s1 - s2

    def f_inf(q: float, df: float) -> float:  # F quantile with an infinite denominator
        return float(stats.chi2.ppf(q, df) / df)

    def f(q: float) -> float:
        if math.isinf(df2):
            return f_inf(q, df1)
        return float(stats.f.ppf(q, df1, df2))

    g1 = 1.0 - 1.0 / f_inf(1 - a, df1)
    h1 = 1.0 / f_inf(a, df1) - 1.0
    if math.isinf(df2):
        g2 = h2 = 0.0
    else:
        g2 = 1.0 - 1.0 / f_inf(1 - a, df2)
        h2 = 1.0 / f_inf(a, df2) - 1.0
    fa, f1a = f(1 - a), f(a)
    g12 = ((fa - 1.0) ** 2 - g1 * g1 * fa * fa - h2 * h2) / fa
    h12 = ((1.0 - f1a) ** 2 - h1 * h1 * f1a * f1a - g2 * g2) / f1a
    vl = g1 * g1 * s1 * s1 + h2 * h2 * s2 * s2 + g12 * s1 * s2
    vu = h1 * h1 * s1 * s1 + g2 * g2 * s2 * s2 + h12 * s1 * s2
    return theta - math.sqrt(max(vl, 0.0)), theta + math.sqrt(max(vu, 0.0))


# =================================================================================================
# Exact ties before rank-based methods (issue 18)
# Called by evalstats.correlation.
# =================================================================================================

#: Values closer than this times the largest |value| of their column are one tied value.
TIE_RTOL = 1e-12


def snap_ties(x: np.ndarray, rtol: float = TIE_RTOL) -> np.ndarray:
    """``x`` with values that differ only by floating-point noise set exactly equal.

    Sorted neighbours closer than ``rtol * max|x|`` join one run of ties, and every value of a
    run becomes the run's smallest. Accuracies built as float means differ in the last bit
    where the fractions are equal (``0.7 - 0.5`` is 0.19999999999999996, ``0.4 - 0.2`` is
    0.2); ranks would split such ties. NaN stays NaN.

    Examples
    --------
    >>> snap_ties(np.array([0.7 - 0.5, 0.4 - 0.2, 0.3]))
    array([0.2, 0.2, 0.3])
    """
    x = np.asarray(x, dtype=float).copy()
    ok = np.flatnonzero(np.isfinite(x))
    if ok.size < 2:
        return x
    order = ok[np.argsort(x[ok], kind="stable")]
    v = x[order]
    tol = rtol * float(np.max(np.abs(v)))
    new_run = np.concatenate([[True], np.diff(v) > tol])
    starts = np.flatnonzero(new_run)
    run_id = np.cumsum(new_run) - 1
    x[order] = v[starts][run_id]
    return x


# =================================================================================================
# Constant inputs (issue 15)
# Called by evalstats.normality, evalstats.correlation, evalstats.moments, evalstats.attribution.
# =================================================================================================

#: Values whose range is within this share of their scale are one constant value.
CONSTANT_RTOL = 1e-9


def is_constant(x: np.ndarray, *, scale: float | None = None, rtol: float = CONSTANT_RTOL) -> bool:
    """Whether the finite values of ``x`` are equal up to floating-point noise.

    ``max(x) - min(x) <= rtol * s`` with ``s`` the given ``scale`` (e.g. the metric's range) or,
    without one, ``max|x|`` (1 when every value is 0). Accuracies that are the same fraction
    computed in different ways differ in the last bits (ten run accuracies of 0.96 have a
    standard deviation of 2e-16), and a test of ``sd > 0`` then lets a normality test "reject"
    on rounding noise; a relative tolerance does not. Fewer than two finite values count as
    constant.

    Examples
    --------
        >>> x = np.array([0.96] * 9 + [0.9600000000000001])
    >>> float(np.std(x, ddof=1)) > 0, is_constant(x)
    (True, True)
    >>> is_constant(np.array([0.96, 0.97]))
    False
    """
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    if x.size < 2:
        return True
    ptp = float(np.max(x) - np.min(x))
    if scale is None or not (math.isfinite(scale) and scale > 0):
        scale = max(float(np.max(np.abs(x))), 0.0) or 1.0
    return ptp <= rtol * scale
