"""Rank uncertainty: joint-bootstrap rank intervals and P(best); Friedman + Nemenyi CD."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy import stats

from evalstats.compare._paired import paired_matrix
from evalstats.errors import InsufficientDataError
from evalstats.results import check_confidence_level, check_positive_int
from evalstats.schema import validate_by, validate_units

__all__ = ["FriedmanResult", "friedman_nemenyi", "rank_intervals"]


def rank_intervals(
    observations: pl.DataFrame | pl.LazyFrame,
    *,
    confidence_level: float = 0.95,
    n_resamples: int = 1000,
    seed: int = 0,
    by: Sequence[str] = ("dataset", "metric"),
) -> pl.DataFrame:
    """Rank of each model with a bootstrap interval and the probability of being best.

    Parameters
    ----------
    observations : polars.DataFrame or polars.LazyFrame
        Item-level observation table; see :mod:`evalstats.schema`.
    confidence_level : float, default 0.95
        Level of the rank intervals.
    n_resamples : int, default 1000
        Bootstrap resamples of the items.
    seed : int, default 0
        Seed of the random generator; the same seed gives the same result.
    by : tuple of str, default ('dataset', 'metric')
        Columns that define the groups; models are ranked within each group.

    Returns
    -------
    polars.DataFrame
        One row per group and model with ``n_items, score, rank, rank_low, rank_high, p_best,
        confidence_level, n_resamples, seed``; rank 1 is the best (highest mean score).

    Notes
    -----
    Items are resampled **jointly** across models (one index draw per resample applied to
    every model), which keeps the item pairing that makes rankings stable. In each resample
    models are ranked by mean score (ties share the best rank, ``method='min'``); ``rank_low``
    and ``rank_high`` are the lower and upper ``(1 - confidence_level)/2`` quantiles of the
    bootstrap ranks (``inverted_cdf``), and ``p_best`` the share of resamples in which the model
    has the highest mean (ties split evenly). Only items every model answered are used.

    Examples
    --------
    >>> from evalstats.simulate import observations
    >>> obs = observations(n_models=3, n_items=200, model_accuracy=(0.5, 0.68, 0.7), seed=0)
    >>> rank_intervals(obs, n_resamples=200).select("model", "rank", "rank_low", "rank_high").rows()
    [('m0', 3, 3, 3), ('m1', 2, 2, 2), ('m2', 1, 1, 1)]
    """
    level = check_confidence_level(confidence_level)
    n_resamples = check_positive_int("n_resamples", n_resamples)
    by = (by,) if isinstance(by, str) else tuple(by)
    wide = paired_matrix(observations, paired_on="items", by=by)
    rng = np.random.default_rng(seed)
    q = (1 - level) / 2
    frames = []
    for key, w in wide.items():
        unit = [c for c in ("dataset", "item") if c in w.columns and c not in by]
        models = [c for c in w.columns if c not in unit]
        x = w.select(models).drop_nulls().to_numpy()
        n = x.shape[0]
        if n < 2 or len(models) < 2:
            raise InsufficientDataError(
                f"rank intervals need at least 2 models and 2 shared items; got {len(models)} "
                f"models and {n} items."
            )
        observed = x.mean(axis=0)
        ranks_obs = stats.rankdata(-observed, method="min")
        boot_ranks = np.empty((n_resamples, len(models)))
        p_best = np.zeros(len(models))
        chunk = max(1, int(2e7 // max(n * len(models), 1)))
        for start in range(0, n_resamples, chunk):
            b = min(chunk, n_resamples - start)
            idx = rng.integers(0, n, size=(b, n))
            means = x[idx].mean(axis=1)  # b, M
            boot_ranks[start : start + b] = stats.rankdata(-means, method="min", axis=1)
            best = means == means.max(axis=1, keepdims=True)
            p_best += (best / best.sum(axis=1, keepdims=True)).sum(axis=0)
        low = np.quantile(boot_ranks, q, axis=0, method="inverted_cdf")
        high = np.quantile(boot_ranks, 1 - q, axis=0, method="inverted_cdf")
        frames.append(
            pl.DataFrame(
                {
                    **{b_: [k] * len(models) for b_, k in zip(by, key)},
                    "model": models,
                    "n_items": [n] * len(models),
                    "score": observed.astype(float),
                    "rank": ranks_obs.astype(np.int64),
                    "rank_low": low.astype(np.int64),
                    "rank_high": high.astype(np.int64),
                    "p_best": p_best / n_resamples,
                }
            )
        )
    out = pl.concat(frames).with_columns(
        pl.lit(level).alias("confidence_level"),
        pl.lit(n_resamples, dtype=pl.Int64).alias("n_resamples"),
        pl.lit(seed, dtype=pl.Int64).alias("seed"),
    )
    return out.sort([*by, "model"])


@dataclass(frozen=True, slots=True)
class FriedmanResult:
    """Friedman test across blocks with the Nemenyi critical difference of mean ranks."""

    statistic: float
    pvalue: float
    n_blocks: int
    n_models: int
    critical_difference: float
    confidence_level: float
    ranks: pl.DataFrame

    def to_frame(self) -> pl.DataFrame:
        """One row per model: ``model, mean_rank, score`` plus the test's fields."""
        return self.ranks.with_columns(
            pl.lit(self.statistic).alias("statistic"),
            pl.lit(self.pvalue).alias("pvalue"),
            pl.lit(self.critical_difference).alias("critical_difference"),
            pl.lit(self.n_blocks, dtype=pl.Int64).alias("n_blocks"),
            pl.lit(self.confidence_level).alias("confidence_level"),
        )


def friedman_nemenyi(
    units: pl.DataFrame | pl.LazyFrame,
    *,
    blocks: Sequence[str] = ("dataset", "metric"),
    confidence_level: float = 0.95,
) -> FriedmanResult:
    r"""Friedman test of model ranks across blocks and the Nemenyi critical difference.

    Parameters
    ----------
    units : polars.DataFrame or polars.LazyFrame
        Unit table (or observation table); see :mod:`evalstats.schema`.
    blocks : tuple of str, default ('dataset', 'metric')
        Columns whose combinations are the blocks (e.g. datasets, or datasets and variants).
        Each block's score is the mean over everything else.
    confidence_level : float, default 0.95
        ``1 - alpha`` of the Nemenyi critical difference.

    Returns
    -------
    FriedmanResult
        ``statistic``, ``pvalue`` (:func:`scipy.stats.friedmanchisquare`),
        ``critical_difference`` and ``ranks`` (mean rank per model, 1 = best).

    Raises
    ------
    InsufficientDataError
        Fewer than 3 models or 2 blocks where every model has a score.

    Notes
    -----
    Demšar (2006): with :math:`k` models and :math:`N` blocks,
    :math:`CD = q_\alpha \sqrt{k(k+1)/(6N)}` where :math:`q_\alpha` is the studentized range
    quantile :math:`q_{1-\alpha}(k, \infty)/\sqrt 2`. Two models whose mean ranks differ by more
    than CD differ significantly. Only blocks in which every model has a score are used.
    Checked against: Demšar's Table 5 values of :math:`q_{0.05}` and scipy's Friedman test
    (``tests/compare/test_ranks.py``).

    References
    ----------
    .. [1] J. Demšar, "Statistical comparisons of classifiers over multiple data sets",
       JMLR 7 (2006).

    Examples
    --------
    >>> from evalstats.simulate import unit_table
    >>> units = unit_table(n_models=4, n_datasets=6, n_items=50, n_variants=2, seed=0)
    >>> res = friedman_nemenyi(units)
    >>> res.n_blocks, round(res.critical_difference, 4)
    (6, 1.9148)
    """
    level = check_confidence_level(confidence_level)
    lf = validate_units(units)
    blocks = validate_by(lf.collect_schema().names(), blocks)
    # units collected first and blocks sorted: the same floats are added in the same order on
    # every call (inside one lazy plan polars may order them differently, moving the last bit)
    scores = (
        lf.collect()
        .group_by([*blocks, "model"])
        .agg(pl.col("score").mean())
        .sort([*blocks, "model"])
    )
    wide = scores.pivot(on="model", index=list(blocks), values="score", sort_columns=True)
    models = [c for c in wide.columns if c not in blocks]
    x = wide.select(models).drop_nulls().to_numpy()
    k, n = len(models), x.shape[0]
    if k < 3 or n < 2:
        raise InsufficientDataError(
            f"the Friedman test needs at least 3 models and 2 complete blocks; got {k} models "
            f"and {n} blocks ({', '.join(blocks)})."
        )
    res = stats.friedmanchisquare(*x.T)
    ranks = stats.rankdata(-x, axis=1)
    q = stats.studentized_range.ppf(level, k, np.inf) / math.sqrt(2)
    cd = float(q * math.sqrt(k * (k + 1) / (6 * n)))
    rank_frame = pl.DataFrame(
        {"model": models, "mean_rank": ranks.mean(axis=0), "score": x.mean(axis=0)}
    ).sort("model")
    return FriedmanResult(
        statistic=float(res.statistic),
        pvalue=float(res.pvalue),
        n_blocks=n,
        n_models=k,
        critical_difference=cd,
        confidence_level=level,
        ranks=rank_frame,
    )
