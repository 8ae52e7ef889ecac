"""Writing an observation table as Every Eval Ever records."""

from __future__ import annotations

import hashlib
import json
import math
import re
import uuid
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from evalstats._output import check_inside, writing
from evalstats.errors import DegenerateDataWarning, OutputError
from evalstats.io.every_eval_ever._common import _CARRIED, _OWN, SCHEMA_VERSION
from evalstats.schema import DEFAULT_METRIC, factor_columns


def _slug(text: str) -> str:
    """A folder name from ``text``: never ``.``, ``..`` or hidden (a leading dot is dropped).

    >>> _slug("../etc"), _slug(".."), _slug("org/model v2"), _slug(".hidden")
    ('etc', 'x', 'org_model_v2', 'hidden')
    """
    return re.sub(r"^[._]+|_+$", "", re.sub(r"[^A-Za-z0-9._-]+", "_", text)) or "x"


def _mean(values: np.ndarray) -> float:
    """The mean of finite ``values``, finite however large they are (no overflow of the sum).

    >>> _mean(np.array([1e308, 1e308])), _mean(np.array([0.25, 0.75]))
    (1e+308, 0.5)
    """
    scale = float(np.max(np.abs(values))) if values.size else 0.0
    if scale == 0.0 or not math.isfinite(scale):
        return float(np.mean(values)) if values.size else math.nan
    return float(np.mean(values / scale)) * scale


def _strict(obj: Any, where: str, nulls: list[str]) -> Any:
    """``obj`` with every non-finite float made null (strict JSON has no NaN or Infinity)."""
    if isinstance(obj, float) and not math.isfinite(obj):
        nulls.append(where)
        return None
    if isinstance(obj, dict):
        return {k: _strict(v, f"{where}.{k}", nulls) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_strict(v, f"{where}[{i}]", nulls) for i, v in enumerate(obj)]
    return obj


def _dumps(obj: Any, where: str, nulls: list[str], **kwargs: Any) -> str:
    return json.dumps(_strict(obj, where, nulls), ensure_ascii=False, allow_nan=False, **kwargs)


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
    with writing(out, what="cannot write the records into"):
        out.mkdir(parents=True, exist_ok=True)
    if not out.is_dir():
        raise OutputError(
            f"cannot write the records into {str(out)!r}: it is a file; name a folder."
        )
    written: list[Path] = []
    nulls: list[str] = []
    stamp = "0"
    for (model, dataset), group in df.group_by(["model", "dataset"], maintain_order=True):
        developer, _, name = str(model).rpartition("/")
        folder = out / _slug(str(dataset)) / _slug(developer or "unknown") / _slug(name)
        check_inside(out, folder)  # a symlink inside `out` may point elsewhere
        with writing(folder):
            folder.mkdir(parents=True, exist_ok=True)
        check_inside(out, folder)
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
                    "score": _mean(rows["score"].to_numpy()),
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
        text = "".join(
            _dumps(line, f"{samples_path.name}, line {i + 1}", nulls) + "\n"
            for i, line in enumerate(lines)
        )
        with writing(samples_path):
            samples_path.write_text(text, encoding="utf-8")
        agg["detailed_evaluation_results"]["hash_algorithm"] = "sha256"
        agg["detailed_evaluation_results"]["checksum"] = hashlib.sha256(text.encode()).hexdigest()
        agg_text = _dumps(agg, agg_path.name, nulls, indent=2) + "\n"
        with writing(agg_path):
            agg_path.write_text(agg_text, encoding="utf-8")
        written += [agg_path, samples_path]
    if nulls:
        warnings.warn(
            f"{len(nulls)} value(s) not finite (JSON has no NaN or Infinity) written as null: "
            f"{', '.join(nulls[:3])}{' ...' if len(nulls) > 3 else ''}.",
            DegenerateDataWarning,
            stacklevel=2,
        )
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
