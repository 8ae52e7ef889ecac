"""Finding and opening source files (one file, a glob, or a folder)."""

from __future__ import annotations

import glob
import gzip
import io
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from evalstats.errors import IngestError
from evalstats.io._pipeline import read_error

__all__ = ["TABLE_SUFFIXES", "expand_paths", "scan_file", "table_suffix"]

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


def table_suffix(path: str | Path) -> str | None:
    """The recognised table suffix of ``path`` (``.jsonl.gz`` counts as one), or None."""
    name = str(path).lower()
    for suf in sorted(TABLE_SUFFIXES, key=len, reverse=True):
        if name.endswith(suf):
            return suf
    return None


def expand_paths(
    path: str | Path | Sequence[str | Path], suffixes: Sequence[str] = TABLE_SUFFIXES
) -> list[Path]:
    """Files named by ``path``: a file, a glob pattern, a folder (searched recursively), or a list.

    Raises
    ------
    IngestError
        If nothing matches.
    """
    if isinstance(path, (list, tuple)):
        out: list[Path] = []
        for p in path:
            out.extend(expand_paths(p, suffixes))
        return out
    p = Path(path)
    if p.is_dir():
        files = sorted(
            f
            for f in p.rglob("*")
            if f.is_file() and any(str(f).lower().endswith(s) for s in suffixes)
        )
        if not files:
            raise IngestError(
                f"the folder holds no files ending in {', '.join(suffixes)}.", path=str(p)
            )
        return files
    if p.exists():
        return [p]
    if any(ch in str(path) for ch in "*?["):
        files = sorted(Path(f) for f in glob.glob(str(path), recursive=True) if Path(f).is_file())
        if not files:
            raise IngestError("the pattern matches no file.", path=str(path))
        return files
    raise IngestError("no such file or folder.", path=str(path))


def scan_file(path: Path) -> pl.LazyFrame:
    """Open one table file lazily by its suffix; raise IngestError naming the file if unreadable."""
    suffix = table_suffix(path)
    try:
        if path.stat().st_size == 0:
            raise IngestError("the file is empty (0 bytes).", path=str(path))
        if suffix in (".parquet", ".pq"):
            lf = pl.scan_parquet(path)
        elif suffix in (".csv", ".tsv"):
            lf = pl.scan_csv(
                path, separator="\t" if suffix == ".tsv" else ",", infer_schema_length=10000
            )
        elif suffix in (".jsonl", ".ndjson"):
            lf = pl.scan_ndjson(path, infer_schema_length=10000)
        elif suffix in (".jsonl.gz", ".ndjson.gz"):
            with gzip.open(path, "rb") as fh:
                data = fh.read()
            if not data.strip():
                raise IngestError("the file is empty (no JSON lines).", path=str(path))
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
    except (pl.exceptions.PolarsError, OSError, EOFError, ValueError) as exc:
        raise read_error(path, exc) from None
    if not names:
        raise IngestError("the file has no columns.", path=str(path))
    return lf
