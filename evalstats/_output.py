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

import errno
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from evalstats.errors import OutputError

if TYPE_CHECKING:
    import polars as pl

__all__ = [
    "FIGURE_SUFFIXES",
    "FORMULA_START",
    "check_inside",
    "csv_safe",
    "csv_safe_lazy",
    "csv_safe_text",
    "save_figure",
    "writing",
]

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
        if isinstance(exc, OSError) and exc.errno in (errno.EEXIST, errno.ENOTDIR, errno.EISDIR):
            reason = _in_the_way(Path(path), exc) or reason
        raise OutputError(f"{what} {str(path)!r}: {reason}.") from None


def _in_the_way(path: Path, exc: OSError) -> str | None:
    """Which file stands where a folder is needed (or a folder where the file goes), if any."""
    if exc.errno == errno.EISDIR or (path.is_dir() and exc.errno == errno.EEXIST):
        return f"{str(path)!r} is a folder; name a file"
    for parent in (path, *path.parents):
        if parent.exists() or parent.is_symlink():
            if not parent.is_dir() and (parent != path or exc.errno == errno.EEXIST):
                return f"{str(parent)!r} is a file, where a folder is needed"
            return None
    return None


#: What matplotlib writes, by suffix (``savefig`` adds ``.png`` to a name without one).
FIGURE_SUFFIXES = (".png", ".pdf", ".svg", ".jpg", ".jpeg", ".eps", ".ps", ".tif", ".tiff")


def save_figure(fig: object, path: str | Path, *, flag: str = "--plot", **kwargs: object) -> Path:
    """Save ``fig`` to exactly ``path``: a known suffix, no folder in its place, errors one line.

    matplotlib would write ``plot.png`` for ``plot`` (beside the path given) and a figure
    ``/folder.png`` for ``/folder``; here a path without a figure suffix, or one that is a
    folder, is refused, and a failure to write is an :class:`OutputError` naming the path.

    Examples
    --------
    >>> try:
    ...     save_figure(None, "plot")
    ... except OutputError as e:
    ...     print(e)
    `--plot` must end in .png, .pdf, .svg, .jpg, .jpeg, .eps, .ps, .tif or .tiff, got 'plot' (without a suffix matplotlib would write 'plot.png').
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in FIGURE_SUFFIXES:
        shown = ", ".join(FIGURE_SUFFIXES[:-1]) + " or " + FIGURE_SUFFIXES[-1]
        raise OutputError(
            f"`{flag}` must end in {shown}, got {str(path)!r} (without a suffix matplotlib "
            f"would write {str(path) + '.png'!r})."
        )
    if path.is_dir():
        raise OutputError(f"cannot write {str(path)!r}: it is a folder; name a file.")
    with writing(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, format=suffix[1:], **kwargs)  # type: ignore[attr-defined]
    return path


def check_inside(base: Path, path: Path) -> Path:
    """``path`` if it lies under ``base`` once resolved (``..``, symlinks); else OutputError.

    Writers that build file names from the data (a dataset called ``..``, a model called
    ``x/../..``) check each name with this before writing, so nothing lands outside the
    folder the user gave.
    """
    root = base.resolve()
    full = path.resolve()
    if full != root and root not in full.parents:
        raise OutputError(
            f"refusing to write {str(path)!r}: it resolves to {str(full)!r}, outside the "
            f"folder given ({str(base)!r})."
        )
    return path
