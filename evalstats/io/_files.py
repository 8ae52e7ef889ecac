"""Finding and opening source files (one file, a glob, or a folder)."""

from __future__ import annotations

import glob
import gzip
import io
import itertools
import os
import re
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from evalstats.errors import IngestError
from evalstats.io._rows import read_error

__all__ = [
    "TABLE_SUFFIXES",
    "cannot_open",
    "refuse_special",
    "special_kind",
    "walk_files",
    "env_bytes",
    "expand_paths",
    "check_line_lengths",
    "csv_header",
    "duplicate_json_keys",
    "max_columns",
    "max_line_bytes",
    "max_member_bytes",
    "polars_path",
    "read_capped",
    "read_compressed",
    "is_hidden",
    "lfs_pointer",
    "scan_file",
    "skipped_note",
    "table_suffix",
]

TABLE_SUFFIXES = (
    ".csv",
    ".tsv",
    ".parquet",
    ".pq",
    ".jsonl",
    ".ndjson",
    ".jsonl.gz",
    ".ndjson.gz",
    ".csv.gz",
    ".tsv.gz",
)


#: Default cap on the decompressed size of compressed input (32 MiB): one ``.gz`` table, or
#: all members of one ``.eval`` archive together; set ``EVALSTATS_MAX_MEMBER_BYTES`` to change
#: it. A 100 KB file can hold gigabytes of zeros: decompressed data is streamed and stops at
#: the cap instead of filling memory. 32 MiB because parsed data takes up to about 40 times its
#: size (a CSV of 6-byte rows written out row by row; JSON of empty objects about 25 times):
#: an input under 10 MB then stays well under 2 GB of memory.
DEFAULT_MAX_MEMBER_BYTES = 32 * 2**20

_CHUNK = 2**20


def env_bytes(name: str, default: int) -> int:
    """A size in bytes from the environment variable ``name`` (``default`` when unset).

    Raises
    ------
    IngestError
        The variable is set to anything but a positive whole number.
    """
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value <= 0:
        raise IngestError(f"{name} must be a positive whole number of bytes; got {raw!r}.")
    return value


def max_member_bytes() -> int:
    """The cap on one decompressed member, from ``EVALSTATS_MAX_MEMBER_BYTES`` or the default.

    Examples
    --------
    >>> max_member_bytes() > 0
    True
    """
    return env_bytes("EVALSTATS_MAX_MEMBER_BYTES", DEFAULT_MAX_MEMBER_BYTES)


#: Default longest line of a CSV, TSV or JSON Lines file (64 MiB); ``EVALSTATS_MAX_LINE_BYTES``.
#: A 2 GiB line made polars abort (exit 134, no message).
DEFAULT_MAX_LINE_BYTES = 64 * 2**20

#: Default most columns of a table (10,000); ``EVALSTATS_MAX_COLUMNS``. A CSV of 10**6
#: columns took polars 23 s to read the header alone, and minutes to ingest.
DEFAULT_MAX_COLUMNS = 10_000


def _env_limit(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value <= 0:
        raise IngestError(f"{name} must be a positive whole number; got {raw!r}.")
    return value


def max_line_bytes() -> int:
    """The longest line a text table may have, from ``EVALSTATS_MAX_LINE_BYTES`` or the default."""
    return _env_limit("EVALSTATS_MAX_LINE_BYTES", DEFAULT_MAX_LINE_BYTES)


def max_columns() -> int:
    """The most columns a table may have, from ``EVALSTATS_MAX_COLUMNS`` or the default."""
    return _env_limit("EVALSTATS_MAX_COLUMNS", DEFAULT_MAX_COLUMNS)


def check_line_lengths(path: Path) -> None:
    """Raise IngestError naming the first line of ``path`` longer than :func:`max_line_bytes`.

    Costs nothing for a file smaller than the limit; a larger one is read once in chunks (the
    newlines are found at memory speed), before polars sees it.
    """
    limit = max_line_bytes()
    try:
        if path.stat().st_size <= limit:
            return
        line, start, offset = 1, 0, 0
        with open(path, "rb") as fh:
            while chunk := fh.read(16 * 2**20):
                pos = chunk.find(b"\n")
                while pos >= 0:
                    if offset + pos - start > limit:
                        break
                    start, line = offset + pos + 1, line + 1
                    pos = chunk.find(b"\n", pos + 1)
                else:
                    offset += len(chunk)
                    if offset - start <= limit:
                        continue
                raise IngestError(
                    f"the line is longer than {limit:,} bytes (the limit; raise it with "
                    "EVALSTATS_MAX_LINE_BYTES if the file is trusted).",
                    path=str(path),
                    row=line,
                )
    except OSError as exc:
        raise read_error(path, exc) from None


def _check_width(names: Sequence[str] | int, path: Path) -> None:
    n = names if isinstance(names, int) else len(names)
    limit = max_columns()
    if n > limit:
        raise IngestError(
            f"the table has {n:,} columns, more than the {limit:,} evalstats reads (raise the "
            "limit with EVALSTATS_MAX_COLUMNS if the file is right).",
            path=str(path),
        )


def csv_header(path: Path, sep: str = ",") -> list[str] | None:
    """The column names of a CSV (or ``.csv.gz``) from its first line; None if unreadable.

    Read with Python's csv module from one line of at most :func:`max_line_bytes` bytes:
    asking polars for the header of a table of 10**6 columns took 23 s, and a header line of
    2 GiB made it abort. Used to detect formats, where a file that is not readable is simply
    not of that format.
    """
    import csv

    limit = max_line_bytes()
    try:
        opener = gzip.open if str(path).lower().endswith(".gz") else open
        with opener(path, "rb") as fh:
            first = fh.readline(limit + 1)
    except (OSError, EOFError):
        return None
    if len(first) > limit:
        return None
    text = first.decode("utf-8", errors="replace").lstrip("\ufeff").rstrip("\r\n")
    try:
        return next(csv.reader([text], delimiter=sep), [])
    except csv.Error:  # a field longer than the csv module's limit: not a header
        return None


def _check_header(first: bytes, sep: str, path: Path) -> None:
    """Raise IngestError for a header line of too many fields or with a name given twice.

    polars renames a second ``score`` column to ``score_duplicated_0``, which then silently
    became a factor (and so the variant); a repeated name is an error naming it.
    """
    import csv

    text = first.decode("utf-8", errors="replace").lstrip("\ufeff").rstrip("\r\n")
    try:
        names = next(csv.reader([text], delimiter=sep), [])
    except csv.Error:  # a field longer than the csv module's limit: count the separators
        _check_width(text.count(sep) + 1, path)
        return
    _check_width(names, path)
    seen: dict[str, int] = {}
    for i, name in enumerate(names, start=1):
        if name in seen:
            raise IngestError(
                f"the header names the column {name!r} more than once (columns {seen[name]} and "
                f"{i}); rename one of them.",
                path=str(path),
                column=name,
            )
        seen[name] = i


def _check_buffer_lines(data: bytes, path: Path) -> None:
    """:func:`check_line_lengths` for a decompressed table held in memory."""
    limit = max_line_bytes()
    if len(data) <= limit:
        return
    start = 0
    while start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        if end - start > limit:
            raise IngestError(
                f"the line is longer than {limit:,} bytes (the limit; raise it with "
                "EVALSTATS_MAX_LINE_BYTES if the file is trusted).",
                path=str(path),
                row=data.count(b"\n", 0, start) + 1,
            )
        start = end + 1


def _trailing_blank_lines(path: Path) -> int:
    """How many blank lines end the text file ``path`` (polars reads each as a row of nulls)."""
    size = path.stat().st_size
    with open(path, "rb") as fh:
        fh.seek(max(size - 65536, 0))
        tail = fh.read()
    ending = tail[len(tail.rstrip(b"\r\n")) :]
    if len(ending) == len(tail):  # nothing but line ends in the last 64 KiB: leave it be
        return 0
    return max(ending.count(b"\n") - 1, 0)


def read_capped(fh, what: str, path: str | Path, cap: int | None = None) -> bytes:
    """Read a decompressing stream ``fh`` in chunks; one IngestError once it passes ``cap``.

    Memory stays within about ``cap`` (plus one chunk) whatever the compression ratio.
    """
    cap = max_member_bytes() if cap is None else cap
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = fh.read(min(_CHUNK, cap + 1 - total))
        if not chunk:
            break
        total += len(chunk)
        if total > cap:
            raise IngestError(
                f"{what} decompresses to more than {cap:,} bytes (the limit; raise it with "
                "EVALSTATS_MAX_MEMBER_BYTES if the file is trusted).",
                path=str(path),
            )
        chunks.append(chunk)
    return b"".join(chunks)


def polars_path(path: str | Path) -> str:
    """``path`` as polars must be given it to read that one file: glob characters escaped.

    polars expands ``*``, ``?`` and ``[...]`` in every path it reads, so a file named
    ``run[1].csv`` was "not found" (a folder holding one was refused whole). Each such
    character is written as a one-character class (``[[]``), which matches only itself.

    Examples
    --------
    >>> polars_path("logs/run[1]*.csv")
    'logs/run[[]1[]][*].csv'
    """
    return re.sub(r"([\[\]*?])", r"[\1]", str(path))


def read_compressed(path: str | Path) -> bytes:
    """The decompressed bytes of a gzip file, read in chunks up to :func:`max_member_bytes`.

    Raises
    ------
    IngestError
        The stream decompresses to more than the limit, or is not gzip.
    """
    with gzip.open(path, "rb") as fh:
        return read_capped(fh, "the gzip stream", path)


def table_suffix(path: str | Path) -> str | None:
    """The recognised table suffix of ``path`` (``.jsonl.gz`` counts as one), or None."""
    name = str(path).lower()
    for suf in sorted(TABLE_SUFFIXES, key=len, reverse=True):
        if name.endswith(suf):
            return suf
    return None


def is_hidden(path: Path, root: Path | None = None) -> bool:
    """Whether ``path`` is hidden below ``root``: a name starting with ``.``.

    This covers the macOS AppleDouble ``._name`` companions of archives made on a Mac.
    """
    parts = path.relative_to(root).parts if root is not None else (path.name,)
    return any(part.startswith(".") for part in parts)


_LFS_HEAD = b"version https://git-lfs.github.com/spec/"


def lfs_pointer(path: Path) -> str | None:
    """The error message for a Git LFS pointer file (None when ``path`` is not one).

    A repository cloned without Git LFS holds, instead of each large file, a ~130-byte text
    naming its hash and size; reading it as data gives confusing parse errors.
    """
    try:
        with open(path, "rb") as fh:
            head = fh.read(512)
    except OSError:
        return None
    if not head.startswith(_LFS_HEAD):
        return None
    text = head.decode("utf-8", errors="replace")
    size = next((ln.split(" ", 1)[1] for ln in text.splitlines() if ln.startswith("size ")), "?")
    return (
        f"this is a Git LFS pointer, not the data ({size} bytes stored in LFS): fetch it with "
        f'`git lfs pull --include "{Path(path).as_posix()}"` in the repository (or '
        "`git lfs install` before cloning)."
    )


def skipped_note(skipped: Sequence[Path]) -> str | None:
    """The ingest-report note for hidden and AppleDouble files left out of a folder or glob."""
    if not skipped:
        return None
    links = [f for f in skipped if str(f) in _LINKS_OUT]
    hidden = [f for f in skipped if str(f) not in _LINKS_OUT]
    notes = []
    if hidden:
        apple = sum(1 for f in hidden if f.name.startswith("._"))
        shown = ", ".join(str(f) for f in hidden[:3]) + (", ..." if len(hidden) > 3 else "")
        notes.append(
            f"skipped {len(hidden)} hidden file(s) ({apple} macOS AppleDouble '._*' "
            f"companion(s)): {shown}"
        )
    if links:
        shown = ", ".join(f"{f} -> {_LINKS_OUT[str(f)]}" for f in links[:3])
        notes.append(
            f"skipped {len(links)} link(s) pointing outside the folder read (name such a file "
            f"itself to read it): {shown}{', ...' if len(links) > 3 else ''}"
        )
    return "; ".join(notes)


#: Files of a folder walk that are links (or lie below links) resolving outside the folder:
#: path -> where it points. Filled by :func:`expand_paths`, read by :func:`skipped_note`.
_LINKS_OUT: dict[str, str] = {}


def _outside(f: Path, root: Path) -> bool:
    """Whether ``f``, found below the folder ``root``, resolves to a file outside it."""
    try:
        target = f.resolve()
    except (OSError, RuntimeError):  # a loop of links
        _LINKS_OUT[str(f)] = "a loop of links"
        return True
    if target.is_relative_to(root):
        return False
    _LINKS_OUT[str(f)] = str(target)
    return True


def special_kind(path: str | Path) -> str | None:
    """What ``path`` is when it exists but is neither a regular file nor a folder, else None.

    Examples
    --------
    >>> special_kind("/dev/null"), special_kind("no/such/file")
    ('a character device', None)
    """
    import stat

    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def refuse_special(path: object, what: str = "input") -> None:
    """Raise IngestError when ``path`` (or an entry of a list) is a device, FIFO or socket.

    Checked before anything is opened: reading ``/dev/zero`` never ends, and opening a FIFO
    waits for a writer. Only regular files and folders are read.
    """
    if isinstance(path, (list, tuple)):
        for p in path:
            refuse_special(p, what)
        return
    if not isinstance(path, (str, os.PathLike)):
        return
    kind = special_kind(path)
    if kind is not None:
        raise IngestError(
            f"the {what} is {kind}, not a regular file; evalstats reads files and folders "
            "only (copy the data to a file first).",
            path=str(path),
        )


def cannot_open(f: Path) -> str | None:
    """Why the regular file ``f`` cannot be opened for reading (None when it can).

    Opened without blocking and closed at once: the permission check that holds for every user
    (``os.access`` says yes to root even where a network file system says no).
    """
    try:
        fd = os.open(f, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    os.close(fd)
    return None


def walk_files(root: Path) -> tuple[list[Path], list[tuple[Path, str]]]:
    """The regular files below the folder ``root`` (sorted), and what could not be read.

    The second list holds ``(path, reason)`` for folders that cannot be listed and files that
    cannot be opened (no read permission) or are not regular files (a FIFO, a device): they
    are set aside and counted by the caller, never skipped without a word. Links to folders
    are not followed (as :meth:`pathlib.Path.rglob`).
    """
    import stat

    files: list[Path] = []
    problems: list[tuple[Path, str]] = []

    def onerror(exc: OSError) -> None:
        where = Path(exc.filename) if exc.filename else root
        problems.append((where, f"the folder cannot be listed ({exc.strerror})"))

    for dirpath, _dirs, names in os.walk(root, onerror=onerror):
        for name in names:
            f = Path(dirpath) / name
            try:
                mode = f.stat().st_mode
            except OSError as exc:  # a dangling link, a file gone
                if f.is_symlink():
                    continue  # a dangling link is not data (rglob left it out too)
                problems.append((f, f"cannot be read ({exc.strerror})"))
                continue
            if stat.S_ISDIR(mode):
                continue  # a link to a folder: not followed
            if not stat.S_ISREG(mode):
                problems.append((f, f"{special_kind(f) or 'not a regular file'}, not read"))
                continue
            files.append(f)
    return sorted(files), sorted(problems)


def expand_paths(
    path: str | Path | Sequence[str | Path],
    suffixes: Sequence[str] = TABLE_SUFFIXES,
    *,
    skipped: list[Path] | None = None,
) -> list[Path]:
    """Files named by ``path``: a file, a glob pattern, a folder (searched recursively), or a list.

    Hidden files and folders (names starting with ``.``, among them macOS AppleDouble ``._*``
    files) found by a folder walk or a glob, and files of a folder walk or a glob that are links
    pointing outside the folder searched (a glob's leading parts without glob characters), are
    left out and appended to ``skipped`` (when given) so that the loader
    can note them in its report; a file named explicitly is always read.

    Raises
    ------
    IngestError
        If nothing matches.
    """
    if isinstance(path, (list, tuple)):
        out: list[Path] = []
        for p in path:
            out.extend(expand_paths(p, suffixes, skipped=skipped))
        return out
    refuse_special(path)
    p = Path(path)
    if p.is_dir():
        found = sorted(
            f
            for f in p.rglob("*")
            if f.is_file() and any(str(f).lower().endswith(s) for s in suffixes)
        )
        # a link out of the folder is not followed: data the user did not point at (a link to
        # ~/.ssh or another project's results) is not read without a word
        root = p.resolve()
        left_out = [f for f in found if is_hidden(f, p) or _outside(f, root)]
        dropped = set(left_out)
        files = [f for f in found if f not in dropped]
        if skipped is not None:
            skipped.extend(left_out)
        if not files:
            raise IngestError(
                f"the folder holds no files ending in {', '.join(suffixes)}"
                + (" (hidden files left out)." if len(found) > len(files) else "."),
                path=str(p),
            )
        return files
    if p.exists():
        return [p]
    if any(ch in str(path) for ch in "*?["):
        found = sorted(Path(f) for f in glob.glob(str(path), recursive=True) if Path(f).is_file())
        # the folder a pattern searches: its leading parts without glob characters
        base = Path(*[q for q in itertools.takewhile(lambda q: not glob.has_magic(q), p.parts)])
        root = base.resolve()
        left_out = [f for f in found if is_hidden(f) or _outside(f, root)]
        dropped = set(left_out)
        files = [f for f in found if f not in dropped]
        if skipped is not None:
            skipped.extend(left_out)
        if not files:
            raise IngestError("the pattern matches no file.", path=str(path))
        return files
    raise IngestError("no such file or folder.", path=str(path))


def _text_columns(names: Sequence[str], extra: Sequence[str]) -> dict[str, pl.DataType]:
    """Schema overrides: columns that may hold a canonical role are read as text.

    Their types are fixed here, not inferred from the first rows: an item id ``q-late`` after
    10,000 numeric ids, or a score ``0.5`` after 10,000 integer scores, reads like any other
    row. The pipeline parses scores (numbers, ``true``/``false``, ``86%``) and runs (whole
    numbers only) from the text.
    """
    from evalstats.io._columns import ALIASES

    roles = ("model", "dataset", "item", "variant", "metric", "run", "score")
    aliases = {a.lower() for r in roles for a in ALIASES.get(r, ())} | set(roles)
    return {n: pl.String for n in names if n.lower() in aliases or n in extra}


def scan_file(path: Path, *, text_columns: Sequence[str] = ()) -> pl.LazyFrame:
    """Open one table file lazily by its suffix; raise IngestError naming the file if unreadable.

    Columns named like a canonical role (or listed in ``text_columns``: the ones the user maps)
    are read as text whatever the first rows hold; other columns' types are inferred from the
    first 10,000 rows.
    """
    suffix = table_suffix(path)
    pointer = lfs_pointer(path)
    if pointer:
        raise IngestError(pointer, path=str(path))
    try:
        if path.stat().st_size == 0:
            raise IngestError("the file is empty (0 bytes).", path=str(path))
        if suffix in (".parquet", ".pq"):
            lf = pl.scan_parquet(polars_path(path))
        elif suffix in (".csv", ".tsv", ".csv.gz", ".tsv.gz"):
            # a compressed table is decompressed under the cap (a 1.5 MB .csv.gz of zeros took
            # 2.4 GB in polars' own reader), then read exactly as the plain file would be
            source: str | bytes = (
                polars_path(path) if suffix in (".csv", ".tsv") else read_compressed(path)
            )
            if isinstance(source, bytes) and not source.strip():
                raise IngestError("the file is empty (no rows once decompressed).", path=str(path))
            sep = "\t" if suffix.startswith(".tsv") else ","
            if isinstance(source, bytes):
                _check_buffer_lines(source, path)
                # blank lines at the end are not rows (polars read each as a row of nulls)
                source = source.rstrip(b"\r\n") + b"\n"
                first = source[: source.find(b"\n")]
                trailing = 0
            else:
                check_line_lengths(path)
                with open(path, "rb") as fh:
                    first = fh.readline(max_line_bytes() + 1)
                trailing = _trailing_blank_lines(path)
            _check_header(first, sep, path)
            header = pl.scan_csv(source, separator=sep, infer_schema_length=0).collect_schema()
            lf = pl.scan_csv(
                source,
                separator=sep,
                infer_schema_length=10000,
                schema_overrides=_text_columns(header.names(), text_columns),
            )
            if trailing:
                lf = (
                    lf.with_row_index("__tail")
                    .filter(pl.col("__tail") < pl.len() - trailing)
                    .drop("__tail")
                )
        elif suffix in (".jsonl", ".ndjson"):
            check_line_lengths(path)
            _check_width(_first_object_width(path), path)
            if _bad_json_lines(path):
                lf = _json_lines_frame(path.read_bytes(), path, text_columns)
            else:
                lf = pl.scan_ndjson(polars_path(path), infer_schema_length=10000)
                inferred = lf.collect_schema()
                overrides = _text_columns(inferred.names(), text_columns)
                _check_scalar(inferred, overrides, path)
                if overrides:
                    lf = pl.scan_ndjson(
                        polars_path(path), infer_schema_length=10000, schema_overrides=overrides
                    )
        elif suffix in (".jsonl.gz", ".ndjson.gz"):
            data = read_compressed(path)
            if not data.strip():
                raise IngestError("the file is empty (no JSON lines).", path=str(path))
            _check_buffer_lines(data, path)
            if _bad_json_lines(io.BytesIO(data)):
                lf = _json_lines_frame(data, path, text_columns)
            else:  # typed as the plain .jsonl is: role columns as text
                inferred = pl.scan_ndjson(io.BytesIO(data), infer_schema_length=10000)
                schema = inferred.collect_schema()
                overrides = _text_columns(schema.names(), text_columns)
                _check_scalar(schema, overrides, path)
                lf = pl.read_ndjson(
                    io.BytesIO(data), infer_schema_length=10000, schema_overrides=overrides or None
                ).lazy()
        else:
            raise IngestError(
                f"unknown file type; expected one of {', '.join(TABLE_SUFFIXES)}.", path=str(path)
            )
        names = lf.collect_schema().names()
        _check_width(names, path)
    except IngestError:
        raise
    except (
        pl.exceptions.PolarsError,
        pl.exceptions.PanicException,
        OSError,
        EOFError,
        ValueError,
    ) as exc:
        raise read_error(path, exc) from None
    if not names:
        raise IngestError("the file has no columns.", path=str(path))
    return lf


#: JSON Lines files up to this size are searched whole for repeated keys; of larger ones, the
#: first 10,000 lines (the lines polars infers the schema from).
_DUPLICATE_KEY_SCAN_BYTES = 64 * 2**20


def duplicate_json_keys(path: Path) -> str | None:
    """A note naming the keys that a line of the JSON Lines file ``path`` gives twice, or None.

    ``{"model": "a", "model": "b"}`` is valid JSON; polars keeps the first value and says
    nothing. Every line is searched when the file is at most 64 MiB (decompressed), else the
    first 10,000 lines.
    """
    import json

    found: list[tuple[int, str]] = []

    def hook(pairs: list[tuple[str, object]]) -> dict:
        seen: set[str] = set()
        for k, _v in pairs:
            if k in seen and len(found) < 1000:
                found.append((line_no, k))
            seen.add(k)
        return {}

    try:
        if str(path).lower().endswith(".gz"):
            lines = io.BytesIO(read_compressed(path))
        else:
            lines = open(path, "rb")  # noqa: SIM115 - closed below
        whole = path.stat().st_size <= _DUPLICATE_KEY_SCAN_BYTES
        with lines:
            for line_no, raw in enumerate(lines, start=1):
                if not whole and line_no > 10_000:
                    break
                if b'"' not in raw:
                    continue
                try:
                    json.loads(raw, object_pairs_hook=hook)
                except (ValueError, RecursionError):
                    continue  # not JSON: the loader sets it aside and names it
    except (OSError, EOFError, IngestError):
        return None  # unreadable: reading the file says so
    if not found:
        return None
    lines_with = sorted({n for n, _k in found})
    shown = "; ".join(f"line {n}: {k!r}" for n, k in found[:5])
    more = ", ..." if len(found) > 5 else ""
    return (
        f"{path}: {len(lines_with)} line(s) give a key more than once ({shown}{more}); "
        "the first value of each is read"
    )


def _first_object_width(path: Path) -> int:
    """How many keys the first JSON line of ``path`` has (0 when it is not an object)."""
    import json

    with open(path, "rb") as fh:
        for raw in fh:
            if raw.strip():
                try:
                    doc = json.loads(raw)
                except (ValueError, RecursionError):
                    return 0
                return len(doc) if isinstance(doc, dict) else 0
    return 0


def _check_scalar(schema: pl.Schema, overrides: dict[str, pl.DataType], path: Path) -> None:
    """A canonical column holding lists or objects (``{"model": ["a"]}``) is one clear line."""
    for name in overrides:
        if name in schema and schema[name].is_nested():
            raise IngestError(
                f"holds {schema[name]} values; expected one text or number per row.",
                path=str(path),
                column=name,
            )


def _lines(source: Path | io.BytesIO) -> pl.LazyFrame:
    """The lines of a text file as one String column ``__text``, numbered from 1 (``__line``).

    Read as a one-column CSV with no quoting and a separator that valid JSON never holds raw
    (control characters must be escaped inside JSON strings), so that this pass streams.
    """
    opts = dict(
        has_header=False,
        separator="\x1f",
        quote_char=None,
        schema={"__text": pl.String},
        truncate_ragged_lines=True,
    )
    lf = (
        pl.read_csv(source, **opts).lazy()  # type: ignore[arg-type]
        if isinstance(source, io.BytesIO)
        else pl.scan_csv(polars_path(source), **opts)  # type: ignore[arg-type]
    )
    return lf.with_row_index("__line", offset=1)


def _bad_json_lines(source: Path | io.BytesIO) -> bool:
    """Whether some non-blank line of a JSON Lines file is not a JSON object.

    A streaming pass at polars speed (about a third of the cost of reading the file): polars'
    own JSON Lines reader stops at the first such line without naming it, and only when it
    gets there (after the schema is inferred), so it is checked up front.
    """
    text = pl.col("__text").str.strip_chars()
    bad = (
        _lines(source)
        .filter(text.str.len_bytes() > 0)
        .filter(~text.str.starts_with("{") | text.str.json_path_match("$").is_null())
        .select(pl.len())
        .collect()
        .item()
    )
    return bool(bad)


def _json_lines_frame(data: bytes, path: Path, text_columns: Sequence[str]) -> pl.LazyFrame:
    """A JSON Lines file with lines that are not JSON objects: one row per line, flagged.

    Every line is a row (so that the row number is the line number); lines that are not a
    JSON object get null columns and ``__bad_json = true``, blank lines null columns (the
    table loader counts them as ``blank_line``). The loader sets the flagged rows aside as
    ``bad_json``, or stops naming the first one.
    """
    import json

    lines = data.split(b"\n")
    if lines and not lines[-1].strip():
        lines.pop()  # the newline that ends the last line does not start another
    good: list[bytes] = []
    good_at: list[int] = []
    bad: list[bool] = []
    for i, raw in enumerate(lines, start=1):
        stripped = raw.strip()
        ok = False
        if stripped:
            try:
                ok = isinstance(json.loads(stripped), dict)
            except (ValueError, RecursionError):
                ok = False
            if ok:
                good.append(stripped)
                good_at.append(i)
        bad.append(bool(stripped) and not ok)
    frame = pl.DataFrame({"__line": range(1, len(lines) + 1), "__bad_json": bad})
    if good:
        rows = pl.read_ndjson(io.BytesIO(b"\n".join(good)), infer_schema_length=10000)
        overrides = _text_columns(rows.columns, text_columns)
        _check_scalar(rows.schema, overrides, path)
        rows = rows.with_columns(
            [pl.col(c).cast(pl.String) for c in overrides if rows.schema[c] != pl.String]
        ).with_columns(pl.Series("__line", good_at, dtype=frame.schema["__line"]))
        frame = frame.join(rows, on="__line", how="left", maintain_order="left")
    return frame.drop("__line").lazy()
