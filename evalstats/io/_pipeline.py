"""Shared last step of every loader: validate, set aside, count, and build the observation table.

A loader turns each source file into a LazyFrame whose columns already carry canonical names
(``model``, ``item``, ``score`` ...; raw dtypes are fine) plus factor columns, and hands the list
to :func:`finalize`. ``finalize`` numbers rows per file, parses scores, decides the score scale
per file, marks every row that must be set aside with one reason, counts the reasons in one
streaming pass, raises on invalid rows unless asked to skip them, and returns the ``Ingest``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import polars as pl

from evalstats.errors import IngestError, ParameterError
from evalstats.io._report import Ingest, IngestReport, SetAsideExample
from evalstats.schema import OBSERVATION_COLUMNS, factor_columns, variant_key

__all__ = [
    "Check",
    "OnInvalid",
    "ScoreScale",
    "finalize",
    "parse_score",
    "read_error",
    "validate_options",
]

OnInvalid = Literal["error", "skip"]
ScoreScale = Literal["auto", "unit", "percent"]

#: How many example rows per reason the report keeps.
N_EXAMPLES = 3


@dataclass(frozen=True)
class Check:
    """A loader-specific reason to set a row aside.

    ``expr`` is true for rows to set aside. ``quirk=True`` marks a documented quirk of the source
    (DOVE's duplicate rows, ``sample_index == -1``): such rows are always set aside and counted,
    never an error. Otherwise the row is invalid: an error by default, counted with
    ``on_invalid="skip"``.
    """

    reason: str
    expr: pl.Expr
    column: str | None = None
    quirk: bool = False
    message: str = "invalid value"


def validate_options(on_invalid: str, score_scale: str) -> None:
    if on_invalid not in ("error", "skip"):
        raise ParameterError(f"`on_invalid` must be 'error' or 'skip', got {on_invalid!r}.")
    if score_scale not in ("auto", "unit", "percent"):
        raise ParameterError(
            f"`score_scale` must be 'auto', 'unit' or 'percent', got {score_scale!r}."
        )


def parse_score(dtype: pl.DataType) -> tuple[pl.Expr, pl.Expr]:
    """Expressions (value, fixed_scale) parsing the raw ``score`` column of ``dtype``.

    Booleans and the strings ``true``/``false`` (any case) become 1/0; strings such as ``"86.4%"``
    are divided by 100; both are flagged ``fixed_scale`` (never rescaled); other strings are cast to float
    (null when they are not numbers, which the caller reports as ``unparseable_score``).
    """
    col = pl.col("score")
    if dtype == pl.Boolean():
        return col.cast(pl.Float64), pl.lit(False)
    if dtype.is_numeric():
        return col.cast(pl.Float64), pl.lit(False)
    if dtype == pl.Null():
        return col.cast(pl.Float64), pl.lit(False)
    s = col.cast(pl.String).str.strip_chars()
    low = s.str.to_lowercase()
    is_pct = s.str.ends_with("%")
    num = s.str.strip_chars_end("%").str.strip_chars().cast(pl.Float64, strict=False)
    is_bool = low.is_in(["true", "false"])
    value = (
        pl.when(low == "true")
        .then(pl.lit(1.0))
        .when(low == "false")
        .then(pl.lit(0.0))
        .when(is_pct)
        .then(num / 100.0)
        .otherwise(num)
    )
    return value, (is_pct | is_bool).fill_null(False)


def read_error(path: str | Path, exc: BaseException) -> IngestError:
    """Turn a polars/OS read failure into an IngestError naming the file (and row when possible)."""
    path = str(path)
    p = Path(path)
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if isinstance(exc, FileNotFoundError) or not p.exists():
        return IngestError("no such file or folder.", path=path)
    if p.is_file() and p.stat().st_size == 0:
        return IngestError("the file is empty (0 bytes).", path=path)
    low = msg.lower()
    if "utf-8" in low or "utf8" in low:
        try:
            data = p.read_bytes()
            data.decode("utf-8")
        except UnicodeDecodeError as ude:
            line = data.count(b"\n", 0, ude.start)  # header is line 1 -> data row = newlines before
            return IngestError(
                f"the file is not valid UTF-8 text (byte {data[ude.start]:#04x} at offset "
                f"{ude.start}). Re-encode it as UTF-8.",
                path=path,
                row=line if line > 0 else None,
            )
    if p.suffix in (".parquet", ".pq"):
        return IngestError(
            f"cannot read the Parquet file; it may be truncated or not Parquet ({msg}).", path=path
        )
    return IngestError(f"cannot read the file ({msg}).", path=path)


def _required_present(schema: pl.Schema, name: str) -> bool:
    return name in schema and schema[name] != pl.Null()


def finalize(
    parts: Sequence[tuple[str, pl.LazyFrame]],
    *,
    format: str,
    on_invalid: OnInvalid = "error",
    score_scale: ScoreScale = "auto",
    checks: Sequence[Check] = (),
    duplicates: Literal["invalid", "quirk"] = "invalid",
    dedup_key: Sequence[str] | None = None,
    factors: Sequence[str] | None = None,
    source_names: Mapping[str, str] | None = None,
    notes: Sequence[str] = (),
    extra_read: Mapping[str, int] | None = None,
) -> Ingest:
    """Validate and account for rows from ``parts``; return the observation table and report.

    Parameters
    ----------
    parts : sequence of (path, LazyFrame)
        One frame per source file, columns already renamed to canonical names.
    format : str
        Loader name recorded on the report.
    on_invalid : {'error', 'skip'}, default 'error'
        What to do with invalid rows (missing/unparseable/out-of-range score, missing model,
        item or dataset, duplicates unless they are a quirk of the source).
    score_scale : {'auto', 'unit', 'percent'}, default 'auto'
        ``auto`` divides a file's scores by 100 when they lie in [0, 100] and most non-zero
        values exceed 1 (more than half), and says so in the report; ``unit`` never converts; ``percent`` always.
    checks : sequence of Check
        Loader-specific reasons, tested before the generic ones.
    duplicates : {'invalid', 'quirk'}, default 'invalid'
        Whether repeated keys are invalid input or a documented quirk that is always set aside.
    dedup_key : sequence of str, optional
        Columns that identify a row; default ``model, dataset, variant, run`` plus ``item``.
    factors : sequence of str, optional
        Factor columns in the order used for the derived variant key (default: every
        non-canonical column, in file order).
    source_names : mapping, optional
        Canonical column -> source column name, so errors name the user's column.
    notes : sequence of str
        Notes from the loader to put on the report.
    extra_read : mapping, optional
        Records the loader set aside before building frames (reason -> count, e.g. files with
        no rows, JSON lines it could not parse). Counted in ``rows_read`` and ``set_aside``.
    """
    validate_options(on_invalid, score_scale)
    source_names = dict(source_names or {})
    notes = list(notes)
    if not parts:
        raise IngestError("no input files found.")

    frames = []
    paths = []
    for i, (path, lf) in enumerate(parts):
        paths.append(str(path))
        frames.append(
            lf.with_row_index("__row", offset=1).with_columns(
                pl.lit(i, dtype=pl.Int32).alias("__src"),
                pl.col("__row").cast(pl.Int64),
            )
        )
    try:
        lf = pl.concat(frames, how="diagonal_relaxed") if len(frames) > 1 else frames[0]
        schema = lf.collect_schema()
    except pl.exceptions.PolarsError as exc:  # schema of an unreadable file
        raise read_error(paths[0], exc) from None

    for name in ("model", "score"):
        if name not in schema:
            raise IngestError(
                f"no column gives {name!r} (columns: {', '.join(c for c in schema.names() if not c.startswith('__'))}). "
                f"Map one with columns={{'<column>': '{name}'}} (CLI: --columns <column>={name}).",
                path=paths[0],
            )
    if "dataset" not in schema:
        lf = lf.with_columns(pl.lit(None, dtype=pl.String).alias("dataset"))
    if "run" not in schema:
        lf = lf.with_columns(pl.lit(0, dtype=pl.Int64).alias("run"))
    schema = lf.collect_schema()
    factor_list = list(factors) if factors is not None else factor_columns(schema.names())
    if "variant" not in schema:
        lf = lf.with_columns(variant_key(factor_list))
        if factor_list:
            notes.append(f"variant derived from factor columns: {', '.join(factor_list)}")
    has_item = "item" in schema

    # --- scores --------------------------------------------------------------------------
    value, fixed_scale = parse_score(schema["score"])
    lf = lf.with_columns(
        value.alias("__score"),
        fixed_scale.alias("__pct"),
        pl.col("score").cast(pl.String).alias("__raw_score"),
        pl.col("run").cast(pl.Int64, strict=False).alias("__run"),
    )
    scale = {i: 1.0 for i in range(len(paths))}
    stats_by_src: dict[int, dict] = {}
    try:
        finite = pl.col("__score").is_not_null() & pl.col("__score").is_finite() & ~pl.col("__pct")
        stats = (
            lf.group_by("__src")
            .agg(
                pl.len().alias("rows"),
                pl.col("__score").filter(finite).min().alias("min"),
                pl.col("__score").filter(finite).max().alias("max"),
                (pl.col("__score").filter(finite & (pl.col("__score") != 0)) > 1)
                .mean()
                .alias("share_gt1"),
            )
            .collect(engine="streaming")
        )
    except pl.exceptions.PolarsError as exc:
        raise _locate_read_error(parts, exc) from None
    for r in stats.iter_rows(named=True):
        stats_by_src[r["__src"]] = r
    for i, path in enumerate(paths):
        r = stats_by_src.get(i)
        if r is None or r["max"] is None:
            continue
        if score_scale == "percent":
            scale[i] = 0.01
        elif score_scale == "auto":
            looks_pct = r["min"] >= 0 and 1 < r["max"] <= 100 and (r["share_gt1"] or 0) > 0.5
            if looks_pct:
                scale[i] = 0.01
                notes.append(
                    f"{path}: scores on a 0-100 scale (max {r['max']:g}) were divided by 100"
                )
    if score_scale == "percent":
        notes.append("scores divided by 100 (score_scale='percent')")
    if any(v != 1.0 for v in scale.values()):
        factor_expr = pl.col("__src").replace_strict(
            list(scale.keys()), list(scale.values()), return_dtype=pl.Float64
        )
        lf = lf.with_columns(
            pl.when(pl.col("__pct"))
            .then(pl.col("__score"))
            .otherwise(pl.col("__score") * factor_expr)
            .alias("__score")
        )

    # --- reasons -------------------------------------------------------------------------
    rules: list[Check] = list(checks)
    for name in ("model", "dataset") + (("item",) if has_item else ()):
        rules.append(
            Check(
                f"missing_{name}",
                pl.col(name).is_null(),
                column=name,
                message="required value is missing",
            )
        )
    rules.append(
        Check(
            "missing_run",
            pl.col("__run").is_null() | (pl.col("__run") < 0),
            column="run",
            message="expected a non-negative whole number",
        )
    )
    s = pl.col("__score")
    rules += [
        Check(
            "missing_score",
            pl.col("__raw_score").is_null() | s.is_nan(),
            column="score",
            message="expected a number in [0, 1], got a missing value",
        ),
        Check(
            "unparseable_score", s.is_null(), column="score", message="expected a number in [0, 1]"
        ),
        Check(
            "score_out_of_range",
            (s < 0) | (s > 1),
            column="score",
            message="expected a number in [0, 1]",
        ),
    ]
    rows = lf  # every row, before the reasons: the observation table is taken from here
    reason: pl.Expr = pl.lit(None, dtype=pl.String)
    for rule in reversed(rules):
        reason = pl.when(rule.expr.fill_null(False)).then(pl.lit(rule.reason)).otherwise(reason)
    lf = lf.with_columns(reason.alias("__reason"))
    key = (
        list(dedup_key)
        if dedup_key is not None
        else (["model", "dataset", "variant", "__run"] + (["item"] if has_item else []))
    )
    key = ["__run" if k == "run" else k for k in key]
    valid = pl.col("__reason").is_null()
    lf = lf.with_columns(
        # one pass without a window: set-aside rows get a null key, which no valid row has
        pl.when(
            valid
            & ~pl.when(valid)
            .then(pl.struct(*key, pl.lit(True).alias("__valid")))
            .is_first_distinct()
        )
        .then(pl.lit("duplicate"))
        .otherwise(pl.col("__reason"))
        .alias("__reason")
    )
    quirks = {r.reason for r in rules if r.quirk}
    if duplicates == "quirk":
        quirks.add("duplicate")
    messages = {r.reason: (r.column, r.message) for r in rules}
    key_names = ", ".join("run" if k == "__run" else k for k in key)
    messages["duplicate"] = (None, f"duplicate of an earlier row with the same ({key_names})")

    # --- count ---------------------------------------------------------------------------
    try:
        counts = (
            lf.group_by("__reason")
            .agg(
                pl.len().alias("n"),
                pl.struct("__src", "__row", "__raw_score")
                .filter(pl.col("__reason").is_not_null())
                .bottom_k_by(["__src", "__row"], N_EXAMPLES)
                .alias("ex"),
                # where the set-aside rows are, so the table need not recompute the reasons
                pl.struct("__src", "__row").filter(pl.col("__reason").is_not_null()).alias("ids"),
            )
            .collect(engine="streaming")
        )
    except pl.exceptions.PolarsError as exc:
        raise _locate_read_error(parts, exc) from None
    rows_read = int(counts["n"].sum())
    set_aside: dict[str, int] = {}
    examples: list[SetAsideExample] = []
    first_invalid: tuple[int, int, str, str | None] | None = None
    for r in counts.sort("__reason", nulls_last=True).iter_rows(named=True):
        if r["__reason"] is None:
            continue
        reason_name = r["__reason"]
        set_aside[reason_name] = r["n"]
        column = messages.get(reason_name, (None, ""))[0]
        shown = source_names.get(column, column) if column else None
        for ex in sorted(r["ex"], key=lambda e: (e["__src"], e["__row"])):
            detail = ex["__raw_score"] if column == "score" else None
            examples.append(
                SetAsideExample(reason_name, paths[ex["__src"]], ex["__row"], shown, detail)
            )
            if reason_name not in quirks:
                cand = (ex["__src"], ex["__row"], reason_name, detail)
                if first_invalid is None or cand[:2] < first_invalid[:2]:
                    first_invalid = cand
    if first_invalid is not None and on_invalid == "error":
        src, row, reason_name, detail = first_invalid
        column, message = messages[reason_name]
        shown = source_names.get(column, column) if column else None
        if column == "score" and detail is not None and reason_name != "missing_score":
            message = f"{message}, got {detail!r}"
            try:
                if float(str(detail).rstrip("%")) > 1 and not math.isnan(
                    float(str(detail).rstrip("%"))
                ):
                    message += ". The scores look percent-scaled: pass score_scale='percent' (CLI: --score-scale percent)"
            except ValueError:
                pass
        raise IngestError(
            f"{message}. To set such rows aside and count them, pass on_invalid='skip' "
            "(CLI: --on-invalid skip).",
            path=paths[src],
            row=row,
            column=shown,
        )
    if extra_read:
        for k, v in extra_read.items():
            set_aside[k] = set_aside.get(k, 0) + int(v)
        rows_read += sum(int(v) for v in extra_read.values())

    # --- the observation table -----------------------------------------------------------
    ids = counts.select(pl.col("ids").explode()).drop_nulls().unnest("ids")
    out = rows
    if ids.height:
        out = out.join(ids.lazy(), on=["__src", "__row"], how="anti", maintain_order="left")
    out = out.with_columns(pl.col("__score").alias("score"), pl.col("__run").alias("run"))
    if "__input_text" in schema and "input_len" not in schema:
        out = out.with_columns(
            pl.col("__input_text").str.count_matches(r"\S+").cast(pl.Int64).alias("input_len")
        )
    if "response" in schema and "output_len" not in schema:
        out = out.with_columns(
            pl.col("response")
            .cast(pl.String)
            .str.count_matches(r"\S+")
            .cast(pl.Int64)
            .alias("output_len")
        )
    out_schema = out.collect_schema()
    canonical = [c for c in OBSERVATION_COLUMNS if c in out_schema]
    if "n_items" in out_schema:  # unit-level input carries its item count
        canonical.insert(canonical.index("score") + 1, "n_items")
    facs = [c for c in factor_list if c in out_schema]
    rest = [c for c in factor_columns(out_schema.names()) if c not in facs]
    casts = [pl.col(c).cast(OBSERVATION_COLUMNS.get(c, pl.Int64)) for c in canonical]
    n_head = canonical.index("score") + 1 + ("n_items" in canonical)
    ordered = canonical[:n_head] + facs + rest + canonical[n_head:]
    ordered_exprs = {c: e for c, e in zip(canonical, casts)}
    out = out.select([ordered_exprs.get(c, pl.col(c)) for c in ordered])
    report = IngestReport(
        format=format,
        sources=tuple(paths),
        rows_read=rows_read,
        rows_kept=rows_read - sum(set_aside.values()),
        set_aside=set_aside,
        examples=tuple(examples),
        notes=tuple(notes),
    )
    return Ingest(out, report)


def _locate_read_error(
    parts: Sequence[tuple[str, pl.LazyFrame]], exc: BaseException
) -> IngestError:
    """Find which file fails to read (one collect per file) and describe it."""
    for path, lf in parts:
        try:
            lf.select(pl.len()).collect()
            lf.head(1).collect()
            lf.collect(engine="streaming")
        except pl.exceptions.PolarsError as inner:
            return read_error(path, inner)
    return IngestError(
        f"cannot read the input ({str(exc).splitlines()[0]}).", path=str(parts[0][0])
    )
