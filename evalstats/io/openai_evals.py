"""OpenAI evals (``oaieval``) record logs into the observation table.

``oaieval <completion_fn> <eval>`` writes a record log (``/tmp/evallogs/<run_id>_<fn>_<eval>.jsonl``
by default): JSON lines, the first ``{"spec": {...}}`` (completion functions, eval name, run
config), one ``{"final_report": {...}}`` with the aggregate metrics, and one event per line
(``run_id``, ``event_id``, ``sample_id``, ``type``, ``data``, ``created_at``). A ``match`` event
scores one sampled answer of a sample (``data.correct``); a sample with several ``match`` events
(``n_samples`` > 1, or a re-run appended to the log) has several runs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from evalstats.errors import IngestError, ParameterError
from evalstats.io._files import expand_paths, is_hidden, lfs_pointer, skipped_note
from evalstats.io._pipeline import Check, OnInvalid, ScoreScale, finalize, validate_options
from evalstats.io._report import Ingest
from evalstats.schema import MetricInfo

__all__ = ["detect_openai_evals", "read_openai_evals"]

_SUFFIXES = (".jsonl", ".log")


def _spec_line(f: Path) -> dict | None:
    """The ``spec`` of a record log's first line, or None when ``f`` is not one."""
    try:
        with open(f, "rb") as fh:
            first = fh.readline(1 << 20)
    except OSError:
        return None
    try:
        doc = json.loads(first)
    except (ValueError, UnicodeDecodeError, RecursionError):  # RecursionError: deep nesting
        return None
    spec = doc.get("spec") if isinstance(doc, dict) else None
    if isinstance(spec, dict) and ("eval_name" in spec or "run_config" in spec):
        return spec
    return None


def detect_openai_evals(path: str | Path) -> bool:
    """Whether ``path`` is an oaieval record log (or a folder holding one).

    Examples
    --------
    >>> detect_openai_evals("no/such/file.jsonl")
    False
    """
    p = Path(path)
    if p.is_file():
        return _spec_line(p) is not None
    if p.is_dir():
        logs = (f for f in sorted(p.rglob("*.jsonl")) if f.is_file() and not is_hidden(f, p))
        return any(_spec_line(f) is not None for _, f in zip(range(5), logs))
    return False


def _model(spec: dict) -> str | None:
    fns = spec.get("completion_fns")
    if isinstance(fns, list) and fns:
        return ",".join(map(str, fns))
    name = spec.get("model_name") or spec.get("model_names")  # logs before completion functions
    if isinstance(name, dict):
        name = ",".join(
            str(v) for vs in name.values() for v in (vs if isinstance(vs, list) else [vs])
        )
    return str(name) if name else None


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(m, dict) for m in value):  # chat messages
        return "\n".join(str(m.get("content", "")) for m in value)
    return json.dumps(value, ensure_ascii=False)


def read_openai_evals(
    path: str | Path | Sequence[str | Path],
    *,
    columns: str | Mapping[str, str] | None = None,
    on_invalid: OnInvalid = "error",
    score_scale: ScoreScale = "auto",
) -> Ingest:
    r"""Read OpenAI evals (``oaieval``) record logs: one observation per ``match`` event.

    Parameters
    ----------
    path : str, Path or sequence of them
        A record log (``.jsonl``), a glob, or a folder (every record log below it; other
        ``.jsonl`` files are skipped with a note).
    columns : None
        Not supported (the events have fixed fields); anything but None raises ParameterError.
    on_invalid : {'error', 'skip'}, default 'error'
        Raise on the first invalid line (not JSON, a ``match`` event without a sample id or
        without ``correct``) or set such lines aside and count them.
    score_scale : {'auto', 'unit', 'percent'}, default 'auto'
        ``correct`` is a boolean, so scores are 0/1 whatever is passed.

    Returns
    -------
    Ingest
        ``(observations, report)``. Columns: ``model`` (the spec's completion functions),
        ``metric`` (``accuracy``, in [0, 1], higher is better),
        ``dataset`` (``eval_name``), ``item`` (``sample_id``), ``variant`` (``default``), ``run``
        (0, 1, ... over a sample's ``match`` events in event order), ``score`` (``correct``),
        ``answer`` (``picked``), ``response`` (``sampled``), ``gold`` (``expected``) and
        ``input_len`` (words of the prompt of the sample's ``sampling`` event).

    Raises
    ------
    IngestError
        A file is not a record log, holds no ``match`` event, or has an invalid line with
        ``on_invalid='error'``.

    Notes
    -----
    The report's ``row`` of a record is its position among the file's ``match`` events (and
    unreadable lines), in file order. The log's ``final_report`` (the eval's own aggregate, e.g. ``accuracy``) is quoted in the
    report's notes, so the mean of the scores can be checked against it. Checked against: the
    record log pasted in Significant-Gravitas/Auto-GPT-Benchmarks' README
    (``../shared/data/real-logs/openai-evals/``): mean score 1/3 = its ``final_report`` accuracy.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> lines = [{"spec": {"completion_fns": ["gpt-4"], "eval_name": "arith.dev.v0"}},
    ...          {"final_report": {"accuracy": 0.5}}]
    >>> lines += [{"run_id": "r", "event_id": i, "sample_id": f"arith.dev.{i}", "type": "match",
    ...            "data": {"correct": c, "expected": "4", "picked": p, "sampled": p}}
    ...           for i, (c, p) in enumerate([(True, "4"), (False, "5")])]
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "log.jsonl"
    >>> _ = f.write_text("".join(json.dumps(x) + "\n" for x in lines))
    >>> obs, report = read_openai_evals(f)
    >>> obs.select("model", "dataset", "item", "run", "score").collect().rows()
    [('gpt-4', 'arith.dev.v0', 'arith.dev.0', 0, 1.0), ('gpt-4', 'arith.dev.v0', 'arith.dev.1', 0, 0.0)]
    """
    validate_options(on_invalid, score_scale)
    if columns:
        raise ParameterError(
            "`columns` is not supported by the oaieval loader (match events have fixed fields)."
        )
    hidden: list[Path] = []
    files = expand_paths(path, suffixes=_SUFFIXES, skipped=hidden)
    notes: list[str] = []
    foreign: list[str] = []
    parts: list[tuple[str, pl.LazyFrame]] = []
    runs: dict[tuple[str, str, str], int] = {}
    for f in files:
        pointer = lfs_pointer(f)
        if pointer:
            raise IngestError(pointer, path=str(f))
        spec = _spec_line(f)
        if spec is None:
            if len(files) > 1:
                foreign.append(f.name)
                continue
            raise IngestError(
                'not an oaieval record log: the first line is not {"spec": {...}} with an '
                "eval_name.",
                path=str(f),
            )
        frame, file_notes = _frame(f, spec, runs)
        notes.extend(file_notes)
        parts.append((str(f), frame.lazy()))
    if foreign:
        notes.append(f"skipped {len(foreign)} .jsonl file(s) that are not record logs")
    note = skipped_note(hidden)
    if note:
        notes.append(note)
    if not parts:
        raise IngestError("no oaieval record log found.", path=str(path))
    checks = [
        Check("invalid_json", pl.col("__bad_json"), message="the line is not a JSON object"),
    ]
    return finalize(
        parts,
        format="openai-evals",
        on_invalid=on_invalid,
        score_scale="unit",
        checks=checks,
        factors=[],
        source_names={"item": "sample_id", "score": "data.correct", "gold": "data.expected"},
        notes=notes,
        metric=MetricInfo("accuracy", 0.0, 1.0),
    )


def _frame(f: Path, spec: dict, runs: dict) -> tuple[pl.DataFrame, list[str]]:
    model = _model(spec)
    dataset = spec.get("eval_name") or spec.get("base_eval")
    notes: list[str] = []
    if model is None or dataset is None:
        raise IngestError(
            "the spec line names no completion function or eval (keys: "
            f"{', '.join(list(spec)[:8])}).",
            path=str(f),
            row=1,
            column="spec",
        )
    cols: dict[str, list] = {
        k: []
        for k in (
            "model",
            "dataset",
            "item",
            "run",
            "score",
            "answer",
            "response",
            "gold",
            "__input_text",
            "__bad_json",
        )
    }
    prompts: dict[str, str | None] = {}
    types: dict[str, int] = {}
    events: list[tuple[int, int, dict | None]] = []  # (line, event_id, event)
    with open(f, encoding="utf-8", errors="replace") as fh:
        for line_no, line in enumerate(fh, start=1):
            if line_no == 1 or not line.strip():
                continue
            try:
                ev = json.loads(line)
            except (ValueError, RecursionError):  # RecursionError: nested too deep
                events.append((line_no, -1, None))
                continue
            if not isinstance(ev, dict):
                events.append((line_no, -1, None))
                continue
            if "final_report" in ev:
                report = ev["final_report"]
                shown = json.dumps(report, sort_keys=True)[:200]
                notes.append(f"{f.name}: the log's final_report: {shown}")
                continue
            kind = str(ev.get("type"))
            types[kind] = types.get(kind, 0) + 1
            if kind == "sampling":
                data = ev.get("data") if isinstance(ev.get("data"), dict) else {}
                prompts.setdefault(str(ev.get("sample_id")), _text(data.get("prompt")))
            elif kind == "match":
                eid = ev.get("event_id")
                events.append((line_no, eid if isinstance(eid, int) else line_no, ev))
    if "match" not in types and not any(e is None for _, _, e in events):
        raise IngestError(
            "the record log holds no 'match' events (event types: "
            f"{', '.join(f'{k} x{v}' for k, v in types.items()) or 'none'}); only match-based "
            "evals give item scores.",
            path=str(f),
        )
    for _line_no, _, ev in events:  # file order: the report's row is the n-th match event
        bad = ev is None
        ev = ev or {}
        data = ev.get("data") if isinstance(ev.get("data"), dict) else {}
        sid = ev.get("sample_id")
        item = None if sid is None else str(sid)
        correct = data.get("correct")
        run = None
        if not bad and item is not None:
            key = (model, str(dataset), item)
            run = runs.get(key, 0)
            runs[key] = run + 1
        cols["model"].append(None if bad else model)
        cols["dataset"].append(None if bad else str(dataset))
        cols["item"].append(item)
        cols["run"].append(run)
        cols["score"].append(
            None if correct is None else ("true" if correct is True else str(correct).lower())
        )
        cols["answer"].append(_text(data.get("picked")))
        cols["response"].append(_text(data.get("sampled")))
        cols["gold"].append(_text(data.get("expected")))
        cols["__input_text"].append(prompts.get(item) if item is not None else None)
        cols["__bad_json"].append(bad)
    schema = {
        "model": pl.String,
        "dataset": pl.String,
        "item": pl.String,
        "run": pl.Int64,
        "score": pl.String,
        "answer": pl.String,
        "response": pl.String,
        "gold": pl.String,
        "__input_text": pl.String,
        "__bad_json": pl.Boolean,
    }
    return pl.DataFrame(cols, schema=schema), notes
