"""Observation table -> unit table: mean score over items per (model, dataset, variant, run).

This is the only step that touches every row, so it stays lazy: the returned LazyFrame is
executed by the caller, and ``collect(engine="streaming")`` runs it on files larger than memory.
"""

from __future__ import annotations

import polars as pl

from evalstats.schema import KEY_COLUMNS, as_lazy, factor_columns, validate_observations

__all__ = ["to_units"]


def to_units(
    observations: pl.DataFrame | pl.LazyFrame, *, check_values: bool = True
) -> pl.LazyFrame:
    """Aggregate item rows to unit rows.

    Parameters
    ----------
    observations : polars.DataFrame or polars.LazyFrame
        Observation table (see :mod:`evalstats.schema`). Unit-level input (no ``item`` column)
        passes through with its ``n_items`` (null when unknown).
    check_values : bool, default True
        Validate scores first (one extra pass over the data).

    Returns
    -------
    polars.LazyFrame
        One row per (model, dataset, variant, run) and factor values, with ``score`` (mean over
        items), ``n_items`` (items scored), ``n_errors`` (rows with a non-null ``error``, only when
        the observations have an ``error`` column), and the factor columns; sorted by the keys.

    Notes
    -----
    Factor columns are grouping keys: they describe the configuration, so they are constant
    within a variant for every loader. A hand-built table whose factor varies within a variant
    yields one unit per factor value, which :func:`evalstats.schema.validate_units` reports as a
    duplicated unit.

    Examples
    --------
    >>> obs = pl.DataFrame({"model": ["a"] * 4, "dataset": ["d"] * 4, "item": ["1", "2"] * 2,
    ...                     "variant": ["p", "p", "q", "q"], "score": [1.0, 0.0, 1.0, 1.0]})
    >>> to_units(obs).select("variant", "score", "n_items").collect().rows()
    [('p', 0.5, 2), ('q', 1.0, 2)]
    """
    lf = validate_observations(as_lazy(observations), check_values=check_values)
    schema = lf.collect_schema()
    factors = factor_columns(schema.names())
    keys = list(KEY_COLUMNS) + factors
    if "item" not in schema:
        n_items = (
            pl.col("n_items").cast(pl.Int64)
            if "n_items" in schema
            else pl.lit(None, dtype=pl.Int64)
        )
        out = lf.with_columns(n_items.alias("n_items"))
        cols = keys[:4] + ["score", "n_items"] + factors
        if "error" in schema:
            out = out.with_columns(pl.col("error").is_not_null().cast(pl.Int64).alias("n_errors"))
            cols.insert(6, "n_errors")
        return out.select(cols).sort(keys[:4])
    aggs = [pl.col("score").mean().alias("score"), pl.len().cast(pl.Int64).alias("n_items")]
    if "error" in schema:
        aggs.append(pl.col("error").is_not_null().sum().cast(pl.Int64).alias("n_errors"))
    out = lf.group_by(keys).agg(aggs)
    cols = keys[:4] + [a.meta.output_name() for a in aggs] + factors
    return out.select(cols).sort(keys[:4])
