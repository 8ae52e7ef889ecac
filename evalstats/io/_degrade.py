"""Folders read file by file: a file that cannot be read is set aside, the others are read.

One odd file used to stop a whole folder (an agentic Inspect log over a size cap, a log whose
scorer gives words, a JSON file of no known format): the user saw one error and no table. Now a
loader's :class:`~evalstats.errors.IngestError` that names one file of the folder, and no row of
it, sets that file aside (:class:`~evalstats.io._report.FileSetAside`: the file, the error it gave, and the flag or
setting that would read it) and the loader reads the other files again. Rows of a file set aside
are unknown, so they are not counted in ``rows_read``; the report lists the file instead. Only
when no file of the folder can be read is the first error raised. An invalid row (a score that
is not a number, a duplicate) is not an unreadable file: ``on_invalid`` decides, as for one file
(an error naming the file and row, or with ``on_invalid='skip'`` the row set aside and counted).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from evalstats.errors import EvalstatsError, IngestError
from evalstats.io._report import FileSetAside

__all__ = ["hint_of", "read_degrading", "with_files_set_aside"]


def _key(p: object) -> str:
    try:
        return str(Path(str(p)).resolve())
    except (OSError, RuntimeError):
        return str(p)


def hint_of(exc: IngestError) -> str | None:
    """The flag, option or setting that would read the file ``exc`` names (None if none).

    Examples
    --------
    >>> hint_of(IngestError("bigger than the cap; set EVALSTATS_MAX_LOG_BYTES=900000000"))
    'EVALSTATS_MAX_LOG_BYTES=900000000'
    >>> hint_of(IngestError("expected a number, got 'maybe'", path="a.json", row=2))
    '--on-invalid skip (sets the invalid rows aside and counts them)'
    """
    text = str(exc)
    var = re.search(r"EVALSTATS_[A-Z_]+(?:=\d+)?", text)
    if var:
        return var.group(0)
    if "no sample has a score" in text:
        return "score the log first (`inspect score`)"
    flag = re.search(r"\(CLI: (--[a-z-]+[^)]*)\)", text)
    if flag:
        return flag.group(1)
    if exc.row is not None or "--on-invalid skip" in text:
        return "--on-invalid skip (sets the invalid rows aside and counts them)"
    return None


def _reason(exc: IngestError) -> str:
    where = []
    if exc.row is not None:
        where.append(f"row {exc.row}")
    if exc.column is not None:
        where.append(f"column {exc.column!r}")
    reason = getattr(exc, "reason", None) or str(exc)
    return f"{', '.join(where)}: {reason}" if where else reason


def read_degrading(
    read: Callable[[Any], Any],
    path: Any,
    files: Sequence[Path],
    companions: Sequence[Path] = (),
    known_aside: Sequence[Path] = (),
) -> tuple[Any | None, list[FileSetAside], IngestError | None]:
    """``read(path)``; a file it cannot read is set aside and the rest read again.

    Returns the ingest (None when no file could be read), the files set aside, and the first
    error (to raise when nothing was read). An error that names no file of ``files`` is not a
    file's fault and is raised (the first file's error instead, when files were set aside
    before it: the user's options named what those files held). ``known_aside`` are files
    already set aside (no format reads them) that a loader given the whole folder may still
    open: when one of them fails, the loader reads its own ``files`` instead.
    """
    remaining = list(files)
    aside: list[FileSetAside] = []
    first: IngestError | None = None
    current = path
    while True:
        try:
            return read(current), aside, first
        except IngestError as exc:
            if exc.path is not None and current is path and exc.row is None:
                if _key(exc.path) in {_key(f) for f in known_aside}:
                    current = [*remaining, *companions]  # a file listed already: read the rest
                    continue
            keys = {_key(f): f for f in remaining}
            bad = keys.get(_key(exc.path)) if exc.path is not None else None
            if bad is None or exc.row is not None:
                # an invalid row is not an unreadable file: `on_invalid` decides (an error
                # naming the file and row, or the row set aside and counted)
                raise (first or exc) from None
            first = first or exc
            aside.append(FileSetAside(str(bad), _reason(exc), hint_of(exc)))
            remaining.remove(bad)
            if not remaining:
                return None, aside, first
            current = [*remaining, *companions]
        except EvalstatsError:
            # the files left no longer fit the user's options (a --metric for the task of a
            # file set aside): that file's own error is the one to show
            if first is not None:
                raise first from None
            raise


def with_files_set_aside(ingest: Any, files: Sequence[FileSetAside]) -> Any:
    """``ingest`` whose report also lists ``files`` as set aside."""
    if not files:
        return ingest
    report = ingest[1]
    known = {f.path for f in report.files_set_aside}
    added = tuple(f for f in files if f.path not in known)
    report = replace(report, files_set_aside=(*report.files_set_aside, *added))
    return type(ingest)(ingest[0], report)
