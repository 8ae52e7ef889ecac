"""The observation table and the unit table: columns, dtypes and validation.

Every loader yields the **observation table**, one row per scored model output. Aggregating it
over items gives the **unit table**, one row per (model, dataset, variant, run). Analyses accept
either, and call :func:`validate_observations` or :func:`validate_units` at their boundary so a
hand-built frame gets the same checks as a loaded one.

=============  =========  ==========================================================
column         dtype      meaning
=============  =========  ==========================================================
``model``      String     evaluated object (model, or model@provider)
``dataset``    String     benchmark / task
``item``       String     item id within the dataset (absent for unit-level input)
``variant``    String     one point of the perturbation / configuration space
``run``        Int64      index of an identical repeated run (0 if absent)
``score``      Float64    item score in [0, 1]
factors        any        the dimensions that define ``variant`` (template, shots, ...)
``answer``     String     parsed answer (TARa)
``response``   String     raw output text (TARr, output length)
``gold``       String     reference answer
``input_len``  Int64      whitespace word count of the input
``output_len`` Int64      whitespace word count of the output
``latency_s``  Float64    per-call latency in seconds
``error``      String     null for a clean call, else a category (``api_error``, ...)
=============  =========  ==========================================================

``cumulative_logprob`` (Float64, optional) keeps the summed token log-probability of the output
when a source records it (DOVE); like the other optional columns it is not a factor.

The unit table has ``model, dataset, variant, run, score, n_items``, the factor columns, and
``n_errors`` when the observations carried an ``error`` column.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import polars as pl

from evalstats.errors import SchemaError

__all__ = [
    "KEY_COLUMNS",
    "OBSERVATION_COLUMNS",
    "UNIT_COLUMNS",
    "as_lazy",
    "factor_columns",
    "validate_by",
    "validate_observations",
    "validate_units",
    "variant_key",
]

#: Columns that identify a unit (one model on one dataset under one variant in one run).
KEY_COLUMNS: tuple[str, ...] = ("model", "dataset", "variant", "run")

#: Canonical observation columns and their dtypes, in display order.
OBSERVATION_COLUMNS: dict[str, pl.DataType] = {
    "model": pl.String(),
    "dataset": pl.String(),
    "item": pl.String(),
    "variant": pl.String(),
    "run": pl.Int64(),
    "score": pl.Float64(),
    "answer": pl.String(),
    "response": pl.String(),
    "gold": pl.String(),
    "input_len": pl.Int64(),
    "output_len": pl.Int64(),
    "latency_s": pl.Float64(),
    "error": pl.String(),
    "cumulative_logprob": pl.Float64(),
}

#: Columns of the unit table besides the factor columns.
UNIT_COLUMNS: dict[str, pl.DataType] = {
    "model": pl.String(),
    "dataset": pl.String(),
    "variant": pl.String(),
    "run": pl.Int64(),
    "score": pl.Float64(),
    "n_items": pl.Int64(),
    "n_errors": pl.Int64(),
}

_REQUIRED_OBS = ("model", "dataset", "variant", "run", "score")
_NON_FACTOR = frozenset(OBSERVATION_COLUMNS) | frozenset(UNIT_COLUMNS)


def as_lazy(frame: pl.DataFrame | pl.LazyFrame) -> pl.LazyFrame:
    """Return ``frame`` as a LazyFrame; raise SchemaError for anything that is not a polars frame."""
    if isinstance(frame, pl.LazyFrame):
        return frame
    if isinstance(frame, pl.DataFrame):
        return frame.lazy()
    raise SchemaError(
        f"expected a polars DataFrame or LazyFrame, got {type(frame).__name__}. "
        "Load files with evalstats.read() or convert with polars.from_pandas()."
    )


def factor_columns(columns: Iterable[str]) -> list[str]:
    """Names among ``columns`` that are factor columns (not canonical and not private).

    Examples
    --------
    >>> factor_columns(["model", "dataset", "variant", "run", "score", "template", "shots"])
    ['template', 'shots']
    """
    return [c for c in columns if c not in _NON_FACTOR and not c.startswith("__")]


def variant_key(factors: Sequence[str]) -> pl.Expr:
    """Expression for a stable, readable variant key built from factor columns.

    The key is ``"name=value|name=value"`` in the order given; a null value is written ``null``.
    With no factors every row belongs to the single variant ``"default"``.

    Examples
    --------
    >>> df = pl.DataFrame({"template": ["a", "b"], "shots": [0, 5]})
    >>> df.select(variant_key(["template", "shots"])).to_series().to_list()
    ['template=a|shots=0', 'template=b|shots=5']
    """
    if not factors:
        return pl.lit("default", dtype=pl.String).alias("variant")
    parts = [
        pl.concat_str([pl.lit(f"{f}="), pl.col(f).cast(pl.String).fill_null("null")])
        for f in factors
    ]
    return pl.concat_str(parts, separator="|").alias("variant")


def _columns_hint(names: Iterable[str]) -> str:
    return ", ".join(names)


def validate_by(
    names: Sequence[str], by: Sequence[str] | str, *, table: str = "unit table"
) -> tuple[str, ...]:
    """Check that every column in ``by`` exists; return ``by`` as a tuple.

    Raises
    ------
    SchemaError
        If ``by`` names a column that ``names`` lacks.
    """
    if isinstance(by, str):
        by = (by,)
    by = tuple(by)
    missing = [b for b in by if b not in names]
    if missing:
        raise SchemaError(
            f"`by` names {missing[0]!r}, which is not a column of the {table} "
            f"(columns: {_columns_hint(names)})."
        )
    return by


def _check_dtypes(schema: pl.Schema, expected: dict[str, pl.DataType], table: str) -> None:
    for name, dtype in expected.items():
        if name not in schema:
            continue
        got = schema[name]
        ok = got == dtype
        if not ok and dtype == pl.Float64():
            ok = got.is_numeric()
        if not ok and dtype == pl.Int64():
            ok = got.is_integer()
        if not ok and got == pl.Null():
            ok = True  # an all-null optional column
        if not ok:
            raise SchemaError(
                f"column {name!r} of the {table} must be {dtype}, got {got}. "
                "Loaders produce the right types; a hand-built frame needs a cast."
            )


def _check_scores(lf: pl.LazyFrame, table: str) -> None:
    stats = (
        lf.select(
            pl.col("score").is_null().sum().alias("null"),
            pl.col("score").is_nan().sum().alias("nan"),
            ((pl.col("score") < 0) | (pl.col("score") > 1)).sum().alias("out"),
            pl.col("score").max().alias("max"),
        )
        .collect()
        .row(0, named=True)
    )
    if stats["null"] or stats["nan"] or stats["out"]:
        bad = (
            lf.with_row_index("__row", offset=1)
            .filter(
                pl.col("score").is_null()
                | pl.col("score").is_nan()
                | (pl.col("score") < 0)
                | (pl.col("score") > 1)
            )
            .select("__row", "score")
            .head(1)
            .collect()
            .row(0)
        )
        hint = " Scores look percent-scaled: divide by 100." if (stats["max"] or 0) > 1 else ""
        raise SchemaError(
            f"{table}, row {bad[0]}, column 'score': expected a number in [0, 1], got {bad[1]!r}.{hint}"
        )


def validate_observations(
    frame: pl.DataFrame | pl.LazyFrame, *, require_item: bool = False, check_values: bool = True
) -> pl.LazyFrame:
    """Check an observation table and return it as a LazyFrame with canonical dtypes.

    Parameters
    ----------
    frame : polars.DataFrame or polars.LazyFrame
        Observation table (see the module docstring).
    require_item : bool, default False
        Whether the analysis needs item-level rows (an ``item`` column without nulls).
    check_values : bool, default True
        Also scan the data for null, NaN or out-of-range scores. Costs one pass.

    Returns
    -------
    polars.LazyFrame
        The same rows; ``run`` added as 0 and ``variant`` as ``"default"`` when absent.

    Raises
    ------
    SchemaError
        A required column is missing or mistyped, or a score is outside [0, 1].

    Examples
    --------
    >>> obs = pl.DataFrame({"model": ["m"], "dataset": ["d"], "item": ["1"], "score": [1.0]})
    >>> validate_observations(obs).collect().columns
    ['model', 'dataset', 'item', 'score', 'run', 'variant']
    """
    lf = as_lazy(frame)
    schema = lf.collect_schema()
    if "run" not in schema:
        lf = lf.with_columns(pl.lit(0, dtype=pl.Int64).alias("run"))
    if "variant" not in schema:
        lf = lf.with_columns(variant_key(factor_columns(schema.names())))
    schema = lf.collect_schema()
    required = _REQUIRED_OBS + (("item",) if require_item else ())
    missing = [c for c in required if c not in schema]
    if missing:
        hint = ""
        if missing == ["item"]:
            hint = " This analysis needs item-level rows; the input looks unit-level."
        raise SchemaError(
            f"the observation table has no column {missing[0]!r} "
            f"(columns: {_columns_hint(schema.names())}).{hint}"
        )
    _check_dtypes(schema, OBSERVATION_COLUMNS, "observation table")
    casts = [
        pl.col(c).cast(t) for c, t in OBSERVATION_COLUMNS.items() if c in schema and schema[c] != t
    ]
    if casts:
        lf = lf.with_columns(casts)
    if check_values:
        _check_scores(lf, "observation table")
    return lf


def validate_units(
    frame: pl.DataFrame | pl.LazyFrame, *, check_values: bool = True
) -> pl.LazyFrame:
    """Check a unit table (or accept an observation table and aggregate it).

    An observation table (it has an ``item`` column) is aggregated with
    :func:`evalstats.aggregate.to_units`, so analyses on unit scores accept either table.

    Parameters
    ----------
    frame : polars.DataFrame or polars.LazyFrame
        Unit table, one row per (model, dataset, variant, run).
    check_values : bool, default True
        Also scan the data for null, NaN or out-of-range scores and duplicated units.

    Returns
    -------
    polars.LazyFrame

    Raises
    ------
    SchemaError
        A required column is missing or mistyped, a score is outside [0, 1], or a unit appears
        twice.
    """
    lf = as_lazy(frame)
    schema = lf.collect_schema()
    if "item" in schema:
        from evalstats.aggregate import to_units  # local: aggregate imports schema

        return to_units(lf)
    if "run" not in schema:
        lf = lf.with_columns(pl.lit(0, dtype=pl.Int64).alias("run"))
    if "variant" not in schema:
        lf = lf.with_columns(variant_key(factor_columns(schema.names())))
    if "n_items" not in schema:
        lf = lf.with_columns(pl.lit(None, dtype=pl.Int64).alias("n_items"))
    schema = lf.collect_schema()
    missing = [c for c in ("model", "dataset", "variant", "run", "score") if c not in schema]
    if missing:
        raise SchemaError(
            f"the unit table has no column {missing[0]!r} (columns: {_columns_hint(schema.names())})."
        )
    _check_dtypes(schema, UNIT_COLUMNS, "unit table")
    casts = [pl.col(c).cast(t) for c, t in UNIT_COLUMNS.items() if c in schema and schema[c] != t]
    if casts:
        lf = lf.with_columns(casts)
    if check_values:
        _check_scores(lf, "unit table")
        dup = lf.group_by(KEY_COLUMNS).len().filter(pl.col("len") > 1).head(1).collect()
        if dup.height:
            r = dup.row(0, named=True)
            raise SchemaError(
                "the unit table has more than one row for model={model!r}, dataset={dataset!r}, "
                "variant={variant!r}, run={run}; units must be unique. Give each repeat its own "
                "`run`, or pass item-level rows.".format(**r)
            )
    return lf
