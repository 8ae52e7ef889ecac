"""Shared last step of every loader: validate, set aside, count, and build the observation table.

A loader turns each source file into a LazyFrame whose columns already carry canonical names
(``model``, ``item``, ``score`` ...; raw dtypes are fine) plus factor columns, and hands the list
to :func:`finalize`. ``finalize`` numbers rows per file, unifies the files' columns, builds the
rules (one reason per row set aside) into a :class:`~evalstats.io._accounting.Plan`, gives every
row its metric (name, bounds, direction: the loader's, then the user's declarations), has
:func:`~evalstats.io._accounting.account` read the rows once, a partition at a time (notes on
percent-looking files, reasons, duplicates, counts, examples), raises on invalid rows unless
asked to skip them, and returns the ``Ingest`` with a lazy observation table that leaves those
rows out.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import polars as pl

from evalstats._column_rules import ColumnRule
from evalstats.errors import IngestError, ParameterError
from evalstats.io._report import Ingest, IngestReport, SetAsideExample
from evalstats.io._rows import Check, clean_name, parse_score, read_error, whole_run
from evalstats.schema import (
    DEFAULT_METRIC,
    METRIC_INFO_COLUMNS,
    OBSERVATION_COLUMNS,
    MetricInfo,
    factor_columns,
    variant_key,
)

if TYPE_CHECKING:
    from evalstats.io._accounting import Accounting, Plan

__all__ = [
    "Check",
    "MetricRange",
    "OnInvalid",
    "ScoreScale",
    "finalize",
    "metric_options",
    "observations",
    "parse_score",
    "plan_of",
    "prepare",
    "read_error",
    "score_factor",
    "validate_metric_options",
    "validate_options",
]

OnInvalid = Literal["error", "skip"]
#: ``auto`` and ``unit`` keep scores as they are (``auto`` notes when they look like
#: percentages), ``percent`` divides by 100, a positive number divides by that number.
ScoreScale = Literal["auto", "unit", "percent"] | float

#: A metric's declared range: ``(low, high)``, either None for an unbounded side.
MetricRange = tuple[float | None, float | None]


def validate_options(on_invalid: str, score_scale: object) -> None:
    """Check the options every loader takes; raise ParameterError naming the bad one."""
    if on_invalid not in ("error", "skip"):
        raise ParameterError(f"`on_invalid` must be 'error' or 'skip', got {on_invalid!r}.")
    score_factor(score_scale)


def score_factor(score_scale: object) -> float:
    """The factor scores are multiplied by: 1 for ``auto``/``unit``, 1/100 for ``percent``.

    A positive number ``d`` means "divide by ``d``" (``--rescale 100``).

    Examples
    --------
    >>> score_factor("auto"), score_factor("percent"), score_factor(10)
    (1.0, 0.01, 0.1)
    """
    if isinstance(score_scale, str) and score_scale in ("auto", "unit", "percent"):
        return 0.01 if score_scale == "percent" else 1.0
    if (
        isinstance(score_scale, (int, float))
        and not isinstance(score_scale, bool)
        and math.isfinite(score_scale)
        and score_scale > 0
    ):
        return 1.0 / float(score_scale)
    raise ParameterError(
        "`score_scale` must be 'auto', 'unit', 'percent' or a positive number to divide the "
        f"scores by, got {score_scale!r}."
    )


def validate_metric_options(
    metric_range: MetricRange | Mapping[str, MetricRange] | None,
    higher_is_better: bool | Mapping[str, bool] | None,
) -> None:
    """Check ``metric_range`` and ``higher_is_better``; raise ParameterError naming the bad one."""
    ranges = (
        metric_range.items()
        if isinstance(metric_range, Mapping)
        else ([("*", metric_range)] if metric_range is not None else [])
    )
    for name, rng in ranges:
        try:
            lo, hi = rng  # type: ignore[misc]
            MetricInfo(str(name), lo, hi)
        except (TypeError, ValueError) as exc:
            raise ParameterError(
                f"`metric_range` must be (low, high) with numbers or None, low < high, got "
                f"{rng!r}{'' if name == '*' else f' for metric {name!r}'}"
                f"{': ' + str(exc).split(': ', 1)[-1] if isinstance(exc, ValueError) else ''}."
            ) from None
    hib = (
        higher_is_better.values()
        if isinstance(higher_is_better, Mapping)
        else ([higher_is_better] if higher_is_better is not None else [])
    )
    for v in hib:
        if not isinstance(v, bool):
            raise ParameterError(f"`higher_is_better` must be True or False, got {v!r}.")


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
    variant: pl.Expr | None = None,
    metric: MetricInfo | str | None = None,
    column_rules: Sequence[ColumnRule] = (),
    companions: Sequence[str | None] | None = None,
    constants: Sequence[Mapping[str, object]] | None = None,
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
    score_scale : {'auto', 'unit', 'percent'} or float, default 'auto'
        Scores are kept on their own scale unless asked: ``auto`` and ``unit`` never convert
        (``auto`` adds a note when a file of a metric without declared bounds looks like
        percentages: values in [0, 100], more than half of the non-zero ones above 1);
        ``percent`` divides by 100, a positive number divides by that number. Declared metric
        bounds are on the scale after this division (an accuracy stays [0, 1]).
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
    variant : polars.Expr, optional
        How the loader derives ``variant`` from the factor columns, when the frames carry no
        ``variant`` column (default: :func:`evalstats.schema.variant_key` of ``factors``). The
        expression is evaluated per unit, not per row, when the unit table is built directly.
    column_rules : sequence of ColumnRule
        What the loader decided about source columns (left out, or a factor, and why); kept on
        the report for the design (:mod:`evalstats.design`).
    companions : sequence of str or None, optional
        Per part, a fingerprint of the files the format writes beside it (see
        :func:`copied_files`). A file whose bytes (and companion) equal an earlier file's is a
        copy: its rows are set aside as ``duplicate_file``.
    metric : MetricInfo or str, optional
        The metric of rows whose frame has no ``metric`` column (default ``"score"``,
        undeclared: unbounded, higher is better), with the bounds and direction the format
        declares. Frames may instead carry ``metric``, ``metric_low``, ``metric_high`` and
        ``higher_is_better`` columns (one metric per row). The user's ``metric_range`` and
        ``higher_is_better`` (:func:`metric_options`, set by :func:`evalstats.io.read`) override
        both.
    constants : sequence of mapping, optional
        Per part, the columns the loader set to one value for the whole file (``{"dataset":
        "mmlu"}`` for a dataset named by the file); the streaming pass leaves them out of its
        grouping and puts them back on the groups (a declared column must hold that value on
        every row of the part).

    Notes
    -----
    The rows are read once, a partition at a time (see :mod:`evalstats.io._accounting`), to
    count and locate the rows set aside; the returned observation table is lazy and re-reads the
    files when collected, leaving out the rows set aside.
    """
    options = dict(
        format=format,
        on_invalid=on_invalid,
        score_scale=score_scale,
        checks=checks,
        duplicates=duplicates,
        dedup_key=dedup_key,
        factors=factors,
        source_names=source_names,
        notes=notes,
        extra_read=extra_read,
        variant=variant,
        metric=metric,
        column_rules=column_rules,
        companions=companions,
        constants=constants,
    )
    # a duplicate made by merging two spellings of a name: read again with them apart
    return spellings_apart_on_duplicate(lambda: _finalize_once(parts, options))


def _finalize_once(parts: Sequence[tuple[str, pl.LazyFrame]], options: dict[str, Any]) -> Ingest:
    if _PLANNING.get():
        raise _Planned(prepare(parts, **options))  # validates the options first
    from evalstats.io._accounting import raise_invalid
    from evalstats.io._stream import account_rows

    def once() -> tuple[Plan, Accounting]:
        plan = prepare(parts, **options)
        return plan, account_rows(plan, units=False, ids=True)

    plan, acc = names_checked(once)
    if acc.first_invalid is not None:
        raise_invalid(plan, acc.first_invalid)
    obs = observations(plan, acc.scale, acc.ids)
    return Ingest(obs, report_of(plan, acc, error_counts(plan, obs)))


def error_counts(plan: Plan, obs: pl.LazyFrame) -> tuple[dict[str, int], int]:
    """Rows kept that record an error, by class, and how many of them have no score.

    Read from the observation table itself (one streaming pass over two columns), so the
    counts are exactly those of the rows kept.
    """
    if "error" not in plan.schema:
        return {}, 0
    got = (
        obs.filter(pl.col("error").is_not_null())
        .group_by("error")
        .agg(pl.len().alias("n"), pl.col("score").is_null().sum().alias("unscored"))
        .collect(engine="streaming")
    )
    return (
        {str(k): int(v) for k, v in zip(got["error"], got["n"])},
        int(got["unscored"].sum()) if got.height else 0,
    )


def copied_files(
    paths: Sequence[str], companions: Sequence[str | None] | None = None
) -> dict[int, int]:
    """``{i: j}`` for each file ``paths[i]`` whose bytes equal those of an earlier ``paths[j]``.

    Only files of equal size are hashed (SHA-256, streamed), so a folder of distinct files costs
    one ``stat`` per file. Paths that are not plain files (archive members) are never copies.
    Of identical files the oldest (then the first read) is the original, the others copies.
    ``companions[i]``, when given, is a fingerprint of what the format writes beside file ``i``
    (lm-eval's results file of the same run): two runs of a deterministic model can write the
    same samples bytes, but never the same results file (it holds the run's times), so files
    are copies only when their companions agree too.
    """
    import hashlib
    import os

    by_size: dict[int, list[int]] = {}
    for i, p in enumerate(paths):
        try:
            if os.path.isfile(p):
                by_size.setdefault(os.path.getsize(p), []).append(i)
        except OSError:
            continue
    out: dict[int, int] = {}
    for idx in by_size.values():
        if len(idx) < 2:
            continue
        groups: dict[str, list[int]] = {}
        for i in idx:
            h = hashlib.sha256()
            try:
                with open(paths[i], "rb") as fh:
                    for chunk in iter(lambda fh=fh: fh.read(1 << 20), b""):
                        h.update(chunk)
            except OSError:
                continue
            digest = h.hexdigest() + ("" if companions is None else f":{companions[i]}")
            groups.setdefault(digest, []).append(i)
        for members in groups.values():
            real = {}
            for i in members:  # the same file named twice (a link) is not a copy
                real.setdefault(os.path.realpath(paths[i]), i)
            if len(real) < 2:
                continue
            # the original is the oldest file (a copy is written later), then the first read
            keep = min(real.values(), key=lambda i: (_mtime(paths[i]), i))
            for i in real.values():
                if i != keep:
                    out[i] = keep
    return out


def _mtime(path: str) -> float:
    import os

    try:
        return os.path.getmtime(path)
    except OSError:
        return float("inf")


def prepare(
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
    variant: pl.Expr | None = None,
    metric: MetricInfo | str | None = None,
    column_rules: Sequence[ColumnRule] = (),
    companions: Sequence[str | None] | None = None,
    constants: Sequence[Mapping[str, object]] | None = None,
) -> Plan:
    """The :class:`~evalstats.io._accounting.Plan` of :func:`finalize`'s arguments; reads no rows.

    Only the schemas are read (Parquet footers, CSV headers), to unify the files' columns.
    """
    from evalstats.io._accounting import Plan, unit_factor_order

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
        schemas = [f.collect_schema() for f in frames]
    except (pl.exceptions.PolarsError, OSError) as exc:  # schema of an unreadable file
        raise _schema_error(paths, frames, exc) from None
    try:
        lf = pl.concat(frames, how="diagonal_relaxed") if len(frames) > 1 else frames[0]
        schema = lf.collect_schema()
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise read_error(paths[0], exc) from None

    # canonical columns hold scalars: a list or object column (JSON lines such as
    # {"model": ["a"]}) is one line naming the file and column, not a cast failure later
    for path, sch in zip(paths, schemas):
        for name in ("model", "dataset", "item", "variant", "metric", "run", "score"):
            if name in sch and sch[name].is_nested():
                raise IngestError(
                    f"holds {sch[name]} values; expected one text or number per row.",
                    path=path,
                    column=source_names.get(name, name),
                )
    for name in ("model", "score"):
        if name not in schema:
            raise IngestError(
                f"no column gives {name!r} (columns: {', '.join(c for c in schema.names() if not c.startswith('__'))}). "
                f"Map one with columns={{'<column>': '{name}'}} (CLI: --columns <column>={name}).",
                path=paths[0],
            )
    default = metric if isinstance(metric, MetricInfo) else MetricInfo(metric or DEFAULT_METRIC)
    factor = score_factor(score_scale)
    user = _METRIC_OPTIONS.get() or {}
    declared = default.low is not None or default.high is not None or "metric_low" in schema
    declared = declared or "metric_high" in schema or user.get("metric_range") is not None
    keep_metrics = user.get("metrics")
    metric_steps = _metric_columns(
        schema,
        default,
        metric_range=user.get("metric_range"),  # type: ignore[arg-type]
        higher_is_better=user.get("higher_is_better"),  # type: ignore[arg-type]
    )
    added = []
    if "dataset" not in schema:
        added.append(pl.lit(None, dtype=pl.String).alias("dataset"))
    if "run" not in schema:
        added.append(pl.lit(0, dtype=pl.Int64).alias("run"))
    # names are compared as people read them: surrounding whitespace stripped, Unicode NFC
    names = [c for c in NAME_COLUMNS if c in schema and schema[c] == pl.String]
    keep = _KEEP_SPELLINGS.get()
    unchecked: tuple[str, ...] = ()
    # only where the streaming pass will run (item-level rows de-duplicated on their item, no
    # documented duplicates: see evalstats.io._stream.streamable); elsewhere checked here
    streams = (
        "item" in schema and duplicates != "quirk" and (dedup_key is None or "item" in dedup_key)
    )
    if _DEFER_NAMES.get() and not keep and streams:
        # the streaming pass checks the distinct names from its own groups (no pass of their
        # own here); it asks for this plan again without deferral when one needs cleaning
        merge_notes, clean, unchecked = [], set(names), tuple(names)
    else:
        merge_notes, clean = _merge_notes(frames, schemas, names)
    notes.extend(
        n
        if n.split(":", 1)[0] not in keep
        else n.split(" were merged into ")[0].replace(" spellings ", " spellings (", 1)
        + ") name rows of the same items, so each spelling is kept as its own name (merged, "
        "those rows would be duplicates; rename them in the data if they are one)"
        for n in merge_notes
    )
    # a column whose every distinct value is already clean is left as it is: cleaning it would
    # change no value and costs most of the per-row work of a long table
    cleaned = [clean_name(c) for c in names if c not in keep and c not in clean]
    # every file gets the unified columns, so that any subset of files concatenates
    steps: list[list[pl.Expr]] = [added] if added else []
    steps += [cleaned] if cleaned else []
    steps += metric_steps
    aligned = []
    for f, sch in zip(frames, schemas):
        f = f.select(_aligned_columns(schema, sch))
        for step in steps:
            f = f.with_columns(step)
        aligned.append(f)
    unified = schema
    schema = aligned[0].collect_schema()
    if "error" in schema:
        # an errored call is an observation: its class in `error`, kept with a null score
        steps.append(_error_steps(schema))
        aligned = [f.with_columns(steps[-1]) for f in aligned]
        schema = aligned[0].collect_schema()
    constant_values = _constants(unified, schemas, constants, steps)
    factor_list = list(factors) if factors is not None else factor_columns(schema.names())
    if "variant" not in schema:
        if variant is None:
            variant = variant_key(factor_list)
            if factor_list:
                notes.append(f"variant derived from factor columns: {', '.join(factor_list)}")
        variant = variant.alias("variant")
    else:
        variant = None
    has_item = "item" in schema

    # --- reasons -------------------------------------------------------------------------
    rules: list[Check] = list(checks)
    copies = copied_files(paths, companions) if user.get("copies") != "keep" else {}
    if copies:
        rules.insert(
            0,
            Check(
                "duplicate_file",
                pl.col("__src").is_in(sorted(copies)),
                quirk=True,
                message="the file is a byte-for-byte copy of an earlier file read",
            ),
        )
        for i, j in sorted(copies.items()):
            notes.append(
                f"{paths[i]} is a byte-for-byte copy of {paths[j]}: its rows are set aside as "
                "duplicate_file (the same rows under another name are not another run, model or "
                "dataset)"
            )
    if keep_metrics is not None:
        rules.insert(
            0,
            Check(
                "other_metric",
                ~pl.col("metric").is_in(list(keep_metrics)),  # type: ignore[call-overload]
                column="metric",
                quirk=True,
                message="a row of a metric not asked for",
            ),
        )
    for name in ("model", "dataset") + (("item",) if has_item else ()):
        rules.append(
            Check(
                f"missing_{name}",
                pl.col(name).is_null(),
                column=name,
                message="required value is missing",
            )
        )
    for name in names:
        rules.append(
            Check(
                f"blank_{name}",
                pl.col(name) == "",
                column=name,
                message="the value is blank (empty or only whitespace)",
            )
        )
    rules.append(
        Check(
            "missing_run",
            pl.col("run").is_null(),
            column="run",
            message="required value is missing",
        )
    )
    rules.append(
        Check(  # 0.5 or 1.7 is not truncated to a run: it is set aside by this reason
            "invalid_run",
            pl.col("__run").is_null() | (pl.col("__run") < 0),
            column="run",
            message="expected a non-negative whole number",
        )
    )
    s = pl.col("__score")
    # a call with a recorded error is kept without a score (counted by class on the report)
    clean = pl.col("error").is_null() if "error" in schema else pl.lit(True)
    rules += [
        Check(
            "missing_score",
            pl.col("score").is_null() & clean,
            column="score",
            message="expected a number, got a missing value",
        ),
        Check(
            "unparseable_score",
            s.is_null() & clean,
            column="score",
            message="expected a number",
        ),
        Check(
            "nonfinite_score",
            s.is_nan() | s.is_infinite(),
            column="score",
            quirk=True,  # NaN/inf are never averaged: always set aside and counted
            message="the score is not finite (NaN or infinite)",
        ),
        Check(
            "score_out_of_range",
            # no bounds declared anywhere: every row's bounds are null, so no row is out of them
            (s < pl.col("metric_low")).fill_null(False)
            | (s > pl.col("metric_high")).fill_null(False)
            if declared
            else pl.lit(False),
            column="score",
            message="expected a number within the metric's declared range",
        ),
    ]
    key = (
        list(dedup_key)
        if dedup_key is not None
        else (["model", "dataset", "variant", "__run"] + (["item"] if has_item else []))
    )
    if "metric" not in key:  # two metrics of one item are two observations, not duplicates
        key.insert(key.index("dataset") + 1 if "dataset" in key else 0, "metric")
    key = ["__run" if k == "run" else k for k in key]
    quirks = {r.reason for r in rules if r.quirk}
    if duplicates == "quirk":
        quirks.add("duplicate")
    messages = {r.reason: (r.column, r.message) for r in rules}
    key_names = ", ".join("run" if k == "__run" else k for k in key)
    messages["duplicate"] = (None, f"duplicate of an earlier row with the same ({key_names})")
    out_names = [c for c in schema.names()] + (["variant"] if variant is not None else [])
    return Plan(
        format=format,
        paths=tuple(paths),
        frames=tuple(aligned),
        schema=schema,
        rules=tuple(rules),
        dedup_key=tuple(key),
        quirks=frozenset(quirks),
        messages=messages,
        on_invalid=on_invalid,
        score_scale=score_scale,
        score_factor=factor,
        hint_scale=not declared and score_scale == "auto",
        has_item=has_item,
        variant=variant,
        factor_list=tuple(factor_list),
        unit_factors=unit_factor_order(out_names, factor_list),
        source_names=source_names,
        notes=tuple(notes),
        extra_read=dict(extra_read or {}),
        column_rules=tuple(column_rules),
        constants=constant_values,
        unchecked_names=unchecked,
    )


def _aligned_columns(schema: pl.Schema, sch: pl.Schema) -> list[pl.Expr]:
    """The unified ``schema``'s columns from a file of schema ``sch`` (absent ones null)."""
    return [
        (pl.col(c).cast(dt) if sch[c] != dt else pl.col(c))
        if c in sch
        else pl.lit(None, dtype=dt).alias(c)
        for c, dt in schema.items()
    ]


#: Files x columns above which the per-file constants are not worked out (the streaming pass
#: then groups by every column, which is only slower).
_CONSTANTS_CELLS = 1_000_000


def _constants(
    schema: pl.Schema,
    schemas: Sequence[pl.Schema],
    declared: Sequence[Mapping[str, object]] | None,
    steps: Sequence[Sequence[pl.Expr]],
) -> tuple[dict[str, object], ...]:
    """Per file, the columns that hold one value on all its rows, and that value.

    A column is constant in a file when the loader declared it so (``declared``), when the file
    lacks it (null), or when every step computes it from constant columns only (a literal, a
    cast, a cleaned name, a metric default); ``__src`` and ``__run`` (from a constant ``run``)
    too. The values are those steps evaluated on one row per file, so they are the values the
    rows hold.
    """
    n = len(schemas)
    declared = list(declared) if declared is not None else [{} for _ in range(n)]
    if n * max(len(schema), 1) > _CONSTANTS_CELLS or len(declared) != n:
        return tuple({"__src": i} for i in range(n))
    const = [
        {c for c in schema.names() if c not in sch or c in d} | {"__src"}
        for sch, d in zip(schemas, declared)
    ]
    for step in steps:
        for e in step:
            roots = e.meta.root_names()
            name = e.meta.output_name()
            for k in const:
                if (roots and all(r in k for r in roots)) or (
                    not roots and e.meta.is_literal(allow_aliasing=True)
                ):
                    k.add(name)
                else:
                    k.discard(name)
    for k in const:
        if "run" in k:
            k.add("__run")
    # one row per file: declared values, nulls where a file lacks a column, the steps applied
    data = {}
    for c, dt in schema.items():
        vals = [d.get(c) if c in sch else None for sch, d in zip(schemas, declared)]
        if all(sch.get(c, dt) == dt for sch in schemas):
            data[c] = pl.Series(c, vals, dtype=dt)
        else:  # a file's own dtype, cast as the aligned frames cast it
            data[c] = pl.concat(
                pl.Series(c, [v], dtype=sch.get(c, dt)).cast(dt) for v, sch in zip(vals, schemas)
            )
    one = pl.DataFrame(data).with_columns(pl.int_range(n, dtype=pl.Int32).alias("__src"))
    for step in steps:
        one = one.with_columns(step)
    one = one.with_columns(whole_run(pl.col("run")).alias("__run"))
    rows = one.select(sorted(set().union(*const))).rows(named=True)
    return tuple({c: r[c] for c in k} for k, r in zip(const, rows))


def _error_steps(schema: pl.Schema) -> list[pl.Expr]:
    """``error`` as a class (:mod:`evalstats.io._errors`), and the score of an errored call.

    A call with no error recorded, no score and a blank response is ``empty``; a truncated
    call whose response repeats a span is ``repetition``; an errored call's non-finite score
    (NaN written for a failed call) is a missing one.
    """
    from evalstats.io._errors import error_class, repetition_class

    err = error_class(pl.col("error"))
    raw = pl.col("score")
    if "response" in schema:
        blank = pl.col("response").cast(pl.String).str.strip_chars().fill_null("") == ""
        no_score = raw.is_null()
        if schema["score"] == pl.String:
            no_score = no_score | (raw.str.strip_chars() == "")
        err = pl.when(err.is_null() & no_score & blank).then(pl.lit("empty")).otherwise(err)
        err = repetition_class(err, pl.col("response"))
    steps = [err.alias("error")]
    if schema["score"].is_float():
        steps.append(
            pl.when(err.is_not_null() & ~raw.is_finite())
            .then(pl.lit(None, dtype=schema["score"]))
            .otherwise(raw)
            .alias("score")
        )
    return steps


#: Columns whose values are names: stripped of surrounding whitespace and put in Unicode
#: normal form NFC before anything compares them (:func:`clean_name`).
NAME_COLUMNS = ("model", "dataset", "variant", "item")


#: Name columns whose spellings are kept apart (see :func:`finalize`): set while a table whose
#: merged spellings made duplicate rows is read again without merging them.
_T = TypeVar("_T")

_KEEP_SPELLINGS: ContextVar[frozenset[str]] = ContextVar("keep_spellings", default=frozenset())

#: Set while a plan is built for the streaming pass (:func:`names_checked`): the distinct values
#: of the name columns are then checked from that pass's groups, not read by a pass of their own.
_DEFER_NAMES: ContextVar[bool] = ContextVar("evalstats_defer_names", default=False)


def names_checked(run: Callable[[], _T]) -> _T:
    """``run()`` with the name checks left to the streaming pass; eagerly when it asks.

    A column whose names need cleaning (surrounding whitespace, Unicode form) or a plan the
    streaming pass does not take raises
    :class:`~evalstats.io._accounting.NamesUnchecked`; ``run()`` is then called again
    with the checks made before the pass, as without this function.
    """
    from evalstats.io._accounting import NamesUnchecked

    token = _DEFER_NAMES.set(True)
    try:
        return run()
    except NamesUnchecked:
        pass
    finally:
        _DEFER_NAMES.reset(token)
    return run()


def spellings_to_keep(exc: IngestError) -> frozenset[str]:
    """The name columns to read again unmerged after ``exc`` (empty: re-raise ``exc``).

    A duplicate row in an input whose names were merged (NFC and NFD spellings, padding) may be
    a duplicate only because two spellings became one name: the reader reads the input again
    with those columns' spellings kept apart (:func:`spellings_kept`); when the rows are still
    duplicates, the first error stands.
    """
    merged = getattr(exc, "merged_columns", None)
    if getattr(exc, "invalid_reason", None) != "duplicate" or not merged:
        return frozenset()
    if _KEEP_SPELLINGS.get():  # already read apart: the duplicates are real
        return frozenset()
    return frozenset(merged)


@contextmanager
def spellings_kept(columns: frozenset[str]) -> Iterator[None]:
    """Within the block, the spellings of ``columns`` are not merged (see :func:`prepare`)."""
    token = _KEEP_SPELLINGS.set(columns)
    try:
        yield
    finally:
        _KEEP_SPELLINGS.reset(token)


def spellings_apart_on_duplicate(run: Callable[[], _T]) -> _T:
    """``run()``; when it fails on a duplicate made by merged spellings, ``run()`` with them apart.

    If the rows are still duplicates with the spellings apart, that error is the one raised.
    """
    try:
        return run()
    except IngestError as exc:
        keep = spellings_to_keep(exc)
        if not keep:
            raise
        with spellings_kept(keep):
            return run()


def _merge_notes(
    frames: Sequence[pl.LazyFrame], schemas: Sequence[pl.Schema], names: Sequence[str]
) -> tuple[list[str], set[str]]:
    """One note per name column whose distinct values :func:`clean_name` merges, counting them.

    Reads the distinct values of those columns (one streaming pass over them). Also returns
    the columns whose distinct values :func:`clean_name` leaves all unchanged.
    """
    queries = []
    checks = []
    for c in names:
        parts = [f.select(pl.col(c).cast(pl.String)) for f, sch in zip(frames, schemas) if c in sch]
        if not parts:
            continue
        raw = pl.concat(parts).unique().drop_nulls()
        checks.append(
            raw.filter(pl.col(c) != clean_name(c)).select(pl.len(), pl.lit(c).alias("__column"))
        )
        queries.append(
            raw.with_columns(clean_name(c).alias("__clean"))
            .filter(pl.col("__clean") != "")
            .group_by("__clean")
            .agg(pl.col(c).sort().alias("__raw"), pl.len().alias("__n"))
            .filter(pl.col("__n") > 1)
            .sort("__clean")
            .with_columns(pl.lit(c).alias("__column"))
            .select("__column", "__clean", "__raw", "__n")
        )
    if not queries:
        return [], set()
    try:
        found = pl.collect_all(queries + checks)
    except (pl.exceptions.PolarsError, OSError):  # an unreadable file: the accounting pass names it
        return [], set()
    clean = {f["__column"][0] for f in found[len(queries) :] if f["len"][0] == 0}
    notes = []
    for frame in found[: len(queries)]:
        if frame.height == 0:
            continue
        column = frame["__column"][0]
        spellings = int(frame["__n"].sum())
        examples = "; ".join(
            f"{' + '.join(repr(v) for v in raw[:3])} -> {clean!r}"
            for clean, raw in frame.head(3).select("__clean", "__raw").iter_rows()
        )
        more = ", ..." if frame.height > 3 else ""
        notes.append(
            f"{column}: {spellings} spellings that differ only in surrounding whitespace or "
            f"Unicode normal form were merged into {frame.height} names ({examples}{more})"
        )
    return notes, clean


def report_of(
    plan: Plan, acc: Accounting, errors: tuple[Mapping[str, int], int] = ({}, 0)
) -> IngestReport:
    """The ingest report of an accounting pass (``errors``: see :func:`error_counts`)."""
    set_aside = dict(acc.set_aside)
    examples = []
    for reason in sorted(acc.examples):
        column = plan.messages.get(reason, (None, ""))[0]
        shown = plan.source_names.get(column, column) if column else None
        for src, row, raw in acc.examples[reason]:
            detail = raw if column == "score" else None
            examples.append(SetAsideExample(reason, plan.paths[src], row, shown, detail))
    rows_read = acc.rows_read
    for k, v in plan.extra_read.items():
        set_aside[k] = set_aside.get(k, 0) + int(v)
        rows_read += int(v)
    notes = list(dict.fromkeys([*plan.notes, *acc.scale_notes]))  # one of each, in order
    if plan.score_factor != 1.0:
        notes.append(
            f"scores divided by {1 / plan.score_factor:g} (score_scale={plan.score_scale!r})"
        )
    widened: list[str] = []
    metrics = _metrics_of(plan, acc, widened)
    notes.extend(widened)
    for m in metrics:
        how = "as declared" if (m.low, m.high) != (None, None) else "no bounds declared"
        notes.append(f"metric {m.describe()} ({how})")
    return IngestReport(
        format=plan.format,
        sources=plan.paths,
        rows_read=rows_read,
        rows_kept=rows_read - sum(set_aside.values()),
        set_aside=set_aside,
        examples=tuple(examples),
        notes=tuple(notes),
        metrics=tuple(metrics),
        columns=plan.column_rules,
        errors=errors[0],
        errors_unscored=errors[1],
    )


def _metrics_of(plan: Plan, acc: Accounting, notes: list[str] | None = None) -> list[MetricInfo]:
    """The metrics of the rows kept (or read, when none is kept), from the per-unit groups."""
    g = acc.groups
    if g.height == 0 or "metric" not in g.columns:
        return []
    if "__n" in g.columns and int(g["__n"].sum()) > 0:
        g = g.filter(pl.col("__n") > 0)
    rows = g.select("metric", *METRIC_INFO_COLUMNS).unique().sort("metric", nulls_last=True)
    out: dict[str, MetricInfo] = {}
    for name, lo, hi, hib in rows.iter_rows():
        if name is None:
            continue
        mi = MetricInfo(str(name), lo, hi, True if hib is None else bool(hib))
        if name in out and out[name] != mi and out[name].higher_is_better == mi.higher_is_better:
            # two declared ranges (files of two versions of a task): the widest holds both
            wide = widest_range(out[name], mi)
            if notes is not None:
                notes.append(
                    f"metric {name!r} is declared as {out[name].describe()!r} and as "
                    f"{mi.describe()!r}: read with the widest range, {wide.describe()!r} "
                    "(declare one with --metric-range)"
                )
            mi = wide
        elif name in out and out[name] != mi:
            raise IngestError(
                f"metric {name!r} is declared twice, as {out[name].describe()!r} and "
                f"{mi.describe()!r}; give it one range and direction.",
                path=plan.paths[0] if len(plan.paths) == 1 else None,
            )
        out[str(name)] = mi
    return list(out.values())


def widest_range(a: MetricInfo, b: MetricInfo) -> MetricInfo:
    """The range that holds both ``a``'s and ``b``'s (a side unbounded when either is).

    Examples
    --------
    >>> widest_range(MetricInfo("s", 0, 1), MetricInfo("s", 0, None)).describe()
    's: range [0, inf), higher is better'
    """
    lo = None if a.low is None or b.low is None else min(a.low, b.low)
    hi = None if a.high is None or b.high is None else max(a.high, b.high)
    return MetricInfo(a.name, lo, hi, a.higher_is_better)


def _metric_columns(
    schema: pl.Schema,
    default: MetricInfo,
    *,
    metric_range: MetricRange | Mapping[str, MetricRange] | None = None,
    higher_is_better: bool | Mapping[str, bool] | None = None,
) -> list[list[pl.Expr]]:
    """Steps (``with_columns`` batches) giving every row its metric name, bounds and direction.

    The loader's columns (or its ``default``) first, then the user's declarations. Bounds are
    on the metric's scale as analysed, i.e. after any rescaling of the scores.
    """
    f64, boolean = pl.Float64, pl.Boolean

    def have(c: str, dt: pl.DataType, v: object) -> pl.Expr:
        if c in schema and schema[c] != pl.Null():
            e = pl.col(c).cast(dt)
            return (e.fill_null(v) if v is not None else e).alias(c)
        return pl.lit(v, dtype=dt).alias(c)

    steps = [
        [
            have("metric", pl.String(), default.name),
            have("metric_low", f64(), default.low),
            have("metric_high", f64(), default.high),
            have("higher_is_better", boolean(), default.higher_is_better),
        ]
    ]
    user: list[pl.Expr] = []
    if isinstance(metric_range, Mapping):
        for c, k in (("metric_low", 0), ("metric_high", 1)):
            e = pl.col(c)
            for name, rng in metric_range.items():
                e = pl.when(pl.col("metric") == name).then(pl.lit(rng[k], dtype=f64)).otherwise(e)
            user.append(e.alias(c))
    elif metric_range is not None:
        lo, hi = metric_range
        user += [
            pl.lit(lo, dtype=f64).alias("metric_low"),
            pl.lit(hi, dtype=f64).alias("metric_high"),
        ]
    if isinstance(higher_is_better, Mapping):
        e = pl.col("higher_is_better")
        for name, v in higher_is_better.items():
            e = pl.when(pl.col("metric") == name).then(pl.lit(v)).otherwise(e)
        user.append(e.alias("higher_is_better"))
    elif higher_is_better is not None:
        user.append(pl.lit(higher_is_better, dtype=boolean).alias("higher_is_better"))
    if user:
        steps.append(user)
    return steps


#: The user's metric declarations for the loaders called inside :func:`metric_options`.
_METRIC_OPTIONS: ContextVar[dict[str, object] | None] = ContextVar(
    "evalstats_metric_options", default=None
)


@contextmanager
def metric_options(
    *,
    metric_range: MetricRange | Mapping[str, MetricRange] | None = None,
    higher_is_better: bool | Mapping[str, bool] | None = None,
    metrics: Sequence[str] | None = None,
    copies: Literal["set_aside", "keep"] | None = None,
) -> Iterator[None]:
    """Declare metric bounds and direction for every loader called in the ``with`` block.

    :func:`evalstats.io.read` uses it for its ``metric_range`` and ``higher_is_better``
    options, which every loader thereby accepts; the declarations override the format's.

    Parameters
    ----------
    metric_range : (low, high) or mapping of str to (low, high), optional
        Bounds of every metric, or per metric name, on the metric's scale as analysed (after
        any ``score_scale`` division); None for an unbounded side.
    higher_is_better : bool or mapping of str to bool, optional
        Direction of every metric, or per metric name.
    metrics : sequence of str, optional
        Keep only the rows of these metrics; the others are set aside as ``other_metric`` and
        counted.
    copies : {'set_aside', 'keep'}, optional
        Files that are byte-for-byte copies of an earlier file: set their rows aside as
        ``duplicate_file`` (the default) or read them like any file.
    """
    validate_metric_options(metric_range, higher_is_better)
    if copies is not None and copies not in ("set_aside", "keep"):
        raise ParameterError(f"`copies` must be 'set_aside' or 'keep', got {copies!r}.")
    if metrics is not None:
        if isinstance(metrics, str):
            metrics = [metrics]
        metrics = list(metrics)
        if not metrics or not all(isinstance(m, str) and m for m in metrics):
            raise ParameterError(f"`metrics` must be a list of metric names, got {metrics!r}.")
    opts = {
        k: v
        for k, v in (
            ("metric_range", metric_range),
            ("higher_is_better", higher_is_better),
            ("metrics", metrics),
            ("copies", copies),
        )
        if v is not None
    }
    token = _METRIC_OPTIONS.set(opts or None)
    try:
        yield
    finally:
        _METRIC_OPTIONS.reset(token)


def observations(plan: Plan, scale: Mapping[int, float], ids: pl.DataFrame | None) -> pl.LazyFrame:
    """The observation table: every file's rows, scores scaled, the rows set aside left out."""
    # set-aside rows leave by a filter on each file's row numbers, which streams (a join
    # keeping the left order would hold the rows)
    aside: dict[int, list[int]] = {}
    if ids is not None and ids.height:
        for (src,), rows in ids.group_by("__src"):
            aside[int(src)] = rows["__row"].to_list()
    frames = [
        f.filter(~pl.col("__row").is_in(aside[i])) if i in aside else f
        for i, f in enumerate(plan.frames)
    ]
    lf = pl.concat(frames, how="vertical") if len(frames) > 1 else frames[0]
    value, pct = parse_score(plan.schema["score"], plan.score_factor)
    lf = lf.with_columns(value.alias("__score"), pct.alias("__pct"))
    if any(v != 1.0 for v in scale.values()):
        factor_expr = pl.col("__src").replace_strict(
            list(scale.keys()), list(scale.values()), default=1.0, return_dtype=pl.Float64
        )
        lf = lf.with_columns(
            pl.when(pl.col("__pct"))
            .then(pl.col("__score"))
            .otherwise(pl.col("__score") * factor_expr)
            .alias("__score")
        )
    if plan.variant is not None:
        lf = lf.with_columns(plan.variant)
    out = lf.with_columns(pl.col("__score").alias("score"), whole_run(pl.col("run")).alias("run"))
    schema = plan.schema
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
    facs = [c for c in plan.factor_list if c in out_schema]
    rest = [c for c in factor_columns(out_schema.names()) if c not in facs]
    casts = [pl.col(c).cast(OBSERVATION_COLUMNS.get(c, pl.Int64)) for c in canonical]
    n_head = canonical.index("score") + 1 + ("n_items" in canonical)
    ordered = canonical[:n_head] + facs + rest + canonical[n_head:]
    ordered_exprs = {c: e for c, e in zip(canonical, casts)}
    return out.select([ordered_exprs.get(c, pl.col(c)) for c in ordered])


class _Planned(Exception):  # noqa: N818 - control flow, never seen by users
    def __init__(self, plan: Plan) -> None:
        self.plan = plan


_PLANNING: ContextVar[bool] = ContextVar("evalstats_planning", default=False)


def plan_of(reader: Callable[..., object], *args: object, **kwargs: object) -> Plan:
    r"""Run a loader up to its :func:`finalize` call and return the plan, reading no rows.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "d.csv"
    >>> _ = f.write_text("model,item,score\na,1,1\n")
    >>> from evalstats.io import read_table
    >>> plan_of(read_table, f).paths == (str(f),)
    True
    """
    token = _PLANNING.set(True)
    try:
        reader(*args, **kwargs)
    except _Planned as done:
        return done.plan
    finally:
        _PLANNING.reset(token)
    raise RuntimeError(f"{getattr(reader, '__name__', reader)} did not call finalize()")


def _schema_error(
    paths: Sequence[str], frames: Sequence[pl.LazyFrame], exc: BaseException
) -> IngestError:
    for path, f in zip(paths, frames):
        try:
            f.collect_schema()
        except (pl.exceptions.PolarsError, OSError) as inner:
            return read_error(path, inner)
    return read_error(paths[0], exc)
