r"""The variance of a mean under the design: items (in clusters), prompt variants, runs.

One variance model serves the interval of a mean score and of a paired difference. A group's
scores are cells: item ``i`` (in cluster ``g``) under prompt variant ``p``, each cell the mean of
its runs. The estimate is the mean over items of each item's mean over its cells,
:math:`\bar y = \frac1I \sum_i \bar y_i`. Under the crossed random-effects model

.. math:: y_{ipr} = \mu + c_g + a_i + b_p + (ab)_{ip} + e_{ipr}

(clusters, items, prompts, their interaction and runs random) its variance is the sum of two
parts:

* the **item part** :math:`\mathrm{Var}(\bar y \mid \text{prompts})`: estimated from the item
  means :math:`\bar y_i` alone, by :math:`s^2/I` with :math:`I-1` degrees of freedom for
  independent items, or, with clusters, by the CR2 cluster-robust estimator with the
  Bell-McCaffrey degrees of freedom (small-sample corrected; CR1 with :math:`G-1` df
  under-covers with few or unequal clusters). It carries the cluster, item, interaction and run
  variance;
* the **prompt part** (when the target is the mean over the prompt space, the ReliableEval
  view): :math:`\sigma^2_P \sum_p w_p^2`, :math:`w_p = \sum_{i \ni p} 1/(k_i I)` (:math:`1/P`
  when every item has every prompt). :math:`\sigma^2_P` is a moment estimate from the additive
  two-way fit of the cells (item and prompt effects): the variance of the prompt effects less
  their estimation noise, truncated at 0. On a complete grid it is the ANOVA estimate
  :math:`(MS_P - MS_{IP})/I`, and the whole variance is
  :math:`(MS_I + MS_P - MS_{IP})/(IP)`, the textbook unbiased estimate.

Degrees of freedom: Satterthwaite over the item part and the mean squares the prompt part is
built from (the prompt effects on :math:`P-1` df, the residual on its df), **also when**
:math:`\hat\sigma^2_P` **is truncated at 0**: the df is continuous in the data and does not jump
to the item df at the boundary (with 5 prompts the estimate sits at 0 in about a fifth of the
samples where the true component is not 0, and a t on the item df then rejected 10 times too
often at :math:`\alpha` = 0.0005). A paired comparison of several models also floors each
pair's :math:`\hat\sigma^2_P` at the mean over the group's pairs (:meth:`MeanVariance.floored`):
a pair whose own 4-df estimate is small by chance does not get a small variance. Only the cells
observed are used: sparse grids (an item under some of the prompts) and runs of different
lengths need no dropping.

**Binary scores.** The Wilson-type interval keeps its boundary behaviour with the design's
variance through an effective sample size :math:`n_{eff} = \hat p(1-\hat p)/V` scaled by
:math:`(z/t_\nu)^2` (Korn and Graubard 1998); at :math:`\hat p` = 0 or 1 the number of top
units (clusters, else items) stands in for :math:`n_{eff}`, so no interval has zero width.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np
from scipy import optimize, stats
from scipy.stats import qmc

from evalstats._ordered import dense_inverse

#: Points of the generalized pivot's integral (``generalized_variances``): a scrambled Sobol'
#: set with a fixed seed, so the p-values are the same on every run (relative error of a
#: p-value near 0.0005 about 1 %, measured against 2**20 points).
GENERALIZED_POINTS = 2**14

__all__ = [
    "MeanVariance",
    "cr2_variance",
    "design_variance",
    "generalized_interval",
    "generalized_pvalue",
    "generalized_variances",
    "prompt_part",
    "wilson_effective",
]


@dataclass(frozen=True, slots=True)
class MeanVariance:
    """Estimate, variance and degrees of freedom of a mean under the design."""

    mean: float
    var: float
    df: float
    var_items: float
    var_prompts: float
    n_items: int
    n_clusters: int | None
    n_prompts: int
    n_cells: int
    #: The pieces the prompt part and the df are built from (NaN/0 without a prompt part):
    #: the item part's df, the untruncated moment estimate of sigma^2_P, its weight
    #: sum_p w_p^2 and the Satterthwaite pieces of the prompt mean squares.
    df_items: float = math.nan
    prompt_sigma2: float = math.nan
    prompt_weight: float = 0.0
    prompt_pieces: float = 0.0
    #: ``(W var_b, W noise, df_res)``: the prompt part before truncation is
    #: ``W var_b - W noise``, the first on ``n_prompts - 1`` df, the second on ``df_res``.
    prompt_terms: tuple[float, float, float] = (0.0, 0.0, 0.0)
    #: Whether ``floored`` raised the prompt variance to a group's mean (``pool_prompt_part``).
    pooled: bool = False

    @property
    def se(self) -> float:
        """Standard error (NaN when the variance is)."""
        return math.sqrt(self.var) if self.var >= 0 else math.nan

    def floored(self, floor: float) -> MeanVariance:
        r"""The same estimate with :math:`\hat\sigma^2_P` at least ``floor``.

        The variance becomes :math:`V_I + W \max(\hat\sigma^2_P, \text{floor}, 0)`; the df
        stays Satterthwaite over this pair's own pieces (so a floor taken from other pairs
        widens the interval without claiming their degrees of freedom).
        """
        if not self.prompt_weight or not math.isfinite(self.prompt_sigma2):
            return self
        sigma2 = max(self.prompt_sigma2, floor if math.isfinite(floor) else 0.0, 0.0)
        var_p = self.prompt_weight * sigma2
        var = self.var_items + var_p
        df = _satterthwaite(var, self.var_items, self.df_items, self.prompt_pieces)
        return replace(self, var=var, var_prompts=var_p, df=df, pooled=True)


def _satterthwaite(var: float, var_i: float, df_i: float, pieces: float) -> float:
    """Satterthwaite df of ``var`` from the item part and the prompt pieces."""
    denom = (var_i**2 / df_i if df_i and df_i > 0 else 0.0) + pieces
    return float(var**2 / denom) if denom > 0 else float(df_i)


def cr2_variance(y: np.ndarray, clusters: np.ndarray) -> tuple[float, float, int]:
    r"""CR2 variance of the mean of ``y`` with clusters, its Bell-McCaffrey df, and ``G``.

    For the mean (an intercept-only regression) the CR2 adjustment of cluster ``g`` of size
    :math:`n_g` is the factor :math:`a_g = (1 - n_g/n)^{-1/2}` on its residual sum, so
    :math:`V = \sum_g a_g^2 (\sum_{i \in g} e_i)^2 / n^2`; the Bell-McCaffrey df is
    :math:`(\mathrm{tr} M)^2/\mathrm{tr}(M^2)` with
    :math:`n^2 M = \mathrm{diag}(a_g^2 n_g) - u u^T/n`, :math:`u_g = a_g n_g`. With clusters of
    one item each it is :math:`s^2/n` on :math:`n-1` df.

    Examples
    --------
    >>> y = np.array([0.2, 0.4, 0.9, 0.7, 0.1, 0.3])
    >>> v, df, g = cr2_variance(y, np.arange(6))
    >>> bool(np.isclose(v, y.var(ddof=1) / 6)), float(df), g
    (True, 5.0, 6)
    """
    y = np.asarray(y, dtype=float)
    n = y.size
    g, codes = dense_inverse(clusters)
    if g < 2:
        return math.nan, math.nan, g
    sizes = np.bincount(codes, minlength=g).astype(float)
    sums = np.bincount(codes, weights=y - y.mean(), minlength=g)
    a2 = 1.0 / (1.0 - sizes / n)
    var = float(np.sum(a2 * sums**2)) / n**2
    s = a2 * sizes
    u2 = a2 * sizes**2
    trace = float(np.sum(s) - np.sum(u2) / n)
    frob = float(np.sum(s**2) - 2.0 * np.sum(s * u2) / n + np.sum(u2) ** 2 / n**2)
    df = trace**2 / frob if frob > 0 else math.nan
    return var, df, g


def _additive_fit(
    item: np.ndarray, prompt: np.ndarray, y: np.ndarray, n_i: int, n_p: int, iters: int = 200
) -> tuple[np.ndarray, np.ndarray, float]:
    """Item and prompt effects of the additive two-way model (alternating means), residual SS."""
    grand = float(y.mean())
    a = np.zeros(n_i)
    b = np.zeros(n_p)
    cnt_i = np.bincount(item, minlength=n_i).astype(float)
    cnt_p = np.bincount(prompt, minlength=n_p).astype(float)
    prev = math.inf
    for _ in range(iters):
        a = np.bincount(item, weights=y - grand - b[prompt], minlength=n_i) / cnt_i
        b = np.bincount(prompt, weights=y - grand - a[item], minlength=n_p) / cnt_p
        b -= b.mean()
        rss = float(np.sum((y - grand - a[item] - b[prompt]) ** 2))
        if abs(prev - rss) <= 1e-14 * max(1.0, rss):
            break
        prev = rss
    return a, b, rss


def _prompt_fit(
    item: np.ndarray, prompt: np.ndarray, y: np.ndarray
) -> tuple[float, float, float, float, int, tuple[float, float, float]]:
    """``(sigma2, W, piece_b, piece_r, n_prompts, (W var_b, W noise, df_res))``.

    The untruncated estimate, its Satterthwaite pieces, and the two mean-square terms it is
    the difference of (the prompt effects' on ``n_prompts - 1`` df, the residual's on
    ``df_res``), for generalized inference (:func:`generalized_draws`).
    """
    n_i, item = dense_inverse(item)
    n_p, prompt = dense_inverse(prompt)
    if n_p < 2 or n_i < 2:
        return math.nan, 0.0, 0.0, 0.0, n_p, (0.0, 0.0, 0.0)
    _, b, rss = _additive_fit(item, prompt, y, n_i, n_p)
    m_p = np.bincount(prompt, minlength=n_p).astype(float)
    k_i = np.bincount(item, minlength=n_i).astype(float)
    df_res = y.size - n_i - n_p + 1
    w = np.bincount(prompt, weights=1.0 / (k_i[item] * n_i), minlength=n_p)
    big_w = float(np.sum(w**2))
    var_b = float(np.var(b, ddof=1))
    noise = float(np.mean((rss / df_res) / m_p)) if df_res > 0 else 0.0
    piece_b = (big_w * var_b) ** 2 / (n_p - 1)
    piece_r = (big_w * noise) ** 2 / df_res if df_res > 0 else 0.0
    terms = (big_w * var_b, big_w * noise, float(max(df_res, 0)))
    return var_b - noise, big_w, piece_b, piece_r, n_p, terms


def prompt_part(
    item: np.ndarray, prompt: np.ndarray, y: np.ndarray
) -> tuple[float, float, float, int]:
    r"""The prompt part of the variance of the mean, and its Satterthwaite pieces.

    Returns ``(var, piece_effects, piece_residual, n_prompts)``: ``var`` is
    :math:`\hat\sigma^2_P \sum_p w_p^2` (0 when the estimate is negative), the pieces are
    :math:`(W\,\widehat{\mathrm{var}}(b))^2/(P-1)` and
    :math:`(W\,\overline{\hat\sigma^2_{res}/m_p})^2/\nu_{res}`, whose sum divides
    :math:`V^2` in the Satterthwaite df (:math:`W = \sum_p w_p^2`). The pieces are given also
    when the estimate is truncated at 0: the mean squares were estimated all the same, and
    leaving them out made the df jump to the item df at the boundary (liberal tails).
    """
    sigma2, big_w, piece_b, piece_r, n_p, _ = _prompt_fit(item, prompt, y)
    if not big_w:
        return 0.0, 0.0, 0.0, n_p
    return big_w * max(sigma2, 0.0), piece_b, piece_r, n_p


def design_variance(
    item: np.ndarray,
    prompt: np.ndarray,
    y: np.ndarray,
    *,
    clusters: np.ndarray | None = None,
    prompt_space: bool = True,
) -> MeanVariance:
    """The mean of the item means of cells ``y`` and its variance under the design.

    Parameters
    ----------
    item, prompt : numpy.ndarray
        Item and prompt-variant label of each cell (one cell per observed pair).
    y : numpy.ndarray
        Cell scores (each the mean of the cell's runs).
    clusters : numpy.ndarray, optional
        Cluster label of each cell (constant within an item).
    prompt_space : bool, default True
        Whether the target is the mean over the prompt space (prompts random: the prompt part
        is added) or over the recorded prompts (conditional on them: the item part alone).
    """
    y = np.asarray(y, dtype=float)
    n_i, ic = dense_inverse(item)
    k_i = np.bincount(ic, minlength=n_i).astype(float)
    item_means = np.bincount(ic, weights=y, minlength=n_i) / k_i
    mean = float(item_means.mean()) if n_i else math.nan
    n_prompts = dense_inverse(prompt)[0]
    n_clusters = None
    if clusters is not None:
        first = np.full(n_i, -1, dtype=np.int64)
        first[ic] = dense_inverse(clusters)[1]
        var_i, df_i, n_clusters = cr2_variance(item_means, first)
    elif n_i >= 2:
        var_i, df_i = float(np.var(item_means, ddof=1)) / n_i, float(n_i - 1)
    else:
        var_i, df_i = math.nan, math.nan
    var_p = pieces = big_w = 0.0
    sigma2 = math.nan
    terms = (0.0, 0.0, 0.0)
    if prompt_space and n_prompts >= 2 and n_i >= 2:
        sigma2, big_w, piece_b, piece_r, _, terms = _prompt_fit(item, prompt, y)
        var_p = big_w * max(sigma2, 0.0)
        pieces = piece_b + piece_r
    var = var_i + var_p
    df = _satterthwaite(var, var_i, df_i, pieces)
    return MeanVariance(
        mean=mean,
        var=var,
        df=float(df),
        var_items=var_i,
        var_prompts=var_p,
        n_items=n_i,
        n_clusters=n_clusters,
        n_prompts=n_prompts,
        n_cells=int(y.size),
        df_items=float(df_i),
        prompt_sigma2=float(sigma2),
        prompt_weight=float(big_w),
        prompt_pieces=float(pieces),
        prompt_terms=terms,
    )


@lru_cache(maxsize=1)
def _uniforms() -> np.ndarray:
    """The fixed quasi-random points in (0, 1)^3 of the generalized pivots."""
    u = qmc.Sobol(d=3, scramble=True, seed=20240607).random(GENERALIZED_POINTS)
    return np.clip(u, 1e-12, 1 - 1e-12)


def generalized_variances(mv: MeanVariance) -> np.ndarray:
    r"""Draws of the generalized pivotal quantity of the variance of ``mv``'s mean.

    Each estimated mean square ``m`` on ``f`` df stands for its true value through
    :math:`m f / \chi^2_f` (Weerahandi 1993; Tsui and Weerahandi 1989): the item part
    :math:`V_I` on its df, the prompt part :math:`W\,\widehat{\mathrm{var}}(b)` on
    :math:`P-1` df less the residual's on its df, truncated at 0 draw by draw,

    .. math:: V^* = V_I \frac{\nu_I}{\chi^2_{\nu_I}}
       + \max\Big(0,\; W\widehat{\mathrm{var}}(b)\frac{P-1}{\chi^2_{P-1}}
       - W\,\overline{\hat\sigma^2_{res}/m_p}\,\frac{\nu_{res}}{\chi^2_{\nu_{res}}}\Big).

    The pivot keeps what a plug-in Satterthwaite df loses: a prompt variance estimated on 4 df
    that is near 0 by chance still has a long upper tail. Without a prompt part the
    generalized p-value is the t test's on the item df (up to the integration error).
    """
    df_i = mv.df_items if math.isfinite(mv.df_items) and mv.df_items > 0 else math.inf
    v = mv.var_items * _scaled_chi2(0, df_i)
    a, b, df_r = mv.prompt_terms
    df_p = mv.n_prompts - 1
    if a > 0 and df_p >= 1:
        part = a * _scaled_chi2(1, float(df_p))
        if b > 0 and df_r > 0:
            part = part - b * _scaled_chi2(2, float(df_r))
        v = v + np.maximum(part, 0.0)
    return v


@lru_cache(maxsize=256)
def _scaled_chi2(k: int, df: float) -> np.ndarray:
    """``df / chi2_df`` at the fixed points of coordinate ``k`` (1 for an infinite df)."""
    u = _uniforms()[:, k]
    out = np.ones(u.size) if math.isinf(df) else df / stats.chi2.ppf(u, df)
    out.flags.writeable = False
    return out


def _tail(h: float, s: np.ndarray) -> float:
    """Mean over the pivot's draws of P(Z > h / s)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(s > 0, h / s, math.copysign(math.inf, h) if h else 0.0)
    return float(stats.norm.sf(z).mean())


def generalized_pvalue(diff: float, draws: np.ndarray, alternative: str) -> float:
    r"""Generalized p-value of "the mean is 0" from the variance pivot's ``draws``.

    Two-sided: the mean over the draws of :math:`2\,P(Z > |\bar d|/\sqrt{V^*})`; one-sided
    "greater" (the alternative: the mean is above 0): of :math:`P(Z > \bar d/\sqrt{V^*})`.
    """
    if not math.isfinite(diff):
        return math.nan
    s = np.sqrt(draws)
    if alternative == "two-sided":
        return min(1.0, 2 * _tail(abs(diff), s))
    return min(1.0, _tail(diff if alternative == "greater" else -diff, s))


def generalized_interval(draws: np.ndarray, tail: float) -> float:
    """Half-width ``h`` of the generalized interval: mean P(Z > h/s) over the draws = ``tail``.

    ``h`` is infinite at a tail of 0, NaN at a NaN tail and 0 from a tail of 0.5.
    """
    if math.isnan(tail):
        return math.nan
    if tail <= 0.0:
        return math.inf
    if tail >= 0.5:
        return 0.0
    s = np.sqrt(draws)
    top = float(s.max()) * float(stats.norm.isf(tail))
    if not top > 0:
        return 0.0
    return float(optimize.brentq(lambda h: _tail(h, s) - tail, 0.0, top, xtol=1e-12 * top))


def wilson_effective(
    p: float,
    var: float,
    df: float,
    *,
    n_min: float,
    n_max: float = math.inf,
    confidence_level: float,
) -> tuple[float, float]:
    r"""Wilson interval of a proportion with the design's variance (Korn and Graubard 1998).

    The effective sample size :math:`n_{eff} = \hat p(1-\hat p)/V`, at most ``n_max``
    (default none) and, at :math:`\hat p` = 0 or 1 or a zero variance, ``n_min`` (the top
    units); scaled by :math:`(z/t_\nu)^2`, so few degrees of freedom widen it as a t would.

    Examples
    --------
    >>> lo, hi = wilson_effective(0.5, 0.25 / 100, 99, n_min=100, n_max=100, confidence_level=0.95)
    >>> round(lo, 3), round(hi, 3)
    (0.403, 0.597)
    """
    alpha = 1.0 - confidence_level
    z = float(stats.norm.isf(alpha / 2))
    t = float(stats.t.isf(alpha / 2, df)) if df and math.isfinite(df) and df > 0 else z
    if 0.0 < p < 1.0 and var > 0:
        n_eff = min(p * (1.0 - p) / var, n_max)
    else:
        n_eff = n_min
    n = n_eff * (z / t) ** 2
    if not math.isfinite(t) or not 4 * n * n > 0:
        # a df so small that the t quantile is infinite or astronomically large (df near
        # 0.01): no information, the interval is the whole range, as a t interval would be
        return 0.0, 1.0
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    low = 0.0 if p <= 0.0 else max(0.0, centre - half)
    high = 1.0 if p >= 1.0 else min(1.0, centre + half)
    return low, high
