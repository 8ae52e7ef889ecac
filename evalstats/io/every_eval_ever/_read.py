"""Reading Every Eval Ever aggregate records and samples into the observation table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from evalstats._column_rules import ColumnRule
from evalstats.errors import IngestError, ParameterError
from evalstats.io._files import lfs_pointer, skipped_note
from evalstats.io._pipeline import Check, OnInvalid, ScoreScale, finalize, validate_options
from evalstats.io._report import Ingest
from evalstats.io._rows import json_lines
from evalstats.io._shape import TooManyKeys, finite, integer, loads_bounded, problem
from evalstats.io.every_eval_ever._common import (
    _CARRIED,
    _OWN,
    _SAMPLES,
    _SUMMARY_TOL,
    KNOWN_VERSIONS,
    SAMPLE_SPEC,
    SCHEMA_VERSION,
    _checked,
    _d,
    _files,
    _kind,
    _load_json,
)
from evalstats.io.every_eval_ever._records import (
    _answer,
    _config_dtype,
    _config_rules,
    _config_series,
    _configurations,
    _dataset_of,
    _factor_name,
    _legacy,
    _metrics,
    _other_splits,
    _response,
    _result_info,
    _role,
    _score_of,
)
from evalstats.schema import OBSERVATION_COLUMNS


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
                aggregates[f] = _legacy(_checked(doc, f))
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
    versions: set[str | None] = {
        doc.get("schema_version") if isinstance(doc.get("schema_version"), str) else None
        for doc in aggregates.values()
    }
    for f in samples:
        stem = _SAMPLES.match(f.name)
        twin = f.with_name(f"{stem['stem']}.json") if stem else None
        agg_file, agg = (twin, aggregates[twin]) if twin in aggregates else (None, None)
        frame, results = _samples_frame(
            f, agg_file, agg, by_id, runs, on_invalid, configs, metrics, versions
        )
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
        notes.extend(_version_notes(versions))
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
    notes.extend(_version_notes(versions))
    if not aggregates:
        notes.append(
            "samples without their aggregate record (<uuid>.json): each metric is named by the "
            "lines' evaluation_result_id (or evaluation_name), with no declared range or "
            "direction"
        )
    checks = [
        Check("invalid_json", pl.col("__bad_json"), message="the line is not a JSON object"),
        Check(
            "invalid_record",
            pl.col("__bad_shape"),
            message="a field of another type than the sample schema gives",
        ),
        Check(
            "unknown_evaluation",
            pl.col("__unknown"),
            message=(
                "the sample names an evaluation (evaluation_id, evaluation_result_id or "
                "evaluation_name) that no aggregate record read holds"
            ),
        ),
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


def _samples_frame(
    f: Path,
    agg_file: Path | None,
    agg: dict | None,
    by_id: dict,
    runs: dict,
    on_invalid: str,
    configs: Mapping[int, dict[str, Any]],
    metrics: Mapping[int, dict[str, Any]],
    versions: set[str | None],
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
            "__bad_shape",
            "__unknown",
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
                rec = loads_bounded(line)
            except TooManyKeys as exc:
                raise IngestError(exc.message() + ".", path=str(f), row=row) from None
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
            found = problem(rec, SAMPLE_SPEC) if ok else None
            epoch = _d(rec.get("metadata")).get("epoch") if ok else None
            if found is None and epoch is not None and _epoch(epoch) is None:
                found = f"field 'metadata.epoch': expected a whole number >= 1, got {epoch!r:.40}"
            if found is not None:
                if on_invalid == "error":
                    raise IngestError(
                        f"not the Every Eval Ever sample schema: {found}. To set such lines "
                        "aside and count them, pass on_invalid='skip' (CLI: --on-invalid skip).",
                        path=str(f),
                        row=row,
                    )
                ok = False
            cols["__bad_shape"].append(found is not None)
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
            # a line naming an evaluation or result that no aggregate read holds, while
            # aggregates are read: set aside as unknown_evaluation (was a metric of its own)
            cols["__unknown"].append(ok and match is None and bool(by_id or agg))
            if ok and isinstance(rec.get("schema_version"), str):
                versions.add(rec["schema_version"])
            elif ok:
                versions.add(None)
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
            epoch = _epoch(meta.get("epoch"))
            run = epoch - 1 if epoch is not None else None
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
            cols["latency_s"].append(None if finite(latency) is None else latency / 1000.0)
            cols["error"].append(error if isinstance(error, str) and error else None)
            cols["variant"].append(info["variant"])
            cols["__bad_json"].append(not ok and not cols["__bad_shape"][-1])
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
            "__bad_shape": pl.Boolean,
            "__unknown": pl.Boolean,
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
        mine = frame.filter(
            (pl.col("__key") == key) & ~pl.col("__bad_json") & ~pl.col("__bad_shape")
        )
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


def _epoch(value: object) -> int | None:
    """``metadata.epoch`` as a whole number >= 1 (an integer or its text), else None."""
    if isinstance(value, str) and value.strip().isdigit() and len(value.strip()) < 16:
        value = int(value.strip())
    n = integer(value)
    return n if n is not None and n >= 1 else None


def _version_notes(versions: set[str | None]) -> list[str]:
    """A note on records of a schema version this reader does not know, or of none."""
    notes = []
    unknown = sorted(v for v in versions if v is not None and not _known_version(v))
    if unknown:
        notes.append(
            f"warning: schema version(s) {', '.join(map(repr, unknown[:3]))} not known to this "
            f"evalstats (it reads {', '.join(KNOWN_VERSIONS)}): read as {SCHEMA_VERSION}; fields "
            "a newer schema added or renamed are not read"
        )
    if None in versions:
        notes.append(
            f"some records give no schema_version: read as {SCHEMA_VERSION} (the schema "
            "requires the field)"
        )
    return notes


def _known_version(v: str) -> bool:
    major_minor = ".".join(v.strip().split(".")[:2])
    return any(major_minor == ".".join(k.split(".")[:2]) for k in KNOWN_VERSIONS)
