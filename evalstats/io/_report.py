"""The ingest report and the ``Ingest`` pair every loader returns."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NamedTuple

import polars as pl

from evalstats._column_rules import ColumnRule
from evalstats._text import for_terminal, plural, summarise_notes
from evalstats.schema import MetricInfo

__all__ = ["FileSetAside", "FormatCount", "Ingest", "IngestReport", "SetAsideExample"]


@dataclass(frozen=True, slots=True)
class SetAsideExample:
    """One row set aside: where it was and why."""

    reason: str
    path: str
    row: int | None
    column: str | None
    detail: str | None = None

    def describe(self) -> str:
        """One line: ``file, row N, column 'c': reason (detail)``."""
        where = [self.path]
        if self.row is not None:
            where.append(f"row {self.row}")
        if self.column is not None:
            where.append(f"column {self.column!r}")
        tail = f" ({self.detail})" if self.detail else ""
        return f"{', '.join(where)}: {self.reason}{tail}"


@dataclass(frozen=True, slots=True)
class FileSetAside:
    """A file of a folder that could not be read: set aside whole, the others read.

    ``reason`` is the error the file gave on its own; ``hint`` the flag, option or setting that
    would read it (None when there is none).
    """

    path: str
    reason: str
    hint: str | None = None

    def describe(self) -> str:
        """One line: ``file: reason (to read it: hint)``."""
        tail = f" (to read it: {self.hint})" if self.hint else ""
        return f"{self.path}: {self.reason}{tail}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary."""
        return {"path": self.path, "reason": self.reason, "hint": self.hint}


@dataclass(frozen=True, slots=True)
class FormatCount:
    """Files and rows of one format in an ingest (a folder may mix formats)."""

    format: str
    files: int
    rows_read: int
    rows_kept: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary."""
        return {
            "format": self.format,
            "files": self.files,
            "rows_read": self.rows_read,
            "rows_kept": self.rows_kept,
        }


@dataclass(frozen=True, slots=True)
class IngestReport:
    """What a loader read, kept and set aside.

    ``rows_read == rows_kept + sum(set_aside.values())`` always holds; the constructor checks it.

    Attributes
    ----------
    format : str
        The loader that produced the table (``table``, ``dove``, ``llm-stability``, ...).
    sources : tuple of str
        Files read, in order.
    rows_read : int
        Rows (records) found in the sources.
    rows_kept : int
        Rows in the observation table.
    set_aside : Mapping[str, int]
        Rows set aside, by reason (``duplicate``, ``missing_score``, ``unknown_item``, ...).
    examples : tuple of SetAsideExample
        The first few set-aside rows of each reason, with file, row and column.
    notes : tuple of str
        Conversions and decisions worth knowing (a rescaling asked for, a derived column, the
        assumed bounds and direction of each metric).
    metrics : tuple of MetricInfo
        Every metric of the rows kept: name, bounds and direction, as the table's metric columns
        carry them (see :mod:`evalstats.schema`).
    by_format : tuple of FormatCount
        Files and rows per format, in reading order: one entry, unless a folder mixed formats
        (``format`` is then ``mixed``).
    columns : tuple of ColumnRule
        What the loader decided about source columns beyond their canonical roles (a column of
        free text left out, a task configuration that makes variants), each with its
        evidence; :func:`evalstats.design.infer_design` starts from these.
    errors : Mapping[str, int]
        Rows kept that record an errored call, by error class (``rate_limit``,
        ``server_error``, ``timeout``, ``empty``, ``truncated``, ...; see
        :mod:`evalstats.io._errors`). They are part of ``rows_kept``.
    errors_unscored : int
        How many of them carry no score: the provider audit counts them, every other analysis
        reads scored rows only.
    files_set_aside : tuple of FileSetAside
        Files of a folder that could not be read, each with its reason and what would read it.
        Their rows are unknown, so they are not in ``rows_read``; the other files were read.
    """

    format: str
    sources: tuple[str, ...]
    rows_read: int
    rows_kept: int
    set_aside: Mapping[str, int] = field(default_factory=dict)
    examples: tuple[SetAsideExample, ...] = ()
    notes: tuple[str, ...] = ()
    metrics: tuple[MetricInfo, ...] = ()
    by_format: tuple[FormatCount, ...] = ()
    columns: tuple[ColumnRule, ...] = ()
    errors: Mapping[str, int] = field(default_factory=dict)
    errors_unscored: int = 0
    files_set_aside: tuple[FileSetAside, ...] = ()

    def __post_init__(self) -> None:
        clean = {k: int(v) for k, v in sorted(self.set_aside.items()) if int(v) > 0}
        object.__setattr__(self, "set_aside", MappingProxyType(clean))
        errs = {k: int(v) for k, v in sorted(self.errors.items()) if int(v) > 0}
        object.__setattr__(self, "errors", MappingProxyType(errs))
        if not 0 <= self.errors_unscored <= sum(errs.values()) <= self.rows_kept:
            raise AssertionError(  # a bug in a loader, never a user error
                f"ingest error counts broken: {self.errors_unscored} unscored of "
                f"{sum(errs.values())} errored rows, {self.rows_kept} kept"
            )
        if not self.by_format:
            counts = FormatCount(self.format, len(self.sources), self.rows_read, self.rows_kept)
            object.__setattr__(self, "by_format", (counts,))
        if self.rows_read != self.rows_kept + sum(clean.values()):
            raise AssertionError(  # a bug in a loader, never a user error
                f"ingest accounting broken: read {self.rows_read} != kept {self.rows_kept} "
                f"+ set aside {sum(clean.values())}"
            )

    @property
    def rows_set_aside(self) -> int:
        """Total rows set aside."""
        return sum(self.set_aside.values())

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary."""
        return {
            "format": self.format,
            "sources": list(self.sources),
            "rows_read": self.rows_read,
            "rows_kept": self.rows_kept,
            "set_aside": dict(self.set_aside),
            "examples": [
                {
                    "reason": e.reason,
                    "path": e.path,
                    "row": e.row,
                    "column": e.column,
                    "detail": e.detail,
                }
                for e in self.examples
            ],
            "notes": list(self.notes),
            "metrics": [m.to_dict() for m in self.metrics],
            "by_format": [c.to_dict() for c in self.by_format],
            "columns": [
                {"column": c.column, "role": c.role, "evidence": c.evidence} for c in self.columns
            ],
            "errors": dict(self.errors),
            "errors_unscored": self.errors_unscored,
            "files_set_aside": [f.to_dict() for f in self.files_set_aside],
        }

    def to_json(self) -> str:
        """The report as a JSON string."""
        return json.dumps(self.to_dict(), indent=2)

    def summary(self) -> str:
        """Human-readable multi-line summary (the CLI prints it to stderr)."""
        n_src = len(self.sources)
        lines = [
            f"ingest ({self.format}): {plural(n_src, 'file')}, "
            f"{plural(self.rows_read, 'row')} read, {self.rows_kept} kept, "
            f"{self.rows_set_aside} set aside"
        ]
        if len(self.by_format) > 1:
            for c in self.by_format:
                lines.append(
                    f"  {c.format}: {plural(c.files, 'file')}, "
                    f"{plural(c.rows_read, 'row')} read, {c.rows_kept} kept"
                )
        if self.errors:
            n_err = sum(self.errors.values())
            classes = ", ".join(f"{v} {k}" for k, v in self.errors.items())
            lines.append(
                f"  kept {plural(n_err, 'errored call')} ({classes}), "
                f"{self.errors_unscored} without a score (counted by the provider audit; other "
                "analyses read scored rows only)"
            )
        for reason, count in self.set_aside.items():
            lines.append(f"  set aside {count} x {reason}")
            for ex in self.examples:
                if ex.reason == reason:
                    lines.append(f"    e.g. {ex.describe()}")
        if self.files_set_aside:
            lines.append(
                f"  set aside {plural(len(self.files_set_aside), 'file')} that could not be "
                "read (the others were read):"
            )
            for f in self.files_set_aside:
                lines.append(f"    {f.describe()}")
        shown, left = summarise_notes(self.notes)
        for note in shown:
            lines.append(f"  note: {note}" if not note.startswith("... and ") else f"  {note}")
        if left:
            lines.append(f"  ({left} more notes in all: --json lists every one)")
        # names and notes quote the input: one visible line each, never a terminal escape
        return "\n".join(for_terminal(line) for line in lines)

    def __str__(self) -> str:
        return self.summary()

    @classmethod
    def combine(cls, reports: Iterable[IngestReport], *, format: str | None = None) -> IngestReport:
        """Sum several reports (one per file or per source) into one."""
        reports = list(reports)
        set_aside: dict[str, int] = {}
        errors: dict[str, int] = {}
        for r in reports:
            for k, v in r.set_aside.items():
                set_aside[k] = set_aside.get(k, 0) + v
            for k, v in r.errors.items():
                errors[k] = errors.get(k, 0) + v
        return cls(
            format=format or (reports[0].format if reports else "unknown"),
            sources=tuple(s for r in reports for s in r.sources),
            rows_read=sum(r.rows_read for r in reports),
            rows_kept=sum(r.rows_kept for r in reports),
            set_aside=set_aside,
            examples=tuple(e for r in reports for e in r.examples),
            notes=tuple(n for r in reports for n in r.notes),
            metrics=tuple({m.name: m for r in reports for m in r.metrics}.values()),
            columns=tuple({c.column: c for r in reports for c in r.columns}.values()),
            errors=errors,
            errors_unscored=sum(r.errors_unscored for r in reports),
            files_set_aside=tuple(f for r in reports for f in r.files_set_aside),
        )


class Ingest(NamedTuple):
    """What every loader returns: the observation table and the ingest report.

    Unpack it (``obs, report = read_table(path)``) or use the fields.
    """

    observations: pl.LazyFrame
    report: IngestReport
