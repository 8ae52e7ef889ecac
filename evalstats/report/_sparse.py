"""Sparse item x prompt groups in the report: their moments and n* from the whole-grid model.

A group that observes at most :data:`SPARSE_SHARE` of its item x variant grid has variant
scores over a few items each; their spread is mostly that noise. For such groups the report
fits the sparse-grid model (:mod:`evalstats.sparse`) once, in the moments analysis, and uses
one representative posterior draw of every variant's whole-grid score (the draw whose sd is
nearest the mean sd, the model's estimate) as the unit scores of the moments table, the prompt-spread figure and n*. The
column :data:`SCORES_COLUMN` of those tables says which rows are of the observed cells and
which of the model; table ``sparse_distribution`` has the model's estimates with intervals.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import polars as pl

from evalstats.errors import MetricScaleError
from evalstats.report._applies import Context
from evalstats.report._model import AnalysisResult

__all__ = [
    "MODELLED",
    "OBSERVED",
    "SCORES_COLUMN",
    "SPARSE_SHARE",
    "converge_table",
    "figure_units",
    "sparse_caption",
    "moments_with_whole_grid",
    "nstar_tables",
    "with_whole_grid",
]

#: Groups observing at most this share of their item x variant grid get the sparse-grid
#: estimate of their distribution over the whole grid.
SPARSE_SHARE = 0.8

#: The column of the moments and n* tables that says where a row's variant scores come from.
SCORES_COLUMN = "scores"
OBSERVED, MODELLED = "observed cells", "sparse-grid model"

_UNIT = ("variant", "run", "score", "n_items")


def _unit_groups(units: pl.DataFrame) -> list[str]:
    return [c for c in units.columns if c not in _UNIT]


def moments_with_whole_grid(
    ctx: Context, p: dict, moments: pl.DataFrame
) -> tuple[dict, dict, dict]:
    """The moments analysis's tables, values and objects, sparse groups from the model."""
    from evalstats.moments import prompt_spread

    tables = {"moments": moments}
    dist, units = _whole_grid(ctx, p) if "by" not in p else (None, None)
    if dist is None or units is None:
        return tables, {}, {}
    level = {"confidence_level": p["confidence_level"]} if "confidence_level" in p else {}
    spread = _estimated(prompt_spread(units, by=_unit_groups(units), **level), dist)
    tables["moments"] = with_whole_grid(moments, spread)
    tables["sparse_distribution"] = dist
    return tables, {}, {"sparse_units": units}


#: Columns of the moments table that the model's distribution estimates directly.
_ESTIMATED = {"mean": "mean", "std": "sd", "min": "min", "q05": "q05", "q25": "q25"}
_ESTIMATED |= {"median": "median", "q75": "q75", "q95": "q95", "max": "max"}


def _estimated(spread: pl.DataFrame, dist: pl.DataFrame) -> pl.DataFrame:
    """The moments of the representative draw, with the model's estimates where it has them.

    Mean, sd, quantiles and extremes (and what follows from them: variance, spread, MaxP,
    AvgP, CPS) are the posterior means of ``sparse_distribution``, so that the table and the
    headline agree; skewness and kurtosis are the draw's. The draw is for data of no interval:
    the model's intervals are in ``sparse_distribution``.
    """
    from evalstats.sparse import DISTRIBUTION_COLUMNS

    # the group columns only: n_variants and confidence_level are results, not keys
    keys = [c for c in dist.columns if c in spread.columns and c not in DISTRIBUTION_COLUMNS]
    wide = dist.pivot(on="quantity", index=keys, values="estimate")
    named = wide.select(*keys, *(pl.col(q).alias(c) for c, q in _ESTIMATED.items()))
    out = spread.drop(list(_ESTIMATED)).join(named, on=keys, how="left", nulls_equal=True)
    n = pl.col("n_variants").cast(pl.Float64)
    best = pl.col("max")
    return out.with_columns(
        (pl.col("std") ** 2).alias("variance"),
        (pl.col("std") ** 2 * n / (n - 1)).alias("variance_unbiased"),
        (pl.col("max") - pl.col("min")).alias("spread"),
        best.alias("max_p"),
        pl.col("mean").alias("avg_p"),
        (best * (1 - (best - pl.col("mean")))).alias("cps"),
        *(pl.lit(None, pl.Float64).alias(c) for c in _NO_INTERVAL),
    ).select(spread.columns)


_NO_INTERVAL = ("noise_variance", "prompt_variance", "prompt_variance_low", "prompt_variance_high")


def _whole_grid(ctx: Context, p: dict) -> tuple[pl.DataFrame | None, pl.DataFrame | None]:
    """The model's distribution and representative unit table of the sparse groups.

    (None, None) when the table has no items, no group is sparse or the model cannot be
    fitted (a metric off [0, 1]: a warning says so; a group whose item and prompt effects
    cannot be told apart is left out with a warning).
    """
    if "item" not in ctx.obs.columns:
        return None, None
    from evalstats.sparse._estimate import whole_grid

    try:
        dist, units, refused = whole_grid(
            ctx.obs,
            max_cells_observed=SPARSE_SHARE,
            seed=ctx.seed,
            confidence_level=p.get("confidence_level", 0.95),
            **({"variant_factors": p["variant_factors"]} if "variant_factors" in p else {}),
        )
    except MetricScaleError as exc:
        warnings.warn(f"sparse-grid estimate not made: {exc}", stacklevel=2)
        return None, None
    for reason in refused:
        warnings.warn(f"sparse-grid estimate not made: {reason}", stacklevel=2)
    return (dist, units) if dist.height else (None, None)


def with_whole_grid(table: pl.DataFrame, sparse: pl.DataFrame) -> pl.DataFrame:
    """``table`` with the rows of ``sparse``'s groups replaced by ``sparse``'s rows.

    Group columns are those the two tables share among the unit table's; the column
    :data:`SCORES_COLUMN` says which rows are of the observed cells and which of the model.
    Rows keep ``table``'s order of groups (sorted by the group columns).
    """
    keys = [
        c
        for c in table.columns
        if c in sparse.columns and c in ("model", "dataset", "metric", *_held(table))
    ]
    kept = table.join(sparse.select(keys).unique(), on=keys, how="anti", nulls_equal=True)
    out = pl.concat(
        [_marked(kept, OBSERVED), _marked(sparse, MODELLED)], how="diagonal_relaxed"
    ).select(*table.columns, SCORES_COLUMN)
    return out.sort(keys, nulls_last=True, maintain_order=True)


def _held(table: pl.DataFrame) -> list[str]:
    """The settings held fixed as group columns.

    What ``_wording._held`` finds; not imported from there, which imports this module.
    """
    from evalstats.moments import SPREAD_COLUMNS
    from evalstats.resampling import CURVE_COLUMNS, NSTAR_COLUMNS

    known = {"model", "dataset", "metric", SCORES_COLUMN, *SPREAD_COLUMNS}
    known |= {*NSTAR_COLUMNS, *CURVE_COLUMNS}
    return [c for c in table.columns if c not in known]


def _marked(t: pl.DataFrame, source: str) -> pl.DataFrame:
    return t.with_columns(pl.lit(source).alias(SCORES_COLUMN))


def _sparse_units(ctx: Context, p: dict) -> pl.DataFrame | None:
    """The sparse groups' whole-grid unit table: the moments analysis's, else fitted here."""
    if "moments" in ctx.done:
        return ctx.done["moments"].objects.get("sparse_units")
    return _whole_grid(ctx, p)[1]


def nstar_tables(ctx: Context, p: dict) -> dict[str, pl.DataFrame]:
    """n*, its curve (and the recorded-variants n*), sparse groups on their whole-grid scores."""
    return _on_whole_grid(ctx, p, _nstar)


def converge_table(ctx: Context, p: dict) -> pl.DataFrame:
    """The stopping-rule replay, sparse groups over their whole-grid variant scores.

    On a 5 % sample of a real MMLU grid the replay over the observed cells' variant means
    (each over its own ~29 items) stopped "at most 3.2 points from the mean of all variants"
    of a prompt distribution whose sd the model puts at 1.1 points: item noise read as prompt
    spread, beside an n* computed on the model's scores.
    """
    from evalstats.compare import convergence

    return _on_whole_grid(ctx, p, lambda obs, q: {"converge": convergence(obs, **q)})["converge"]


def _on_whole_grid(
    ctx: Context, p: dict, run: Callable[[pl.DataFrame, dict], dict[str, pl.DataFrame]]
) -> dict[str, pl.DataFrame]:
    """``run``'s tables over the sparse groups and the rest, in group order.

    Sparse groups run on the model's whole-grid variant scores (marked modelled), every other
    group on its observed cells (marked observed).
    """
    units = _sparse_units(ctx, p) if "by" not in p else None
    if units is None or not units.height:
        return run(ctx.obs, p)
    keys = _unit_groups(units)
    rest = ctx.obs.join(units.select(keys).unique(), on=keys, how="anti", nulls_equal=True)
    on_units = {k: v for k, v in p.items() if k != "variant_factors"} | {"by": keys}
    sparse = {k: _marked(t, MODELLED) for k, t in run(units, on_units).items()}
    if not rest.height:
        return sparse
    out = {}
    for k, t in run(rest, p).items():
        t = _marked(t, OBSERVED)
        cols = [c for c in t.columns if c in sparse[k].columns]
        both = pl.concat([t, sparse[k]], how="diagonal_relaxed").select(cols)
        out[k] = both.sort([c for c in keys if c in cols], nulls_last=True, maintain_order=True)
    return out


def _nstar(obs: pl.DataFrame, p: dict) -> dict[str, pl.DataFrame]:
    from evalstats.resampling import required_sample_size, sample_size_curve

    nstar = required_sample_size(obs, **p)
    epsilon_only = ("epsilon", "relative_epsilon", "relative_to")
    curve = sample_size_curve(obs, **{k: v for k, v in p.items() if k not in epsilon_only})
    tables = {"nstar": nstar, "curve": curve}
    if p.get("method", "pool") != "pool" and p.get("compat") is None:
        # the claim about the recorded variants only, beside the one about unseen variants
        pool = {k: v for k, v in p.items() if k != "population_size"} | {"method": "pool"}
        tables["recorded_variants"] = required_sample_size(obs, **pool)
    return tables


def figure_units(units: pl.DataFrame, moments: AnalysisResult) -> pl.DataFrame:
    """The report's unit table with the sparse groups' whole-grid draw in place of their cells.

    The prompt-spread figure then shows what the moments table reports.
    """
    sparse = moments.objects.get("sparse_units")
    if sparse is None or not sparse.height:
        return units
    keys = _unit_groups(sparse)
    kept = units.join(sparse.select(keys).unique(), on=keys, how="anti", nulls_equal=True)
    return pl.concat([kept, sparse], how="diagonal_relaxed")


def sparse_caption(result: AnalysisResult) -> str:
    """A caption's sentence on the sparse groups of a moments or n* result ('' when none)."""
    table = next(iter(result.tables.values()))
    if SCORES_COLUMN not in table.columns:
        return ""
    keys = [c for c in ("model", "dataset", "metric", *_held(table)) if c in table.columns]
    n = table.filter(pl.col(SCORES_COLUMN) == MODELLED).select(keys).n_unique()
    if not n:
        return ""
    return (
        f" In the {n} group{'s' if n != 1 else ''} observing at most {SPARSE_SHARE:.0%} of "
        "the item x prompt grid, a variant's score is the sparse-grid model's over the whole "
        "grid (one posterior draw; docs/methods/sparse.md), not the mean of its few items."
    )
