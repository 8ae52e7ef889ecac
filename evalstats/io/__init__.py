"""Loaders: every source format into the canonical observation table (see DESIGN.md).

Each loader returns an :class:`Ingest` ``(observations, report)``. :func:`read` picks the loader
from ``format`` or detects it from the files.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from evalstats.errors import IngestError, ParameterError

if TYPE_CHECKING:
    from evalstats._frames import TableLike
from evalstats.io._pipeline import MetricRange, metric_options
from evalstats.io._report import FormatCount, Ingest, IngestReport, SetAsideExample
from evalstats.io.table import read_table

__all__ = [
    "FORMATS",
    "FormatCount",
    "Ingest",
    "IngestReport",
    "SetAsideExample",
    "detect_format",
    "read",
    "read_table",
]


def _lazy(module: str, name: str) -> Callable[..., Ingest]:
    def call(*args: Any, **kwargs: Any) -> Ingest:
        import importlib

        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    call.__name__ = name
    call.target = (module, name)  # type: ignore[attr-defined]
    return call


#: Command-line flag of each loader option, for messages.
_FLAGS = {
    "columns": "--columns",
    "on_invalid": "--on-invalid",
    "score_scale": "--score-scale",
    "metric": "--metric",
    "scorer": "--metric",
}


def _check_options(format: str, loader: Callable[..., Ingest], options: dict[str, Any]) -> None:
    """Raise ParameterError for an option the loader does not take (never a TypeError)."""
    import importlib
    import inspect

    target = getattr(loader, "target", None)
    function = getattr(importlib.import_module(target[0]), target[1]) if target else loader
    params = inspect.signature(function).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    accepted = [n for n, p in params.items() if p.kind is inspect.Parameter.KEYWORD_ONLY]
    for name in options:
        if name not in accepted:
            flag = _FLAGS.get(name)
            raise ParameterError(
                f"`{name}`{f' ({flag})' if flag else ''} is not an option of the {format} "
                f"loader; its options: {', '.join(accepted)}."
            )


#: Loader of each ``--format`` name. Detection order is the order below (table last).
FORMATS: dict[str, Callable[..., Ingest]] = {
    # formats: one line per loader; keep "table" last (it accepts anything tabular)
    "dove": _lazy("evalstats.io.dove", "read_dove"),
    "llm-stability": _lazy("evalstats.io.llm_stability", "read_llm_stability"),
    "lm-eval": _lazy("evalstats.io.lm_eval", "read_lm_eval"),
    "lm-eval-api": _lazy("evalstats.io.lm_eval_api", "read_lm_eval_api"),
    "arena-hard": _lazy("evalstats.io.arena_hard", "read_arena_hard"),
    "lighteval": _lazy("evalstats.io.lighteval", "read_lighteval"),
    "bfcl": _lazy("evalstats.io.bfcl", "read_bfcl"),
    "inspect": _lazy("evalstats.io.inspect_log", "read_inspect"),
    "reliable-eval": _lazy("evalstats.io.reliable_eval", "read_reliable_eval"),
    "state-of-what-art": _lazy("evalstats.io.state_of_what_art", "read_state_of_what_art"),
    "openai-evals": _lazy("evalstats.io.openai_evals", "read_openai_evals"),
    "helm": _lazy("evalstats.io.helm", "read_helm"),
    "every-eval-ever": _lazy("evalstats.io.every_eval_ever", "read_every_eval_ever"),
    "json-records": _lazy("evalstats.io.json_records", "read_json_records"),
    "table": read_table,
}

#: Detectors: format name -> function(path) -> bool, tried in order; ``table`` is the fallback.
DETECTORS: dict[str, Callable[[Path], bool]] = {
    "dove": _lazy("evalstats.io.dove", "detect_dove"),  # type: ignore[dict-item]
    "llm-stability": _lazy("evalstats.io.llm_stability", "detect_llm_stability"),  # type: ignore[dict-item]
    "lm-eval": _lazy("evalstats.io.lm_eval", "detect_lm_eval"),  # type: ignore[dict-item]
    "lm-eval-api": _lazy("evalstats.io.lm_eval_api", "detect_lm_eval_api"),  # type: ignore[dict-item]
    "arena-hard": _lazy("evalstats.io.arena_hard", "detect_arena_hard"),  # type: ignore[dict-item]
    "lighteval": _lazy("evalstats.io.lighteval", "detect_lighteval"),  # type: ignore[dict-item]
    "bfcl": _lazy("evalstats.io.bfcl", "detect_bfcl"),  # type: ignore[dict-item]
    "inspect": _lazy("evalstats.io.inspect_log", "detect_inspect"),  # type: ignore[dict-item]
    "reliable-eval": _lazy("evalstats.io.reliable_eval", "detect_reliable_eval"),  # type: ignore[dict-item]
    "state-of-what-art": _lazy("evalstats.io.state_of_what_art", "detect_state_of_what_art"),  # type: ignore[dict-item]
    "openai-evals": _lazy("evalstats.io.openai_evals", "detect_openai_evals"),  # type: ignore[dict-item]
    "helm": _lazy("evalstats.io.helm", "detect_helm"),  # type: ignore[dict-item]
    "every-eval-ever": _lazy("evalstats.io.every_eval_ever", "detect_every_eval_ever"),  # type: ignore[dict-item]
    "json-records": _lazy("evalstats.io.json_records", "detect_json_records"),  # type: ignore[dict-item]
}


#: Formats whose detector can take a single Parquet file; the others look for text (JSON, JSON
#: Lines, CSV, zip archives) in a file, so that a ``.parquet`` file is not given to them (their
#: modules are not even imported: a tenth of ``evalstats ingest`` on a million rows).
PARQUET_FORMATS = ("dove", "lighteval")


def detect_format(path: str | Path) -> str:
    """Name of the loader that fits ``path`` (``table`` when no specific format matches)."""
    p = Path(path)
    parquet = p.name.lower().endswith(".parquet") and p.is_file()
    for name, detect in DETECTORS.items():
        if parquet and name not in PARQUET_FORMATS:
            continue
        try:
            if detect(p):
                return name
        except OSError:
            continue
    return "table"


def read(
    path: str | Path | Sequence[str | Path] | TableLike,
    *,
    format: str = "auto",
    metric_range: MetricRange | Mapping[str, MetricRange] | None = None,
    higher_is_better: bool | Mapping[str, bool] | None = None,
    metrics: Sequence[str] | None = None,
    copies: Literal["set_aside", "keep"] = "set_aside",
    **options: Any,
) -> Ingest:
    r"""Read ``path`` with the loader named by ``format`` (``auto`` detects it).

    Parameters
    ----------
    path : str, Path, list of them, or a table in memory
        File, glob, folder or list of files; or a polars, pandas or pyarrow table, read by the
        table loader's rules (:func:`read_table`). With ``format='auto'`` a folder, glob or list is
        read file by file: each file by the format it fits, the formats' tables joined and
        counted per format in ``report.by_format`` (``report.format`` is then ``mixed``); a
        data file that no format reads, or that its format cannot read, is set aside whole and
        listed in ``report.files_set_aside`` with its reason and what would read it (see
        :mod:`evalstats.io._mixed` and :mod:`evalstats.io._degrade`).
    format : str, default 'auto'
        One of ``auto`` and the keys of :data:`FORMATS`. An explicit format reads only its
        own files; the report notes the data files of other formats left unread.
    metric_range : (low, high) or mapping of str to (low, high), optional
        Declared bounds of every metric, or per metric name (None for an unbounded side), on
        the metric's scale as analysed (after any ``score_scale`` division). Overrides what the
        format declares; scores outside are invalid.
    higher_is_better : bool or mapping of str to bool, optional
        Direction of every metric, or per metric name. Overrides the format's.
    metrics : sequence of str, optional
        Keep only the rows of these metrics (the others are set aside as ``other_metric`` and
        counted). To choose which metric an lm-eval log is read for, use its ``metric=``
        option; for an Inspect log, ``scorer=``.
    copies : {'set_aside', 'keep'}, default 'set_aside'
        A file whose bytes equal those of an earlier file read (under another name or folder)
        is a copy, not another run, model or dataset: its rows are set aside as
        ``duplicate_file`` and counted, and a note names both files. ``'keep'`` reads it like
        any file (two runs of a perfectly deterministic model in a format that records no run
        time are byte-for-byte equal too; lm-eval's results file tells its runs apart).
    **options
        Passed to the loader (``columns``, ``on_invalid``, ``score_scale``, ...).

    Returns
    -------
    Ingest

    Raises
    ------
    ParameterError
        If ``format`` is unknown, or a metric declaration is malformed.
    IngestError
        A file cannot be read (in a folder: no file can be, the others being set aside and
        listed in ``report.files_set_aside``); a row is invalid (unless ``on_invalid='skip'``);
        in a folder, files of two formats hold the same observation (unless
        ``on_invalid='skip'``), or item-level and unit-level files are mixed (their unit table
        is :func:`evalstats.aggregate.read_units`).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "latency.csv"
    >>> _ = f.write_text("model,item,latency\na,1,0.8\na,2,1.4\n")
    >>> obs, report = read(f, columns={"latency": "score"}, metric_range=(0, None),
    ...                    higher_is_better=False)
    >>> [m.describe() for m in report.metrics]
    ['latency: range [0, inf), lower is better']
    """
    if format != "auto" and format not in FORMATS:
        raise ParameterError(
            f"`format` must be 'auto' or one of {', '.join(map(repr, FORMATS))}, got {format!r}."
        )
    from evalstats._frames import describe, is_table

    if format == "auto" and options.get("records") is not None:
        format = "json-records"  # only JSON records are found by a records path
    if is_table(path):  # a table in memory: the table loader's rules, as for a CSV file
        if format not in ("auto", "table"):
            raise ParameterError(
                f"a {describe(path)} is read as a table (format='table'); format={format!r} "
                "reads files. Inspect analysis frames: evalstats.from_inspect."
            )
        format = "table"
    with metric_options(
        metric_range=metric_range,
        higher_is_better=higher_is_better,
        metrics=metrics,
        copies=copies,
    ):
        return read_routed(path, format, options, _read_one)


def _read_one(path: Any, format: str, options: dict[str, Any]) -> Ingest:
    _check_options(format, FORMATS[format], options)
    return FORMATS[format](path, **options)


def read_routed(
    path: Any,
    format: str,
    options: dict[str, Any],
    reader: Callable[[Any, str, dict[str, Any]], Any],
) -> Any:
    """Read ``path`` with ``reader(path, format, options)``, one format at a time.

    ``format='auto'`` on a folder, glob or list looks at every file (see
    :mod:`evalstats.io._mixed`): one format reads the path as given; several formats read their
    own files and are joined with counts per format. A data file that no format reads, or
    that its format cannot read, is set aside whole with its reason and the flag that would
    read it (``report.files_set_aside``); the other files are read
    (:mod:`evalstats.io._degrade`). Only a folder none of whose files can be read stops.
    """
    from evalstats._frames import is_table
    from evalstats.io._degrade import read_degrading, with_files_set_aside
    from evalstats.io._mixed import combine, route, unreadable_error, unreadable_file

    if is_table(path):
        return reader(path, "table", options)
    from evalstats.io._files import refuse_special

    refuse_special(path)  # a device or a FIFO: refused before anything opens it
    routing = route(path, DETECTORS)
    if routing is not None and routing.denied and not routing.files and not routing.unreadable:
        f, why = routing.denied[0]
        more = f" (and {len(routing.denied) - 1} more)" if len(routing.denied) > 1 else ""
        raise IngestError(f"{why}{more}; nothing else in the folder is data.", path=str(f))
    if format != "auto":  # the user's choice: other files are not read, and the report says so
        return _unread(_noted(reader(path, format, options), routing), routing, format)
    if routing is None or not routing.files:
        if format == "auto":
            format = detect_format(path) if not isinstance(path, (list, tuple)) else "table"
            if format == "table" and str(path).lower().endswith(".json"):
                format = "json-records"  # no table is .json: its records, or where to find them
        return _noted(reader(path, format, options), routing)
    if routing.unreadable and not routing.files:
        raise unreadable_error(path, routing)
    # a file no format reads, or one its format cannot read, is set aside; the rest is read
    aside = [unreadable_file(f) for f in routing.unreadable]
    if len(routing.files) == 1:
        name = routing.formats[0]
        one, more, first = read_degrading(
            lambda p: reader(p, name, options),
            path,
            routing.files[name],
            routing.companions.get(name, []),
            routing.unreadable,
        )
        if one is None:
            raise first  # type: ignore[misc]
        return with_files_set_aside(_noted(one, routing), [*aside, *more])
    parts = []
    first_error = None
    for name, files in routing.files.items():
        taken = {
            k: v
            for k, v in options.items()
            if (_takes(FORMATS[name], k) or k in _READ_OPTIONS)
            # `--metric NAME` picks the lm-eval metric; it does not rename a table's metric
            and not (k == "metric" and name != "lm-eval" and "lm-eval" in routing.files)
        }
        one, more, first = read_degrading(
            lambda p, name=name, taken=taken: reader(p, name, taken), files, files
        )
        aside.extend(more)
        first_error = first_error or first
        if one is not None:
            parts.append((name, one))
    if not parts:
        raise first_error  # type: ignore[misc]
    if len(parts) == 1:
        return with_files_set_aside(_noted(parts[0][1], routing, mixed=True), aside)
    joined = combine(parts, on_invalid=options.get("on_invalid", "error"))
    return with_files_set_aside(_noted(joined, routing, mixed=True), aside)


#: Options every format takes (through :func:`read` and its metric declarations).
_READ_OPTIONS = (
    "on_invalid",
    "score_scale",
    "metric_range",
    "higher_is_better",
    "metrics",
    "copies",
)


def _unread(ingest: Any, routing: Any, format: str) -> Any:
    """Note the data files of other formats that an explicit ``format`` left unread."""
    if routing is None:
        return ingest
    from dataclasses import replace

    read = {str(Path(s)) for s in ingest.report.sources}
    mine = {str(f) for f in routing.companions.get(format, [])}
    left: dict[str, list[Path]] = {}
    for name, files in [*routing.files.items(), ("no format", routing.unreadable)]:
        for f in files:
            if str(f) not in read and str(f) not in mine:
                left.setdefault(name, []).append(f)
    if not left:
        return ingest
    n = sum(map(len, left.values()))
    kinds = ", ".join(f"{k}: {len(v)}" for k, v in left.items())
    names = [f.name for v in left.values() for f in v]
    shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
    note = (
        f"not read: {n} data file(s) that are not {format} files ({kinds}): {shown}; "
        "without --format each file is read by its own format"
    )
    report = replace(ingest.report, notes=(*ingest.report.notes, note))
    return type(ingest)(ingest[0], report)


def _takes(loader: Callable[..., Ingest], option: str) -> bool:
    try:
        _check_options("", loader, {option: None})
    except ParameterError:
        return False
    return True


def _noted(ingest: Any, routing: Any, *, mixed: bool = False) -> Any:
    """Add the routing's notes (files that are not data; companions; hidden) to the report."""
    if routing is None:
        return ingest
    from dataclasses import replace

    from evalstats.io._files import skipped_note

    notes = [routing.note()]
    if mixed:
        notes.append(skipped_note(routing.hidden))
        for name, files in routing.companions.items():
            shown = ", ".join(f.name for f in files[:5]) + (", ..." if len(files) > 5 else "")
            notes.append(
                f"{len(files)} file(s) taken as {name} companions (results, metadata or "
                f"listings read beside the data, not rows): {shown}"
            )
    notes = [n for n in notes if n and n not in ingest.report.notes]
    if routing.denied:  # unreadable files and folders of the walk: set aside, counted, listed
        from evalstats.io._degrade import with_files_set_aside
        from evalstats.io._report import FileSetAside

        ingest = with_files_set_aside(
            ingest,
            [
                FileSetAside(
                    str(f), why, "read permission for this user (chmod, or run as its owner)"
                )
                if "cannot" in why
                else FileSetAside(str(f), why, None)
                for f, why in routing.denied
            ],
        )
    if not notes:
        return ingest
    report = replace(ingest.report, notes=(*ingest.report.notes, *notes))
    return type(ingest)(ingest[0], report)
