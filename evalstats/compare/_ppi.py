"""Prediction-powered inference (PPI++) for LLM-judge scores with a gold-labelled subset."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from itertools import combinations
from typing import TYPE_CHECKING

import numpy as np
import polars as pl
from scipy import stats

from evalstats.compare._intervals import _metric_bounds
from evalstats.design._frames import analysis_input
from evalstats.errors import DegenerateDataWarning, InsufficientDataError, ParameterError
from evalstats.results import check_confidence_level
from evalstats.schema import validate_by, validate_observations

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from evalstats._frames import TableLike
    from evalstats.design import Design

__all__ = ["ppi_difference", "ppi_kernel", "ppi_mean"]


def ppi_kernel(
    y: np.ndarray,
    f_lab: np.ndarray,
    f_unlab: np.ndarray,
    *,
    confidence_level: float = 0.95,
    lam: float | None = None,
) -> dict[str, np.ndarray]:
    r"""PPI++ mean estimate and normal interval; arrays' last axis is the sample.

    Parameters
    ----------
    y : numpy.ndarray
        Gold scores of the ``n`` labelled items.
    f_lab : numpy.ndarray
        Judge scores of the same labelled items.
    f_unlab : numpy.ndarray
        Judge scores of the ``N`` unlabelled items.
    confidence_level : float, default 0.95
        Level of the interval.
    lam : float, optional
        Fixed :math:`\lambda` (1: original PPI, 0: gold labels only); default the power-tuned
        :math:`\hat\lambda`, clipped to [0, 1].

    Returns
    -------
    dict of numpy.ndarray
        ``estimate, se, ci_low, ci_high, lam`` (and ``classical``, ``classical_se`` from the
        gold labels alone).

    Notes
    -----
    Angelopoulos, Duchi and Zrnic (2023), mean estimation:
    :math:`\hat\theta_\lambda = \bar Y_n + \lambda(\bar f_N - \bar f_n)`,
    :math:`\widehat{\mathrm{Var}} = s^2(Y - \lambda f)/n + \lambda^2 s^2(\tilde f)/N`,
    :math:`\hat\lambda = \widehat{\mathrm{Cov}}(Y, f) / ((1 + n/N)\, s^2(f))` with
    :math:`s^2(f)` pooled over labelled and unlabelled judge scores; :math:`\hat\lambda` is
    clipped to [0, 1].

    Examples
    --------
    >>> y = np.array([1.0, 0, 1, 1, 0, 1])
    >>> f = np.array([1.0, 0, 1, 1, 1, 1])
    >>> out = ppi_kernel(y, f, np.ones(20))
    >>> round(float(out["estimate"]), 4), round(float(out["lam"]), 4)
    (0.8333, 1.0)
    """
    y, f_lab, f_unlab = (np.asarray(a, dtype=float) for a in (y, f_lab, f_unlab))
    n, big_n = y.shape[-1], f_unlab.shape[-1]
    z = stats.norm.ppf(0.5 + confidence_level / 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        if lam is None:
            f_all = np.concatenate([f_lab, f_unlab], axis=-1)
            var_f = f_all.var(axis=-1, ddof=1)
            cov = ((y - y.mean(-1, keepdims=True)) * (f_lab - f_lab.mean(-1, keepdims=True))).sum(
                -1
            ) / (n - 1)
            ratio = n / big_n if big_n else np.inf
            lam_hat = np.where(var_f > 0, cov / ((1 + ratio) * var_f), 0.0)
            lam_arr = np.clip(np.nan_to_num(lam_hat), 0.0, 1.0)
        else:
            lam_arr = np.full(y.shape[:-1], float(lam))
        if big_n == 0:
            lam_arr = np.zeros_like(lam_arr)
        lam_b = lam_arr[..., None] if np.ndim(lam_arr) else lam_arr
        f_unlab_mean = f_unlab.mean(-1) if big_n else np.zeros(y.shape[:-1])
        est = y.mean(-1) + lam_arr * (f_unlab_mean - f_lab.mean(-1))
        var = (y - lam_b * f_lab).var(axis=-1, ddof=1) / n
        if big_n > 1:
            var = var + lam_arr**2 * f_unlab.var(axis=-1, ddof=1) / big_n
        se = np.sqrt(var)
        classical_se = y.std(axis=-1, ddof=1) / math.sqrt(n)
    return {
        "estimate": est,
        "se": se,
        "ci_low": est - z * se,
        "ci_high": est + z * se,
        "lam": lam_arr,
        "classical": y.mean(-1),
        "classical_se": classical_se,
    }


def _item_table(observations, gold: str, by: Sequence[str], column: str) -> pl.DataFrame:
    lf = validate_observations(observations, require_item=True)
    names = lf.collect_schema().names()
    if gold not in names:
        raise ParameterError(
            f"`gold` names {gold!r}, which is not a column of the observation table "
            f"(columns: {', '.join(names)}). PPI needs gold (human) scores for some items."
        )
    validate_by(names, (*by, column), table="observation table")
    keys = list(dict.fromkeys([*by, column, "dataset", "item"]))
    return (
        lf.group_by(keys)
        .agg(
            pl.col("score").mean().alias("f"),
            pl.col(gold).cast(pl.Float64).mean().alias("y"),
        )
        .sort(keys)
        .collect()
    )


def _check(level: float, lam: float | None) -> None:
    if lam is not None and not 0 <= lam <= 1:
        raise ParameterError(f"`lam` must be in [0, 1] or None (power-tuned), got {lam!r}.")


_MEAN_SCHEMA = {
    "n_labelled": pl.Int64,
    "n_unlabelled": pl.Int64,
    "estimate": pl.Float64,
    "se": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "confidence_level": pl.Float64,
    "lam": pl.Float64,
    "classical": pl.Float64,
    "classical_ci_low": pl.Float64,
    "classical_ci_high": pl.Float64,
    "judge_mean": pl.Float64,
    "judge_bias": pl.Float64,
    "method": pl.String,
}


def _row(y, f_lab, f_unlab, level, lam, bounds):
    n = y.size
    if n < 2:
        warnings.warn(
            f"PPI needs at least 2 gold-labelled items, got {n}; NaN.",
            DegenerateDataWarning,
            stacklevel=3,
        )
    k = ppi_kernel(y, f_lab, f_unlab, confidence_level=level, lam=lam)
    z = stats.norm.ppf(0.5 + level / 2)
    lo, hi = bounds

    def clip(v):
        return float(min(max(float(v), lo), hi)) if not math.isnan(float(v)) else math.nan

    f_all = np.concatenate([f_lab, f_unlab])
    return {
        "n_labelled": n,
        "n_unlabelled": int(f_unlab.size),
        "estimate": float(k["estimate"]),
        "se": float(k["se"]),
        "ci_low": clip(k["ci_low"]),
        "ci_high": clip(k["ci_high"]),
        "confidence_level": level,
        "lam": float(k["lam"]),
        "classical": float(k["classical"]),
        "classical_ci_low": clip(k["classical"] - z * k["classical_se"]),
        "classical_ci_high": clip(k["classical"] + z * k["classical_se"]),
        "judge_mean": float(f_all.mean()) if f_all.size else math.nan,
        "judge_bias": float(np.mean(f_lab - y)) if n else math.nan,
        "method": "ppi++" if lam is None else f"ppi(lam={lam:g})",
    }


def ppi_mean(
    observations: TableLike,
    *,
    gold: str = "gold_score",
    confidence_level: float = 0.95,
    lam: float | None = None,
    by: Sequence[str] = ("model", "dataset", "metric"),
    roles: str | Mapping[str, str] | None = None,
    design: Design | str | Path | None = None,
) -> pl.DataFrame:
    r"""Mean score per group corrected for judge bias with gold labels on part of the items (PPI++).

    Parameters
    ----------
    observations : polars.DataFrame, polars.LazyFrame, pandas.DataFrame or pyarrow.Table
        Observation table whose ``score`` comes from an automatic judge and whose ``gold``
        column holds the human (gold) score where an item was labelled, null elsewhere.
    gold : str, default 'gold_score'
        Column of gold scores.
    confidence_level : float, default 0.95
        Level of the intervals.
    lam : float, optional
        Fixed weight of the judge (1: original PPI; 0: gold labels only); default the
        power-tuned PPI++ weight.
    by : tuple of str, default ('model', 'dataset', 'metric')
        Columns that define the groups.
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
        One row per group with ``n_labelled, n_unlabelled, estimate, se, ci_low, ci_high,
        confidence_level, lam, classical, classical_ci_low, classical_ci_high, judge_mean,
        judge_bias, method``; ``classical`` is the gold-only mean with its normal interval,
        ``judge_mean`` the (biased) judge mean over all items, ``judge_bias`` the mean of
        judge minus gold on the labelled items. Bounds are clipped to the metric's bounds.

    Notes
    -----
    Items are the sampling unit: scores and gold scores are averaged over an item's rows
    (variants, runs) first; an item is labelled when any of its rows has a gold score. The
    estimator and its variance are those of :func:`ppi_kernel`. The interval is valid whatever
    the judge's bias; a better judge (higher correlation with gold) makes it narrower than
    the gold-only interval. The labelled items must be a random subset of the items.
    Checked against: an independent computation of the PPI++ formulas and a simulation with
    a biased judge (coverage, ``tests/compare/test_ppi.py``).

    References
    ----------
    .. [1] A. N. Angelopoulos, J. C. Duchi and T. Zrnic, "PPI++: Efficient prediction-powered
       inference", arXiv:2311.01453 (2023).

    Examples
    --------
    >>> from evalstats.simulate import judged_observations
    >>> obs = judged_observations(n_models=2, n_items=400, n_labelled=100, seed=0)
    >>> out = ppi_mean(obs, by=("model",))
    >>> out.select("model", "n_labelled", "n_unlabelled").rows()
    [('m0', 100, 300), ('m1', 100, 300)]
    """
    observations = analysis_input(observations, roles=roles, design=design).table
    level = check_confidence_level(confidence_level)
    _check(level, lam)
    by = (by,) if isinstance(by, str) else tuple(by)
    items = _item_table(observations, gold, by, "model" if "model" in by else by[0])
    rows = []
    groups = items.partition_by(list(by), as_dict=True, maintain_order=True)
    bounds_of = _metric_bounds(observations, by)
    for key, g in groups.items():
        lab = g.filter(pl.col("y").is_not_null())
        unl = g.filter(pl.col("y").is_null())
        rows.append(
            dict(zip(by, key))
            | _row(
                lab["y"].to_numpy(),
                lab["f"].to_numpy(),
                unl["f"].to_numpy(),
                level,
                lam,
                bounds_of(key),
            )
        )
    return (
        pl.DataFrame(rows, schema_overrides=_MEAN_SCHEMA)
        .select([*by, *_MEAN_SCHEMA])
        .sort(list(by))
    )


def ppi_difference(
    observations: TableLike,
    *,
    gold: str = "gold_score",
    confidence_level: float = 0.95,
    lam: float | None = None,
    by: Sequence[str] = ("dataset", "metric"),
    column: str = "model",
    roles: str | Mapping[str, str] | None = None,
    design: Design | str | Path | None = None,
) -> pl.DataFrame:
    r"""Paired difference of every pair of models corrected for judge bias (PPI++ on differences).

    Parameters
    ----------
    observations : polars.DataFrame, polars.LazyFrame, pandas.DataFrame or pyarrow.Table
        Observation table with judge ``score`` and gold scores on part of the items.
    gold : str, default 'gold_score'
        Column of gold scores.
    confidence_level : float, default 0.95
        Level of the intervals.
    lam : float, optional
        Fixed weight of the judge; default power-tuned.
    by : tuple of str, default ('dataset', 'metric')
        Columns that define the groups; models are compared within each group.
    column : str, default 'model'
        The column whose values are compared.
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
        One row per group and pair (``model_a < model_b``) with the columns of
        :func:`ppi_mean` for the item differences ``a - b`` (``estimate`` is the difference),
        ``statistic`` (estimate / se) and ``pvalue`` (two-sided normal test of no difference,
        unadjusted); bounds are clipped to plus or minus the metric's range.

    Notes
    -----
    Paired on items both models answered: :math:`Y_i = y_{a,i} - y_{b,i}`,
    :math:`f_i = f_{a,i} - f_{b,i}`, labelled where both have a gold score; then
    :func:`ppi_kernel`. Checked against: the PPI++ formulas and a coverage simulation
    (``tests/compare/test_ppi.py``).

    Examples
    --------
    >>> from evalstats.simulate import judged_observations
    >>> obs = judged_observations(n_models=2, n_items=400, n_labelled=100, seed=0)
    >>> ppi_difference(obs).select("model_a", "model_b", "n_labelled").rows()
    [('m0', 'm1', 100)]
    """
    observations = analysis_input(observations, roles=roles, design=design).table
    level = check_confidence_level(confidence_level)
    _check(level, lam)
    by = (by,) if isinstance(by, str) else tuple(by)
    items = _item_table(observations, gold, by, column)
    unit = [c for c in ("dataset", "item") if c not in by]
    rows = []
    groups = items.partition_by(list(by), as_dict=True, maintain_order=True) if by else {(): items}
    bounds_of = _metric_bounds(observations, by)
    for key, g in groups.items():
        lo, hi = bounds_of(key)
        span = hi - lo  # a difference of two bounded scores lies in [-span, span]
        g = g.with_columns(pl.col(column).cast(pl.String))
        f = g.pivot(on=column, index=unit, values="f", sort_columns=True).sort(unit)
        y = g.pivot(on=column, index=unit, values="y", sort_columns=True).sort(unit)
        models = [c for c in f.columns if c not in unit]
        if len(models) < 2:
            raise InsufficientDataError(f"PPI differences need at least 2 models, got {models}.")
        for a, b in combinations(models, 2):
            both = f[a].is_not_null() & f[b].is_not_null()
            lab = both & y[a].is_not_null() & y[b].is_not_null()
            unl = both & ~lab
            fd = (f[a] - f[b]).to_numpy()
            yd = (y[a] - y[b]).to_numpy()
            lm, um = lab.to_numpy(), unl.to_numpy()
            r = _row(yd[lm], fd[lm], fd[um], level, lam, (-span, span))
            stat = r["estimate"] / r["se"] if r["se"] > 0 else math.nan
            p = float(2 * stats.norm.sf(abs(stat))) if not math.isnan(stat) else math.nan
            rows.append(
                dict(zip(by, key))
                | {"model_a": a, "model_b": b}
                | r
                | {"statistic": stat, "pvalue": p}
            )
    schema = {"model_a": pl.String, "model_b": pl.String} | _MEAN_SCHEMA
    schema |= {"statistic": pl.Float64, "pvalue": pl.Float64}
    out = pl.DataFrame(rows, schema_overrides=schema).select([*by, *schema])
    return out.sort([*by, "model_a", "model_b"])
