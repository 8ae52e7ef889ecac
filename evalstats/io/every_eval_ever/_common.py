"""Every Eval Ever: its constants, file kinds and detection, and small readers of JSON."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from evalstats.errors import IngestError
from evalstats.io._files import is_hidden, lfs_pointer, refuse_special
from evalstats.io._shape import TooManyKeys, finite, loads_bounded, problem

#: The schema version :func:`write_every_eval_ever` writes.
SCHEMA_VERSION = "0.3.0"

#: Schema versions the reader knows (by major.minor): 0.0.x and 0.1.x have one
#: ``source_data`` per record and no ``metric_id`` (:func:`_legacy`), 0.2.x and 0.3.x are read
#: as written. Records of another version are read as 0.3.0, with a warning note.
KNOWN_VERSIONS = ("0.0.1", "0.1.0", "0.2.0", "0.3.0")

_SAMPLES = re.compile(r"^(?P<stem>.+)_samples\.jsonl$")

#: Keys of ``generation_args`` read as settings (numbers and booleans).
_GENERATION_ARGS = ("temperature", "top_p", "top_k", "max_tokens", "reasoning")

#: Prefix of the keys evalstats writes into ``additional_details`` and sample ``metadata`` to
#: carry what the schema has no field for (the variant key, the cluster, input length).
_OWN = "evalstats."

#: Canonical columns the schema has no field for, carried in the sample's ``metadata``.
_CARRIED = ("cluster", "input_len", "cumulative_logprob", "gold_score")

#: A metric identifier (no spaces): how schema 0.1.0 records name the metric in
#: ``metric_config.evaluation_description`` (later ones write a sentence there).
_IDENT = re.compile(r"^[A-Za-z][\w.:@/-]*$")

#: Split names in the order a dataset's result is taken from (see :func:`_other_splits`).
_SPLITS = ("test", "valid", "validation", "val", "dev")

#: Tolerance of the producer-summary check (aggregate score vs the mean of its samples).
_SUMMARY_TOL = 1e-9


# --- detection --------------------------------------------------------------------------------


def _head(f: Path, n: int = 4096) -> str:
    try:
        with open(f, "rb") as fh:
            return fh.read(n).decode("utf-8", errors="ignore").lstrip()
    except OSError:
        return ""


def _first_line(f: Path) -> dict | None:
    try:
        with open(f, "rb") as fh:
            line = fh.readline(1 << 22)
        doc = json.loads(line)
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):  # deep nesting: not ours
        return None
    return doc if isinstance(doc, dict) else None


def _kind(f: Path) -> str | None:
    """``aggregate``, ``samples``, ``index`` (a datastore listing of aggregates) or None."""
    name = f.name.lower()
    if name.endswith(".json"):
        head = _head(f)
        if head.startswith("{") and '"evaluation_results"' in head and '"schema_version"' in head:
            return "aggregate"
        if head.startswith("{") and '"schema_version"' in head and '"model_info"' in head:
            return "aggregate"
        # no schema_version (the schema requires it): still a record, read with a note
        if head.startswith("{") and '"evaluation_results"' in head and '"model_info"' in head:
            return "aggregate"
        return None
    if name.endswith(".jsonl"):
        first = _first_line(f)
        if first is None:
            return None
        if {"evaluation_id", "sample_id"} <= set(first) and (
            "interaction_type" in first or "evaluation" in first
        ):
            return "samples"
        if first.get("record_type") == "aggregate" and "eval_schema_version" in first:
            return "index"
    return None


def detect_every_eval_ever(path: str | Path) -> bool:
    """Whether ``path`` is an Every Eval Ever aggregate JSON or samples JSONL (or a folder of them).

    Examples
    --------
    >>> detect_every_eval_ever("no/such/file.json")
    False
    """
    p = Path(path)
    if p.is_file():
        return _kind(p) is not None
    if p.is_dir():
        found = (
            f
            for f in sorted(p.rglob("*.json*"))
            if f.is_file() and not is_hidden(f, p) and f.name.lower().endswith((".json", ".jsonl"))
        )
        return any(_kind(f) is not None for _, f in zip(range(20), found))
    return False


# --- reading ------------------------------------------------------------------------------------


def _d(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def _files(path: Any, hidden: list[Path]) -> list[Path]:
    import glob

    if isinstance(path, (list, tuple)):
        out: list[Path] = []
        for p in path:
            out += [f for f in _files(p, hidden) if f not in out]
        return out
    refuse_special(path)
    p = Path(path)
    if p.is_file():
        return [p]
    if p.is_dir():
        found = sorted(
            f for f in p.rglob("*") if f.is_file() and f.name.lower().endswith((".json", ".jsonl"))
        )
        hidden.extend(f for f in found if is_hidden(f, p))
        return [f for f in found if not is_hidden(f, p)]
    found = sorted(Path(f) for f in glob.glob(str(path), recursive=True) if Path(f).is_file())
    if not found:
        raise IngestError("no such file or folder.", path=str(path))
    return found


def _load_json(f: Path) -> Any:
    pointer = lfs_pointer(f)
    if pointer:
        raise IngestError(pointer, path=str(f))
    try:
        return loads_bounded(f.read_text(encoding="utf-8"))
    except TooManyKeys as exc:
        raise IngestError(exc.message() + ".", path=str(f)) from None
    except UnicodeDecodeError as exc:
        raise IngestError(f"the file is not valid UTF-8 text ({exc}).", path=str(f)) from None
    except RecursionError:
        raise IngestError("the JSON is nested too deeply to read.", path=str(f)) from None
    except json.JSONDecodeError as exc:
        raise IngestError(
            f"the file is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}).",
            path=str(f),
        ) from None


def _bound(v: object) -> float | None:
    """``min_score``/``max_score``: a number, ``"Infinity"``/``"-Infinity"`` (unbounded) or null."""
    return finite(v)


#: The types the Every Eval Ever schemas (``eval.schema.json``, ``instance_level_eval.schema.json``)
#: give the fields read, checked before a value is read (:mod:`evalstats.io._shape`). Bounds
#: (``min_score``/``max_score``, a number or ``"Infinity"``) and ``additional_details`` values
#: are read leniently (:func:`_bound`, :func:`_scalar`), so they are not listed.
AGGREGATE_SPEC = {
    "schema_version": ("string",),
    "evaluation_id": ("string",),
    "model_info": {
        "id": ("string",),
        "name": ("string",),
        "inference_platform": ("string",),
        "inference_engine": ("object", "string"),
        "additional_details": ("object",),
    },
    "source_data": ("object",),
    "evaluation_results": [
        {
            "evaluation_name": ("string",),
            "evaluation_result_id": ("string",),
            "source_data": {
                "dataset_name": ("string",),
                "hf_split": ("string",),
                "samples_number": ("integer",),
            },
            "metric_config": {
                "metric_id": ("string",),
                "metric_name": ("string",),
                "evaluation_description": ("string",),
                "lower_is_better": ("boolean",),
                "score_type": ("string",),
            },
            "score_details": {
                "score": ("number",),
                "details": ("object",),
                "uncertainty": {"num_samples": ("integer",)},
            },
            "generation_config": {
                "generation_args": ("object",),
                "additional_details": ("object",),
            },
        }
    ],
}

#: One line of a ``_samples.jsonl`` (``instance_level_eval.schema.json``). ``sample_id`` may be
#: a number (converters write the producer's id); ``evaluation.score`` a number, a boolean or a
#: text (read as a score or set aside as ``unparseable_score``); ``metadata.epoch`` a whole
#: number, or its text.
SAMPLE_SPEC = {
    "schema_version": ("string",),
    "evaluation_id": ("string",),
    "model_id": ("string",),
    "evaluation_name": ("string",),
    "evaluation_result_id": ("string",),
    "sample_id": ("string", "integer"),
    "interaction_type": ("string",),
    "input": {"raw": ("string",), "reference": ("array",)},
    "output": {"raw": ("array",)},
    "messages": ("array",),
    "answer_attribution": ("array",),
    "evaluation": {"score": ("number", "boolean", "string"), "is_correct": ("boolean",)},
    "performance": {"latency_ms": ("number",)},
    "error": ("string",),
    "metadata": {"epoch": ("integer", "string")},
}


def _checked(doc: Any, f: Path) -> Any:
    """An aggregate record whose structure is the schema's; else IngestError naming the field."""
    found = problem(doc, AGGREGATE_SPEC)
    if found:
        raise IngestError(f"not the Every Eval Ever record schema: {found}.", path=str(f))
    return doc


def _scalar(text: object) -> Any:
    """An ``additional_details`` value (always a string) as the scalar it spells, if it is one."""
    if not isinstance(text, str):
        return text if isinstance(text, (int, float, bool)) else None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return text
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return text  # a list or object stays its text
