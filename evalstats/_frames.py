"""Tables in memory from other libraries, as polars frames.

Every public function takes a polars DataFrame or LazyFrame, a pandas DataFrame, a pyarrow Table
or RecordBatch, or any object that exports an Arrow stream (``__arrow_c_stream__``: DuckDB
relations, recent pandas, ...). They are converted here, once, at the boundary.

Why plain conversion and not narwhals: every analysis is written in polars and needs a polars
frame in the end, and polars already converts pandas (``polars.from_pandas``) and Arrow data
(``polars.from_arrow``, the Arrow PyCapsule interface) without copying where it can. narwhals
would add a dependency to reach the same polars frame, and its lowest common API would not let
the analyses use polars' lazy engine. pandas and pyarrow are never imported here: an object is
recognised by its type's module, so the lean install does not need them.

Conversion keeps the values and the column names; it adds nothing: categorical columns become
strings (what the same column reads as from a CSV file), and a pandas index is kept as columns
only when it is named (``set_index("doc_id")``), as a file written with ``to_csv`` would be.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

import polars as pl

from evalstats.errors import SchemaError

if TYPE_CHECKING:
    import pandas
    import pyarrow

__all__ = ["TableLike", "describe", "is_table", "to_polars"]

#: What the public functions accept as a table.
TableLike: TypeAlias = "pl.DataFrame | pl.LazyFrame | pandas.DataFrame | pyarrow.Table"


#: Values (rows times columns) up to which :func:`in_memory` reads a lazy table into memory.
#: Several grouped counts over one wide table cost about a third of the CPU in memory that they
#: cost re-reading the files; above this the counts stream, in bounded memory. 250 million
#: values are about 2 GB.
IN_MEMORY_VALUES = 250_000_000


def in_memory(lf: pl.LazyFrame, n_columns: int) -> pl.LazyFrame:
    """``lf`` read into memory when it holds at most :data:`IN_MEMORY_VALUES` values, else as is.

    One bounded read (a slice one row past the budget) tells which: a table within the budget
    is read once and every later query runs on it; a larger one is left to the streaming
    engine, and the read stopped after the budget's rows.

    Examples
    --------
    >>> lf = pl.LazyFrame({"a": [1, 2, 3]})
    >>> in_memory(lf, 1).collect()["a"].to_list()
    [1, 2, 3]
    """
    budget = max(IN_MEMORY_VALUES // max(n_columns, 1), 1)
    head = lf.head(budget + 1).collect()
    return head.lazy() if head.height <= budget else lf


def _module(obj: Any) -> str:
    return type(obj).__module__.split(".", 1)[0]


def is_table(obj: Any) -> bool:
    """Whether ``obj`` is a table in memory that :func:`to_polars` converts.

    Examples
    --------
    >>> is_table(pl.DataFrame({"a": [1]})), is_table("results.csv")
    (True, False)
    """
    if isinstance(obj, (pl.DataFrame, pl.LazyFrame)):
        return True
    if _module(obj) == "pandas":
        return type(obj).__name__ == "DataFrame"
    if _module(obj) == "pyarrow":
        return type(obj).__name__ in ("Table", "RecordBatch")
    return hasattr(obj, "__arrow_c_stream__") and not isinstance(obj, (str, bytes))


def describe(obj: Any) -> str:
    """The kind of table ``obj`` is, for messages (``'pandas DataFrame'``).

    Examples
    --------
    >>> describe(pl.DataFrame({"a": [1]}).lazy())
    'polars LazyFrame'
    """
    return f"{_module(obj)} {type(obj).__name__}"


def describe_group(group: Mapping[str, Any]) -> str:
    """A group's key for messages: ``model='a', dataset='b'``.

    Examples
    --------
    >>> describe_group({"model": "a", "n": 2})
    "model='a', n=2"
    """
    return ", ".join(f"{k}={v!r}" for k, v in group.items())


def _wrong_type(obj: Any, what: str) -> SchemaError:
    kind = type(obj).__name__
    if isinstance(obj, (str, bytes)) or type(obj).__name__.endswith("Path"):
        hint = (
            f" {obj!r} looks like a path: read files with evalstats.read(path) (any format) "
            "and pass the observations, or give the path to the command line."
        )
    elif _module(obj) == "pandas" and kind == "Series":
        hint = " A pandas Series is one column; pass the DataFrame that holds it."
    elif isinstance(obj, tuple) and len(obj) == 2 and hasattr(obj, "observations"):
        hint = " That is an Ingest: pass its `.observations`."
    else:
        hint = ""
    return SchemaError(
        f"expected {what} as a polars DataFrame or LazyFrame, a pandas DataFrame or a pyarrow "
        f"Table, got {describe(obj) if _module(obj) not in ('builtins',) else kind}.{hint}"
    )


def to_polars(obj: Any, *, what: str = "a table") -> pl.DataFrame | pl.LazyFrame:
    """``obj`` as a polars frame (a polars frame is returned as it is).

    Parameters
    ----------
    obj : polars, pandas or pyarrow table
        See the module docstring for what is accepted.
    what : str, default 'a table'
        How messages name the expected input (``'the observation table'``).

    Returns
    -------
    polars.DataFrame or polars.LazyFrame

    Raises
    ------
    SchemaError
        ``obj`` is not a table (a path, a Series, a list), or a column cannot be converted
        (named in the message). A pandas object column mixing numbers and text is read as
        text, as a CSV file of the same rows would be.

    Examples
    --------
    >>> import pyarrow as pa
    >>> to_polars(pa.table({"model": ["m"], "score": [1.0]})).rows()
    [('m', 1.0)]
    """
    if isinstance(obj, (pl.DataFrame, pl.LazyFrame)):
        return obj
    if not is_table(obj):
        raise _wrong_type(obj, what)
    kind = describe(obj)
    try:
        if _module(obj) == "pandas":
            frame = _from_pandas(obj, kind)
        elif _module(obj) == "pyarrow":
            frame = pl.from_arrow(obj)
        else:
            frame = pl.DataFrame(obj)
    except SchemaError:
        raise
    except (pl.exceptions.PolarsError, TypeError, ValueError, ImportError) as exc:
        raise SchemaError(f"the {kind} cannot be converted to a polars frame ({exc}).") from None
    if not isinstance(frame, pl.DataFrame):  # from_arrow of a chunked array
        raise _wrong_type(obj, what)
    return _strings_for_categories(frame)


def _from_pandas(df: Any, kind: str) -> pl.DataFrame:
    names = list(df.columns)
    bad = [c for c in names if not isinstance(c, str)]
    if bad:
        raise SchemaError(
            f"the {kind} has a column named {bad[0]!r}, not a string; name its columns "
            "(df.columns = [...]) before passing it."
        )
    dup = sorted({c for c in names if names.count(c) > 1})
    if dup:
        raise SchemaError(f"the {kind} has two columns named {dup[0]!r}.")
    named_index = any(n is not None for n in df.index.names)
    try:
        return pl.from_pandas(df, include_index=named_index)
    except Exception:  # a column that does not convert: find it
        pass
    df = df.copy()
    for c in names:
        try:
            pl.from_pandas(df[[c]])
        except Exception as exc:
            if str(df[c].dtype) != "object":
                raise SchemaError(
                    f"the {kind}'s column {c!r} cannot be converted ({type(exc).__name__}: {exc})."
                ) from None
            # numbers and text in one column: text, as a CSV file of the same rows reads it
            # (the loader then names the row whose value is not a number)
            df[c] = [None if v is None or v != v else str(v) for v in df[c].tolist()]
    return pl.from_pandas(df, include_index=named_index)


def _strings_for_categories(frame: pl.DataFrame) -> pl.DataFrame:
    cats = [c for c, t in frame.schema.items() if isinstance(t, (pl.Categorical, pl.Enum))]
    return frame.with_columns(pl.col(cats).cast(pl.String)) if cats else frame
