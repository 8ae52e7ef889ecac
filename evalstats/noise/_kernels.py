"""Numpy-only cores of the variance components (no polars, no I/O).

The data of one group arrive as **cells**: one cell per observed (item, variant) pair, with the
number of runs ``n``, the cell mean and the within-cell sum of squares. Everything below works on
those cell summaries (group sums), never on Python loops over items.

Components, in this order everywhere: ``item``, ``variant``, ``item_variant``, ``residual``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from scipy import linalg, optimize, sparse

__all__ = [
    "COMPONENTS",
    "CellData",
    "Fit",
    "anova_fit",
    "cells_from_arrays",
    "gpq_intervals",
    "reml_fit",
    "reml_objective",
]

COMPONENTS: tuple[str, ...] = ("item", "variant", "item_variant", "residual")
_I, _V, _IV, _E = range(4)


@dataclass(frozen=True)
class CellData:
    """Cell summaries of one group.

    ``item``/``variant`` are 0-based codes of each cell (``n_levels`` levels each); ``n`` the runs
    in the cell, ``mean`` the cell mean, ``ss_within`` the sum of squared deviations from the cell
    mean. ``grand`` is the mean of all observations.
    """

    item: np.ndarray
    variant: np.ndarray
    n: np.ndarray
    mean: np.ndarray
    ss_within: float
    n_items: int
    n_variants: int
    grand: float

    @property
    def n_obs(self) -> int:
        """Number of observations."""
        return int(self.n.sum())

    @property
    def balanced(self) -> bool:
        """Every (item, variant) cell observed, all with the same number of runs."""
        return self.n.size == self.n_items * self.n_variants and bool(np.all(self.n == self.n[0]))

    def identified(self) -> np.ndarray:
        """Which of the four components the design can separate (bool, length 4).

        A factor with one level cannot be separated from its interaction (they are merged into
        the factor that is present); without repeated runs in any cell the interaction and the
        residual are one term (reported as ``residual``).
        """
        a, b = self.n_items > 1, self.n_variants > 1
        reps = bool(np.any(self.n > 1))
        return np.array([a, b, a and b and reps, reps or (a and b)])


def cells_from_arrays(item: np.ndarray, variant: np.ndarray, y: np.ndarray) -> CellData:
    """Cell summaries from per-observation codes (any hashable labels) and scores."""
    _, ic = np.unique(item, return_inverse=True)
    _, vc = np.unique(variant, return_inverse=True)
    y = np.asarray(y, dtype=float)
    a, b = int(ic.max()) + 1, int(vc.max()) + 1
    key = ic.astype(np.int64) * b + vc
    uk, inv = np.unique(key, return_inverse=True)
    n = np.bincount(inv).astype(float)
    s1 = np.bincount(inv, weights=y)
    s2 = np.bincount(inv, weights=y * y)
    mean = s1 / n
    ss = float(np.sum(np.maximum(s2 - s1 * mean, 0.0)))
    return CellData(uk // b, uk % b, n, mean, ss, a, b, float(y.mean()))


# =================================================================================================
# Balanced designs: ANOVA (expected mean squares) estimators and generalized pivotal intervals
# =================================================================================================


@dataclass(frozen=True)
class Fit:
    """Estimates of one group: ``raw`` (untruncated), ``estimate`` (>= 0), interval bounds."""

    raw: np.ndarray
    estimate: np.ndarray
    low: np.ndarray
    high: np.ndarray
    df: np.ndarray
    method: str
    converged: bool = True


def _mean_squares(c: CellData) -> tuple[dict[str, float], dict[str, float]]:
    """Mean squares and degrees of freedom of the balanced crossed design (present terms only)."""
    a, b = c.n_items, c.n_variants
    r = float(c.n[0])
    m = np.empty((a, b))
    m[c.item, c.variant] = c.mean
    g = m.mean()
    mi = m.mean(axis=1)
    mv = m.mean(axis=0)
    ms: dict[str, float] = {}
    df: dict[str, float] = {}
    if a > 1:
        df["i"] = a - 1.0
        ms["i"] = b * r * float(np.sum((mi - g) ** 2)) / df["i"]
    if b > 1:
        df["v"] = b - 1.0
        ms["v"] = a * r * float(np.sum((mv - g) ** 2)) / df["v"]
    if a > 1 and b > 1:
        df["iv"] = (a - 1.0) * (b - 1.0)
        resid = m - mi[:, None] - mv[None, :] + g
        ms["iv"] = r * float(np.sum(resid**2)) / df["iv"]
    if r > 1:
        df["e"] = a * b * (r - 1.0)
        ms["e"] = c.ss_within / df["e"]
    return ms, df


def _ems_solve(ms: dict[str, np.ndarray | float], a: int, b: int, r: float) -> list:
    """Component estimates as linear combinations of (possibly simulated) mean squares.

    ``E[MS_i] = s_e + r s_iv + b r s_i``, ``E[MS_v] = s_e + r s_iv + a r s_v``,
    ``E[MS_iv] = s_e + r s_iv``, ``E[MS_e] = s_e``; a term that is absent is merged as described
    in :meth:`CellData.identified`.
    """
    nan = math.nan
    err = ms.get("iv", ms.get("e", 0.0))  # the term below the main effects
    out: list = [nan, nan, nan, nan]
    if "i" in ms:
        below = ms["iv"] if "iv" in ms else ms.get("e", 0.0)
        out[_I] = (ms["i"] - below) / (b * r)
    if "v" in ms:
        below = ms["iv"] if "iv" in ms else ms.get("e", 0.0)
        out[_V] = (ms["v"] - below) / (a * r)
    if "iv" in ms and "e" in ms:
        out[_IV] = (ms["iv"] - ms["e"]) / r
        out[_E] = ms["e"]
    elif "iv" in ms or "e" in ms:
        out[_E] = err
    return out


def anova_fit(
    c: CellData, *, confidence_level: float, n_resamples: int, rng: np.random.Generator
) -> Fit:
    """ANOVA (expected-mean-squares) estimates of a balanced design, with GPQ intervals."""
    ms, df = _mean_squares(c)
    a, b, r = c.n_items, c.n_variants, float(c.n[0])
    raw = np.array(_ems_solve(ms, a, b, r), dtype=float)
    est = np.where(np.isnan(raw), np.nan, np.maximum(raw, 0.0))
    low, high = gpq_intervals(
        ms, df, a, b, r, confidence_level=confidence_level, n_resamples=n_resamples, rng=rng
    )
    dfs = np.array(
        [
            df.get("i", math.nan),
            df.get("v", math.nan),
            df.get("iv", math.nan) if "e" in df else math.nan,
            df.get("e", df.get("iv", math.nan)),
        ]
    )
    dfs[np.isnan(raw)] = math.nan
    return Fit(raw, est, low, high, dfs, "anova")


def gpq_intervals(
    ms: dict[str, float],
    df: dict[str, float],
    a: int,
    b: int,
    r: float,
    *,
    confidence_level: float,
    n_resamples: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """Generalized-pivot intervals of the components (Weerahandi; Burdick et al. 2005, ch. 4).

    In a balanced normal design the mean squares are independent, ``MS_k ~ E[MS_k] chi2_k/df_k``.
    The pivot of ``E[MS_k]`` is ``df_k ms_k / U_k`` with ``U_k ~ chi2(df_k)``; the pivot of a
    component is the same linear combination of those as its estimator. The interval is the
    ``(1 -+ level)/2`` quantiles of ``n_resamples`` pivot draws, with negative bounds set to 0.
    """
    piv = {k: df[k] * ms[k] / rng.chisquare(df[k], size=n_resamples) for k in ms}
    draws = _ems_solve(piv, a, b, r)
    alpha = 1.0 - confidence_level
    low = np.full(4, math.nan)
    high = np.full(4, math.nan)
    for j, d in enumerate(draws):
        if isinstance(d, np.ndarray):
            lo, hi = np.quantile(d, [alpha / 2, 1 - alpha / 2])
            low[j], high[j] = max(lo, 0.0), max(hi, 0.0)
    return low, high


# =================================================================================================
# Unbalanced designs: REML on cell means (Woodbury on the factor with fewer levels)
# =================================================================================================


def _dense_levels(codes: np.ndarray, n_levels: int) -> np.ndarray:
    return codes if n_levels else np.zeros_like(codes)


def reml_objective(theta: np.ndarray, c: CellData, ident: np.ndarray) -> float:
    """``-2 x`` the REML log-likelihood (up to a constant) at variances ``theta`` (length 4).

    The model is ``y = mu + a_item + b_variant + c_cell + e`` with independent normal terms. The
    likelihood factorises into the within-cell contrasts (``SS_within / s_e ~ chi2``) and the cell
    means, whose covariance is ``D + s_i Z_i Z_i' + s_v Z_v Z_v'`` with
    ``D = diag(s_iv + s_e / n_cell)``. The factor with more levels is block-diagonal (one
    Sherman-Morrison update per level); the other enters by the Woodbury identity, so a call costs
    ``O(cells * q + q^3)`` with ``q`` the smaller number of levels.
    """
    s = np.where(ident, theta, 0.0)
    reps = bool(ident[_IV])  # residual and interaction separately identified
    if reps:
        d = s[_IV] + s[_E] / c.n if ident[_E] else np.full(c.n.shape, s[_IV])
    else:  # one term: the residual variance of a cell mean is s_res / n
        d = s[_E] / c.n
    if np.any(d <= 0):
        return math.inf
    # the factor with more levels is the block factor
    if c.n_items >= c.n_variants:
        blk, nb, sb, wb, nw, sw = c.item, c.n_items, s[_I], c.variant, c.n_variants, s[_V]
    else:
        blk, nb, sb, wb, nw, sw = c.variant, c.n_variants, s[_V], c.item, c.n_items, s[_I]
    w = 1.0 / d
    t = np.bincount(blk, weights=w, minlength=nb)
    one_plus = 1.0 + sb * t
    if np.any(one_plus <= 0):
        return math.inf
    kappa = sb / one_plus
    logdet = float(np.sum(np.log(d)) + np.sum(np.log(one_plus)))
    vecs = np.stack([np.ones_like(c.mean), c.mean])  # X = 1 and y
    wv = w * vecs
    bsum = np.stack([np.bincount(blk, weights=x, minlength=nb) for x in wv])  # (2, nb)
    # W^-1 quadratic forms: sum w a b - sum_k kappa_k (sum_k w a)(sum_k w b)
    q = wv @ vecs.T - (bsum * kappa) @ bsum.T
    if nw > 1 and sw != 0.0:
        # Z'W^-1 Z and Z'W^-1 a through the (blocks x levels) matrix of the weights, sparse: one
        # entry a cell (a dense one cost O(blocks x levels^2) a call, 40 ms at 5,000 x 200)
        m = sparse.csr_matrix((w, (blk, wb)), shape=(nb, nw))
        mk = sparse.csr_matrix((w * kappa[blk], (blk, wb)), shape=(nb, nw))
        ztwz = np.diag(np.bincount(wb, weights=w, minlength=nw)) - (m.T @ mk).toarray()
        zw = (
            np.stack([np.bincount(wb, weights=x, minlength=nw) for x in wv])
            - (m.T @ (bsum * kappa).T).T
        )  # (2, nw): Z'W^-1 a
        bmat = np.eye(nw) + sw * ztwz
        try:
            cf = linalg.cho_factor(bmat, lower=True, check_finite=False)
        except linalg.LinAlgError:
            return math.inf
        logdet += 2.0 * float(np.sum(np.log(np.diag(cf[0]))))
        q = q - sw * zw @ linalg.cho_solve(cf, zw.T, check_finite=False)
    xvx, xvy, yvy = q[0, 0], q[0, 1], q[1, 1]
    if xvx <= 0:
        return math.inf
    out = logdet + math.log(xvx) + (yvy - xvy * xvy / xvx)
    df_w = float(c.n.sum() - c.n.size)
    if df_w > 0 and ident[_E]:
        if s[_E] <= 0:
            return math.inf
        out += df_w * math.log(s[_E]) + c.ss_within / s[_E]
    return float(out)


def _moment_start(c: CellData, ident: np.ndarray) -> np.ndarray:
    """Rough starting values: split the total variance evenly, residual from within cells."""
    total = float(np.var(c.mean)) + c.ss_within / max(c.n.sum(), 1.0)
    total = total if total > 0 else 1.0
    start = np.where(ident, total / max(int(ident.sum()), 1), 0.0)
    df_w = c.n.sum() - c.n.size
    if df_w > 0 and c.ss_within > 0:
        start[_E] = c.ss_within / df_w
    return start


def reml_fit(
    c: CellData, *, confidence_level: float, hessian: bool = True, max_iter: int = 500
) -> Fit:
    """REML estimates (bounded at 0) with log-scale Wald intervals from the observed information.

    The optimisation runs on the scores scaled to unit variance: L-BFGS-B on standard deviations
    (``variance = sd^2``, ``sd >= 0``; the residual on the log scale, see :func:`_floor_term`),
    then Newton steps on the variances. A fit that does not meet the first-order conditions
    (:func:`_stationary`) is restarted from the residual and from the items carrying most of
    the variance; the lowest objective is kept, and ``converged`` says whether it is a
    stationary point.
    """
    ident = c.identified()
    if ident[_E] and not ident[_IV] and c.ss_within <= 0.0 and bool(np.any(c.n > 1)):
        return _one_factor_without_noise(c, ident, confidence_level)
    if ident[_I] and ident[_V] and c.ss_within <= 0.0 and (exact := _additive_effects(c)):
        return _additive_without_noise(exact, ident, confidence_level)
    fixed_zero_e = bool(ident[_IV] and c.ss_within <= 0.0)
    if fixed_zero_e:
        # repeated runs that never differ: the residual is 0 exactly (the likelihood is unbounded
        # there); fit the rest with the residual held at 0
        ident = ident.copy()
        ident[_E] = False
    scale = float(np.sqrt(np.var(c.mean) + c.ss_within / max(c.n.sum(), 1.0)))
    scale = scale if scale > 0 else 1.0
    cs = CellData(
        c.item,
        c.variant,
        c.n,
        (c.mean - c.grand) / scale,
        c.ss_within / scale**2,
        c.n_items,
        c.n_variants,
        0.0,
    )
    idx = np.flatnonzero(ident)
    fv = lambda v: reml_objective(_embed(v, idx), cs, ident)  # noqa: E731 - in variances
    best = None
    for start in _starts(cs, ident, idx):
        th = _newton(fv, _quasi_newton(fv, start, _floor_term(ident, idx), max_iter))
        th = _off_the_boundary(fv, th)
        val = fv(th)
        if best is None or val < best[1] - 1e-9:
            best = (th, val)
        if _stationary(fv, th):
            break
    th = best[0]
    converged = _stationary(fv, th)
    theta = np.full(4, math.nan)
    theta[idx] = th * scale**2
    if fixed_zero_e:
        theta[_E] = 0.0
    est = theta.copy()
    low = np.full(4, math.nan)
    high = np.full(4, math.nan)
    if hessian:
        low, high = _wald(theta, idx, cs, ident, scale, confidence_level)
    if fixed_zero_e:
        low[_E] = high[_E] = 0.0
    return Fit(est, est, low, high, np.full(4, math.nan), "reml", converged)


def _one_factor_without_noise(c: CellData, ident: np.ndarray, confidence_level: float) -> Fit:
    """One factor (items, or variants of a unit table) whose repeated runs never differ.

    The residual is 0 exactly (the REML likelihood grows without bound as it falls to 0, so no
    optimiser stops: the llm-stability runs at temperature 0 read "residual 0.024 = item
    0.024", the even split it started from). The cell means are then independent with the
    factor's variance, whose REML estimate is their sample variance (``ddof = 1``), with the
    interval of :func:`_variance_interval`.
    """
    j = _I if ident[_I] else _V
    k = c.mean.size
    est = np.full(4, math.nan)
    low = np.full(4, math.nan)
    high = np.full(4, math.nan)
    var = float(np.var(c.mean, ddof=1)) if k > 1 else math.nan
    est[j], est[_E] = var, 0.0
    low[_E] = high[_E] = 0.0
    if k > 1:
        low[j], high[j] = _variance_interval(c.mean, confidence_level)
    return Fit(est, est, low, high, np.full(4, math.nan), "reml", True)


def _variance_interval(values: np.ndarray, confidence_level: float) -> tuple[float, float]:
    """Interval of the variance of the distribution ``values`` (k >= 2) are a sample of.

    The normal-theory chi-square interval assumes normal values; the values here are scores,
    often 0/1. Simulated (3,000 samples a case, 95 %; docs/methods/noise.md): for 0/1 values
    with p = 0.05 the chi-square interval covered 0.38-0.64 of the true p(1 - p), at p = 0.5
    it covered 1.00 (too wide); on Beta(0.5, 0.5) scores 0.999. So:

    - two distinct values {lo, hi}: the variance is (hi - lo)^2 p (1 - p), and its interval
      the range of that function over the Jeffreys interval of p (it covers whenever that
      does: exactly 0.941-0.975 over p in 0.05-0.9 and 20-200 values, the samples with both
      values; Wilson's fell to 0.88 at p = 0.05 and 20 values);
    - more values, k >= 5: Bonett's (2006) interval on the log scale with the sample kurtosis
      (0.94-0.96 on Beta and normal scores);
    - k < 5: the chi-square interval (a kurtosis from four values is noise).
    """
    from scipy import stats

    y = np.asarray(values, dtype=float)
    k = y.size
    var = float(np.var(y, ddof=1))
    if var <= 0.0:
        return 0.0, 0.0
    alpha = 1.0 - confidence_level
    z = float(stats.norm.ppf(1 - alpha / 2))
    distinct = np.unique(y)
    if distinct.size == 2:
        span2 = float(distinct[1] - distinct[0]) ** 2
        m = int(np.sum(y == distinct[1]))  # 0 < m < k
        lo = float(stats.beta.ppf(alpha / 2, m + 0.5, k - m + 0.5))
        hi = float(stats.beta.ppf(1 - alpha / 2, m + 0.5, k - m + 0.5))
        f = lambda p: span2 * p * (1.0 - p)  # noqa: E731
        return min(f(lo), f(hi)), f(min(max(0.5, lo), hi))
    if k < 5:
        return (
            (k - 1) * var / float(stats.chi2.ppf(1 - alpha / 2, k - 1)),
            (k - 1) * var / float(stats.chi2.ppf(alpha / 2, k - 1)),
        )
    centre_m = float(stats.trim_mean(y, 1.0 / (2.0 * math.sqrt(k - 4))))
    dev = y - y.mean()
    kurt = k * float(np.sum((y - centre_m) ** 4)) / float(np.sum(dev * dev)) ** 2
    c = k / (k - z)
    se = c * math.sqrt(max(kurt - (k - 3) / k, 0.0) / (k - 1))
    return c * var * math.exp(-z * se), c * var * math.exp(z * se)


def _additive_effects(c: CellData) -> tuple[np.ndarray, np.ndarray] | None:
    """The item and variant effects when the cell means are exactly ``mu + a_i + b_v``.

    Two runs of a deterministic model over overlapping document sets score every shared
    document the same (lm-eval truthfulqa_gen, 20 of 60 documents twice): no interaction and no
    residual, and REML's likelihood grows without bound as they fall to 0. The old optimiser
    stopped at "variant 74.5, residual 4.3" there. Returns the least-squares effects (their
    contrasts are unique) when the additive fit leaves no residual and the items and variants
    form one connected design; None otherwise.
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components
    from scipy.sparse.linalg import lsqr

    a, b, m = c.n_items, c.n_variants, c.mean.size
    graph = coo_matrix((np.ones(m), (c.item, a + c.variant)), shape=(a + b, a + b))
    if connected_components(graph, directed=False)[0] != 1:
        return None
    y = c.mean - c.mean.mean()
    total = float(np.sum(y * y))
    if total <= 0.0:
        return None
    rows = np.r_[np.arange(m), np.arange(m)]
    x = coo_matrix((np.ones(2 * m), (rows, np.r_[c.item, a + c.variant])), shape=(m, a + b))
    sol = lsqr(x.tocsr(), y, atol=1e-14, btol=1e-14, iter_lim=10 * (a + b))[0]
    resid = y - x @ sol
    if float(np.sum(resid * resid)) > 1e-20 * total:
        return None
    return sol[:a], sol[a:]


def _additive_without_noise(
    effects: tuple[np.ndarray, np.ndarray], ident: np.ndarray, confidence_level: float
) -> Fit:
    """Components of exactly additive cell means: no interaction, no residual.

    Each factor's variance is the sample variance (``ddof = 1``) of its effects, with the
    interval of :func:`_variance_interval`. The effects are known exactly up to one shared
    constant (the intercept absorbs it), so each factor's likelihood is that of its contrasts:
    ``k - 1`` degrees of freedom.
    """
    est = np.full(4, math.nan)
    low = np.full(4, math.nan)
    high = np.full(4, math.nan)
    for j, eff in ((_I, effects[0]), (_V, effects[1])):
        v = float(np.var(eff, ddof=1))
        if v > 1e-24 * max(1.0, float(np.max(np.abs(eff))) ** 2):
            est[j] = v
            # effects equal up to rounding count as one value
            low[j], high[j] = _variance_interval(np.round(eff, 12), confidence_level)
        else:
            est[j] = low[j] = high[j] = 0.0
    for j in (_IV, _E):
        if ident[j]:
            est[j] = low[j] = high[j] = 0.0
    return Fit(est, est, low, high, np.full(4, math.nan), "reml", True)


def _embed(v: np.ndarray, idx: np.ndarray) -> np.ndarray:
    th = np.zeros(4)
    th[idx] = v
    return th


def _floor_term(ident: np.ndarray, idx: np.ndarray) -> int | None:
    """Position in ``idx`` of the component the likelihood needs positive, if any.

    The cell means' diagonal is ``s_iv + s_e / n`` (the residual alone with one run a cell): a
    residual of 0 makes the likelihood infinite, so that component is optimised on the log
    scale. On the standard-deviation scale with a bound at 0, a quasi-Newton step that reached
    the bound met an infinite value and stopped after two iterations, the prompt variance left
    at its starting value (a 5 % MMLU grid: 0.046 for a true 0.0001).
    """
    j = _E if ident[_E] else (_IV if ident[_IV] else None)
    if j is None:
        return None
    pos = np.flatnonzero(idx == j)
    return int(pos[0]) if pos.size else None


def _quasi_newton(fv, start: np.ndarray, floor: int | None, max_iter: int) -> np.ndarray:
    """L-BFGS-B from ``start``: standard deviations (bounded at 0), the floor term's log sd."""

    def to_var(x: np.ndarray) -> np.ndarray:
        v = x * x
        if floor is not None:
            v[floor] = math.exp(min(2.0 * float(x[floor]), 700.0))
        return v

    x0 = np.sqrt(np.maximum(start, 0.0))
    bounds = [(0.0, None)] * x0.size
    if floor is not None:
        x0[floor] = 0.5 * math.log(max(start[floor], 1e-12))
        bounds[floor] = (None, None)
    with np.errstate(invalid="ignore", over="ignore"), warnings.catch_warnings():
        # finite differences next to an infeasible point (inf) give NaN; L-BFGS-B backs off
        warnings.simplefilter("ignore", RuntimeWarning)
        res = optimize.minimize(
            lambda x: fv(to_var(x)),
            x0,
            method="L-BFGS-B",
            bounds=bounds,
            options={"ftol": 1e-10, "gtol": 1e-9, "maxiter": max_iter, "maxcor": 20},
        )
    return to_var(np.asarray(res.x, dtype=float))


def _starts(cs: CellData, ident: np.ndarray, idx: np.ndarray) -> Iterator[np.ndarray]:
    """Starting points: the even split, then the residual and then the items carrying most."""
    first = _moment_start(cs, ident)[idx]
    yield first
    total = float(first.sum()) or 1.0
    for heavy in (_E, _I):
        if not ident[heavy]:
            continue
        v = np.full(idx.size, 0.05 * total / max(idx.size - 1, 1))
        v[np.flatnonzero(idx == heavy)] = 0.95 * total
        yield v


def _stationary(fv, th: np.ndarray, tol: float = 1e-2) -> bool:
    """The first-order conditions of a minimum over ``th >= 0``.

    Interior components: ``|d f / d log v| <= tol`` (``f`` is -2 REML, so a log-likelihood slope
    of at most 0.005 per unit of log variance); components at 0: the objective does not fall
    one small step off the boundary.
    """
    total = float(np.sum(th)) or 1.0
    base = fv(th)
    if not math.isfinite(base):
        return False
    for j in range(th.size):
        if th[j] <= 1e-10 * total:
            step = th.copy()
            step[j] = 1e-6 * total
            if fv(step) < base - 1e-6:
                return False
            continue
        h = 1e-4
        up, down = th.copy(), th.copy()
        up[j] *= math.exp(h)
        down[j] *= math.exp(-h)
        if abs(fv(up) - fv(down)) / (2 * h) > tol:
            return False
    return True


def _off_the_boundary(fv, th: np.ndarray, rounds: int = 4) -> np.ndarray:
    """Move components stuck at 0 to where the REML optimum puts them.

    On the standard-deviation scale the gradient of a component at 0 is 0 whatever the
    likelihood does, so a quasi-Newton run started away from 0 can stop there while the optimum
    is positive (an item x variant variance of 0.014 left at 0, 0.004 log-likelihood units
    short). For each component at 0 the objective one step off the boundary is compared with
    the boundary; where it falls, a bounded line search on that variance finds its optimum, and
    Newton steps refine all components together. Components whose optimum is 0 stay there.
    """
    th = np.asarray(th, dtype=float).copy()
    total = float(np.sum(th)) or 1.0
    for _ in range(rounds):
        moved = False
        base = fv(th)
        for j in np.flatnonzero(th <= 1e-12 * total):
            step = th.copy()
            step[j] = 1e-6 * total
            if not fv(step) < base - 1e-12:
                continue

            def along(v: float, _j: int = j, _th: np.ndarray = th) -> float:
                t = _th.copy()
                t[_j] = v
                return fv(t)

            r = optimize.minimize_scalar(
                along, bounds=(0.0, total), method="bounded", options={"xatol": 1e-10 * total}
            )
            if r.fun < base:
                th[j] = float(r.x)
                base = float(r.fun)
                moved = True
        if not moved:
            break
        th = _newton(fv, th)
    return th


def _fd_grad_hess(f, x: np.ndarray, h: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """Central-difference value, gradient and Hessian of ``f`` at ``x`` (steps ``h``)."""
    k = x.size
    f0 = f(x)
    g = np.empty(k)
    hess = np.empty((k, k))
    fp = np.empty(k)
    fm = np.empty(k)
    for i in range(k):
        e = np.zeros(k)
        e[i] = h[i]
        fp[i], fm[i] = f(x + e), f(x - e)
        g[i] = (fp[i] - fm[i]) / (2 * h[i])
        hess[i, i] = (fp[i] - 2 * f0 + fm[i]) / h[i] ** 2
    for i in range(k):
        for j in range(i + 1, k):
            ei = np.zeros(k)
            ej = np.zeros(k)
            ei[i], ej[j] = h[i], h[j]
            hess[i, j] = hess[j, i] = (
                f(x + ei + ej) - f(x + ei - ej) - f(x - ei + ej) + f(x - ei - ej)
            ) / (4 * h[i] * h[j])
    return f0, g, hess


def _steps(x: np.ndarray) -> np.ndarray:
    return np.maximum(1e-4 * np.abs(x), 1e-6 * max(float(np.max(np.abs(x))), 1e-8))


def _newton(f, x: np.ndarray, max_iter: int = 20) -> np.ndarray:
    """Newton iterations for a minimum of ``f`` over ``x >= 0`` (components at 0 stay there)."""
    x = x.copy()
    for _ in range(max_iter):
        free = x > 1e-10 * max(float(x.max()), 1e-12)
        if not free.any():
            break
        xf = x[free]

        def fs(v: np.ndarray, _free=free) -> float:
            full = x.copy()
            full[_free] = v
            return f(full)

        f0, g, hess = _fd_grad_hess(fs, xf, _steps(xf))
        if not (np.all(np.isfinite(g)) and np.all(np.isfinite(hess))):
            break
        try:
            step = np.linalg.solve(hess, g)
        except np.linalg.LinAlgError:
            break
        if np.any(np.linalg.eigvalsh(hess) <= 0):
            break
        if 0.5 * float(g @ step) < 1e-10:
            # the Newton decrement: the objective is within 1e-10 of the local quadratic's
            # minimum (further steps chased the finite differences' rounding)
            break
        t = 1.0
        while t > 1e-4:
            cand = np.maximum(xf - t * step, 0.0)
            if fs(cand) <= f0:
                break
            t /= 2
        else:
            break
        x[free] = cand
        if np.max(np.abs(t * step)) <= 1e-11 * max(float(xf.max()), 1e-12):
            break
    return x


def _wald(
    theta: np.ndarray,
    idx: np.ndarray,
    cs: CellData,
    ident: np.ndarray,
    scale: float,
    confidence_level: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Log-scale Wald intervals from a central-difference Hessian of -2 REML (variance scale)."""
    from statistics import NormalDist

    th = theta[idx] / scale**2

    def f(x: np.ndarray) -> float:
        full = np.zeros(4)
        full[idx] = x
        return reml_objective(full, cs, ident)

    _, _, hess = _fd_grad_hess(f, th, _steps(th))
    low = np.full(4, math.nan)
    high = np.full(4, math.nan)
    if not np.all(np.isfinite(hess)):
        return low, high
    try:
        cov = 2.0 * np.linalg.inv(hess)  # hess is of -2 loglik
    except np.linalg.LinAlgError:
        return low, high
    z = NormalDist().inv_cdf(0.5 + confidence_level / 2)
    se = np.sqrt(np.maximum(np.diag(cov), 0.0))
    for j, comp in enumerate(idx):
        v, s = th[j], se[j]
        if v > 1e-8 * max(th.max(), 1e-12) and np.isfinite(s) and z * s / v > 700:
            # a standard error 10^300 times the estimate (a damaged tiny table): the log-scale
            # interval is all of (0, inf); exp() would overflow
            low[comp], high[comp] = 0.0, math.inf
        elif v > 1e-8 * max(th.max(), 1e-12) and np.isfinite(s):
            f_ = math.exp(z * s / v)
            low[comp], high[comp] = v / f_, v * f_
        else:  # on the boundary: one-sided bound from the variance-scale standard error
            low[comp], high[comp] = 0.0, max(v, 0.0) + z * s
    return low * scale**2, high * scale**2
