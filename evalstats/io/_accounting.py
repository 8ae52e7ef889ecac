"""Row accounting by partitions: the one pass over the rows that every loader and the unit table use.

:func:`evalstats.io._pipeline.finalize` turns a loader's per-file frames into a :class:`Plan` (no
data read yet). :func:`account` then reads the rows **one partition at a time** (a partition is a
file, a few small consecutive files, or a hash bucket of a large file), and for each partition
notes files whose scores look like percentages (scores are never rescaled here: the user's
rescaling is applied when the score is parsed, and the per-file factor is always 1), gives every
row its set-aside reason, finds the duplicates,
counts, keeps the first few examples of each reason, and sums scores per unit. Partition results
are small; :func:`account` merges them. Peak memory is that of one partition, whatever the number
of files.

Exactness. Every rule except ``duplicate`` looks at one row, so partitions cannot change it.
Duplicates are found within a partition; a duplicate group (the de-duplication key without
``item``) that turns up in more than one partition is read again, jointly and in file order, from
the files that hold it (the "second pass", needed only when a group is spread over partitions), so
the first row in file order is kept exactly as in one global pass. Each unit's sum is then computed
by one partition call, on the same rows in the same order whichever engine runs the calls.

The same partition function runs in this process (``engine="polars"``) or on Dask workers
(``engine="dask"``, see :mod:`evalstats.aggregate`); only its small results travel.
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import polars as pl

from evalstats.errors import IngestError
from evalstats.io._rows import N_EXAMPLES, Check, parse_score, read_error, whole_run
from evalstats.schema import METRIC_INFO_COLUMNS, OBSERVATION_COLUMNS, factor_columns

__all__ = [
    "Accounting",
    "PART_ROWS",
    "PartResult",
    "PartSpec",
    "Plan",
    "LOCAL_WORKERS",
    "Runner",
    "account",
    "partitions",
    "raise_invalid",
    "run_local",
    "run_part",
    "scale_of",
]

#: Default number of rows read into memory at once (about 150-300 bytes per row in the pass).
PART_ROWS = 2_000_000

#: Small files are batched up to this many rows: one file per partition keeps columns such as
#: ``model`` constant, which makes grouping cheaper, but each partition has a fixed cost.
_BATCH_ROWS = 100_000


class NamesUnchecked(Exception):  # noqa: N818 - control flow, never seen by users
    """A plan built with deferred name checks needs them: build it again without deferral."""


#: Code of the ``duplicate`` reason is ``len(plan.rules) + 1``; 0 means kept.
_KEPT = 0


@dataclass(frozen=True)
class Plan:
    """Everything the row pass needs, built from a loader's frames without reading rows.

    ``frames[i]`` is file ``i`` with ``__src``/``__row`` and the columns of the unified ``schema``
    (same names, dtypes and order in every frame), so any subset of files concatenates.
    """

    format: str
    paths: tuple[str, ...]
    frames: tuple[pl.LazyFrame, ...]
    schema: pl.Schema
    rules: tuple[Check, ...]
    dedup_key: tuple[str, ...]
    quirks: frozenset[str]
    messages: Mapping[str, tuple[str | None, str]]
    on_invalid: str
    score_scale: str | float
    #: scores (and declared bounds) are multiplied by this (the user's rescaling)
    score_factor: float
    #: whether to note files that look percent-scaled (no bounds declared, nothing asked)
    hint_scale: bool
    has_item: bool
    #: expression of the factor columns giving ``variant``, when the loader derives it
    variant: pl.Expr | None
    factor_list: tuple[str, ...]
    #: unit-table factor columns, in output order
    unit_factors: tuple[str, ...]
    source_names: Mapping[str, str]
    notes: tuple[str, ...]
    extra_read: Mapping[str, int] = field(default_factory=dict)
    #: the loader's decisions about source columns (see IngestReport.columns)
    column_rules: tuple = ()
    #: per file, the columns holding one value on all its rows (see ``_pipeline._constants``)
    constants: tuple[Mapping[str, object], ...] = ()
    #: name columns whose distinct values the streaming pass must check (deferred, see
    #: ``_pipeline.names_checked``); empty when checked (and cleaned) in the plan
    unchecked_names: tuple[str, ...] = ()

    @cached_property
    def code_expr(self) -> pl.Expr:
        """UInt8 code of each row's first matching rule (0: none)."""
        code: pl.Expr = pl.lit(_KEPT, dtype=pl.UInt8)
        for k in range(len(self.rules), 0, -1):
            rule = self.rules[k - 1].expr.fill_null(False)
            code = pl.when(rule).then(pl.lit(k, pl.UInt8)).otherwise(code)
        return code.alias("__code")

    @property
    def reasons(self) -> tuple[str, ...]:
        """Reason names by code (code 0, kept, is ``None``)."""
        return (None, *(r.reason for r in self.rules), "duplicate")  # type: ignore[return-value]

    @property
    def unit_cols(self) -> list[str]:
        """Row columns that identify a unit (``variant`` absent when derived per unit)."""
        head = ["model", "dataset", "metric"] + ([] if self.variant is not None else ["variant"])
        info = [c for c in METRIC_INFO_COLUMNS if c in self.schema]
        return head + ["__run"] + info + [c for c in self.unit_factors if c not in head]

    @property
    def dedup_groups(self) -> list[str]:
        """The de-duplication key without ``item``, in unit-table terms (``variant`` per unit)."""
        return [k for k in self.dedup_key if k != "item"]

    @property
    def dedup_row_cols(self) -> list[str]:
        """Row columns that determine the duplicate group (factors stand for a derived variant)."""
        # dicts keep order and test membership in O(1): tables of thousands of columns
        out: dict[str, None] = {}
        for k in self.dedup_groups:
            for c in self.factor_list if (k == "variant" and self.variant is not None) else [k]:
                out.setdefault(c)
        return list(out)

    @property
    def group_cols(self) -> list[str]:
        """Row columns to group by: unit columns plus what the duplicate groups need."""
        out = dict.fromkeys(self.unit_cols)
        for c in self.dedup_row_cols:
            out.setdefault(c)
        return list(out)

    def frame(self, files: Sequence[int]) -> pl.LazyFrame:
        """The rows of ``files``, in file order."""
        sub = [self.frames[i] for i in files]
        return pl.concat(sub, how="vertical") if len(sub) > 1 else sub[0]


@dataclass(frozen=True)
class PartSpec:
    """One partition: files (indices into ``Plan.paths``) and an optional row filter.

    ``scale`` is the per-file score factor when it was decided earlier (needed whenever the
    partition does not hold whole files); ``keys`` keeps only rows whose group columns match a
    row of that frame; ``bucket = (b, n)`` keeps the rows whose duplicate group hashes to ``b``
    modulo ``n``.
    """

    files: tuple[int, ...]
    scale: Mapping[int, float] | None = None
    keys: pl.DataFrame | None = None
    bucket: tuple[int, int] | None = None
    rows: int = 0
    #: the bucket's rows already written to disk by :func:`spill` (Arrow IPC files, every
    #: column the pass needs, reason codes included); ``()`` for a bucket without rows
    spill: tuple[str, ...] | None = None


@dataclass
class PartResult:
    """What one partition sends back: counts, examples, per-group sums, scale decisions."""

    files: tuple[int, ...]
    rows_read: int
    counts: dict[str, int]
    #: reason -> up to N_EXAMPLES (src, row, raw score) in file order
    examples: dict[str, list[tuple[int, int, str | None]]]
    #: per file: (scale factor, note or None); only when decided here
    scale: dict[int, tuple[float, str | None]]
    #: group columns + variant (when derived) + __sum, __n, __n_err, __n_dup
    groups: pl.DataFrame
    #: (__src, __row) of every set-aside row, when asked for
    ids: pl.DataFrame | None = None
    #: kept rows with unit columns, score, n_items, n_errors (unit-level input, units asked)
    passthrough: pl.DataFrame | None = None
    #: the partition's hash bucket, if any
    bucket: tuple[int, int] | None = None


@dataclass
class Accounting:
    """Merged result of all partitions."""

    rows_read: int
    set_aside: dict[str, int]
    examples: dict[str, list[tuple[int, int, str | None]]]
    scale: dict[int, float]
    scale_notes: list[str]
    groups: pl.DataFrame
    ids: pl.DataFrame | None
    passthrough: pl.DataFrame | None
    first_invalid: tuple[int, int, str, str | None] | None


# --- the partition function ------------------------------------------------------------------


#: The largest whole-number score read as a rating (1-10, 1-5, 0-4) rather than a percentage:
#: no hint to rescale by 100 is given for such files.
RATING_MAX = 10


def _scale_decision(
    r: Mapping[str, object] | None, plan: Plan, path: str
) -> tuple[float, str | None]:
    """(factor, note) of one file from its (min, max, share_gt1) statistics.

    Scores are never rescaled here (the user's rescaling is applied when the score is parsed):
    the factor is always 1, and a file of an undeclared metric whose scores look like
    percentages gets a note saying how to ask for the conversion.
    """
    if r is None or r["max"] is None or not plan.hint_scale:
        return 1.0, None
    lo, hi, share = r["min"], r["max"], r["share_gt1"]
    if r.get("integers") and hi <= RATING_MAX:  # type: ignore[operator]
        return 1.0, None  # whole numbers up to 10: a rating scale (1-10, 1-5), not percentages
    if lo >= 0 and 1 < hi <= 100 and (share or 0) > 0.5:  # type: ignore[operator]
        return 1.0, (
            f"{path}: scores lie in [0, 100] (max {hi:g}) and were kept as they are; if they "
            "are percentages, pass score_scale='percent' (CLI: --rescale 100)"
        )
    return 1.0, None


def _score_stats(frame: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame | pl.LazyFrame:
    finite = pl.col("__score").is_not_null() & pl.col("__score").is_finite() & ~pl.col("__pct")
    return frame.group_by("__src").agg(
        pl.col("__score").filter(finite).min().alias("min"),
        pl.col("__score").filter(finite).max().alias("max"),
        (pl.col("__score").filter(finite & (pl.col("__score") != 0)) > 1).mean().alias("share_gt1"),
        (pl.col("__score").filter(finite) == pl.col("__score").filter(finite).round(0))
        .all()
        .alias("integers"),
    )


def scale_of(plan: Plan, files: Sequence[int]) -> dict[int, tuple[float, str | None]]:
    """Decide the score scale of whole ``files`` in a pass over their score column only."""
    value, pct = parse_score(plan.schema["score"], plan.score_factor)
    lf = plan.frame(files).select("__src", value.alias("__score"), pct.alias("__pct"))
    try:
        stats = _score_stats(lf).collect(engine="streaming")
    except (pl.exceptions.PolarsError, pl.exceptions.PanicException, OSError) as exc:
        raise _locate_read_error(plan, files, exc) from None
    by_src = {r["__src"]: r for r in stats.iter_rows(named=True)}
    return {i: _scale_decision(by_src.get(i), plan, plan.paths[i]) for i in files}


def _bucket_expr(plan: Plan, n: int) -> pl.Expr:
    # every row of a duplicate group (hence of a unit) lands in the same bucket
    return pl.struct(plan.dedup_row_cols).hash(seed=7) % n


def _group_ids(df: pl.DataFrame, cols: Sequence[str]) -> tuple[pl.DataFrame, np.ndarray, set[str]]:
    """Distinct rows of ``df[cols]``, the index of each row's group, and the constant columns.

    Dumps are written a configuration at a time, so a unit's rows usually come in runs: rows
    are cut into runs of equal keys (a comparison with the previous row), and only the first
    row of each run is grouped. Columns constant over ``df`` (model, dataset, shots ... within
    one file, as a rule) are left out and put back. Exact whatever the order: a run never
    mixes keys, and equal keys in several runs meet in the grouping; when runs are short, the
    rows are grouped directly.
    """
    cols = list(cols)
    n = df.height
    if n == 0:
        return df.select(cols).clear(), np.empty(0, dtype=np.int64), set()
    # a column whose first and last values differ varies; the others are checked in full
    ends = df.select(cols)
    maybe = [c for c, a, b in zip(cols, ends.row(0), ends.row(n - 1)) if a == b]
    constant: set[str] = set()
    if maybe:
        flags = df.select(pl.col(c).eq_missing(pl.col(c).first()).all().alias(c) for c in maybe)
        constant = {c for c, same in zip(maybe, flags.row(0)) if same}
    varying = [c for c in cols if c not in constant]
    if not varying:
        return df.select(cols).head(1), np.zeros(n, dtype=np.int64), constant
    runs = df.select(pl.struct(varying).rle().alias("r")).unnest("r")  # one row per run
    if runs.height * 4 <= n:
        heads = runs["value"].struct.unnest()
        g, head_gid = _group_rows(heads, varying)
        gid = np.repeat(head_gid, runs["len"].to_numpy())
    else:
        g, gid = _group_rows(df.select(varying), varying)
    if constant:
        first = df.select(c for c in cols if c in constant).head(1)
        g = g.with_columns(
            pl.lit(first[c][0], dtype=first.schema[c]).alias(c) for c in first.columns
        )
    return g.select(cols), gid, constant


def _group_rows(df: pl.DataFrame, cols: list[str]) -> tuple[pl.DataFrame, np.ndarray]:
    """Distinct rows of ``df[cols]`` and the index of each row's group."""
    g = df.select(cols).with_row_index("__i").group_by(cols).agg(pl.col("__i"))
    gid = np.empty(df.height, dtype=np.int64)
    lens = g["__i"].list.len().to_numpy()
    gid[g["__i"].explode().to_numpy()] = np.repeat(np.arange(g.height, dtype=np.int64), lens)
    return g.drop("__i"), gid


def _item_codes(item: pl.Series, valid: np.ndarray, vi: np.ndarray) -> tuple[np.ndarray, int]:
    """Dense non-negative integer codes of the valid rows' items (exact), and how many."""
    if vi.size == 0:
        return np.zeros(0, dtype=np.int64), 1
    if item.dtype.is_integer():
        v = item.gather(vi)  # valid items are never null
        lo, hi = int(v.min()), int(v.max())  # type: ignore[arg-type]
        if hi - lo < 4 * len(item) + 1024:  # dense enough: the value is the code
            return (v - lo).cast(pl.Int64).to_numpy(), hi - lo + 1
    _, codes = _group_rows(item.gather(vi).to_frame("item"), ["item"])
    return codes, int(codes.max()) + 1


def _first_occurrence(slot: np.ndarray, valid_idx: np.ndarray, n_slots: int, n: int) -> np.ndarray:
    """Rows (of ``n``) whose slot has not appeared in an earlier row; ``slot`` of valid rows."""
    out = np.zeros(n, dtype=bool)
    if n_slots <= 4 * n + 1024:
        first = np.full(n_slots, n, dtype=np.int64)
        np.minimum.at(first, slot, valid_idx)
        out[valid_idx] = first[slot] == valid_idx
    else:
        out[valid_idx] = pl.Series(slot).is_first_distinct().to_numpy()
    return out


def _scaled(scale: Mapping[int, float]) -> pl.Expr:
    """``__score`` times its file's factor (scores written with a % sign excepted)."""
    factor = pl.col("__src").replace_strict(
        list(scale), list(scale.values()), default=1.0, return_dtype=pl.Float64
    )
    return (
        pl.when(pl.col("__pct"))
        .then(pl.col("__score"))
        .otherwise(pl.col("__score") * factor)
        .alias("__score")
    )


def _needed(plan: Plan) -> list[str]:
    """Columns the pass reads for each row (besides the reason code)."""
    rule_cols: set[str] = set()
    for r in plan.rules:
        rule_cols.update(r.expr.meta.root_names())
    needed = ["__src", "__row", "score", "__score", "__pct", "__run"]
    extra = set(plan.group_cols) | rule_cols | ({"item"} if plan.has_item else set())
    if "error" in plan.schema:
        extra.add("error")
    if not plan.has_item and "n_items" in plan.schema:
        extra.add("n_items")
    return needed + sorted(c for c in extra if c not in needed)


def _computed(plan: Plan, lf: pl.LazyFrame, scale: Mapping[int, float]) -> pl.LazyFrame:
    """``lf`` with the parsed score (scaled), its percent flag and the run number."""
    value, pct = parse_score(plan.schema["score"], plan.score_factor)
    lf = lf.with_columns(
        value.alias("__score"), pct.alias("__pct"), whole_run(pl.col("run")).alias("__run")
    )
    if any(v != 1.0 for v in scale.values()):
        lf = lf.with_columns(_scaled(scale))
    return lf


def spill(
    plan: Plan, file: int, n: int, scale: Mapping[int, float], folder: str
) -> list[tuple[str, ...]]:
    """Write the rows of a large file to ``n`` hash buckets on disk, in one streaming pass.

    Each bucket holds the columns the pass needs and the reason codes, so that it is read
    once instead of the whole file being read again for each bucket (which made the time grow
    with the square of the file's rows). Returns the files of each bucket (``()`` when empty).
    """
    lf = (
        _computed(plan, plan.frames[file], scale)
        .select(*_needed(plan), plan.code_expr)
        .with_columns((_bucket_expr(plan, n)).cast(pl.Int64).alias("__bucket"))
    )
    base = f"{folder}/f{file}"
    try:
        lf.sink_ipc(
            pl.PartitionBy(
                base, key="__bucket", include_key=False, approximate_bytes_per_file=None
            ),
            mkdir=True,
        )
    except (pl.exceptions.PolarsError, pl.exceptions.PanicException, OSError) as exc:
        raise _locate_read_error(plan, [file], exc) from None
    out = []
    for b in range(n):
        d = f"{base}/__bucket={b}"
        try:
            names = sorted(x for x in os.listdir(d) if x.endswith(".ipc"))
        except FileNotFoundError:
            names = []
        out.append(tuple(f"{d}/{x}" for x in names))
    return out


def _read_part(
    plan: Plan, spec: PartSpec, needed: list[str], scale: Mapping[int, float]
) -> pl.DataFrame:
    """The partition's rows in file order: ``needed`` columns, scores scaled, reason codes."""
    lf = _computed(plan, plan.frame(spec.files), scale)
    filtered = spec.keys is not None or spec.bucket is not None
    if spec.bucket is not None and spec.spill is None:
        b, n = spec.bucket
        lf = lf.filter(_bucket_expr(plan, n) == b)
    if spec.keys is not None:
        lf = lf.join(spec.keys.lazy(), on=spec.keys.columns, how="semi", nulls_equal=True)
    lf = lf.select(*needed, plan.code_expr)
    if spec.spill is not None:
        lf = (
            pl.scan_ipc(list(spec.spill)).select(lf.collect_schema().names())
            if spec.spill
            else lf.head(0)
        )
    try:
        # a filtered partition streams through the filter; a whole one is read at once
        df = lf.collect(engine="streaming") if filtered else lf.collect()
    except (pl.exceptions.PolarsError, pl.exceptions.PanicException, OSError) as exc:
        # PanicException: polars' reader panics on some damaged Parquet pages
        raise _locate_read_error(plan, spec.files, exc) from None
    if filtered and df.height > 1:
        src = df["__src"].to_numpy()
        row = df["__row"].to_numpy()
        if not (np.all(np.diff(src) >= 0) and np.all((np.diff(row) > 0) | (np.diff(src) > 0))):
            df = df.sort("__src", "__row")
    return df


def run_part(plan: Plan, spec: PartSpec, *, units: bool = True, ids: bool = False) -> PartResult:
    """Account for the rows of one partition; see the module docstring.

    Parameters
    ----------
    plan : Plan
        The loader's plan.
    spec : PartSpec
        Which files and rows.
    units : bool, default True
        Whether unit-level input (no ``item``) should send its kept rows back.
    ids : bool, default False
        Whether to send back the (file, row) of every row set aside (for the observation table).

    Returns
    -------
    PartResult
    """
    group_cols = plan.group_cols
    needed = _needed(plan)
    # reason codes are computed while reading, with the scale known or assumed to be 1
    df = _read_part(plan, spec, needed, spec.scale or {})
    n = df.height

    # --- score scale (per file), when not decided before -----------------------------------
    decided: dict[int, tuple[float, str | None]] = {}
    if spec.scale is None:
        decided = {i: (1.0, None) for i in spec.files}
        if plan.hint_scale and n:
            score = df["__score"].to_numpy()
            finite = np.isfinite(score) & ~df["__pct"].to_numpy()
            # no score above 1: no file looks percent-scaled (the common case, decided at once)
            if finite.any() and score[finite].max() > 1:
                stats = _score_stats(df)
                by_src = {r["__src"]: r for r in stats.iter_rows(named=True)}  # type: ignore[union-attr]
                decided = {
                    i: _scale_decision(by_src.get(i), plan, plan.paths[i]) for i in spec.files
                }
        factors = {i: f for i, (f, _) in decided.items()}
        if any(f != 1.0 for f in factors.values()):  # rare: scale, then the codes again
            df = df.with_columns(_scaled(factors)).with_columns(plan.code_expr)

    # --- reasons ---------------------------------------------------------------------------
    codes = df["__code"].to_numpy().copy()
    valid = codes == _KEPT

    # --- duplicates: first valid row of each (group, item) in file order -------------------
    groups, gid, constant = _group_ids(df, group_cols)
    dcols = plan.dedup_groups
    variant_in_key = plan.variant is not None and "variant" in dcols
    if variant_in_key:
        groups = groups.with_columns(plan.variant)
    if not dcols:
        did, n_d = np.zeros(n, dtype=np.int64), 1
    elif groups.height <= 1 or (
        not variant_in_key and set(group_cols) - set(plan.dedup_row_cols) <= constant
    ):
        did, n_d = gid, max(groups.height, 1)  # each unit group is its own duplicate group
    else:
        _, did_of_group = _group_rows(groups, dcols)
        n_d = int(did_of_group.max()) + 1
        did = did_of_group[gid]
    vi = np.flatnonzero(valid)
    if plan.has_item and "item" in plan.dedup_key:
        icode, n_i = _item_codes(df["item"], valid, vi)
    else:
        icode, n_i = np.zeros(vi.size, dtype=np.int64), 1
    if n_d * n_i < 2**62:
        first = _first_occurrence(did[vi] * n_i + icode, vi, n_d * n_i, n)
    else:  # too many combinations for one integer: hash the pair instead
        first = np.zeros(n, dtype=bool)
        pair = pl.DataFrame({"d": did[vi], "i": icode})
        first[vi] = pair.select(pl.struct("d", "i").is_first_distinct())["d"].to_numpy()
    dup = valid & ~first
    dup_code = len(plan.rules) + 1
    codes[dup] = dup_code
    kept = valid & first

    # --- counts, examples, ids -------------------------------------------------------------
    names = plan.reasons
    counts = {
        names[c]: int(v)
        for c, v in enumerate(np.bincount(codes, minlength=dup_code + 1))
        if v and c
    }
    examples: dict[str, list[tuple[int, int, str | None]]] = {}
    aside = np.flatnonzero(codes != _KEPT)
    if aside.size:
        aside_codes = codes[aside]
        picks = np.concatenate(
            [aside[aside_codes == c][:N_EXAMPLES] for c in np.unique(aside_codes)]
        )
        src = df["__src"].to_numpy()
        row = df["__row"].to_numpy()
        raw = df["score"].gather(picks).cast(pl.String).to_list()
        for i, r in zip(picks.tolist(), raw):
            examples.setdefault(names[codes[i]], []).append((int(src[i]), int(row[i]), r))
    id_frame = df[aside.tolist()].select("__src", "__row") if ids else None

    # --- sums per group --------------------------------------------------------------------
    ng = groups.height
    score = df["__score"].to_numpy()
    # an errored call kept without a score is in no unit: units average scored rows only
    scored = kept & ~np.isnan(score) if "error" in plan.schema else kept
    kg = gid[scored]
    cols = {
        "__sum": np.bincount(kg, weights=score[scored], minlength=ng),
        "__n": np.bincount(kg, minlength=ng),
        "__n_dup": np.bincount(gid[dup], minlength=ng) if dup.any() else np.zeros(ng, np.int64),
    }
    if "error" in plan.schema:
        err = df["error"].is_not_null().to_numpy()
        cols["__n_err"] = np.bincount(gid[scored & err], minlength=ng)
    keep = (cols["__n"] > 0) | (cols["__n_dup"] > 0)
    groups = groups.hstack([pl.Series(k, v) for k, v in cols.items()]).filter(pl.Series(keep))
    passthrough = None
    if units and not plan.has_item:
        ucols = plan.unit_cols
        n_items = (
            pl.col("n_items").cast(pl.Int64)
            if "n_items" in plan.schema
            else pl.lit(None, dtype=pl.Int64)
        )
        extra_cols = [n_items.alias("n_items")]
        if "error" in plan.schema:
            extra_cols.append(pl.col("error").is_not_null().cast(pl.Int64).alias("n_errors"))
        passthrough = df.filter(pl.Series(scored)).select(
            [*ucols, "__src", "__row", pl.col("__score").alias("score"), *extra_cols]
        )
        if plan.variant is not None:
            passthrough = passthrough.with_columns(plan.variant.alias("variant"))
    return PartResult(
        files=tuple(spec.files),
        rows_read=n,
        counts=counts,
        examples=examples,
        scale=decided,
        groups=groups,
        ids=id_frame,
        passthrough=passthrough,
        bucket=spec.bucket,
    )


def _locate_read_error(plan: Plan, files: Sequence[int], exc: BaseException) -> IngestError:
    """Find which file fails to read (one collect per file) and describe it."""
    for i in files:
        lf = plan.frames[i]
        try:
            lf.select(pl.len()).collect()
            lf.head(1).collect()
            lf.collect(engine="streaming")
        except (pl.exceptions.PolarsError, pl.exceptions.PanicException, OSError) as inner:
            return read_error(plan.paths[i], inner)
    return IngestError(
        f"cannot read the input ({str(exc).splitlines()[0]}).", path=plan.paths[files[0]]
    )


# --- partitioning and merging ----------------------------------------------------------------

#: ``map(function, specs)`` yielding one result per spec, in any order (each names its files).
Runner = Callable[[Plan, Sequence[PartSpec], bool, bool], Iterator[PartResult]]


#: Partitions in flight in the local engine. Polars releases the GIL, so while one partition
#: is in numpy or Python bookkeeping another is read: on 2 idle cores, 19M DOVE-shaped rows took
#: 2.4 s instead of 3.2 s (CPU +5%, peak memory +110 MiB: one more partition held).
LOCAL_WORKERS = 2


def run_local(
    plan: Plan, specs: Sequence[PartSpec], units: bool, ids: bool
) -> Iterator[PartResult]:
    """Run the partitions in this process, ``LOCAL_WORKERS`` at a time; yield them in order."""
    if LOCAL_WORKERS < 2 or len(specs) < 2:
        for spec in specs:
            yield run_part(plan, spec, units=units, ids=ids)
        return
    pool = ThreadPoolExecutor(LOCAL_WORKERS, thread_name_prefix="evalstats")
    try:
        pending: deque[Future[PartResult]] = deque()
        for spec in specs:
            pending.append(pool.submit(run_part, plan, spec, units=units, ids=ids))
            if len(pending) >= LOCAL_WORKERS:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:  # an error (or an early stop) leaves no partition queued
        pool.shutdown(wait=True, cancel_futures=True)


def row_counts(plan: Plan) -> list[int]:
    """Rows in each file (Parquet footers, CSV line counts, or in-memory heights)."""
    out = []
    for i, lf in enumerate(plan.frames):
        try:
            out.append(int(lf.select(pl.len()).collect().item()))
        except (pl.exceptions.PolarsError, pl.exceptions.PanicException, OSError) as exc:
            raise read_error(plan.paths[i], exc) from None
    return out


def partitions(
    plan: Plan, part_rows: int = PART_ROWS, spill_dir: str | None = None
) -> tuple[list[PartSpec], dict[int, tuple[float, str | None]]]:
    """Small consecutive files batched, larger ones alone, those above ``part_rows`` in buckets.

    Returns the partitions in file order and the score scale of the bucketed files (decided
    here, in a pass over their score column, since no single bucket sees a whole file). With
    ``spill_dir``, a bucketed file is written to its buckets there in one pass (:func:`spill`)
    and each bucket is read from its own files; without it (Dask workers, which may not share
    this machine's disk), each bucket filters the whole file.
    """
    counts = row_counts(plan)
    specs: list[PartSpec] = []
    batch: list[int] = []
    size = 0
    big: list[int] = []
    can_bucket = bool(plan.dedup_row_cols)
    for i, c in enumerate(counts):
        if c > part_rows and can_bucket:
            big.append(i)
            continue
        if batch and size + c > min(part_rows, _BATCH_ROWS):
            specs.append(PartSpec(tuple(batch), rows=size))
            batch, size = [], 0
        batch.append(i)
        size += c
    if batch:
        specs.append(PartSpec(tuple(batch), rows=size))
    scale: dict[int, tuple[float, str | None]] = {}
    if big:
        scale = scale_of(plan, big)
        factors = {i: f for i, (f, _) in scale.items()}
        for i in big:
            n = math.ceil(counts[i] / part_rows)
            spilled: list[tuple[str, ...] | None] = (
                list(spill(plan, i, n, factors, spill_dir)) if spill_dir else [None] * n
            )
            specs += [
                PartSpec(
                    (i,),
                    scale=factors,
                    bucket=(b, n),
                    rows=math.ceil(counts[i] / n),
                    spill=spilled[b],
                )
                for b in range(n)
            ]
    specs.sort(key=lambda s: (s.files[0], s.bucket or (0, 1)))
    return specs, scale


def _bottom(
    items: Iterable[tuple[int, int, str | None]], k: int = N_EXAMPLES
) -> list[tuple[int, int, str | None]]:
    return sorted(set(items), key=lambda e: (e[0], e[1]))[:k]


def _shared(plan: Plan, results: Sequence[PartResult]) -> pl.DataFrame:
    """Duplicate groups found in more than one partition (columns: the group key)."""
    dcols = plan.dedup_groups
    if len(results) < 2:
        return pl.DataFrame()
    if not dcols:  # one single group: shared as soon as two partitions hold rows
        holding = [r for r in results if r.groups.height]
        return pl.DataFrame({"__all": [True]}) if len(holding) > 1 else pl.DataFrame()
    keys = pl.concat(
        [
            r.groups.select(dcols).unique().with_columns(pl.lit(k).alias("__p"))
            for k, r in enumerate(results)
        ],
        how="vertical_relaxed",
    )
    return (
        keys.group_by(dcols)
        .agg(pl.col("__p").n_unique().alias("__np"))
        .filter(pl.col("__np") > 1)
        .drop("__np")
    )


def _first_invalid(
    plan: Plan, examples: Mapping[str, list]
) -> tuple[int, int, str, str | None] | None:
    best = None
    for reason, exs in examples.items():
        if reason in plan.quirks or not exs:
            continue
        s, r, raw = exs[0]
        if best is None or (s, r) < best[:2]:
            best = (s, r, reason, raw)
    return best


def account(
    plan: Plan,
    *,
    units: bool = True,
    ids: bool = False,
    runner: Runner = run_local,
    part_rows: int = PART_ROWS,
    progress: Callable[[int], None] | None = None,
) -> Accounting:
    """Run every partition, read shared duplicate groups again, and merge.

    Loaders call :func:`evalstats.io._stream.account_rows`, which runs one streaming query
    instead where it can and this function on the duplicate groups it cannot prove free of
    duplicates.

    Parameters
    ----------
    plan : Plan
        The loader's plan.
    units : bool, default True
        Send back kept rows of unit-level input (see :func:`run_part`).
    ids : bool, default False
        Collect the (file, row) of every row set aside.
    runner : callable, default run_local
        Runs a list of partitions, yielding results as they finish.
    part_rows : int, default PART_ROWS
        Rows per partition.
    progress : callable, optional
        Called with the number of files just finished.

    Returns
    -------
    Accounting

    Raises
    ------
    IngestError
        When ``plan.on_invalid == 'error'`` and a row is invalid (the first one in file order).
    """
    # large files are spilled to their hash buckets on this machine's disk for the local
    # engine; Dask workers filter the file instead (they may not see this disk)
    spill_dir = tempfile.mkdtemp(prefix="evalstats-spill-") if runner is run_local else None
    try:
        return _account(plan, units, ids, runner, part_rows, progress, spill_dir)
    finally:
        if spill_dir is not None:
            shutil.rmtree(spill_dir, ignore_errors=True)


def _account(
    plan: Plan,
    units: bool,
    ids: bool,
    runner: Runner,
    part_rows: int,
    progress: Callable[[int], None] | None,
    spill_dir: str | None,
) -> Accounting:
    """:func:`account` with the spill folder decided."""
    specs, bucket_scale = partitions(plan, part_rows, spill_dir)
    n_parts_of_file: dict[int, int] = {}
    for s in specs:
        for i in s.files:
            n_parts_of_file[i] = n_parts_of_file.get(i, 0) + 1
    results: list[PartResult] = []
    seen: dict[str, list] = {}  # examples so far, for the early error
    done_parts: dict[int, int] = {}
    for res in runner(plan, specs, units, ids):
        results.append(res)
        if progress is not None:
            finished = 0
            for i in res.files:
                done_parts[i] = done_parts.get(i, 0) + 1
                finished += done_parts[i] == n_parts_of_file[i]
            progress(finished)
        if plan.on_invalid == "error" and runner is run_local:
            for k, v in res.examples.items():
                seen[k] = _bottom(seen.get(k, []) + v)
            _raise_early(plan, results, seen)
    order = {s.files[0]: k for k, s in enumerate(specs)}
    # merge in partition order, whatever the order the results arrived in
    results.sort(key=lambda r: (order.get(r.files[0], 0), r.files, r.bucket or (0, 1)))

    scale_all: dict[int, tuple[float, str | None]] = dict(bucket_scale)
    for r in results:
        scale_all.update(r.scale)
    counts: dict[str, int] = {}
    examples: dict[str, list] = {}
    for r in results:
        for k, v in r.counts.items():
            counts[k] = counts.get(k, 0) + v
        for k, v in r.examples.items():
            examples[k] = _bottom(examples.get(k, []) + v)
    groups_list = [r.groups for r in results]
    ids_list = [r.ids for r in results if r.ids is not None]
    passthrough = [r.passthrough for r in results if r.passthrough is not None]

    shared = _shared(plan, results)
    if shared.height:
        involved_parts = []
        for k, r in enumerate(results):
            mine = _in_shared(plan, r.groups, shared)
            if mine.height:
                involved_parts.append(k)
        files = sorted({i for k in involved_parts for i in results[k].files})
        gcols = plan.group_cols
        old = pl.concat(
            [_in_shared(plan, results[k].groups, shared) for k in involved_parts],
            how="vertical_relaxed",
        )
        keys = old.select(gcols).unique()
        n_rows = int(old["__n"].sum() + old["__n_dup"].sum())
        n_b = max(1, math.ceil(n_rows / part_rows))
        factors = {i: f for i, (f, _) in scale_all.items()}
        again = [
            PartSpec(tuple(files), scale=factors, keys=keys, bucket=(b, n_b) if n_b > 1 else None)
            for b in range(n_b)
        ]
        second = sorted(runner(plan, again, units, ids), key=lambda r: r.bucket or (0, 1))
        if _shared(plan, second).height:  # buckets must be disjoint; a bug otherwise
            raise AssertionError("second pass: a duplicate group spans two buckets")
        counts["duplicate"] = (
            counts.get("duplicate", 0)
            - int(old["__n_dup"].sum())
            + sum(int(r.groups["__n_dup"].sum()) for r in second)
        )
        if not counts["duplicate"]:
            del counts["duplicate"]
        examples["duplicate"] = _bottom(
            examples.get("duplicate", [])
            + [e for r in second for e in r.examples.get("duplicate", [])]
        )
        if not examples["duplicate"]:
            del examples["duplicate"]
        groups_list = [_not_in_shared(plan, g, shared) for g in groups_list] + [
            r.groups for r in second
        ]
        if ids:
            ids_list += [r.ids for r in second if r.ids is not None]
        if passthrough:
            passthrough = [_not_in_shared(plan, p, shared) for p in passthrough] + [
                r.passthrough for r in second if r.passthrough is not None
            ]

    groups = pl.concat(groups_list, how="vertical_relaxed") if groups_list else pl.DataFrame()
    id_frame = None
    if ids:
        id_frame = (
            pl.concat(ids_list).unique().sort("__src", "__row")
            if ids_list
            else pl.DataFrame(schema={"__src": pl.Int32, "__row": pl.Int64})
        )
    first_invalid = _first_invalid(plan, examples) if plan.on_invalid == "error" else None
    notes = [scale_all[i][1] for i in sorted(scale_all) if scale_all[i][1]]
    return Accounting(
        rows_read=sum(r.rows_read for r in results),
        set_aside=counts,
        examples=examples,
        scale={i: f for i, (f, _) in scale_all.items()},
        scale_notes=notes,  # type: ignore[arg-type]
        groups=groups,
        ids=id_frame,
        passthrough=pl.concat(passthrough, how="vertical_relaxed") if passthrough else None,
        first_invalid=first_invalid,
    )


def _in_shared(plan: Plan, frame: pl.DataFrame, shared: pl.DataFrame) -> pl.DataFrame:
    if "__all" in shared.columns:
        return frame
    return frame.join(shared, on=plan.dedup_groups, how="semi", nulls_equal=True)


def _not_in_shared(plan: Plan, frame: pl.DataFrame, shared: pl.DataFrame) -> pl.DataFrame:
    if "__all" in shared.columns:
        return frame.clear()
    return frame.join(shared, on=plan.dedup_groups, how="anti", nulls_equal=True)


def _raise_early(plan: Plan, results: Sequence[PartResult], examples: Mapping[str, list]) -> None:
    """Raise for the first invalid row as soon as no later partition can hold an earlier one.

    Results come in file order; the buckets of one file hold its rows in any order, so nothing
    is raised before the file's last bucket is in. ``examples`` are those of all ``results``.
    """
    last = results[-1]
    if last.bucket is not None and last.bucket[0] < last.bucket[1] - 1:
        return
    first = _first_invalid(plan, examples)
    if first is None:
        return
    if "duplicate" not in plan.quirks and _shared(plan, results).height:
        return  # a duplicate across partitions may be an earlier invalid row: wait for the end
    raise_invalid(plan, first)


def raise_invalid(plan: Plan, first: tuple[int, int, str, str | None]) -> None:
    """Raise the IngestError for the first invalid row."""
    src, row, reason_name, detail = first
    column, message = plan.messages[reason_name]
    shown = plan.source_names.get(column, column) if column else None
    if reason_name == "score_out_of_range":
        message = _range_message(plan, src, row, detail)
    elif column == "score" and detail is not None and reason_name != "missing_score":
        message = f"{message}, got {detail!r}"
    if reason_name == "duplicate":
        earlier = _earlier_duplicate(plan, src, row)
        if earlier is not None:
            e_src, e_row = earlier
            where = "" if e_src == src else f" of {plan.paths[e_src]}"
            message = f"{message}: row {e_row}{where}"
    exc = IngestError(
        f"{message}. To set such rows aside and count them, pass on_invalid='skip' "
        "(CLI: --on-invalid skip).",
        path=plan.paths[src],
        row=row,
        column=shown,
    )
    # read by spellings_to_keep: a duplicate made by merged spellings is read again apart
    exc.invalid_reason = reason_name  # type: ignore[attr-defined]
    exc.merged_columns = [  # type: ignore[attr-defined]
        n.split(":", 1)[0] for n in plan.notes if "spellings that differ only" in n
    ]
    raise exc


def _range_message(plan: Plan, src: int, row: int, detail: str | None) -> str:
    """'expected a number in [lo, hi] (the declared range of metric m), got v' with a hint."""
    r = (
        plan.frames[src]
        .filter(pl.col("__row") == row)
        .select("metric", "metric_low", "metric_high")
        .head(1)
        .collect()
        .row(0, named=True)
    )
    f = plan.score_factor
    lo, hi = r["metric_low"], r["metric_high"]
    shown = ("(-inf" if lo is None else f"[{lo:g}") + ", " + ("inf)" if hi is None else f"{hi:g}]")
    try:
        v = float(str(detail).rstrip("%"))
    except (TypeError, ValueError):
        v = math.nan
    got = repr(detail) + (f" ({v * f:g} after dividing by {1 / f:g})" if f != 1.0 else "")
    msg = f"expected a number in {shown} (the declared range of metric {r['metric']!r}), got {got}"
    if hi is not None and hi <= 1 and 1 < v <= 100 and f == 1.0:
        msg += ". The scores look like percentages: pass score_scale='percent' (CLI: --rescale 100)"
    else:
        msg += (
            ". If the metric's range is another one, declare it with metric_range=(low, high) "
            "(CLI: --metric-range LOW,HIGH)"
        )
    return msg


def _earlier_duplicate(plan: Plan, src: int, row: int) -> tuple[int, int] | None:
    """(file, row) of the first row with the same de-duplication key as file ``src``, ``row``.

    Only called on the error path, so it may read the files once more.
    """
    cols = [c for c in plan.dedup_key if c != "__run"]
    value, pct = parse_score(plan.schema["score"], plan.score_factor)
    exprs = [
        whole_run(pl.col("run")).alias("__run"),
        value.alias("__score"),
        pct.alias("__pct"),
    ]
    if plan.variant is not None and "variant" in cols:
        exprs.append(plan.variant)
    key = list(plan.dedup_key)
    try:
        lf = plan.frame(list(range(src + 1))).with_columns(exprs)
        target = lf.filter((pl.col("__src") == src) & (pl.col("__row") == row)).select(key)
        same = lf.join(target, on=key, how="semi", nulls_equal=True)
        hits = same.filter(plan.code_expr == _KEPT).select("__src", "__row").collect()
        if not hits.height:
            hits = same.select("__src", "__row").collect()
        hits = hits.sort("__src", "__row").head(1)
    except (pl.exceptions.PolarsError, pl.exceptions.PanicException, OSError):
        return None
    if not hits.height:
        return None
    e_src, e_row = hits.row(0)
    return (int(e_src), int(e_row)) if (e_src, e_row) != (src, row) else None


def unit_factor_order(schema_names: Sequence[str], factor_list: Sequence[str]) -> tuple[str, ...]:
    """Factor columns of the observation table in its output order (loader's first, then the rest)."""
    names = set(schema_names)
    facs = [c for c in factor_list if c in names]
    taken = set(facs)
    rest = [c for c in factor_columns(schema_names) if c not in taken]
    return tuple(facs + rest)


def observation_dtype(name: str) -> pl.DataType:
    """The dtype a canonical column is cast to in the observation table."""
    return OBSERVATION_COLUMNS.get(name, pl.Int64())
