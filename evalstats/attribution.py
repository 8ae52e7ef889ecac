"""Configuration attribution: factorial ANOVA with η² and permutation p-values, OLS and xgboost.

Which components of a configuration (language, prompt format, shots, CoT, temperature, ...)
move accuracy, and by how much? :func:`factor_anova` answers with a factorial ANOVA (main
effects and two-way interactions, η², F tests and Freedman–Lane permutation p-values);
:func:`attribute` with a linear model (coefficients per level, partial R²) or xgboost
(mean |SHAP| per factor against a null band from refits on permuted scores).
:func:`interaction_means` gives the cell means behind an interaction heatmap.

The numeric cores (``_anova_core``, ``_permute_f``, ``_ols``) are private numpy functions of this
module: plain arrays in, arrays out.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from evalstats.errors import (
    DegenerateDataWarning,
    InsufficientDataError,
    MissingDependencyError,
    ParameterError,
    SchemaError,
)
from evalstats.schema import (
    metric_info,
    single_metric,
    unit_interval_metrics,
    validate_observations,
    validate_units,
)

__all__ = [
    "AnovaResult",
    "AttributionResult",
    "attribute",
    "factor_anova",
    "interaction_means",
]

_ANOVA_SCHEMA: dict[str, pl.DataType] = {
    "term": pl.String(),
    "df": pl.Int64(),
    "sum_sq": pl.Float64(),
    "mean_sq": pl.Float64(),
    "statistic": pl.Float64(),
    "pvalue": pl.Float64(),
    "pvalue_perm": pl.Float64(),
    "eta_sq": pl.Float64(),
    "partial_eta_sq": pl.Float64(),
}

_IMPORTANCE_SCHEMA: dict[str, pl.DataType] = {
    "factor": pl.String(),
    "n_levels": pl.Int64(),
    "mean_abs_shap": pl.Float64(),
    "null_high": pl.Float64(),
    "above_null": pl.Boolean(),
    "partial_r_sq": pl.Float64(),
}

_COEF_SCHEMA: dict[str, pl.DataType] = {
    "factor": pl.String(),
    "level": pl.String(),
    "reference": pl.Boolean(),
    "estimate": pl.Float64(),
    "std_err": pl.Float64(),
    "statistic": pl.Float64(),
    "pvalue": pl.Float64(),
    "ci_low": pl.Float64(),
    "ci_high": pl.Float64(),
    "confidence_level": pl.Float64(),
}

#: Budget of float64 cells of one block of permuted residuals (about 16 MB).
_CHUNK_CELLS = 2_000_000


# ---------------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AnovaResult:
    """Result of :func:`factor_anova`.

    Attributes
    ----------
    table : polars.DataFrame
        One row per term plus ``Residual``; see :meth:`to_frame`.
    ss_type : int
        Sums of squares type (1, 2 or 3).
    interactions : int
        Highest order of the terms (1: main effects, 2: also two-way interactions).
    n_resamples : int
        Permutations per term.
    seed : int
        Seed of the permutations.
    block : str, tuple of str or None
        Column(s) within whose levels the residuals were permuted.
    n_obs : int
        Rows analysed (units, or item rows with ``block='item'``), after averaging runs.
    runs : str
        ``'mean'`` (runs averaged per configuration) or ``'replicates'``.
    method : str
        ``"freedman-lane"`` (permutation scheme).
    null_distribution : numpy.ndarray
        Permutation F statistics, shape ``(n_terms, n_resamples)``, rows in the order of
        ``terms``.
    terms : tuple of str
        Term names in model order (the row order of ``null_distribution``).
    """

    table: pl.DataFrame
    ss_type: int
    interactions: int
    n_resamples: int
    seed: int
    block: str | tuple[str, ...] | None
    n_obs: int
    runs: str = "mean"
    method: str = "freedman-lane"
    null_distribution: np.ndarray = field(repr=False, default_factory=lambda: np.empty((0, 0)))
    terms: tuple[str, ...] = field(repr=False, default=())

    def to_frame(self) -> pl.DataFrame:
        """The ANOVA table: ``term, df, sum_sq, mean_sq, statistic, pvalue, pvalue_perm, eta_sq,
        partial_eta_sq``, terms sorted by ``eta_sq`` descending, then the ``Residual`` row.
        """  # noqa: D205
        return self.table

    def strongest_interaction(self) -> str | None:
        """Name of the two-way term with the largest η² (None without interaction terms)."""
        rows = self.table.filter(pl.col("term").str.contains(":", literal=True))
        if rows.height == 0:
            return None
        return rows.sort("eta_sq", descending=True, nulls_last=True)["term"][0]


@dataclass(frozen=True, slots=True)
class AttributionResult:
    """Result of :func:`attribute`.

    Attributes
    ----------
    importance : polars.DataFrame
        One row per factor; see :meth:`to_frame`.
    coefficients : polars.DataFrame
        ``method='linear'``: one row per factor level (``factor, level, reference, estimate,
        std_err, statistic, pvalue, ci_low, ci_high, confidence_level``); empty for xgboost.
    method : str
        ``"xgboost"`` or ``"linear"``.
    cv_r_sq : float
        Cross-validated R² of the model (out-of-fold predictions, ``n_folds`` folds).
    n_folds : int
        Folds of the cross-validation.
    n_null : int
        Refits on permuted scores behind the null band.
    confidence_level : float
        Coverage of the null band and of the coefficient intervals.
    seed : int
        Seed of the folds, the permutations and xgboost.
    n_obs : int
        Units analysed (after averaging runs with ``runs='mean'``).
    runs : str
        ``'mean'`` (runs averaged per configuration) or ``'replicates'``.
    score_scale : str
        The scale of ``mean_abs_shap`` and of the coefficients.
    null_distribution : numpy.ndarray
        Mean |SHAP| of each refit on permuted scores, shape ``(n_null, n_factors)`` in the order
        of ``factors``.
    factors : tuple of str
        Factor names in the order given.
    """

    importance: pl.DataFrame
    coefficients: pl.DataFrame
    method: str
    cv_r_sq: float
    n_folds: int
    n_null: int
    confidence_level: float
    seed: int
    n_obs: int
    runs: str = "mean"
    score_scale: str = "score (0-1; 0.01 = one accuracy point)"
    null_distribution: np.ndarray = field(repr=False, default_factory=lambda: np.empty((0, 0)))
    factors: tuple[str, ...] = field(repr=False, default=())

    def to_frame(self) -> pl.DataFrame:
        """Per-factor table: ``factor, n_levels, mean_abs_shap, null_high, above_null,
        partial_r_sq`` (``partial_r_sq`` is null for xgboost), sorted by ``mean_abs_shap``.
        """  # noqa: D205
        return self.importance


# ---------------------------------------------------------------------------------------------
# Validation and coding
# ---------------------------------------------------------------------------------------------


def _validate_factors(factors: Sequence[str] | str, names: Sequence[str], table: str) -> list[str]:
    if isinstance(factors, str):
        factors = [f.strip() for f in factors.split(",") if f.strip()]
    factors = list(factors)
    if not factors:
        raise ParameterError("`factors` must name at least one column, got none.")
    if len(set(factors)) != len(factors):
        dup = next(f for f in factors if factors.count(f) > 1)
        raise ParameterError(f"`factors` names {dup!r} twice.")
    for f in factors:
        if f not in names:
            raise SchemaError(
                f"`factors` names {f!r}, which is not a column of the {table} "
                f"(columns: {', '.join(names)})."
            )
        if f in ("score", "n_items", "n_errors"):
            raise ParameterError(f"`factors` names {f!r}, which is a measurement, not a factor.")
    return factors


def _codes(values: pl.Series, name: str, table: str) -> tuple[list[Any], np.ndarray]:
    """Sorted levels and integer codes of a factor column."""
    if values.null_count():
        row = int(values.is_null().arg_true()[0]) + 1
        raise SchemaError(
            f"{table}, row {row}, column {name!r}: a factor value is null; "
            "drop those rows or fill them with a level name."
        )
    levels = values.unique().sort()
    lookup = pl.DataFrame({name: levels, "__code": np.arange(levels.len(), dtype=np.int64)})
    codes = values.to_frame(name).join(lookup, on=name, how="left", maintain_order="left")
    return levels.to_list(), codes["__code"].to_numpy()


def _block_columns(block: str | Sequence[str] | None) -> list[str]:
    """``block`` as a list of column names (empty when there is none)."""
    if block is None:
        return []
    cols = [block] if isinstance(block, str) else list(block)
    if not cols or not all(isinstance(c, str) and c for c in cols):
        raise ParameterError(
            f"`block` must be a column name or a sequence of column names, got {block!r}."
        )
    return cols


#: Name of the combined block column (the levels of several block columns, joined).
_BLOCK = "__block"


def _rows(
    frame: pl.DataFrame | pl.LazyFrame,
    factors: Sequence[str] | str,
    block: str | Sequence[str] | None,
    runs: str = "mean",
) -> tuple[pl.DataFrame, list[str], str]:
    """Validated rows: item rows when ``block`` holds ``'item'``, else the unit table.

    With ``runs='mean'`` the repeated runs of a configuration are averaged first (one row per
    model, dataset, variant, factor values, block and, for item rows, item). A combined block
    column ``__block`` holds the joined levels of the block columns.
    """
    if runs not in ("mean", "replicates"):
        raise ParameterError(f"`runs` must be 'mean' or 'replicates', got {runs!r}.")
    blocks = _block_columns(block)
    if "item" in blocks:
        lf = validate_observations(frame, require_item=True)
        table = "observation table"
    else:
        lf = validate_units(frame)
        table = "unit table"
    names = lf.collect_schema().names()
    factors = _validate_factors(factors, names, table)
    single_metric(lf, analysis="the variance attribution")
    for b in blocks:
        if b not in names:
            raise SchemaError(
                f"`block` names {b!r}, which is not a column of the {table} "
                f"(columns: {', '.join(names)})."
            )
        if b in factors:
            raise ParameterError(f"`block` {b!r} is also in `factors`; a block is not a factor.")
    keys = list(dict.fromkeys([*factors, *blocks]))
    # null factor levels are reported with the input row, before any averaging
    nulls = (
        lf.select(pl.any_horizontal(pl.col(k).is_null() for k in keys).arg_true().first())
        .collect()
        .item()
    )
    if nulls is not None:
        row = lf.slice(int(nulls), 1).collect().row(0, named=True)
        name = next(k for k in keys if row[k] is None)
        what = "a block value" if name in blocks else "a factor value"
        raise SchemaError(
            f"{table}, row {int(nulls) + 1}, column {name!r}: {what} is null; "
            "drop those rows or fill them with a level name."
        )
    if runs == "mean" and "run" in names and "run" not in keys:
        unit_keys = [c for c in ("model", "dataset", "metric", "variant", "item") if c in names]
        keys = list(dict.fromkeys([*unit_keys, *keys]))
        lf = lf.group_by(keys).agg(pl.col("score").mean()).sort(keys, nulls_last=True)
    data = lf.select([*factors, *blocks, "score"]).collect()
    if blocks:
        data = data.with_columns(
            pl.concat_str(
                [pl.col(b).cast(pl.String).fill_null("<null>") for b in blocks], separator="|"
            ).alias(_BLOCK)
        )
    return data, factors, table


def _sum_coding(codes: np.ndarray, k: int) -> np.ndarray:
    """Sum-to-zero contrasts (the last level is -1 in every column), as patsy's ``Sum``."""
    x = np.zeros((codes.size, k - 1))
    rows = codes < k - 1
    x[np.flatnonzero(rows), codes[rows]] = 1.0
    x[codes == k - 1, :] = -1.0
    return x


def _orth(a: np.ndarray, scale: float) -> np.ndarray:
    """Orthonormal basis of the column space of ``a``; singular values below 1e-10·scale dropped."""
    if a.shape[1] == 0 or scale == 0:
        return np.zeros((a.shape[0], 0))
    u, s, _ = np.linalg.svd(a, full_matrices=False)
    return u[:, s > 1e-10 * scale]


def _project_out(q: np.ndarray, a: np.ndarray) -> np.ndarray:
    return a - q @ (q.T @ a) if q.shape[1] else a


# ---------------------------------------------------------------------------------------------
# ANOVA core (numpy only)
# ---------------------------------------------------------------------------------------------


def _reduced_terms(terms: list[tuple[int, ...]], t: int, ss_type: int) -> list[int]:
    """Indices of the terms in the model that term ``t`` is added to."""
    if ss_type == 1:
        return list(range(t))
    if ss_type == 3:
        return [j for j in range(len(terms)) if j != t]
    own = set(terms[t])
    return [j for j in range(len(terms)) if j != t and not own.issubset(terms[j])]


def _anova_core(
    y: np.ndarray,
    columns: list[np.ndarray],
    terms: list[tuple[int, ...]],
    nuisance: np.ndarray,
    ss_type: int,
) -> dict[str, Any]:
    """Sums of squares of each term by model comparison on orthonormal bases.

    ``nuisance`` is an orthonormal basis of the intercept (or of the block indicators); every
    model contains it. Returns ``rss``, ``df_res``, ``q_x`` (orthonormal basis of the full model
    with the nuisance space projected out), ``resid`` (full-model residual r), ``sst``, and per
    term ``ss``, ``df``, ``a`` and ``b``: the reduced model's residual is r + Q_X a and the
    term's added space has orthonormal basis Q_X b.
    """
    n = y.size
    yc = _project_out(nuisance, y[:, None])[:, 0]
    xc = [_project_out(nuisance, c) for c in columns]
    scale = {j: float(np.linalg.norm(c, 2)) if c.shape[1] else 0.0 for j, c in enumerate(columns)}
    full_scale = max(scale.values(), default=0.0)
    q_x = _orth(np.hstack(xc), full_scale) if xc else np.zeros((n, 0))
    fit = q_x.T @ yc
    resid = yc - q_x @ fit
    rss = float(resid @ resid)
    df_res = n - nuisance.shape[1] - q_x.shape[1]
    out: dict[str, Any] = {
        "rss": rss,
        "df_res": df_res,
        "q_x": q_x,
        "resid": resid,
        "sst": float(yc @ yc),
        "terms": [],
    }
    # every model lives in span(Q_X): work in its p coordinates, so each term costs O(p^3)
    coords = [q_x.T @ c for c in xc]
    p = q_x.shape[1]
    for t in range(len(terms)):
        red = _reduced_terms(terms, t, ss_type)
        q_r = _orth(np.hstack([coords[j] for j in red]), full_scale) if red else np.zeros((p, 0))
        a = fit - q_r @ (q_r.T @ fit)  # reduced-model residual e_T = resid + Q_X a
        b = _orth(_project_out(q_r, coords[t]), scale[t])  # Q_T = Q_X b
        proj = b.T @ fit
        out["terms"].append({"ss": float(proj @ proj), "df": b.shape[1], "a": a, "b": b})
    return out


def _permutation_indices(
    rng: np.random.Generator, n_perm: int, n: int, block_codes: np.ndarray | None
) -> np.ndarray:
    """``n_perm`` permutations of ``range(n)``, within blocks when ``block_codes`` is given.

    ``block_codes`` must be sorted, so each block is a run of consecutive rows.
    """
    if block_codes is None:
        return rng.permuted(np.tile(np.arange(n), (n_perm, 1)), axis=1)
    keys = block_codes[None, :] + rng.random((n_perm, n))
    return np.argsort(keys, axis=1, kind="stable")


def _chunk_size(n: int, width: int) -> int:
    """Permutations per block so that a block of gathered rows stays near ``_CHUNK_CELLS``."""
    return max(1, _CHUNK_CELLS // max(n * width, 1))


def _permute_f(
    core: dict[str, Any], n_resamples: int, seed: int, block_codes: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """Freedman–Lane permutation F statistics of every term, and the observed F on that path.

    For term T with reduced-model residual e_T, a permuted response is ŷ_R + P e_T; its F is
    ``(|Q_T' P e_T|² / df_T) / ((|e_T|² − |Q_X' P e_T|²) / df_res)`` because ŷ_R lies in every
    model compared. Every e_T = r + Q_X a_T (r the full-model residual), and Q_T = Q_X B_T, so
    one product G = Q_X' P [r, Q_X] per permutation serves all terms: Q_X' P e_T = G [1; a_T]
    and Q_T' P e_T = B_T' G [1; a_T]. A block of permutations is one matrix product of Q_X'
    with the gathered rows of [r, Q_X].
    """
    terms = core["terms"]
    q_x, df_res = core["q_x"], core["df_res"]
    n, p = q_x.shape
    k = len(terms)
    live = [i for i, t in enumerate(terms) if t["df"] > 0]
    basis = np.ascontiguousarray(np.column_stack([core["resid"], q_x]))  # n, p+1
    q_xt = np.ascontiguousarray(q_x.T)
    coef = np.zeros((p + 1, k))
    coef[0, :] = 1.0
    ee = np.zeros(k)
    dfs = np.ones(k)
    b_blocks, owner = [], []
    for i in live:
        t = terms[i]
        coef[1:, i] = t["a"]
        ee[i] = float(core["resid"] @ core["resid"] + t["a"] @ t["a"])
        dfs[i] = t["df"]
        b_blocks.append(t["b"])
        owner += [i] * t["df"]
    b_cat = np.hstack(b_blocks) if b_blocks else np.zeros((p, 0))
    mask = np.zeros((k, b_cat.shape[1]))
    mask[owner, np.arange(b_cat.shape[1])] = 1.0

    def f_stats(idx: np.ndarray) -> np.ndarray:
        b = idx.shape[0]
        gathered = basis[idx.T].reshape(n, b * (p + 1))  # rows of P [r, Q_X], side by side
        g = (q_xt @ gathered).reshape(p, b, p + 1).transpose(1, 0, 2).reshape(b * p, p + 1)
        v = (g @ coef).reshape(b, p, k)  # Q_X' P e_T for every term
        fitted = np.einsum("bpk,bpk->bk", v, v)
        w = v.transpose(0, 2, 1).reshape(b * k, p) @ b_cat  # B' Q_X' P e_T
        ss_t = np.einsum("bkd,kd->bk", (w * w).reshape(b, k, -1), mask)
        rss = np.maximum(ee[None, :] - fitted, 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            return (ss_t / dfs) / (rss / df_res)

    null = np.full((k, n_resamples), np.nan)
    observed = np.full(k, np.nan)
    if not live:
        return null, observed
    observed[live] = f_stats(np.arange(n)[None, :])[0, live]
    rng = np.random.default_rng(seed)
    chunk = _chunk_size(n, p + 1)
    for start in range(0, n_resamples, chunk):
        b = min(chunk, n_resamples - start)
        idx = _permutation_indices(rng, b, n, block_codes)
        null[live, start : start + b] = f_stats(idx)[:, live].T
    return null, observed


# ---------------------------------------------------------------------------------------------
# factor_anova
# ---------------------------------------------------------------------------------------------


def _check_int(name: str, value: Any, allowed: Sequence[int]) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value not in allowed:
        raise ParameterError(
            f"`{name}` must be one of {', '.join(map(str, allowed))}, got {value!r}."
        )
    return int(value)


def factor_anova(
    frame: pl.DataFrame | pl.LazyFrame,
    *,
    factors: Sequence[str] | str,
    interactions: int = 2,
    ss_type: int = 2,
    n_resamples: int = 10000,
    block: str | Sequence[str] | None = None,
    runs: str = "mean",
    seed: int = 0,
) -> AnovaResult:
    """Factorial ANOVA of scores on configuration factors, with η² and permutation p-values.

    Parameters
    ----------
    frame : polars.DataFrame or polars.LazyFrame
        Unit table, one row per (model, dataset, variant, run); an observation table is
        aggregated to units first. With ``block='item'``, the item rows of an observation table
        are analysed instead.
    factors : sequence of str or str
        Factor columns (or one comma-separated string). Each is treated as categorical; its
        levels are its sorted distinct values.
    interactions : {1, 2}, default 2
        1: main effects only; 2: main effects and all two-way interactions (``a:b``).
    ss_type : {1, 2, 3}, default 2
        Sums of squares: 1 sequential (in the order of ``factors``, then the interactions),
        2 hierarchical (each term after all terms that do not contain it), 3 marginal (each
        term after all others, sum-to-zero coding).
    n_resamples : int, default 10000
        Permutations per term for ``pvalue_perm`` (0 skips them; ``pvalue_perm`` is then null).
    block : str or sequence of str, optional
        Column(s) whose level combinations are blocks (e.g. ``("model", "dataset")``): the
        blocks enter every model as a nuisance fixed effect and residuals are permuted only
        within them. ``'item'`` analyses item-level rows, so permutations keep each item's
        difficulty.
    runs : {'mean', 'replicates'}, default 'mean'
        ``'mean'`` averages the repeated runs of each configuration (model, dataset, variant,
        and item for item rows) before the analysis: the configuration is the experimental
        unit. ``'replicates'`` keeps every run as a row, which is right only when runs are
        independent replicates of the whole configuration (see Notes).
    seed : int, default 0
        Seed of the permutations; the same seed gives the same p-values.

    Returns
    -------
    AnovaResult
        ``to_frame()`` has one row per term and a ``Residual`` row with columns ``term, df,
        sum_sq, mean_sq, statistic, pvalue, pvalue_perm, eta_sq, partial_eta_sq``, terms sorted
        by ``eta_sq`` descending; ``ss_type`` records the sums of squares used.

    Raises
    ------
    SchemaError
        A factor or the block is not a column, or a factor value is null.
    ParameterError
        ``interactions``, ``ss_type`` or ``n_resamples`` is out of its domain.
    InsufficientDataError
        A factor has a single level, or no residual degrees of freedom are left.

    See Also
    --------
    attribute : Linear and xgboost attribution of the same factors.
    interaction_means : Cell means of a two-way term, for the heatmap.

    Notes
    -----
    Each term's sum of squares is a difference of residual sums of squares,
    SS(T) = RSS(R) − RSS(R + T), where the reduced model R holds the terms before T (Type I),
    the terms that do not contain T (Type II) or all other terms (Type III). Factors use
    sum-to-zero coding, which Type III needs (treatment coding tests a different hypothesis)
    and which leaves Types I and II unchanged. Models are compared on orthonormal bases, so
    unbalanced designs and missing cells are handled: ``df`` is the rank a term adds, and a
    term fully aliased by others gets ``df`` 0 and null statistics (with a warning).

    F = (SS(T)/df(T)) / (RSS/df_res) with the full model's residual; ``pvalue`` is its F-test
    p-value. η² = SS(T)/SS_total and partial η² = SS(T)/(SS(T) + RSS). The η² of the terms and
    the residual add up to 1 (to R² without the residual) only under Type I; under Types II
    and III they need not.

    ``pvalue_perm`` follows Freedman and Lane (1983): fit the reduced model R, permute its
    residuals e, rebuild y* = ŷ_R + P e, and recompute F; p = (1 + #{F* ≥ F}) / (1 + B). All
    terms share the same B permutations. The design is factored once: with Q_T an orthonormal
    basis of what T adds to R and Q_X one of the full model, F* = (|Q_T' P e|²/df_T) /
    ((|e|² − |Q_X' P e|²)/df_res). Every e = r + Q_X a (r the full-model residual) and
    Q_T = Q_X B, so one product G = Q_X' P [r, Q_X] per permutation gives every term's F*;
    a block of permutations is one matrix product with the gathered rows of [r, Q_X].
    With ``block``, SS_total, η² and the residual are within blocks.

    Repeated runs of one configuration share everything that is fixed for that configuration
    (its prompt's idiosyncratic effect on the same items, its higher-order interactions), so
    they are pseudo-replicates (Hurlbert, 1984): counting them as rows shrinks the residual
    mean square towards run-to-run noise and makes F and permutation tests anticonservative,
    with spurious interactions. Hence ``runs='mean'`` by default, which is also the
    evaluatology paper's unit (one accuracy per sampled configuration).

    Checked against: statsmodels ``anova_lm`` Types I, II and III (``C(f, Sum)``) on an
    unbalanced design with missing cells, fixtures/reference/anova/ (SS, F, p to 1e-8).

    References
    ----------
    .. [1] Freedman, D. and Lane, D. (1983). A nonstochastic interpretation of reported
       significance levels. Journal of Business & Economic Statistics 1(4), 292-298.
    .. [2] Winkler, A. M. et al. (2014). Permutation inference for the general linear model.
       NeuroImage 92, 381-397.
    .. [3] Hurlbert, S. H. (1984). Pseudoreplication and the design of ecological field
       experiments. Ecological Monographs 54(2), 187-211.

    Examples
    --------
    >>> from evalstats.simulate import unit_table
    >>> units = unit_table(n_models=1, n_items=100, n_runs=3, instability=0.5, seed=0,
    ...                    factors={"shots": {0: 0.0, 5: 0.1}, "cot": {False: 0.0, True: 0.0},
    ...                             "template": {"a": 0.0, "b": 0.0, "c": 0.0}})
    >>> res = factor_anova(units, factors=["shots", "cot", "template"], interactions=1,
    ...                    n_resamples=999, seed=0)
    >>> res.ss_type, res.runs, res.n_obs  # 36 run-level units, 12 configurations
    (2, 'mean', 12)
    >>> res.to_frame().select("term", "df", "pvalue_perm").rows()
    [('shots', 1, 0.011), ('template', 2, 0.298), ('cot', 1, 0.585), ('Residual', 7, None)]
    """
    interactions = _check_int("interactions", interactions, (1, 2))
    ss_type = _check_int("ss_type", ss_type, (1, 2, 3))
    if (
        isinstance(n_resamples, bool)
        or not isinstance(n_resamples, (int, np.integer))
        or n_resamples < 0
    ):
        raise ParameterError(f"`n_resamples` must be a non-negative integer, got {n_resamples!r}.")
    data, factors, table = _rows(frame, factors, block, runs)
    if block is not None:
        data = data.sort(_BLOCK, maintain_order=True)
    y = data["score"].to_numpy().astype(float)
    n = y.size

    main_cols: list[np.ndarray] = []
    for f in factors:
        levels, codes = _codes(data[f], f, table)
        if len(levels) < 2:
            raise InsufficientDataError(
                f"factor {f!r} has a single level ({levels[0]!r}) in the {table}; "
                "an effect needs at least two levels."
            )
        main_cols.append(_sum_coding(codes, len(levels)))
    terms: list[tuple[int, ...]] = [(i,) for i in range(len(factors))]
    if interactions == 2:
        terms += list(itertools.combinations(range(len(factors)), 2))
    columns = []
    for t in terms:
        if len(t) == 1:
            columns.append(main_cols[t[0]])
        else:
            a, b = main_cols[t[0]], main_cols[t[1]]
            columns.append((a[:, :, None] * b[:, None, :]).reshape(n, -1))
    names = [":".join(factors[i] for i in t) for t in terms]

    if block is None:
        nuisance = np.full((n, 1), 1.0 / np.sqrt(n))
        block_codes = None
    else:
        _, block_codes = _codes(data[_BLOCK], _BLOCK, table)
        counts = np.bincount(block_codes)
        nuisance = np.zeros((n, counts.size))
        nuisance[np.arange(n), block_codes] = 1.0 / np.sqrt(counts[block_codes])
        block_codes = block_codes.astype(float)

    core = _anova_core(y, columns, terms, nuisance, ss_type)
    df_res, rss, sst = core["df_res"], core["rss"], core["sst"]
    if df_res <= 0:
        raise InsufficientDataError(
            f"no residual degrees of freedom: {n} rows for a model of rank {n - df_res}. "
            "Use `interactions=1`, fewer factors, or more runs."
        )
    if n_resamples:
        null, observed = _permute_f(core, int(n_resamples), seed, block_codes)
    else:
        null, observed = np.empty((len(terms), 0)), np.full(len(terms), np.nan)

    from scipy import stats

    rows = []
    if rss <= 1e-12 * sst:  # an exact fit up to rounding
        rss = 0.0
    mse = rss / df_res
    for i, (name, t) in enumerate(zip(names, core["terms"])):
        ss, d = t["ss"], t["df"]
        if d == 0:
            warnings.warn(
                f"term {name!r} is fully aliased by the other terms (no cells separate it); "
                "its statistics are NaN.",
                DegenerateDataWarning,
                stacklevel=2,
            )
            rows.append((name, 0, 0.0, None, None, None, None, 0.0, None))
            continue
        if mse > 0:
            f = (ss / d) / mse
            p = float(stats.f.sf(f, d, df_res))
        else:
            f, p = float("nan"), float("nan")
        if n_resamples and mse > 0 and np.isfinite(observed[i]):
            hits = int(np.sum(null[i] >= observed[i] * (1 - 1e-9)))
            pp: float | None = (1 + hits) / (1 + n_resamples)
        else:
            pp = None
        eta = ss / sst if sst > 0 else float("nan")
        peta = ss / (ss + rss) if ss + rss > 0 else float("nan")
        rows.append((name, d, ss, ss / d, f, p, pp, eta, peta))
    if mse == 0:
        warnings.warn(
            "the model fits the scores exactly (residual sum of squares 0); F statistics are NaN.",
            DegenerateDataWarning,
            stacklevel=2,
        )
    body = pl.DataFrame(rows, schema=_ANOVA_SCHEMA, orient="row")
    body = (
        body.with_row_index("__order")
        .sort(["eta_sq", "__order"], descending=[True, False], nulls_last=True)
        .drop("__order")
    )
    resid = pl.DataFrame(
        [("Residual", df_res, rss, mse, None, None, None, None, None)],
        schema=_ANOVA_SCHEMA,
        orient="row",
    )
    return AnovaResult(
        table=pl.concat([body, resid]),
        ss_type=ss_type,
        interactions=interactions,
        n_resamples=int(n_resamples),
        seed=seed,
        block=block if block is None or isinstance(block, str) else tuple(block),
        n_obs=n,
        runs=runs,
        null_distribution=null,
        terms=tuple(names),
    )


def interaction_means(
    frame: pl.DataFrame | pl.LazyFrame, *, term: str | Sequence[str]
) -> pl.DataFrame:
    """Mean score in each cell of a two-way term (the data of an interaction heatmap).

    Parameters
    ----------
    frame : polars.DataFrame or polars.LazyFrame
        Unit table (an observation table is aggregated to units first).
    term : str or sequence of str
        ``"a:b"`` or ``("a", "b")``.

    Returns
    -------
    polars.DataFrame
        One row per observed cell with columns ``term, level_a, level_b, score, n`` (levels as
        strings, ``score`` the mean unit score, ``n`` the units), sorted by the levels.

    Examples
    --------
    >>> from evalstats.simulate import unit_table
    >>> units = unit_table(n_models=1, n_items=50, seed=0,
    ...                    factors={"shots": {0: 0.0, 5: 0.1}, "cot": {False: 0.0, True: 0.05}})
    >>> interaction_means(units, term="shots:cot").select("level_a", "level_b", "n").rows()
    [('0', 'false', 1), ('0', 'true', 1), ('5', 'false', 1), ('5', 'true', 1)]
    """
    parts = term.split(":") if isinstance(term, str) else list(term)
    if len(parts) != 2:
        raise ParameterError(f"`term` must name two factors as 'a:b', got {term!r}.")
    lf = validate_units(frame)
    names = lf.collect_schema().names()
    a, b = _validate_factors(parts, names, "unit table")
    sorted_cells = (
        lf.group_by(a, b)
        .agg(pl.col("score").mean().alias("score"), pl.len().cast(pl.Int64).alias("n"))
        .sort(a, b)
        .collect()
    )
    return sorted_cells.select(
        pl.lit(f"{a}:{b}").alias("term"),
        pl.col(a).cast(pl.String).alias("level_a"),
        pl.col(b).cast(pl.String).alias("level_b"),
        "score",
        "n",
    )


# ---------------------------------------------------------------------------------------------
# attribute: linear model and xgboost
# ---------------------------------------------------------------------------------------------


def _treatment(codes: np.ndarray, k: int) -> np.ndarray:
    x = np.zeros((codes.size, k - 1))
    rows = codes > 0
    x[np.flatnonzero(rows), codes[rows] - 1] = 1.0
    return x


def _ols(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float, int, np.ndarray]:
    """Least squares: coefficients, RSS, residual df, and (X'X)^+ for the covariance."""
    beta, _, rank, _ = np.linalg.lstsq(x, y, rcond=None)
    r = y - x @ beta
    return beta, float(r @ r), y.size - int(rank), np.linalg.pinv(x.T @ x)


def _linear_design(codes: list[np.ndarray], ks: list[int]) -> tuple[np.ndarray, list[slice]]:
    blocks, slices, start = [np.ones((codes[0].size, 1))], [], 1
    for c, k in zip(codes, ks):
        blocks.append(_treatment(c, k))
        slices.append(slice(start, start + k - 1))
        start += k - 1
    return np.hstack(blocks), slices


def _linear_shap(x: np.ndarray, beta: np.ndarray, slices: list[slice]) -> np.ndarray:
    """Mean |SHAP| per factor of a linear model: φ_f(i) = Σ_l β_l (x_il − mean_l)."""
    xc = x - x.mean(axis=0)
    return np.array([np.mean(np.abs(xc[:, s] @ beta[s])) for s in slices])


def _xgb_fit(xgb: Any, x: np.ndarray, y: np.ndarray, factors: list[str], seed: int) -> Any:
    dm = xgb.DMatrix(
        x,
        label=y,
        feature_names=factors,
        feature_types=["c"] * len(factors),
        enable_categorical=True,
        nthread=1,
    )
    params = {
        "objective": "reg:squarederror",
        "max_depth": 3,
        "eta": 0.1,
        "subsample": 1.0,
        "tree_method": "hist",
        "max_cat_to_onehot": 1,
        "nthread": 1,
        "seed": seed,
        "verbosity": 0,
    }
    return xgb.train(params, dm, num_boost_round=200)


def _xgb_predict(
    xgb: Any, booster: Any, x: np.ndarray, factors: list[str], **kw: Any
) -> np.ndarray:
    dm = xgb.DMatrix(
        x,
        feature_names=factors,
        feature_types=["c"] * len(factors),
        enable_categorical=True,
        nthread=1,
    )
    return booster.predict(dm, **kw)


def attribute(
    frame: pl.DataFrame | pl.LazyFrame,
    *,
    factors: Sequence[str] | str,
    method: str = "xgboost",
    seed: int = 0,
    n_null: int = 30,
    confidence_level: float = 0.95,
    n_folds: int = 5,
    runs: str = "mean",
) -> AttributionResult:
    """Attribute unit scores to configuration factors with xgboost (TreeSHAP) or OLS.

    Parameters
    ----------
    frame : polars.DataFrame or polars.LazyFrame
        Unit table (an observation table is aggregated to units first).
    factors : sequence of str or str
        Factor columns (or one comma-separated string), treated as categorical.
    method : {'xgboost', 'linear'}, default 'xgboost'
        ``'xgboost'``: gradient-boosted trees on the factors with native categorical splits;
        ``'linear'``: OLS on treatment-coded factors (first sorted level is the reference).
    seed : int, default 0
        Seed of the cross-validation folds, the permutations and xgboost.
    n_null : int, default 30
        Refits on permuted scores for the null band (0 skips it; the band is then null).
    confidence_level : float, default 0.95
        Coverage of the one-sided null band (its upper end is this quantile of the refits'
        mean |SHAP|) and of the coefficient intervals.
    n_folds : int, default 5
        Folds of the cross-validated R².
    runs : {'mean', 'replicates'}, default 'mean'
        ``'mean'`` averages the repeated runs of each configuration first (the configuration
        is the unit; see :func:`factor_anova`); ``'replicates'`` keeps every run as a row.

    Returns
    -------
    AttributionResult
        ``to_frame()``: one row per factor with ``factor, n_levels, mean_abs_shap,
        null_high, above_null, partial_r_sq``; ``coefficients`` per level (linear);
        ``cv_r_sq``; ``score_scale``.

    Raises
    ------
    SchemaError
        A factor is not a column, or a factor value is null.
    ParameterError
        Unknown ``method``, or ``n_null``, ``n_folds``, ``confidence_level`` out of range.
    InsufficientDataError
        A factor has one level, or there are fewer units than folds.
    MissingDependencyError
        ``method='xgboost'`` and xgboost is not installed.

    See Also
    --------
    factor_anova : ANOVA with η² and permutation p-values.

    Notes
    -----
    Importance is mean |SHAP| on the score scale (0-1, so 0.01 is one accuracy point): for
    xgboost the TreeSHAP contributions from xgboost's own ``pred_contribs`` (one feature per
    factor, native categorical, so no one-hot columns to sum); for OLS the exact linear SHAP
    value φ_f(i) = Σ_l β_l (x_il − x̄_l) over the factor's dummy columns. The null band of a factor
    is [0, ``null_high``], ``null_high`` the ``confidence_level`` quantile of its mean |SHAP|
    over ``n_null`` refits on permuted scores (every factor is null there); ``above_null`` is
    mean |SHAP| > ``null_high``. The band is one-sided because an effect can only raise
    importance; on real scores a null factor usually sits lower still, since the factors that
    matter take up the fit (so the band is conservative for them, never anti-conservative). Fit quality
    ``cv_r_sq`` = 1 − Σ(y − ŷ_oof)²/Σ(y − ȳ)² from out-of-fold predictions.

    OLS: coefficients (difference from the reference level) with t intervals from
    σ²(X'X)⁻¹; partial R² of factor f = (RSS without f − RSS) / RSS without f.
    xgboost settings: 200 rounds, depth 3, learning rate 0.1, one thread.

    Checked against: statsmodels OLS (coefficients, intervals) in tests/test_attribution.py.

    Examples
    --------
    >>> from evalstats.simulate import unit_table
    >>> units = unit_table(n_models=1, n_items=100, n_runs=3, instability=0.5, seed=0,
    ...                    factors={"shots": {0: 0.0, 5: 0.1}, "cot": {False: 0.0, True: 0.0},
    ...                             "template": {"a": 0.0, "b": 0.0, "c": 0.0}})
    >>> res = attribute(units, factors=["shots", "cot", "template"], method="linear",
    ...                 n_null=50, seed=0)
    >>> res.to_frame().select("factor", "above_null").rows()
    [('shots', True), ('template', False), ('cot', False)]
    >>> coef = res.coefficients.filter(~pl.col("reference"))
    >>> coef.select("factor", "level", pl.col("estimate").round(5)).rows()
    [('shots', '5', 0.10389), ('cot', 'true', 0.01722), ('template', 'b', 0.0575), ('template', 'c', 0.00583)]
    """
    if method not in ("xgboost", "linear"):
        raise ParameterError(f"`method` must be 'xgboost' or 'linear', got {method!r}.")
    if isinstance(n_null, bool) or not isinstance(n_null, (int, np.integer)) or n_null < 0:
        raise ParameterError(f"`n_null` must be a non-negative integer, got {n_null!r}.")
    if isinstance(n_folds, bool) or not isinstance(n_folds, (int, np.integer)) or n_folds < 2:
        raise ParameterError(f"`n_folds` must be an integer >= 2, got {n_folds!r}.")
    if not 0 < confidence_level < 1:
        hint = f" Did you mean {confidence_level / 100}?" if 1 < confidence_level < 100 else ""
        raise ParameterError(
            f"`confidence_level` must be in (0, 1), got {confidence_level!r}.{hint}"
        )
    data, factors, table = _rows(frame, factors, None, runs)
    y = data["score"].to_numpy().astype(float)
    n = y.size
    if n < n_folds:
        raise InsufficientDataError(f"{n} units are fewer than `n_folds` = {n_folds}.")
    codes, levels = [], []
    for f in factors:
        lv, c = _codes(data[f], f, table)
        if len(lv) < 2:
            raise InsufficientDataError(
                f"factor {f!r} has a single level ({lv[0]!r}) in the {table}; "
                "an effect needs at least two levels."
            )
        codes.append(c)
        levels.append(lv)
    ks = [len(lv) for lv in levels]
    rng = np.random.default_rng(seed)
    folds = rng.permutation(n) % n_folds
    perms = [rng.permutation(n) for _ in range(n_null)]
    coef = pl.DataFrame(schema=_COEF_SCHEMA)
    partial = [None] * len(factors)

    if method == "linear":
        x, slices = _linear_design(codes, ks)

        def fit_importance(yy: np.ndarray) -> np.ndarray:
            return _linear_shap(x, _ols(x, yy)[0], slices)

        beta, rss, df_res, xtx_inv = _ols(x, y)
        shap = _linear_shap(x, beta, slices)
        oof = np.empty(n)
        for k in range(n_folds):
            test = folds == k
            b = np.linalg.lstsq(x[~test], y[~test], rcond=None)[0]
            oof[test] = x[test] @ b
        coef, partial = _linear_tables(
            x, y, beta, rss, df_res, xtx_inv, slices, factors, levels, confidence_level
        )
    else:
        try:
            import xgboost as xgb
        except ImportError:  # pragma: no cover - xgboost is a dependency
            raise MissingDependencyError(
                'method="xgboost" needs xgboost; pip install "evalstats[attribution]"'
            ) from None
        xf = np.column_stack(codes).astype(float)

        def fit_importance(yy: np.ndarray) -> np.ndarray:
            booster = _xgb_fit(xgb, xf, yy, factors, seed)
            contrib = _xgb_predict(xgb, booster, xf, factors, pred_contribs=True)
            return np.abs(contrib[:, :-1]).mean(axis=0).astype(float)

        shap = fit_importance(y)
        oof = np.empty(n)
        for k in range(n_folds):
            test = folds == k
            booster = _xgb_fit(xgb, xf[~test], y[~test], factors, seed)
            oof[test] = _xgb_predict(xgb, booster, xf[test], factors)

    sst = float(np.sum((y - y.mean()) ** 2))
    cv_r_sq = 1.0 - float(np.sum((y - oof) ** 2)) / sst if sst > 0 else float("nan")
    if sst == 0:
        warnings.warn("scores are constant; cv_r_sq is NaN.", DegenerateDataWarning, stacklevel=2)
    null = np.array([fit_importance(y[p]) for p in perms]).reshape(n_null, len(factors))
    if n_null:
        hi = np.quantile(null, confidence_level, axis=0)
        above = [bool(s > h) for s, h in zip(shap, hi)]
    else:
        hi = [None] * len(factors)
        above = [None] * len(factors)
    importance = pl.DataFrame(
        {
            "factor": factors,
            "n_levels": ks,
            "mean_abs_shap": [float(s) for s in shap],
            "null_high": [None if v is None else float(v) for v in hi],
            "above_null": above,
            "partial_r_sq": partial,
        },
        schema=_IMPORTANCE_SCHEMA,
    ).sort("mean_abs_shap", descending=True, maintain_order=True)
    return AttributionResult(
        importance=importance,
        coefficients=coef,
        method=method,
        cv_r_sq=cv_r_sq,
        n_folds=int(n_folds),
        n_null=int(n_null),
        confidence_level=float(confidence_level),
        seed=seed,
        n_obs=n,
        runs=runs,
        score_scale=_score_scale(frame),
        null_distribution=null,
        factors=tuple(factors),
    )


def _score_scale(frame: pl.DataFrame | pl.LazyFrame) -> str:
    """The unit of the importances: accuracy points, or the metric's own units."""
    infos = metric_info(frame)
    name, info = next(iter(infos.items()))
    if unit_interval_metrics(frame).get(name, False) and info.higher_is_better:
        return AttributionResult.__dataclass_fields__["score_scale"].default
    return f"{name} units ({info.describe().split(': ', 1)[1]})"


def _linear_tables(
    x: np.ndarray,
    y: np.ndarray,
    beta: np.ndarray,
    rss: float,
    df_res: int,
    xtx_inv: np.ndarray,
    slices: list[slice],
    factors: list[str],
    levels: list[list[Any]],
    confidence_level: float,
) -> tuple[pl.DataFrame, list[float | None]]:
    from scipy import stats

    sigma2 = rss / df_res if df_res > 0 else float("nan")
    se = np.sqrt(np.diag(xtx_inv) * sigma2)
    tcrit = float(stats.t.ppf(0.5 + confidence_level / 2, df_res)) if df_res > 0 else float("nan")
    rows = []
    partial: list[float | None] = []
    for f, s, values in zip(factors, slices, levels):
        lv = pl.Series(values).cast(pl.String).to_list()  # the same spelling as polars casts
        rows.append((f, lv[0], True, 0.0, None, None, None, None, None, confidence_level))
        for j, level in zip(range(s.start, s.stop), lv[1:]):
            t = beta[j] / se[j] if se[j] > 0 else float("nan")
            p = float(2 * stats.t.sf(abs(t), df_res)) if df_res > 0 else float("nan")
            rows.append(
                (
                    f,
                    level,
                    False,
                    float(beta[j]),
                    float(se[j]),
                    float(t),
                    p,
                    float(beta[j] - tcrit * se[j]),
                    float(beta[j] + tcrit * se[j]),
                    confidence_level,
                )
            )
        keep = np.ones(x.shape[1], dtype=bool)
        keep[s] = False
        rss_red = _ols(x[:, keep], y)[1]
        partial.append((rss_red - rss) / rss_red if rss_red > 0 else float("nan"))
    return pl.DataFrame(rows, schema=_COEF_SCHEMA, orient="row"), partial
