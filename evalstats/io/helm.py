"""HELM (``crfm-helm``) run folders into the observation table.

``helm-run --suite S`` writes ``benchmark_output/runs/S/<run name>/`` per run entry:
``run_spec.json`` (the run's scenario, adapter settings and metrics), ``scenario_state.json``
(every request: the instance, its train trial, the prompt and the completions),
``per_instance_stats.json`` (one entry per instance, train trial and perturbation, with every
statistic HELM computed for it) and ``stats.json`` (HELM's own aggregates). ``helm-summarize``
adds ``instances.json``, ``display_predictions.json`` and ``display_requests.json`` beside them
and ``schema.json``, ``runs.json``, ``groups.json``, ... in the suite folder.

One observation per (run, instance, train trial, perturbation, statistic): the model is
``adapter_spec.model``, the dataset the run's scenario with its arguments (``mmlu:subject=anatomy,
method=multiple_choice_joint``; the run expanders' arguments, such as ``model=`` and
``data_augmentation=``, are not part of it), the item the instance id, the run the train trial
(a prompt factor ``train_trial`` instead when the trials draw other in-context examples), the
``perturbation`` factor HELM's perturbation of the instance (``original`` for the unperturbed
text) and the metric the statistic's name. See ``docs/formats/helm.md``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from evalstats._column_rules import ColumnRule
from evalstats.errors import IngestError, ParameterError
from evalstats.io._files import is_hidden, lfs_pointer, refuse_special, skipped_note
from evalstats.io._pipeline import Check, OnInvalid, ScoreScale, finalize, validate_options
from evalstats.io._report import Ingest
from evalstats.io._shape import TooManyKeys, finite, loads_bounded, problem

__all__ = ["HELM_METRICS", "detect_helm", "helm_metric", "read_helm"]

_STATS = "per_instance_stats.json"
_SPEC = "run_spec.json"

#: The value of ``perturbation`` for an instance as the scenario wrote it.
ORIGINAL = "original"

#: Bounds and direction of HELM's per-instance metrics whose scale is fixed by their definition:
#: ``(low, high, higher_is_better)``. Correctness scores (exact and quasi-exact match, F1, ROUGE
#: and BLEU as HELM computes them, MATH equivalence) lie in [0, 1]; ``logprob`` is at most 0;
#: runtimes and output tokens are costs (lower is better). The direction of a metric named in a
#: suite's ``schema.json`` (``lower_is_better``) wins over this table.
HELM_METRICS: dict[str, tuple[float | None, float | None, bool]] = {
    **{
        name: (0.0, 1.0, True)
        for name in (
            "exact_match",
            "quasi_exact_match",
            "prefix_exact_match",
            "quasi_prefix_exact_match",
            "exact_match@5",
            "quasi_exact_match@5",
            "prefix_exact_match@5",
            "quasi_prefix_exact_match@5",
            "exact_match_indicator",
            "final_number_exact_match",
            "exact_set_match",
            "iou_set_match",
            "f1_set_match",
            "f1_score",
            "rouge_1",
            "rouge_2",
            "rouge_l",
            "bleu_1",
            "bleu_4",
            "chinese_bleu_1",
            "chinese_rouge_1",
            "chinese_rouge_2",
            "math_equiv",
            "math_equiv_chain_of_thought",
            "code_eval_acc",
            "ifeval_strict_accuracy",
            "max_prob",
        )
    },
    **{
        name: (0.0, 1.0, False)
        for name in ("toxic_frac", "expected_max_toxicity", "max_toxicity_probability")
    },
    "logprob": (None, 0.0, True),
    "inference_runtime": (0.0, None, False),
    "inference_denoised_runtime": (0.0, None, False),
    "inference_idealized_runtime": (0.0, None, False),
    "batch_request_runtime": (0.0, None, False),
    # HELM's schema gives the output length no direction; read as a cost (the efficiency view)
    "num_output_tokens": (0.0, None, False),
}

#: Statistics that describe the run rather than rank the model's outputs (HELM's schema gives
#: them no direction): set aside as ``helm_bookkeeping`` and counted, never a metric.
_BOOKKEEPING = frozenset(
    {
        "num_references",
        "num_train_trials",
        "num_train_instances",
        "num_prompt_tokens",
        "num_completion_tokens",
        "num_perplexity_tokens",
        "num_bytes",
        "num_instances",
        "batch_size",
        "prompt_truncated",
        "finish_reason_length",
        "finish_reason_stop",
        "finish_reason_endoftext",
        "finish_reason_unknown",
    }
)

#: Run-expander arguments of a run name (``helm.benchmark.run_expander``): they change how a
#: scenario is run (model, perturbations, prompt format, decoding), not which scenario it is.
_EXPANDERS = frozenset(
    {
        "model",
        "model_deployment",
        "data_augmentation",
        "instructions",
        "prompt",
        "newline",
        "stop",
        "add_to_stop",
        "global_prefix",
        "anthropic",
        "claude_3",
        "amazon-nova",
        "follow_format_instructions",
        "idefics_instruct",
        "llava",
        "open_flamingo",
        "format_prompt",
        "num_train_trials",
        "max_train_instances",
        "max_eval_instances",
        "num_outputs",
        "num_trials",
        "eval_split",
        "tokenizer",
        "num_prompt_tokens",
        "num_output_tokens",
        "increase_max_tokens",
        "temperature",
        "increase_temperature",
        "chatml",
        "output_format_instructions",
        "process_output",
    }
)

#: Adapter fields that spell the prompt out (a run of one scenario that differs in them is
#: another prompt format of the scenario).
_PROMPT_FIELDS = (
    "method",
    "global_prefix",
    "global_suffix",
    "instructions",
    "input_prefix",
    "input_suffix",
    "reference_prefix",
    "reference_suffix",
    "output_prefix",
    "output_suffix",
    "instance_prefix",
    "chain_of_thought_prefix",
    "chain_of_thought_suffix",
    "substitutions",
)


#: The types HELM's dataclasses give the fields read (``helm.benchmark.metrics.statistic.Stat``,
#: ``PerInstanceStats``, ``RequestState``, ``Instance``, ``RunSpec``): checked before a value is
#: read (:mod:`evalstats.io._shape`).
_ID = ("string", "integer")
_STAT = {
    "name": {"name": ("string",), "split": ("string",), "sub_split": ("string",)},
    "count": ("number",),
    "sum": ("number",),
    "mean": ("number",),
}
_ENTRY = {
    "instance_id": _ID,
    "train_trial_index": ("integer",),
    "perturbation": ("object",),
    "stats": [_STAT],
}
_INSTANCE = {
    "id": _ID,
    "input": {"text": ("string",)},
    "references": [{"output": {"text": ("string",)}, "tags": [("string",)]}],
    "perturbation": ("object",),
}
_SCENARIO_STATE = {
    "request_states": [
        {
            "instance": _INSTANCE,
            "train_trial_index": ("integer",),
            "result": {"completions": [{"text": ("string",)}]},
        }
    ]
}
_PREDICTION = {
    "instance_id": _ID,
    "train_trial_index": ("integer",),
    "predicted_text": ("string",),
    "perturbation": ("object",),
}
_RUN_SPEC = {
    "name": ("string",),
    "adapter_spec": {
        "model": ("string",),
        "model_deployment": ("string",),
        "max_train_instances": ("integer",),
        "num_train_trials": ("integer",),
        "temperature": ("number",),
        "max_tokens": ("integer",),
    },
}


def _checked(doc: Any, spec: Any, f: Path, what: str) -> Any:
    """``doc`` when its structure is HELM's; else IngestError naming the file and the field."""
    found = problem(doc, spec) if doc is not None else f"expected {what}, got null"
    if found:
        raise IngestError(f"not HELM's structure: {found}.", path=str(f))
    return doc


def helm_metric(name: str, schema: Mapping[str, bool | None] | None = None) -> str | tuple:
    """How HELM statistic ``name`` is read: ``"bookkeeping"`` or ``(low, high, higher_is_better)``.

    ``schema`` maps metric names to ``lower_is_better`` as a suite's ``schema.json`` records it
    (None when the schema names the metric without a direction).

    Examples
    --------
    >>> helm_metric("exact_match"), helm_metric("inference_runtime")
    ((0.0, 1.0, True), (0.0, None, False))
    >>> helm_metric("num_references")
    'bookkeeping'
    >>> helm_metric("my_metric", {"my_metric": True})
    (None, None, False)
    """
    known = HELM_METRICS.get(name)
    lower = (schema or {}).get(name, "absent")
    if known is None and (name in _BOOKKEEPING or lower is None):
        return "bookkeeping"
    low, high, hib = known if known is not None else (None, None, True)
    if isinstance(lower, bool):
        hib = not lower
    return low, high, hib


def _is_run(folder: Path) -> bool:
    return (folder / _STATS).is_file() and (folder / _SPEC).is_file()


def detect_helm(path: str | Path) -> bool:
    """Whether ``path`` is a HELM run folder, a suite folder holding some, or a run's stats file.

    Examples
    --------
    >>> detect_helm("no/such/folder")
    False
    """
    p = Path(path)
    if p.is_file():
        return p.name == _STATS and (p.parent / _SPEC).is_file()
    if p.is_dir():
        if _is_run(p):
            return True
        found = (f for f in p.rglob(_STATS) if not is_hidden(f, p))
        if any(_is_run(f.parent) for _, f in zip(range(50), found)):
            return True
        # run folders that all lack their statistics: HELM's, so that its reader says so
        specs = (f for f in p.rglob(_SPEC) if not is_hidden(f, p))
        return any(
            (f.parent / "scenario_state.json").is_file() or (f.parent / "stats.json").is_file()
            for _, f in zip(range(50), specs)
        )
    return False


def _run_folders(
    path: Any, hidden: list[Path], skipped: list[str], orphans: list[Path] | None = None
) -> list[Path]:
    """The run folders named by ``path`` (a run or suite folder, a file in a run, a list, a glob)."""
    import glob

    if orphans is None:
        orphans = []
    if isinstance(path, (list, tuple)):
        out: list[Path] = []
        for p in path:
            out += [f for f in _run_folders(p, hidden, skipped, orphans) if f not in out]
        return out
    refuse_special(path)
    p = Path(path)
    if p.is_file():
        if _is_run(p.parent):
            return [p.parent]
        raise IngestError(
            f"not a HELM run: a run folder holds {_SPEC} and {_STATS}; {p.parent} does not.",
            path=str(p),
        )
    if p.is_dir():
        if _is_run(p):
            return [p]
        runs = []
        for f in sorted(p.rglob(_SPEC)):
            if is_hidden(f, p):
                hidden.append(f)
            elif _is_run(f.parent):
                runs.append(f.parent)
            else:
                skipped.append(f.parent.name)
        # statistics without their run_spec.json (the model and scenario are not known)
        for name in (_STATS, "stats.json"):
            for f in sorted(p.rglob(name)):
                if not is_hidden(f, p) and not (f.parent / _SPEC).is_file():
                    orphans.append(f)
        return runs
    found = sorted(Path(f) for f in glob.glob(str(path), recursive=True))
    if not found:
        raise IngestError("no such file or folder.", path=str(path))
    return _run_folders(found, hidden, skipped, orphans)


def _load(f: Path) -> Any:
    pointer = lfs_pointer(f)
    if pointer:
        raise IngestError(pointer, path=str(f))
    try:
        with open(f, encoding="utf-8") as fh:
            return loads_bounded(fh.read())
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


def _d(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def _dataset(run_name: str) -> tuple[str, dict[str, str]]:
    """The scenario part of a run name, and the run expanders' arguments.

    ``mmlu:subject=anatomy,method=multiple_choice_joint,model=openai_gpt2`` gives
    ``("mmlu:subject=anatomy,method=multiple_choice_joint", {"model": "openai_gpt2"})``.
    """
    scenario, _, args = run_name.partition(":")
    keep: list[str] = []
    expanders: dict[str, str] = {}
    for part in args.split(",") if args else []:
        key, sep, value = part.partition("=")
        if sep and key.strip() in _EXPANDERS:
            expanders[key.strip()] = value
        elif keep and not sep:  # a value holding a comma: part of the previous argument
            keep[-1] += "," + part
        else:
            keep.append(part)
    return (f"{scenario}:{','.join(keep)}" if keep else scenario), expanders


def _perturbation(p: object) -> str:
    """The name of a HELM ``PerturbationDescription`` with its parameters (``original`` for None)."""
    if not isinstance(p, dict) or not p.get("name"):
        return ORIGINAL
    params = {
        k: v
        for k, v in sorted(p.items())
        if k not in ("name", "robustness", "fairness", "computed_on") and v is not None
    }
    if not params:
        return str(p["name"])
    shown = ",".join(
        f"{k}={json.dumps(v, sort_keys=True) if isinstance(v, (dict, list)) else v}"
        for k, v in params.items()
    )
    return f"{p['name']}({shown})"


def _perturbation_key(p: object) -> str:
    if not isinstance(p, dict) or not p.get("name"):
        return ""
    return json.dumps({k: v for k, v in p.items() if k != "computed_on"}, sort_keys=True)


def _suite_schema(run: Path, cache: dict[Path, dict | None]) -> dict[str, bool | None] | None:
    """``{metric: lower_is_better}`` from the ``schema.json`` of the run's suite folder, if any."""
    folder = run.parent
    if folder not in cache:
        f = folder / "schema.json"
        out: dict[str, bool | None] | None = None
        if f.is_file():
            try:
                doc = _load(f)
            except IngestError:
                doc = None
            metrics = _d(doc).get("metrics")
            if isinstance(metrics, list):
                out = {}
                for m in metrics:
                    if isinstance(m, dict) and isinstance(m.get("name"), str):
                        lower = m.get("lower_is_better")
                        out[m["name"]] = lower if isinstance(lower, bool) else None
        cache[folder] = out
    return cache[folder]


def _texts(run: Path) -> dict[tuple[str, int, str], tuple[str | None, str | None, str | None]]:
    """``(instance id, train trial, perturbation key) -> (input, response, gold)`` of a run.

    From ``scenario_state.json`` (every request HELM made; the first completion is the
    response), else from ``instances.json`` and ``display_predictions.json``; empty when neither
    is there.
    """
    out: dict[tuple[str, int, str], tuple[str | None, str | None, str | None]] = {}

    def gold_of(instance: dict) -> str | None:
        for ref in instance.get("references") or []:
            if isinstance(ref, dict) and "correct" in (ref.get("tags") or []):
                text = _d(ref.get("output")).get("text")
                return text if isinstance(text, str) else None
        return None

    state = run / "scenario_state.json"
    if state.is_file():
        doc = _checked(_load(state), _SCENARIO_STATE, state, "an object")
        for rs in doc.get("request_states") or []:
            if not isinstance(rs, dict):
                continue
            inst = _d(rs.get("instance"))
            trial = rs.get("train_trial_index")
            if inst.get("id") is None or not isinstance(trial, int):
                continue
            key = (str(inst["id"]), trial, _perturbation_key(inst.get("perturbation")))
            if key in out:  # several requests per instance (multiple choice separate): keep one
                continue
            completions = _d(rs.get("result")).get("completions") or []
            first = completions[0] if completions and isinstance(completions[0], dict) else {}
            text = first.get("text")
            prompt = _d(inst.get("input")).get("text")
            out[key] = (
                prompt if isinstance(prompt, str) else None,
                text if isinstance(text, str) else None,
                gold_of(inst),
            )
        return out
    instances, predictions = run / "instances.json", run / "display_predictions.json"
    if not (instances.is_file() and predictions.is_file()):
        return out
    inputs: dict[tuple[str, str], tuple[str | None, str | None]] = {}
    for inst in _checked(_load(instances), [_INSTANCE], instances, "an array") or []:
        if isinstance(inst, dict) and inst.get("id") is not None:
            prompt = _d(inst.get("input")).get("text")
            inputs[(str(inst["id"]), _perturbation_key(inst.get("perturbation")))] = (
                prompt if isinstance(prompt, str) else None,
                gold_of(inst),
            )
    for pred in _checked(_load(predictions), [_PREDICTION], predictions, "an array") or []:
        if not isinstance(pred, dict) or pred.get("instance_id") is None:
            continue
        pkey = _perturbation_key(pred.get("perturbation"))
        prompt, gold = inputs.get((str(pred["instance_id"]), pkey), (None, None))
        text = pred.get("predicted_text")
        trial = pred.get("train_trial_index")
        out[(str(pred["instance_id"]), trial if isinstance(trial, int) else 0, pkey)] = (
            prompt,
            text if isinstance(text, str) else None,
            gold,
        )
    return out


def read_helm(
    path: str | Path | Sequence[str | Path],
    *,
    columns: str | Mapping[str, str] | None = None,
    on_invalid: OnInvalid = "error",
    score_scale: ScoreScale = "auto",
) -> Ingest:
    r"""Read HELM run folders: one observation per instance, train trial, perturbation and metric.

    Parameters
    ----------
    path : str, Path or sequence of them
        A suite folder (``benchmark_output/runs/<suite>``, or any folder above run folders), a
        run folder (``<scenario>:<args>``, holding ``run_spec.json`` and
        ``per_instance_stats.json``), a file in one, a glob, or a list of them.
    columns : None
        Not supported (HELM's files have fixed fields); anything but None raises
        ParameterError. Pick metrics with ``evalstats.io.read(..., metrics=[...])`` (CLI
        ``--metric``).
    on_invalid : {'error', 'skip'}, default 'error'
        Raise on the first invalid entry (a statistic whose value is not a number, a metric
        outside its bounds) or set such entries aside and count them.
    score_scale : {'auto', 'unit', 'percent'}, default 'auto'
        See :func:`evalstats.io._pipeline.finalize`. HELM's scores are on their own scale
        (exact match in [0, 1]); nothing is rescaled unless asked.

    Returns
    -------
    Ingest
        ``(observations, report)``. Columns: ``model`` (``adapter_spec.model``), ``dataset``
        (the run's scenario and its arguments), ``item`` (the instance id), ``run`` (the train
        trial), ``metric`` (the statistic's name, with bounds and direction, see
        :data:`HELM_METRICS`), ``score`` (the statistic's mean for the instance), ``response``
        (the first completion), ``gold`` (the first correct reference), ``input_len``, and the
        factors ``perturbation`` (a prompt factor: ``original`` or HELM's perturbation, such as
        ``mild_mix``), ``shots`` (``max_train_instances``), ``temperature`` and ``max_tokens``
        (settings), and ``deployment`` when ``model_deployment`` differs from the model.

    Raises
    ------
    IngestError
        No run folder, a file that is not JSON, or an invalid entry with ``on_invalid='error'``.
    ParameterError
        ``columns`` is given.

    Notes
    -----
    A statistic is a metric when it ranks the model's outputs: it has a direction in the suite's
    ``schema.json`` (``lower_is_better``, written by ``helm-summarize``) or in
    :data:`HELM_METRICS`. The statistics that describe the run (``num_references``,
    ``num_prompt_tokens``, ``batch_size``, ``finish_reason_*``, ...) are set aside as
    ``helm_bookkeeping``, and statistics HELM recorded without a value (``count`` 0, such as
    ``training_co2_cost``) as ``helm_no_value``: every entry is counted, ``rows_read ==
    rows_kept + set aside``. HELM's ``stats.json`` averages, per train trial, the statistic over
    the instances of each perturbation, then averages the trials: the mean of this table's
    scores per (model, dataset, metric, perturbation, run) is HELM's trial mean, and their mean
    over runs is ``stats.json``'s ``mean``. A run folder of another augmentation of the same
    scenario re-runs the original instances: those repeats are set aside as ``duplicate``.
    HELM's train trials draw different in-context examples when ``max_train_instances`` > 0:
    with shots and several trials the trial is a prompt factor ``train_trial`` (run 0), since
    those trials are not identical repeats; without shots the trials are the runs. Checked against:
    ``fixtures/dumps/helm/`` (written by ``helm-run`` 0.5.16; see its PROVENANCE),
    ``tests/io/test_helm.py``: per-run means equal ``stats.json`` to 1e-9 for every metric.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> run = pathlib.Path(tempfile.mkdtemp()) / "boolq:model=org_m"
    >>> run.mkdir()
    >>> spec = {"name": run.name, "adapter_spec": {"model": "org/m", "temperature": 0.0}}
    >>> _ = (run / "run_spec.json").write_text(json.dumps(spec))
    >>> stat = lambda name, v: {"name": {"name": name, "split": "test"}, "count": 1, "sum": v}
    >>> entries = [{"instance_id": f"id{i}", "train_trial_index": 0,
    ...             "stats": [stat("exact_match", v), stat("num_references", 1)]}
    ...            for i, v in enumerate([1.0, 0.0])]
    >>> _ = (run / "per_instance_stats.json").write_text(json.dumps(entries))
    >>> obs, report = read_helm(run)
    >>> obs.select("model", "dataset", "item", "metric", "score").collect().rows()
    [('org/m', 'boolq', 'id0', 'exact_match', 1.0), ('org/m', 'boolq', 'id1', 'exact_match', 0.0)]
    >>> report.rows_read, report.rows_kept, dict(report.set_aside)
    (4, 2, {'helm_bookkeeping': 2})
    """
    validate_options(on_invalid, score_scale)
    if columns:
        raise ParameterError(
            "`columns` is not supported by the HELM loader (its files have fixed fields); pick "
            "metrics with metrics=[...] (CLI: --metric)."
        )
    hidden: list[Path] = []
    skipped: list[str] = []
    orphans: list[Path] = []
    runs = _run_folders(path, hidden, skipped, orphans)
    shown = ", ".join(sorted(skipped)[:5]) + (", ..." if len(skipped) > 5 else "")
    if not runs and skipped:
        raise IngestError(
            f"every HELM run folder lacks its {_STATS} ({len(skipped)} folder(s) hold {_SPEC} "
            f"but not the per-instance statistics evalstats reads: {shown}); runs that did not "
            "finish, or whose statistics were not copied.",
            path=str(path),
        )
    if not runs:
        raise IngestError(
            f"no HELM run folder (one holding {_SPEC} and {_STATS}; helm-run writes them under "
            "benchmark_output/runs/<suite>/).",
            path=str(path),
        )
    notes: list[str] = []
    if skipped:
        notes.append(
            f"skipped {len(skipped)} folder(s) with {_SPEC} but no {_STATS} (runs that did not "
            f"finish): {shown}"
        )
    if orphans:
        folders = sorted({f.parent.name for f in orphans})
        notes.append(
            f"not read: {len(orphans)} statistics file(s) ({_STATS}, stats.json) in "
            f"{len(folders)} folder(s) without {_SPEC} (HELM names the run's model and scenario "
            f"there): {', '.join(folders[:5])}{', ...' if len(folders) > 5 else ''}"
        )
    note = skipped_note(hidden)
    if note:
        notes.append(note)
    schemas: dict[Path, dict | None] = {}
    parts: list[tuple[str, pl.LazyFrame]] = []
    specs: list[dict] = []
    for run in runs:
        spec = _checked(_load(run / _SPEC), _RUN_SPEC, run / _SPEC, "an object")
        frame = _frame(run, spec, _suite_schema(run, schemas), on_invalid)
        parts.append((str(run / _STATS), frame.lazy()))
        specs.append(spec)
    factors, rules = _factor_rules(parts, specs, notes)
    bookkeeping = sorted(
        {
            name
            for _, lf in parts
            for name in lf.filter(pl.col("__bookkeeping")).select("metric").collect()["metric"]
        }
    )
    if bookkeeping:
        notes.append(
            f"statistics that describe the run, not metrics (set aside as helm_bookkeeping): "
            f"{', '.join(bookkeeping)}"
        )
    if any(s is None for s in schemas.values()) or not schemas:
        notes.append(
            "no schema.json beside the runs (helm-summarize writes it): metric directions from "
            "evalstats' table of HELM metrics; others taken as higher is better"
        )
    checks = [
        Check(
            "invalid_entry",
            pl.col("__bad_entry"),
            message="an entry whose structure is not HELM's (a field of another type)",
        ),
        Check(
            "helm_bookkeeping",
            pl.col("__bookkeeping"),
            quirk=True,
            message="a statistic that describes the run (a count or a flag), not a metric",
        ),
        Check(
            "helm_no_value",
            pl.col("__no_value"),
            column="score",
            quirk=True,
            message="HELM recorded the statistic without a value (count 0)",
        ),
    ]
    return finalize(
        parts,
        format="helm",
        on_invalid=on_invalid,
        score_scale=score_scale,
        checks=checks,
        duplicates="quirk",
        factors=factors,
        source_names={"item": "instance_id", "run": "train_trial_index", "score": "stats[].mean"},
        notes=notes,
        column_rules=rules,
    )


#: The flag columns of a run's frame (False, or True for the reason that holds).
_FLAGS = ("__bookkeeping", "__no_value", "__bad_entry")


def _entry_problem(e: Any) -> str | None:
    """What is wrong with the structure of one ``per_instance_stats.json`` entry, if anything."""
    if not isinstance(e, dict):
        return problem(e, ("object",)) or "expected an object, got null"
    found = problem(e, _ENTRY)
    if found:
        return found
    if not e.get("stats"):
        return "field 'stats': the entry has no statistics"
    for j, s in enumerate(e["stats"]):
        if s is None:
            return f"field 'stats[{j}]': expected an object, got null"
        if not isinstance(_d(s.get("name")).get("name"), str):
            return f"field 'stats[{j}].name.name': the statistic has no name"
    return None


def _frame(
    run: Path, spec: dict, schema: dict[str, bool | None] | None, on_invalid: str = "error"
) -> pl.DataFrame:
    f = run / _STATS
    entries = _load(f)
    if not isinstance(entries, list):
        raise IngestError("expected a JSON array of per-instance stats.", path=str(f))
    bad: list[bool] = []
    for i, e in enumerate(entries):
        found = _entry_problem(e)
        bad.append(found is not None)
        if found and on_invalid == "error":
            iid = _d(e).get("instance_id")
            raise IngestError(
                f"entry {i}{f' (instance {iid!r})' if isinstance(iid, (str, int)) else ''}: "
                f"not HELM's structure: {found}. To set such entries aside and count them, pass "
                "on_invalid='skip' (CLI: --on-invalid skip).",
                path=str(f),
            )
    adapter = _d(spec.get("adapter_spec"))
    name = spec.get("name") if isinstance(spec.get("name"), str) else run.name
    dataset, expanders = _dataset(name)
    model = adapter.get("model")
    if not isinstance(model, str) or not model:
        model = expanders.get("model")
    if not model:
        raise IngestError(
            "the run names no model (adapter_spec.model, or model= in its name).",
            path=str(run / _SPEC),
        )
    deployment = adapter.get("model_deployment")
    splits = {
        str(s["name"].get("split"))
        for e, b in zip(entries, bad, strict=True)
        if not b
        for s in (e.get("stats") or [])
    }
    texts = _texts(run)
    cols: dict[str, list] = {
        k: []
        for k in (
            "model",
            "dataset",
            "item",
            "run",
            "metric",
            "metric_low",
            "metric_high",
            "higher_is_better",
            "score",
            "response",
            "gold",
            "__input_text",
            "perturbation",
            "split",
            "__bookkeeping",
            "__no_value",
            "__bad_entry",
        )
    }
    for e, b in zip(entries, bad, strict=True):
        if b:  # set aside whole and counted (on_invalid='skip'): one row, no value
            for k, v in cols.items():
                v.append(k == "__bad_entry" if k in _FLAGS else None)
            cols["model"][-1], cols["dataset"][-1] = model, dataset
            continue
        iid = e.get("instance_id")
        trial = e.get("train_trial_index")
        pert = e.get("perturbation")
        prompt, response, gold = texts.get(
            (str(iid), trial if isinstance(trial, int) else -1, _perturbation_key(pert)),
            (None, None, None),
        )
        for s in e["stats"]:
            sname = s["name"]
            metric = sname.get("name")
            split = sname.get("split")
            how = helm_metric(metric, schema)
            count = s.get("count")
            total = s.get("sum")
            value: Any = finite(s.get("mean"))
            if value is None and finite(count) and finite(total) is not None:
                value = finite(float(total) / float(count))
            cols["model"].append(model)
            cols["dataset"].append(dataset)
            cols["split"].append(None if split is None else str(split))
            cols["item"].append(None if iid is None else str(iid))
            cols["run"].append(trial if isinstance(trial, int) else None)
            cols["metric"].append(None if metric is None else str(metric))
            low, high, hib = how if isinstance(how, tuple) else (None, None, None)
            cols["metric_low"].append(low)
            cols["metric_high"].append(high)
            cols["higher_is_better"].append(hib)
            cols["score"].append(value)
            cols["response"].append(response)
            cols["gold"].append(gold)
            cols["__input_text"].append(prompt)
            cols["perturbation"].append(_perturbation(pert))
            cols["__bookkeeping"].append(how == "bookkeeping")
            cols["__no_value"].append(how != "bookkeeping" and count == 0)
            cols["__bad_entry"].append(False)
    schema_ = {
        "model": pl.String,
        "dataset": pl.String,
        "item": pl.String,
        "run": pl.Int64,
        "metric": pl.String,
        "metric_low": pl.Float64,
        "metric_high": pl.Float64,
        "higher_is_better": pl.Boolean,
        "score": pl.Float64,
        "response": pl.String,
        "gold": pl.String,
        "__input_text": pl.String,
        "perturbation": pl.String,
        "split": pl.String,
        "__bookkeeping": pl.Boolean,
        "__no_value": pl.Boolean,
        "__bad_entry": pl.Boolean,
    }
    frame = pl.DataFrame(cols, schema=schema_)
    if len(splits) <= 1:
        frame = frame.drop("split")
    shots = adapter.get("max_train_instances")
    settings = {
        "shots": shots if isinstance(shots, int) else None,
        "temperature": _number(adapter.get("temperature")),
        "max_tokens": adapter.get("max_tokens")
        if isinstance(adapter.get("max_tokens"), int)
        else None,
    }
    frame = frame.with_columns(
        pl.lit(settings["shots"], dtype=pl.Int64).alias("shots"),
        pl.lit(settings["temperature"], dtype=pl.Float64).alias("temperature"),
        pl.lit(settings["max_tokens"], dtype=pl.Int64).alias("max_tokens"),
    )
    if isinstance(deployment, str) and deployment and deployment != model:
        frame = frame.with_columns(pl.lit(deployment, dtype=pl.String).alias("deployment"))
    return frame


def _number(v: object) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _few_shot_trials(adapter: dict) -> bool:
    """Whether a run's train trials differ in their in-context examples (shots and trials > 1)."""
    shots, trials = adapter.get("max_train_instances"), adapter.get("num_train_trials")
    return isinstance(shots, int) and shots > 0 and isinstance(trials, int) and trials > 1


def _factor_rules(
    parts: list[tuple[str, pl.LazyFrame]], specs: list[dict], notes: list[str]
) -> tuple[list[str], list[ColumnRule]]:
    """The factor columns (in variant-key order) and the design's evidence for each.

    Runs of one (model, dataset) whose adapter spells the prompt differently (instructions,
    prefixes, the adaptation method) are prompt formats of the scenario: a ``prompt_format``
    factor (a short fingerprint of those fields) tells them apart.
    """
    import hashlib

    rules = [
        ColumnRule(
            "perturbation",
            "prompt",
            "HELM's data augmentation: the instance's text under a robustness or fairness "
            "perturbation (original = the unperturbed text), the same item worded otherwise",
        ),
        ColumnRule("shots", "prompt", "HELM adapter_spec.max_train_instances: in-context examples"),
        ColumnRule("temperature", "setting", "HELM adapter_spec.temperature: a decoding setting"),
        ColumnRule("max_tokens", "setting", "HELM adapter_spec.max_tokens: a decoding setting"),
    ]
    factors = ["perturbation", "shots", "temperature", "max_tokens"]
    few_shot = [
        _few_shot_trials(_d(spec.get("adapter_spec"))) for spec in specs
    ]  # trials that draw other in-context examples: prompt variants, not repeated runs
    if any(few_shot):
        for i, (p, lf) in enumerate(parts):
            trial = pl.col("run") if few_shot[i] else pl.lit(0, dtype=pl.Int64)
            run = pl.lit(0, dtype=pl.Int64) if few_shot[i] else pl.col("run")
            parts[i] = (p, lf.with_columns(trial.alias("train_trial"), run.alias("run")))
        factors.append("train_trial")
        rules.append(
            ColumnRule(
                "train_trial",
                "prompt",
                "HELM train trial of a run with in-context examples (max_train_instances > 0): "
                "each trial draws other few-shot examples, so the trials are prompt variants, not "
                "identical runs",
            )
        )
        notes.append(
            f"{sum(few_shot)} run folder(s) with in-context examples and several train trials: "
            "each trial draws other few-shot examples, so the trials are read as prompt "
            "variants (train_trial), not as identical runs (run 0)"
        )
    if any("split" in lf.collect_schema() for _, lf in parts):
        # a run evaluated on several splits: each instance is in one split, so the split is an
        # attribute of the item, not another dataset (HELM's stats.json reports each split;
        # the dataset's mean pools them by their instances)
        factors.append("split")
        rules.append(
            ColumnRule(
                "split",
                "item_attribute",
                "HELM's split of the instance (test, valid): each instance is in one split, an "
                "attribute of the item, not another dataset",
            )
        )
        notes.append(
            "run folder(s) evaluated on several splits: each split's instances are items of the "
            "one dataset, told apart by the split column (filter on it for one split)"
        )
    if any("deployment" in lf.collect_schema() for _, lf in parts):
        factors.append("deployment")
        rules.append(
            ColumnRule(
                "deployment",
                "setting",
                "HELM adapter_spec.model_deployment: where the model was served",
            )
        )
    prints = []
    for spec in specs:
        adapter = _d(spec.get("adapter_spec"))
        fields = {k: adapter.get(k) for k in _PROMPT_FIELDS}
        prints.append(hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:8])
    groups: dict[tuple, set[str]] = {}
    for spec, fp in zip(specs, prints):
        key = (
            _d(spec.get("adapter_spec")).get("model"),
            _dataset(str(spec.get("name", "")))[0],
        )
        groups.setdefault(key, set()).add(fp)
    differ = [k for k, v in groups.items() if len(v) > 1]
    if differ:
        for i, (p, lf) in enumerate(parts):
            parts[i] = (
                p,
                lf.with_columns(pl.lit(prints[i], dtype=pl.String).alias("prompt_format")),
            )
        factors.append("prompt_format")
        rules.append(
            ColumnRule(
                "prompt_format",
                "prompt",
                f"runs of one scenario differ in how the adapter spells the prompt (instructions, "
                f"prefixes, method; {len(differ)} model x dataset group(s)): prompt formats",
            )
        )
        notes.append(
            f"{len(differ)} model x dataset group(s) run with different prompt formats: read as "
            "prompt_format variants (a fingerprint of the adapter's prompt fields)"
        )
    return factors, rules
