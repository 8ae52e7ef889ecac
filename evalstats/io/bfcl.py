"""Berkeley Function Calling Leaderboard (BFCL) result and score files.

``bfcl generate`` writes ``result/<model>/<group>/BFCL_v4_<category>_result.json`` (JSON Lines,
one line per test entry: ``id``, ``result``, token counts, ``latency``) and ``bfcl evaluate``
writes ``score/<model>/<group>/BFCL_v4_<category>_score.json``: a first line with the
category's ``accuracy``, ``correct_count`` and ``total_count``, then one line per entry that
failed (``id``, ``valid: false``, ``error``, ...). Entries are scored 1 unless listed as failed.
See ``docs/formats/bfcl.md``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from evalstats._column_rules import ColumnRule
from evalstats.errors import IngestError
from evalstats.io._files import expand_paths, skipped_note
from evalstats.io._pipeline import Check, OnInvalid, ScoreScale, finalize, validate_options
from evalstats.io._report import Ingest
from evalstats.schema import MetricInfo

__all__ = ["detect_bfcl", "read_bfcl"]

_RESULT = re.compile(
    r"^(?:(?P<prefix>BFCL_v\d+)|(?P<old>gorilla_openfunctions_v1_test))_(?P<cat>.+)_result\.json$"
)
_SCORE = re.compile(r"^(?P<prefix>BFCL_v\d+)_(?P<cat>.+)_score\.json$")


def detect_bfcl(path: str | Path) -> bool:
    """Whether ``path`` is a BFCL result file (or a folder holding them).

    Examples
    --------
    >>> detect_bfcl("no/such/BFCL_v4_simple_python_result.json")
    False
    """
    p = Path(path)
    if p.is_dir():
        return any(_RESULT.match(f.name) for f in p.rglob("*_result.json"))
    return p.is_file() and bool(_RESULT.match(p.name))


def _lines(f: Path) -> list[Any]:
    try:
        text = f.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise IngestError(f"cannot read the file ({exc}).", path=str(f)) from None
    out = []
    for n, line in enumerate((ln for ln in text.split("\n") if ln.strip()), start=1):
        try:
            out.append(json.loads(line))
        except (ValueError, RecursionError) as exc:
            raise IngestError(f"the line is not valid JSON ({exc}).", path=str(f), row=n) from None
    return out


def _score_name(prefix: str | None, cat: str) -> str:
    """``BFCL_v3_simple_score.json``; before the versioned names (2024), ``simple_score.json``."""
    return f"{prefix}_{cat}_score.json" if prefix else f"{cat}_score.json"


def _score_file(f: Path, prefix: str | None, cat: str) -> Path | None:
    """``score/<model>/<group>/<prefix>_<cat>_score.json`` for ``result/<model>/<group>/...``."""
    parts = f.parts
    name = _score_name(prefix, cat)
    if "result" in parts:
        i = len(parts) - 1 - parts[::-1].index("result")
        cand = Path(*parts[:i], "score", *parts[i + 1 : -1], name)
        if cand.is_file():
            return cand
    beside = f.with_name(name)
    return beside if beside.is_file() else None


def _failed_ids(lines: list[Any], entries: list[Any]) -> dict[str, Any]:
    """The result-file ids of the entries a score file lists as failed.

    Since the versioned names, a failed record's ``id`` is the entry's id. Before (the 2024
    leaderboard archive), ``id`` is the entry's 1-based position in the result file and the
    entry's own id is under ``prompt.id``: both are understood.
    """
    ids = [str(e.get("id")) if isinstance(e, dict) else None for e in entries]
    known = set(ids)
    failed: dict[str, Any] = {}
    for rec in lines:
        if not (isinstance(rec, dict) and rec.get("valid") is False and "id" in rec):
            continue
        prompt = rec.get("prompt")
        own = prompt.get("id") if isinstance(prompt, dict) else None
        key = str(rec["id"])
        if own is not None and str(own) in known:
            key = str(own)
        elif key not in known and isinstance(rec["id"], int) and 1 <= rec["id"] <= len(ids):
            key = str(ids[rec["id"] - 1])
        failed[key] = rec
    return failed


def _model_of(f: Path) -> str:
    parts = f.parts
    if "result" in parts[:-1]:
        i = len(parts) - 1 - parts[::-1].index("result")
        if i + 1 < len(parts) - 1:
            return parts[i + 1]
    return f.parent.name


def read_bfcl(
    path: str | Path | Sequence[str | Path],
    *,
    on_invalid: OnInvalid = "error",
    score_scale: ScoreScale = "auto",
) -> Ingest:
    r"""Read BFCL result files, scored by their score files, into the observation table.

    Parameters
    ----------
    path : str, Path or sequence of them
        BFCL's project folder (holding ``result/`` and ``score/``), a ``result`` folder, one
        result file, a glob or a list. The score file of each result file is found under
        ``score/`` (same model and group folders) or beside it.
    on_invalid, score_scale
        As for :func:`evalstats.io.table.read_table`.

    Returns
    -------
    Ingest
        One row per test entry: ``model`` (the folder under ``result/``), ``dataset`` (the
        category, ``simple_python``), ``item`` (``id``), ``score`` (0 when the score file lists
        the entry as failed, else 1; metric ``accuracy`` on [0, 1]), ``latency_s``
        (``latency``), ``error`` (the first error of a failed entry, ``error_type``).

    Notes
    -----
    An entry of a result file whose category has no score file is set aside as ``unscored``
    (counted), with a note. The score file's header (``accuracy``, ``correct_count``,
    ``total_count``) is quoted in the notes per (model, category): the mean read equals it.
    Result files named before the versioned names (2024: ``gorilla_openfunctions_v1_test_<cat>_
    result.json`` beside ``score/<model>/<cat>_score.json``, failed records numbered by 1-based
    position, the entry's id under ``prompt.id``) are read too. Checked against: two real dumps of
    the real corpus (every category's accuracy reproduced), score files written by bfcl-eval
    2026.3.23's own runner (``fixtures/dumps/bfcl/producer``) and synthetic files in its layout
    (``tests/io/test_bfcl.py``).

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> (root / "result" / "m" / "non_live").mkdir(parents=True)
    >>> (root / "score" / "m" / "non_live").mkdir(parents=True)
    >>> _ = (root / "result/m/non_live/BFCL_v4_simple_python_result.json").write_text(
    ...     "".join(json.dumps({"id": f"simple_python_{i}", "result": "f()"}) + "\n"
    ...             for i in range(4)))
    >>> head = {"accuracy": 0.75, "correct_count": 3, "total_count": 4}
    >>> bad = {"id": "simple_python_2", "valid": False, "error": ["wrong"]}
    >>> _ = (root / "score/m/non_live/BFCL_v4_simple_python_score.json").write_text(
    ...     json.dumps(head) + "\n" + json.dumps(bad) + "\n")
    >>> obs, report = read_bfcl(root)
    >>> obs.select("item", "score").collect()["score"].to_list()
    [1.0, 1.0, 0.0, 1.0]
    """
    validate_options(on_invalid, score_scale)
    hidden: list[Path] = []
    files = [
        f for f in expand_paths(path, suffixes=(".json",), skipped=hidden) if _RESULT.match(f.name)
    ]
    if not files:
        raise IngestError(
            "no BFCL result files (BFCL_v<N>_<category>_result.json).", path=str(path)
        )
    parts = []
    notes: list[str] = []
    companions: list[str | None] = []
    for f in files:
        m = _RESULT.match(f.name)
        prefix, cat = m["prefix"], m["cat"]
        score_name = _score_name(prefix, cat)
        model = _model_of(f)
        entries = _lines(f)
        score_path = _score_file(f, prefix, cat)
        failed: dict[str, Any] = {}
        if score_path is None:
            notes.append(f"{f}: no score file ({score_name}): entries set aside as unscored")
        else:
            lines = _lines(score_path)
            head = lines[0] if lines and isinstance(lines[0], dict) else {}
            failed = _failed_ids(lines[1:], entries)
            if "accuracy" in head:
                notes.append(
                    f"{model} / {cat}: the producer's accuracy = {head['accuracy']!r} "
                    f"({head.get('correct_count')!r} of {head.get('total_count')!r}, "
                    f"{score_path.name})"
                )
        rows: dict[str, list] = {
            k: []
            for k in ("model", "dataset", "item", "score", "latency_s", "failure", "__unscored")
        }
        for rec in entries:
            rec = rec if isinstance(rec, dict) else {}
            eid = rec.get("id")
            bad = failed.get(str(eid)) if eid is not None else None
            rows["model"].append(model)
            rows["dataset"].append(cat)
            rows["item"].append(None if eid is None else str(eid))
            rows["score"].append(None if score_path is None else (0.0 if bad else 1.0))
            lat = rec.get("latency")
            rows["latency_s"].append(
                float(lat) if isinstance(lat, (int, float)) and not isinstance(lat, bool) else None
            )
            # why a call was judged wrong: an outcome of the answer, not an error of the call
            rows["failure"].append(_error_type(bad) if bad else None)
            rows["__unscored"].append(score_path is None)
        frame = pl.DataFrame(
            rows,
            schema={
                "model": pl.String,
                "dataset": pl.String,
                "item": pl.String,
                "score": pl.Float64,
                "latency_s": pl.Float64,
                "failure": pl.String,
                "__unscored": pl.Boolean,
            },
        ).with_columns(MetricInfo("accuracy", 0.0, 1.0).columns())
        parts.append((str(f), frame.lazy()))
        # two models' result files can be equal bytes; their score files tell them apart
        companions.append(None if score_path is None else _digest(score_path))
    note = skipped_note(hidden)
    if note:
        notes.append(note)
    return finalize(
        parts,
        format="bfcl",
        on_invalid=on_invalid,
        score_scale=score_scale,
        checks=[
            Check(
                "unscored",
                pl.col("__unscored"),
                column="score",
                quirk=True,
                message="the category has no score file (run `bfcl evaluate`)",
            )
        ],
        source_names={"score": "valid (score file)", "item": "id"},
        notes=notes,
        companions=companions,
        factors=["failure"],
        column_rules=[
            ColumnRule(
                "failure",
                "outcome",
                "BFCL's error_type of a wrong answer (value_error:..., type_error:...): why the "
                "answer was judged wrong, an outcome, not an error of the call",
            )
        ],
    )


def _digest(f: Path) -> str:
    import hashlib

    return hashlib.sha256(f.read_bytes()).hexdigest()


def _error_type(rec: dict) -> str:
    """The failed entry's ``error_type``, else its first error text, shortened."""
    kind = rec.get("error_type")
    if isinstance(kind, str) and kind:
        return kind
    err = rec.get("error")
    while isinstance(err, list) and err:
        err = err[0]
    if isinstance(err, dict):
        err = err.get("error_type") or next(iter(err.values()), None)
    return str(err)[:200] if err is not None else "invalid"
