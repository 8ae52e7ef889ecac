"""Folders that mix formats: every file read by its own format, or a stop that lists the rest.

A folder given with ``format='auto'`` used to be detected as one format, and the files of the
other formats were never opened (an lm-eval folder with a CSV beside it: the CSV's rows were
gone without a note). :func:`route` now looks at every file: the specific formats' detectors
first, then the companion files a format reads or skips by design (an lm-eval results file,
State of What Art paraphrase metadata, an Inspect ``logs.json``), then tables by suffix.

- One format for every data file: the loader reads the path as before (its folder rules, such
  as the Inspect eval-set retries or the State of What Art metadata twin, apply unchanged).
- Several formats: each loader reads its own files, and the tables and reports are joined
  (:func:`combine`); the report lists files and rows per format.
- A file with a data suffix that no format reads (a ``.json`` that is no known log, a ``.eval``
  that is not a zip) is set aside whole and listed in ``report.files_set_aside`` with what
  would read it; the ingest stops only when no file is readable. Files with other suffixes
  (``README.md``, ``LICENSE``) are not data: the report notes how many were left out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from evalstats.errors import IngestError
from evalstats.io._files import TABLE_SUFFIXES, cannot_open, is_hidden, walk_files
from evalstats.io._pipeline import widest_range
from evalstats.io._report import FileSetAside, FormatCount, IngestReport

__all__ = ["Routing", "combine", "route"]

#: Suffixes some loader reads; a file with another suffix is not data.
DATA_SUFFIXES = (*TABLE_SUFFIXES, ".json", ".eval")

_SHOWN = 5


def _suffix_of(f: Path) -> str | None:
    name = f.name.lower()
    return next((s for s in sorted(DATA_SUFFIXES, key=len, reverse=True) if name.endswith(s)), None)


def _head(f: Path, n: int = 4096) -> str:
    try:
        with open(f, "rb") as fh:
            return fh.read(n).decode("utf-8", errors="ignore").lstrip()
    except OSError:
        return ""


def _lm_eval_companion(f: Path) -> bool:
    """An lm-eval results file (``results_<date>.json`` or ``<task>_<date>.json``)."""
    head = _head(f)
    return (
        f.suffix == ".json" and head.startswith("{") and ('"results"' in head or '"config"' in head)
    )


def _state_of_what_art_companion(f: Path) -> bool:
    """Paraphrase metadata or the published per-task metrics of the State of What Art release."""
    from evalstats.io.state_of_what_art import ACC_FOLDER, META_FOLDER

    if any((d / ACC_FOLDER).is_dir() for d in f.parents[1:]):
        # a file of a release folder as published (its aggregated rankings, its metrics): the
        # loader reads the accuracy tables and names the rest in a note
        return True
    if f.suffix.lower() != ".csv":
        return False
    if META_FOLDER in f.parts or "metric results" in f.parts:
        return True
    first = _head(f, 512).splitlines()[:1]
    return bool(first) and first[0].startswith(("prompt idx", "benchmark,task"))


def _json_companion(f: Path) -> bool:
    """A ``.json`` the loader itself reads or skips with a note (``logs.json``, a data file)."""
    return f.suffix == ".json"


#: Suffixes each specific format's detector can say yes to (the others are not asked).
DETECTED_SUFFIXES: dict[str, tuple[str, ...]] = {
    "dove": (".parquet", ".pq"),
    "llm-stability": (".csv", ".csv.gz"),
    "lm-eval": (".jsonl", ".json"),
    "lm-eval-api": (".json",),
    "arena-hard": (".jsonl",),
    "lighteval": (".parquet",),
    "bfcl": (".json",),
    "inspect": (".eval", ".json"),
    "reliable-eval": (".json",),
    "state-of-what-art": (".csv",),
    "openai-evals": (".jsonl", ".log"),
    "helm": (".json",),
    "every-eval-ever": (".json", ".jsonl"),
    "json-records": (".json",),
}


#: Files a format reads beside its data, or skips by design, when it is in the folder.
def _lighteval_companion(f: Path) -> bool:
    """LightEval's ``results_<date>.json`` (the aggregates the details files are read beside)."""
    head = _head(f)
    return f.suffix == ".json" and head.startswith("{") and '"config_general"' in head


def _bfcl_companion(f: Path) -> bool:
    """BFCL's score files and leaderboard tables, read or skipped beside its result files.

    ``BFCL_v<N>_<category>_score.json`` is read with its result file; ``bfcl evaluate`` also
    writes ``score/data_overall.csv`` and the like (aggregates).
    """
    import re

    if re.match(r"^BFCL_v\d+_.+_score\.json$", f.name):
        return True
    if f.name.endswith("_score.json") and "score" in f.parts[:-1]:
        return True  # before the versioned names (2024): score/<model>/<category>_score.json
    return f.name.startswith("data_") and f.suffix == ".csv" and "score" in f.parts


COMPANIONS: dict[str, Callable[[Path], bool]] = {
    "lighteval": _lighteval_companion,
    "bfcl": _bfcl_companion,
    "lm-eval": _lm_eval_companion,
    "state-of-what-art": _state_of_what_art_companion,
    "inspect": _json_companion,
    "reliable-eval": _json_companion,
    "helm": _json_companion,
    "every-eval-ever": _json_companion,
}


@dataclass(frozen=True)
class Routing:
    """How a path is read: the files of each format, and the files no format reads."""

    files: dict[str, list[Path]] = field(default_factory=dict)
    companions: dict[str, list[Path]] = field(default_factory=dict)
    unreadable: list[Path] = field(default_factory=list)
    not_data: list[Path] = field(default_factory=list)
    hidden: list[Path] = field(default_factory=list)
    #: files and folders of the walk that cannot be read (no permission, a FIFO): ``(path, why)``
    denied: list[tuple[Path, str]] = field(default_factory=list)

    @property
    def formats(self) -> list[str]:
        """Formats with data files, in detection order."""
        return list(self.files)

    def note(self) -> str | None:
        """The report note on files that are not data (None when there are none)."""
        if not self.not_data:
            return None
        shown = ", ".join(f.name for f in self.not_data[:_SHOWN])
        more = ", ..." if len(self.not_data) > _SHOWN else ""
        return (
            f"not read: {len(self.not_data)} file(s) that are not data by their suffix "
            f"({shown}{more})"
        )


def _is_multi(path: object) -> bool:
    if isinstance(path, (list, tuple)):
        return True
    p = Path(path)  # type: ignore[arg-type]
    return p.is_dir() or (not p.exists() and any(ch in str(path) for ch in "*?["))


def _files(
    path: object, hidden: list[Path], denied: list[tuple[Path, str]] | None = None
) -> list[Path]:
    import glob

    if denied is None:
        denied = []
    if isinstance(path, (list, tuple)):
        return [f for p in path for f in _files(p, hidden, denied)]
    p = Path(path)  # type: ignore[arg-type]
    if p.is_dir():
        found, problems = walk_files(p)
        denied.extend((f, why) for f, why in problems if not is_hidden(f, p))
        hidden.extend(f for f in found if is_hidden(f, p))
        return [f for f in found if not is_hidden(f, p)]
    if p.is_file():
        return [p]
    found = sorted(Path(f) for f in glob.glob(str(path), recursive=True) if Path(f).is_file())
    hidden.extend(f for f in found if is_hidden(f))
    return [f for f in found if not is_hidden(f)]


def route(path: object, detectors: Mapping[str, Callable[[Path], bool]]) -> Routing | None:
    r"""The format of every file under ``path``; None when ``path`` is one file (or nothing).

    ``detectors`` maps format names to their detectors (:data:`evalstats.io.DETECTORS`), tried
    in order; tables are recognised by suffix.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "a.csv").write_text("model,item,score\nm,1,1\n")
    >>> _ = (d / "README.md").write_text("notes")
    >>> from evalstats.io import DETECTORS
    >>> r = route(d, DETECTORS)
    >>> r.formats, [f.name for f in r.not_data]
    (['table'], ['README.md'])
    """
    if not _is_multi(path):
        return None
    hidden: list[Path] = []
    denied: list[tuple[Path, str]] = []
    files = _files(path, hidden, denied)
    by_format: dict[str, list[Path]] = {}
    rest: list[Path] = []
    not_data: list[Path] = []
    for f in files:
        # a .log is data only when it is an OpenAI-evals record log (other logs are text)
        if _suffix_of(f) is None and not f.name.lower().endswith(".log"):
            not_data.append(f)
            continue
        why = cannot_open(f)
        if why is not None:  # no read permission: set aside and counted, not skipped
            denied.append((f, f"cannot be read ({why})"))
            continue
        for name, detect in detectors.items():
            suffixes = DETECTED_SUFFIXES.get(name)
            if suffixes is not None and not f.name.lower().endswith(suffixes):
                continue
            try:
                hit = detect(f)
            except (OSError, ValueError):
                hit = False
            if hit:
                by_format.setdefault(name, []).append(f)
                break
        else:
            (rest if _suffix_of(f) is not None else not_data).append(f)
    companions: dict[str, list[Path]] = {}
    unreadable: list[Path] = []
    for f in rest:
        owner = next((n for n in by_format if n in COMPANIONS and COMPANIONS[n](f)), None)
        if owner is not None:
            companions.setdefault(owner, []).append(f)
        elif any(f.name.lower().endswith(s) for s in TABLE_SUFFIXES):
            by_format.setdefault("table", []).append(f)
        else:
            unreadable.append(f)
    if "table" in by_format:  # detection order: table last
        by_format["table"] = by_format.pop("table")
    return Routing(by_format, companions, unreadable, not_data, hidden, denied)


def unreadable_file(f: Path) -> FileSetAside:
    """A data file no format reads, set aside with what would read it."""
    from evalstats.io._aggregates import recognise

    known = recognise(f)
    if known is not None:  # a harness's summary: said to be one, with its numbers
        return FileSetAside(str(f), *known)
    return FileSetAside(
        str(f),
        f"matches no format (a {_suffix_of(f) or f.suffix} file that is no known log or table)",
        (
            "--records PATH.TO.LIST, if it holds records (see docs/formats/json-records.md); "
            if f.suffix.lower() == ".json"
            else ""
        )
        + "--format NAME, if it is a file of one of the formats (see docs/formats)",
    )


def unreadable_error(path: object, routing: Routing) -> IngestError:
    """The one-line stop for data files that no format reads."""
    files = routing.unreadable
    shown = ", ".join(str(f) for f in files[:_SHOWN]) + (", ..." if len(files) > _SHOWN else "")
    read = "; ".join(f"{len(v)} {k}" for k, v in routing.files.items())
    return IngestError(
        f"{len(files)} file(s) match no format, so the folder cannot be read whole: {shown}"
        + (f" (readable: {read})" if read else "")
        + ". Move them out, or name the files or the --format to read.",
        path=", ".join(map(str, path)) if isinstance(path, (list, tuple)) else str(path),
    )


def combine(parts: Sequence[tuple[str, tuple]], *, on_invalid: str = "error") -> tuple:
    """Join the ingests of several formats: one table, one report with counts per format.

    ``parts`` are ``(format, Ingest)`` (a lazy observation table) or ``(format, UnitIngest)``
    (a unit table); the result is of the same kind. A row whose key (model, dataset, metric,
    variant, run and item) appears in the files of two formats is the same observation
    recorded twice: an error, or, for observations with ``on_invalid='skip'``, the later
    format's copy is set aside as ``duplicate_across_formats`` and counted.
    """
    eager = isinstance(parts[0][1][0], pl.DataFrame)
    if eager:
        on_invalid = "error"  # unit rows of two formats cannot be told apart item by item
    else:
        has_item = {name: "item" in ing[0].collect_schema() for name, ing in parts}
        if len(set(has_item.values())) > 1:
            items = ", ".join(n for n, h in has_item.items() if h)
            units = ", ".join(n for n, h in has_item.items() if not h)
            raise IngestError(
                f"the folder mixes item-level files ({items}) with unit-level files ({units}: "
                "one score per configuration, no item column); one observation table cannot "
                "hold both. Read them separately, or build the unit table of all of them "
                "(evalstats ingest, read_units)."
            )
    frames = [
        ing[0].lazy().with_columns(pl.lit(i, dtype=pl.Int32).alias("__fmt"))
        for i, (_, ing) in enumerate(parts)
    ]
    obs = pl.concat(frames, how="diagonal_relaxed")
    schema = obs.collect_schema()
    key = [c for c in ("model", "dataset", "metric", "variant", "run", "item") if c in schema]
    clash = (
        obs.group_by(key)
        .agg(pl.col("__fmt").n_unique().alias("__k"), pl.col("__fmt").unique().sort())
        .filter(pl.col("__k") > 1)
        .collect()
    )
    extra = 0
    if clash.height:
        first = clash.row(0, named=True)
        fmts = [parts[i][0] for i in first["__fmt"]]
        where = ", ".join(f"{k}={first[k]!r}" for k in key)
        if on_invalid != "skip":
            raise IngestError(
                f"{clash.height} observation(s) appear in files of two formats ({' and '.join(fmts)}), "
                f"e.g. {where}. Remove one copy, or pass on_invalid='skip' (CLI: --on-invalid "
                "skip) to keep the first format's."
            )
        keep = pl.col("__fmt") == pl.col("__fmt").min().over(key)
        obs = obs.filter(keep)
        extra = int(
            pl.concat(frames, how="diagonal_relaxed").select((~keep).sum()).collect().item()
        )
    reports = [ing[1] for _, ing in parts]
    declared: dict[str, tuple[str, object]] = {}
    widened: list[str] = []
    for name, r in zip([p[0] for p in parts], reports):
        for m in r.metrics:
            before = declared.get(m.name, (None, None))[1]
            if before is not None and before != m and before.higher_is_better == m.higher_is_better:  # type: ignore[attr-defined]
                wide = widest_range(before, m)  # type: ignore[arg-type]
                widened.append(
                    f"metric {m.name!r} is {before.describe()!r} in the {declared[m.name][0]} "  # type: ignore[attr-defined]
                    f"files and {m.describe()!r} in the {name} files: read with the widest "
                    f"range, {wide.describe()!r} (declare one with --metric-range)"
                )
                declared[m.name] = (declared[m.name][0], wide)
                continue
            if m.name in declared and declared[m.name][1] != m:
                raise IngestError(
                    f"metric {m.name!r} is {declared[m.name][1].describe()!r} in the "  # type: ignore[attr-defined]
                    f"{declared[m.name][0]} files and {m.describe()!r} in the {name} files; "
                    "declare one range and direction (--metric-range, --lower-is-better)."
                )
            declared.setdefault(m.name, (name, m))
    counts = tuple(
        FormatCount(name, len(r.sources), r.rows_read, r.rows_kept)
        for name, r in zip([p[0] for p in parts], reports)
    )
    base = IngestReport.combine(reports, format="mixed")
    set_aside = dict(base.set_aside)
    if extra:
        set_aside["duplicate_across_formats"] = extra
    report = IngestReport(
        format="mixed",
        sources=base.sources,
        rows_read=base.rows_read,
        rows_kept=base.rows_kept - extra,
        set_aside=set_aside,
        examples=base.examples,
        notes=(*base.notes, *widened),
        metrics=tuple(
            declared[m.name][1] if m.name in declared else m  # type: ignore[misc]
            for m in base.metrics
        ),
        by_format=counts,
        files_set_aside=base.files_set_aside,
    )
    out = obs.drop("__fmt")
    return type(parts[0][1])(out.collect() if eager else out, report)
