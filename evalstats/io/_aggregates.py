"""Files of aggregates only: recognised, said to be so, with the producer's numbers.

A folder often holds a harness's summary beside (or instead of) its per-item files: lm-eval's
``results_<date>.json`` without samples, LightEval's ``results_<date>.json`` without its
``details/`` parquet files. Such a file has no item scores to read; it used to be reported as a
file "that matches no format". :func:`recognise` names what it is, quotes the producer's own
numbers (so the user can check them against what was read), and says what would give item
scores.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["lm_eval_output", "recognise"]

#: Largest file parsed to recognise it (summaries are small; a large file is data).
_MAX_BYTES = 64 * 2**20
_SHOWN = 6

#: Numbers of a results entry that are counts, not the producer's scores.
_COUNTS = frozenset({"sample_len", "n", "num_samples", "effective", "original"})


def _numbers(results: Any) -> str:
    """``task metric=value`` for the first numbers of a ``results`` object."""
    out = []
    if isinstance(results, dict):
        for task, metrics in results.items():
            if not isinstance(metrics, dict):
                continue
            for name, value in metrics.items():
                if (
                    isinstance(value, (int, float))
                    and not isinstance(value, bool)
                    and "stderr" not in str(name)
                    and str(name) not in _COUNTS
                ):
                    out.append(f"{task} {name}={value:g}")
                    break
    more = f", ... ({len(out)} in all)" if len(out) > _SHOWN else ""
    return ", ".join(out[:_SHOWN]) + more


#: Keys of lm-eval's output beside ``results`` (``simple_evaluate``'s dictionary, the command
#: line's ``results_<date>.json``): one of them tells it from any object with a ``results`` key.
_LM_EVAL_KEYS = ("configs", "n-shot", "versions", "samples", "n-samples", "higher_is_better")


def lm_eval_output(doc: Any) -> tuple[dict, str | None] | None:
    """lm-eval's output in ``doc``, and the key it is nested under (``None`` at the top).

    Users save ``simple_evaluate``'s dictionary as it is, or wrapped in an object of their
    own (``{"model": ..., "results": simple_evaluate(...)}``): the dictionary is then the one
    value of the wrapper that looks like lm-eval's output.

    Raises
    ------
    ValueError
        The wrapper holds several such dictionaries (their keys are named).

    Examples
    --------
    >>> out = {"results": {"boolq": {"acc,none": 0.5}}, "configs": {"boolq": {}}}
    >>> lm_eval_output(out) == (out, None)
    True
    >>> lm_eval_output({"model": "m", "results": out}) == (out, "results")
    True
    >>> lm_eval_output({"results": {"boolq": 0.5}}) is None
    True
    """

    def looks(d: Any) -> bool:
        return (
            isinstance(d, dict)
            and isinstance(d.get("results"), dict)
            and any(k in d for k in _LM_EVAL_KEYS)
        )

    if not isinstance(doc, dict):
        return None
    if looks(doc):
        return doc, None
    inner = [k for k, v in doc.items() if looks(v)]
    if len(inner) > 1:
        raise ValueError(
            f"{len(inner)} lm-eval outputs in one object (under "
            f"{', '.join(repr(k) for k in inner)}): save one a file"
        )
    return (doc[inner[0]], inner[0]) if inner else None


def recognise(f: Path) -> tuple[str, str] | None:
    """``(reason, hint)`` when ``f`` is a known file of aggregates only, else None.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "results_2025-01-01T00-00-00.json"
    >>> _ = f.write_text(json.dumps({"config_general": {"model_name": "m"},
    ...                              "results": {"leaderboard|arc:c|25": {"acc": 0.5}}}))
    >>> reason, hint = recognise(f)
    >>> reason.split(":")[0]
    'LightEval aggregate results (results_*.json)'
    """
    try:
        if f.suffix.lower() != ".json" or f.stat().st_size > _MAX_BYTES:
            return None
        doc = json.loads(f.read_bytes())
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), dict):
        return None
    numbers = _numbers(doc["results"])
    if "config_general" in doc:
        model = (doc.get("config_general") or {}).get("model_name")
        return (
            f"LightEval aggregate results (results_*.json): no per-sample scores"
            f"{f' for model {model!r}' if model else ''}; its numbers: {numbers or 'none'}",
            "the per-sample scores are the details/<model>/<date>/details_<task>_<date>.parquet "
            "files LightEval writes with --save-details",
        )
    try:
        found = lm_eval_output(doc)
    except ValueError:
        found = None
    if found is not None and found[1] is not None:  # a wrapper: its lm-eval output is read
        doc, where = found[0], f" (nested under {found[1]!r})"
        numbers = _numbers(doc["results"])
    else:
        where = ""
    if ("configs" in doc or "config" in doc or "n-shot" in doc) and "samples" not in doc:
        return (
            f"lm-eval aggregate results{where} (no per-document samples); its numbers: "
            f"{numbers or 'none'}",
            "the samples_<task>_<date>.jsonl files lm_eval writes with --log_samples (or "
            "simple_evaluate(..., log_samples=True) saved with its samples)",
        )
    return None
