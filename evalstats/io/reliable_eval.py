"""Reliable-Eval (Lior et al., 2025) score and prediction files into the observation table.

The reference code (SLAB-NLP/Reliable-Eval) writes four JSON shapes, all keyed by the
*resampling* (a DOVE template, ``<instruction>.enumerator_<e>_choicesSeparator_<s>_shuffleChoices_<c>``):

- the **scores** file (``evaluate_resamplings.py``): ``{model: {template: score}}``, one unit
  score per model and template;
- the **data** file (``sample_from_dove.py``): ``{template: {column: [value per example]}}``, a
  unitxt dataset (``source``, ``target``, ``references``, ``task_data`` ...);
- a **predictions** file per model (``run_*.py``): ``{template: [completion per example]}``;
- the **combined** file (``combine_all_predictions.py``): the data file with one
  ``<model>_predictions`` column per model added to each template.

See ``docs/formats/reliable-eval.md``.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from evalstats.errors import IngestError, ParameterError
from evalstats.io._files import expand_paths, skipped_note
from evalstats.io._pipeline import (
    Check,
    OnInvalid,
    ScoreScale,
    finalize,
    score_factor,
    validate_options,
)
from evalstats.io._report import Ingest
from evalstats.schema import MetricInfo

__all__ = ["FACTORS", "detect_reliable_eval", "parse_template", "read_reliable_eval"]

#: Factor columns parsed from a DOVE template key (DOVE's names for the prompt dimensions).
FACTORS: tuple[str, ...] = ("template", "enumerator", "separator", "choices_order")

_TEMPLATE = re.compile(
    r"^(?P<template>[^.]+)\.enumerator_(?P<enumerator>.+?)_choicesSeparator_(?P<separator>.+?)"
    r"_shuffleChoices_(?P<choices_order>.+)$"
)
_SUFFIX = re.compile(r"_(results|scores|combined|predictions|resamplings)$")


def parse_template(key: str) -> dict[str, str | None]:
    """Split a DOVE template key into the factor columns :data:`FACTORS`.

    Keys that do not follow the DOVE catalogue's naming give nulls.

    Examples
    --------
    >>> parse_template("MultipleChoiceTemplatesInstructionsWithTopic."
    ...                "enumerator_capitals_choicesSeparator_comma_shuffleChoices_False")
    {'template': 'MultipleChoiceTemplatesInstructionsWithTopic', 'enumerator': 'capitals', 'separator': 'comma', 'choices_order': 'False'}
    """
    m = _TEMPLATE.match(key)
    if m is None:
        return dict.fromkeys(FACTORS)
    return {k: m[k] for k in FACTORS}


def _kind(doc: Any) -> str | None:
    """'scores', 'combined', 'data', 'predictions' or None for any other JSON."""
    if not isinstance(doc, dict) or not doc:
        return None
    values = list(doc.values())
    if all(isinstance(v, list) for v in values):
        return "predictions"
    if not all(isinstance(v, dict) for v in values):
        return None
    first = values[0]
    if "source" in first and isinstance(first["source"], list):
        return "combined" if any(k.endswith("_predictions") for k in first) else "data"
    if all(all(x is None or isinstance(x, (int, float, str)) for x in v.values()) for v in values):
        return "scores"
    return None


def detect_reliable_eval(path: str | Path) -> bool:
    """Whether ``path`` is a Reliable-Eval scores, combined or predictions JSON (or a folder of them).

    Examples
    --------
    >>> detect_reliable_eval("no/such/file.json")
    False
    """
    p = Path(path)
    files = sorted(p.rglob("*.json")) if p.is_dir() else [p]
    for f in files[:20]:
        if not (f.is_file() and f.suffix == ".json") or f.stat().st_size > 200_000_000:
            continue
        try:
            with open(f, "rb") as fh:
                head = fh.read(2048).decode("utf-8", errors="ignore").lstrip()
        except OSError:
            continue
        # Inspect logs and lm-eval results are JSON objects too; cheap rejections first.
        if not head.startswith("{") or '"eval"' in head or '"results"' in head:
            continue
        if "shuffleChoices_" in head or "_predictions" in head:
            return True
    return False


def read_reliable_eval(
    path: str | Path | Sequence[str | Path],
    *,
    data: str | Path | None = None,
    dataset: str | None = None,
    columns: str | Mapping[str, str] | None = None,
    on_invalid: OnInvalid = "error",
    score_scale: ScoreScale = "auto",
) -> Ingest:
    """Read Reliable-Eval scores or predictions into the observation table.

    Parameters
    ----------
    path : str, Path or sequence of them
        A scores file, a combined predictions file, a per-model ``<model>_predictions.json``, or
        a folder holding them (searched recursively; the resampled data file found there gives
        the gold answers of per-model predictions).
    data : str or Path, optional
        The resampled data file (``sample_from_dove.py`` output) that per-model predictions are
        aligned with. Needed when the input holds no data file or several.
    dataset : str, optional
        Dataset name (default: the scores or combined file's stem without ``_results``,
        ``_combined``, ...; for per-model predictions the data file's folder name, as in
        ``data/gpqa/100_resamplings.json``).
    columns : None
        Not used: the files have fixed fields. Passing a mapping is an error.
    on_invalid : {'error', 'skip'}, default 'error'
        Raise on the first invalid row (a missing prediction, a template or example the data
        file lacks, a score that is not a number) or set such rows aside and count them.
    score_scale : {'auto', 'unit', 'percent'}, default 'auto'
        Scores of the scores file, **per model**: ``auto`` divides a model's scores by 100 when
        they lie in [0, 100] with most non-zero values above 1 (the paper's code does this for
        Llama-3-8B and Llama-3.2-3B) and says so in the report; ``unit`` never; ``percent``
        always.

    Returns
    -------
    Ingest
        ``(observations, report)``. From a scores file: unit-level rows (no ``item``), one per
        (model, template). From predictions: one row per (model, template, example) with
        ``item`` (the example's position), ``response``, ``answer`` (the option matched),
        ``gold`` and ``score`` (1 when the matched option is the reference). Both carry
        ``variant`` (the template key) and the factors ``template``, ``enumerator``,
        ``separator``, ``choices_order`` parsed from it.

    Raises
    ------
    IngestError
        A file is not one of the Reliable-Eval shapes, predictions have no data file, or a row
        is invalid and ``on_invalid='error'``.

    Notes
    -----
    Templates whose name contains ``placeCorrectChoice`` put the correct answer in a fixed
    position; the reference code drops them (``analyze_100_resamplings.py``,
    ``sample_from_dove.py``), so they are set aside as ``place_correct_choice`` and counted.
    Predictions are scored as the reference's unitxt recipe for DOVE multiple-choice templates
    does: the completion is stripped, its first non-empty line is matched to the closest of the
    example's ``task_data["options"]`` (``difflib.get_close_matches(..., n=1, cutoff=0)``, unitxt's
    ``MatchClosestOption``) and compared with the first reference. Without options the stripped
    first line must equal a reference. Differences from the reference: unitxt is not run, so
    other postprocessors named in the data are not applied (the report lists them). A
    ``null`` completion (a failed call) is invalid (``missing_prediction``).
    Checked against: ``fixtures/dumps/reliable_eval/`` (written in the reference's formats),
    ``tests/io/test_reliable_eval.py``.

    Examples
    --------
    >>> import tempfile, pathlib, json
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "gpqa_results.json"
    >>> key = "MultipleChoiceTemplatesInstructionsWithTopic.enumerator_capitals_choicesSeparator_comma_shuffleChoices_False"
    >>> _ = f.write_text(json.dumps({"GPT-4o": {key: 0.5}, "Llama-3-8B": {key: 40.0}}))
    >>> obs, report = read_reliable_eval(f)
    >>> obs.select("model", "dataset", "score", "enumerator").collect().rows()
    [('GPT-4o', 'gpqa', 0.5, 'capitals'), ('Llama-3-8B', 'gpqa', 0.4, 'capitals')]
    """
    if columns is not None:
        raise ParameterError(
            "`columns` is not used by the reliable-eval format (its fields are fixed); "
            f"got {columns!r}."
        )
    validate_options(on_invalid, score_scale)
    _hidden: list[Path] = []
    files = expand_paths(path, suffixes=(".json",), skipped=_hidden)
    docs: list[tuple[Path, str, dict]] = []
    data_files: list[tuple[Path, dict]] = []
    for f in files:
        doc = _load(f)
        kind = _kind(doc)
        if kind is None:
            raise IngestError(
                "not a Reliable-Eval file: expected {model: {template: score}}, "
                "{template: [completions]}, or {template: {source: [...], ...}} "
                f"(top level: {_describe(doc)}).",
                path=str(f),
            )
        if kind == "data":
            data_files.append((f, doc))
        else:
            docs.append((f, kind, doc))
    if data is not None:
        data_files = [(Path(data), _load(Path(data)))]
        if _kind(data_files[0][1]) not in ("data", "combined"):
            raise IngestError(
                "`data` is not a resampled data file ({template: {source: [...]}}).", path=str(data)
            )
    if not docs:
        raise IngestError(
            "no scores or predictions file among the inputs (only data files).", path=str(path)
        )
    kinds = {kind == "scores" for _, kind, _ in docs}
    if len(kinds) > 1:
        scores = ", ".join(str(f) for f, kind, _ in docs if kind == "scores")
        raise IngestError(
            f"the input mixes unit-level scores files ({scores}) with predictions; they give "
            "different tables (units vs items), so read them separately.",
            path=str(path),
        )
    parts: list[tuple[str, pl.DataFrame]] = []
    notes: list[str] = []
    postprocessors: set[str] = set()
    for f, kind, doc in docs:
        if kind == "scores":
            parts.append((str(f), _scores_frame(f, doc, dataset or _stem(f), score_scale, notes)))
        elif kind == "combined":
            models = [
                k[: -len("_predictions")]
                for k in next(iter(doc.values()))
                if k.endswith("_predictions")
            ]
            name = dataset or _stem(f)
            frames = [
                _predictions_frame(
                    {t: v.get(f"{model}_predictions") for t, v in doc.items()},
                    doc,
                    model,
                    name,
                    postprocessors,
                    notes,
                    f.name,
                )
                for model in models
            ]
            parts.append((str(f), pl.concat(frames)))
        else:
            if len(data_files) != 1:
                raise IngestError(
                    "per-model predictions need the resampled data file for the gold answers; "
                    + (
                        "none was found"
                        if not data_files
                        else f"{len(data_files)} were found ({', '.join(str(p) for p, _ in data_files)})"
                    )
                    + ". Pass data=<file>.",
                    path=str(f),
                )
            dpath, ddoc = data_files[0]
            model = _SUFFIX.sub("", f.stem)
            name = dataset or dpath.parent.name
            parts.append(
                (str(f), _predictions_frame(doc, ddoc, model, name, postprocessors, notes, f.name))
            )
            notes.append(f"{f.name}: model {model!r} from the file name; gold answers from {dpath}")
    emulated = {
        "processors.to_string_stripped",
        "processors.take_first_non_empty_line",
        "processors.match_closest_option",
    }
    others = sorted(postprocessors - emulated)
    if any(kind != "scores" for _, kind, _ in docs):
        notes.append(
            "predictions scored by matching the first non-empty line to the closest "
            "option (unitxt MatchClosestOption) and comparing with the reference"
        )
    if others:
        notes.append(f"postprocessors named in the data but not applied: {', '.join(others)}")
    checks = [
        Check(
            "place_correct_choice",
            pl.col("__place_correct"),
            quirk=True,
            message="a placeCorrectChoice template (excluded by the reference code)",
        ),
        Check(
            "unknown_template",
            pl.col("__unknown_template"),
            column="variant",
            message="the template is not in the data file",
        ),
        Check(
            "unknown_item",
            pl.col("__unknown_item"),
            column="item",
            message="more predictions than examples in the data file for this template",
        ),
        Check(
            "missing_prediction",
            pl.col("__missing_prediction"),
            column="response",
            message="the completion is null (a failed call)",
        ),
    ]
    return finalize(
        [(p, df.lazy()) for p, df in parts],
        format="reliable-eval",
        on_invalid=on_invalid,
        score_scale="unit",  # the per-model scale was decided above
        checks=checks,
        factors=list(FACTORS),
        source_names={"variant": "template key", "item": "example index"},
        notes=[*notes, *filter(None, [skipped_note(_hidden)])],
        metric=MetricInfo("accuracy", 0.0, 1.0),
    )


def _load(f: Path) -> Any:
    if not f.exists():
        raise IngestError("no such file or folder.", path=str(f))
    if f.stat().st_size == 0:
        raise IngestError("the file is empty (0 bytes).", path=str(f))
    try:
        return json.loads(f.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise IngestError(f"the file is not valid UTF-8 text ({exc}).", path=str(f)) from None
    except RecursionError:
        raise IngestError("not valid JSON (nested too deeply to read).", path=str(f)) from None
    except json.JSONDecodeError as exc:
        raise IngestError(
            f"not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}).", path=str(f)
        ) from None


def _describe(doc: Any) -> str:
    if isinstance(doc, dict):
        if not doc:
            return "an empty object"
        k, v = next(iter(doc.items()))
        return f"an object whose first entry {k!r} is a {type(v).__name__}"
    return f"a {type(doc).__name__}"


def _stem(f: Path) -> str:
    return _SUFFIX.sub("", f.stem)


def _number(v: Any) -> float | None:
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v.strip().rstrip("%"))
        except ValueError:
            return None
    return None


def _scores_frame(
    f: Path, doc: dict, dataset: str, score_scale: str, notes: list[str]
) -> pl.DataFrame:
    rows: dict[str, list] = {
        k: [] for k in ("model", "dataset", "variant", "score", *FACTORS, "__place_correct")
    }
    for model, per_template in doc.items():
        values = [_number(v) for k, v in per_template.items() if "placeCorrectChoice" not in k]
        finite = [v for v in values if v is not None and math.isfinite(v)]
        divisor = 1.0
        if score_scale not in ("auto", "unit"):
            divisor = 1.0 / score_factor(score_scale)
        elif score_scale == "auto" and finite:
            nonzero = [v for v in finite if v != 0]
            share = sum(v > 1 for v in nonzero) / len(nonzero) if nonzero else 0.0
            if min(finite) >= 0 and 1 < max(finite) <= 100 and share >= 0.5:
                divisor = 100.0
                notes.append(
                    f"{f.name}: model {model!r} has scores on a 0-100 scale "
                    f"(max {max(finite):g}); divided by 100"
                )
        for template, raw in per_template.items():
            num = _number(raw)
            if num is not None and math.isfinite(num):
                text = repr(num / divisor)
            else:
                text = None if raw is None else str(raw)
            rows["model"].append(str(model))
            rows["dataset"].append(dataset)
            rows["variant"].append(str(template))
            rows["score"].append(text)
            for k, v in parse_template(str(template)).items():
                rows[k].append(v)
            rows["__place_correct"].append("placeCorrectChoice" in str(template))
    if score_scale not in ("auto", "unit"):
        notes.append(
            f"{f.name}: scores divided by {1.0 / score_factor(score_scale):g} "
            f"(score_scale={score_scale!r})"
        )
    schema = {
        "model": pl.String,
        "dataset": pl.String,
        "variant": pl.String,
        "score": pl.String,
        **dict.fromkeys(FACTORS, pl.String),
        "__place_correct": pl.Boolean,
    }
    return pl.DataFrame(rows, schema=schema).with_columns(
        pl.lit(False).alias("__unknown_template"),
        pl.lit(False).alias("__unknown_item"),
        pl.lit(False).alias("__missing_prediction"),
    )


def _first_line(text: str) -> str:
    for line in str(text).strip().splitlines():
        if line.strip():
            return line.strip()
    return ""


def _task_data(value: Any) -> dict:
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            out = json.loads(value)
        except (ValueError, RecursionError):
            return {}
        return out if isinstance(out, dict) else {}
    return {}


def _references(columns: dict, i: int) -> list[str]:
    refs = columns.get("references")
    if isinstance(refs, list) and i < len(refs):
        r = refs[i]
        if isinstance(r, list):
            return [str(x) for x in r]
        if r is not None:
            return [str(r)]
    target = columns.get("target")
    if isinstance(target, list) and i < len(target) and target[i] is not None:
        return [str(target[i])]
    return []


def _predictions_frame(
    preds: dict,
    data: dict,
    model: str,
    dataset: str,
    postprocessors: set[str],
    notes: list[str],
    name: str,
) -> pl.DataFrame:
    rows: dict[str, list] = {
        k: []
        for k in (
            "model",
            "dataset",
            "item",
            "variant",
            "score",
            "answer",
            "response",
            "gold",
            *FACTORS,
            "__place_correct",
            "__unknown_template",
            "__unknown_item",
            "__missing_prediction",
        )
    }
    for template, completions in preds.items():
        if not isinstance(completions, list):
            completions = [] if completions is None else [completions]
        columns = data.get(template)
        known = isinstance(columns, dict)
        source = columns.get("source") if known else None
        n_examples = len(source) if isinstance(source, list) else 0
        if known and isinstance(columns.get("postprocessors"), list):
            for pp in columns["postprocessors"]:
                for proc in pp if isinstance(pp, list) else [pp]:
                    postprocessors.add(str(proc))
        factors = parse_template(str(template))
        if known and len(completions) < n_examples:
            notes.append(
                f"{name}: model {model!r}, template {template!r}: "
                f"{len(completions)} of {n_examples} examples predicted"
            )
        for i, completion in enumerate(completions):
            in_range = known and i < n_examples
            refs = _references(columns, i) if in_range else []
            answer = score = None
            if in_range and completion is not None:
                task_data = columns.get("task_data")
                options = _task_data(
                    task_data[i] if isinstance(task_data, list) and i < len(task_data) else None
                ).get("options")
                line = _first_line(completion)
                if isinstance(options, list) and options:
                    options = [str(o) for o in options]
                    match = difflib.get_close_matches(line, options, n=1, cutoff=0.0)
                    answer = match[0] if match else None
                    score = "1.0" if answer is not None and refs and answer == refs[0] else "0.0"
                else:
                    answer = line
                    score = "1.0" if line in refs else "0.0"
            rows["model"].append(model)
            rows["dataset"].append(dataset)
            rows["item"].append(str(i))
            rows["variant"].append(str(template))
            rows["score"].append(score)
            rows["answer"].append(answer)
            rows["response"].append(None if completion is None else str(completion))
            rows["gold"].append(refs[0] if refs else None)
            for k, v in factors.items():
                rows[k].append(v)
            rows["__place_correct"].append("placeCorrectChoice" in str(template))
            rows["__unknown_template"].append(not known)
            rows["__unknown_item"].append(known and not in_range)
            rows["__missing_prediction"].append(in_range and completion is None)
    schema = {
        "model": pl.String,
        "dataset": pl.String,
        "item": pl.String,
        "variant": pl.String,
        "score": pl.String,
        "answer": pl.String,
        "response": pl.String,
        "gold": pl.String,
        **dict.fromkeys(FACTORS, pl.String),
        "__place_correct": pl.Boolean,
        "__unknown_template": pl.Boolean,
        "__unknown_item": pl.Boolean,
        "__missing_prediction": pl.Boolean,
    }
    return pl.DataFrame(rows, schema=schema)
