"""lm-evaluation-harness results folders (``--log_samples`` output) into the observation table.

``lm_eval --output_path OUT --log_samples`` writes ``OUT/<model_name_sanitized>/`` with
``results_<date>.json`` and one ``samples_<task>_<date>.jsonl`` per task: one JSON object per
document **and filter**. This module maps ``doc_id`` to the item, the task to the dataset, the
model from the results file (or the folder name), one metric to the score, and repeated runs
(samples files of the same task with different dates) to ``run``. See ``docs/formats/lm-eval.md``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from evalstats.errors import IngestError, ParameterError
from evalstats.io._files import expand_paths, lfs_pointer, skipped_note
from evalstats.io._pipeline import (
    Check,
    OnInvalid,
    ScoreScale,
    finalize,
    score_factor,
    validate_options,
)
from evalstats.io._report import Ingest
from evalstats.io._rows import json_lines
from evalstats.io._shape import finite, problem
from evalstats.schema import MetricInfo

__all__ = ["detect_lm_eval", "metric_info", "read_lm_eval"]

#: Keys of a logged sample that are bookkeeping, not metrics.
_BOOKKEEPING = frozenset(
    {
        "doc_id",
        "doc",
        "target",
        "arguments",
        "resps",
        "filtered_resps",
        "filter",
        "metrics",
        "doc_hash",
        "prompt_hash",
        "target_hash",
    }
)

#: ``GeneralConfigTracker._get_model_name``: prefixes of ``model_args``, in lm-eval's order.
_MODEL_ARG_PREFIXES = ("peft=", "delta=", "pretrained=", "model=", "path=", "engine=")

_SAMPLES = re.compile(r"^samples_(?P<task>.+)_(?P<date>[^_]+)\.jsonl$")
#: mid-2024 harness (0.4.3-0.4.4): ``samples_<task>_<date>.json``, a JSON array
_SAMPLES_JSON = re.compile(r"^samples_(?P<task>.+?)(?:_(?P<date>\d{4}-\d\d-\d\dT[^_]+))?\.json$")
#: harness 0.3 ``--write_out``: ``<task>_write_out_info.json``, a JSON array
_WRITE_OUT = re.compile(r"^(?P<task>.+)_write_out_info\.json$")
#: harness 0.4.0-0.4.2 ``--log_samples``: ``<model_args with / and = as __>_<task>.jsonl``, a
#: JSON array despite the suffix
_OLD_040 = re.compile(r"^(?P<stem>.+)\.jsonl$")
#: 0.3 write_out bookkeeping keys
_WRITE_OUT_KEYS = re.compile(r"^(prompt|logit)_\d+$|^truth$")

#: Per-document bounds of lm-eval metrics whose scale is fixed by their definition: 0/1
#: accuracies and probabilities, the 0-100 sacrebleu/rouge scores of the generation tasks
#: (``truthfulqa_gen``'s ``*_max``) and their signed differences (``*_diff``).
_UNIT_METRICS = frozenset(
    {"acc", "acc_norm", "acc_mutual_info", "exact_match", "mc1", "mc2", "em", "brier_score"}
)
_BLEU_ROUGE = re.compile(r"^(bleu|rouge1|rouge2|rougeL|rougeLsum)_(?P<kind>max|acc|diff)$")

#: Metrics where lower is better when the results file records no ``higher_is_better``.
_LOWER_IS_BETTER = frozenset(
    {
        "perplexity",
        "word_perplexity",
        "byte_perplexity",
        "bits_per_byte",
        "ter",
        "mae",
        "mse",
        "rmse",
        "brier_score",
        "loss",
    }
)


def _d(value: object) -> dict:
    """``value`` when it is an object, else ``{}`` (a field of the wrong type is not read)."""
    return value if isinstance(value, dict) else {}


def metric_info(name: str, results: dict | None = None, task: str | None = None) -> MetricInfo:
    """Bounds and direction of lm-eval metric ``name``.

    The direction is the results file's ``higher_is_better[task][name]`` when recorded, else
    lower is better for the error-like metrics (perplexities, ``bits_per_byte``, ``ter``,
    ``mae``, ...). Bounds are declared only for metrics whose scale is fixed by their definition
    (accuracies and ``exact_match`` in [0, 1], truthfulqa's BLEU/ROUGE ``*_max`` in [0, 100]
    and ``*_diff`` in [-100, 100], ``*_acc`` in [0, 1]); others are left unbounded.

    Examples
    --------
    >>> metric_info("bleu_diff").describe()
    'bleu_diff: range [-100, 100], higher is better'
    >>> metric_info("word_perplexity").describe()
    'word_perplexity: unbounded, lower is better'
    """
    hib = None
    if results and task is not None:
        recorded = _d(_d(results.get("higher_is_better")).get(task)).get(name)
        if isinstance(recorded, bool):
            hib = recorded
    if hib is None:
        hib = name not in _LOWER_IS_BETTER
    lo = hi = None
    m = _BLEU_ROUGE.match(name)
    if name in _UNIT_METRICS or (m and m["kind"] == "acc"):
        lo, hi = 0.0, 1.0
    elif m and m["kind"] == "max":
        lo, hi = 0.0, 100.0
    elif m:
        lo, hi = -100.0, 100.0
    return MetricInfo(name, lo, hi, hib)


def detect_lm_eval(path: str | Path) -> bool:
    """Whether ``path`` is an lm-eval samples file or a folder holding ``samples_*.jsonl`` files.

    Examples
    --------
    >>> detect_lm_eval("no/such/folder")
    False
    """
    p = Path(path)
    if p.is_file():
        return _layout(p) is not None
    if p.is_dir():
        if any(_SAMPLES.match(f.name) for f in p.rglob("samples_*.jsonl")):
            return True
        return any(
            _WRITE_OUT.match(f.name) or (_SAMPLES_JSON.match(f.name) and _is_array(f))
            for f in p.rglob("*.json")
        )
    return False


def _is_array(f: Path) -> bool:
    """Whether ``f`` holds a JSON array (its first non-blank character is ``[``)."""
    try:
        with open(f, "rb") as fh:
            head = fh.read(256).lstrip()
    except OSError:
        return False
    return head.startswith(b"[")


def _layout(f: Path) -> str | None:
    """Which harness layout the file ``f`` is, by name (and, for ambiguous names, content)."""
    name = f.name
    if _SAMPLES.match(name):
        return "samples"
    if _WRITE_OUT.match(name):
        return "write_out"
    if _SAMPLES_JSON.match(name) and _is_array(f):
        return "samples_json"
    if name.endswith(".jsonl") and _is_array(f):
        return "v040"
    return None


def _task_and_date(f: Path, layout: str, results: dict | None) -> tuple[str, str | None]:
    name = f.name
    if layout == "samples":
        m = _SAMPLES.match(name)
        return m["task"], m["date"]
    if layout == "write_out":
        return _WRITE_OUT.match(name)["task"], None
    if layout == "samples_json":
        m = _SAMPLES_JSON.match(name)
        return m["task"], m["date"]
    stem = _OLD_040.match(name)["stem"]
    known = sorted((results or {}).get("configs") or (results or {}).get("results") or {}, key=len)
    for task in reversed(known):
        if stem.endswith("_" + task):
            return task, None
    # no results file: the model_args end with the model's last path component (written after
    # the last "__"); model names use "-" and "." far more than "_", so the task starts at the
    # first "_" after it (the report says the task was guessed from the file name)
    last = stem.rsplit("__", 1)[-1]
    return (last.split("_", 1)[1] if "_" in last else last), None


def _model_from_040_name(f: Path, task: str) -> str | None:
    """The model in a 0.4.0-0.4.2 file name ``<model_args, / and = written as __>_<task>``."""
    args = f.name[: -len(".jsonl")][: -len(task) - 1]
    for prefix in _MODEL_ARG_PREFIXES:
        key = prefix[:-1] + "__"
        if key in args:
            return args.split(key, 1)[1].split(",")[0].replace("__", "/")
    return None


def read_lm_eval(
    path: str | Path | Sequence[str | Path],
    *,
    metric: str | Mapping[str, str] | None = None,
    filter: str | Mapping[str, str] | None = None,
    columns: str | Mapping[str, str] | None = None,
    on_invalid: OnInvalid = "error",
    score_scale: ScoreScale = "auto",
) -> Ingest:
    r"""Read lm-evaluation-harness per-sample logs into the observation table.

    Parameters
    ----------
    path : str, Path or sequence of them
        The ``--output_path`` folder (searched recursively), a model folder, one
        ``samples_<task>_<date>.jsonl`` file, or a glob.
    metric : str or mapping, optional
        Metric used as the score (``acc``, ``acc_norm``, ``exact_match``, ...), or a mapping
        ``{task: metric}``. Default: the first entry of each record's ``metrics`` list (the
        task's first metric).
    filter : str or mapping, optional
        Filter whose records are read (``none``, ``strict-match``, ``flexible-extract``, ...), or
        a mapping ``{task: filter}``. Default: the first filter in each file. Records of the other filters are the same
        documents scored after another answer extraction; they are set aside as
        ``other_filter`` so that no document is counted twice.
    columns : str or mapping, optional
        The command-line route to ``metric``: ``"acc_norm=score"`` picks that metric. No other
        role can be mapped.
    on_invalid : {'error', 'skip'}, default 'error'
        Raise on the first invalid record (a line that is not JSON, a metric value that is not a
        number, a duplicate document) or set such records aside and count them.
    score_scale : {'auto', 'unit', 'percent'}, default 'auto'
        See :func:`evalstats.io._pipeline.finalize`.

    Returns
    -------
    Ingest
        ``(observations, report)``, one row per document of the chosen filter. Columns:
        ``model``, ``dataset`` (the task), ``item`` (``doc_id``), ``variant`` (from ``shots``),
        ``run``, ``score``, ``answer`` (first filtered response, for generation tasks),
        ``response`` (first raw response), ``gold`` (``target``), and the factor ``shots``
        (``n-shot`` of the results file).

    Raises
    ------
    IngestError
        No samples file, an unknown metric or filter, or an invalid record with
        ``on_invalid='error'``.
    ParameterError
        ``columns`` maps something other than a metric to ``score``.

    Notes
    -----
    File names follow lm-eval's ``save_results_samples``: the task is the text between the first
    and the last ``_`` of ``samples_<task>_<date>.jsonl`` (``lm_eval.utils.get_file_task_name``)
    and the results file of a samples file is the ``.json`` in the same folder whose name ends
    with the same ``_<date>``. The model is ``model_name`` of that results file, else the name in
    ``config.model_args`` (``pretrained=``, ``model=``, ... as lm-eval parses it), else the
    folder name (``model_name_sanitized``, ``/`` written as ``__``). Metric values are cast as
    lm-eval writes them: numbers, booleans, and strings such as ``"1.0"`` or ``"True"`` (numpy
    scalars that ``handle_non_serializable`` turned into strings). Corpus-level metrics (``bleu``,
    ``chrf``, ``ter``) are logged per document as ``[reference, prediction]`` pairs and cannot be
    an item score: they are invalid (``corpus_metric``). Several samples files of one
    (model, task, shots) with different dates are repeated runs, numbered by date from 0.
    ``repeats`` inside one run are not recoverable: lm-eval logs one metric value per document
    and filter. Checked against: ``fixtures/dumps/lm_eval/`` (written in the harness's format),
    ``tests/io/test_lm_eval.py``.

    Examples
    --------
    >>> import tempfile, pathlib, json
    >>> d = pathlib.Path(tempfile.mkdtemp()) / "org__model"
    >>> d.mkdir()
    >>> recs = [{"doc_id": i, "target": "0", "filter": "none", "metrics": ["acc"], "acc": a}
    ...         for i, a in enumerate([1.0, 0.0, 1.0])]
    >>> _ = (d / "samples_boolq_2024-05-01T10-00-00.000001.jsonl").write_text(
    ...     "".join(json.dumps(r) + "\n" for r in recs))
    >>> obs, report = read_lm_eval(d.parent)
    >>> obs.select("model", "dataset", "item", "score").collect().rows()
    [('org__model', 'boolq', '0', 1.0), ('org__model', 'boolq', '1', 0.0), ('org__model', 'boolq', '2', 1.0)]
    """
    validate_options(on_invalid, score_scale)
    metric = _metric_from_columns(columns, _parse_metric(metric))
    hidden: list[Path] = []
    found = expand_paths(path, suffixes=(".jsonl", ".json"), skipped=hidden)
    for f in found:
        pointer = lfs_pointer(f)
        if pointer:
            raise IngestError(pointer, path=str(f))
    files = [(f, lay) for f in found if (lay := _layout(f)) is not None]
    if not files:
        raise IngestError(
            "no samples_<task>_<date>.jsonl files (lm_eval writes them with --log_samples), nor "
            "older harness outputs (<task>_write_out_info.json, samples_<task>.json, "
            "<model_args>_<task>.jsonl).",
            path=str(path),
        )
    results_cache: dict[Path, dict[str, tuple[Path, dict]]] = {}
    notes: list[str] = []
    note = skipped_note(hidden)
    if note:
        notes.append(note)
    parts: list[tuple[str, pl.DataFrame]] = []
    keys: list[tuple[str, str, Any, str]] = []
    metrics_used: list[str] = []
    metric_of_task: dict[str, str] = {}
    prints: list[dict[str, str]] = []
    companions: list[str | None] = []
    configs: dict[str, dict] = {}
    unextracted: dict[tuple[str, str], list[int]] = {}  # (model, task): [not extracted, rows]
    for f, layout in files:
        if layout == "samples":
            task, date = _task_and_date(f, layout, None)
            results = _results_for(f.parent, date, results_cache)
        else:
            results = _results_for(f.parent, None, results_cache)
            task, date = _task_and_date(f, layout, results)
            if date is not None:
                results = _results_for(f.parent, date, results_cache) or results
            if layout != "samples_json":
                notes.append(f"{f.name}: older lm-eval layout ({_LAYOUT_NAMES[layout]})")
            if layout == "v040" and results is None:
                notes.append(
                    f"{f.name}: no results file: task {task!r} taken from the file name "
                    "(<model_args>_<task>; put results.json next to it to match its task names)"
                )
        model, how = _model_name(results, f.parent)
        if how != "results" and layout == "v040":
            from_name = _model_from_040_name(f, task)
            if from_name:
                model, how = from_name, "the file name (model_args)"
        if how != "results":
            note = f"{f.parent}: model {model!r} taken from {how}"
            if note not in notes:
                notes.append(note)
        shots = _shots(results, task)
        frame, used, file_notes, print_ = _read_samples(
            f, task, model, shots, _for_task(metric, task), _for_task(filter, task), on_invalid
        )
        task_config = ((results or {}).get("configs") or {}).get(task)
        if isinstance(task_config, dict):
            shaping = _shaping_config(task_config)
            print_ = {**print_, "config": _digest(shaping)}
            configs[_digest(shaping)] = shaping
        if used is not None:
            info = metric_info(used, results, task)
            factor = score_factor(score_scale)
            if factor != 1.0:  # the known bounds are lm-eval's; the user rescales the scores
                info = MetricInfo(
                    info.name,
                    None if info.low is None else info.low * factor,
                    None if info.high is None else info.high * factor,
                    info.higher_is_better,
                )
            frame = frame.with_columns(info.columns())
        notes.extend(n for n in file_notes if n not in notes)
        read = frame.filter(
            ~pl.col("__other_filter")
            & ~pl.col("__bad_json")
            & ~pl.col("__truncated")
            & ~pl.col("__broken")
        )["answer"]
        tally = unextracted.setdefault((model, task), [0, 0])
        tally[0] += int((read == _NOT_EXTRACTED).sum())
        tally[1] += read.len()
        if used not in metrics_used:
            metrics_used.append(used)
        metric_of_task.setdefault(task, used)
        parts.append((str(f), frame))
        keys.append((model, task, shots, date or ""))
        prints.append(print_)
        companions.append(_digest(results) if results is not None else None)
    if isinstance(metric, Mapping):
        tasks = {k[1] for k in keys}
        unknown = [t for t in metric if t not in tasks]
        if unknown:
            raise ParameterError(
                f"`metric` names the task {unknown[0]!r}, which is not in the logs (tasks: "
                f"{', '.join(sorted(tasks))})."
            )
    notes.extend(_unextracted_notes(unextracted))
    parts, doc_sets, config_rule = _number_runs(parts, keys, notes, prints, configs)
    checks = [
        Check(
            "other_filter",
            pl.col("__other_filter"),
            quirk=True,
            message="a record of another filter for the same document",
        ),
        Check("invalid_json", pl.col("__bad_json"), message="the line is not a JSON object"),
        Check(
            "truncated_line",
            pl.col("__truncated"),
            quirk=True,
            message="the last line of the file is cut off (written while interrupted)",
        ),
        Check(
            "broken_record",
            pl.col("__broken"),
            quirk=True,
            message="a record broken across lines and damaged (part of a key lost)",
        ),
        Check(
            "corpus_metric",
            pl.col("__corpus_metric"),
            column="score",
            message="the metric is logged per document as [reference, prediction] "
            "(a corpus-level metric such as bleu); pick a per-document metric with metric=...",
        ),
    ]
    return finalize(
        [(p, df.lazy()) for p, df in parts],
        format="lm-eval",
        on_invalid=on_invalid,
        score_scale=score_scale,
        checks=checks,
        factors=["shots"]
        + (["doc_set"] if doc_sets else [])
        + (["task_config"] if config_rule is not None else []),
        column_rules=([config_rule] if config_rule is not None else [])
        + ([_doc_set_rule()] if doc_sets else []),
        companions=companions,
        source_names={
            "score": metrics_used[0]
            if len(metrics_used) == 1
            else "metric ("
            + ", ".join(f"{t}: {m}" for t, m in sorted(metric_of_task.items()))
            + ")",
            "item": "doc_id",
            "gold": "target",
        },
        notes=notes,
    )


#: What lm-eval's regex filters answer when the pattern finds no answer in the response.
_NOT_EXTRACTED = "[invalid]"

#: The share of unextracted answers from which the report warns before any number.
NOT_EXTRACTED_ALERT = 0.2


def _unextracted_notes(unextracted: Mapping[tuple[str, str], list[int]]) -> list[str]:
    """One note per model and task whose filter extracted no answer from some responses.

    lm-eval's regex filters put ``[invalid]`` in ``filtered_resps`` when their pattern finds
    nothing, and the metric scores it as wrong: the harness's score then counts the
    extraction's failures as the model's. The scores are kept as the harness gave them; the
    note says how many there were (the report repeats it first when they are many).
    """
    out = []
    for (model, task), (bad, rows) in sorted(unextracted.items()):
        if bad:
            out.append(
                f"{model} on {task}: {bad} of {rows} answers not extracted by the filter "
                f"({_NOT_EXTRACTED!r}, {bad / rows:.0%}), scored as wrong as lm-eval scored "
                "them: the score measures the answer extraction as much as the model"
            )
    return out


_LAYOUT_NAMES = {
    "write_out": "0.3 --write_out",
    "v040": "0.4.0-0.4.2 --log_samples, a JSON array",
    "samples_json": "samples_<task>.json, a JSON array",
}


def _parse_metric(metric: str | Mapping[str, str] | None) -> str | Mapping[str, str] | None:
    """``"acc"`` stays a name; ``"boolq=acc,arc_easy=acc_norm"`` becomes ``{task: metric}``."""
    if not isinstance(metric, str) or "=" not in metric:
        return metric
    out: dict[str, str] = {}
    for part in metric.split(","):
        part = part.strip()
        if not part:
            continue
        if "=" not in part:
            raise ParameterError(
                f"`metric` entry {part!r} is not of the form TASK=NAME (for example "
                "boolq=acc); give one name for every task, or TASK=NAME for each."
            )
        task, name = (x.strip() for x in part.split("=", 1))
        out[task] = name
    return out


def _for_task(option: str | Mapping[str, str] | None, task: str) -> str | None:
    if isinstance(option, Mapping):
        return option.get(task)
    return option


def _metric_from_columns(columns: str | Mapping[str, str] | None, metric: Any) -> Any:
    if columns is None:
        return metric
    from evalstats.io._columns import parse_mapping

    mapping = parse_mapping(columns)
    if len(mapping) != 1 or next(iter(mapping.values())) != "score":
        raise ParameterError(
            "`columns` for lm-eval can only pick the metric, as '<metric>=score' "
            f"(for example acc_norm=score); got {columns!r}."
        )
    (name,) = mapping
    if metric is not None and metric != name:
        raise ParameterError(f"`metric` is {metric!r} but `columns` picks {name!r}; give one.")
    return name


#: The types lm-evaluation-harness writes for the fields of a results file that are read
#: (``EvaluationTracker.save_results_aggregated``), checked before a value is read: the results
#: file is metadata beside the samples, so a field of another type is left unread (the model
#: name then comes from the folder, the shots are not known), never a traceback.
_RESULTS_SPEC = {
    "results": {"*": ("object",)},
    "configs": {"*": ("object",)},
    "config": ("object",),
    "n-shot": ("object",),
    "higher_is_better": {"*": ("object",)},
    "model_name": ("string",),
}


def _results_for(folder: Path, date: str | None, cache: dict) -> dict | None:
    """The results JSON in ``folder`` whose name ends with ``_<date>.json`` (None if absent).

    Without a date (older layouts): ``results.json``, else the folder's only results file.
    """
    if folder not in cache:
        found: dict[str, tuple[Path, dict]] = {}
        for f in sorted(folder.glob("*.json")):
            if "_" not in f.stem and f.name != "results.json":
                continue
            if f.name.startswith("samples_") or _WRITE_OUT.match(f.name) or lfs_pointer(f):
                continue
            try:
                doc = json.loads(f.read_text(encoding="utf-8"))
            except (OSError, ValueError, RecursionError) as exc:
                raise IngestError(
                    f"the results file is not valid JSON ({_json_problem(exc)}).", path=str(f)
                ) from None
            if isinstance(doc, dict):  # a field of another type is not read (metadata)
                doc = {
                    k: v
                    for k, v in doc.items()
                    if k not in _RESULTS_SPEC or problem(v, _RESULTS_SPEC[k]) is None
                }
            if isinstance(doc, dict) and ("results" in doc or "config" in doc):
                found[f.stem.rsplit("_", 1)[-1] if "_" in f.stem else ""] = (f, doc)
        cache[folder] = found
    if date is None:
        hit = cache[folder].get("")
        if hit is None and len(cache[folder]) == 1:
            hit = next(iter(cache[folder].values()))
    else:
        hit = cache[folder].get(date)
    return hit[1] if hit else None


def _model_name(results: dict | None, folder: Path) -> tuple[str, str]:
    if results:
        name = results.get("model_name")
        if isinstance(name, str) and name:
            return name, "results"
        args = _d(results.get("config")).get("model_args")
        if isinstance(args, dict):
            for prefix in _MODEL_ARG_PREFIXES:
                if isinstance(args.get(prefix[:-1]), str):
                    return args[prefix[:-1]], "results"
        elif isinstance(args, str):
            for prefix in _MODEL_ARG_PREFIXES:
                if prefix in args:
                    return args.split(prefix)[1].split(",")[0], "results"
        return folder.name, "the folder name (the results file names no model)"
    return folder.name, "the folder name (no results_<date>.json next to the samples)"


def _shots(results: dict | None, task: str) -> int | None:
    if not results:
        return None
    n = _d(results.get("n-shot")).get(task)
    if n is None:
        n = ((results.get("configs") or {}).get(task) or {}).get("num_fewshot")
    try:
        return None if n is None else int(n)
    except (TypeError, ValueError):
        return None


def _value(v: Any) -> tuple[str | None, bool]:
    """(score as text for finalize, is_corpus_metric)."""
    if v is None:
        return None, False
    if isinstance(v, bool):
        return ("true" if v else "false"), False
    if isinstance(v, (int, float)):
        # an integer beyond a float's range stays its text: set aside as unparseable_score
        return (repr(float(v)) if finite(v) is not None or isinstance(v, float) else str(v)), False
    if isinstance(v, str):
        return v, False
    return json.dumps(v, ensure_ascii=False), isinstance(v, list)


def _generated(v: Any, *, depth: int) -> str | None:
    """Text of a generation task's first (filtered) response; None for loglikelihood tasks.

    ``filtered_resps`` of a generation task is ``["text"]`` and ``resps`` is ``[["text"]]``; for
    loglikelihood tasks they hold ``[loglikelihood, is_greedy]`` pairs (as strings), which are not
    answers.
    """
    for _ in range(depth):
        if not (isinstance(v, list) and v):
            return None
        v = v[0]
    return v if isinstance(v, str) else None


def _first_text(v: Any) -> str | None:
    while isinstance(v, list) and v:
        v = v[0]
    return v if isinstance(v, str) else None


def _read_samples(
    f: Path,
    task: str,
    model: str,
    shots: int | None,
    metric: str | None,
    filter: str | None,
    on_invalid: str,
):
    if f.stat().st_size == 0:
        raise IngestError("the file is empty (0 bytes).", path=str(f))
    records: list[dict | None] = []
    try:
        text = f.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise IngestError(f"the file is not valid UTF-8 text ({exc}).", path=str(f)) from None
    lines = json_lines(text)
    if text.lstrip().startswith("["):  # older layouts: one JSON array (rows = its elements)
        try:
            array = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise IngestError(
                f"the file is not valid JSON ({_json_problem(exc)}).", path=str(f)
            ) from None
        if not isinstance(array, list):
            raise IngestError("expected a JSON array of samples.", path=str(f))
        lines = [json.dumps(x) for x in array]
    row = 0
    damage: list[str | None] = []  # a quirk of the line: truncated_line, broken_record
    joined: list[str] = []
    broken: list[str] = []
    filled = [i for i, ln in enumerate(lines) if ln.strip()]
    skip_to = -1
    for pos, at in enumerate(filled):
        if at <= skip_to:
            continue
        line = lines[at]
        row += 1
        try:
            rec = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as exc:
            rec = None
            mended = _mend_broken_record(lines, filled, pos)
            if mended is not None:
                rec, skip_to = mended
                joined.append(f"{at + 1}-{skip_to + 1}")
                records.append(rec)
                damage.append(None)
                continue
            opened_only = line.lstrip().startswith("{") and not line.rstrip().endswith("}")
            if pos == len(filled) - 1 and pos > 0 and not text.endswith("\n"):
                # the last line of the file, cut off while it was written: a quirk, counted
                records.append(None)
                damage.append("truncated_line")
                continue
            tail = [i for i in filled[pos + 1 : pos + 4] if not lines[i].lstrip().startswith("{")]
            if opened_only and tail and tail[0] == filled[pos + 1]:
                # a record broken by a raw line break and damaged (a key cut): its pieces
                # are one record, set aside and counted as one
                end = pos + 1
                while end < len(filled) and not lines[filled[end]].lstrip().startswith("{"):
                    end += 1
                skip_to = filled[end - 1]
                broken.append(f"{at + 1}-{skip_to + 1}")
                records.append(None)
                damage.append("broken_record")
                continue
            if on_invalid == "error":
                raise IngestError(
                    f"the line is not valid JSON ({_json_problem(exc)}). To set such "
                    "lines aside and count them, pass on_invalid='skip' (CLI: --on-invalid skip).",
                    path=str(f),
                    row=row,
                ) from None
        records.append(rec if isinstance(rec, dict) else None)
        damage.append(None)
        if rec is not None and not isinstance(rec, dict) and on_invalid == "error":
            raise IngestError(
                f"expected a JSON object, got {type(rec).__name__}.", path=str(f), row=row
            )
    good = [r for r in records if r is not None]
    filters = list(dict.fromkeys(str(r.get("filter", "none")) for r in good))
    notes: list[str] = []
    if joined:
        notes.append(
            f"{f.name}: {len(joined)} record(s) broken across lines by a raw line break inside "
            f"a string (lines {', '.join(joined)}) read as one record each, the break kept as "
            "a newline in the string"
        )
    if broken:
        notes.append(
            f"warning: {f.name}: {len(broken)} record(s) broken across lines and damaged "
            f"(lines {', '.join(broken)}: a raw line break, and part of a key lost): set aside "
            "as broken_record, one row each"
        )
    if "truncated_line" in damage:
        notes.append(
            f"{f.name}: the last line is cut off (the file was truncated while it was "
            "written): set aside as truncated_line"
        )
    chosen_filter = filter if filter is not None else (filters[0] if filters else "none")
    if good and chosen_filter not in filters:
        raise IngestError(
            f"no records of filter {chosen_filter!r} (filters: {', '.join(map(repr, filters))}).",
            path=str(f),
        )
    if len(filters) > 1:
        notes.append(
            f"{f.name}: filter {chosen_filter!r} read; records of "
            f"{', '.join(repr(x) for x in filters if x != chosen_filter)} set aside as other_filter "
            "(pick one with filter=...)"
        )
    mine = [r for r in good if str(r.get("filter", "none")) == chosen_filter]
    available = _metrics_of(mine)
    per_doc = [m for m in available if _per_document(mine, m)]
    corpus = [m for m in available if m not in per_doc]
    if metric is not None and mine and metric not in available:
        raise IngestError(
            f"no metric {metric!r} in the records of task {task!r} (metrics: "
            f"{', '.join(map(repr, available)) or 'none'}).",
            path=str(f),
        )
    if (metric is not None and metric in corpus) or (metric is None and corpus and not per_doc):
        name = metric if metric is not None else corpus[0]
        raise IngestError(
            f"metric {name!r} of task {task!r} is corpus-level: lm-eval logs it per document as "
            "[reference, prediction] and aggregates it over the corpus, so it gives no item score"
            + (
                f"; pick a per-document metric ({', '.join(map(repr, per_doc))}) with "
                f"--metric {task}=<name>."
                if per_doc
                else "; the task logs no per-document metric."
            ),
            path=str(f),
            column=name,
        )
    used = metric if metric is not None else (per_doc[0] if per_doc else None)
    if used is None:
        raise IngestError(
            f"no metric in the records of task {task!r} (metrics: none).", path=str(f)
        )
    if metric is None and len(available) > 1:
        skipped = (
            f"; corpus-level, not item scores: {', '.join(map(repr, corpus))}" if corpus else ""
        )
        notes.append(
            f"{task}: score = metric {used!r}, the first per-document metric (also logged: "
            f"{', '.join(repr(x) for x in per_doc if x != used) or 'none'}{skipped}; pick one "
            f"with --metric {task}=<name>)"
        )
    cols: dict[str, list] = {
        k: []
        for k in (
            "model",
            "dataset",
            "item",
            "score",
            "answer",
            "response",
            "gold",
            "__input_text",
            "__other_filter",
            "__bad_json",
            "__truncated",
            "__broken",
            "__corpus_metric",
        )
    }
    for rec, cut in zip(records, damage):
        ok = isinstance(rec, dict)  # a line that is not a JSON object counts as bad_json
        rec = rec if ok else {}
        score, corpus = _value(rec.get(used))
        doc_id = rec.get("doc_id")
        args = rec.get("arguments")
        prompt = None
        if isinstance(args, dict):
            first = args.get("gen_args_0")
            prompt = _first_text(first.get("arg_0")) if isinstance(first, dict) else None
        elif isinstance(args, list):
            prompt = _first_text(args)
        cols["model"].append(model if ok else None)
        cols["dataset"].append(task if ok else None)
        cols["item"].append(None if doc_id is None else str(doc_id))
        cols["score"].append(score)
        cols["answer"].append(_generated(rec.get("filtered_resps"), depth=1))
        cols["response"].append(_generated(rec.get("resps"), depth=2))
        gold = rec.get("target", rec.get("truth"))
        cols["gold"].append(None if gold is None else str(gold))
        cols["__input_text"].append(prompt)
        cols["__other_filter"].append(ok and str(rec.get("filter", "none")) != chosen_filter)
        cols["__bad_json"].append(not ok and cut is None)
        cols["__truncated"].append(cut == "truncated_line")
        cols["__broken"].append(cut == "broken_record")
        cols["__corpus_metric"].append(corpus)
    schema = {
        "model": pl.String,
        "dataset": pl.String,
        "item": pl.String,
        "score": pl.String,
        "answer": pl.String,
        "response": pl.String,
        "gold": pl.String,
        "__input_text": pl.String,
        "__other_filter": pl.Boolean,
        "__bad_json": pl.Boolean,
        "__truncated": pl.Boolean,
        "__broken": pl.Boolean,
        "__corpus_metric": pl.Boolean,
    }
    frame = pl.DataFrame(cols, schema=schema).with_columns(
        pl.lit(shots, dtype=pl.Int64).alias("shots")
    )
    return frame, used, notes, _fingerprint(mine, chosen_filter)


#: Keys of an lm-eval task config that are bookkeeping, not what shapes the prompt or the
#: scoring: lm-eval 0.4.9 records the model arguments under ``metadata`` (``pretrained``,
#: ``dtype``, the config's ``version``), so two runs of one prompt differ there.
_BOOKKEEPING_KEYS = frozenset(
    {"metadata", "version", "task_alias", "tag", "group", "group_alias", "unsafe_code"}
)


def _shaping_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a task config that shapes the prompt or the scoring (bookkeeping dropped).

    Examples
    --------
    >>> _shaping_config({"doc_to_text": "Q: {{q}}", "metadata": {"pretrained": "a"}})
    {'doc_to_text': 'Q: {{q}}'}
    """
    return {k: v for k, v in config.items() if k not in _BOOKKEEPING_KEYS}


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def _mend_broken_record(
    lines: Sequence[str], filled: Sequence[int], pos: int, most: int = 4
) -> tuple[dict, int] | None:
    """A record broken across lines by a raw line break inside a string, joined again.

    A JSON string cannot hold a raw line break, so a record whose line fails to parse and
    that parses once the next one to ``most`` lines are joined to it with an escaped newline
    was one record: ``(record, index of its last line)``, else None.
    """
    text = lines[filled[pos]]
    for nxt in filled[pos + 1 : pos + 1 + most]:
        text = f"{text}\\n{lines[nxt]}"
        try:
            rec = json.loads(text)
        except (json.JSONDecodeError, RecursionError):
            continue
        if not isinstance(rec, dict) or any("\n" in str(k) for k in rec):
            return None  # a break inside a key is damage, not a line break in a string
        return rec, nxt
    return None


def _fingerprint(records: list[dict], chosen_filter: str) -> dict[str, str]:
    """What makes two samples files of one task the same configuration, from the records.

    The prompt of each document (``prompt_hash``, else the prompt text), its gold (``target``)
    and the filter read: two files that differ in any of them are not repeated runs.
    """
    prompts = []
    targets = []
    for r in records:
        doc = str(r.get("doc_id"))
        prompt = r.get("prompt_hash")
        if prompt is None:
            args = r.get("arguments")
            prompt = _digest(args) if args is not None else None
        prompts.append((doc, prompt))
        targets.append((doc, r.get("target_hash") or r.get("target", r.get("truth"))))
    return {
        "prompts": _digest(sorted(prompts, key=str)),
        "gold": _digest(sorted(targets, key=str)),
        "filter": chosen_filter,
    }


def _per_document(records: list[dict], metric: str, n: int = 50) -> bool:
    """Whether ``metric`` holds one number per document (not a [reference, prediction] pair)."""
    seen = 0
    for r in records:
        v = r.get(metric)
        if v is None:
            continue
        if isinstance(v, (list, dict)):
            return False
        seen += 1
        if seen >= n:
            break
    return True


def _metrics_of(records: list[dict]) -> list[str]:
    names: list[str] = []
    for r in records:
        listed = r.get("metrics")
        if isinstance(listed, list):
            cand = [str(x) for x in listed]
        else:  # older harness versions do not write "metrics"
            cand = [k for k in r if k not in _BOOKKEEPING and not _WRITE_OUT_KEYS.match(k)]
        for c in cand:
            if c not in names:
                names.append(c)
    return names


def _doc_set(df: pl.DataFrame) -> frozenset:
    mine = df.filter(
        ~pl.col("__other_filter")
        & ~pl.col("__bad_json")
        & ~pl.col("__truncated")
        & ~pl.col("__broken")
    )
    return frozenset(mine.get_column("item").drop_nulls().to_list())


def _number_runs(parts, keys, notes, prints, configs):
    """Number samples files of the same (model, task, shots) and configuration as runs 0, 1, ...

    Files whose document sets differ (a full run and a ``--limit`` run) are not repeated runs
    of one configuration: they are kept apart by a ``doc_set`` factor (``"<n> docs"``), each
    set numbered on its own, and a note says so. Files of one document set whose configuration
    differs (the task config of their results file, the prompt or gold of a document, the
    filter read) are not repeated runs either: they are prompt variants, told apart by a
    ``task_config`` factor (a short fingerprint of the configuration). Only files of the same
    configuration are numbered as runs, by date. Returns the parts, whether any document set
    differs, and the rule (with its evidence) when configurations differ.
    """
    groups: dict[tuple, list[int]] = {}
    for i, (model, task, shots, _date) in enumerate(keys):
        groups.setdefault((model, task, shots), []).append(i)
    run_of = [0] * len(parts)
    set_of: list[str | None] = [None] * len(parts)
    config_of: list[str | None] = [None] * len(parts)
    any_split = False
    differs: dict[str, None] = {}
    n_variant_groups = 0
    for (model, task, _), idx in groups.items():
        idx.sort(key=lambda i: keys[i][3])
        sets: dict[frozenset, list[int]] = {}
        for i in idx:
            sets.setdefault(_doc_set(parts[i][1]), []).append(i)
        if len(sets) > 1:
            any_split = True
            counts = [len(s) for s in sets]
            dup_counts = len(set(counts)) < len(counts)
            for k, (docs, members) in enumerate(sets.items()):
                label = f"{len(docs)} docs" + (f" #{k + 1}" if dup_counts else "")
                for i in members:
                    set_of[i] = label
            notes.append(
                f"warning: {model} / {task}: {len(idx)} samples files cover different documents "
                f"({', '.join(f'{len(d)} docs in {len(m)} file(s)' for d, m in sets.items())}): "
                "kept apart as doc_set variants, not numbered as repeated runs (a full run and a "
                "--limit run are not repeats)"
            )
        for members in sets.values():
            same: dict[str, list[int]] = {}
            for i in members:
                same.setdefault(_digest(prints[i]), []).append(i)
            if len(same) > 1:
                n_variant_groups += 1
                what = _what_differs([prints[m[0]] for m in same.values()], configs)
                differs.update(dict.fromkeys(what))
                for key, runs in same.items():
                    for i in runs:
                        config_of[i] = key[:8]
                notes.append(
                    f"warning: {model} / {task}: {len(members)} samples files are {len(same)} "
                    f"configurations ({'; '.join(what)} differ): read as task_config variants, "
                    "not as repeated runs; only files of the same configuration are runs"
                )
            for runs in same.values():
                for r, i in enumerate(runs):
                    run_of[i] = r
                if len(runs) > 1:
                    notes.append(
                        f"{model} / {task}: {len(runs)} samples files with the same documents and "
                        f"different dates read as runs 0-{len(runs) - 1} (oldest first; the same "
                        "configuration)"
                    )
    rule = None
    if differs:
        from evalstats._column_rules import ColumnRule

        rule = ColumnRule(
            "task_config",
            "prompt",
            f"samples files of one task differ in {'; '.join(differs)} "
            f"({n_variant_groups} model x task group(s)): prompt variants, not repeated runs",
        )
    out = []
    for i, (p, df) in enumerate(parts):
        df = df.with_columns(pl.lit(run_of[i], dtype=pl.Int64).alias("run"))
        if any_split:
            df = df.with_columns(pl.lit(set_of[i], dtype=pl.String).alias("doc_set"))
        if rule is not None:
            df = df.with_columns(pl.lit(config_of[i], dtype=pl.String).alias("task_config"))
        out.append((p, df))
    return out, any_split, rule


def _doc_set_rule():
    from evalstats._column_rules import ColumnRule

    return ColumnRule(
        "doc_set",
        "setting",
        "samples files of one task cover different documents (a full run and a --limit run): "
        "held apart and analysed per document set, neither a prompt variant nor a repeated run",
    )


def _what_differs(prints: list[dict[str, str]], configs: Mapping[str, dict]) -> list[str]:
    """What the configurations ``prints`` differ in, for the note and the design's evidence."""
    what = []
    cfgs = [configs.get(p.get("config", "")) for p in prints]
    if len({p.get("config") for p in prints}) > 1:
        keys = sorted(
            {
                k
                for c in cfgs
                if c
                for k in c
                if len({json.dumps((d or {}).get(k), sort_keys=True, default=str) for d in cfgs})
                > 1
            }
        )
        what.append("task config" + (f" ({', '.join(keys)})" if keys else ""))
    if len({p["prompts"] for p in prints}) > 1:
        what.append("prompts (prompt_hash)")
    if len({p["gold"] for p in prints}) > 1:
        what.append("gold (target)")
    if len({p["filter"] for p in prints}) > 1:
        what.append("filter")
    return what or ["configuration"]


def _json_problem(exc: BaseException) -> str:
    """What is wrong with a JSON text, from the error its parser raised."""
    if isinstance(exc, RecursionError):
        return "nested too deeply to read"
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at line {exc.lineno}, column {exc.colno}"
    return str(exc)
