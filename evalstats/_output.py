"""Files evalstats writes: write failures as one clear error, and cells safe to open.

- :func:`writing`: a full disk (``ENOSPC``), a file-size limit (``EFBIG``), a quota, a
  read-only or vanished place become one :class:`~evalstats.errors.OutputError` naming the
  file, whether Python or polars was writing;
- :func:`csv_safe` / :func:`csv_safe_lazy`: text cells and column names that a spreadsheet
  would run as a formula (they start with ``=``, ``+``, ``-``, ``@``, a tab or a carriage
  return) get a leading apostrophe, as OWASP recommends for CSV files
  (https://owasp.org/www-community/attacks/CSV_Injection). A cell that is a plain number
  (``-0.5``, ``+3``, ``-1e-3``) is left as it is: a spreadsheet reads it as a number, not as a
  formula.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from evalstats.errors import OutputError

if TYPE_CHECKING:
    import polars as pl

__all__ = ["FORMULA_START", "csv_safe", "csv_safe_lazy", "csv_safe_text", "writing"]

#: Characters that make a spreadsheet cell a formula when they start it (OWASP).
FORMULA_START = "=+-@\t\r"

_FORMULA = r"^[=+\-@\t\r]"
_NUMBER = r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$"
_FORMULA_RE = re.compile(_FORMULA)
_NUMBER_RE = re.compile(_NUMBER)


def csv_safe_text(value: str) -> str:
    """``value`` with a leading apostrophe when a spreadsheet would run it as a formula.

    Examples
    --------
    >>> print(csv_safe_text('=HYPERLINK("http://x")'), csv_safe_text("-0.5"), csv_safe_text("-x"))
    '=HYPERLINK("http://x") -0.5 '-x
    """
    if _FORMULA_RE.match(value) and not _NUMBER_RE.match(value):
        return "'" + value
    return value


def _safe_expr(name: str) -> pl.Expr:
    import polars as pl

    col = pl.col(name)
    risky = col.str.contains(_FORMULA) & ~col.str.contains(_NUMBER)
    return pl.when(risky).then(pl.lit("'") + col).otherwise(col).alias(name)


def _text_columns(schema: pl.Schema) -> list[str]:
    import polars as pl

    return [c for c, t in schema.items() if t == pl.String]


def csv_safe(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with its text cells and column names neutralised for CSV (see the module).

    Categorical text is cast to text first; numbers, booleans and nulls are left as they are.
    """
    import polars as pl

    cats = [c for c, t in frame.schema.items() if isinstance(t, (pl.Categorical, pl.Enum))]
    if cats:
        frame = frame.with_columns(pl.col(cats).cast(pl.String))
    cols = _text_columns(frame.schema)
    if cols:
        frame = frame.with_columns(_safe_expr(c) for c in cols)
    return frame.rename({c: csv_safe_text(c) for c in frame.columns if csv_safe_text(c) != c})


def csv_safe_lazy(frame: pl.LazyFrame) -> pl.LazyFrame:
    """As :func:`csv_safe`, lazily (for a table streamed to a CSV file)."""
    import polars as pl

    schema = frame.collect_schema()
    cats = [c for c, t in schema.items() if isinstance(t, (pl.Categorical, pl.Enum))]
    if cats:
        frame = frame.with_columns(pl.col(cats).cast(pl.String))
        schema = frame.collect_schema()
    cols = _text_columns(schema)
    if cols:
        frame = frame.with_columns(_safe_expr(c) for c in cols)
    return frame.rename({c: csv_safe_text(c) for c in schema.names() if csv_safe_text(c) != c})


def _os_message(exc: BaseException) -> str | None:
    """The operating system's reason in ``exc`` (an OSError, or a polars error wrapping one).

    polars' Parquet writer can lose the reason (``Invalid thrift: transport error`` when the
    file-size limit stops it): its message is given with a hint.
    """
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    text = str(exc)
    m = re.search(r"([A-Z][^:()]*?) \(os error \d+\)", text)
    if m:
        return m.group(1)
    if re.search(r"(?i)transport error|io error", text):
        return (
            f"the writer failed ({text.strip()}; is the disk full, or a file-size limit reached?)"
        )
    return None


@contextmanager
def writing(path: str | Path, *, what: str = "cannot write") -> Iterator[None]:
    """Turn a failure to write ``path`` into one :class:`OutputError` naming it.

    The message is ``"<what> '<path>': <the system's reason>."``.

    Examples
    --------
    >>> import errno
    >>> try:
    ...     with writing("out.csv"):
    ...         raise OSError(errno.ENOSPC, "No space left on device")
    ... except OutputError as e:
    ...     print(e)
    cannot write 'out.csv': No space left on device.
    """
    import polars as pl

    try:
        yield
    except OutputError:
        raise
    except BrokenPipeError:
        raise
    except (OSError, pl.exceptions.PolarsError) as exc:
        reason = _os_message(exc)
        if reason is None:
            raise
        raise OutputError(f"{what} {str(path)!r}: {reason}.") from None
