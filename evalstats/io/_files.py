"""Finding and opening source files (one file, a glob, or a folder)."""

from __future__ import annotations

import glob
import gzip
import io
import os
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from evalstats.errors import IngestError
from evalstats.io._rows import read_error

__all__ = [
    "TABLE_SUFFIXES",
    "expand_paths",
    "max_member_bytes",
    "read_capped",
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


#: Default cap on the decompressed size of one compressed member or stream (256 MiB); set
#: ``EVALSTATS_MAX_MEMBER_BYTES`` to change it. A 2 MB archive can hold a member of 2 GiB of
#: zeros: decompressed members are streamed and stop at the cap instead of filling memory.
DEFAULT_MAX_MEMBER_BYTES = 256 * 2**20

_CHUNK = 2**20


def max_member_bytes() -> int:
    """The cap on one decompressed member, from ``EVALSTATS_MAX_MEMBER_BYTES`` or the default.

    Examples
    --------
    >>> max_member_bytes() > 0
    True
    """
    raw = os.environ.get("EVALSTATS_MAX_MEMBER_BYTES")
    if raw is None or not raw.strip():
        return DEFAULT_MAX_MEMBER_BYTES
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value <= 0:
        raise IngestError(
            f"EVALSTATS_MAX_MEMBER_BYTES must be a positive whole number of bytes; got {raw!r}."
        )
    return value


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
    apple = sum(1 for f in skipped if f.name.startswith("._"))
    shown = ", ".join(str(f) for f in skipped[:3]) + (", ..." if len(skipped) > 3 else "")
    return (
        f"skipped {len(skipped)} hidden file(s) ({apple} macOS AppleDouble '._*' "
        f"companion(s)): {shown}"
    )


def expand_paths(
    path: str | Path | Sequence[str | Path],
    suffixes: Sequence[str] = TABLE_SUFFIXES,
    *,
    skipped: list[Path] | None = None,
) -> list[Path]:
    """Files named by ``path``: a file, a glob pattern, a folder (searched recursively), or a list.

    Hidden files and folders (names starting with ``.``, among them macOS AppleDouble ``._*``
    files) found by a folder walk or a glob are left out and appended to ``skipped`` (when given)
    so that the loader can count them in its report; a file named explicitly is always read.

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
    p = Path(path)
    if p.is_dir():
        found = sorted(
            f
            for f in p.rglob("*")
            if f.is_file() and any(str(f).lower().endswith(s) for s in suffixes)
        )
        files = [f for f in found if not is_hidden(f, p)]
        if skipped is not None:
            skipped.extend(f for f in found if is_hidden(f, p))
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
        files = [f for f in found if not is_hidden(f)]
        if skipped is not None:
            skipped.extend(f for f in found if is_hidden(f))
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
            lf = pl.scan_parquet(path)
        elif suffix in (".csv", ".tsv"):
            sep = "\t" if suffix == ".tsv" else ","
            header = pl.scan_csv(path, separator=sep, infer_schema_length=0).collect_schema()
            lf = pl.scan_csv(
                path,
                separator=sep,
                infer_schema_length=10000,
                schema_overrides=_text_columns(header.names(), text_columns),
            )
        elif suffix in (".jsonl", ".ndjson"):
            if _bad_json_lines(path):
                lf = _json_lines_frame(path.read_bytes(), path, text_columns)
            else:
                lf = pl.scan_ndjson(path, infer_schema_length=10000)
                inferred = lf.collect_schema()
                overrides = _text_columns(inferred.names(), text_columns)
                _check_scalar(inferred, overrides, path)
                if overrides:
                    lf = pl.scan_ndjson(path, infer_schema_length=10000, schema_overrides=overrides)
        elif suffix in (".jsonl.gz", ".ndjson.gz"):
            with gzip.open(path, "rb") as fh:
                data = read_capped(fh, "the gzip stream", path)
            if not data.strip():
                raise IngestError("the file is empty (no JSON lines).", path=str(path))
            if _bad_json_lines(io.BytesIO(data)):
                lf = _json_lines_frame(data, path, text_columns)
            else:
                lf = pl.read_ndjson(io.BytesIO(data), infer_schema_length=10000).lazy()
        elif suffix in (".csv.gz", ".tsv.gz"):
            lf = pl.read_csv(
                path, separator="\t" if suffix == ".tsv.gz" else ",", infer_schema_length=10000
            ).lazy()
        else:
            raise IngestError(
                f"unknown file type; expected one of {', '.join(TABLE_SUFFIXES)}.", path=str(path)
            )
        names = lf.collect_schema().names()
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
        else pl.scan_csv(source, **opts)  # type: ignore[arg-type]
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
