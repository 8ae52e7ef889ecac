"""The row accounting as one streaming polars query, with partitions only where duplicates may be.

:func:`stream_account` gives the same :class:`~evalstats.io._accounting.Accounting` as the
partitioned pass (:func:`evalstats.io._accounting.account`) in one pass of polars' streaming
engine over every file, with memory bounded by the number of groups rather than rows:

- the rows are grouped by the unit and duplicate-group columns that vary within a file (a
  column the loader or the plan sets to one value per file, such as a dataset named by its file
  or an absent metric bound, is left out and put back on the groups from ``Plan.constants``)
  and by the reason code of the set-aside rules that look at other columns (score, item); the
  rules on grouped columns only are decided once per group afterwards, the first matching rule
  winning as row by row. The same aggregate sums the scores, counts the rows and keeps each
  group's score range (for the note on percent-looking files; a file whose range does not
  settle it, or with rows set aside, gets :func:`~evalstats.io._accounting.scale_of`'s pass);
- duplicates: a duplicate group (the de-duplication key without ``item``) is *certified* free
  of duplicates when, for whole-number items, ``item - row`` is the same on all its kept rows
  (row: the row's index among all rows; the items are then distinct row indices plus one
  number), or, for other items, when its kept rows are consecutive and each item follows the
  one before in string order or in (length, string) order (which sorts ``"9"`` before
  ``"10"``). That order is checked by :class:`_Order`, a function polars calls on each batch of
  rows; the first row of each batch is checked afterwards against the last of the batch before
  (no ``shift``, which made the engine hold whole columns). Whole-number items that are not
  consecutive are proved by the order in a second query when the first leaves more than an
  eighth of the rows uncertified;
- the distinct values of the name columns, when the plan left their check to this pass
  (:func:`evalstats.io._pipeline.names_checked`), come from the groups or the constants (``item``
  alone is read apart); a value that needs cleaning raises
  :class:`~evalstats.io._accounting.NamesUnchecked`, and the caller builds the plan again
  with the check (and cleaning) first;
- examples of set-aside rows are a bounded top-k (``sort().head(N_EXAMPLES)``) per reason,
  and the ids of set-aside rows a filter, both only when some rows are set aside.

The rows of the duplicate groups that are not certified (dumps written out of order, or holding
duplicates) are then accounted for by the partitioned pass on those groups only (the plan's
frames filtered to them), which finds the duplicates exactly; its units and ``duplicate``
counts replace theirs. Nothing is approximate: a certificate is a proof that a group has no
duplicates, and every other group gets the exact partitioned treatment.

The queries (one by default; slices of at most ``partition_rows`` rows for a cluster) run
through a :data:`Mapper`: in this process, or on Dask workers (``engine="dask"``), which send
back only their aggregates and batch edges.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np
import polars as pl

from evalstats.io._accounting import (
    _KEPT,
    PART_ROWS,
    Accounting,
    NamesUnchecked,
    Plan,
    Runner,
    _bottom,
    _computed,
    _first_invalid,
    _locate_read_error,
    account,
    row_counts,
    run_local,
    scale_of,
)
from evalstats.io._rows import N_EXAMPLES, Check, clean_name, whole_run

__all__ = ["Mapper", "account_rows", "map_local", "stream_account", "streamable"]


#: ``mapper(function, plan, argument tuples)``: ``[function(plan, *args) for args in ...]``, in
#: this process or on a cluster's workers (the plan sent once).
Mapper = Callable[[Callable[..., object], Plan, list[tuple]], list]


def map_local(fn: Callable[..., object], plan: Plan, args: list[tuple]) -> list:
    """Run ``fn(plan, *a)`` for each ``a`` in this process, in order."""
    return [fn(plan, *a) for a in args]


def account_rows(
    plan: Plan,
    *,
    units: bool = True,
    ids: bool = False,
    runner: Runner = run_local,
    part_rows: int = PART_ROWS,
    progress: Callable[[int], None] | None = None,
    stream: bool = True,
) -> Accounting:
    """Account for every row: the streaming query where it applies, else the partitions.

    The streaming query (:func:`stream_account`) runs for item-level rows: in this process, or
    on a cluster when ``runner`` has a ``map`` (a :data:`Mapper`; the Dask runner), in queries
    of at most ``part_rows`` rows spread over its workers. Unit-level rows use
    :func:`evalstats.io._accounting.account` (the arguments are its own). ``stream=False``
    forces the partitions (the tests compare the two).
    """
    mapper = map_local if runner is run_local else getattr(runner, "map", None)
    if not (stream and mapper is not None and streamable(plan)):
        if plan.unchecked_names:  # the partitions need the names checked (and cleaned) first
            raise NamesUnchecked
        return account(
            plan, units=units, ids=ids, runner=runner, part_rows=part_rows, progress=progress
        )

    def partitioned(sub: Plan, prog: Callable[[int], None] | None) -> Accounting:
        return account(sub, units=units, ids=ids, runner=runner, part_rows=part_rows, progress=prog)

    return stream_account(
        plan,
        ids=ids,
        partitioned=partitioned,
        progress=progress,
        mapper=mapper,
        chunk_rows=0 if mapper is map_local else part_rows,
    )


def streamable(plan: Plan) -> bool:
    """Whether the streaming pass applies: item-level rows de-duplicated on their item.

    Not for formats whose duplicates are a documented quirk (DOVE): their duplicates are
    spread over most groups, which the streaming pass could not prove free of them.
    """
    # a format whose dumps hold duplicates by design (DOVE) would fail the proof in most
    # groups and pay both passes: it goes to the partitions at once
    return (
        plan.has_item
        and "item" in plan.dedup_key
        and "duplicate" not in plan.quirks
        and bool(plan.frames)
    )


#: Rows per query of the streaming pass (files batched, larger ones sliced). One query holds
#: memory bounded by its groups whatever its rows, so by default all rows go in one query; the
#: tests set a few rows to cut files at many places.
CHUNK_ROWS = _ONE_QUERY = 1 << 62


class _Order:
    """Per batch of rows (a ``map_batches`` function), the rows out of order.

    A row is out of order when its item does not follow the item of the row before in a
    strict order (``"lex"``: string or number order; ``"len"``: (byte length, string)).
    Returns ``row + 1`` for such a row and 0 otherwise; the first row of a batch, whose row
    before is in another batch, gives 0 and is recorded in ``edges`` with the batch's last row
    (``(first row, first item, last row, last item)``), so that :meth:`down_edges` decides it
    once every batch is seen. Batches need not arrive in order: rows are told by their index.
    """

    def __init__(self, order: str, dtype: pl.DataType) -> None:
        self.order = order
        self.dtype = dtype
        self.edges: list[tuple[int, object, int, object]] = []

    def _up(self, prev: pl.Series, cur: pl.Series) -> pl.Series:
        up = cur > prev
        if self.order == "len":
            n, n_prev = cur.str.len_bytes(), prev.str.len_bytes()
            up = (n > n_prev) | ((n == n_prev) & up)
        return up.fill_null(False)

    def __call__(self, s: pl.Series) -> pl.Series:
        r, it = s.struct.field("__r"), s.struct.field("item")
        n = len(r)
        if n == 0:
            return pl.Series("__d", [], dtype=pl.UInt64)
        self.edges.append((r[0], it[0], r[n - 1], it[n - 1]))
        r64 = r.cast(pl.UInt64)
        if n == 1:
            return pl.Series("__d", [0], dtype=pl.UInt64)
        up = self._up(it.slice(0, n - 1), it.slice(1)) & (r64.diff().slice(1) == 1)
        down = pl.concat([pl.Series([False]), ~up])
        return pl.select(
            pl.when(down).then(r64 + 1).otherwise(pl.lit(0, pl.UInt64)).alias("__d")
        ).to_series()

    def down_edges(self) -> np.ndarray:
        """Sorted first rows of batches out of order with the row before (or without one)."""
        out = []
        prev = None
        for r0, i0, r1, i1 in sorted(self.edges, key=lambda e: e[0]):
            if prev is None or prev[2] + 1 != r0 or not self._up_scalar(prev[3], i0):
                out.append(r0)
            prev = (r0, i0, r1, i1)
        return np.asarray(out, dtype=np.int64)

    def _up_scalar(self, prev: object, cur: object) -> bool:
        return bool(
            self._up(pl.Series([prev], dtype=self.dtype), pl.Series([cur], dtype=self.dtype))[0]
        )


def _orders(plan: Plan) -> list[str]:
    """The strict orders of ``item`` that may certify a group (see the module docstring)."""
    return ["lex", "len"] if plan.schema["item"] == pl.String else ["lex"]


def _code(rules: Sequence[tuple[int, Check]]) -> pl.Expr:
    """UInt8 code of the first matching rule among ``rules`` (``(code, rule)``; 0: none)."""
    code: pl.Expr = pl.lit(_KEPT, dtype=pl.UInt8)
    for k, rule in reversed(rules):
        code = pl.when(rule.expr.fill_null(False)).then(pl.lit(k, pl.UInt8)).otherwise(code)
    return code


def _shared_constants(plan: Plan) -> dict[str, list[object]]:
    """Columns constant within every file, with each file's value."""
    if len(plan.constants) != len(plan.frames) or not plan.constants:
        return {}
    common = set(plan.constants[0]).intersection(*plan.constants[1:])
    return {c: [k[c] for k in plan.constants] for c in sorted(common)}


def _with_constants(
    df: pl.DataFrame, consts: dict[str, list[object]], cols: Sequence[str], plan: Plan
) -> pl.DataFrame:
    """``df`` (one row per group, ``__src`` a column when several files) with ``cols`` put back."""
    dtypes = {"__src": pl.Int32, "__run": pl.Int64}
    exprs = []
    for c in cols:
        vals, dt = consts[c], dtypes.get(c) or plan.schema[c]
        if len(set(map(repr, vals))) == 1:
            exprs.append(pl.lit(vals[0], dtype=dt).alias(c))
        else:
            exprs.append(
                pl.col("__src")
                .replace_strict(list(range(len(vals))), vals, return_dtype=dt)
                .alias(c)
            )
    return df.with_columns(exprs) if exprs else df


def stream_account(
    plan: Plan,
    *,
    ids: bool,
    partitioned: Callable[[Plan, Callable[[int], None] | None], Accounting],
    progress: Callable[[int], None] | None = None,
    mapper: Mapper = map_local,
    chunk_rows: int = 0,
) -> Accounting:
    """Account for every row in one streaming query; see the module docstring.

    Parameters
    ----------
    plan : Plan
        The loader's plan (:func:`streamable` must hold).
    ids : bool
        Collect the (file, row) of every row set aside.
    partitioned : callable
        ``partitioned(plan, progress)`` runs the partitioned pass on a plan (here: one whose
        frames hold only the duplicate groups that are not certified).
    progress : callable, optional
        Called with the number of files done.
    mapper : Mapper, default map_local
        Runs the queries (here, or on a cluster's workers).
    chunk_rows : int, optional
        Rows per query (default ``CHUNK_ROWS``: one query).

    Returns
    -------
    Accounting
    """
    files = list(range(len(plan.frames)))
    dcols = plan.dedup_row_cols
    gcols = plan.group_cols
    has_err = "error" in plan.schema
    consts = _shared_constants(plan)
    # columns constant within each file are not grouped by (the file stands for them)
    keys = (["__src"] if len(files) > 1 else []) + [c for c in gcols if c not in consts]
    keys.append("__code")
    # rules on grouped or constant columns only are decided per group, after the query
    known = set(keys) | set(consts)
    by_group, by_row = [], []
    for k, rule in enumerate(plan.rules, 1):
        roots = set(rule.expr.meta.root_names())
        (by_group if roots <= known else by_row).append((k, rule))
    # whole numbers that fit in Int64 (item - row cannot fail); others by their order
    fits = plan.schema["item"].is_integer() and plan.schema["item"] != pl.UInt64
    method = "step" if fits else "order"
    sums_df, orders = _aggregate(plan, keys, by_row, method, chunk_rows, mapper)
    if plan.unchecked_names:
        _check_names(plan, sums_df, consts)
    sums_df = _group_codes(plan, sums_df, consts, by_group)
    lf = _computed(plan, plan.frame(files), {}).with_columns(plan.code_expr)

    # --- counts, examples, ids -------------------------------------------------------------
    names = plan.reasons
    by_code = sums_df.group_by("__code").agg(pl.col("__rows").sum())
    counts = {names[c]: int(n) for c, n in sorted(by_code.iter_rows()) if c != _KEPT and n}
    rows_read = int(sums_df["__rows"].sum())
    aside = [c for c, n in by_code.iter_rows() if c != _KEPT and n]
    examples: dict[str, list[tuple[int, int, str | None]]] = {}
    id_frames: list[pl.DataFrame] = []
    if aside:
        ex_q = [
            lf.filter(pl.col("__code") == c)
            .select("__src", "__row", pl.col("score").cast(pl.String))
            .sort("__src", "__row")
            .head(N_EXAMPLES)
            for c in sorted(aside)
        ]
        if ids:
            ex_q.append(lf.filter(pl.col("__code") != _KEPT).select("__src", "__row"))
        try:
            out = pl.collect_all(ex_q, engine="streaming")
        except (pl.exceptions.PolarsError, pl.exceptions.PanicException, OSError) as exc:
            raise _locate_read_error(plan, files, exc) from None
        for c, df in zip(sorted(aside), out):
            examples[names[c]] = [(int(s), int(r), raw) for s, r, raw in df.iter_rows()]
        if ids:
            id_frames.append(out[-1])

    # --- score scale notes (per file) ------------------------------------------------------
    scale_all = _scale_notes(plan, sums_df) if plan.hint_scale else {}
    scale_all = {i: scale_all.get(i, (1.0, None)) for i in files}

    # --- unit sums, and the duplicate groups certified free of duplicates -----------------
    kept = sums_df.filter(pl.col("__code") == _KEPT)
    per, suspect = _suspects(plan, kept, method, orders)
    if method == "step" and 8 * int(suspect["__rows"].sum()) > int(per["__rows"].sum()):
        # items that are numbers but not consecutive ones: prove the order of each group instead
        method = "order"
        sums_df, orders = _aggregate(plan, keys, by_row, method, chunk_rows, mapper)
        sums_df = _group_codes(plan, sums_df, consts, by_group)
        kept = sums_df.filter(pl.col("__code") == _KEPT)
        per, suspect = _suspects(plan, kept, method, orders)
    agg = [pl.col("__sum", "__n", *(["__n_err"] if has_err else [])).sum()]
    groups = kept.group_by(gcols, maintain_order=True).agg(*agg).filter(pl.col("__n") > 0)
    if progress is not None:
        progress(len(files))
    if suspect.height:
        if 2 * int(suspect["__rows"].sum()) > int(per["__rows"].sum()):
            # most rows not certified: the partitioned pass on all rows (cheaper than
            # filtering every file to those groups), its units taken for those groups only
            sub = dataclasses.replace(plan, on_invalid="skip")
        else:
            keys = suspect.select(dcols)
            sub = dataclasses.replace(
                plan,
                on_invalid="skip",
                frames=tuple(_only(f, keys) for f in plan.frames),
            )
        slow = partitioned(sub, None)
        if "duplicate" in slow.set_aside:
            counts["duplicate"] = slow.set_aside["duplicate"]
        if "duplicate" in slow.examples:
            examples["duplicate"] = _bottom(slow.examples["duplicate"])
        if dcols:
            groups = groups.join(suspect.select(dcols), on=dcols, how="anti", nulls_equal=True)
        else:
            groups = groups.clear()
        slow_groups = slow.groups.filter(pl.col("__n") > 0).drop("__n_dup")
        if dcols and sub.frames is plan.frames:
            slow_groups = slow_groups.join(
                suspect.select(dcols), on=dcols, how="semi", nulls_equal=True
            )
        groups = pl.concat([groups, slow_groups.select(groups.columns)], how="vertical_relaxed")
        # (a derived variant, which the slow groups may carry, is put back on all below)
        if ids and slow.ids is not None:
            id_frames.append(slow.ids)
    groups = groups.with_columns(pl.lit(0, dtype=pl.Int64).alias("__n_dup"))
    if plan.variant is not None and "variant" in plan.dedup_groups:
        groups = groups.with_columns(plan.variant)
    id_frame = None
    if ids:
        id_frame = (
            pl.concat([f.select("__src", "__row") for f in id_frames])
            .unique()
            .sort("__src", "__row")
            if id_frames
            else pl.DataFrame(schema={"__src": pl.Int32, "__row": pl.Int64})
        )
    counts = {k: counts[k] for k in sorted(counts, key=lambda k: names.index(k))}
    return Accounting(
        rows_read=rows_read,
        set_aside=counts,
        examples=examples,
        scale={i: f for i, (f, _) in scale_all.items()},
        scale_notes=[n for i in sorted(scale_all) if (n := scale_all[i][1])],
        groups=groups,
        ids=id_frame,
        passthrough=None,
        first_invalid=_first_invalid(plan, examples) if plan.on_invalid == "error" else None,
    )


def _aggregate(
    plan: Plan,
    keys: list[str],
    by_row: Sequence[tuple[int, Check]],
    method: str,
    chunk_rows: int = 0,
    mapper: Mapper = map_local,
) -> tuple[pl.DataFrame, list[_Order]]:
    """The streaming query: rows grouped by ``keys`` (with their row rules' code), aggregated.

    Per group: rows, score sum, count, range, first and last row index, and what proves its
    items distinct: ``method="step"`` (whole-number items) the range of ``item - row``, which
    is constant only where each row's item is one more than the row before's; ``"order"`` the
    rows whose item does not follow the row before's (:class:`_Order`). The rows go in queries
    of at most ``chunk_rows`` (default ``CHUNK_ROWS``), run by ``mapper``; their aggregates
    and batch edges are merged.
    """
    files = list(range(len(plan.frames)))
    chunk_rows = chunk_rows or CHUNK_ROWS
    counts_per_file = row_counts(plan) if chunk_rows < _ONE_QUERY else None
    if counts_per_file is None:
        specs = [(tuple(files), 0, 0, 0)]
    else:
        specs, offset = [], 0
        for chunk, a, n in _chunks(counts_per_file, chunk_rows):
            specs.append((chunk, a, n, offset))
            offset += n if n else sum(counts_per_file[i] for i in chunk)
    codes = tuple(k for k, _ in by_row)
    try:
        results = mapper(_chunk_query, plan, [(keys, codes, method, spec) for spec in specs])
    except (pl.exceptions.PolarsError, pl.exceptions.PanicException, OSError) as exc:
        raise _locate_read_error(plan, files, exc) from None
    orders = [_Order(o, plan.schema["item"]) for o in _orders(plan)] if method == "order" else []
    for o in orders:
        o.edges = [e for _, edges in results for e in edges[o.order]]
    parts = [df for df, _ in results]
    return (parts[0] if len(parts) == 1 else _combine(parts, keys)), orders


def _chunk_query(
    plan: Plan,
    keys: list[str],
    codes: tuple[int, ...],
    method: str,
    spec: tuple[tuple[int, ...], int, int, int],
) -> tuple[pl.DataFrame, dict[str, list]]:
    """One query of :func:`_aggregate` (``spec``: files, first row, rows, row offset).

    Runs where the mapper runs it (a Dask worker); returns the aggregates and each order's
    batch edges.
    """
    files, a, n, offset = spec
    by_row = [(k, plan.rules[k - 1]) for k in codes]
    has_err = "error" in plan.schema
    orders = [_Order(o, plan.schema["item"]) for o in _orders(plan)] if method == "order" else []
    r = pl.col("__r")
    flags = [
        pl.struct("__r", "item")
        .map_batches(o, return_dtype=pl.UInt64, is_elementwise=True)
        .alias(f"__d_{o.order}")
        for o in orders
    ]
    if method == "step":
        flags.append((pl.col("item").cast(pl.Int64) - r.cast(pl.Int64)).alias("__k"))
    aggs = [pl.len().alias("__rows"), pl.col("__score").sum().alias("__sum")]
    if method == "step":
        aggs += [pl.col("__k").min().alias("__k0"), pl.col("__k").max().alias("__k1")]
    else:
        aggs += [
            r.min().cast(pl.Int64).alias("__r0"),
            r.max().cast(pl.Int64).alias("__r1"),
            *(pl.col(f"__d_{o.order}").max().cast(pl.Int64) for o in orders),
        ]
    if plan.hint_scale:
        aggs += [pl.col("__score").min().alias("__min"), pl.col("__score").max().alias("__max")]
    if has_err:  # an errored call is kept without a score: counted apart, in no unit's sum
        aggs += [
            pl.col("__score").count().alias("__n"),
            pl.when(pl.col("error").is_not_null()).then(pl.col("__score")).count().alias("__n_err"),
        ]
    df = (
        _rows(plan, files, a, n, offset)
        .with_columns(_code(by_row).alias("__code"))
        .with_columns(flags)
        .group_by(keys)
        .agg(aggs)
        .collect(engine="streaming")
    )
    return df, {o.order: o.edges for o in orders}


def _group_codes(
    plan: Plan,
    sums: pl.DataFrame,
    consts: dict[str, list[object]],
    by_group: Sequence[tuple[int, Check]],
) -> pl.DataFrame:
    """The groups with the constant columns put back and each group's final reason code.

    ``__row_code`` is the code the row rules gave; ``__code`` the first matching rule of all,
    the rules on the group's columns evaluated once per group.
    """
    row_code = pl.col("__code")
    sums = _with_constants(sums, consts, sorted(consts), plan).with_columns(
        row_code.alias("__row_code")
    )
    if by_group:
        gc = _code(by_group)
        sums = sums.with_columns(
            pl.when((gc != _KEPT) & ((row_code == _KEPT) | (gc < row_code)))
            .then(gc)
            .otherwise(row_code)
            .alias("__code")
        )
    if "error" not in plan.schema:
        sums = sums.with_columns(pl.col("__rows").cast(pl.Int64).alias("__n"))
    return sums


def _suspects(
    plan: Plan, kept: pl.DataFrame, method: str, orders: Sequence[_Order]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Per duplicate group of the kept rows, its extent; and those not proved duplicate-free."""
    dcols = plan.dedup_row_cols
    per_aggs = [pl.col("__rows").sum().cast(pl.Int64)]
    if method == "step":
        per_aggs += [pl.col("__k0").min(), pl.col("__k1").max()]
    else:
        per_aggs += [
            pl.col("__r0").min(),
            pl.col("__r1").max(),
            *(pl.col(f"__d_{o.order}").max() for o in orders),
        ]
    per = kept.group_by(dcols).agg(per_aggs) if dcols else kept.select(per_aggs)
    return per, per.filter(~pl.Series(_certified(per, method, orders)))


def _certified(per: pl.DataFrame, method: str, orders: Sequence[_Order]) -> np.ndarray:
    """Which duplicate groups (rows of ``per``) are proved free of duplicates.

    ``method="step"``: a group is when ``item - row`` (row: the row's index among all rows) is
    the same on all its kept rows: their items are then their row indices plus one number,
    which differ. ``"order"``: when its kept rows are consecutive rows (``__r0`` to ``__r1``)
    and, in one of the orders, no row after its first fails to follow the row before: neither
    a row within a batch (``__d_<order>``, the last such row + 1) nor the first row of a batch
    (its edge).
    """
    if per.height == 0:
        return np.zeros(0, dtype=bool)
    if method == "step":
        return (per["__k0"] == per["__k1"]).fill_null(False).to_numpy()
    r0, r1 = per["__r0"].to_numpy(), per["__r1"].to_numpy()
    ok = np.zeros(per.height, dtype=bool)
    for o in orders:
        edges = o.down_edges()
        inside = np.searchsorted(edges, r1, side="right") - np.searchsorted(edges, r0, side="right")
        ok |= (per[f"__d_{o.order}"].to_numpy() <= r0 + 1) & (inside == 0)
    return ok & (r1 - r0 + 1 == per["__rows"].to_numpy())


def _chunks(counts: list[int], limit: int) -> list[tuple[tuple[int, ...], int, int]]:
    """(files, first row, rows) of each query.

    Consecutive files up to ``limit`` rows, larger files in slices of ``limit`` (``rows`` 0:
    whole files).
    """
    out: list[tuple[tuple[int, ...], int, int]] = []
    batch: list[int] = []
    size = 0
    for i, c in enumerate(counts):
        if c > limit:
            if batch:
                out.append((tuple(batch), 0, 0))
                batch, size = [], 0
            out += [((i,), a, min(limit, c - a)) for a in range(0, c, limit)]
            continue
        if batch and size + c > limit:
            out.append((tuple(batch), 0, 0))
            batch, size = [], 0
        batch.append(i)
        size += c
    if batch or not out:
        out.append((tuple(batch), 0, 0))
    return out


def _rows(plan: Plan, files: tuple[int, ...], a: int, n: int, offset: int) -> pl.LazyFrame:
    """The rows of a chunk with ``__r``, their index among all rows (``offset``: the chunk's)."""
    if not files:
        frame = plan.frames[0].head(0)
    elif n:
        frame = plan.frames[files[0]].slice(a, n)
    else:
        frame = plan.frame(files)
    return _computed(plan, frame, {}).with_row_index("__r", offset=offset)


def _combine(parts: list[pl.DataFrame], keys: list[str]) -> pl.DataFrame:
    """The aggregates of several chunks as one (min, max or sum by column)."""
    how = {
        "__r0": "min",
        "__min": "min",
        "__k0": "min",
        "__r1": "max",
        "__max": "max",
        "__k1": "max",
    }
    cols = [c for c in parts[0].columns if c not in keys]
    return (
        pl.concat(parts, how="vertical_relaxed")
        .group_by(keys, maintain_order=True)
        .agg(
            getattr(pl.col(c), how.get(c, "max" if c.startswith("__d_") else "sum"))() for c in cols
        )
    )


def _check_names(plan: Plan, sums: pl.DataFrame, consts: dict[str, list[object]]) -> None:
    """Raise :class:`NamesUnchecked` when a name column holds a value :func:`clean_name` changes.

    The distinct values come from the groups (or the files' constants); a name column that is
    neither (``item``) is read on its own, one streaming pass over that column.
    """
    for c in plan.unchecked_names:
        if c in consts:
            values = pl.DataFrame({c: pl.Series(consts[c], dtype=pl.String)})
        elif c in sums.columns:
            values = sums.select(pl.col(c).cast(pl.String)).unique()
        else:
            try:
                values = (
                    plan.frame(range(len(plan.frames)))
                    .select(pl.col(c).cast(pl.String))
                    .unique()
                    .collect(engine="streaming")
                )
            except (pl.exceptions.PolarsError, pl.exceptions.PanicException, OSError) as exc:
                raise _locate_read_error(plan, list(range(len(plan.frames))), exc) from None
        if values.filter(pl.col(c) != clean_name(c)).height:
            raise NamesUnchecked


def _scale_notes(plan: Plan, sums: pl.DataFrame) -> dict[int, tuple[float, str | None]]:
    """Per file, the note on percent-looking scores (:func:`_scale_decision`).

    From the groups' score range where it settles the question: a file whose rows all passed
    the row rules (finite scores) and whose scores are not all in [0, 100] with one above 1
    gets no note. The other files (rows set aside, scores written as text, or a range that
    needs the share above 1) go through :func:`scale_of`, a pass over their score column.
    """
    multi = "__src" in sums.columns and len(plan.frames) > 1
    by = ["__src"] if multi else []
    clean = pl.col("__row_code") == _KEPT
    per = (
        sums.group_by(by).agg(
            (~clean).any().alias("aside"),
            pl.col("__min").filter(clean).min().alias("lo"),
            pl.col("__max").filter(clean).max().alias("hi"),
        )
        if by
        else sums.select(
            (~clean).any().alias("aside"),
            pl.col("__min").filter(clean).min().alias("lo"),
            pl.col("__max").filter(clean).max().alias("hi"),
        ).with_columns(pl.lit(0, dtype=pl.Int32).alias("__src"))
    )
    text = not plan.schema["score"].is_numeric()
    again = []
    for src, aside, lo, hi in per.select("__src", "aside", "lo", "hi").iter_rows():
        if text or aside or (hi is not None and lo >= 0 and 1 < hi <= 100):
            again.append(int(src))
    return scale_of(plan, again) if again else {}


def _only(frame: pl.LazyFrame, keys: pl.DataFrame) -> pl.LazyFrame:
    """The rows of ``frame`` in the duplicate groups ``keys`` (``__run`` computed to match)."""
    if "__run" not in keys.columns:
        return frame.join(keys.lazy(), on=keys.columns, how="semi", nulls_equal=True)
    return (
        frame.with_columns(whole_run(pl.col("run")).alias("__run"))
        .join(keys.lazy(), on=keys.columns, how="semi", nulls_equal=True)
        .drop("__run")
    )
