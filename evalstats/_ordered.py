"""Grouped aggregations in a fixed order, and dense codes, at the cost of the rows' own order.

Two shapes recur in every analysis that aggregates item-level rows to cells (per model, item
and prompt variant): a ``group_by`` whose result is sorted by its keys (so sums come in the same
order on every run, and the cells in a fixed order), and ``numpy.unique(..., return_inverse=
True)`` of integer labels that are already dense codes. Both cost more than they need to:

- polars' in-memory engine (which the analyses use: :mod:`evalstats._reproducible`) sorts the
  ``group_by`` result, whose rows come out in hash order, by several string keys: at 1M rows
  that sort was 2.5 of the 3.4 CPU seconds of a cell table, and it grew faster than the rows.
  Sorting the rows first (a stable sort: rows of one group keep their order) and grouping in
  order gives the same table, bit for bit (each group's values are summed in the same order),
  and on rows that come in any near-sorted order (a dump written model by model, item by
  item) the sort is a merge of runs: 0.9 s instead of 3.4 s at 1M rows;
- ``numpy.unique`` sorts (``n log n``); integer labels with a range not much larger than
  their count are re-coded by a count in ``O(n)`` with the same result.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

__all__ = ["dense_inverse", "grouped_in_order"]


def grouped_in_order(
    lf: pl.LazyFrame, keys: Sequence[str], *aggs: pl.Expr, nulls_last: bool = False
) -> pl.LazyFrame:
    """``lf.group_by(keys).agg(*aggs).sort(keys)``: the same rows, order and bits, faster.

    The rows are sorted by ``keys`` first (stable: the rows of a group keep their order) and
    grouped in that order, so every aggregation sees a group's rows in the order it saw them
    before (``first``, sums, means: identical).

    Examples
    --------
    >>> lf = pl.LazyFrame({"g": ["b", "a", "b"], "x": [0.1, 0.2, 0.3]})
    >>> grouped_in_order(lf, ["g"], pl.col("x").sum()).collect().rows()
    [('a', 0.2), ('b', 0.4)]
    """
    keys = list(keys)
    if not keys:
        return lf.select(*aggs)
    # a key with one value on every row (one dataset, one metric) orders nothing and groups
    # nothing: it is left out of the sort and the grouping (each key costs a fifth of the
    # table's time) and set back after, with its value and type
    # (keys the analyses compute, named ``__...``, e.g. a prompt id joined from factor columns,
    # are not checked: evaluating them twice would cost what leaving them out saves)
    checked = [k for k in keys if not k.startswith("__")] if len(keys) > 1 else []
    same = (
        lf.select(pl.col(k).eq_missing(pl.col(k).first()).all() for k in checked).collect().row(0)
        if checked
        else ()
    )
    fixed = {k for k, s in zip(checked, same, strict=True) if s}
    varying = [k for k in keys if k not in fixed]
    if not varying or len(varying) == len(keys):
        varying = keys
    fixed = [k for k in keys if k not in varying]
    out = (
        lf.sort(varying, maintain_order=True, nulls_last=nulls_last)
        .group_by(varying, maintain_order=True)
        .agg(*aggs)
    )
    if not fixed:
        return out
    first = lf.select(pl.col(k).first() for k in fixed).collect()
    return out.with_columns(pl.lit(first.get_column(k)).first().alias(k) for k in fixed).select(
        *keys, pl.exclude(keys)
    )


def dense_inverse(x: np.ndarray) -> tuple[int, np.ndarray]:
    """``(number of distinct values, code of each value)``: ``numpy.unique``'s inverse.

    Codes follow the values' sorted order, as ``numpy.unique(x, return_inverse=True)[1]``;
    non-negative integers whose largest value is at most a few times their count are coded by a
    count (``O(n)``), anything else by ``numpy.unique``.

    Examples
    --------
    >>> dense_inverse(np.array([5, 2, 5, 9]))
    (3, array([1, 0, 1, 2]))
    """
    x = np.asarray(x)
    if x.size == 0:
        return 0, np.zeros(0, dtype=np.intp)
    if x.dtype.kind in "iu":
        lo, hi = int(x.min()), int(x.max())
        if lo >= 0 and hi <= 4 * x.size + 1024:
            present = np.bincount(x, minlength=hi + 1) > 0
            code = np.cumsum(present, dtype=np.intp) - 1
            return int(code[-1]) + 1, code[x]
    values, inverse = np.unique(x, return_inverse=True)
    return int(values.size), inverse.reshape(-1).astype(np.intp, copy=False)
