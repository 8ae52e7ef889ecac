"""Confidence intervals of mean scores: t, bootstrap (BCa / percentile), Wilson, cluster-robust."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np
import polars as pl
from scipy import stats

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

__all__ = ["intervals", "mean_interval", "scores_over"]

_METHODS = ("auto", "t", "bootstrap", "bca", "percentile", "wilson", "cluster")
#: smallest sample at which the bootstrap intervals are documented to be usable
_BOOTSTRAP_MIN_N = 20
_OVER = ("variants", "items", "runs")

_SCHEMA_TAIL = {
    "over": pl.String,
    "method": pl.String,
    "confidence_level": pl.Float64,
    "n": pl.Int64,
    "n_clusters": pl.Int64,
    "mean": pl.Float64,
    "se": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
}


def _metric_bounds(frame, by: Sequence[str]):
    """Per group key of ``by``: the (low, high) bounds of its metric (-inf/inf when undeclared)."""
    from evalstats.schema import metric_info

    infos = metric_info(frame)
    position = list(by).index("metric") if "metric" in by else None

    def bounds(key) -> tuple[float, float]:
        if position is not None:
            info = infos.get(str(key[position]))
        else:
            info = next(iter(infos.values())) if len(infos) == 1 else None
        if info is None:
            return -math.inf, math.inf
        lo = -math.inf if info.low is None else info.low
        hi = math.inf if info.high is None else info.high
        return lo, hi

    return bounds


def _clip(v: float, lo: float, hi: float) -> float:
    return v if math.isnan(v) else min(max(v, lo), hi)


def _degenerate(msg: str) -> tuple[float, float, float]:
    warnings.warn(msg, DegenerateDataWarning, stacklevel=4)
    return math.nan, math.nan, math.nan


def mean_interval(
    x: np.ndarray,
    *,
    method: str = "t",
    confidence_level: float = 0.95,
    clusters: np.ndarray | None = None,
    n_resamples: int = 9999,
    seed: int = 0,
) -> tuple[float, float, float, float]:
    """Mean of ``x`` with its standard error and interval: ``(mean, se, low, high)``.

    Parameters
    ----------
    x : numpy.ndarray
        One-dimensional scores.
    method : {'t', 'bootstrap', 'bca', 'percentile', 'wilson', 'cluster'}, default 't'
        ``bootstrap`` is BCa.
    confidence_level : float, default 0.95
    clusters : numpy.ndarray, optional
        Cluster label of each score; required for ``method='cluster'``.
    n_resamples : int, default 9999
        Bootstrap resamples.
    seed : int, default 0
        Seed of the bootstrap.

    Returns
    -------
    tuple of float
        NaN interval (with a :class:`~evalstats.errors.DegenerateDataWarning`) when fewer than
        two scores, or constant scores for ``t``, ``bootstrap`` and ``cluster``.

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
            return (mean, *_degenerate("Wilson interval of no scores; returning NaN."))
        if not np.all((x == 0) | (x == 1)):
            raise MetricScaleError(
                "`method='wilson'` is for a proportion of 0/1 scores; got non-binary values "
                f"such as {float(x[(x != 0) & (x != 1)][0])!r}. Use method='t' or 'bootstrap' "
                "(any metric), or over='items' with one variant and one run."
            )
        from statsmodels.stats.proportion import proportion_confint

        count = int(x.sum())
        low, high = proportion_confint(count, n, alpha=alpha, method="wilson")
        # the Wilson bounds are exactly 0 (no successes) and 1 (all successes); statsmodels'
        # floating-point evaluation leaves ~1e-17 there
        low = 0.0 if count == 0 else low
        high = 1.0 if count == n else high
        return mean, math.sqrt(mean * (1 - mean) / n), float(low), float(high)
    if n < 2:
        return (mean, *_degenerate(f"interval of {n} score(s) is undefined; returning NaN."))
    if method == "cluster":
        if clusters is None:
            raise ParameterError("`method='cluster'` needs `cluster`, the column naming clusters.")
        _, codes = np.unique(clusters, return_inverse=True)
        g = int(codes.max()) + 1
        if g < 2:
            return (mean, *_degenerate("cluster-robust SE needs at least 2 clusters; NaN."))
        sums = np.bincount(codes, weights=x - mean, minlength=g)
        # CR1 with statsmodels' small-sample factor G/(G-1) (the (N-1)/(N-K) factor is 1 for K=1)
        se = math.sqrt(g / (g - 1) * float(np.sum(sums**2))) / n
        if se == 0:
            return (mean, *_degenerate("constant scores: cluster-robust SE is 0; NaN."))
        q = float(stats.t.ppf(1 - alpha / 2, g - 1))
        return mean, se, mean - q * se, mean + q * se
    if np.all(x == x[0]):
        return (mean, *_degenerate("constant scores: the interval is degenerate; NaN."))
    if method == "t":
        se = float(np.std(x, ddof=1) / math.sqrt(n))
        q = float(stats.t.ppf(1 - alpha / 2, n - 1))
        return mean, se, mean - q * se, mean + q * se
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
    aggs = [pl.col("score").mean()] + [pl.col(c).first() for c in extra if c not in keys]
    if count:
        aggs.append(pl.len().cast(pl.Int64).alias("n_rows"))
    out = lf.group_by(keys).agg(aggs).sort(keys).collect()
    for c in extra:
        if c in keys:
            continue
        n_unique = lf.group_by(keys).agg(pl.col(c).n_unique()).select(pl.col(c).max()).collect()
        if n_unique.item() and n_unique.item() > 1:
            raise SchemaError(
                f"column {c!r} varies within one {over[:-1]}; clusters must contain whole units."
            )
    return out


def intervals(
    frame: pl.DataFrame | pl.LazyFrame,
    *,
    over: str = "variants",
    method: str = "auto",
    confidence_level: float = 0.95,
    cluster: str | None = None,
    n_resamples: int = 9999,
    seed: int = 0,
    by: Sequence[str] = ("model", "dataset", "metric"),
) -> pl.DataFrame:
    r"""Mean score per group with a confidence interval over variants, items or runs.

    Parameters
    ----------
    frame : polars.DataFrame or polars.LazyFrame
        Observation table (needed for ``over='items'``) or unit table; see :mod:`evalstats.schema`.
    over : {'variants', 'items', 'runs'}, default 'variants'
        The sampling unit: scores are averaged over everything else first, so ``'variants'``
        gives the interval of the mean over the configuration space (evaluatology), ``'items'``
        the usual benchmark-sampling interval, ``'runs'`` the run-to-run interval.
    method : {'auto', 't', 'bootstrap', 'percentile', 'wilson', 'cluster'}, default 'auto'
        ``'auto'`` is Wilson when every unit score of the group is 0 or 1 (items with one
        variant and one run) and ``t`` otherwise; the ``method`` column says which.
        ``'bootstrap'`` is the BCa bootstrap, ``'percentile'`` the percentile bootstrap (both
        :func:`scipy.stats.bootstrap`, with a warning below 20 units); ``'wilson'`` the Wilson
        score interval for 0/1 scores; ``'cluster'`` a cluster-robust (CR1) interval for items
        that share a cluster.
    confidence_level : float, default 0.95
        Confidence level of the interval.
    cluster : str, optional
        Column naming the cluster of each unit (``method='cluster'``), e.g. a passage id.
    n_resamples : int, default 9999
        Number of bootstrap resamples.
    seed : int, default 0
        Seed of the random generator; the same seed gives the same result.
    by : tuple of str, default ('model', 'dataset', 'metric')
        Columns that define the groups.

    Returns
    -------
    polars.DataFrame
        One row per group in ``by`` with ``over, method, confidence_level, n, n_clusters, mean,
        se, ci_low, ci_high`` (``method`` is the method used: ``wilson`` or ``t`` for
        ``'auto'``, ``bca`` for ``'bootstrap'``), sorted by ``by``. Bounds are clipped to the
        metric's declared bounds (unbounded sides are left as they are).

    Raises
    ------
    ParameterError
        Unknown ``over`` or ``method``, a level outside (0, 1), non-binary scores for Wilson.
    SchemaError
        A column of ``by`` or ``cluster`` is missing, or ``over='items'`` on a unit table.

    See Also
    --------
    compare_models : Paired intervals of differences between models.

    Notes
    -----
    With unit scores :math:`x_1..x_n` and mean :math:`\bar x`:

    - ``t``: :math:`\bar x \pm t_{n-1,1-\alpha/2}\, s/\sqrt n`.
    - ``wilson``: :math:`(\hat p + z^2/2n \pm z\sqrt{\hat p(1-\hat p)/n + z^2/4n^2})/(1+z^2/n)`.
    - ``cluster``: :math:`SE^2 = \frac{G}{G-1}\sum_g (\sum_{i\in g}(x_i-\bar x))^2/n^2`,
      with :math:`t_{G-1}` quantiles (statsmodels OLS on a constant, ``cov_type='cluster'``,
      ``use_t=True``).
    - ``bootstrap``/``percentile``: :func:`scipy.stats.bootstrap` of the mean.

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
    >>> from evalstats.simulate import unit_table
    >>> units = unit_table(n_models=2, n_items=50, n_variants=10, seed=0)
    >>> out = intervals(units)
    >>> out.select("model", "n", "mean").rows()
    [('m0', 10, 0.5440000000000002), ('m1', 10, 0.772)]
    >>> out["ci_low"].round(4).to_list()
    [0.4955, 0.7139]
    """
    check_choice("over", over, _OVER)
    check_choice("method", method, _METHODS)
    level = check_confidence_level(confidence_level)
    if method in ("bootstrap", "bca", "percentile"):
        n_resamples = check_positive_int("n_resamples", n_resamples)
    if method == "cluster" and cluster is None:
        raise ParameterError("`method='cluster'` needs `cluster`, the column naming clusters.")
    by = (by,) if isinstance(by, str) else tuple(by)
    extra = (cluster,) if method == "cluster" else ()
    data = scores_over(frame, over, by, extra=extra)
    bounds_of = _metric_bounds(frame, by)
    rows = []
    groups = data.partition_by(list(by), maintain_order=True, as_dict=True) if by else {(): data}
    for key, g in groups.items():
        x = g["score"].to_numpy()
        clusters = g[cluster].to_numpy() if cluster and method == "cluster" else None
        used = method
        if method == "auto":
            used = "wilson" if x.size and bool(np.all((x == 0) | (x == 1))) else "t"
        recorded = "bca" if used == "bootstrap" else used
        mean, se, low, high = mean_interval(
            x,
            method=used,
            confidence_level=level,
            clusters=clusters,
            n_resamples=n_resamples,
            seed=seed,
        )
        n_clusters = int(len(np.unique(clusters))) if clusters is not None else None
        # bounds never leave the score range (t and bootstrap intervals can near 0 and 1)
        lo_b, hi_b = bounds_of(key)
        low, high = _clip(low, lo_b, hi_b), _clip(high, lo_b, hi_b)
        rows.append((*key, over, recorded, level, int(x.size), n_clusters, mean, se, low, high))
    schema = {b: data.schema[b] for b in by} | _SCHEMA_TAIL
    return pl.DataFrame(rows, schema=schema, orient="row").sort(list(by))
