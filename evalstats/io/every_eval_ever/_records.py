"""Every Eval Ever records: each result's metric, settings and dataset, what tells records apart, splits."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from evalstats._column_rules import ColumnRule
from evalstats.io.every_eval_ever._common import (
    _GENERATION_ARGS,
    _IDENT,
    _OWN,
    _SPLITS,
    _bound,
    _d,
    _scalar,
    finite,
)
from evalstats.schema import OBSERVATION_COLUMNS


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
        # an integer beyond a float's range is text, set aside as unparseable_score
        value = finite(score)
        return value if value is not None else str(score)
    correct = evaluation.get("is_correct")
    if isinstance(correct, bool):
        return float(correct)
    return None if score is None else str(score)


def _role(name: str) -> str:
    from evalstats._column_rules import by_name

    rule = by_name(name)
    return rule.role if rule is not None and rule.role in ("prompt", "setting") else "setting"
