"""The row accounting as one streaming polars query, with partitions only where duplicates may be.

:func:`stream_account` gives the same :class:`~evalstats.io._accounting.Accounting` as the
partitioned pass (:func:`evalstats.io._accounting.account`) in one pass of polars' streaming
engine over every file, with memory bounded by the number of units rather than rows:

- every set-aside rule is already a polars expression (``Plan.code_expr``, one reason code per
  row); the rows are grouped by (file, unit columns, code) and each group sums its scores and
  counts its rows, scored rows and errored calls, so reasons are counted and units summed in
  the same aggregate;
- per-file score statistics (for the note on percent-looking files) come from a second small
  aggregate by file, in the same ``collect_all``;
- duplicates: within the rows kept so far, a *run* is a maximal stretch of consecutive rows
  (in file order) with the same duplicate group (the de-duplication key without ``item``). A
  duplicate group written in one run whose items strictly increase, under string order or
  under (length, string) order (which sorts ``"9"`` before ``"10"``), cannot hold two rows of
  one item: it has no duplicates, and is *certified*. Runs, starts and increases are computed
  with ``shift`` in the streaming query, and counted by the same aggregate;
- examples of set-aside rows are a bounded top-k (``sort().head(N_EXAMPLES)``) per reason,
  and the ids of set-aside rows a filter, both only when some rows are set aside.

The rows of the duplicate groups that are not certified (dumps written out of order, or holding
duplicates) are then accounted for by the partitioned pass on those groups only (the plan's
frames filtered to them), which finds the duplicates exactly; its units and ``duplicate``
counts replace theirs. Nothing is approximate: a certificate is a proof that a group has no
duplicates, and every other group gets the exact partitioned treatment.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import polars as pl

from evalstats.io._accounting import (
    _KEPT,
    PART_ROWS,
    Accounting,
    Plan,
    Runner,
    _bottom,
    _computed,
    _first_invalid,
    _locate_read_error,
    _scale_decision,
    account,
    row_counts,
    run_local,
)
from evalstats.io._rows import N_EXAMPLES, whole_run

__all__ = ["account_rows", "stream_account", "streamable"]


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

    The streaming query (:func:`stream_account`) runs for item-level rows in this process;
    unit-level rows and the Dask runner use :func:`evalstats.io._accounting.account` (the
    arguments are its own). ``stream=False`` forces the partitions (the tests compare the two).
    """
    if not (stream and runner is run_local and streamable(plan)):
        return account(
            plan, units=units, ids=ids, runner=runner, part_rows=part_rows, progress=progress
        )

    def partitioned(sub: Plan, prog: Callable[[int], None] | None) -> Accounting:
        return account(sub, units=units, ids=ids, runner=runner, part_rows=part_rows, progress=prog)

    return stream_account(plan, ids=ids, partitioned=partitioned, progress=progress)


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


def _increasing(plan: Plan) -> tuple[pl.Expr, pl.Expr]:
    """Two strict orders of ``item`` against the previous row: string, (length, string)."""
    it = pl.col("item")
    prev = it.shift(1)
    if plan.schema["item"] != pl.String:
        up = (it > prev).fill_null(False)
        return up, up
    n, n_prev = it.str.len_bytes(), it.str.len_bytes().shift(1)
    lex = (it > prev).fill_null(False)
    by_len = ((n > n_prev) | ((n == n_prev) & (it > prev))).fill_null(False)
    return lex, by_len


def stream_account(
    plan: Plan,
    *,
    ids: bool,
    partitioned: Callable[[Plan, Callable[[int], None] | None], Accounting],
    progress: Callable[[int], None] | None = None,
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

    Returns
    -------
    Accounting
    """
    files = list(range(len(plan.frames)))
    lf = _computed(plan, plan.frame(files), {}).with_columns(plan.code_expr)
    dcols = plan.dedup_row_cols
    gcols = plan.group_cols
    has_err = "error" in plan.schema
    valid = pl.col("__code") == _KEPT
    # scored: kept with a score (an errored call is kept without one and is in no unit)
    scored = valid & pl.col("__score").is_not_nan().fill_null(False) if has_err else valid

    # runs of duplicate groups among the valid rows, in file order: a valid row starts a run
    # unless the row before it is valid and of the same group (then it is compared with it)
    same = (
        pl.all_horizontal([pl.col(c).eq_missing(pl.col(c).shift(1)) for c in dcols])
        if dcols
        else pl.lit(True)
    )
    start = ~(same & valid.shift(1)).fill_null(False)
    lex, by_len = _increasing(plan)
    s = pl.col("__score")
    finite = s.is_not_null() & s.is_finite() & ~pl.col("__pct")
    nonzero = finite & (s != 0)
    # row flags first, then one aggregate of plain columns: the streaming engine runs it in
    # memory bounded by the groups (filters inside the aggregate, or several queries sharing
    # the scan, made it hold the rows: 1.7-4.4 GB at 20M rows)
    flags = [
        (start & valid).alias("__st"),
        (lex | start | ~valid).alias("__al"),
        (by_len | start | ~valid).alias("__bl"),
        pl.when(scored).then(s).otherwise(0.0).alias("__sv"),
        scored.alias("__sc"),
    ]
    aggs = [
        pl.len().alias("__rows"),
        pl.col("__sv").sum().alias("__sum"),
        pl.col("__sc").sum().cast(pl.Int64).alias("__n"),
        pl.col("__st").sum().cast(pl.Int64).alias("__runs"),
        pl.col("__al").all().alias("__all_lex"),
        pl.col("__bl").all().alias("__all_len"),
    ]
    if has_err:
        flags.append((scored & pl.col("error").is_not_null()).alias("__er"))
        aggs.append(pl.col("__er").sum().cast(pl.Int64).alias("__n_err"))
    if plan.hint_scale:
        flags += [
            pl.when(finite).then(s).alias("__fs"),
            nonzero.alias("__nzf"),
            (nonzero & (s > 1)).alias("__g1"),
            (finite & (s != s.round(0))).alias("__ni"),
        ]
        aggs += [
            pl.col("__fs").min().alias("__min"),
            pl.col("__fs").max().alias("__max"),
            pl.col("__nzf").sum().cast(pl.Int64).alias("__nz"),
            pl.col("__g1").sum().cast(pl.Int64).alias("__gt1"),
            pl.col("__ni").sum().cast(pl.Int64).alias("__nonint"),
        ]
    keys = ["__src", *gcols, "__code"]
    try:
        parts = [
            _rows(plan, chunk, a, n)
            .with_columns(flags)
            # the row carried over from the slice before only gives its values to ``shift``
            .filter(pl.col("__k") >= int(a > 0))
            .group_by(keys)
            .agg(aggs)
            .collect(engine="streaming")
            for chunk, a, n in _chunks(row_counts(plan))
        ]
    except (pl.exceptions.PolarsError, pl.exceptions.PanicException, OSError) as exc:
        raise _locate_read_error(plan, files, exc) from None
    sums_df = parts[0] if len(parts) == 1 else _combine(parts, keys)
    cert_df = sums_df.filter(pl.col("__code") == _KEPT)

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
        out = pl.collect_all(ex_q, engine="streaming")
        for c, df in zip(sorted(aside), out):
            examples[names[c]] = [(int(s), int(r), raw) for s, r, raw in df.iter_rows()]
        if ids:
            id_frames.append(out[-1])

    # --- score scale notes (per file) ------------------------------------------------------
    by_src = _score_stats_by_file(sums_df) if plan.hint_scale else {}
    scale_all = {i: _scale_decision(by_src.get(i), plan, plan.paths[i]) for i in files}

    # --- unit sums, and the duplicate groups certified free of duplicates -----------------
    kept = sums_df.filter(pl.col("__code") == _KEPT)
    agg = [pl.col("__sum", "__n", *(["__n_err"] if has_err else [])).sum()]
    groups = kept.group_by(gcols, maintain_order=True).agg(*agg).filter(pl.col("__n") > 0)
    if dcols:
        per = cert_df.group_by(dcols).agg(
            pl.col("__runs", "__rows").sum(), pl.col("__all_lex").all(), pl.col("__all_len").all()
        )
    else:
        per = cert_df.select(
            pl.col("__runs", "__rows").sum(), pl.col("__all_lex").all(), pl.col("__all_len").all()
        )
    ok = (pl.col("__runs") == 1) & (pl.col("__all_lex") | pl.col("__all_len"))
    suspect = per.filter(~ok)
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


#: Rows per query of the streaming pass: ``shift`` makes polars' streaming engine hold the
#: columns it looks at for a whole query (at 100M rows in one query: 2.4 GB).
CHUNK_ROWS = 4_000_000


def _chunks(counts: list[int]) -> list[tuple[tuple[int, ...], int, int]]:
    """(files, first row, rows) of each query.

    Consecutive files up to CHUNK_ROWS rows, larger files in slices of CHUNK_ROWS (``rows``
    0: whole files).
    """
    out: list[tuple[tuple[int, ...], int, int]] = []
    batch: list[int] = []
    size = 0
    for i, c in enumerate(counts):
        if c > CHUNK_ROWS:
            if batch:
                out.append((tuple(batch), 0, 0))
                batch, size = [], 0
            out += [((i,), a, CHUNK_ROWS) for a in range(0, c, CHUNK_ROWS)]
            continue
        if batch and size + c > CHUNK_ROWS:
            out.append((tuple(batch), 0, 0))
            batch, size = [], 0
        batch.append(i)
        size += c
    if batch or not out:
        out.append((tuple(batch), 0, 0))
    return out


def _rows(plan: Plan, files: tuple[int, ...], a: int, n: int) -> pl.LazyFrame:
    """The rows of a chunk with ``__k``, their index in it.

    A slice starting at row ``a > 0`` begins with row ``a - 1`` (``__k == 0``), carried over
    for ``shift``.
    """
    if not files:
        frame = plan.frames[0].head(0)
    elif n:
        frame = plan.frames[files[0]].slice(a - 1 if a else 0, n + (1 if a else 0))
    else:
        frame = plan.frame(files)
    lf = _computed(plan, frame, {}).with_columns(plan.code_expr)
    return lf.with_row_index("__k")


def _combine(parts: list[pl.DataFrame], keys: list[str]) -> pl.DataFrame:
    """The aggregates of several chunks as one (sums, all, min, max by column)."""
    how = {"__all_lex": "all", "__all_len": "all", "__min": "min", "__max": "max"}
    cols = [c for c in parts[0].columns if c not in keys]
    return (
        pl.concat(parts, how="vertical_relaxed")
        .group_by(keys, maintain_order=True)
        .agg(getattr(pl.col(c), how.get(c, "sum"))() for c in cols)
    )


def _score_stats_by_file(sums: pl.DataFrame) -> dict[int, dict[str, object]]:
    """Per file, the statistics of :func:`evalstats.io._accounting._score_stats` from groups."""
    per = sums.group_by("__src").agg(
        pl.col("__min").min().alias("min"),
        pl.col("__max").max().alias("max"),
        pl.col("__nz").sum(),
        pl.col("__gt1").sum(),
        (pl.col("__nonint").sum() == 0).alias("integers"),
    )
    out = {}
    for r in per.iter_rows(named=True):
        r["share_gt1"] = r["__gt1"] / r["__nz"] if r["__nz"] else None
        out[r["__src"]] = r
    return out


def _only(frame: pl.LazyFrame, keys: pl.DataFrame) -> pl.LazyFrame:
    """The rows of ``frame`` in the duplicate groups ``keys`` (``__run`` computed to match)."""
    if "__run" not in keys.columns:
        return frame.join(keys.lazy(), on=keys.columns, how="semi", nulls_equal=True)
    return (
        frame.with_columns(whole_run(pl.col("run")).alias("__run"))
        .join(keys.lazy(), on=keys.columns, how="semi", nulls_equal=True)
        .drop("__run")
    )
