"""Shared parts of the attribution package: result classes, validation, factor coding."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from evalstats.errors import (
    DesignWarning,
    InsufficientDataError,
    ParameterError,
    SchemaError,
)
from evalstats.schema import (
    factor_columns,
    single_metric,
    validate_observations,
    validate_units,
)

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
    "error_term": pl.String(),
    "df_error": pl.Int64(),
    "mean_sq_error": pl.Float64(),
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
        Largest number of permutations per term (``n_permutations`` holds those drawn).
    seed : int
        Seed of the permutations.
    block : str, tuple of str or None
        Column(s) within whose levels the residuals were permuted.
    n_obs : int
        Rows analysed (units, or item rows with ``block="item"``) after averaging runs; with
        items random, the item x configuration-cell means.
    runs : str
        ``'mean'`` (runs averaged per configuration) or ``'replicates'``.
    method : str
        Permutation scheme: ``"freedman-lane"`` (residuals permuted, within blocks), or
        ``"sign-flip"`` (items random: item scores of each term's stratum sign-flipped).
    items : str or None
        With item rows (``block`` holds ``'item'``): ``'random'`` (each term tested against
        its term x item stratum) or ``'fixed'`` (pooled within-item residual); else None.
    null_distribution : numpy.ndarray
        Permutation F statistics, shape ``(n_terms, L)`` with ``L <= n_resamples`` the
        permutations drawn, rows in the order of ``terms``; NaN after a term's stopping point
        and for a term without degrees of freedom.
    terms : tuple of str
        Term names in model order (the row order of ``null_distribution``).
    aliased : dict of str to str
        Factors left out because they are aliased with the model, the dataset, a block or
        another factor, each with the reason (empty when none).
    n_permutations : tuple of int
        Permutations behind each term's ``pvalue_perm``, in the order of ``terms``: fewer than
        ``n_resamples`` when the term stopped at ``max_exceedances`` exceedances.
    max_exceedances : int or None
        Besag–Clifford stopping limit (None: every term drew ``n_resamples``).
    min_pvalue_perm : float or None
        The smallest ``pvalue_perm`` the design allows: one over the number of distinct
        permutations (within-block orderings of the residuals up to swaps inside a
        configuration cell; ``2^items`` sign vectors with items random). Above 0.05, no term
        can reach 0.05 whatever its effect. None without permutations.
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
    items: str | None = None
    null_distribution: np.ndarray = field(repr=False, default_factory=lambda: np.empty((0, 0)))
    terms: tuple[str, ...] = field(repr=False, default=())
    aliased: dict[str, str] = field(default_factory=dict)
    n_permutations: tuple[int, ...] = field(repr=False, default=())
    max_exceedances: int | None = None
    min_pvalue_perm: float | None = None

    def to_frame(self) -> pl.DataFrame:
        """The ANOVA table: ``term, df, sum_sq, mean_sq, statistic, pvalue, pvalue_perm, eta_sq,
        partial_eta_sq, error_term, df_error, mean_sq_error``, terms sorted by ``eta_sq``
        descending, then the ``Residual`` row. ``error_term`` names the denominator of each F
        (``Residual``, or ``a:item`` with items random).
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
        Factor names in the order analysed (aliased factors left out).
    aliased : dict of str to str
        Factors left out because they are aliased with the model, the dataset or another
        factor, each with the reason (empty when none).
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
    aliased: dict[str, str] = field(default_factory=dict)

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
                f"(factor columns: {', '.join(factor_columns(names)) or 'none'})."
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


#: Columns a factor can be aliased with besides the other factors and the blocks.
_CONFOUNDERS = ("model", "dataset")


def _aliases(
    lf: pl.LazyFrame, factors: list[str], blocks: list[str], names: Sequence[str]
) -> dict[str, str]:
    """Factors whose levels are a function of a model, dataset, block or another factor.

    Such a factor's effect cannot be told apart from the differences between the levels of the
    column it follows: with the model as a block its sum of squares is 0 by construction, and
    pooled over models (SHAP) it takes the models' differences as its own. A factor that is a
    function of another factor (one-to-one, or nested in a finer one) adds nothing to it.
    Returns ``{factor: reason}``; of two factors that determine each other the first is kept.
    """
    confounders = [c for c in dict.fromkeys([*_CONFOUNDERS, *blocks]) if c in names and c != "item"]
    confounders = [c for c in confounders if c not in factors]
    cols = list(dict.fromkeys([*factors, *confounders]))
    if not cols:
        return {}
    exprs = [pl.col(c).n_unique().alias(c) for c in cols]
    pairs = [(f, c) for f in factors for c in cols if c != f]
    exprs += [pl.struct(f, c).n_unique().alias(f"{f}\x00{c}") for f, c in pairs]
    counts = lf.select(exprs).collect().row(0, named=True)

    def follows(f: str, c: str) -> bool:  # every level of c has a single level of f
        return counts[f] > 1 and counts[f"{f}\x00{c}"] == counts[c]

    out: dict[str, str] = {}
    for f in factors:
        for c in confounders:
            if counts[c] > 1 and follows(f, c):
                out[f] = (
                    f"{f!r} takes one value per {c} (aliased with the {c}): its effect cannot "
                    f"be told apart from the differences between {c}s"
                )
                break
        if f in out:
            continue
        for g in factors:
            if g == f or g in out:
                continue
            earlier = factors.index(g) < factors.index(f)
            if follows(f, g) and (earlier or not follows(g, f)):
                out[f] = (
                    f"{f!r} is determined by {g!r} (aliased: each level of {g!r} has a single "
                    f"level of {f!r}), so its effect cannot be told apart from the effect of {g!r}"
                )
                break
    return out


def _rows(
    frame: pl.DataFrame | pl.LazyFrame,
    factors: Sequence[str] | str,
    block: str | Sequence[str] | None,
    runs: str = "mean",
    *,
    drop_aliased: bool = False,
) -> tuple[pl.DataFrame, list[str], str, dict[str, str]]:
    """Validated rows: item rows when ``block`` holds ``'item'``, else the unit table.

    With ``runs='mean'`` the repeated runs of a configuration are averaged first (one row per
    model, dataset, variant, factor values, block and, for item rows, item). A combined block
    column ``__block`` holds the joined levels of the block columns. With ``drop_aliased`` the
    factors aliased with the model, the dataset, a block or another factor (:func:`_aliases`)
    are left out, named with the reason in the returned dict, with a DesignWarning; none left
    is an InsufficientDataError.
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
    aliased: dict[str, str] = {}
    if drop_aliased:
        aliased = _aliases(lf, factors, blocks, names)
        if aliased and len(aliased) == len(factors):
            raise InsufficientDataError(
                "every factor is aliased, so no effect can be estimated: "
                + "; ".join(aliased.values())
                + "."
            )
        if aliased:
            warnings.warn(
                "left out of the analysis: " + "; ".join(aliased.values()) + ".",
                DesignWarning,
                stacklevel=3,
            )
            factors = [f for f in factors if f not in aliased]
            keys = [k for k in keys if k not in aliased]
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
    return data, factors, table, aliased


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
