"""Conclusion-reversal audit and rankings per workload subset (evaluatology, Table 3)."""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl
from scipy import stats

from evalstats.compare._intervals import mean_interval
from evalstats.design._frames import analysis_input
from evalstats.errors import DesignWarning, InsufficientDataError, ParameterError, SchemaError
from evalstats.results import check_confidence_level
from evalstats.schema import (
    directions,
    higher_is_better,
    validate_by,
    validate_observations,
    validate_units,
)

if TYPE_CHECKING:
    from pathlib import Path

    from evalstats._frames import TableLike
    from evalstats.design import Design

__all__ = [
    "ReversalAudit",
    "SubsetRankings",
    "default_filter",
    "parse_claim",
    "reversal_audit",
    "subset_rankings",
]


@dataclass(frozen=True, slots=True)
class ReversalAudit:
    """Result of :func:`reversal_audit`.

    Attributes
    ----------
    models : polars.DataFrame
        Per model: the default-configuration score, its percentile among configurations, and
        whether it lies outside the configuration-space interval.
    pairs : polars.DataFrame
        Per model pair: default and mean difference, interval, ``reversal``, the share of
        configurations whose ordering contradicts the overall one, and the claim's status.
    default : dict
        The default configuration.
    claim : str or None
    confidence_level : float
    """

    models: pl.DataFrame
    pairs: pl.DataFrame
    default: dict[str, Any]
    claim: str | None
    confidence_level: float

    @property
    def n_reversals(self) -> int:
        """Number of model pairs whose default ordering contradicts the interval."""
        return int(self.pairs["reversal"].sum())

    def to_frame(self) -> pl.DataFrame:
        """The ``pairs`` frame (the headline table)."""
        return self.pairs


@dataclass(frozen=True, slots=True)
class SubsetRankings:
    """Result of :func:`subset_rankings`: ranks per subset and Kendall tau between subsets."""

    ranks: pl.DataFrame
    kendall: pl.DataFrame
    subset: str

    def to_frame(self) -> pl.DataFrame:
        """The ``kendall`` frame."""
        return self.kendall


def parse_claim(claim: str) -> tuple[str, str]:
    """``"A>B"`` -> ``("A", "B")`` (``"A<B"`` -> ``("B", "A")``): the model claimed better first.

    Examples
    --------
    >>> parse_claim("m1 > m2"), parse_claim("m1<m2")
    (('m1', 'm2'), ('m2', 'm1'))
    """
    m = re.fullmatch(r"\s*([^<>]+?)\s*([<>])\s*([^<>]+?)\s*", claim or "")
    if not m:
        raise ParameterError(f"`claim` must look like 'A>B' or 'A<B', got {claim!r}.")
    a, op, b = m.groups()
    return (a, b) if op == ">" else (b, a)


def _literal(dtype: pl.DataType, value: Any, factor: str) -> Any:
    if dtype == pl.Boolean and isinstance(value, str):
        low = value.strip().lower()
        if low not in ("true", "false", "1", "0"):
            raise ParameterError(f"`default` gives {factor}={value!r}; expected true or false.")
        return low in ("true", "1")
    if dtype.is_numeric() and isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            raise ParameterError(
                f"`default` gives {factor}={value!r}; the column is numeric ({dtype})."
            ) from None
    if dtype == pl.String and not isinstance(value, str):
        return str(value)
    return value


def default_filter(schema: pl.Schema, default: Mapping[str, Any]) -> pl.Expr:
    """Expression selecting the rows of the default configuration ``{factor: value}``."""
    if not default:
        raise ParameterError("`default` must name at least one factor=value.")
    expr = pl.lit(True)
    for factor, value in default.items():
        if factor not in schema:
            raise SchemaError(
                f"`default` names {factor!r}, which is not a column of the unit table "
                f"(columns: {', '.join(schema.names())})."
            )
        expr = expr & (pl.col(factor) == _literal(schema[factor], value, factor)).fill_null(False)
    return expr


def _config_scores(
    units: pl.DataFrame | pl.LazyFrame, default: Mapping[str, Any], by: Sequence[str]
) -> tuple[pl.DataFrame, list[str]]:
    lf = validate_units(units)
    schema = lf.collect_schema()
    by = validate_by(schema.names(), by)
    config = [c for c in ("dataset", "variant") if c not in by]
    flt = default_filter(schema, default)
    out = (
        lf.with_columns(flt.alias("__default"))
        .group_by([*by, "model", *config])
        .agg(pl.col("score").mean(), pl.col("__default").all())
        .sort([*by, "model", *config])
        .collect()
    )
    if not out["__default"].any():
        levels = {
            f: lf.select(pl.col(f).unique().sort()).collect().to_series().to_list() for f in default
        }
        raise ParameterError(
            f"no configuration matches the default {dict(default)!r} (levels: {levels})."
        )
    return out, config


def _default_items(
    frame: pl.DataFrame | pl.LazyFrame, default: Mapping[str, Any], by: Sequence[str]
) -> dict[tuple, pl.DataFrame] | None:
    """Item scores of the default configuration, wide by model, per group (None: no items)."""
    lf = frame.lazy() if isinstance(frame, pl.DataFrame) else frame
    schema = lf.collect_schema()
    if "item" not in schema:
        return None
    lf = validate_observations(lf, check_values=False)
    schema = lf.collect_schema()
    unit = [c for c in ("dataset", "item") if c not in by]
    items = (
        lf.filter(default_filter(schema, default))
        .group_by([*by, "model", *unit], maintain_order=True)
        .agg(pl.col("score").mean())
        .collect()
    )
    groups = items.partition_by(list(by), as_dict=True, maintain_order=True) if by else {(): items}
    return {
        k: g.pivot(on="model", index=unit, values="score", sort_columns=True)
        for k, g in groups.items()
    }


#: Two configuration means closer than this share of their size are tied: means of the same
#: scores summed in another order differ by about 1e-16, which must not decide a sign.
_TIE_RTOL = 1e-9


def _difference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a - b`` with differences within rounding error of a tie set to exactly 0."""
    d = a - b
    tied = np.abs(d) <= _TIE_RTOL * np.maximum(np.abs(a), np.abs(b))
    return np.where(tied, 0.0, d)


def reversal_audit(
    units: TableLike,
    *,
    default: Mapping[str, Any],
    claim: str | None = None,
    confidence_level: float = 0.95,
    by: Sequence[str] = ("dataset", "metric"),
    roles: str | Mapping[str, str] | None = None,
    design: Design | str | Path | None = None,
) -> ReversalAudit:
    r"""Check whether the default configuration agrees with the configuration space.

    Parameters
    ----------
    units : polars.DataFrame, polars.LazyFrame, pandas.DataFrame or pyarrow.Table
        Unit table (or observation table, aggregated first); see :mod:`evalstats.schema`.
    default : mapping
        The default (single reported) configuration, ``{factor: value}``. When it leaves some
        factors free, the default score is the mean over the matching configurations.
    claim : str, optional
        A claim ``"A>B"`` ("A is better than B": a higher score, or a lower one where lower is
        better) to check; its pair gets a ``claim_status``.
    confidence_level : float, default 0.95
        Level of the intervals over configurations.
    by : tuple of str, default ('dataset', 'metric')
        Columns that define the groups. A configuration is a ``variant`` (and a ``dataset``
        when ``dataset`` is not in ``by``), averaged over runs.
    roles : str or mapping, optional
        Column roles for a table not in the canonical layout, as ``--roles`` gives them for a
        file (``{"passage": "cluster"}`` or ``"passage=cluster"``); see
        :func:`evalstats.design.analysis_input`.
    design : Design or path, optional
        A design (:func:`evalstats.infer_design`) or a design file (``design.toml``) to apply,
        as ``--design`` does.

    Returns
    -------
    ReversalAudit
        ``models`` and ``pairs`` frames. ``pairs`` counts what a pair could not use:
        ``n_unpaired``, the configurations only one of the two models has, and
        ``n_default_unpaired``, the default configuration's items only one has (item-level
        input; null otherwise).

    Raises
    ------
    SchemaError
        ``default`` names a column the table lacks.
    ParameterError
        No configuration matches ``default``, or ``claim`` is malformed or names unknown models.
    InsufficientDataError
        Fewer than two configurations in a group.

    Warns
    -----
    DesignWarning
        Configurations or default-configuration items that only one model of a pair has are
        left out of that pair (``n_unpaired``, ``n_default_unpaired``).

    Notes
    -----
    For model :math:`m` with configuration scores :math:`x_{m,c}` and default score
    :math:`x_{m,0}`: ``percentile`` is :func:`scipy.stats.percentileofscore` (``kind='mean'``)
    of :math:`x_{m,0}`; ``ci_low, ci_high`` is the t interval of the mean over configurations
    (the evaluatology configuration-space interval), and ``q_low, q_high`` the central
    ``confidence_level`` range of the configuration scores. For a pair :math:`(a, b)`,
    :math:`d_c = x_{a,c} - x_{b,c}` over shared configurations; a **reversal** is reported when
    the t interval of :math:`\bar d` excludes 0 and the default difference :math:`d_0` is on
    the other side of 0. With item-level input (``method='item_interval'``) the default
    difference must be *significantly* on the other side: its paired t interval over items
    (``default_ci_low, default_ci_high``) must exclude 0, so that item-sampling noise of a
    single configuration is not reported as a reversal. With unit-level input
    (``method='sign'``) only the sign of :math:`d_0` is available and chance reversals are
    more frequent (see ``docs/methods/compare.md``); ``default_outside`` says whether :math:`d_0` lies outside that interval.
    ``share_contradicting`` is the share of configurations with
    :math:`\mathrm{sign}(d_c) = -\mathrm{sign}(\bar d)`; a :math:`d_c` within
    :math:`10^{-9}` of the scores' size is a tie (0), so that rounding in the configuration
    means (1e-16) never decides a sign.
    Checked against: planted default-configuration effects of :mod:`evalstats.simulate`
    (``tests/compare/test_audit.py``).

    Examples
    --------
    >>> from evalstats.simulate import observations
    >>> obs = observations(n_models=2, n_items=400, model_accuracy=(0.75, 0.6), prompt_sd=0.01,
    ...                    factors={"template": {"plain": 0.0, "qa": 0.0, "mcq": 0.0, "x": 0.0},
    ...                             "shots": {0: 0.0, 5: 0.0}, "cot": {False: 0.0, True: 0.0}},
    ...                    model_effects={"m1": {"template": {"plain": 0.25}}}, seed=0)
    >>> audit = reversal_audit(obs, default={"template": "plain", "shots": 0, "cot": False})
    >>> audit.pairs.select("model_a", "model_b", "reversal", "method").rows()
    [('m0', 'm1', True, 'item_interval')]
    """
    units = analysis_input(units, roles=roles, design=design).table
    level = check_confidence_level(confidence_level)
    by = (by,) if isinstance(by, str) else tuple(by)
    default = dict(default)
    from evalstats.compare._paired import check_pair_count

    check_pair_count(units, by, what="the reversal audit")  # every pair of models is audited
    data, config = _config_scores(units, default, by)
    direction = directions(validate_units(units, check_values=False), by)
    default_items = _default_items(units, default, by)
    method = "sign" if default_items is None else "item_interval"
    models_all = sorted(data["model"].unique().to_list())
    claim_pair = None
    if claim is not None:
        claim_pair = parse_claim(claim)
        unknown = [m for m in claim_pair if m not in models_all]
        if unknown:
            raise ParameterError(
                f"`claim` names model {unknown[0]!r}, which is not in the table "
                f"(models: {', '.join(models_all)})."
            )
    q = (1 - level) / 2
    model_rows, pair_rows = [], []
    groups = data.partition_by(list(by), as_dict=True, maintain_order=True) if by else {(): data}
    for key, g in groups.items():
        wide = g.pivot(on="model", index=[*config, "__default"], values="score", sort_columns=True)
        models = [c for c in wide.columns if c not in (*config, "__default")]
        for m in models:
            col = wide.filter(pl.col(m).is_not_null())
            x = col[m].to_numpy()
            d0 = col.filter("__default")[m].to_numpy()
            if x.size < 2:
                raise InsufficientDataError(
                    f"model {m!r} has {x.size} configuration(s); the audit needs at least 2."
                )
            x0 = float(d0.mean()) if d0.size else math.nan
            mean, _, low, high = mean_interval(x, confidence_level=level)
            qlo, qhi = (float(v) for v in np.quantile(x, [q, 1 - q]))
            pct = float(stats.percentileofscore(x, x0, kind="mean")) if d0.size else math.nan
            model_rows.append(
                (
                    *key,
                    m,
                    int(x.size),
                    int(d0.size),
                    x0,
                    pct,
                    mean,
                    low,
                    high,
                    qlo,
                    qhi,
                    bool(x0 < low or x0 > high),
                    bool(x0 < qlo or x0 > qhi),
                )
            )
        for ma, mb in combinations(models, 2):
            n_unpaired = int(wide.select(pl.col(ma).is_null() ^ pl.col(mb).is_null()).sum().item())
            pair = wide.select(ma, mb, "__default").drop_nulls([ma, mb])
            d = _difference(pair[ma].to_numpy(), pair[mb].to_numpy())
            dd = d[pair["__default"].to_numpy()]
            d0 = float(dd.mean()) if dd.size else math.nan
            mean, _, low, high = mean_interval(d, confidence_level=level)
            sign = np.sign(mean)
            share = float(np.mean(np.sign(d) == -sign)) if sign != 0 else math.nan
            d_low = d_high = math.nan
            n_default_unpaired = None
            if default_items is not None:
                w_all = default_items[key].select(ma, mb)
                w0 = w_all.drop_nulls()
                n_default_unpaired = int(
                    w_all.select(pl.col(ma).is_null() ^ pl.col(mb).is_null()).sum().item()
                )
                _, _, d_low, d_high = mean_interval(
                    (w0[ma] - w0[mb]).to_numpy(), confidence_level=level
                )
                reversal = bool((low > 0 and d_high < 0) or (high < 0 and d_low > 0))
            else:
                reversal = bool((low > 0 and d0 < 0) or (high < 0 and d0 > 0))
            status = None
            claim_text = None
            if claim_pair is not None and set(claim_pair) == {ma, mb}:
                claim_text = f"{claim_pair[0]}>{claim_pair[1]}"
                s = 1.0 if claim_pair[0] == ma else -1.0
                if not higher_is_better(direction, key):  # "A>B": A is better, a lower error
                    s = -s
                lo_c, hi_c = sorted((s * low, s * high))
                status = "supported" if lo_c > 0 else "contradicted" if hi_c < 0 else "inconclusive"
            outside = bool(d0 < low or d0 > high)
            pair_rows.append(
                (
                    *key,
                    ma,
                    mb,
                    int(d.size),
                    n_unpaired,
                    n_default_unpaired,
                    d0,
                    d_low,
                    d_high,
                    mean,
                    low,
                    high,
                    outside,
                    share,
                    reversal,
                    method,
                    claim_text,
                    status,
                )
            )
    key_schema = {b: data.schema[b] for b in by}
    models_df = (
        pl.DataFrame(
            model_rows,
            schema=key_schema
            | {
                "model": pl.String,
                "n_configs": pl.Int64,
                "n_default": pl.Int64,
                "default_score": pl.Float64,
                "percentile": pl.Float64,
                "mean": pl.Float64,
                "ci_low": pl.Float64,
                "ci_high": pl.Float64,
                "q_low": pl.Float64,
                "q_high": pl.Float64,
                "outside_interval": pl.Boolean,
                "outside_range": pl.Boolean,
            },
            orient="row",
        )
        .with_columns(pl.lit(level).alias("confidence_level"))
        .sort([*by, "model"])
    )
    pairs_df = (
        pl.DataFrame(
            pair_rows,
            schema=key_schema
            | {
                "model_a": pl.String,
                "model_b": pl.String,
                "n_configs": pl.Int64,
                "n_unpaired": pl.Int64,
                "n_default_unpaired": pl.Int64,
                "default_difference": pl.Float64,
                "default_ci_low": pl.Float64,
                "default_ci_high": pl.Float64,
                "difference": pl.Float64,
                "ci_low": pl.Float64,
                "ci_high": pl.Float64,
                "default_outside": pl.Boolean,
                "share_contradicting": pl.Float64,
                "reversal": pl.Boolean,
                "method": pl.String,
                "claim": pl.String,
                "claim_status": pl.String,
            },
            orient="row",
        )
        .with_columns(pl.lit(level).alias("confidence_level"))
        .sort([*by, "model_a", "model_b"])
    )
    _warn_unpaired(pairs_df)
    return ReversalAudit(
        models=models_df, pairs=pairs_df, default=default, claim=claim, confidence_level=level
    )


def _warn_unpaired(pairs: pl.DataFrame) -> None:
    """One DesignWarning for the configurations and default items a pair could not use."""
    configs = int(pairs["n_unpaired"].sum())
    items = int(pairs["n_default_unpaired"].fill_null(0).sum())
    if not (configs or items):
        return
    what = [
        f"{configs} configuration(s)" if configs else "",
        f"{items} default-configuration item(s)" if items else "",
    ]
    warnings.warn(
        f"audit: {' and '.join(w for w in what if w)} that only one model of a pair has are "
        "left out of that pair's difference (counted in `n_unpaired`, `n_default_unpaired`).",
        DesignWarning,
        stacklevel=3,
    )


def subset_rankings(
    units: TableLike,
    *,
    subset: str,
    by: Sequence[str] = ("metric",),
    roles: str | Mapping[str, str] | None = None,
    design: Design | str | Path | None = None,
) -> SubsetRankings:
    """Rank models within each level of a workload factor and compare rankings (Kendall tau).

    Parameters
    ----------
    units : polars.DataFrame, polars.LazyFrame, pandas.DataFrame or pyarrow.Table
        Unit table (or observation table); see :mod:`evalstats.schema`.
    subset : str
        Factor column that splits the workload (e.g. original / transformed / novel).
    by : tuple of str, default ('metric',)
        Columns that define the groups; scores are averaged over everything else. Rank 1 is
        the best model: the highest score, or the lowest where lower is better.
    roles : str or mapping, optional
        Column roles for a table not in the canonical layout, as ``--roles`` gives them for a
        file (``{"passage": "cluster"}`` or ``"passage=cluster"``); see
        :func:`evalstats.design.analysis_input`.
    design : Design or path, optional
        A design (:func:`evalstats.infer_design`) or a design file (``design.toml``) to apply,
        as ``--design`` does.

    Returns
    -------
    SubsetRankings
        ``ranks`` (one row per group, subset level and model: ``score``, ``rank`` with 1 the
        best, ties averaged) and ``kendall`` (one row per pair of levels: ``statistic`` =
        Kendall tau-b of the scores, ``pvalue``, ``n_models``, and ``n_unpaired``: models
        present in only one of the two levels, left out of tau).

    Warns
    -----
    DesignWarning
        Some models are present in only one level of a pair (``n_unpaired``).

    Notes
    -----
    tau-b and its p-value are :func:`scipy.stats.kendalltau` on the two subsets' mean scores
    of the models both contain (the evaluatology paper's Table 3 layout).

    Examples
    --------
    >>> from evalstats.simulate import unit_table
    >>> units = unit_table(n_models=3, n_items=300, model_accuracy=(0.5, 0.6, 0.7),
    ...                    factors={"workload": {"orig": 0.0, "new": -0.1}}, seed=0)
    >>> r = subset_rankings(units, subset="workload")
    >>> r.kendall.select("subset_a", "subset_b", "statistic").rows()
    [('new', 'orig', 1.0)]
    """
    units = analysis_input(units, roles=roles, design=design).table
    lf = validate_units(units)
    names = lf.collect_schema().names()
    validate_by(names, (subset,))
    by = validate_by(names, (by,) if isinstance(by, str) else tuple(by))
    keys = [*by, subset]
    hib, _ = directions(lf, by)
    sign = pl.col("metric").replace_strict(
        list(hib), [1.0 if v else -1.0 for v in hib.values()], default=1.0, return_dtype=pl.Float64
    )
    scores = (
        lf.group_by([*keys, "model"])
        .agg(pl.col("score").mean(), sign.first().alias("__sign"))
        .with_columns(
            (pl.col("score") * pl.col("__sign"))
            .rank(method="average", descending=True)
            .over(keys)
            .alias("rank"),
            pl.col(subset).cast(pl.String).alias(subset),
        )
        .drop("__sign")
        .sort([*keys, "model"])
        .collect()
    )
    rows = []
    groups = (
        scores.partition_by(list(by), as_dict=True, maintain_order=True) if by else {(): scores}
    )
    for key, g in groups.items():
        wide = g.pivot(on=subset, index="model", values="score", sort_columns=True)
        levels = [c for c in wide.columns if c != "model"]
        for la, lb in combinations(levels, 2):
            pair = wide.select(la, lb).drop_nulls()
            if pair.height < 2:
                tau, p = math.nan, math.nan
            else:
                res = stats.kendalltau(pair[la].to_numpy(), pair[lb].to_numpy())
                tau, p = float(res.statistic), float(res.pvalue)
            n_unpaired = int(wide.select(pl.col(la).is_null() ^ pl.col(lb).is_null()).sum().item())
            rows.append((*key, la, lb, pair.height, n_unpaired, tau, p))
    kendall = pl.DataFrame(
        rows,
        schema={b: scores.schema[b] for b in by}
        | {
            "subset_a": pl.String,
            "subset_b": pl.String,
            "n_models": pl.Int64,
            "n_unpaired": pl.Int64,
            "statistic": pl.Float64,
            "pvalue": pl.Float64,
        },
        orient="row",
    ).sort([*by, "subset_a", "subset_b"])
    if kendall.height and int(kendall["n_unpaired"].sum()):
        warnings.warn(
            f"subset rankings: {int(kendall['n_unpaired'].sum())} model(s) present in only one "
            "subset of a pair are left out of that pair's Kendall tau (counted in `n_unpaired`).",
            DesignWarning,
            stacklevel=2,
        )
    return SubsetRankings(ranks=scores, kendall=kendall, subset=subset)
