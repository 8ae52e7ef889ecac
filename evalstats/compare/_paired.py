"""Paired differences between models: interval, sign-flip permutation or exact McNemar test."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import combinations

import numpy as np
import polars as pl
from scipy import stats

from evalstats.compare._intervals import scores_over
from evalstats.errors import DegenerateDataWarning, InsufficientDataError, ParameterError
from evalstats.results import (
    ConfidenceInterval,
    check_alternative,
    check_choice,
    check_confidence_level,
    check_positive_int,
)

__all__ = ["PairedDifference", "compare_models", "paired_difference", "paired_matrix"]

_CORRECTIONS = {"holm": "holm", "bh": "fdr_bh", "none": None}


@dataclass(frozen=True, slots=True)
class PairedDifference:
    """Result of :func:`paired_difference`: mean of ``a - b`` with interval and test."""

    difference: float
    se: float
    confidence_interval: ConfidenceInterval
    statistic: float
    pvalue: float
    method: str
    alternative: str
    n: int
    n_a_only: int | None
    n_b_only: int | None
    correlation: float
    mdd: float
    power: float
    n_resamples: int
    seed: int
    null_distribution: np.ndarray | None = field(repr=False, default=None)

    def to_frame(self) -> pl.DataFrame:
        """One-row frame, so results for many pairs concatenate."""
        return pl.DataFrame(
            [
                {
                    "n": self.n,
                    "difference": self.difference,
                    "se": self.se,
                    "ci_low": self.confidence_interval.low,
                    "ci_high": self.confidence_interval.high,
                    "confidence_level": self.confidence_interval.level,
                    "statistic": self.statistic,
                    "pvalue": self.pvalue,
                    "method": self.method,
                    "alternative": self.alternative,
                    "n_a_only": self.n_a_only,
                    "n_b_only": self.n_b_only,
                    "correlation": self.correlation,
                    "mdd": self.mdd,
                    "power": self.power,
                    "n_resamples": self.n_resamples,
                    "seed": self.seed,
                }
            ],
            schema=_PAIR_SCHEMA,
        )


_PAIR_SCHEMA = {
    "n": pl.Int64,
    "difference": pl.Float64,
    "se": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "confidence_level": pl.Float64,
    "statistic": pl.Float64,
    "pvalue": pl.Float64,
    "method": pl.String,
    "alternative": pl.String,
    "n_a_only": pl.Int64,
    "n_b_only": pl.Int64,
    "correlation": pl.Float64,
    "mdd": pl.Float64,
    "power": pl.Float64,
    "n_resamples": pl.Int64,
    "seed": pl.Int64,
}


@lru_cache(maxsize=256)
def _standardized_mdd(n: int, alpha: float, power: float) -> float:
    """Effect size (in SDs of the difference) a paired t test detects with ``power``."""
    from statsmodels.stats.power import TTestPower

    if n < 2:
        return math.nan
    return float(
        TTestPower().solve_power(
            effect_size=None, nobs=n, alpha=alpha, power=power, alternative="two-sided"
        )
    )


def _correlation(a: np.ndarray, b: np.ndarray) -> float:
    if a.size < 2 or np.all(a == a[0]) or np.all(b == b[0]):
        return math.nan
    return float(np.corrcoef(a, b)[0, 1])


def paired_difference(
    a: np.ndarray,
    b: np.ndarray,
    *,
    method: str = "auto",
    alternative: str = "two-sided",
    confidence_level: float = 0.95,
    power: float = 0.8,
    n_resamples: int = 9999,
    seed: int = 0,
) -> PairedDifference:
    r"""Mean paired difference ``a - b`` with a t interval and a paired test.

    Parameters
    ----------
    a, b : numpy.ndarray
        Paired scores (same unit at the same position).
    method : {'auto', 'permutation', 'mcnemar'}, default 'auto'
        ``'mcnemar'`` (exact, binomial on the discordant pairs) needs 0/1 scores; ``'auto'``
        takes it for 0/1 scores and the sign-flip permutation test otherwise.
    alternative : {'two-sided', 'less', 'greater'}, default 'two-sided'
        Direction of the test of ``mean(a - b)``.
    confidence_level : float, default 0.95
        Level of the interval; the test level for ``mdd`` is ``1 - confidence_level``.
    power : float, default 0.8
        Power at which the minimum detectable difference ``mdd`` is computed.
    n_resamples : int, default 9999
        Random sign flips; the test is exact when ``2**n <= n_resamples``.
    seed : int, default 0
        Seed of the random generator; the same seed gives the same result.

    Returns
    -------
    PairedDifference

    Notes
    -----
    Interval: :math:`\bar d \pm t_{n-1}\, s_d/\sqrt n` with :math:`d_i = a_i - b_i`.
    Permutation test: statistic :math:`\bar d`, null distribution from random sign flips of
    :math:`d_i` (:func:`scipy.stats.permutation_test`, ``permutation_type='samples'``).
    Exact McNemar: :math:`n_{10} \sim \mathrm{Bin}(n_{10}+n_{01}, 1/2)` (same p-value as
    statsmodels ``mcnemar(exact=True)`` for two-sided tests); ``statistic`` is
    :math:`\min(n_{10}, n_{01})` as in statsmodels.
    Minimum detectable difference: :math:`\delta^* s_d` where :math:`\delta^*` solves the
    noncentral-t power equation of a two-sided paired t test (statsmodels ``TTestPower``).
    Checked against: statsmodels ``mcnemar`` and ``TTestPower``, scipy ``ttest_rel``
    (``tests/compare/test_paired.py``).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> a = rng.normal(0.7, 0.1, 30)
    >>> b = a - 0.05 + rng.normal(0, 0.05, 30)
    >>> res = paired_difference(a, b, seed=0)
    >>> res.method, round(res.difference, 4), res.pvalue
    ('permutation', 0.0362, 0.0004)
    """
    check_choice("method", method, ("auto", "permutation", "mcnemar"))
    check_alternative(alternative)
    level = check_confidence_level(confidence_level)
    if not 0 < power < 1:
        raise ParameterError(f"`power` must be in (0, 1), got {power!r}.")
    n_resamples = check_positive_int("n_resamples", n_resamples)
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ParameterError(
            f"`a` and `b` must be paired 1-d arrays, got shapes {a.shape}, {b.shape}."
        )
    n = a.size
    if n < 2:
        raise InsufficientDataError(f"a paired comparison needs at least 2 shared units, got {n}.")
    d = a - b
    binary = bool(np.all(np.isin(a, (0.0, 1.0))) and np.all(np.isin(b, (0.0, 1.0))))
    if method == "auto":
        method = "mcnemar" if binary else "permutation"
    if method == "mcnemar" and not binary:
        raise ParameterError(
            "`method='mcnemar'` needs 0/1 scores on both sides; use 'permutation'."
        )
    diff = float(d.mean())
    se = float(d.std(ddof=1) / math.sqrt(n))
    if se > 0:
        q = float(stats.t.ppf(1 - (1 - level) / 2, n - 1))
        ci = ConfidenceInterval(diff - q * se, diff + q * se, level)
    else:
        warnings.warn(
            "paired differences are constant; interval is NaN.", DegenerateDataWarning, stacklevel=2
        )
        ci = ConfidenceInterval(math.nan, math.nan, level)
    null = None
    n_a_only = n_b_only = None
    if method == "mcnemar":
        n_a_only = int(np.sum((a == 1) & (b == 0)))
        n_b_only = int(np.sum((a == 0) & (b == 1)))
        k = n_a_only + n_b_only
        statistic = float(min(n_a_only, n_b_only))
        pvalue = (
            1.0
            if k == 0
            else float(stats.binomtest(n_a_only, k, 0.5, alternative=alternative).pvalue)
        )
    else:
        if np.all(d == 0):
            statistic, pvalue = 0.0, 1.0
        else:
            res = stats.permutation_test(
                (d,),
                lambda x, axis: np.mean(x, axis=axis),
                permutation_type="samples",
                vectorized=True,
                n_resamples=n_resamples,
                alternative=alternative,
                rng=np.random.default_rng(seed),
            )
            statistic, pvalue, null = float(res.statistic), float(res.pvalue), res.null_distribution
    mdd = _standardized_mdd(n, round(1 - level, 12), power) * float(d.std(ddof=1))
    return PairedDifference(
        difference=diff,
        se=se,
        confidence_interval=ci,
        statistic=statistic,
        pvalue=pvalue,
        method=method,
        alternative=alternative,
        n=n,
        n_a_only=n_a_only,
        n_b_only=n_b_only,
        correlation=_correlation(a, b),
        mdd=mdd,
        power=float(power),
        n_resamples=n_resamples,
        seed=seed,
        null_distribution=null,
    )


def paired_matrix(
    frame: pl.DataFrame | pl.LazyFrame, *, paired_on: str, by: Sequence[str], column: str = "model"
) -> dict[tuple, pl.DataFrame]:
    """Wide frames per group of ``by``: one row per paired unit, one column per ``column`` value."""
    over = {"items": "items", "variants": "variants"}[paired_on]
    long = scores_over(frame, over, (*by, column))
    unit = [c for c in long.columns if c not in (*by, column, "score")]
    out = {}
    groups = long.partition_by(list(by), as_dict=True, maintain_order=True) if by else {(): long}
    for key, g in groups.items():
        out[key] = g.pivot(on=column, index=unit, values="score", sort_columns=True).sort(unit)
    return out


def compare_models(
    frame: pl.DataFrame | pl.LazyFrame,
    *,
    paired_on: str = "items",
    correction: str = "holm",
    method: str = "auto",
    alternative: str = "two-sided",
    confidence_level: float = 0.95,
    power: float = 0.8,
    n_resamples: int = 9999,
    seed: int = 0,
    by: Sequence[str] = ("dataset", "metric"),
) -> pl.DataFrame:
    r"""Every pair of models: paired mean difference, interval, test and corrected p-value.

    Parameters
    ----------
    frame : polars.DataFrame or polars.LazyFrame
        Observation table (``paired_on='items'``) or unit table; see :mod:`evalstats.schema`.
    paired_on : {'items', 'variants'}, default 'items'
        The paired unit: item scores (mean over variants and runs) or configuration scores
        (mean over items and runs). Only units that both models have are used.
    correction : {'holm', 'bh', 'none'}, default 'holm'
        Multiple-comparison correction over the pairs of each group (statsmodels
        ``multipletests``: ``holm`` or ``fdr_bh``).
    method : {'auto', 'permutation', 'mcnemar'}, default 'auto'
        Test; ``auto`` is exact McNemar for 0/1 paired scores (single-run, single-variant items)
        and the sign-flip permutation test otherwise.
    alternative : {'two-sided', 'less', 'greater'}, default 'two-sided'
        Direction, for ``model_a - model_b``.
    confidence_level : float, default 0.95
        Level of the intervals; ``1 - confidence_level`` is the test level used for ``mdd``.
    power : float, default 0.8
        Power of the minimum detectable difference ``mdd``.
    n_resamples : int, default 9999
        Random sign flips per pair.
    seed : int, default 0
        Seed of the random generator; the same seed gives the same result.
    by : tuple of str, default ('dataset', 'metric')
        Columns that define the groups; models are compared within each group.

    Returns
    -------
    polars.DataFrame
        One row per group and pair (``model_a < model_b``) with ``paired_on, n, mean_a, mean_b,
        difference, se, ci_low, ci_high, confidence_level, statistic, pvalue, pvalue_corrected,
        correction, method, alternative, n_a_only, n_b_only, correlation, mdd, power,
        n_resamples, seed``.

    Raises
    ------
    ParameterError
        Unknown option or a level outside (0, 1).
    InsufficientDataError
        A group has fewer than two models, or a pair shares fewer than two units.

    See Also
    --------
    paired_difference : The test on two arrays.

    Notes
    -----
    See :func:`paired_difference` for the formulas. ``correlation`` is the Pearson correlation
    of the two models' paired scores; a high correlation is what makes paired tests more
    powerful than comparing two independent intervals.
    Checked against: statsmodels ``multipletests`` (``tests/compare/test_paired.py``).

    Examples
    --------
    >>> from evalstats.simulate import observations
    >>> obs = observations(n_models=3, n_items=60, n_variants=1, seed=0)
    >>> out = compare_models(obs)
    >>> out.select("model_a", "model_b", "method", "n").rows()
    [('m0', 'm1', 'mcnemar', 60), ('m0', 'm2', 'mcnemar', 60), ('m1', 'm2', 'mcnemar', 60)]
    """
    check_choice("paired_on", paired_on, ("items", "variants"))
    check_choice("correction", correction, tuple(_CORRECTIONS))
    check_choice("method", method, ("auto", "permutation", "mcnemar"))
    check_alternative(alternative)
    level = check_confidence_level(confidence_level)
    by = (by,) if isinstance(by, str) else tuple(by)
    wide = paired_matrix(frame, paired_on=paired_on, by=by)
    frames = []
    for key, w in wide.items():
        unit = [c for c in ("dataset", "item", "variant") if c in w.columns and c not in by]
        models = [c for c in w.columns if c not in unit]
        if len(models) < 2:
            where = ", ".join(f"{b}={k!r}" for b, k in zip(by, key))
            raise InsufficientDataError(
                f"comparing models needs at least 2 models{' in ' + where if where else ''}; "
                f"got {models}."
            )
        rows = []
        for ma, mb in combinations(models, 2):
            pair = w.select(ma, mb).drop_nulls()
            a, b = pair[ma].to_numpy(), pair[mb].to_numpy()
            res = paired_difference(
                a,
                b,
                method=method,
                alternative=alternative,
                confidence_level=level,
                power=power,
                n_resamples=n_resamples,
                seed=seed,
            )
            head = pl.DataFrame(
                {
                    **{c: [k] for c, k in zip(by, key)},
                    "model_a": [ma],
                    "model_b": [mb],
                    "paired_on": [paired_on],
                    "mean_a": [float(a.mean())],
                    "mean_b": [float(b.mean())],
                }
            )
            rows.append(pl.concat([head, res.to_frame()], how="horizontal"))
        block = pl.concat(rows)
        p = block["pvalue"].to_numpy()
        if _CORRECTIONS[correction] is None:
            corrected = p
        else:
            from statsmodels.stats.multitest import multipletests

            corrected = multipletests(p, method=_CORRECTIONS[correction])[1]
        block = block.with_columns(
            pl.Series("pvalue_corrected", corrected, dtype=pl.Float64),
            pl.lit(correction).alias("correction"),
        )
        frames.append(block)
    order = [
        *by,
        "model_a",
        "model_b",
        "paired_on",
        "n",
        "mean_a",
        "mean_b",
        "difference",
        "se",
        "ci_low",
        "ci_high",
        "confidence_level",
        "statistic",
        "pvalue",
        "pvalue_corrected",
        "correction",
        "method",
        "alternative",
        "n_a_only",
        "n_b_only",
        "correlation",
        "mdd",
        "power",
        "n_resamples",
        "seed",
    ]
    return pl.concat(frames).select(order).sort([*by, "model_a", "model_b"])
