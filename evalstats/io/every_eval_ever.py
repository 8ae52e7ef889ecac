"""Every Eval Ever records (the EvalEval coalition's exchange schema) in and out.

An evaluation is one aggregate JSON (``eval.schema.json``: ``model_info``, one entry of
``evaluation_results`` per metric result, each with its ``metric_config`` and the producer's
``score_details.score``) and, for per-sample results, a companion ``{uuid}_samples.jsonl``
(``instance_level_eval.schema.json``: one line per sample and result, with ``sample_id``,
``interaction_type`` ``single_turn``, ``multi_turn`` or ``agentic``, ``evaluation.score`` and
``evaluation.is_correct``). :func:`read_every_eval_ever` reads them into the observation table;
:func:`write_every_eval_ever` writes an observation table as such records. See
``docs/formats/every-eval-ever.md``.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from evalstats._column_rules import ColumnRule
from evalstats.errors import IngestError, ParameterError
from evalstats.io._files import is_hidden, lfs_pointer, skipped_note
from evalstats.io._pipeline import Check, OnInvalid, ScoreScale, finalize, validate_options
from evalstats.io._report import Ingest
from evalstats.io._rows import json_lines
from evalstats.schema import DEFAULT_METRIC, OBSERVATION_COLUMNS, factor_columns

__all__ = [
    "SCHEMA_VERSION",
    "detect_every_eval_ever",
    "read_every_eval_ever",
    "write_every_eval_ever",
]

#: The schema version :func:`write_every_eval_ever` writes.
SCHEMA_VERSION = "0.3.0"

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
        return json.loads(f.read_text(encoding="utf-8"))
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
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v) if math.isfinite(v) else None


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


def _result_info(
    result: dict, metrics: Mapping[int, dict[str, Any]] | None = None
) -> dict[str, Any]:
    """Metric name, bounds, direction and settings of one ``evaluation_results`` entry.

    ``metrics``: the metric of each result as :func:`_metrics` resolved it across records.
    """
    cfg = _d(result.get("metric_config"))
    description = cfg.get("evaluation_description")
    name = (
        cfg.get("metric_id")
        or cfg.get("metric_name")
        or result.get("evaluation_result_id")
        # schema 0.1.0 has no metric_id: its converters name the metric in the description
        or (description if isinstance(description, str) and _IDENT.match(description) else None)
        or "score"
    )
    # schema 0.1.0 (HELM): a statistic computed on perturbed inputs (the worst case over
    # robustness or fairness perturbations) is another statistic than the plain one
    perturbation = _d(_d(_d(result.get("score_details")).get("details")).get("perturbation"))
    if isinstance(perturbation.get("name"), str):
        how = perturbation.get("computed_on")
        name = f"{name} ({perturbation['name']}{f', {how}' if isinstance(how, str) else ''})"
    low, high = _bound(cfg.get("min_score")), _bound(cfg.get("max_score"))
    if low is None and high is None and cfg.get("score_type") == "binary":
        low, high = 0.0, 1.0
    if low is not None and high is not None and not low < high:
        low = high = None
    lower = cfg.get("lower_is_better")
    gen = _d(result.get("generation_config"))
    settings: dict[str, Any] = {}
    variant = None
    for k, v in _d(gen.get("additional_details")).items():
        if k == _OWN + "variant":
            variant = v if isinstance(v, str) else None
        elif not k.startswith(_OWN):
            value = _scalar(v)
            if value is None or isinstance(value, (bool, int, float, str)):
                settings[k] = value
    for k, v in _d(gen.get("generation_args")).items():
        if k in _GENERATION_ARGS and (v is None or isinstance(v, (int, float, bool))):
            settings[k] = v
    declared = {
        "metric": str(name),
        "low": low,
        "high": high,
        "higher_is_better": (not lower) if isinstance(lower, bool) else None,
    }
    if metrics is not None and id(result) in metrics:
        declared = metrics[id(result)]
    return {
        **declared,
        "settings": settings,
        "variant": variant,
        "score": _d(result.get("score_details")).get("score"),
        "name": result.get("evaluation_name"),
        "id": result.get("evaluation_result_id"),
    }


def _record_config(doc: Mapping[str, Any], result: Mapping[str, Any]) -> dict[str, Any]:
    """What a record says it ran, beside the metric: the scalars that may tell records apart.

    ``model_info.inference_platform``, ``model_info.inference_engine`` (``name``, ``version``),
    ``model_info.additional_details`` (an agent scaffold, a reasoning effort, ...), then the
    result's ``generation_config.additional_details`` and ``generation_args`` (which win when
    a key is in both).
    """
    mi = _d(doc.get("model_info"))
    out: dict[str, Any] = {}
    for k, v in _d(mi.get("additional_details")).items():
        if not str(k).startswith(_OWN):
            out[str(k)] = _scalar(v)
    if isinstance(mi.get("inference_platform"), str):
        out["inference_platform"] = mi["inference_platform"]
    engine = mi.get("inference_engine")
    if isinstance(engine, dict):
        for k, col in (("name", "inference_engine"), ("version", "inference_engine_version")):
            if isinstance(engine.get(k), str):
                out[col] = engine[k]
    elif isinstance(engine, str):
        out["inference_engine"] = engine
    gen = _d(_d(result).get("generation_config"))
    for k, v in _d(gen.get("additional_details")).items():
        if not str(k).startswith(_OWN):
            out[str(k)] = _scalar(v)
    for k, v in _d(gen.get("generation_args")).items():
        if k in _GENERATION_ARGS and (v is None or isinstance(v, (int, float, bool))):
            out[k] = v
    # a list or object (spelled as text by _scalar) is not a level of a setting
    return {
        k: v
        for k, v in out.items()
        if v is None
        or isinstance(v, (bool, int, float))
        or (isinstance(v, str) and v[:1] not in "[{")
    }


def _distinguishing(entries: Sequence[tuple[str, tuple, dict[str, Any]]]) -> list[str]:
    """The configuration keys that tell apart results that would otherwise be the same unit.

    ``entries`` are ``(record, key, config)`` per evaluation result: the record it comes from,
    what identifies its rows without the configuration (model, dataset, metric and the settings
    already read) and :func:`_record_config`. Results that share a key were told apart by their
    producer only through their configuration (two agent scaffolds, two reasoning efforts of
    one model on one dataset); without it their rows are duplicates.

    The keys are chosen greedily: each time the key that separates the most pairs of
    still-colliding results, until none collide or no key separates them (results of one
    record that differ in nothing are duplicates). Keys whose values are levels -- a value
    shared by two or more records (a scaffold, an effort) -- come before keys whose every value
    belongs to one record (a rank, a cost, a timestamp: a quantity or an identifier of the
    record, which tells records apart but is not what was varied); ties go to the key with
    fewer values, then to text over numbers. A key that separates nothing more is left out: the
    other keys that differ (a display name, a leaderboard flag) are functions of the ones kept.
    """
    groups: dict[tuple, list[tuple[str, dict[str, Any]]]] = {}
    for record, key, cfg in entries:
        groups.setdefault(key, []).append((record, cfg))
    blocks = [[cfg for _, cfg in g] for g in groups.values() if len(g) > 1]
    if not blocks:
        return []
    owners: dict[str, dict[Any, set[str]]] = {}
    for g in groups.values():
        for record, cfg in g:
            for k, v in cfg.items():
                if v is not None:
                    owners.setdefault(k, {}).setdefault(_hashable(v), set()).add(record)
    keys = sorted(owners)
    level = {k for k in keys if any(len(recs) > 1 for recs in owners[k].values())}

    def separated(k: str) -> int:
        n = 0
        for b in blocks:
            counts: dict[Any, int] = {}
            for cfg in b:
                v = _hashable(cfg.get(k))
                counts[v] = counts.get(v, 0) + 1
            n += (len(b) * (len(b) - 1) - sum(c * (c - 1) for c in counts.values())) // 2
        return n

    def numeric(k: str) -> bool:
        return all(
            isinstance(v, (int, float)) or (isinstance(v, str) and _is_number(v))
            for _, v in owners[k]
        )

    chosen: list[str] = []
    while blocks:
        best = None
        for tier in ([k for k in keys if k in level], [k for k in keys if k not in level]):
            scored = [
                (-separated(k), len(owners[k]), numeric(k), k) for k in tier if k not in chosen
            ]
            scored = [s for s in scored if s[0] < 0]
            if scored:
                best = min(scored)[3]
                break
        if best is None:
            break
        chosen.append(best)
        split: list[list[dict[str, Any]]] = []
        for b in blocks:
            parts: dict[Any, list[dict[str, Any]]] = {}
            for cfg in b:
                parts.setdefault(_hashable(cfg.get(best)), []).append(cfg)
            split += [p for p in parts.values() if len(p) > 1]
        blocks = split
    return chosen


def _configurations(
    docs: Mapping[Path, dict], *, settings_read: bool, metrics: Mapping[int, dict[str, Any]]
) -> tuple[list[str], dict[int, dict[str, Any]]]:
    """The distinguishing configuration keys of ``docs`` and, per result, their values.

    ``settings_read``: the result's ``generation_config`` settings are columns already (records
    with samples), so they are part of what identifies a result and not candidates.
    """
    entries = []
    configs: dict[int, dict[str, Any]] = {}
    for f, doc in docs.items():
        mi = _d(doc.get("model_info"))
        model = mi.get("id") or mi.get("name")
        for r in doc.get("evaluation_results") or []:
            if not isinstance(r, dict):
                continue
            info = _result_info(r, metrics)
            cfg = _record_config(doc, r)
            key: tuple = (model, _dataset_of(r, r.get("evaluation_name")), info["metric"])
            if settings_read:
                held = info["settings"]
                key += (tuple(sorted((k, repr(v)) for k, v in held.items())), info["variant"])
                cfg = {k: v for k, v in cfg.items() if k not in held}
            configs[id(r)] = cfg
            entries.append((str(f), key, cfg))
    chosen = _distinguishing(entries)
    return chosen, {i: {k: cfg.get(k) for k in chosen} for i, cfg in configs.items()}


def _config_rules(chosen: Sequence[str], docs: Mapping[Path, dict]) -> list[ColumnRule]:
    n = len(docs)
    return [
        ColumnRule(
            _factor_name(k),
            _role(k),
            f"Every Eval Ever record configuration {k!r} (model_info or generation_config): "
            f"tells apart results of the same model, dataset and metric in {n} record(s)",
        )
        for k in chosen
    ]


def _config_dtype(values: Sequence[Any]) -> pl.DataType:
    """One column type for configuration values: their numeric or boolean type, else text."""
    kinds = {type(v) for v in values if v is not None}
    if kinds and kinds <= {int, float}:
        return pl.Float64() if float in kinds else pl.Int64()
    if kinds == {bool}:
        return pl.Boolean()
    return pl.String()


def _config_series(name: str, values: Sequence[Any], dtype: pl.DataType) -> pl.Series:
    if dtype == pl.String():
        values = [None if v is None else str(v) for v in values]
    return pl.Series(name, values, dtype=dtype, strict=False)


def _hashable(v: Any) -> Any:
    return (type(v).__name__, v) if v is not None else None


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _declares_range(result: Mapping[str, Any]) -> bool:
    """Whether a result declares its metric's range (an absent or null bound is not provided)."""
    cfg = _d(_d(result).get("metric_config"))
    return (
        cfg.get("min_score") is not None
        or cfg.get("max_score") is not None
        or cfg.get("score_type") == "binary"
    )


def _shown(low: float | None, high: float | None) -> str:
    def num(v: float | None, inf: str) -> str:
        return inf if v is None else f"{v:g}"

    return f"[{num(low, '-inf')}, {num(high, 'inf')}]"


def _metrics(docs: Mapping[Path, dict]) -> tuple[dict[int, dict[str, Any]], list[str]]:
    """The metric of every result (by ``id``), its range and direction, one per name; notes.

    A metric name means one scale. Records name metrics freely, and one name (``score``,
    ``accuracy``) can be declared with different ranges: HELM Instruct's 0-1 mean win rate
    and its 1-5 harmlessness ratings are both ``score``. Rescaling one to the other, or
    stretching one range over both, would put a 0-5 rating and a 0-1 win rate in one analysis
    and make bounds mean nothing; they are different metrics. So:

    1. a result that does not provide a bound (absent or null ``min_score``/``max_score``,
       ``lower_is_better``) takes what the others provide for its name when they agree;
    2. a name whose results declare different ranges or directions is qualified by each
       result's evaluation (``score (Mean win rate)``, ``score (Vicuna)``): one metric per
       evaluation, each with its own declaration;
    3. an evaluation whose records still disagree (one leaderboard declaring a range once
       bounded, once unbounded) takes the widest range (``lower_is_better`` differing: the
       ones that declare it get ``, lower is better`` in their name).

    Every such decision is a note; none stops the read.
    """
    entries: dict[str, list[tuple[dict, dict[str, Any]]]] = {}
    for doc in docs.values():
        for r in doc.get("evaluation_results") or []:
            if isinstance(r, dict):
                info = _result_info(r)
                entries.setdefault(info["metric"], []).append((r, info))
    out: dict[int, dict[str, Any]] = {}
    notes: list[str] = []

    def agreed(group: list[tuple[dict, dict[str, Any]]]) -> tuple[set, set]:
        ranges = {(i["low"], i["high"]) for r, i in group if _declares_range(r)}
        dirs = {i["higher_is_better"] for _, i in group if i["higher_is_better"] is not None}
        return ranges, dirs

    def assign(group, name: str, low, high, hib) -> None:
        for r, _ in group:
            out[id(r)] = {"metric": name, "low": low, "high": high, "higher_is_better": hib}

    for name, group in entries.items():
        ranges, dirs = agreed(group)
        if len(ranges) <= 1 and len(dirs) <= 1:
            low, high = next(iter(ranges), (None, None))
            assign(group, name, low, high, next(iter(dirs), None))
            continue
        by_eval: dict[str, list[tuple[dict, dict[str, Any]]]] = {}
        for r, i in group:
            label = r.get("evaluation_name") or _dataset_of(r, None) or "?"
            by_eval.setdefault(str(label), []).append((r, i))
        shown: dict[str, list[str]] = {}
        for r, i in group:
            if _declares_range(r):
                label = str(r.get("evaluation_name") or _dataset_of(r, None) or "?")
                what = _shown(i["low"], i["high"])
                if i["higher_is_better"] is False:
                    what += " lower is better"
                if label not in shown.setdefault(what, []):
                    shown[what].append(label)
        declared = "; ".join(
            f"{w} by {', '.join(ls[:3])}{', ...' if len(ls) > 3 else ''}" for w, ls in shown.items()
        )
        notes.append(
            f"metric {name!r} is declared with different ranges or directions ({declared}): "
            "scores on different scales are different metrics, so each evaluation's is named "
            f"by it ({', '.join(repr(f'{name} ({e})') for e in list(by_eval)[:3])}"
            f"{', ...' if len(by_eval) > 3 else ''})"
        )
        for label, sub in by_eval.items():
            qualified = f"{name} ({label})"
            ranges, dirs = agreed(sub)
            if len(ranges) > 1:
                lows = [lo for lo, _ in ranges]
                highs = [hi for _, hi in ranges]
                low = None if None in lows else min(lows)
                high = None if None in highs else max(highs)
                notes.append(
                    f"metric {qualified!r} is declared with {len(ranges)} ranges across records "
                    f"({', '.join(sorted(_shown(*x) for x in ranges))}): the widest, "
                    f"{_shown(low, high)}, is used"
                )
            else:
                low, high = next(iter(ranges), (None, None))
            if len(dirs) > 1:
                notes.append(
                    f"metric {qualified!r} is declared both higher and lower is better: the "
                    "results declaring lower is better are named apart"
                )
                for r, i in sub:
                    lower = i["higher_is_better"] is False
                    n = f"{name} ({label}, lower is better)" if lower else qualified
                    assign([(r, i)], n, low, high, False if lower else True)
            else:
                assign(sub, qualified, low, high, next(iter(dirs), None))
    return out, notes


def _legacy(doc: dict) -> dict:
    """A record of schema 0.1.0 in the layout of later versions (in memory).

    0.1.0 has one ``source_data`` for the record; later versions one per result. The record's
    is given to each result that has none (the data it names are the dataset).
    """
    src = doc.get("source_data")
    if isinstance(src, dict):
        for r in doc.get("evaluation_results") or []:
            if isinstance(r, dict) and not isinstance(r.get("source_data"), dict):
                r["source_data"] = src
    return doc


def _split_of(result: Mapping[str, Any]) -> str | None:
    """The split a result was computed on, if the record says.

    ``score_details.details.split`` (schema 0.1.0) or ``source_data.hf_split``.
    """
    split = _d(_d(result.get("score_details")).get("details")).get("split")
    if not isinstance(split, str):
        split = _d(result.get("source_data")).get("hf_split")
    return split if isinstance(split, str) and split else None


def _other_splits(
    docs: Mapping[Path, dict], metrics: Mapping[int, dict[str, Any]]
) -> tuple[dict[Path, dict], dict[str, int], list[str]]:
    """``docs`` without the results repeated verbatim in their record or of another split.

    A split is part of the dataset: the test and the valid split of MMLU are parts of one
    dataset, MMLU, not two datasets, and not two configurations of one. Item-level rows of both
    splits are items of the dataset. An aggregate is one number for one part; when a record
    reports one metric of one dataset for several splits (HELM's stats, schema 0.1.0), the
    parts could be pooled into the dataset's score only with their instance counts, which the
    records do not give. The result of the split a benchmark is scored on (``test``, else
    ``valid``, ``validation``, ``val``, ``dev``, else the first reported) is the dataset's
    unit row; the others are set aside as ``other_split``, counted and named in a note.
    Results repeated verbatim within a record are set aside as ``duplicate``.
    """
    out: dict[Path, dict] = {}
    extra: dict[str, int] = {}
    dropped: list[str] = []
    for f, doc in docs.items():
        results = [r for r in doc.get("evaluation_results") or [] if isinstance(r, dict)]
        seen: set[str] = set()
        unique = []
        for r in results:
            text = json.dumps(r, sort_keys=True, default=str)
            if text in seen:
                extra["duplicate"] = extra.get("duplicate", 0) + 1
                continue
            seen.add(text)
            unique.append(r)
        by_unit: dict[tuple, list[dict]] = {}
        for r in unique:
            metric = _result_info(r, metrics)["metric"]
            by_unit.setdefault((_dataset_of(r, r.get("evaluation_name")), metric), []).append(r)
        kept = []
        for (dataset, metric), group in by_unit.items():
            splits = [_split_of(r) for r in group]
            if len(set(splits)) < 2 or None in splits:
                kept += group
                continue
            order = [s for s in _SPLITS if s in splits] or [splits[0]]
            keep = order[0]
            kept += [r for r, s in zip(group, splits, strict=True) if s == keep]
            other = sorted({s for s in splits if s != keep})
            extra["other_split"] = extra.get("other_split", 0) + sum(s != keep for s in splits)
            dropped.append(f"{dataset} / {metric}: {keep} kept, {', '.join(other)} set aside")
        order_of = {id(r): i for i, r in enumerate(results)}
        out[f] = {**doc, "evaluation_results": sorted(kept, key=lambda r: order_of[id(r)])}
    notes = []
    if extra.get("duplicate"):
        notes.append(
            f"{extra['duplicate']} evaluation result(s) repeated verbatim within their record "
            "set aside as duplicate"
        )
    if dropped:
        notes.append(
            f"{extra['other_split']} result(s) of another split set aside as other_split (a "
            "split is part of the dataset; aggregates of two splits cannot be pooled without "
            "their instance counts, so the dataset's result is its test split's): "
            + "; ".join(dropped[:4])
            + ("; ..." if len(dropped) > 4 else "")
        )
    return out, extra, notes


def _dataset_of(
    result: Mapping[str, Any] | None, name: Any, doc: Mapping[str, Any] | None = None
) -> str | None:
    """The dataset of an evaluation result: its name, prefixed by its data when they differ.

    Records converted from Inspect name the evaluation after its scorer (``choice``) and the
    data in ``source_data.dataset_name`` (``ai2_arc``, ``pubmed_qa``): two datasets scored by
    one scorer are two datasets (``ai2_arc/choice``, ``pubmed_qa/choice``), not one; a
    record whose name already says its data (``mmlu``, ``mmlu_pro``) keeps it.
    """
    src = _d(_d(result).get("source_data")) or _d(_d(doc).get("source_data"))  # 0.0.1: the record's
    ds = src.get("dataset_name")
    if name is None:
        return ds if isinstance(ds, str) and ds.strip() else None
    name = str(name)
    if isinstance(ds, str) and ds.strip() and ds.lower() not in name.lower():
        return f"{ds}/{name}"
    return name


def _factor_name(k: str) -> str:
    if (
        k in OBSERVATION_COLUMNS
        or k in ("item", "variant", "n_items", "metric")
        or k.startswith("__")
    ):
        return f"setting_{k}"
    return k


def _response(rec: dict) -> str | None:
    out = rec.get("output")
    if isinstance(out, dict):
        raw = out.get("raw")
        if isinstance(raw, list) and raw and isinstance(raw[0], str):
            return raw[0]
        return None
    messages = rec.get("messages")
    if isinstance(messages, list):  # multi_turn, agentic: the last assistant turn
        for m in reversed(messages):
            if (
                isinstance(m, dict)
                and m.get("role") == "assistant"
                and isinstance(m.get("content"), str)
            ):
                return m["content"]
    return None


def _answer(rec: dict) -> str | None:
    attribution = rec.get("answer_attribution")
    if not isinstance(attribution, list):
        return None
    terminal = [a for a in attribution if isinstance(a, dict) and a.get("is_terminal")]
    for a in (terminal or [a for a in attribution if isinstance(a, dict)])[::-1]:
        if isinstance(a.get("extracted_value"), str):
            return a["extracted_value"]
    return None


def _score_of(evaluation: dict) -> Any:
    score = evaluation.get("score")
    if isinstance(score, (int, float)) and not isinstance(score, bool):
        return float(score)
    correct = evaluation.get("is_correct")
    if isinstance(correct, bool):
        return float(correct)
    return None if score is None else str(score)


def read_every_eval_ever(
    path: str | Path | Sequence[str | Path],
    *,
    columns: str | Mapping[str, str] | None = None,
    on_invalid: OnInvalid = "error",
    score_scale: ScoreScale = "auto",
) -> Ingest:
    r"""Read Every Eval Ever records: one observation per sample line of a ``_samples.jsonl``.

    Parameters
    ----------
    path : str, Path or sequence of them
        An aggregate ``<uuid>.json``, a ``<uuid>_samples.jsonl``, a folder of them (searched
        recursively; a data repository's ``data/`` tree), a glob, or a list.
    columns : None
        Not supported (the records have fixed fields); anything but None raises ParameterError.
    on_invalid : {'error', 'skip'}, default 'error'
        Raise on the first invalid line (not JSON, no ``sample_id``, a score that is not a
        number) or set such lines aside and count them.
    score_scale : {'auto', 'unit', 'percent'}, default 'auto'
        See :func:`evalstats.io._pipeline.finalize`.

    Returns
    -------
    Ingest
        ``(observations, report)``. Columns: ``model`` (``model_id``), ``dataset``
        (``evaluation_name``), ``item`` (``sample_id``), ``run`` (``metadata.epoch`` - 1 when
        recorded, else 0, 1, ... over repeats of a sample), ``metric`` (the aggregate result's
        ``metric_config.metric_id``, with its ``min_score``/``max_score`` and
        ``lower_is_better``), ``score`` (``evaluation.score``, else ``is_correct``), ``answer``
        (the terminal ``answer_attribution`` value), ``response`` (``output.raw[0]``, or the
        last assistant message of a ``multi_turn``/``agentic`` sample), ``gold``
        (``input.reference[0]``), ``input_len``, ``latency_s``, ``error``, and one setting
        column per scalar of the result's ``generation_config`` (``temperature``,
        ``max_tokens``, ...). Records with no samples file give unit rows (``score`` = the
        aggregate, ``n_items`` from the record when it says) when nothing else is read;
        beside samples they are set aside as ``aggregate_only`` and counted.

    Raises
    ------
    IngestError
        No record, a file that is not JSON, or an invalid line with ``on_invalid='error'``.
    ParameterError
        ``columns`` is given.

    Notes
    -----
    A sample line names its aggregate result by ``evaluation_result_id`` (else by
    ``evaluation_name``); a samples file is matched to its aggregate by name (``<uuid>.json``
    beside ``<uuid>_samples.jsonl``) or by ``evaluation_id``. The aggregate scores are the
    producer's summary: the report's notes say, for every result with samples, whether
    ``score_details.score`` equals the mean of its samples' scores (to 1e-9), and name those
    that differ (a samples file trimmed to a few lines differs).

    What tells results apart (``docs/formats/every-eval-ever.md``): results of the same model,
    dataset and metric that differ in their record's configuration (an agent scaffold, a
    reasoning effort in ``model_info.additional_details`` or ``generation_config``) get the
    keys that tell them apart as setting columns (:func:`_distinguishing`); a split is part of
    the dataset, and of aggregates reported per split the test split's is the dataset's unit
    row, the others set aside as ``other_split`` (:func:`_other_splits`); one metric name
    declared with different ranges is one metric per evaluation (:func:`_metrics`). Checked
    against: the Every Eval
    Ever examples and records written by its converters (``fixtures/dumps/every_eval_ever/``),
    ``tests/io/test_every_eval_ever.py``.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> result = {"evaluation_name": "arith", "evaluation_result_id": "arith:acc",
    ...           "source_data": {"dataset_name": "arith", "source_type": "other"},
    ...           "metric_config": {"metric_id": "accuracy", "lower_is_better": False,
    ...                             "min_score": 0, "max_score": 1},
    ...           "score_details": {"score": 0.5}}
    >>> agg = {"schema_version": "0.3.0", "evaluation_id": "e1", "model_info": {"id": "org/m"},
    ...        "evaluation_results": [result]}
    >>> _ = (d / "e1.json").write_text(json.dumps(agg))
    >>> lines = [{"evaluation_id": "e1", "model_id": "org/m", "evaluation_name": "arith",
    ...           "evaluation_result_id": "arith:acc", "sample_id": str(i),
    ...           "interaction_type": "single_turn", "evaluation": {"score": s, "is_correct": s == 1}}
    ...          for i, s in enumerate([1.0, 0.0])]
    >>> _ = (d / "e1_samples.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    >>> obs, report = read_every_eval_ever(d)
    >>> obs.select("model", "dataset", "metric", "item", "score").collect().rows()
    [('org/m', 'arith', 'accuracy', '0', 1.0), ('org/m', 'arith', 'accuracy', '1', 0.0)]
    >>> [n for n in report.notes if n.startswith("producer summary")]
    ['producer summary: 1 of 1 aggregate score(s) equal the mean of their samples (1e-09)']
    """
    validate_options(on_invalid, score_scale)
    if columns:
        raise ParameterError(
            "`columns` is not supported by the every-eval-ever loader (the records have fixed "
            "fields)."
        )
    hidden: list[Path] = []
    files = _files(path, hidden)
    kinds = {f: _kind(f) for f in files}
    foreign = [f for f, k in kinds.items() if k is None]
    aggregates: dict[Path, dict] = {}
    for f, k in kinds.items():
        if k == "aggregate":
            doc = _load_json(f)
            if isinstance(doc, dict):
                aggregates[f] = _legacy(doc)
    by_id = {str(doc.get("evaluation_id")): (f, doc) for f, doc in aggregates.items()}
    samples = [f for f, k in kinds.items() if k == "samples"]
    index = [f for f, k in kinds.items() if k == "index"]
    notes: list[str] = []
    if foreign:
        if len(files) == 1:
            raise IngestError(
                "not an Every Eval Ever record: expected an aggregate JSON (schema_version, "
                "evaluation_results) or a <uuid>_samples.jsonl.",
                path=str(files[0]),
            )
        notes.append(
            f"skipped {len(foreign)} file(s) that are not Every Eval Ever records: "
            + ", ".join(f.name for f in foreign[:5])
            + (", ..." if len(foreign) > 5 else "")
        )
    note = skipped_note(hidden)
    if note:
        notes.append(note)
    parts: list[tuple[str, pl.LazyFrame]] = []
    used: set[Path] = set()
    summary: list[tuple[str, float, float | None, int]] = []  # (what, aggregate, mean, n)
    factors: list[str] = []
    runs: dict[tuple, int] = {}
    # what tells records apart beyond the settings read from generation_config
    metrics, metric_notes = _metrics(aggregates)
    notes.extend(metric_notes)
    chosen, configs = (
        _configurations(aggregates, settings_read=True, metrics=metrics) if samples else ([], {})
    )
    if chosen:
        notes.append(
            "results of the same model, dataset and metric are told apart by their records' "
            "configuration: " + ", ".join(chosen) + " (factor columns)"
        )
    for f in samples:
        stem = _SAMPLES.match(f.name)
        twin = f.with_name(f"{stem['stem']}.json") if stem else None
        agg_file, agg = (twin, aggregates[twin]) if twin in aggregates else (None, None)
        frame, results = _samples_frame(f, agg_file, agg, by_id, runs, on_invalid, configs, metrics)
        used.update(r[0] for r in results if r[0] is not None)
        for c in frame.columns:
            if c not in OBSERVATION_COLUMNS and not c.startswith("__") and c not in factors:
                factors.append(c)
        summary.extend(_summary(frame, results, metrics))
        parts.append((str(f), frame.lazy()))
    unused = {f: doc for f, doc in aggregates.items() if f not in used}
    extra: dict[str, int] = {}
    if index:
        n_index = sum(
            1 for f in index for line in json_lines(f.read_text(encoding="utf-8")) if line.strip()
        )
        notes.append(
            f"{len(index)} datastore index file(s) list {n_index} aggregate record(s) by object "
            "path (the records themselves are not here): " + ", ".join(f.name for f in index[:3])
        )
        if parts or unused:
            extra["index_entry"] = n_index
        elif not unused:
            raise IngestError(
                f"a datastore index of {n_index} aggregate record(s) (record_type, object_path), "
                "not the records: read the aggregate JSON and samples files it points to.",
                path=str(index[0]),
            )
    if not parts:
        if not unused:
            raise IngestError(
                "no Every Eval Ever record found (an aggregate <uuid>.json or a "
                "<uuid>_samples.jsonl).",
                path=str(path),
            )
        return _aggregate_only(unused, notes, extra, on_invalid, score_scale, metrics)
    if unused:
        n = sum(len(doc.get("evaluation_results") or []) for doc in unused.values())
        extra["aggregate_only"] = n
        notes.append(
            f"{len(unused)} aggregate record(s) without instance-level samples ({n} result(s), "
            "set aside as aggregate_only: a summary, not observations): "
            + ", ".join(f.name for f in list(unused)[:5])
        )
    notes.extend(_summary_notes(summary))
    checks = [
        Check("invalid_json", pl.col("__bad_json"), message="the line is not a JSON object"),
        Check(
            "sample_error",
            pl.col("__errored") & pl.col("score").is_null(),
            quirk=True,
            message="the sample ended in an error and has no score",
        ),
    ]
    return finalize(
        parts,
        format="every-eval-ever",
        on_invalid=on_invalid,
        score_scale=score_scale,
        checks=checks,
        factors=factors,
        source_names={"item": "sample_id", "score": "evaluation.score", "run": "metadata.epoch"},
        notes=notes,
        extra_read=extra or None,
        column_rules=[
            *(
                ColumnRule(c, _role(c), f"Every Eval Ever generation_config: {c}")
                for c in factors
                if c not in {_factor_name(k) for k in chosen}
            ),
            *_config_rules([k for k in chosen if _factor_name(k) in factors], aggregates),
        ],
    )


def _role(name: str) -> str:
    from evalstats._column_rules import by_name

    rule = by_name(name)
    return rule.role if rule is not None and rule.role in ("prompt", "setting") else "setting"


def _samples_frame(
    f: Path,
    agg_file: Path | None,
    agg: dict | None,
    by_id: dict,
    runs: dict,
    on_invalid: str,
    configs: Mapping[int, dict[str, Any]],
    metrics: Mapping[int, dict[str, Any]],
) -> tuple[pl.DataFrame, list[tuple[Path | None, str, dict]]]:
    """The rows of one samples file, and the aggregate results its lines name.

    ``configs``: per aggregate result (by ``id``), the configuration that tells it apart from
    results of the same model, dataset and metric (:func:`_configurations`), read as settings.
    """
    pointer = lfs_pointer(f)
    if pointer:
        raise IngestError(pointer, path=str(f))
    cols: dict[str, list] = {
        k: []
        for k in (
            "model",
            "dataset",
            "metric",
            "metric_low",
            "metric_high",
            "higher_is_better",
            "item",
            "run",
            "score",
            "answer",
            "response",
            "gold",
            "__input_text",
            "latency_s",
            "error",
            "variant",
            "__bad_json",
            "__errored",
            "__key",
            *[f"__own_{c}" for c in _CARRIED],
        )
    }
    settings_rows: list[dict[str, Any]] = []
    infos: dict[tuple[str, str], tuple[Path | None, dict]] = {}
    seen: dict[str, tuple[Path | None, str, dict]] = {}
    row = 0
    with open(f, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if not line.strip():
                continue
            row += 1
            try:
                rec = json.loads(line)
            except (ValueError, RecursionError) as exc:
                rec = None
                if on_invalid == "error":
                    raise IngestError(
                        f"the line is not valid JSON ({exc}). To set such lines aside and count "
                        "them, pass on_invalid='skip' (CLI: --on-invalid skip).",
                        path=str(f),
                        row=row,
                    ) from None
            ok = isinstance(rec, dict)
            rec = rec if ok else {}
            eid = str(rec.get("evaluation_id"))
            doc = agg
            src = agg_file
            if doc is None or str(doc.get("evaluation_id")) != eid:
                src, doc = by_id.get(eid, (None, None))
            results = [r for r in _d(doc).get("evaluation_results") or [] if isinstance(r, dict)]
            rid, rname = rec.get("evaluation_result_id"), rec.get("evaluation_name")
            match = next(
                (r for r in results if rid is not None and r.get("evaluation_result_id") == rid),
                None,
            )
            if match is None:
                named = [r for r in results if r.get("evaluation_name") == rname]
                match = named[0] if len(named) == 1 else None
            key = f"{eid}\x1f{rid if rid is not None else rname}"
            if match is not None:
                if (eid, key) not in infos:
                    base = _result_info(match, metrics)
                    told = configs.get(id(match), {})
                    base["settings"] = {**base["settings"], **told}
                    infos[(eid, key)] = (src, base)
                info = infos[(eid, key)][1]
                seen.setdefault(key, (src, key, match))
            else:
                info = {
                    "metric": str(rid or "score"),
                    "low": None,
                    "high": None,
                    "higher_is_better": None,
                    "settings": {},
                    "variant": None,
                }
            evaluation = _d(rec.get("evaluation"))
            inp = _d(rec.get("input"))
            meta = _d(rec.get("metadata"))
            item = rec.get("sample_id")
            epoch = meta.get("epoch")
            try:
                run = int(epoch) - 1 if epoch is not None else None
            except (TypeError, ValueError):
                run = None
            if run is None and ok and item is not None:
                rkey = (eid, key, str(item))
                run = runs.get(rkey, 0)
                runs[rkey] = run + 1
            refs = inp.get("reference")
            perf = _d(rec.get("performance"))
            latency = perf.get("latency_ms")
            error = rec.get("error")
            cols["model"].append(
                (rec.get("model_id") or _d(_d(doc).get("model_info")).get("id")) if ok else None
            )
            dataset = _dataset_of(match, rname, doc)
            cols["dataset"].append(dataset if ok else None)
            cols["metric"].append(info["metric"])
            cols["metric_low"].append(info["low"])
            cols["metric_high"].append(info["high"])
            cols["higher_is_better"].append(info["higher_is_better"])
            cols["item"].append(None if item is None else str(item))
            cols["run"].append(run)
            cols["score"].append(_score_of(evaluation))
            cols["answer"].append(_answer(rec))
            cols["response"].append(_response(rec))
            cols["gold"].append(
                refs[0] if isinstance(refs, list) and refs and isinstance(refs[0], str) else None
            )
            raw = inp.get("raw")
            cols["__input_text"].append(raw if isinstance(raw, str) else None)
            cols["latency_s"].append(
                latency / 1000.0
                if isinstance(latency, (int, float)) and not isinstance(latency, bool)
                else None
            )
            cols["error"].append(error if isinstance(error, str) and error else None)
            cols["variant"].append(info["variant"])
            cols["__bad_json"].append(not ok)
            cols["__errored"].append(isinstance(error, str) and bool(error))
            cols["__key"].append(key)
            for c in _CARRIED:
                cols[f"__own_{c}"].append(meta.get(_OWN + c))
            settings_rows.append(info["settings"])
    if row == 0:
        raise IngestError("the samples file holds no line.", path=str(f))
    frame = pl.DataFrame(
        cols,
        schema={
            "model": pl.String,
            "dataset": pl.String,
            "metric": pl.String,
            "metric_low": pl.Float64,
            "metric_high": pl.Float64,
            "higher_is_better": pl.Boolean,
            "item": pl.String,
            "run": pl.Int64,
            "score": pl.Float64
            if all(not isinstance(s, str) for s in cols["score"])
            else pl.String,
            "answer": pl.String,
            "response": pl.String,
            "gold": pl.String,
            "__input_text": pl.String,
            "latency_s": pl.Float64,
            "error": pl.String,
            "variant": pl.String,
            "__bad_json": pl.Boolean,
            "__errored": pl.Boolean,
            "__key": pl.String,
            **{f"__own_{c}": pl.String for c in _CARRIED},
        },
    )
    names: list[str] = []
    for s in settings_rows:
        names += [k for k in s if k not in names]
    if names:
        settings = pl.DataFrame(
            {_factor_name(k): [s.get(k) for s in settings_rows] for k in names}, strict=False
        )
        frame = pl.concat([frame, settings], how="horizontal")
    carried = []
    for c in _CARRIED:
        own = pl.col(f"__own_{c}")
        if frame[f"__own_{c}"].null_count() < frame.height:
            carried.append(own.cast(OBSERVATION_COLUMNS[c], strict=False).alias(c))
    if carried:
        frame = frame.with_columns(carried)
        if "input_len" in frame.columns:
            frame = frame.drop("__input_text")
    frame = frame.drop([f"__own_{c}" for c in _CARRIED])
    # optional columns the records do not fill are left out, not carried as nulls
    empty = [
        c
        for c in ("answer", "response", "gold", "__input_text", "latency_s", "error")
        if c in frame.columns and frame[c].null_count() == frame.height
    ]
    frame = frame.drop(empty)
    if frame["variant"].null_count() == frame.height:
        frame = frame.drop("variant")
    return frame, list(seen.values())


def _summary(
    frame: pl.DataFrame,
    results: list[tuple[Path | None, str, dict]],
    metrics: Mapping[int, dict[str, Any]],
) -> list[tuple[str, float, float | None, int]]:
    out = []
    for _src, key, result in results:
        agg = _d(result.get("score_details")).get("score")
        if not isinstance(agg, (int, float)) or isinstance(agg, bool):
            continue
        mine = frame.filter((pl.col("__key") == key) & ~pl.col("__bad_json"))
        scores = mine["score"].cast(pl.Float64, strict=False).drop_nulls()
        model = mine["model"].drop_nulls()
        what = f"{model[0] if len(model) else '?'} / {result.get('evaluation_name')} / " + str(
            _result_info(result, metrics)["metric"]
        )
        out.append((what, float(agg), float(scores.mean()) if len(scores) else None, len(scores)))
    return out


def _summary_notes(summary: list[tuple[str, float, float | None, int]]) -> list[str]:
    if not summary:
        return []
    same = [s for s in summary if s[2] is not None and abs(s[1] - s[2]) <= _SUMMARY_TOL]
    notes = [
        f"producer summary: {len(same)} of {len(summary)} aggregate score(s) equal the mean of "
        f"their samples ({_SUMMARY_TOL:g})"
    ]
    for what, agg, mean, n in summary:
        if mean is None or abs(agg - mean) > _SUMMARY_TOL:
            shown = "no sample scored" if mean is None else f"mean {mean:.6g} of {n} sample(s)"
            notes.append(
                f"warning: {what}: the aggregate score {agg:.6g} differs from the {shown} "
                "(a samples file trimmed or filtered, or a score that is not a mean)"
            )
    return notes


def _aggregate_only(
    docs: dict[Path, dict],
    notes: list[str],
    extra: dict[str, int],
    on_invalid: str,
    score_scale,
    metrics: Mapping[int, dict[str, Any]],
) -> Ingest:
    """Unit rows from aggregate records that have no samples: one per result.

    What tells apart results of the same model, dataset and metric in the records'
    configuration (:func:`_distinguishing`) becomes factor columns; nothing else of the
    configuration is read (a constant setting says nothing about these units).
    """
    docs, dropped, split_notes = _other_splits(docs, metrics)
    for k, v in dropped.items():
        extra = {**extra, k: extra.get(k, 0) + v}
    notes = [*notes, *split_notes]
    chosen, configs = _configurations(docs, settings_read=False, metrics=metrics)
    dtypes = {k: _config_dtype([c[k] for c in configs.values()]) for k in chosen}
    parts = []
    for f, doc in docs.items():
        config_cols: dict[str, list] = {k: [] for k in chosen}
        cols: dict[str, list] = {
            k: []
            for k in (
                "model",
                "dataset",
                "metric",
                "metric_low",
                "metric_high",
                "higher_is_better",
                "score",
                "n_items",
            )
        }
        model = _d(doc.get("model_info")).get("id") or _d(doc.get("model_info")).get("name")
        for r in doc.get("evaluation_results") or []:
            r = _d(r)
            info = _result_info(r, metrics)
            src = _d(r.get("source_data"))
            unc = _d(_d(r.get("score_details")).get("uncertainty"))
            n = src.get("samples_number", unc.get("num_samples"))
            cols["model"].append(model)
            cols["dataset"].append(_dataset_of(r, r.get("evaluation_name"), doc))
            cols["metric"].append(info["metric"])
            cols["metric_low"].append(info["low"])
            cols["metric_high"].append(info["high"])
            cols["higher_is_better"].append(info["higher_is_better"])
            score = info["score"]
            cols["score"].append(
                float(score)
                if isinstance(score, (int, float)) and not isinstance(score, bool)
                else None
            )
            cols["n_items"].append(n if isinstance(n, int) and not isinstance(n, bool) else None)
            for k in chosen:
                config_cols[k].append(configs.get(id(r), {}).get(k))
        frame = pl.DataFrame(
            cols,
            schema={
                "model": pl.String,
                "dataset": pl.String,
                "metric": pl.String,
                "metric_low": pl.Float64,
                "metric_high": pl.Float64,
                "higher_is_better": pl.Boolean,
                "score": pl.Float64,
                "n_items": pl.Int64,
            },
        )
        if chosen:
            frame = frame.with_columns(
                _config_series(_factor_name(k), config_cols[k], dtypes[k]) for k in chosen
            )
        parts.append((str(f), frame.lazy()))
    if chosen:
        notes = [
            *notes,
            "results of the same model, dataset and metric are told apart by their records' "
            "configuration: " + ", ".join(chosen) + " (factor columns)",
        ]
    notes = [
        *notes,
        "aggregate records only (no <uuid>_samples.jsonl): one unit row per result, the "
        "producer's score (item-level analyses need the samples)",
    ]
    return finalize(
        parts,
        format="every-eval-ever",
        on_invalid=on_invalid,  # type: ignore[arg-type]
        score_scale=score_scale,
        factors=[_factor_name(k) for k in chosen],
        source_names={"score": "score_details.score", "dataset": "evaluation_name"},
        notes=notes,
        extra_read=extra or None,
        column_rules=_config_rules(chosen, docs),
    )


# --- writing -----------------------------------------------------------------------------------


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "x"


def _number_or_none(v: Any) -> float | None:
    return (
        float(v)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
        else None
    )


def write_every_eval_ever(
    observations: pl.DataFrame | pl.LazyFrame,
    out: str | Path,
    *,
    source_organization: str = "evalstats",
    source_name: str | None = None,
) -> list[Path]:
    r"""Write an observation table as Every Eval Ever records: aggregate JSON plus samples JSONL.

    Parameters
    ----------
    observations : polars.DataFrame or polars.LazyFrame
        The observation table (from :func:`evalstats.read`), item-level.
    out : str or Path
        Folder to write into: ``<out>/<dataset>/<developer>/<model>/<uuid>.json`` and
        ``<uuid>_samples.jsonl`` per (model, dataset), the layout of an Every Eval Ever data
        repository's ``data/`` tree.
    source_organization : str, default 'evalstats'
        ``source_metadata.source_organization_name``.
    source_name : str, optional
        ``source_metadata.source_name``.

    Returns
    -------
    list of Path
        The files written (aggregate and samples of each evaluation).

    Raises
    ------
    SchemaError
        The table is not a valid observation table, or has no ``item`` column.

    Notes
    -----
    One evaluation per (model, dataset); one ``evaluation_results`` entry per (metric, variant),
    with ``score_details.score`` the mean of its samples (so the records pass the producer
    summary check of :func:`read_every_eval_ever`), ``metric_config`` from the metric's bounds
    and direction, and ``generation_config`` holding the factor columns: ``temperature``,
    ``top_p``, ``top_k`` and ``max_tokens`` in ``generation_args`` when numeric, every factor in
    ``additional_details`` (JSON-encoded, as the schema wants strings), and the variant key.
    One sample line per observation (``single_turn``): ``sample_id`` the item, ``metadata.epoch``
    the run + 1 (as Every Eval Ever's Inspect converter writes it), ``evaluation.score`` the score
    and ``is_correct`` whether it reaches the metric's upper bound (false when unbounded);
    columns the schema has no field for (``cluster``, ``input_len``) go in ``metadata`` under
    ``evalstats.``. Reading the folder back with :func:`read_every_eval_ever` gives the same
    table. Checked against: the published schemas (jsonschema), ``tests/io/test_every_eval_ever.py``.

    Examples
    --------
    >>> import tempfile
    >>> from evalstats.simulate import observations
    >>> obs = observations(n_models=2, n_items=3, n_variants=1, seed=0)
    >>> paths = write_every_eval_ever(obs, tempfile.mkdtemp())
    >>> sorted(p.suffix for p in paths)
    ['.json', '.json', '.jsonl', '.jsonl']
    """
    from evalstats.schema import validate_observations

    lf = validate_observations(observations)
    df = lf.collect() if isinstance(lf, pl.LazyFrame) else lf
    if "metric" not in df.columns:  # a hand-built table: the default metric, undeclared
        df = df.with_columns(pl.lit(DEFAULT_METRIC).alias("metric"))
    if "run" not in df.columns:
        df = df.with_columns(pl.lit(0, dtype=pl.Int64).alias("run"))
    if "item" not in df.columns:
        from evalstats.errors import SchemaError

        raise SchemaError(
            "an Every Eval Ever samples file needs an `item` column (one line per sample); "
            "this table is unit-level."
        )
    factors = factor_columns(df.columns)
    out = Path(out)
    written: list[Path] = []
    stamp = "0"
    for (model, dataset), group in df.group_by(["model", "dataset"], maintain_order=True):
        developer, _, name = str(model).rpartition("/")
        folder = out / _slug(str(dataset)) / _slug(developer or "unknown") / _slug(name)
        folder.mkdir(parents=True, exist_ok=True)
        # a stable id (the same table exported twice gives the same file names) spelled as the
        # schema wants the samples file's name: a version-4 UUID
        digest = hashlib.sha256(f"evalstats:{model}:{dataset}".encode()).digest()
        eid = str(uuid.UUID(bytes=digest[:16], version=4))
        evaluation_id = f"{dataset}/{model}/{stamp}"
        results = []
        lines = []
        keys = group.select("metric", "variant").unique(maintain_order=True)
        several = keys.height > group["metric"].n_unique()
        for metric, variant in keys.iter_rows():
            rows = group.filter((pl.col("metric") == metric) & (pl.col("variant") == variant))
            first = rows.row(0, named=True)
            rid = f"{dataset}:{metric}" + (f"@{variant}" if several else "")
            low, high = first.get("metric_low"), first.get("metric_high")
            hib = first.get("higher_is_better")
            cfg: dict[str, Any] = {
                "metric_id": str(metric),
                "metric_name": str(metric),
                "lower_is_better": not (True if hib is None else bool(hib)),
                "score_type": "continuous",
                "min_score": _number_or_none(low),
                "max_score": _number_or_none(high),
            }
            gen_args = {}
            details = {_OWN + "variant": str(variant)}
            for c in factors:
                v = first.get(c)
                details[c] = json.dumps(v)
                if c in ("temperature", "top_p", "top_k") and _number_or_none(v) is not None:
                    gen_args[c] = v
                elif (
                    c == "max_tokens" and isinstance(v, int) and not isinstance(v, bool) and v >= 1
                ):
                    gen_args[c] = v
            result: dict[str, Any] = {
                "evaluation_result_id": rid,
                "evaluation_name": str(dataset),
                "source_data": {"dataset_name": str(dataset), "source_type": "other"},
                "metric_config": cfg,
                "score_details": {
                    "score": float(rows["score"].mean()),
                    "uncertainty": {"num_samples": rows.height},
                },
                "generation_config": {
                    **({"generation_args": gen_args} if gen_args else {}),
                    "additional_details": details,
                },
            }
            results.append(result)
            for r in rows.iter_rows(named=True):
                lines.append(_sample_line(r, evaluation_id, str(model), str(dataset), rid))
        agg = {
            "schema_version": SCHEMA_VERSION,
            "evaluation_id": evaluation_id,
            "retrieved_timestamp": stamp,
            "source_metadata": {
                **({"source_name": source_name} if source_name else {}),
                "source_type": "evaluation_run",
                "source_organization_name": source_organization,
                "evaluator_relationship": "other",
            },
            "eval_library": {"name": "evalstats", "version": _version()},
            "model_info": {
                "name": name,
                "id": str(model),
                **({"developer": developer} if developer else {}),
                "additional_details": {
                    "deployment_type": "unknown",
                    "model_availability": "unknown",
                },
            },
            "evaluation_results": results,
            "detailed_evaluation_results": {
                "format": "jsonl",
                "file_path": f"data/{folder.relative_to(out).as_posix()}/{eid}_samples.jsonl",
                "total_rows": len(lines),
            },
        }
        agg_path = folder / f"{eid}.json"
        samples_path = folder / f"{eid}_samples.jsonl"
        text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
        samples_path.write_text(text, encoding="utf-8")
        agg["detailed_evaluation_results"]["hash_algorithm"] = "sha256"
        agg["detailed_evaluation_results"]["checksum"] = hashlib.sha256(text.encode()).hexdigest()
        agg_path.write_text(json.dumps(agg, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        written += [agg_path, samples_path]
    return written


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("evalstats")
    except PackageNotFoundError:
        return "unknown"


def _sample_line(r: dict, evaluation_id: str, model: str, dataset: str, rid: str) -> dict:
    score = float(r["score"])
    high = r.get("metric_high")
    meta = {"epoch": str(int(r["run"]) + 1)}
    for c in _CARRIED:
        if r.get(c) is not None:
            meta[_OWN + c] = str(r[c])
    line: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "evaluation_id": evaluation_id,
        "model_id": model,
        "evaluation_name": dataset,
        "evaluation_result_id": rid,
        "sample_id": str(r["item"]),
        "interaction_type": "single_turn",
        "input": {"raw": "", "reference": [r["gold"]] if r.get("gold") is not None else []},
        "output": {"raw": [r["response"]] if r.get("response") is not None else []},
        "answer_attribution": (
            [
                {
                    "turn_idx": 0,
                    "source": "output.raw",
                    "extracted_value": r["answer"],
                    "extraction_method": "evalstats",
                    "is_terminal": True,
                }
            ]
            if r.get("answer") is not None
            else []
        ),
        "evaluation": {
            "score": score,
            "is_correct": bool(high is not None and score >= high),
        },
        "metadata": meta,
    }
    if r.get("latency_s") is not None:
        line["performance"] = {"latency_ms": float(r["latency_s"]) * 1000.0}
    if r.get("error") is not None:
        line["error"] = r["error"]
    return line
