"""Confidence intervals of mean scores: t, bootstrap (BCa / percentile), Wilson, cluster-robust."""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl
from scipy import special, stats

from evalstats._frames import describe_group
from evalstats._ordered import grouped_in_order
from evalstats.design._frames import analysis_input
from evalstats.errors import (
    DegenerateDataWarning,
    DesignWarning,
    MetricScaleError,
    ParameterError,
    SchemaError,
)
from evalstats.results import (
    check_choice,
    check_confidence_level,
    check_positive_int,
)
from evalstats.schema import validate_by, validate_observations, validate_units

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from evalstats._frames import TableLike
    from evalstats.design import Design

__all__ = [
    "MIN_VARIANTS",
    "cluster_candidates",
    "default_over",
    "intervals",
    "mean_interval",
    "scores_over",
    "skewed_method",
    "warn_cluster_candidates",
]

#: The methods the design's intervals (clusters, prompt variants) compute.
_DESIGN_METHODS = ("auto", "t", "logit", "wilson", "lognormal", "bootstrap-t")

_METHODS = (
    "auto",
    "t",
    "logit",
    "lognormal",
    "bootstrap-t",
    "bootstrap",
    "bca",
    "percentile",
    "wilson",
    "cluster",
)

#: ``method='auto'`` on an unbounded (or one-sided) metric: scores this skewed (sample
#: skewness, bias-corrected) are too skewed for the t interval, which covered 0.78-0.89 on
#: log-normal scores (sigma = 1.5) at 30-300 items, nearly all misses below.
SKEW_LIMIT = 1.0
#: ... from this many units on (below it a sample skewness says little).
SKEW_MIN_N = 10
#: smallest sample at which the bootstrap intervals are documented to be usable
_BOOTSTRAP_MIN_N = 20
_OVER = ("auto", "recorded-prompts", "prompt-space", "variants", "items", "runs")

#: ``over='auto'`` targets the mean over the prompt space from this many prompt variants on.
#: With 2 the prompt variance has 1 degree of freedom: the prompt-space interval covered 0.90
#: (mean) and 0.895 (paired difference) with df < 1 (issue 46), so the default answer is the
#: interval about the 2 recorded prompts, with that caveat in ``note``; ``over='prompt-space'``
#: asks for the prompt-space one.
MIN_PROMPTS = 3


def prompt_caveat(n_prompts: int) -> str:
    """The caveat of a default interval about the recorded prompts (2 variants)."""
    return (
        f"{n_prompts} prompt variants cannot estimate the prompt-space spread: the interval is "
        f"about the {n_prompts} recorded prompts (over='prompt-space' asks for the other)"
    )


#: ``over='auto'`` on a table without items resamples variants only in groups with at least
#: this many. Below it an interval over variants says little: its width is set by the t
#: quantile and a sample SD from a handful of values (t quantile 12.7 at 2 variants, 2.78 at 5,
#: 2.09 at 20; the SD itself is off by about 1/sqrt(2(n-1)), 38 % at 5 variants, 16 % at 20),
#: coverage of the t interval on skewed configuration scores is 89 % at 10
#: (docs/methods/compare.md), and the bootstrap intervals are documented from 20 units on.
MIN_VARIANTS = 20

_SCHEMA_TAIL = {
    "over": pl.String,
    "method": pl.String,
    "confidence_level": pl.Float64,
    "n": pl.Int64,
    "n_clusters": pl.Int64,
    "n_rows": pl.Int64,
    "mean": pl.Float64,
    "se": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "note": pl.String,
    "n_prompts": pl.Int64,
    "df": pl.Float64,
}


#: The groups of the analysis when ``by`` is not given (settings held are added).
_BY = ("model", "dataset", "metric")


def _metric_bounds(frame, by: Sequence[str]):
    """Per group key of ``by``: the (low, high) bounds of its metric.

    The declared bounds (``metric_low``/``metric_high``); a metric that declares none but whose
    scores all lie in [0, 1] is taken as on [0, 1], as
    :func:`evalstats.schema.unit_interval_metrics` does (a hand-built table of accuracies);
    otherwise ``-inf``/``inf``.
    """
    from evalstats.schema import metric_info, unit_interval_metrics

    infos = metric_info(frame)
    unit = unit_interval_metrics(frame)
    position = list(by).index("metric") if "metric" in by else None

    def bounds(key) -> tuple[float, float]:
        if position is not None:
            name = str(key[position])
        else:
            name = next(iter(infos)) if len(infos) == 1 else None
        info = infos.get(name) if name is not None else None
        if info is None:
            return -math.inf, math.inf
        if info.low is None and info.high is None and unit.get(name, False):
            return 0.0, 1.0
        lo = -math.inf if info.low is None else info.low
        hi = math.inf if info.high is None else info.high
        return lo, hi

    return bounds


def _clip(v: float, lo: float, hi: float) -> float:
    return v if math.isnan(v) else min(max(v, lo), hi)


#: Beyond these magnitudes sums and squares of scores can overflow (or lose all precision in
#: the subnormal range): the scores are then scaled by a power of two (exact) before the
#: interval is computed, and the results scaled back.
_HUGE, _TINY = 2.0**500, 2.0**-500


def _scale_of(x: np.ndarray) -> float:
    """1, or the power of two near ``max|x|`` when the scores are extreme (see ``_HUGE``).

    >>> _scale_of(np.array([0.2, 1.0])), _scale_of(np.array([-1e308, 1e308])) == 2.0**1023
    (1.0, True)
    """
    m = float(np.max(np.abs(x))) if x.size else 0.0
    if m == 0.0 or not math.isfinite(m) or _TINY <= m <= _HUGE:
        return 1.0
    return math.ldexp(1.0, math.frexp(m)[1] - 1)  # max|x| / scale in [1, 2)


def _scaled_interval(
    x: np.ndarray, bounds: tuple[float, float], **kw: Any
) -> tuple[float, float, float, float]:
    """:func:`mean_interval` of ``x`` on the scale of an exact power of two, scaled back.

    Computed on ``x / sc`` (:func:`_scale_of`): scores near 1e308 or subnormal neither overflow
    nor underflow; ordinary scores have ``sc`` = 1.
    """
    sc = _scale_of(x)
    lo, hi = bounds
    return tuple(v * sc for v in mean_interval(x / sc, bounds=(lo / sc, hi / sc), **kw))  # type: ignore[return-value]


def stable_mean(column: str = "score") -> pl.Expr:
    """The mean of ``column`` as a polars aggregation that does not overflow near 1e308.

    Scores below ``_HUGE`` in magnitude take polars' own mean (the same bits as before).
    """
    col = pl.col(column)
    top = col.abs().max()
    return pl.when(top > _HUGE).then((col / top).mean() * top).otherwise(col.mean()).alias(column)


def stable_means(lf: pl.LazyFrame, keys: Sequence[str], alias: str, *aggs: pl.Expr) -> pl.DataFrame:
    """Per group of ``keys`` (sorted): :func:`stable_mean` of ``score`` as ``alias``, and ``aggs``.

    The same values as ``grouped_in_order(lf, keys, stable_mean().alias(alias), *aggs)``: the
    groups are aggregated with polars' plain mean and the largest magnitude (two of its fast
    aggregations; the ``when`` of :func:`stable_mean` is evaluated group by group, a third of
    the cost of a cell table at 1M rows), and only when a group's scores pass ``_HUGE`` is
    the scaled mean computed, for every group, as before.
    """
    col = pl.col("score")
    out = grouped_in_order(
        lf, keys, col.mean().alias(alias), col.abs().max().alias("__top"), *aggs
    ).collect()
    if out.height and bool((out["__top"] > _HUGE).any()):
        return grouped_in_order(lf, keys, stable_mean().alias(alias), *aggs).collect()
    return out.drop("__top")


@functools.lru_cache(maxsize=64)
def _z(tail: float) -> float:
    """The upper ``tail`` quantile of the standard normal (cached: one per level)."""
    return float(stats.norm.isf(tail))


def _wilson(count: int, n: int, alpha: float) -> tuple[float, float]:
    """Wilson score interval of ``count`` successes in ``n``: statsmodels' formula.

    ``proportion_confint(count, n, alpha, method='wilson')`` computes the same expression; its
    normal quantile per call was most of the time of an interval per model on 100,000 models.
    """
    z = _z(alpha / 2.0)
    p = count / n
    z2 = z * z
    denom = 1.0 + z2 / n
    center = (p + z2 / (2.0 * n)) / denom
    dist = z * math.sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n)) / denom
    return center - dist, center + dist


def partitions(frame: pl.DataFrame, by: Sequence[str]) -> dict[tuple, pl.DataFrame]:
    """``frame.partition_by(by, as_dict=True, maintain_order=True)``, in linear time.

    polars builds each key of ``as_dict=True`` with one ``select`` per partition (a query
    each: 14 s of the 59 s an interval per model took on 100,000 models); here the keys come
    from one ``unique`` in the same order of first appearance.

    >>> partitions(pl.DataFrame({"m": ["b", "a", "b"], "x": [1, 2, 3]}), ["m"])["b",]["x"].to_list()
    [1, 3]
    """
    if not by:
        return {(): frame}
    parts = frame.partition_by(list(by), maintain_order=True)
    keys = frame.select(list(by)).unique(maintain_order=True).rows()
    if len(keys) != len(parts):  # never expected; polars' own way then
        return frame.partition_by(list(by), maintain_order=True, as_dict=True)
    return dict(zip(keys, parts))


def _check_binary(x: np.ndarray) -> None:
    if not np.all((x == 0) | (x == 1)):
        raise MetricScaleError(
            "`method='wilson'` is for a proportion of 0/1 scores; got non-binary values "
            f"such as {float(x[(x != 0) & (x != 1)][0])!r}. Use method='t' or 'bootstrap' "
            "(any metric), or over='items' with one variant and one run."
        )


def _degenerate(msg: str, where: str = "") -> tuple[float, float, float]:
    """NaN with a warning, ``where`` (the group) in front.

    A report lists warnings without their table: "constant scores: the interval is degenerate"
    said nothing of which group.
    """
    warnings.warn(f"{where}: {msg}" if where else msg, DegenerateDataWarning, stacklevel=4)
    return math.nan, math.nan, math.nan


def at_a_bound(
    x: np.ndarray, bounds: tuple[float, float], units: int, alpha: float
) -> tuple[float, float] | None:
    """The exact interval of a mean whose ``units`` independent scores all sit at one bound.

    For scores on [lo, hi] with mean mu, a score is at lo with probability at most
    (hi - mu) / (hi - lo) (Markov's inequality on hi - X), so all ``units`` at lo has
    probability at most (1 - m)^units with m = (mu - lo) / (hi - lo). The mean is within
    ``lo + (hi - lo) (1 - (alpha/2)^(1/units))`` with confidence 1 - alpha/2; the
    Clopper-Pearson bound of 0 successes, valid for any scores on [lo, hi], not only 0/1
    (mirrored at hi). None when the scores are not all at one finite bound.

    >>> [round(v, 4) for v in at_a_bound(np.zeros(59), (0.0, 1.0), 59, 0.05)]
    [0.0, 0.0606]
    """
    lo, hi = bounds
    if units < 1 or not (math.isfinite(lo) and math.isfinite(hi) and hi > lo) or x.size == 0:
        return None
    width = (hi - lo) * (1.0 - (alpha / 2.0) ** (1.0 / units))
    if np.all(x == lo):
        return lo, lo + width
    if np.all(x == hi):
        return hi - width, hi
    return None


def mean_interval(
    x: np.ndarray,
    *,
    method: str = "t",
    confidence_level: float = 0.95,
    clusters: np.ndarray | None = None,
    n_resamples: int = 9999,
    seed: int = 0,
    bounds: tuple[float, float] = (0.0, 1.0),
    exact_at_bounds: bool = False,
    where: str = "",
) -> tuple[float, float, float, float]:
    """Mean of ``x`` with its standard error and interval: ``(mean, se, low, high)``.

    Parameters
    ----------
    x : numpy.ndarray
        One-dimensional scores.
    method : {'t', 'logit', 'lognormal', 'bootstrap-t', 'bootstrap', 'bca', 'percentile', 'wilson', 'cluster'}, default 't'
        ``bootstrap`` is BCa; ``logit`` the t interval on the logit scale of the mean rescaled
        to ``bounds`` (always inside them); ``lognormal`` Cox's interval of a log-normal mean
        (positive scores); ``bootstrap-t`` the studentized bootstrap.
    confidence_level : float, default 0.95
    clusters : numpy.ndarray, optional
        Cluster label of each score; required for ``method='cluster'``.
    n_resamples : int, default 9999
        Bootstrap resamples.
    seed : int, default 0
        Seed of the bootstrap.
    bounds : tuple of float, default (0.0, 1.0)
        The metric's bounds, for ``method='logit'`` and ``exact_at_bounds``.
    exact_at_bounds : bool, default False
        Scores all at one of two finite ``bounds`` (a model that failed every item): the
        exact interval :func:`at_a_bound` over the independent units (the clusters with
        ``method='cluster'``, else the scores) instead of NaN. Only where ``bounds`` are the
        metric's own.
    where : str, default ''
        The group, put in front of the degenerate-data warnings.

    Returns
    -------
    tuple of float
        NaN interval (with a :class:`~evalstats.errors.DegenerateDataWarning`) when fewer than
        two scores, or constant scores for ``t``, ``bootstrap`` and ``cluster`` (but see
        ``exact_at_bounds``).

    Examples
    --------
    >>> mean_interval(np.array([0.5, 0.6, 0.7, 0.8]))[2:]
    (0.4445739743239479, 0.8554260256760522)
    """
    x = np.asarray(x, dtype=float)
    n = x.size
    mean = float(np.mean(x)) if n else math.nan
    alpha = 1.0 - confidence_level
    if method == "wilson":
        if n == 0:
            return (mean, *_degenerate("Wilson interval of no scores; returning NaN.", where))
        _check_binary(x)
        count = int(x.sum())
        low, high = _wilson(count, n, alpha)
        # the Wilson bounds are exactly 0 (no successes) and 1 (all successes); statsmodels'
        # floating-point evaluation leaves ~1e-17 there
        low = 0.0 if count == 0 else low
        high = 1.0 if count == n else high
        return mean, math.sqrt(mean * (1 - mean) / n), float(low), float(high)
    if n < 2:
        return (mean, *_degenerate(f"interval of {n} score(s) is undefined; returning NaN.", where))
    if method == "cluster":
        if clusters is None:
            raise ParameterError("`method='cluster'` needs `cluster`, the column naming clusters.")
        _, codes = np.unique(clusters, return_inverse=True)
        g = int(codes.max()) + 1
        if g < 2:
            return (mean, *_degenerate("cluster-robust SE needs at least 2 clusters; NaN.", where))
        sums = np.bincount(codes, weights=x - mean, minlength=g)
        # CR1 with statsmodels' small-sample factor G/(G-1) (the (N-1)/(N-K) factor is 1 for K=1)
        se = math.sqrt(g / (g - 1) * float(np.sum(sums**2))) / n
        if se == 0 and exact_at_bounds and (exact := at_a_bound(x, bounds, g, alpha)):
            return mean, 0.0, *exact
        if se == 0:
            return (mean, *_degenerate("constant scores: cluster-robust SE is 0; NaN.", where))
        q = float(stats.t.ppf(1 - alpha / 2, g - 1))
        return mean, se, mean - q * se, mean + q * se
    if np.all(x == x[0]):
        if exact_at_bounds and (exact := at_a_bound(x, bounds, n, alpha)):
            return mean, 0.0, *exact
        return (mean, *_degenerate("constant scores: the interval is degenerate; NaN.", where))
    if method == "logit":
        lo_b, hi_b = bounds
        if not (math.isfinite(lo_b) and math.isfinite(hi_b) and hi_b > lo_b):
            raise ParameterError(
                f"`method='logit'` needs a metric with two finite bounds, got {bounds!r}."
            )
        width = hi_b - lo_b
        m01 = (mean - lo_b) / width
        se = float(np.std(x, ddof=1) / math.sqrt(n))
        if not 0 < m01 < 1:  # every unit at one bound is constant, handled above
            return mean, se, mean, mean
        q = float(stats.t.ppf(1 - alpha / 2, n - 1))
        lo01, hi01 = _expit_interval(m01, se / width, q)
        return mean, se, lo_b + width * lo01, lo_b + width * hi01
    if method == "t":
        se = float(np.std(x, ddof=1) / math.sqrt(n))
        q = float(stats.t.ppf(1 - alpha / 2, n - 1))
        return mean, se, mean - q * se, mean + q * se
    if method == "lognormal":
        return (mean, *_lognormal_interval(x, alpha))
    if method == "bootstrap-t":
        return (mean, *_bootstrap_t(x, alpha, n_resamples, seed))
    boot_method = "BCa" if method in ("bootstrap", "bca") else "percentile"
    if n < _BOOTSTRAP_MIN_N:
        warnings.warn(
            f"{boot_method} bootstrap interval of {n} scores: below n = {_BOOTSTRAP_MIN_N} it "
            "under-covers (use method='t', or 'wilson' for 0/1 scores).",
            DesignWarning,
            stacklevel=3,
        )
    res = stats.bootstrap(
        (x,),
        np.mean,
        confidence_level=confidence_level,
        n_resamples=n_resamples,
        method=boot_method,
        rng=np.random.default_rng(seed),
        vectorized=True,
        # bound memory: scipy holds batch x n resampled values at once
        batch=max(1, min(n_resamples, int(2e7 // n))),
    )
    ci = res.confidence_interval
    return mean, float(res.standard_error), float(ci.low), float(ci.high)


def scores_over(
    frame: pl.DataFrame | pl.LazyFrame,
    over: str,
    by: Sequence[str],
    *,
    extra: Sequence[str] = (),
    count: bool = False,
) -> pl.DataFrame:
    """Mean score per unit of ``over`` within each group of ``by`` (one row per unit).

    A unit is an item (``dataset, item``), a variant (``dataset, variant``) or a run; all other
    dimensions are averaged. ``extra`` columns are carried along (they must be constant within
    a unit). ``count`` adds ``n_rows``, the number of rows averaged into each unit.
    """
    lf = frame.lazy() if isinstance(frame, pl.DataFrame) else frame
    names = lf.collect_schema().names()
    if over == "items":
        lf = validate_observations(lf, require_item=True)
        unit = ["dataset", "item"]
    else:
        lf = validate_units(lf) if "item" not in names else validate_observations(lf)
        unit = ["dataset", "variant"] if over == "variants" else ["run"]
    names = lf.collect_schema().names()
    by = validate_by(names, by, table="observation table" if "item" in names else "unit table")
    for c in extra:
        validate_by(names, (c,))
    keys = list(by) + [c for c in unit if c not in by]
    aggs = [pl.col(c).first() for c in extra if c not in keys]
    if count:
        aggs.append(pl.len().cast(pl.Int64).alias("n_rows"))
    out = stable_means(lf, keys, "score", *aggs)
    for c in extra:
        if c in keys:
            continue
        n_unique = lf.group_by(keys).agg(pl.col(c).n_unique()).select(pl.col(c).max()).collect()
        if n_unique.item() and n_unique.item() > 1:
            raise SchemaError(
                f"column {c!r} varies within one {over[:-1]}; clusters must contain whole units."
            )
    return out


def default_over(frame: pl.DataFrame | pl.LazyFrame) -> tuple[str, str]:
    """The resampling unit ``over='auto'`` takes for ``frame``, and why, in one sentence.

    Items when the table has an ``item`` column (the sampling unit of a benchmark; several
    variants or runs of one item are averaged into that item, so they form one cluster);
    otherwise variants, in groups with at least :data:`MIN_VARIANTS` of them.

    Examples
    --------
    >>> from evalstats.simulate import observations, unit_table
    >>> default_over(observations(n_models=2, n_items=20, n_variants=3, seed=0))[0]
    'items'
    >>> default_over(unit_table(n_models=2, n_variants=3, seed=0))[0]
    'variants'
    """
    lf = frame.lazy() if isinstance(frame, pl.DataFrame) else frame
    names = lf.collect_schema().names()
    if "item" in names:
        return (
            "items",
            "items are the sampling unit of a benchmark; each item's score is its mean over "
            "its variants and runs, so the rows of one item form one cluster",
        )
    return (
        "variants",
        "the table has no item column, so the interval is over variants (each the mean over "
        f"its items), in groups with at least {MIN_VARIANTS} variants",
    )


def _proportion_scale(bounds: tuple[float, float]) -> bool:
    """A metric whose 0/1 scores are a proportion: on [0, 1], or with no bounds at all.

    A count on [0, inf) that happens to be 0 or 1 (one output token), or a log-probability on
    (-inf, 0] that is 0, is not a Bernoulli proportion: Wilson's interval of it left the
    metric's range (a log-probability's interval reached 0.33).
    """
    return bounds == (0.0, 1.0) or not (math.isfinite(bounds[0]) or math.isfinite(bounds[1]))


def _auto_method(x: np.ndarray, bounds: tuple[float, float]) -> str:
    """``method='auto'``: Wilson for 0/1, logit-t for a bounded metric, else ``skewed_method``.

    :func:`skewed_method` is t, or for strongly skewed scores log-normal or bootstrap-t.
    """
    if x.size and _proportion_scale(bounds) and bool(np.all((x == 0) | (x == 1))):
        return "wilson"
    if math.isfinite(bounds[0]) and math.isfinite(bounds[1]):
        return "logit"
    return skewed_method(x)


def skewed_method(x: np.ndarray) -> str:
    r"""The interval of the mean of an unbounded metric's scores, chosen from their shape.

    ``'t'`` unless the scores are strongly right-skewed: from :data:`SKEW_MIN_N` (10) units on,
    a bias-corrected sample skewness :math:`G_1 \ge` :data:`SKEW_LIMIT` (1). Then
    ``'lognormal'`` when every score is positive and their logarithms look symmetric
    (:math:`|G_1(\log x)| \le 2.58\sqrt{6/n}`, the 99 % band of a normal sample's skewness),
    else ``'bootstrap-t'`` (the studentized bootstrap, second-order accurate for skewed means).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> skewed_method(rng.normal(5, 1, 50)), skewed_method(np.exp(rng.normal(0, 1.5, 50)))
    ('t', 'lognormal')
    >>> skewed_method(rng.exponential(1, 200) - 0.5)  # not positive: no log scale
    'bootstrap-t'
    """
    x = np.asarray(x, dtype=float)
    n = x.size
    if n < SKEW_MIN_N or np.all(x == x[0]):
        return "t"
    if not float(stats.skew(x, bias=False)) >= SKEW_LIMIT:
        return "t"
    if np.all(x > 0):
        logs = np.log(x)
        if np.all(logs == logs[0]) or abs(float(stats.skew(logs, bias=False))) <= 2.58 * math.sqrt(
            6 / n
        ):
            return "lognormal"
    return "bootstrap-t"


def _lognormal_interval(x: np.ndarray, alpha: float) -> tuple[float, float, float]:
    r"""Cox's interval of a log-normal mean: :math:`\exp(\bar l + s^2/2 \pm t\,\mathrm{se})`.

    :math:`l = \log x`, :math:`\mathrm{se}^2 = s^2/n + s^4/(2(n-1))` (Land 1972; Zhou and
    Gao 1997 "Cox's method"), t on n - 1 df. Returns ``(se, low, high)``, the SE by the delta
    method on the mean's scale.
    """
    if np.any(x <= 0):
        raise ParameterError(
            "`method='lognormal'` needs positive scores (the interval is on their log scale); "
            f"got a minimum of {float(x.min())!r}. Use 'bootstrap-t' or 't'."
        )
    n = x.size
    logs = np.log(x)
    s2 = float(np.var(logs, ddof=1))
    centre = float(np.mean(logs)) + s2 / 2
    se_log = math.sqrt(s2 / n + s2**2 / (2 * (n - 1)))
    q = float(stats.t.ppf(1 - alpha / 2, n - 1))
    return math.exp(centre) * se_log, math.exp(centre - q * se_log), math.exp(centre + q * se_log)


def _bootstrap_t(
    x: np.ndarray, alpha: float, n_resamples: int, seed: int
) -> tuple[float, float, float]:
    r"""Studentized bootstrap interval of the mean: ``(se, low, high)``.

    :math:`[\bar x - t^*_{1-\alpha/2}\,\mathrm{se}, \bar x - t^*_{\alpha/2}\,\mathrm{se}]`
    with :math:`t^* = (\bar x^* - \bar x)/\mathrm{se}^*` over ``n_resamples`` resamples of the
    units (Efron and Tibshirani 1993, ch. 12); resamples with a zero SE are left out.
    """
    n = x.size
    mean = float(x.mean())
    se = float(np.std(x, ddof=1) / math.sqrt(n))
    rng = np.random.default_rng(seed)
    t_star = []
    chunk = max(1, min(n_resamples, int(2e7 // n)))
    for start in range(0, n_resamples, chunk):
        xb = x[rng.integers(0, n, (min(chunk, n_resamples - start), n))]
        sb = xb.std(axis=1, ddof=1) / math.sqrt(n)
        ok = sb > 0
        t_star.append((xb.mean(axis=1)[ok] - mean) / sb[ok])
    t_all = np.concatenate(t_star)
    lo_q, hi_q = np.quantile(t_all, [alpha / 2, 1 - alpha / 2])
    return se, mean - float(hi_q) * se, mean - float(lo_q) * se


def intervals(
    frame: TableLike,
    *,
    over: str = "auto",
    method: str = "auto",
    confidence_level: float = 0.95,
    cluster: str | None = None,
    n_resamples: int = 9999,
    seed: int = 0,
    by: Sequence[str] | None = None,
    variant_factors: Sequence[str] | str | None = None,
    roles: str | Mapping[str, str] | None = None,
    design: Design | str | Path | None = None,
) -> pl.DataFrame:
    r"""Mean score per group with a confidence interval over items, variants or runs.

    Parameters
    ----------
    frame : polars.DataFrame, polars.LazyFrame, pandas.DataFrame or pyarrow.Table
        Observation table (needed for ``over='items'``) or unit table; see :mod:`evalstats.schema`.
    over : {'auto', 'recorded-prompts', 'prompt-space', 'items', 'variants', 'runs'}, default 'auto'
        The target and its sampling units. ``'auto'`` on an item-level table is the design's
        interval (see Notes): items are the sampling unit (in clusters when the table has a
        ``cluster`` column or ``cluster`` names one), and when a group has :data:`MIN_PROMPTS`
        (3) or more prompt variants the target is the **mean over the prompt space** (prompts
        random, the ReliableEval view), so the interval also carries the prompt-to-prompt
        variance. With 2 variants (1 df for the prompt variance: that interval covered 0.90)
        it is the interval about the 2 recorded prompts and ``note`` says that 2 variants
        cannot estimate the prompt-space spread; ``'prompt-space'`` asks for the prompt-space
        interval from 2 variants on;
        ``over`` in the result says ``items``, ``clusters``, ``items+prompts`` or
        ``clusters+prompts``. ``'recorded-prompts'`` is the same interval conditional on the
        recorded prompts (the target is their mean). The explicit units keep their plain
        intervals: ``'items'`` (each item the mean of its variants and runs, items
        independent), ``'variants'`` (the mean over the configuration space, evaluatology),
        ``'runs'``. On a table without items ``'auto'`` is ``'variants'`` in groups with at
        least :data:`MIN_VARIANTS` (20) of them; a group with fewer gets no interval (NaN) and
        says why in ``note``.
    method : {'auto', 't', 'logit', 'lognormal', 'bootstrap-t', 'bootstrap', 'percentile', 'wilson', 'cluster'}, default 'auto'
        ``'auto'`` is Wilson for 0/1 scores, ``logit`` for other scores of a metric with two
        bounds, and for an unbounded metric ``t``, or, when its unit scores are strongly
        right-skewed (sample skewness 1 or more, from 10 units on), ``lognormal`` (Cox's
        interval of the mean of positive scores whose logarithms look symmetric) or
        ``bootstrap-t`` (the studentized bootstrap over the units); see
        :func:`skewed_method`. The ``method`` column says which. With the
        design's variance (``over='auto'`` or ``'recorded-prompts'``) ``wilson`` uses the
        design's effective sample size and ``logit``/``t`` its variance and degrees of freedom
        (``df``); a skewed unbounded metric (judged on its item means) gets ``lognormal`` on
        the log scale with the design's variance of the log cells, or ``bootstrap-t`` over the
        top units (clusters whole) with the prompt part drawn in each resample (see
        :mod:`evalstats.compare._skewed`). ``'logit'`` is the t interval of the logit of the mean (rescaled to the
        metric's bounds; delta-method SE), mapped back, so it never leaves the bounds.
        ``'bootstrap'`` is the BCa bootstrap, ``'percentile'`` the percentile bootstrap (both
        :func:`scipy.stats.bootstrap`, with a warning below 20 units, over explicit units);
        ``'cluster'`` the CR1 interval over explicit units with ``cluster``.
    confidence_level : float, default 0.95
        Confidence level of the interval.
    cluster : str, optional
        Column naming the cluster of each item, e.g. a passage id (default: the ``cluster``
        column when the table has one; the design gives it, ``--roles passage=cluster``). A
        factor column named like a cluster and constant within items, with none declared, gets
        a :class:`~evalstats.errors.DesignWarning`.
    n_resamples : int, default 9999
        Number of bootstrap resamples.
    seed : int, default 0
        Seed of the random generator; the same seed gives the same result.
    by : tuple of str, optional
        Columns that define the groups. Default: ``('model', 'dataset', 'metric')`` and every
        setting held fixed that varies (a provider, a temperature, a document set: an interval
        never pools two settings; see :mod:`evalstats.factors`). Given explicitly, exactly these
        groups (``by=('model', 'dataset', 'metric')`` averages the settings at their recorded
        values, on purpose).
    variant_factors : sequence of str, str or None, default None
        Which factor columns make the prompt variants of the prompt facet; settings (decoding,
        serving) are averaged at their recorded values, not treated as prompts (see
        :mod:`evalstats.factors`; the report passes the design's prompt factors).
    roles : str or mapping, optional
        Column roles for a table not in the canonical layout, as ``--roles`` gives them for a
        file (``{"passage": "cluster"}`` or ``"passage=cluster"``); see
        :func:`evalstats.design.analysis_input`.
    design : Design or path, optional
        A design (:func:`evalstats.infer_design`) or a design file (``design.toml``) to apply,
        as ``--design`` does.

    Returns
    -------
    polars.DataFrame
        One row per group in ``by`` with ``over, method, confidence_level, n, n_clusters,
        n_rows, mean, se, ci_low, ci_high, note, n_prompts, df`` (``over`` the target and unit
        used; ``method`` the method used: ``wilson``, ``logit`` or ``t`` for ``'auto'``,
        ``bca`` for ``'bootstrap'``; ``n`` the items (or units); ``n_rows`` the table rows
        averaged into them; ``note`` why an interval is missing, else null; ``n_prompts`` the
        prompt variants of the design's interval; ``df`` the degrees of freedom of a t-based
        interval), sorted by ``by``. Bounds never leave the metric's bounds (see Notes).

    Raises
    ------
    ParameterError
        Unknown ``over`` or ``method``, a level outside (0, 1), non-binary scores for Wilson.
    SchemaError
        A column of ``by`` or ``cluster`` is missing, or ``over='items'`` on a unit table.

    See Also
    --------
    compare_models : Paired intervals of differences between models.
    default_over : The unit ``over='auto'`` picks, and why.

    Notes
    -----
    With unit scores :math:`x_1..x_n` and mean :math:`\bar x`:

    - ``t``: :math:`\bar x \pm t_{n-1,1-\alpha/2}\, s/\sqrt n`.
    - ``logit``: with :math:`m = (\bar x - L)/(H - L)` on the metric's bounds :math:`[L, H]`,
      :math:`\mathrm{expit}(\mathrm{logit}(m) \pm t_{n-1,1-\alpha/2}\,
      \frac{s/\sqrt n}{(H-L)\, m (1-m)})` mapped back to :math:`[L, H]`. With the design's
      Satterthwaite df in place of :math:`n-1` the df can be far below 1: the quantile is then
      in the millions, or beyond float range (taken as infinite), and the interval widens to
      all of :math:`[L, H]`.
    - ``wilson``: :math:`(\hat p + z^2/2n \pm z\sqrt{\hat p(1-\hat p)/n + z^2/4n^2})/(1+z^2/n)`.
    - ``cluster``: :math:`SE^2 = \frac{G}{G-1}\sum_g (\sum_{i\in g}(x_i-\bar x))^2/n^2`,
      with :math:`t_{G-1}` quantiles (statsmodels OLS on a constant, ``cov_type='cluster'``,
      ``use_t=True``).
    - ``bootstrap``/``percentile``: :func:`scipy.stats.bootstrap` of the mean.

    **The design's interval** (``over='auto'`` with items; :mod:`evalstats.compare._design_var`):
    the estimate is the mean over items of each item's mean over its (item, prompt) cells, and
    its variance is the item part (:math:`s^2/I` on :math:`I-1` df, or with clusters the CR2
    cluster-robust variance with Bell-McCaffrey df: CR1 with :math:`G-1` df under-covers with
    few or unequal clusters) plus, for the prompt-space target, the prompt part
    :math:`\hat\sigma^2_P \sum_p w_p^2` (on a complete grid :math:`\hat\sigma^2_P/P`, the
    whole variance then being :math:`(MS_I + MS_P - MS_{IP})/(IP)`); Satterthwaite df. Sparse
    grids and unequal runs use the cells observed. Binary scores get a Wilson interval with
    the design's effective sample size (Korn and Graubard 1998), never of zero width. A group
    with one prompt and no clusters gets the plain interval over items, as ``'items'``.
    Coverage (docs/methods/compare.md): 0.935-0.965 for clustered items (cluster sd 0 to 1.5
    on the logit scale), crossed items x 5 prompts x 3 runs and sparse grids.

    **Bounds.** A metric's bounds are the declared ones (``metric_low``, ``metric_high``); a
    metric that declares none but whose scores all lie in [0, 1] is taken as on [0, 1] (as
    :func:`evalstats.schema.unit_interval_metrics`). Wilson and logit intervals stay inside
    by construction; ``t``, ``cluster`` and bootstrap bounds are clipped to them.

    Where the methods under-cover: ``t`` and the percentile bootstrap for small ``n`` and skewed
    or near-0/1 scores (exact coverage of the nominal 95 % t interval on 0/1 items at n = 30:
    0.785 at p = 0.95, and NaN when every item is correct); the bootstrap intervals for
    n < 20 (warned); ``t`` on items that share clusters (use ``cluster``). Wilson's exact
    coverage on 0/1 items stays within 0.936-0.975 for p in {0.5, 0.9, 0.97} and n in
    {30, 100}, and an all-correct sample gets ``[n/(n+z^2), 1]``; hence the default.
    See ``docs/methods/compare.md``.
    Checked against: scipy.stats.t / scipy.stats.bootstrap, statsmodels ``proportion_confint``
    and OLS cluster covariance (``tests/compare/test_intervals.py``).

    Examples
    --------
    >>> from evalstats.simulate import observations, unit_table
    >>> obs = observations(n_models=2, n_items=50, n_variants=4, seed=0)
    >>> out = intervals(obs)  # 50 items x 4 prompts: the mean over the prompt space
    >>> out.select("model", "over", "method", "n", "n_prompts", "n_rows").rows()
    [('m0', 'items+prompts', 'wilson', 50, 4, 200), ('m1', 'items+prompts', 'wilson', 50, 4, 200)]
    >>> intervals(obs, over="items").select("over", "method").row(0)  # items, prompts averaged
    ('items', 'logit')
    >>> units = unit_table(n_models=2, n_items=50, n_variants=3, seed=0)
    >>> intervals(units).select("over", "ci_low", "note").row(0)  # 3 variants: too few
    ('variants', nan, 'only 3 variants (an interval over variants needs at least 20) and no item column: give the item-level table for an interval over items')
    """
    _input = analysis_input(frame, roles=roles, design=design)
    given_factors = variant_factors
    frame, variant_factors = _input.table, _input.variant_factors(variant_factors)
    check_choice("over", over, _OVER)
    check_choice("method", method, _METHODS)
    level = check_confidence_level(confidence_level)
    if method in ("auto", "bootstrap", "bca", "percentile", "bootstrap-t"):
        n_resamples = check_positive_int("n_resamples", n_resamples)
    if method == "cluster" and cluster is None:
        raise ParameterError("`method='cluster'` needs `cluster`, the column naming clusters.")
    by = (
        _input.held_by(_BY, given_factors)
        if by is None
        else ((by,) if isinstance(by, str) else tuple(by))
    )
    lf = frame.lazy() if isinstance(frame, pl.DataFrame) else frame
    names = lf.collect_schema().names()
    design = over in ("auto", "recorded-prompts", "prompt-space") and "item" in names
    if design and method in _DESIGN_METHODS:
        if cluster is None and "cluster" in names:
            cluster = "cluster"
        elif cluster is None:
            warn_cluster_candidates(lf)
        return _design_intervals(
            lf,
            by=by,
            method=method,
            level=level,
            cluster=cluster,
            prompt_space=over in ("auto", "prompt-space"),
            forced=over == "prompt-space",
            variant_factors=variant_factors,
            n_resamples=n_resamples,
            seed=seed,
        )
    if over in ("recorded-prompts", "prompt-space"):
        raise ParameterError(
            f"`over={over!r}` is the design's interval over items (an item column) with "
            f"method {', '.join(repr(m) for m in _DESIGN_METHODS)}; got method={method!r}"
            + ("" if "item" in names else " on a table without items")
            + ". Use over='items' for the other methods."
        )
    auto_over = over == "auto"
    if auto_over:
        over = default_over(frame)[0]
    extra = (cluster,) if method == "cluster" else ()
    data = scores_over(frame, over, by, extra=extra, count=True)
    bounds_of = _metric_bounds(frame, by)
    rows = []
    groups = partitions(data, by)
    for key, g in groups.items():
        x = g["score"].to_numpy()
        n_rows = int(g["n_rows"].sum())
        clusters = g[cluster].to_numpy() if cluster and method == "cluster" else None
        n_clusters = int(len(np.unique(clusters))) if clusters is not None else None
        lo_b, hi_b = bounds_of(key)
        used = _auto_method(x, (lo_b, hi_b)) if method == "auto" else method
        if used == "logit" and not (math.isfinite(lo_b) and math.isfinite(hi_b)):
            raise ParameterError(
                "`method='logit'` needs a metric with two finite bounds; "
                f"{key!r} has [{lo_b}, {hi_b}]. Declare them (metric_range) or use 't'."
            )
        recorded = "bca" if used == "bootstrap" else used
        if auto_over and over == "variants" and x.size < MIN_VARIANTS:
            if used == "wilson":
                _check_binary(x)
            note = (
                f"only {x.size} variant{'s' if x.size != 1 else ''} (an interval over variants "
                f"needs at least {MIN_VARIANTS}) and no item column: give the item-level table "
                "for an interval over items"
            )
            sc = _scale_of(x)
            mean = float(np.mean(x / sc)) * sc if x.size else math.nan
            rows.append(
                (*key, over, recorded, level, int(x.size), n_clusters, n_rows, mean)
                + (math.nan, math.nan, math.nan, note, None, None)
            )
            continue
        mean, se, low, high = _scaled_interval(
            x,
            (lo_b, hi_b),
            method=used,
            confidence_level=level,
            clusters=clusters,
            n_resamples=n_resamples,
            seed=seed,
            exact_at_bounds=True,
            where=describe_group(dict(zip(by, key))),
        )
        note = None
        if math.isnan(low):
            note = _missing_reason(x, used)
        # bounds never leave the score range (t and bootstrap intervals can pass 0 and 1)
        low, high = _clip(low, lo_b, hi_b), _clip(high, lo_b, hi_b)
        df = {
            "t": x.size - 1,
            "logit": x.size - 1,
            "lognormal": x.size - 1,
            "cluster": (n_clusters or 0) - 1,
        }.get(used)
        rows.append(
            (*key, over, recorded, level, int(x.size), n_clusters, n_rows, mean, se, low, high)
            + (note, None, None if df is None else float(df))
        )
    schema = {b: data.schema[b] for b in by} | _SCHEMA_TAIL
    return pl.DataFrame(rows, schema=schema, orient="row").sort(list(by))


#: Column names that suggest items sharing a passage, a document or a family (checked only on
#: columns constant within every item: see :func:`warn_cluster_candidates`).
_CLUSTER_WORDS = (
    "passage",
    "document",
    "doc",
    "article",
    "story",
    "context",
    "paragraph",
    "source",
    "repo",
    "repository",
    "file",
    "conversation",
    "dialogue",
    "topic",
    "subject",
    "category",
    "family",
    "group",
    "cluster",
    "image",
    "video",
    "table",
)


def cluster_candidates(frame: pl.DataFrame | pl.LazyFrame) -> list[str]:
    """Factor columns named like a cluster of items whose value is the same on every item row."""
    from evalstats._column_rules import normal_name
    from evalstats.schema import factor_columns

    lf = frame.lazy() if isinstance(frame, pl.DataFrame) else frame
    names = lf.collect_schema().names()
    if "item" not in names:
        return []
    cands = [
        c
        for c in factor_columns(names)
        if any(w in _CLUSTER_WORDS for w in normal_name(c).split("_"))
    ]
    if not cands:
        return []
    keys = [k for k in ("dataset", "item") if k in names]
    row = (
        lf.group_by(keys)
        .agg(pl.col(c).n_unique() for c in cands)
        .select(pl.col(c).max() for c in cands)
        .collect()
        .row(0)
    )
    counts = lf.select(pl.col(c).n_unique() for c in cands).collect().row(0)
    return [c for c, within, total in zip(cands, row, counts) if within == 1 and total > 1]


def warn_cluster_candidates(frame: pl.DataFrame | pl.LazyFrame) -> None:
    """Warn when a column looks like a cluster of items and none is declared."""
    found = cluster_candidates(frame)
    if found:
        warnings.warn(
            f"column {found[0]!r} looks like a cluster of items (named like one, the same on "
            "every row of an item) but no cluster is declared: items that share it are treated "
            f"as independent, which makes intervals too narrow. Declare it with "
            f"--roles {found[0]}=cluster (Python: cluster={found[0]!r}, or roles=) if its items "
            "are dependent.",
            DesignWarning,
            stacklevel=3,
        )


def _prompt_id(lf: pl.LazyFrame, by: Sequence[str], variant_factors) -> pl.Expr:
    """The prompt variant of a row: ``variant`` without settings and item attributes.

    Settings held fixed (decoding, serving: :mod:`evalstats.factors`) are not prompts, and a
    factor column whose value is the same on every row of an item (a passage, a subject) is an
    attribute of the item, not a prompt: neither makes a prompt variant. Without factor
    columns the ``variant`` column is the prompt variant. Columns in ``by`` (the groups, and
    the compared column of a paired comparison) are not part of it: comparing the variants
    themselves leaves one prompt per compared level.
    """
    from evalstats.factors import held_factors
    from evalstats.schema import factor_columns, variant_key

    names = lf.collect_schema().names()
    if "variant" in by:
        return pl.lit("default", dtype=pl.String)
    every = factor_columns(names)
    factors = [f for f in every if f not in by]
    if not every:
        return pl.col("variant").cast(pl.String)
    if not factors:
        return pl.lit("default", dtype=pl.String)
    held = set(held_factors(lf, variant_factors=variant_factors, by=by))
    if variant_factors is None:
        keys = [k for k in ("dataset", "item") if k in names]
        within = (
            lf.group_by(keys)
            .agg(pl.col(f).n_unique() for f in factors)
            .select(pl.col(f).max() for f in factors)
            .collect()
            .row(0)
        )
        held |= {f for f, k in zip(factors, within) if k <= 1}
    if not held and len(factors) == len(every):
        return pl.col("variant").cast(pl.String)
    prompts = [f for f in factors if f not in held]
    return variant_key(prompts) if prompts else pl.lit("default", dtype=pl.String)


def item_columns(by: Sequence[str]) -> list[str]:
    """The columns that name an item within groups ``by`` (``dataset`` unless a key; ``item``)."""
    return ["item"] if "dataset" in by else ["dataset", "item"]


def with_item_code(cells: pl.DataFrame, lead: Sequence[str]) -> pl.DataFrame:
    r"""``__item``, the dense code of (dataset, item), in place of the item columns.

    The cell tables group by ``[*lead, *item_columns(lead), ...]``; the item becomes one
    integer column after the ``lead`` keys, in the sorted order of (dataset, item): the order
    the string ``dataset\x1fitem`` sorted in when the tables grouped by it (building that
    string for every row was a third of a cell table's time).
    """
    code = pl.struct(pl.col("dataset").cast(pl.String), pl.col("item").cast(pl.String))
    cells = cells.with_columns(code.rank("dense").cast(pl.Int64).alias("__item"))
    cells = cells.drop(item_columns(lead))
    lead = [c for c in lead if c in cells.columns]
    return cells.select(*lead, "__item", pl.exclude([*lead, "__item"]))


def dense_codes(columns: Sequence[str]) -> list[pl.Expr]:
    r"""Each key column as its dense rank (Int64, in the strings' sorted order).

    The per-group and per-pair variance code takes ``np.unique`` of these keys many times;
    on strings (``dataset\x1fitem``) that sort was most of a report's CPU at 1M rows, on
    integers it is cheap, and the codes sort as the strings did (same sums, same order).
    """
    return [pl.col(c).rank("dense").cast(pl.Int64) for c in columns]


def _design_intervals(
    lf: pl.LazyFrame,
    *,
    by: tuple[str, ...],
    method: str,
    level: float,
    cluster: str | None,
    prompt_space: bool,
    variant_factors,
    forced: bool = False,
    n_resamples: int = 9999,
    seed: int = 0,
) -> pl.DataFrame:
    """Intervals over items (in clusters) and, when a group has several, prompt variants."""
    from evalstats.compare._design_var import design_variance, wilson_effective
    from evalstats.compare._skewed import design_skewed_interval, item_means

    lf = validate_observations(lf, require_item=True)
    names = lf.collect_schema().names()
    by = validate_by(names, by, table="observation table")
    if cluster is not None and cluster not in names:
        raise SchemaError(
            f"`cluster` names {cluster!r}, which is not a column of the observation table."
        )
    cells = stable_means(
        lf.with_columns(_prompt_id(lf, by, variant_factors).alias("__p")),
        [*by, *item_columns(by), "__p"],
        "__y",
        pl.len().alias("__rows"),
        ((pl.col("score") == 0) | (pl.col("score") == 1)).all().alias("__binary"),
        *([pl.col(cluster).first().cast(pl.String).alias("__g")] if cluster else []),
        *([pl.col(cluster).n_unique().alias("__gn")] if cluster else []),
    )
    cells = with_item_code(cells, by).with_columns(
        dense_codes(["__item", "__p", *(["__g"] if cluster else [])])
    )
    if cluster and cells.height and int(cells["__gn"].max()) > 1:
        raise SchemaError(
            f"column {cluster!r} varies within one item; clusters must contain whole items."
        )
    bounds_of = _metric_bounds(lf, by)
    rows, cells = _wilson_rows(cells, by, method, level, cluster, bounds_of)
    groups = partitions(cells, by)
    for key, g in groups.items():
        y = g["__y"].to_numpy().astype(float)
        # extreme scores (near 1e308, or subnormal): the variance is computed on y / sc, an
        # exact power of two, and scaled back (sums of squares overflowed to inf before)
        sc = _scale_of(y)
        n_p = g["__p"].n_unique()
        space = prompt_space and (forced or n_p >= MIN_PROMPTS)
        caveat = prompt_caveat(n_p) if prompt_space and not space and n_p >= 2 else None
        n_rows = int(g["__rows"].sum())
        lo_b, hi_b = bounds_of(key)
        # one prompt and no clusters: the plain interval, without the design's variance (its
        # cost was most of the time on 100,000 models)
        prompts = g["__p"].to_numpy()
        if not cluster and (prompts.size == 0 or bool(np.all(prompts == prompts[0]))):
            # one prompt, independent items: the interval over item scores, as before
            x = y  # one cell per item: the item's mean over its runs
            used = _auto_method(x, (lo_b, hi_b)) if method == "auto" else method
            mean, se, low, high = _scaled_interval(
                x,
                (lo_b, hi_b),
                method=used,
                confidence_level=level,
                n_resamples=n_resamples,
                seed=seed,
                exact_at_bounds=True,
                where=describe_group(dict(zip(by, key))),
            )
            note = _missing_reason(x, used) if math.isnan(low) else None
            low, high = _clip(low, lo_b, hi_b), _clip(high, lo_b, hi_b)
            df = None if used in ("wilson", "bootstrap-t") else float(x.size - 1)
            rows.append(
                (*key, "items", used, level, int(x.size), None, n_rows, mean, se, low, high)
                + (note, 1, df)
            )
            continue
        clusters = g["__g"].to_numpy() if cluster else None
        mv = design_variance(
            g["__item"].to_numpy(), prompts, y / sc, clusters=clusters, prompt_space=space
        )
        binary = bool(g["__binary"].all())
        used = method
        if method == "auto":
            if binary and _proportion_scale((lo_b, hi_b)):
                used = "wilson"
            elif math.isfinite(lo_b) and math.isfinite(hi_b):
                used = "logit"
            else:  # an unbounded metric: t, or for skewed top units lognormal / bootstrap-t
                used = skewed_method(item_means(g["__item"].to_numpy(), y))
                if used == "lognormal" and not bool(np.all(y > 0)):
                    # the item means are positive, a cell is not: no log scale for the cells
                    # (auto chose lognormal, then refused it, and the report stopped)
                    used = "bootstrap-t"
        over = ("clusters" if cluster else "items") + (
            "+prompts" if space and mv.n_prompts >= 2 else ""
        )
        mean, var, df = mv.mean, mv.var, mv.df  # on the scale y / sc
        se = math.sqrt(var) if var >= 0 else math.nan
        note = None
        top = mv.n_clusters if cluster else mv.n_items
        lo_b, hi_b = lo_b / sc, hi_b / sc
        if top is None or top < 2:
            low = high = math.nan
            note = f"{top or 0} {'cluster' if cluster else 'item'}(s): an interval needs at least 2"
        elif not math.isfinite(var):
            low = high = math.nan
            note = "the variance of the scores is not finite: no interval"
        elif used == "wilson":
            if not binary:
                _check_binary(y)
            low, high = wilson_effective(
                # no cap at the scored outputs: with 10 clusters the variance has 9 df, and
                # capping the draws where it came out small made the interval over-cover
                # (0.96-0.98, issue 46); the t on the design's df already carries its noise
                mean,
                var,
                df,
                n_min=float(top),
                confidence_level=level,
            )
        elif var <= 0:
            low = high = math.nan
            note = (
                f"all {mv.n_cells} cell scores are equal ({mean * sc:g}): no spread to estimate "
                "from"
            )
        elif used == "logit":
            if not (math.isfinite(lo_b) and math.isfinite(hi_b)):
                raise ParameterError(
                    "`method='logit'` needs a metric with two finite bounds; "
                    f"{key!r} has [{lo_b}, {hi_b}]. Declare them (metric_range) or use 't'."
                )
            low, high = _logit_interval(mean, se, df, level, (lo_b, hi_b))
        elif used in ("lognormal", "bootstrap-t"):
            if used == "lognormal" and not bool(np.all(y > 0)):
                raise ParameterError(
                    "`method='lognormal'` needs positive scores (the interval is on their log "
                    f"scale); {key!r} has a minimum of {float(y.min())!r}. Use 'bootstrap-t' or 't'."
                )
            se, low, high, df = design_skewed_interval(
                used,
                g["__item"].to_numpy(),
                prompts,
                y / sc,
                clusters=clusters,
                prompt_space=space,
                var_prompts=mv.var_prompts,
                n_prompts=mv.n_prompts,
                level=level,
                n_resamples=n_resamples,
                seed=seed,
            )
            low, high = _clip(low, lo_b, hi_b), _clip(high, lo_b, hi_b)
            df = math.nan if df is None else df
        else:
            q = float(stats.t.isf((1 - level) / 2, df))
            low, high = _clip(mean - q * se, lo_b, hi_b), _clip(mean + q * se, lo_b, hi_b)
        mean, se, low, high = mean * sc, se * sc, low * sc, high * sc
        rows.append(
            (*key, over, used, level, mv.n_items, mv.n_clusters, n_rows, mean, se, low, high)
            + (note or caveat, mv.n_prompts, float(df) if math.isfinite(df) else None)
        )
    schema = {b: cells.schema[b] for b in by} | _SCHEMA_TAIL
    return pl.DataFrame(rows, schema=schema, orient="row").sort(list(by))


def _wilson_rows(cells, by, method, level, cluster, bounds_of) -> tuple[list[tuple], pl.DataFrame]:
    """The rows of the groups whose interval is Wilson's over 0/1 item scores, all at once.

    One prompt, no clusters and every item score 0 or 1, with ``method`` 'wilson' or 'auto' on
    a proportion scale: the loop of :func:`_design_intervals` would give each such group
    :func:`mean_interval`'s Wilson interval; the same expressions on arrays give the same
    numbers bit for bit (``tests/compare/test_intervals_extreme.py``), in linear time (100,000
    models took minutes group by group). Returns those rows and the cells of the other groups.
    """
    if cluster or method not in ("auto", "wilson") or not by or cells.height == 0:
        return [], cells
    y = pl.col("__y")
    per = cells.group_by(list(by), maintain_order=True).agg(
        pl.len().alias("__n"),
        y.sum().alias("__count"),
        ((y == 0) | (y == 1)).all().alias("__01"),
        pl.col("__p").n_unique().alias("__np"),
        pl.col("__rows").sum().alias("__nrows"),
    )
    keys = per.select(list(by)).rows()
    fast = per["__01"].to_numpy() & (per["__np"].to_numpy() < 2)
    if method == "auto":
        fast &= np.array([_proportion_scale(bounds_of(k)) for k in keys], dtype=bool)
    if not fast.any():
        return [], cells
    n = per["__n"].to_numpy()[fast].astype(float)
    count = per["__count"].to_numpy()[fast]
    mean = count / n
    z = _z((1.0 - level) / 2.0)
    z2 = z * z
    denom = 1.0 + z2 / n
    center = (mean + z2 / (2.0 * n)) / denom
    dist = z * np.sqrt(mean * (1.0 - mean) / n + z2 / (4.0 * n * n)) / denom
    low = np.where(count == 0, 0.0, center - dist)  # exactly 0 and 1 at the ends, as Wilson's
    high = np.where(count == n, 1.0, center + dist)
    se = np.sqrt(mean * (1 - mean) / n)
    n_rows = per["__nrows"].to_numpy()[fast]
    chosen = [k for k, f in zip(keys, fast) if f]
    rows = []
    for i, key in enumerate(chosen):
        lo_b, hi_b = bounds_of(key)
        rows.append(
            (*key, "items", "wilson", level, int(n[i]), None, int(n_rows[i]), float(mean[i]))
            + (float(se[i]), _clip(float(low[i]), lo_b, hi_b), _clip(float(high[i]), lo_b, hi_b))
            + (None, 1, None)
        )
    rest = per.filter(~pl.Series(fast)).select(list(by))
    return rows, cells.join(rest, on=list(by), how="semi", nulls_equal=True)


def _logit_interval(
    mean: float, se: float, df: float, level: float, bounds: tuple[float, float]
) -> tuple[float, float]:
    """T interval of the logit of the mean (delta-method SE), mapped back inside ``bounds``."""
    lo_b, hi_b = bounds
    width = hi_b - lo_b
    m01 = (mean - lo_b) / width
    if not 0 < m01 < 1:
        return mean, mean
    lo01, hi01 = _expit_interval(m01, se / width, _t_quantile((1 - level) / 2, df))
    return lo_b + width * lo01, lo_b + width * hi01


def _t_quantile(tail: float, df: float) -> float:
    """The upper ``tail`` quantile of Student's t at ``df`` > 0, ``inf`` beyond float range.

    Below a df of about 0.01 the quantile exceeds the largest float, and ``scipy.stats.t.isf``
    returns a finite number whose tail probability is not ``tail`` (scipy 1.17: 2.1e152 at
    df 0.001, where ``t.sf`` of it is 0.35); that answer is replaced by ``inf``.
    """
    q = float(stats.t.isf(tail, df))
    if math.isfinite(q) and not math.isclose(float(stats.t.sf(q, df)), tail, rel_tol=1e-6):
        return math.inf
    return q


def _expit_interval(m01: float, se01: float, q: float) -> tuple[float, float]:
    """``expit(logit(m01) -+ q se01 / (m01 (1 - m01)))``: the delta-method interval on [0, 1].

    ``scipy.special.expit`` saturates at 0 and 1 instead of overflowing, so a tiny
    Satterthwaite df (a quantile in the thousands, or infinite) gives a wide interval, at the
    limit all of [0, 1], never a ``math.exp`` overflow.
    """
    # delta method: the se of logit(m) is se / (m (1 - m)) on the [0, 1] scale
    half = q * se01 / (m01 * (1 - m01))
    centre = math.log(m01 / (1 - m01))
    return float(special.expit(centre - half)), float(special.expit(centre + half))


def _missing_reason(x: np.ndarray, method: str) -> str:
    """Why ``mean_interval`` gave NaN, in words for the ``note`` column."""
    if x.size < 2:
        return f"{x.size} unit(s): an interval needs at least 2"
    if method == "cluster":
        return "fewer than 2 clusters, or constant scores: no cluster-robust SE"
    return f"all {x.size} unit scores are equal ({float(x[0]):g}): no spread to estimate from"
