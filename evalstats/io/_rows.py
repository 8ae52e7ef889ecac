"""The pieces of a loader's row checks that the pipeline and the accounting share.

:class:`Check` (a reason to set a row aside), :func:`parse_score` (the raw ``score`` column
parsed), :func:`whole_run` (the raw ``run`` column parsed) and :func:`read_error` (a read
failure turned into an error naming the file). Kept below
both :mod:`evalstats.io._pipeline` and :mod:`evalstats.io._accounting` so neither imports the
other at module level.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from evalstats.errors import IngestError

__all__ = ["N_EXAMPLES", "Check", "json_lines", "parse_score", "read_error", "whole_run"]

#: How many example rows per reason the report keeps.
N_EXAMPLES = 3


def json_lines(text: str) -> list[str]:
    r"""The lines of a JSON Lines text: split on ``\n`` only (``\r\n`` too).

    JSON strings may hold U+2028, U+2029, form feeds and other characters that
    :meth:`str.splitlines` breaks on; JSON Lines separates records by ``\n`` alone.

    Examples
    --------
    >>> json_lines('{"a": "x\u2028y"}\r\n{"a": 2}\n')
    ['{"a": "x\u2028y"}', '{"a": 2}']
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [ln[:-1] if ln.endswith("\r") else ln for ln in lines]


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


def parse_score(dtype: pl.DataType, factor: float = 1.0) -> tuple[pl.Expr, pl.Expr]:
    """Expressions (value, fixed_scale) parsing the raw ``score`` column of ``dtype``.

    Booleans and the strings ``true``/``false`` (any case) become 1/0; strings such as ``"86.4%"``
    are divided by 100; both are flagged ``fixed_scale`` (never rescaled); other strings are cast
    to float (null when they are not numbers, which the caller reports as
    ``unparseable_score``). Other values are multiplied by ``factor`` (the user's rescaling).
    """
    col = pl.col("score")

    def scaled(e: pl.Expr) -> pl.Expr:
        return e if factor == 1.0 else e * factor

    if dtype == pl.Boolean():
        return col.cast(pl.Float64), pl.lit(True)
    if dtype.is_numeric():
        return scaled(col.cast(pl.Float64)), pl.lit(False)
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
        .otherwise(scaled(num))
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
    if isinstance(exc, PermissionError):
        return IngestError(f"the file cannot be read ({exc.strerror}).", path=path)
    if isinstance(exc, OSError):  # a short read: the file changed (grew, shrank) while read
        return IngestError(
            f"cannot read the file ({msg}); if it is being written or changed, read it once it "
            "is complete.",
            path=path,
        )
    return IngestError(f"cannot read the file ({msg}).", path=path)


def whole_run(col: pl.Expr) -> pl.Expr:
    """A run number as Int64, or null when it is not a whole number (``0.5``, ``"x"``, ``inf``).

    Never truncated: ``1.7`` is not run 1 but a row set aside (``invalid_run``, counted).
    """
    f = col.cast(pl.Float64, strict=False)
    ok = f.is_finite() & (f == f.floor()) & (f.abs() < 2.0**53)
    return pl.when(ok).then(f).otherwise(None).cast(pl.Int64)


def clean_name(column: str) -> pl.Expr:
    """``column`` as a name: surrounding whitespace stripped, in Unicode normal form NFC.

    ``' A'``, ``'A '`` and ``'A'`` were three models, and ``café`` written with a combining
    accent (NFD) another model than ``café`` (NFC); a report then said "café has the highest
    ... and café the lowest". A value that is blank once stripped is set aside as
    ``blank_<column>`` (an error unless ``on_invalid='skip'``).
    """
    return pl.col(column).str.strip_chars().str.normalize("NFC").alias(column)
