"""JSON files of records: an array of objects, or records nested in an object (``records=``).

Results are often published as one JSON document rather than JSON Lines: an array of records
(``[{"model": ..., "item": ..., "score": ...}, ...]``), or records inside an object, such as a
web app's results file holding an object of models, each a list of cases. The records are read
with the table loader's rules (:func:`evalstats.io.table.read_table`: column roles by alias or
``columns=``, factors, ``dataset=``, ``model=``), one table per file.

Where the records are is said with ``records=`` (CLI ``--records``), a dotted path:

- ``results`` or ``data.items``: the list at that key (a number indexes a list);
- ``*``: every value of an object (or element of a list) at that level;
- ``{name}``: the same, and the key is kept as the column ``name`` (``{model}`` for an object
  of models, each a list of cases; ``questions.{item}`` for an object of records keyed by
  their id: a path that ends on objects reads each as one record).

The scalar fields of the objects the path passes through (a file's top-level ``model`` or
``timestamp``) are kept as columns of its records, unless a record has a field of that name
or the name is one of an item, run, score or prompt (one value for a whole object is none).

Without ``records=``, a top-level array is the records, and an object holding exactly one list
of objects (at any depth up to three keys) is read from that list, with a note; any other
object is an error listing the lists found and the ``records=`` paths that read them. Nested
objects inside a record are flattened with ``.`` (``{"scores": {"acc": 1}}`` gives the column
``scores.acc``), except objects keyed by names with dots (file names), kept whole. See
``docs/formats/json-records.md``.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from evalstats.errors import IngestError, ParameterError, SchemaError
from evalstats.io._aggregates import recognise
from evalstats.io._files import expand_paths, skipped_note
from evalstats.io._pipeline import OnInvalid, ScoreScale, _Planned, validate_options
from evalstats.io._report import Ingest, SetAsideExample

__all__ = ["detect_json_records", "read_json_records"]

#: Largest JSON document the detector parses to look for records (the reader has no cap).
_DETECT_BYTES = 256 * 2**20

_KEY = re.compile(r"^\{(?P<name>[^{}.]+)\}$")


def _parse_spec(spec: str) -> list[str]:
    if not isinstance(spec, str) or not spec.strip():
        raise ParameterError(f"`records` must be a dotted path such as 'data.items', got {spec!r}.")
    parts = spec.strip().split(".")
    if any(not p for p in parts):
        raise ParameterError(
            f"`records` {spec!r} has an empty step (two dots, or a dot at an end)."
        )
    return parts


def _context(node: Any) -> dict[str, Any]:
    """The scalar fields of an object the records path passes through (``model``, ``date``)."""
    if not isinstance(node, dict):
        return {}
    from evalstats.io._columns import ALIASES

    # one value for a whole object cannot be an item, run, score or prompt of its records
    per_row = {a.lower() for r in ("item", "run", "score", "variant") for a in ALIASES[r]}
    return {
        str(k): v
        for k, v in node.items()
        if isinstance(v, (str, int, float, bool)) and str(k).lower() not in per_row
    }


def _walk(
    node: Any, parts: Sequence[str], keys: dict[str, Any], where: str
) -> Iterator[tuple[dict[str, Any], Any, str]]:
    """``(keys and context taken, records, path)`` for everything the path ``parts`` reaches."""
    if not parts:
        yield keys, node, where
        return
    keys = {**_context(node), **keys}
    step, rest = parts[0], parts[1:]
    m = _KEY.match(step)
    if step == "*" or m:
        if isinstance(node, dict):
            items = list(node.items())
        elif isinstance(node, list):
            items = list(enumerate(node))
        else:
            raise IngestError(
                f"records path step {step!r} at {where or 'the top'} meets "
                f"{type(node).__name__}, not an object or a list."
            )
        for k, v in items:
            more = {**keys, m["name"]: k} if m else keys
            yield from _walk(v, rest, more, f"{where}.{k}" if where else str(k))
        return
    if isinstance(node, dict) and step in node:
        yield from _walk(node[step], rest, keys, f"{where}.{step}" if where else step)
        return
    if (
        isinstance(node, list)
        and step.lstrip("-").isdigit()
        and -len(node) <= int(step) < len(node)
    ):
        yield from _walk(node[int(step)], rest, keys, f"{where}.{step}" if where else step)
        return
    shown = ", ".join(map(str, list(node)[:8])) if isinstance(node, dict) else type(node).__name__
    raise IngestError(
        f"records path step {step!r}: no such key at {where or 'the top'} (keys: {shown})."
    )


def _is_records(v: Any) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(x, dict) for x in v)


def _candidates(doc: Any, depth: int = 3) -> list[tuple[str, int]]:
    """Paths of the lists of objects in ``doc`` (up to ``depth`` keys deep), with their lengths."""
    out: list[tuple[str, int]] = []

    def visit(node: Any, where: str, d: int) -> None:
        if _is_records(node):
            out.append((where, len(node)))
            return
        if isinstance(node, dict) and d < depth:
            for k, v in node.items():
                visit(v, f"{where}.{k}" if where else str(k), d + 1)

    visit(doc, "", 0)
    return out


def _groups_of_lists(doc: Any, depth: int = 3) -> list[str]:
    """Paths ``prefix.{key}`` where an object's values are all lists of objects (two or more)."""
    out: list[str] = []

    def visit(node: Any, where: str, d: int) -> None:
        if not isinstance(node, dict) or d > depth:
            return
        if len(node) >= 2 and all(_is_records(v) for v in node.values()):
            out.append(f"{where}.{{key}}" if where else "{key}")
            return
        for k, v in node.items():
            visit(v, f"{where}.{k}" if where else str(k), d + 1)

    visit(doc, "", 0)
    return out


def _auto(doc: Any) -> tuple[str | None, str | None]:
    """The records path that reads ``doc`` unambiguously, and the reason when there is none."""
    if isinstance(doc, list):
        return "", None
    if not isinstance(doc, dict):
        return None, f"the document is {type(doc).__name__}, not an array or an object"
    found = _candidates(doc)
    if len(found) == 1:
        return found[0][0], None
    groups = _groups_of_lists(doc)
    lists = ", ".join(f"{p} ({n} records)" for p, n in found[:6]) + (
        ", ..." if len(found) > 6 else ""
    )
    hint = (
        f"; an object of lists: records='{groups[0]}' reads them all, the key as a column "
        "(name it: '{model}')"
        if groups
        else ""
    )
    return None, (
        f"the object holds {len(found)} lists of records ({lists or 'none'}): name one with "
        f"records=PATH (CLI: --records PATH){hint}"
    )


def _flatten(rec: Mapping[str, Any], prefix: str = "", out: dict | None = None) -> dict:
    out = {} if out is None else out
    for k, v in rec.items():
        name = f"{prefix}{k}"
        # an object keyed by names with dots (file names: {"input.sysml": ...}) is data, not
        # fields: kept whole (a dotted path through it would be ambiguous)
        if isinstance(v, dict) and v and not any("." in str(x) for x in v):
            _flatten(v, f"{name}.", out)
        else:
            out[name] = v
    return out


def _load(f: Path) -> Any:
    if f.stat().st_size == 0:
        raise IngestError("the file is empty (0 bytes).", path=str(f))
    try:
        return json.loads(f.read_bytes())
    except (ValueError, RecursionError) as exc:
        raise IngestError(f"not valid JSON ({exc}).", path=str(f)) from None


def _looks_scored(records: list[dict]) -> bool:
    """Whether the records have a column the table loader takes as a score."""
    from evalstats.io._columns import ALIASES

    names = {str(k).lower() for r in records[:50] for k in _flatten(r)}
    return bool(names & {a.lower() for a in ALIASES["score"]})


def detect_json_records(path: str | Path) -> bool:
    """Whether ``path`` is a JSON file of scored records (an array, or one list in an object).

    Only records with a score column by name (``score``, ``correct``, ``acc``, ...) are taken,
    so that other JSON files (a results summary, a configuration) are not.

    Examples
    --------
    >>> detect_json_records("no/such/file.json")
    False
    """
    p = Path(path)
    if not (p.is_file() and p.suffix.lower() == ".json"):
        return False
    try:
        if p.stat().st_size > _DETECT_BYTES:
            return False
        with open(p, "rb") as fh:
            if fh.read(64).lstrip()[:1] not in (b"[", b"{"):
                return False
        doc = json.loads(p.read_bytes())
    except (OSError, ValueError, RecursionError):
        return False
    where, _ = _auto(doc)
    if where is None:
        return False
    records = doc if where == "" else next(_walk(doc, where.split("."), {}, ""))[1]
    return _is_records(records) and _looks_scored(records)


def read_json_records(
    path: str | Path | Sequence[str | Path],
    *,
    records: str | None = None,
    columns: str | Mapping[str, str] | None = None,
    dataset: str | None = None,
    model: str | None = None,
    metric: str | None = None,
    on_invalid: OnInvalid = "error",
    score_scale: ScoreScale = "auto",
) -> Ingest:
    r"""Read JSON files of records (arrays, or lists nested in an object) as tables.

    Parameters
    ----------
    path : str, Path or sequence of them
        A ``.json`` file, a folder (every ``.json`` below it), a glob or a list.
    records : str, optional
        Where the records are: a dotted path (``data.items``), with ``*`` for every value of
        an object and ``{name}`` for every value with its key kept as the column ``name``
        (``{model}``, ``results.{model}.cases``). Default: the top-level array, or the one list
        of objects in the document.
    columns, dataset, model, metric, on_invalid, score_scale
        As for :func:`evalstats.io.table.read_table`.

    Returns
    -------
    Ingest
        The table loader's observation table; ``report.sources`` name the JSON files.

    Raises
    ------
    IngestError
        A file is not valid JSON, the path finds no list of objects, or no path was given and
        the document holds several lists (the message lists them).

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> doc = {"gpt-4o": [{"id": 1, "correct": True}, {"id": 2, "correct": False}],
    ...        "llama": [{"id": 1, "correct": True}, {"id": 2, "correct": True}]}
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "cases.json"
    >>> _ = f.write_text(json.dumps(doc))
    >>> obs, report = read_json_records(f, records="{model}")
    >>> obs.select("model", "item", "score").collect().rows()
    [('gpt-4o', '1', 1.0), ('gpt-4o', '2', 0.0), ('llama', '1', 1.0), ('llama', '2', 1.0)]
    """
    from evalstats.io.table import read_table

    validate_options(on_invalid, score_scale)
    parts = _parse_spec(records) if records is not None else None
    hidden: list[Path] = []
    files = expand_paths(path, suffixes=(".json",), skipped=hidden)
    if not files:
        raise IngestError("no .json files.", path=str(path))
    tmp = Path(tempfile.mkdtemp(prefix="evalstats-json-records-"))
    names: dict[str, str] = {}
    notes: list[str] = []
    try:
        for k, f in enumerate(files):
            doc = _load(f)
            if parts is None:
                known = recognise(f)
                if known is not None:  # a harness's summary, not records
                    raise IngestError(f"{known[0]}. To read item scores: {known[1]}.", path=str(f))
                where, problem = _auto(doc)
                if where is None:
                    raise IngestError(f"{problem}.", path=str(f))
                steps = where.split(".") if where else []
                if where:
                    notes.append(f"{f.name}: records read from {where!r} (records={where!r})")
            else:
                steps = parts
            try:
                found = list(_walk(doc, steps, {}, ""))
            except IngestError as exc:
                raise IngestError(exc.reason, path=str(f)) from None
            named = {m["name"] for step in steps if (m := _KEY.match(step))}
            out = tmp / f"{k:05d}" / f"{f.stem}.jsonl"
            out.parent.mkdir()
            n = 0
            with open(out, "w", encoding="utf-8") as fh:
                for keys, node, where in found:
                    if isinstance(node, dict):  # an object of records keyed by id: one each
                        node = [node]
                    if not isinstance(node, list):
                        raise IngestError(
                            f"records path {'.'.join(steps)!r} reaches {where or 'the top'}, "
                            f"which is {type(node).__name__}, not a list of records.",
                            path=str(f),
                        )
                    for rec in node:
                        row = _flatten(rec) if isinstance(rec, dict) else {"__not_object": rec}
                        for col, v in keys.items():
                            if col in named and col in row:
                                raise IngestError(
                                    f"records path names the column {col!r}, which the "
                                    f"records at {where} already have; choose another name.",
                                    path=str(f),
                                )
                            if col not in row:  # a record's own field wins over its context
                                row = {col: v, **row}
                        fh.write(json.dumps(row, ensure_ascii=True, default=str) + "\n")
                        n += 1
            if n == 0:
                raise IngestError(
                    f"no records at {'.'.join(steps) or 'the top'} (an empty list).", path=str(f)
                )
            names[str(out)] = str(f)
        temp_files = list(names)
        try:
            ingest = read_table(
                temp_files if len(temp_files) > 1 else temp_files[0],
                columns=columns,
                dataset=dataset,
                model=model,
                metric=metric,
                on_invalid=on_invalid,
                score_scale=score_scale,
            )
        except IngestError as exc:
            raise IngestError(
                _short_columns(exc.reason),
                path=names.get(str(exc.path), exc.path),
                row=exc.row,
                column=exc.column,
            ) from None
        except SchemaError as exc:  # a mapped column not in the records: the real file named
            raise SchemaError(_rename(str(exc), names)) from None
        except _Planned as planned:  # the unit table built from the plan: no temp file read
            plan = planned.plan
            raise _Planned(
                replace(
                    plan,
                    format="json-records",
                    paths=tuple(names.get(p, p) for p in plan.paths),
                    frames=tuple(fr.collect().lazy() for fr in plan.frames),
                    notes=tuple(_rename(n, names) for n in plan.notes),
                )
            ) from None
        obs = ingest.observations.collect().lazy()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    note = skipped_note(hidden)
    if note:
        notes.append(note)
    report = replace(
        ingest.report,
        format="json-records",
        sources=tuple(names.get(s, s) for s in ingest.report.sources),
        examples=tuple(
            SetAsideExample(e.reason, names.get(e.path, e.path), e.row, e.column, e.detail)
            for e in ingest.report.examples
        ),
        notes=tuple(_rename(n, names) for n in (*notes, *ingest.report.notes)),
        by_format=(),
    )
    return Ingest(obs, report)


def _short_columns(reason: str, keep: int = 12) -> str:
    """A message's ``(columns: ...)`` list cut to ``keep`` names: flattened records have many."""

    def cut(m: re.Match) -> str:
        cols = m.group(1).split(", ")
        if len(cols) <= keep:
            return m.group(0)
        return f"(columns: {', '.join(cols[:keep])}, ... ({len(cols)} in all))"

    return re.sub(r"\(columns: ([^()]*)\)", cut, reason)


def _rename(text: str, names: Mapping[str, str]) -> str:
    for temp, real in names.items():
        text = text.replace(temp, real)
    return re.sub(r"(?<=[\s(])(\d{5})/", "", text)
