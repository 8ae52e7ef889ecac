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
from evalstats.results import check_choice, check_confidence_level
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


def _item_table(
    observations, gold: str, by: Sequence[str], column: str, cluster: str | None = None
) -> tuple[pl.DataFrame, str | None]:
    """Item means of judge and gold scores (and each item's cluster), and the cluster used."""
    lf = validate_observations(observations, require_item=True)
    names = lf.collect_schema().names()
    if cluster is None and "cluster" in names:
        cluster = "cluster"
    elif cluster is None:
        from evalstats.compare._intervals import warn_cluster_candidates

        warn_cluster_candidates(lf)
    if cluster is not None and cluster not in names:
        raise ParameterError(f"`cluster` names {cluster!r}, which is not a column of the table.")
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
            *([pl.col(cluster).first().cast(pl.String).alias("__g")] if cluster else []),
        )
        .sort(keys)
        .collect()
    ), cluster


def _gold_cells(
    observations, gold: str, by: Sequence[str], column: str, variant_factors
) -> pl.DataFrame | None:
    """Labelled (item, prompt) cells with their gold means, when a group has 2+ prompts."""
    from evalstats.compare._intervals import _prompt_id

    lf = validate_observations(observations, require_item=True)
    prompt = _prompt_id(lf, (*by, column), variant_factors)
    item_key = pl.concat_str(
        [pl.col("dataset").cast(pl.String), pl.col("item").cast(pl.String)], separator="\x1f"
    )
    cells = (
        lf.filter(pl.col(gold).is_not_null())
        .with_columns(item_key.alias("__item"), prompt.alias("__p"))
        .group_by([*dict.fromkeys([*by, column]), "__item", "__p"])
        .agg(pl.col(gold).cast(pl.Float64).mean().alias("__y"))
        .sort([*dict.fromkeys([*by, column]), "__item", "__p"])
        .collect()
    )
    if not cells.height or cells["__p"].n_unique() < 2:
        return None
    return cells


def _prompt_term(cells: pl.DataFrame | None, where: dict) -> tuple[float, float] | None:
    """The prompt part of the variance (from gold cells) of one estimate, and its pieces.

    None when the target is not the prompt space (one prompt variant among the gold cells).
    """
    from evalstats.compare._design_var import prompt_part

    if cells is None:
        return None
    sub = cells.filter(*[pl.col(k).eq_missing(v) for k, v in where.items()]) if where else cells
    if sub.height < 4 or sub["__p"].n_unique() < 2:
        return None
    var, piece_b, piece_r, _ = prompt_part(
        sub["__item"].to_numpy(), sub["__p"].to_numpy(), sub["__y"].to_numpy()
    )
    return var, piece_b + piece_r


def _diff_prompt_term(
    cells, where: dict, column: str, a: str, b: str
) -> tuple[float, float] | None:
    """The prompt part for the gold differences ``a - b`` of the cells both have."""
    if cells is None:
        return None
    sub = cells.filter(*[pl.col(k).eq_missing(v) for k, v in where.items()]) if where else cells
    sub = sub.with_columns(pl.col(column).cast(pl.String))
    ya = sub.filter(pl.col(column) == a).select("__item", "__p", "__y")
    yb = sub.filter(pl.col(column) == b).select("__item", "__p", "__y")
    both = ya.join(yb, on=["__item", "__p"], suffix="_b").sort("__item", "__p")
    diff = both.with_columns((pl.col("__y") - pl.col("__y_b")).alias("__y"))
    return _prompt_term(diff.select("__item", "__p", "__y"), {})


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
    "n_clusters": pl.Int64,
    "df": pl.Float64,
}


def _cluster_se(y, f_lab, f_unlab, lam: float, g_lab, g_unl) -> tuple[float, int]:
    r"""Cluster-robust (CR1) SE of the PPI++ estimate, and the number of clusters.

    The estimate minus its target is, to first order, a sum of item contributions:
    :math:`(Y_i - \lambda f_i - \overline{Y - \lambda f})/n` for a labelled item and
    :math:`\lambda (f_j - \bar f_N)/N` for an unlabelled one; summed by cluster (a cluster may
    hold both), :math:`\widehat{\mathrm{Var}} = \frac{G}{G-1}\sum_g S_g^2`.
    """
    n, big_n = y.size, f_unlab.size
    r = y - lam * f_lab
    contrib = list((r - r.mean()) / n)
    labels = list(g_lab)
    if big_n:
        contrib += list(lam * (f_unlab - f_unlab.mean()) / big_n)
        labels += list(g_unl)
    _, codes = np.unique(np.asarray(labels, dtype=object).astype(str), return_inverse=True)
    g = int(codes.max()) + 1 if codes.size else 0
    if g < 2:
        return math.nan, g
    sums = np.bincount(codes, weights=np.asarray(contrib), minlength=g)
    return math.sqrt(g / (g - 1) * float(np.sum(sums**2))), g


def _row(y, f_lab, f_unlab, level, lam, bounds, clusters=None, prompt=None):
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
    n_clusters = None
    method = "ppi++" if lam is None else f"ppi(lam={lam:g})"
    df = math.inf
    if clusters is not None and n >= 2:
        se, n_clusters = _cluster_se(y, f_lab, f_unlab, float(k["lam"]), *clusters)
        df = float(max(n_clusters - 1, 1))
        k = {**k, "se": se}
        method += "-cluster"
    if prompt is not None:  # the mean over the prompt space: the gold prompt variance counts
        var_p, pieces = prompt
        var_i = float(k["se"]) ** 2
        var = var_i + var_p
        denom = (var_i**2 / df if math.isfinite(df) else 0.0) + pieces
        df = var**2 / denom if denom > 0 else df
        k = {**k, "se": math.sqrt(var)}
        method += "-prompts"
    if method != ("ppi++" if lam is None else f"ppi(lam={lam:g})"):
        q = stats.t.isf((1 - level) / 2, df) if math.isfinite(df) else z
        k = {**k, "ci_low": k["estimate"] - q * k["se"], "ci_high": k["estimate"] + q * k["se"]}

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
        "method": method,
        "n_clusters": n_clusters,
        "df": df if math.isfinite(df) else None,
    }


def ppi_mean(
    observations: TableLike,
    *,
    gold: str = "gold_score",
    confidence_level: float = 0.95,
    lam: float | None = None,
    by: Sequence[str] = ("model", "dataset", "metric"),
    cluster: str | None = None,
    over: str = "auto",
    variant_factors: Sequence[str] | str | None = None,
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
    cluster : str, optional
        Column naming each item's cluster (default: the ``cluster`` column when there is one):
        the standard error is then cluster-robust (CR1 on the estimator's item contributions,
        labelled and unlabelled items of one cluster together) with :math:`t_{G-1}` quantiles,
        and ``method`` ends in ``-cluster``.
    over : {'auto', 'recorded-prompts'}, default 'auto'
        With two or more prompt variants, ``'auto'`` estimates the mean over the prompt space:
        the prompt variance of the gold scores (from the labelled (item, prompt) cells, the
        design's moment estimate) is added, with Satterthwaite df, and ``method`` ends in
        ``-prompts``. ``'recorded-prompts'``: conditional on the recorded prompts.
    variant_factors : sequence of str, str or None, default None
        Which factor columns make the prompt variants (settings are not prompts).
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
    _input = analysis_input(observations, roles=roles, design=design)
    observations, variant_factors = _input.table, _input.variant_factors(variant_factors)
    level = check_confidence_level(confidence_level)
    _check(level, lam)
    by = (by,) if isinstance(by, str) else tuple(by)
    column = "model" if "model" in by else by[0]
    items, cluster = _item_table(observations, gold, by, column, cluster)
    check_choice("over", over, ("auto", "recorded-prompts"))
    cells = _gold_cells(observations, gold, by, column, variant_factors) if over == "auto" else None
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
                (lab["__g"].to_numpy(), unl["__g"].to_numpy()) if cluster else None,
                _prompt_term(cells, dict(zip(by, key))),
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
    cluster: str | None = None,
    over: str = "auto",
    variant_factors: Sequence[str] | str | None = None,
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
    cluster : str, optional
        Column naming each item's cluster (default: the ``cluster`` column when there is one):
        cluster-robust standard errors as in :func:`ppi_mean`; the test uses :math:`t_{G-1}`.
    over : {'auto', 'recorded-prompts'}, default 'auto'
        As in :func:`ppi_mean`, on the gold differences of the labelled cells.
    variant_factors : sequence of str, str or None, default None
        Which factor columns make the prompt variants.
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
    _input = analysis_input(observations, roles=roles, design=design)
    observations, variant_factors = _input.table, _input.variant_factors(variant_factors)
    level = check_confidence_level(confidence_level)
    _check(level, lam)
    by = (by,) if isinstance(by, str) else tuple(by)
    items, cluster = _item_table(observations, gold, by, column, cluster)
    check_choice("over", over, ("auto", "recorded-prompts"))
    cells = _gold_cells(observations, gold, by, column, variant_factors) if over == "auto" else None
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
        gl = (
            g.group_by(unit).agg(pl.col("__g").first()).sort(unit)["__g"].to_numpy()
            if cluster
            else None
        )
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
            cl = (gl[lm], gl[um]) if gl is not None else None
            prompt = _diff_prompt_term(cells, dict(zip(by, key)), column, a, b)
            r = _row(yd[lm], fd[lm], fd[um], level, lam, (-span, span), cl, prompt)
            stat = r["estimate"] / r["se"] if r["se"] > 0 else math.nan
            if math.isnan(stat):
                p = math.nan
            elif r["df"] is not None:
                p = float(2 * stats.t.sf(abs(stat), r["df"]))
            else:
                p = float(2 * stats.norm.sf(abs(stat)))
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
