"""Two structures of judge and provider dumps the table loader reads without a mapping.

**Letter grades.** A text column whose values are only Inspect's grade letters (``C``
correct, ``I`` incorrect, ``P`` partial, ``N`` no answer; ``inspect_ai.scorer.value_to_float``
maps them to 1, 0, 0.5 and 0) is a score on that scale: the score column when it holds them,
else the one column of the file that does. Beside the letters it may hold a call status
(``ERROR``, ``failed``, ``timeout``, an HTTP code): such a row is an errored call with no
score, and its error text is the status followed by the row's free text (where producers write
the API's message), so that the class (:func:`evalstats.io._errors.error_class`) is read
from the message, not only from the word ``ERROR``.

**Repeated calls without a run index.** A table with items and no run column in which *every*
(model, dataset, metric, configuration, item) cell holds two or more rows, and those rows are
not all copies of one another, records repeated calls: they are numbered ``run`` 0, 1, ... in
file order within their cell. A few repeated cells, or exact copies, stay duplicates (set
aside and counted).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import polars as pl

__all__ = ["GRADES", "grade_columns", "grade_score", "number_runs", "status_error"]

#: Inspect's grade letters and their scores (``value_to_float``'s defaults).
GRADES: dict[str, float] = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}

#: A value that reports how a call ended rather than grading it.
_STATUS = re.compile(
    r"^(error|errored|err|failed|failure|fail|exception|timeout|timed[ _-]?out|refused|"
    r"rate[ _-]?limit(ed)?|api[ _-]?error|[45]\d\d)$",
    re.IGNORECASE,
)

#: Most distinct values looked at before a column is not a grade column.
_MAX_VALUES = 16


def _is_grades(values: Sequence[str | None]) -> bool:
    vals = {v.strip() for v in values if v is not None and v.strip()}
    letters = vals & set(GRADES)
    return bool(vals & {"C", "I"}) and all(v in letters or _STATUS.match(v) for v in vals)


def _values(lf: pl.LazyFrame, column: str) -> list[str | None] | None:
    """The distinct values of ``column`` (None: more than a grade column can have)."""
    try:
        got = (
            lf.select(
                pl.col(column).cast(pl.String).str.strip_chars().unique().head(_MAX_VALUES + 1)
            )
            .collect()
            .to_series()
            .to_list()
        )
    except pl.exceptions.PolarsError:  # an unreadable file: the accounting pass names it
        return None
    return got if len(got) <= _MAX_VALUES else None


def grade_columns(lf: pl.LazyFrame, candidates: Sequence[str]) -> list[str]:
    """The columns of ``candidates`` (text columns) that hold only grade letters and statuses.

    Examples
    --------
    >>> lf = pl.LazyFrame({"grade": ["C", "I", "ERROR"], "choice": ["A", "C", "B"]})
    >>> grade_columns(lf, ["grade", "choice"])
    ['grade']
    """
    schema = lf.collect_schema()
    out = []
    for c in candidates:
        if schema[c] not in (pl.String, pl.Categorical):
            continue
        values = _values(lf, c)
        if values is not None and _is_grades(values):
            out.append(c)
    return out


def grade_score(column: str) -> pl.Expr:
    """``column``'s grades as scores (``C`` 1, ``I`` 0, ``P`` 0.5, ``N`` 0; a status null).

    Examples
    --------
    >>> df = pl.DataFrame({"g": ["C", "I", "P", "N", "ERROR", None]})
    >>> df.select(grade_score("g")).to_series().to_list()
    [1.0, 0.0, 0.5, 0.0, None, None]
    """
    g = pl.col(column).cast(pl.String).str.strip_chars()
    return g.replace_strict(GRADES, default=None, return_dtype=pl.Float64).alias(column)


def status_error(column: str, text: Sequence[str]) -> pl.Expr:
    """The error of a row whose grade column holds a status: the status, then the row's text.

    Null on graded rows. ``text`` names the row's free-text columns (the response, or the
    columns the loader leaves out as text), where the API's message is written.

    Examples
    --------
    >>> df = pl.DataFrame({"g": ["C", "ERROR"], "raw": ["fine", "Error code: 429"]})
    >>> df.select(status_error("g", ["raw"])).to_series().to_list()
    [None, 'ERROR: Error code: 429']
    """
    g = pl.col(column).cast(pl.String).str.strip_chars()
    is_status = g.is_not_null() & ~g.is_in(list(GRADES)) & (g != "")
    msg = pl.concat_str(
        [g, *[pl.col(c).cast(pl.String) for c in text]], separator=": ", ignore_nulls=True
    )
    return pl.when(is_status).then(msg).otherwise(pl.lit(None, dtype=pl.String))


def number_runs(lf: pl.LazyFrame, key: Sequence[str]) -> tuple[pl.LazyFrame, str | None]:
    """``lf`` with ``run`` numbered within ``key`` when every cell is repeated (not copies).

    Returns the frame and a note (None: the table was left as it was).

    Examples
    --------
    >>> lf = pl.LazyFrame({"item": ["a", "a", "b", "b"], "s": [1, 0, 1, 1]})
    >>> out, note = number_runs(lf, ["item"])
    >>> out.collect()["run"].to_list(), note is not None
    ([0, 1, 0, 1], True)
    >>> number_runs(lf.filter(pl.col("s") == 1), ["item"])[1] is None   # 'a' once: not runs
    True
    """
    if not key:
        return lf, None
    try:
        # the first row's cell must repeat: one filtering pass settles most tables (a wide
        # table of single calls) before the grouping over every key column
        first = lf.select(key).head(1).collect()
        if first.height == 0:
            return lf, None
        same = pl.all_horizontal(
            pl.col(k).eq_missing(pl.lit(first[k][0], dtype=first.schema[k])) for k in key
        )
        if lf.filter(same).select(pl.len()).collect().item() < 2:
            return lf, None
        sizes = (
            lf.group_by(key)
            .len()
            .select(
                pl.len().alias("cells"),
                pl.col("len").min().alias("lo"),
                pl.col("len").max().alias("hi"),
            )
        )
        cells, lo, hi = sizes.collect().row(0)
        if not cells or lo is None or lo < 2:
            return lf, None
        distinct = lf.unique().select(pl.len()).collect().item()
    except pl.exceptions.PolarsError:  # an unreadable file: the accounting pass names it
        return lf, None
    if distinct <= cells:  # every repeat is a copy of its cell's row: duplicates, not runs
        return lf, None
    lf = lf.with_columns(pl.int_range(pl.len(), dtype=pl.Int64).over(key).alias("run"))
    times = f"{lo} times" if lo == hi else f"{lo} to {hi} times"
    note = (
        f"no run column, and every ({', '.join(key)}) cell is repeated ({times}) with "
        "different rows: the repeated calls are numbered as runs in file order"
    )
    return lf, note
