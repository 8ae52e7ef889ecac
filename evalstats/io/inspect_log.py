"""Inspect AI evaluation logs (``.eval`` zip archives and ``.json`` logs) into the observation table.

One observation per (sample, epoch): the sample ``id`` is the item, ``epoch - 1`` the run, the
chosen scorer's value the score, ``eval.model`` the model and ``eval.task`` the dataset. See
``docs/formats/inspect.md`` for the mapping and the quirks handled here.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import re
import zipfile
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from evalstats._column_rules import ColumnRule
from evalstats.errors import IngestError, MissingDependencyError, ParameterError
from evalstats.io._files import (
    expand_paths,
    is_hidden,
    max_member_bytes,
    read_capped,
    skipped_note,
)
from evalstats.io._pipeline import Check, OnInvalid, ScoreScale, finalize, validate_options
from evalstats.io._report import Ingest
from evalstats.io._shape import finite, too_many_keys
from evalstats.schema import OBSERVATION_COLUMNS, MetricInfo

__all__ = ["detect_inspect", "read_inspect", "value_to_float"]

_SUFFIXES = (".eval", ".json")

#: Inspect's default score letters (``inspect_ai.scorer``: CORRECT, PARTIAL, INCORRECT, NOANSWER).
_LETTERS = {"C": 1.0, "P": 0.5, "I": 0.0, "N": 0.0}

#: Generation settings recorded on the log that become factor columns when present.
_GENERATE_KEYS = ("temperature", "top_p", "top_k", "max_tokens", "seed", "reasoning_effort")

_SAMPLE_MEMBER = re.compile(r"^samples/.+\.json$")

#: Largest run number kept (an epoch beyond this is not a run number but a damaged field).
_MAX_EPOCH = 2**31


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__
    )


def _obj(parent: Mapping, key: str, where: str, f: Path) -> dict:
    """``parent[key]`` when it is an object, ``{}`` when absent or null; else one IngestError."""
    value = parent.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise IngestError(f"field '{where}' is {_kind(value)}; expected an object.", path=str(f))
    return value


def _seq(parent: Mapping, key: str, where: str, f: Path) -> list:
    """``parent[key]`` when it is a list, ``[]`` when absent or null; else one IngestError."""
    value = parent.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise IngestError(f"field '{where}' is {_kind(value)}; expected a list.", path=str(f))
    return value


def _name(ev: Mapping, key: str, f: Path) -> str | None:
    """``eval.model`` / ``eval.task``: text (a number is written as text); anything else errs."""
    value = ev.get(key)
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    raise IngestError(f"field 'eval.{key}' is {_kind(value)}; expected a string.", path=str(f))


def _check_samples(samples: list, f: Path) -> list[dict]:
    """Every sample an object with a text or integer id; else one line naming the sample."""
    for i, s in enumerate(samples, start=1):
        if not isinstance(s, dict):
            raise IngestError(f"sample {i} is {_kind(s)}; expected an object.", path=str(f), row=i)
        scores = s.get("scores")
        many = too_many_keys(scores, "scores") if isinstance(scores, dict) else None
        for name, score in scores.items() if isinstance(scores, dict) and not many else ():
            value = score.get("value") if isinstance(score, dict) else None
            many = many or too_many_keys(value, f"scores.{name}.value")
        if many:  # each scorer (and each key of a dict value) is a score column
            raise IngestError(f"sample {i}: {many}", path=str(f), row=i)
        sid = s.get("id")
        if not (sid is None or isinstance(sid, str) or type(sid) is int):
            raise IngestError(
                f"sample {i}: field 'id' is {_kind(sid)}; expected a string or an integer.",
                path=str(f),
                row=i,
            )
    return samples


def value_to_float(value: Any) -> float | None:
    """Map an Inspect score value to a float as ``inspect_ai.scorer.value_to_float()`` does.

    Numbers and booleans are cast; ``"C"``, ``"P"``, ``"I"``, ``"N"`` become 1, 0.5, 0, 0;
    ``"yes"``/``"true"`` and ``"no"``/``"false"`` (any case) become 1 and 0; numeric strings are
    parsed. Anything else gives None (Inspect logs a warning and uses 0; evalstats reports the
    value as unparseable instead).

    Examples
    --------
    >>> [value_to_float(v) for v in ("C", "P", "I", "N", True, 0.25, "Yes", "0.5", "maybe")]
    [1.0, 0.5, 0.0, 0.0, 1.0, 0.25, 1.0, 0.5, None]
    """
    if isinstance(value, (bool, int, float)):
        try:
            return float(value)
        except OverflowError:  # an integer beyond the float range
            return None
    if isinstance(value, str):
        if value in _LETTERS:
            return _LETTERS[value]
        low = value.strip().lower()
        if low in ("yes", "true"):
            return 1.0
        if low in ("no", "false"):
            return 0.0
        try:
            number = float(low)
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


def detect_inspect(path: str | Path) -> bool:
    """Whether ``path`` is an Inspect log (or a folder holding ``.eval`` logs).

    A ``.eval`` file must be a zip archive with ``header.json`` or ``_journal/start.json``; a
    ``.json`` file must start like an Inspect log (``"version"`` and ``"eval"`` keys near the top).

    Examples
    --------
    >>> detect_inspect("no/such/file.eval")
    False
    """
    p = Path(path)
    if p.is_dir():
        if any(f.is_file() and not is_hidden(f, p) and _is_eval_zip(f) for f in p.rglob("*.eval")):
            return True
        # a folder of .json logs (``--log-format json``): look at a few of its .json files
        jsons = (f for f in sorted(p.rglob("*.json")) if f.is_file() and not is_hidden(f, p))
        return any(_looks_like_json_log(f) for _, f in zip(range(5), jsons))
    if not p.is_file():
        return False
    if p.suffix == ".eval":
        return _is_eval_zip(p)
    if p.suffix == ".json":
        return _looks_like_json_log(p)
    return False


def _is_eval_zip(p: Path) -> bool:
    try:
        with zipfile.ZipFile(p) as z:
            names = set(z.namelist())
    except (zipfile.BadZipFile, OSError):
        return False
    return bool({"header.json", "_journal/start.json", "start.json"} & names)


def _looks_like_json_log(p: Path) -> bool:
    try:
        with open(p, "rb") as fh:
            head = fh.read(4096).decode("utf-8", errors="ignore")
    except OSError:
        return False
    return head.lstrip().startswith("{") and '"version"' in head and '"eval"' in head


def read_inspect(
    path: str | Path | Sequence[str | Path],
    *,
    scorer: str | None = None,
    columns: str | Mapping[str, str] | None = None,
    on_invalid: OnInvalid = "error",
    score_scale: ScoreScale = "auto",
) -> Ingest:
    """Read Inspect AI logs into the observation table.

    Parameters
    ----------
    path : str, Path or sequence of them
        A ``.eval`` or ``.json`` log, a glob, or a folder (every ``.eval``/``.json`` log below it;
        ``.json`` files that are not Inspect logs, such as ``logs.json``, are skipped with a note).
    scorer : str, optional
        Scorer whose value is the score when a log has several (default: the first scorer listed
        in the log header). A scorer whose value is a dictionary is addressed as
        ``scorer.key``.
    columns : str or mapping, optional
        The command-line route to ``scorer``: ``"<scorer>=score"`` picks that scorer. No other
        role can be mapped.
    on_invalid : {'error', 'skip'}, default 'error'
        Raise on the first invalid sample (a score that is not a number, ...) or set such samples
        aside and count them.
    score_scale : {'auto', 'unit', 'percent'}, default 'auto'
        See :func:`evalstats.io._pipeline.finalize`.

    Returns
    -------
    Ingest
        ``(observations, report)`` with one row per (sample, epoch). Columns: ``model``
        (``eval.model``), ``dataset`` (``eval.task``), ``item`` (sample id), ``variant``,
        ``run`` (``epoch - 1``), ``score``, ``answer`` (the scorer's answer), ``response`` (the
        completion), ``gold`` (the target), and factor columns from scalar task arguments and the
        generation config (``temperature``, ...).

    Raises
    ------
    IngestError
        A file is not an Inspect log or is unreadable, no sample has a score, the scorer does
        not exist, or a sample is invalid and ``on_invalid='error'``.
    ParameterError
        ``columns`` maps something other than a scorer to ``score``.

    Notes
    -----
    Score values follow ``inspect_ai.scorer.value_to_float``: ``C``/``P``/``I``/``N`` are 1, 0.5,
    0, 0; numbers and booleans are cast; ``yes``/``true``/``no``/``false`` and numeric strings are
    parsed. Departure from Inspect: a value it cannot convert (Inspect warns and uses 0) is
    reported as ``unparseable_score``. Samples without a score (``scores`` empty, the chosen
    scorer missing, or a NaN value, Inspect's "unscored") are set aside as ``unscored``;
    samples that ended in an error (``sample.error``) are kept without a score, with their
    error message classed in ``error`` (``rate_limit``, ``timeout``, ...): the provider audit
    counts them, the other analyses read scored rows only.
    Samples are numbered (the report's ``row``) in Inspect's order: by epoch, then id.
    Checked against: real logs read in place from ../shared/data (``inspect-logs/``,
    inspect_ai's test fixtures, and ``real-logs/inspect/``), logs written by inspect_ai itself
    and hand-written logs in the documented schema, ``tests/io/test_inspect_log.py``.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> log = {"version": 2, "status": "success",
    ...        "eval": {"task": "arith", "model": "openai/gpt-4o", "scorers": [{"name": "match"}]},
    ...        "samples": [{"id": i, "epoch": e, "scores": {"match": {"value": v}}}
    ...                    for (i, e, v) in [(1, 1, "C"), (2, 1, "I"), (1, 2, "C"), (2, 2, "P")]]}
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "log.json"
    >>> _ = path.write_text(json.dumps(log))
    >>> obs, report = read_inspect(path)
    >>> obs.select("item", "run", "score").collect().rows()
    [('1', 0, 1.0), ('2', 0, 0.0), ('1', 1, 1.0), ('2', 1, 0.5)]
    >>> report.rows_read, report.rows_kept
    (4, 4)
    """
    validate_options(on_invalid, score_scale)
    scorer = _scorer_from_columns(columns, scorer)
    hidden: list[Path] = []
    files = _log_files(path, hidden)
    parts: list[tuple[str, pl.LazyFrame]] = []
    notes: list[str] = []
    skipped: list[str] = []
    n_scored = 0
    chosen_all: list[str] = []
    logs: list[tuple[Path, dict, list[dict], str | None]] = []
    for f in files:
        log = _open_log(f, skip_foreign=len(files) > 1)
        if log is None:
            skipped.append(f.name)
            continue
        logs.append((f, *log))
    logs, copies = _byte_copies(logs)
    logs, superseded, retry_notes = _latest_per_task(logs)
    notes.extend(retry_notes)
    solvers, offsets, rules = _configurations(logs, notes)
    for k, (f, header, samples, header_note) in enumerate(logs):
        if header_note:
            notes.append(f"{f}: {header_note}")
        frame, chosen, scored, file_notes = _frame(f, header, samples, scorer)
        if solvers is not None:
            frame = frame.with_columns(pl.lit(solvers[k], dtype=pl.String).alias("solver"))
        if offsets[k]:
            frame = frame.with_columns(pl.col("run") + offsets[k])
        n_scored += scored
        if chosen is not None and chosen not in chosen_all:
            chosen_all.append(chosen)
        notes.extend(file_notes)
        parts.append((str(f), frame))
    parts, task_rule = _tasks_as_variants(parts, logs, notes)
    for f, header, samples, _n in copies:  # finalize sets their rows aside as duplicate_file
        parts.append((str(f), _frame(f, header, samples, scorer)[0]))
    parts = _widest_ranges(parts, notes)
    if task_rule is not None:
        rules = [*rules, task_rule]
    parts = [(name, frame.lazy()) for name, frame in parts]
    note = skipped_note(hidden)
    if note:
        notes.append(note)
    if skipped:
        notes.append(
            f"skipped {len(skipped)} .json file(s) that are not Inspect logs: "
            f"{', '.join(sorted(skipped))}"
        )
    if not parts:
        raise IngestError(
            "no Inspect log found (expected .eval archives or .json logs).", path=str(path)
        )
    if n_scored == 0:
        raise IngestError(
            "no sample has a score (the log may have been written with --no-score or "
            "cancelled before scoring; score it with `inspect score` first).",
            path=parts[0][0] if len(parts) == 1 else str(path),
        )
    checks = [
        # a sample that ended in an error (sample.error) is kept with its error class and no
        # score: the provider audit counts it (evalstats.io._errors)
        Check(
            "unscored",
            pl.col("__unscored"),
            column="score",
            quirk=True,
            message="the sample has no value for the chosen scorer",
        ),
        Check(
            "categorical_score",
            pl.col("__categorical"),
            column="score",
            quirk=True,
            message="the scorer gives a category with no known score (see the notes)",
        ),
    ]
    return finalize(
        parts,
        format="inspect",
        on_invalid=on_invalid,
        score_scale=score_scale,
        checks=checks,
        factors=_factor_order(parts),
        source_names={"score": _score_source(chosen_all), "item": "id", "run": "epoch"},
        notes=notes + ["run = epoch - 1 (Inspect epochs start at 1)"],
        extra_read={"superseded_log": superseded} if superseded else None,
        column_rules=rules,
    )


#: Separators between a task's name and a suffix that names a variant of it (``gsm8k_guided``).
_SUFFIX_SEPARATORS = ("_", "-", ".", ":")


def _tasks_as_variants(
    parts: list[tuple[str, pl.DataFrame]],
    logs: list[tuple[Path, dict, list[dict], str | None]],
    notes: list[str],
) -> tuple[list[tuple[str, pl.DataFrame]], ColumnRule | None]:
    """A task whose name is another's with a suffix, over the same samples: a variant of it.

    Inspect names a task run with another system prompt or solver under a new task name
    (``gsm8k`` and ``gsm8k_guided``). When, for one model, a task's name is another's plus a
    suffix (after ``_``, ``-``, ``.`` or ``:``) and both score the same sample ids with the
    same inputs, the two are one dataset (the shorter name) under two prompt variants: a
    ``task`` factor names each, and a note gives the evidence (the samples, and the solver
    plans that differ). Tasks that share a prefix but not their samples stay datasets.
    """
    info = []
    for (_name, frame), (_f, header, _s, _n) in zip(parts, logs):
        model = frame["model"][0] if frame.height else None
        task = frame["dataset"][0] if frame.height else None
        inputs = dict(zip(frame["item"].to_list(), frame["__input_text"].to_list()))
        plan = "+".join(step for step, _ in _plan_steps(header)) or "none"
        info.append((model, task, inputs, plan))
    base_of: dict[tuple[str, str], str] = {}
    names = {(m, t) for m, t, _, _ in info if m is not None and t is not None}
    for model, task in sorted(names):
        for m2, other in sorted(names):
            if (
                m2 != model
                or other == task
                or not any(other.startswith(task + sep) for sep in _SUFFIX_SEPARATORS)
            ):
                continue
            mine = [x[2] for x in info if x[0] == model and x[1] == task]
            theirs = [x[2] for x in info if x[0] == model and x[1] == other]
            ids = {i for d in mine for i in d}
            if not ids or ids != {i for d in theirs for i in d}:
                continue
            text = {i: v for d in mine for i, v in d.items() if v is not None}
            if any(v is not None and text.get(i, v) != v for d in theirs for i, v in d.items()):
                continue
            base_of.setdefault((model, other), task)
    if not base_of:
        return parts, None
    for (model, other), task in sorted(base_of.items()):
        plans = sorted({x[3] for x in info if x[0] == model and x[1] in (task, other)})
        n = len({i for x in info if x[0] == model and x[1] == task for i in x[2]})
        notes.append(
            f"{model}: task {other!r} scores the same {n} samples as {task!r}, with the same "
            f"inputs ({'solver plans ' + ' vs '.join(plans) if len(plans) > 1 else 'one solver plan'}"
            f"): read as a prompt variant of {task!r} (column task), not as another dataset"
        )
    out = []
    merged_models = {m for m, _ in base_of}
    for name, frame in parts:
        model = frame["model"][0] if frame.height else None
        task = frame["dataset"][0] if frame.height else None
        base = base_of.get((model, task), task)
        frame = frame.with_columns(
            pl.lit(task if model in merged_models else None, dtype=pl.String).alias("task"),
            pl.lit(base, dtype=pl.String).alias("dataset"),
        )
        out.append((name, frame))
    rule = ColumnRule(
        "task",
        "prompt",
        f"Inspect task names that add a suffix to another's over the same samples and inputs "
        f"({len(base_of)} task(s)): prompt variants of that task (another system prompt or "
        "solver), not other datasets",
    )
    return out, rule


def _plan_steps(header: dict) -> list[tuple[str, str]]:
    plan = header.get("plan") if isinstance(header.get("plan"), dict) else {}
    steps = plan.get("steps") if isinstance(plan.get("steps"), list) else []
    out = []
    for step in steps:
        if isinstance(step, dict):
            params = json.dumps(step.get("params"), sort_keys=True, default=str)
            out.append((str(step.get("solver")), params))
    return out


def _configurations(
    logs: list[tuple[Path, dict, list[dict], str | None]], notes: list[str]
) -> tuple[list[str] | None, list[int], list[ColumnRule]]:
    """Variants and runs of several logs of one (model, task).

    Logs whose solver plan differs are prompt variants: a ``solver`` factor names the plan
    (its steps joined by ``+``, with a fingerprint of their parameters when two plans share
    the steps). Logs whose plan, task arguments and generate config agree are repeated runs of
    one configuration: their epochs are numbered on, log after log, by completion time.
    Returns the solver label of each log (None when no two logs of a task differ in plan),
    the run offset of each log, and the design rule when plans differ.
    """
    groups: dict[tuple[str, str], list[int]] = {}
    for k, (_f, header, _s, _n) in enumerate(logs):
        ev = header.get("eval") if isinstance(header.get("eval"), dict) else {}
        groups.setdefault((str(ev.get("model")), str(ev.get("task"))), []).append(k)
    labels = [""] * len(logs)
    offsets = [0] * len(logs)
    differ = 0
    for (model, task), idx in groups.items():
        plans = {k: _plan_steps(logs[k][1]) for k in idx}
        names = {k: "+".join(s for s, _ in p) or "none" for k, p in plans.items()}
        distinct = {json.dumps(p) for p in plans.values()}
        for k in idx:
            clash = {json.dumps(plans[j]) for j in idx if names[j] == names[k]}
            digest = hashlib.sha256(json.dumps(plans[k]).encode()).hexdigest()[:6]
            labels[k] = names[k] if len(clash) == 1 else f"{names[k]}#{digest}"
        if len(distinct) > 1:
            differ += 1
            notes.append(
                f"warning: {model} / {task}: {len(idx)} logs with {len(distinct)} solver plans "
                f"({', '.join(sorted({labels[k] for k in idx}))}): read as solver variants, "
                "not as repeated runs"
            )
        same: dict[str, list[int]] = {}
        for k in idx:
            key = json.dumps([plans[k], _factors(logs[k][1])], sort_keys=True, default=str)
            same.setdefault(key, []).append(k)
        for members in same.values():
            if len(members) < 2:
                continue
            members.sort(key=lambda k: (_log_time(logs[k][1]), logs[k][0].name))
            offset = 0
            for k in members:
                offsets[k] = offset
                epochs = [s.get("epoch") for s in logs[k][2] if type(s.get("epoch")) is int]
                offset += max(epochs, default=1)
            notes.append(
                f"{model} / {task}: {len(members)} logs of the same configuration (solver, task "
                "arguments, generate config) read as repeated runs: their epochs numbered on, "
                "log after log, oldest first"
            )
    if not differ:
        return None, offsets, []
    rule = ColumnRule(
        "solver",
        "prompt",
        f"logs of one task differ in their solver plan ({differ} model x task group(s)): "
        "prompt variants, not repeated runs",
    )
    return labels, offsets, [rule]


def _log_time(header: dict) -> str:
    ev = header.get("eval") if isinstance(header.get("eval"), dict) else {}
    stats = header.get("stats") if isinstance(header.get("stats"), dict) else {}
    return str(stats.get("completed_at") or stats.get("started_at") or ev.get("created") or "")


def _byte_copies(
    logs: list[tuple[Path, dict, list[dict], str | None]],
) -> tuple[list[tuple[Path, dict, list[dict], str | None]], list[tuple]]:
    """The logs that are no byte copy of an earlier log, and the copies (whatever their names).

    A copy carries its original's task id, and was counted as the original's superseded
    retry ("X superseded by X"); it is a duplicate, not a retry nor another run: it is kept out
    of the retries and runs, and :func:`finalize` sets its rows aside as ``duplicate_file``.
    """
    from evalstats.io._pipeline import copied_files

    copies = copied_files([str(f) for f, *_ in logs])
    if not copies:
        return logs, []
    kept = [log for i, log in enumerate(logs) if i not in copies]
    return kept, [log for i, log in enumerate(logs) if i in copies]


def _widest_ranges(
    parts: list[tuple[str, pl.DataFrame]], notes: list[str]
) -> list[tuple[str, pl.DataFrame]]:
    """One range per scorer: logs that declare a scorer's bounds differently get the widest.

    A scorer declared [0, 1] in one log and unbounded in another (an older version of the
    task) stopped the folder; the widest range (a side unbounded when any log leaves it so)
    holds every score, and a note names the ranges found.
    """
    seen: dict[str, set[tuple[float | None, float | None]]] = {}
    for _, frame in parts:
        if "metric" not in frame.columns or frame.height == 0:
            continue
        for name, lo, hi in frame.select("metric", "metric_low", "metric_high").unique().rows():
            seen.setdefault(name, set()).add((lo, hi))
    widest: dict[str, tuple[float | None, float | None]] = {}
    for name, ranges in seen.items():
        if len(ranges) < 2:
            continue
        lows = [lo for lo, _ in ranges]
        highs = [hi for _, hi in ranges]
        lo = None if None in lows else min(lows)  # type: ignore[type-var]
        hi = None if None in highs else max(highs)  # type: ignore[type-var]
        widest[name] = (lo, hi)
        shown = ", ".join(sorted(_range_text(r) for r in ranges))
        notes.append(
            f"scorer {name!r} is declared with {len(ranges)} ranges in these logs ({shown}): "
            f"read with the widest, {_range_text((lo, hi))} (declare one with --metric-range)"
        )
    if not widest:
        return parts
    out = []
    for path, frame in parts:
        if "metric" in frame.columns:
            for name, (lo, hi) in widest.items():
                mine = pl.col("metric") == name
                frame = frame.with_columns(
                    pl.when(mine)
                    .then(pl.lit(lo, pl.Float64))
                    .otherwise("metric_low")
                    .alias("metric_low"),
                    pl.when(mine)
                    .then(pl.lit(hi, pl.Float64))
                    .otherwise("metric_high")
                    .alias("metric_high"),
                )
        out.append((path, frame))
    return out


def _range_text(r: tuple[float | None, float | None]) -> str:
    lo, hi = r
    return f"[{'-inf' if lo is None else f'{lo:g}'}, {'inf' if hi is None else f'{hi:g}'}]"


def _latest_per_task(
    logs: list[tuple[Path, dict, list[dict], str | None]],
) -> tuple[list[tuple[Path, dict, list[dict], str | None]], int, list[str]]:
    """Keep the latest successful log per ``eval.task_id`` (an ``eval-set`` folder's retries).

    ``inspect eval-set`` leaves a failed or cancelled log next to its retry; both carry the same
    task id. The kept log is the latest successful one (the latest of all when none succeeded);
    the samples of the others are counted as ``superseded_log``.
    """
    by_id: dict[str, list[int]] = {}
    for i, (_, header, _, _) in enumerate(logs):
        task_id = (header.get("eval") or {}).get("task_id")
        if task_id:
            by_id.setdefault(str(task_id), []).append(i)
    drop: set[int] = set()
    notes: list[str] = []
    superseded = 0
    for task_id, idx in by_id.items():
        if len(idx) < 2:
            continue

        def rank(i: int) -> tuple[bool, str, str]:
            f, header, _, _ = logs[i]
            return (header.get("status") == "success", _log_time(header), f.name)

        keep = max(idx, key=rank)
        for i in idx:
            if i == keep:
                continue
            drop.add(i)
            superseded += len(logs[i][2])
            notes.append(
                f"{logs[i][0]}: superseded by {logs[keep][0].name} (same task id {task_id!r}, "
                f"status {logs[i][1].get('status')!r}); its {len(logs[i][2])} sample(s) are "
                "counted as superseded_log"
            )
    return [log for i, log in enumerate(logs) if i not in drop], superseded, notes


def _score_source(chosen: list[str]) -> str:
    if len(chosen) == 1 and "." in chosen[0]:
        name, key = chosen[0].split(".", 1)
        return f"scores.{name}.value.{key}"
    return f"scores.{chosen[0]}.value" if len(chosen) == 1 else "scores.<scorer>.value"


def _scorer_from_columns(columns: str | Mapping[str, str] | None, scorer: str | None) -> str | None:
    if columns is None:
        return scorer
    from evalstats.io._columns import parse_mapping

    mapping = parse_mapping(columns)
    bad = {k: v for k, v in mapping.items() if v != "score"}
    if bad or len(mapping) > 1:
        raise ParameterError(
            "`columns` for Inspect logs can only pick the scorer, as '<scorer>=score'; "
            f"got {columns!r}."
        )
    (name,) = mapping
    if scorer is not None and scorer != name:
        raise ParameterError(f"`scorer` is {scorer!r} but `columns` picks {name!r}; give one.")
    return name


def _log_files(path: str | Path | Sequence[str | Path], hidden: list[Path]) -> list[Path]:
    files = expand_paths(path, suffixes=_SUFFIXES, skipped=hidden)
    return [f for f in files if f.suffix in _SUFFIXES] or files


def _open_log(f: Path, *, skip_foreign: bool) -> tuple[dict, list[dict], str | None] | None:
    """Header, samples (Inspect order) and a note, or None for a foreign .json in a folder."""
    if f.stat().st_size == 0:
        raise IngestError("the file is empty (0 bytes).", path=str(f))
    if f.suffix == ".eval":
        return _open_eval(f)
    if f.suffix != ".json":
        raise IngestError("unknown file type; expected an Inspect .eval or .json log.", path=str(f))
    try:
        doc = json.loads(f.read_bytes())
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, UnicodeDecodeError, nesting
        if skip_foreign:
            return None
        raise IngestError(f"not valid JSON ({exc}).", path=str(f)) from None
    if not (isinstance(doc, dict) and isinstance(doc.get("eval"), dict)):
        if skip_foreign:
            return None
        raise IngestError(
            "not an Inspect log: expected a JSON object with an 'eval' header "
            f"(keys: {', '.join(list(doc)[:8]) if isinstance(doc, dict) else type(doc).__name__}).",
            path=str(f),
        )
    samples = _check_samples(_seq(doc, "samples", "samples", f), f)
    _check_header(doc, f)
    note = None
    if not samples:
        note = "the log holds no samples (written with --no-log-samples?)"
    return doc, _sorted(samples), note


def _check_header(header: dict, f: Path) -> None:
    """The header fields the reader uses have their documented types (one line otherwise)."""
    ev = header["eval"]
    _name(ev, "model", f)
    _name(ev, "task", f)
    _seq(ev, "scorers", "eval.scorers", f)
    for where, obj in (
        ("eval.task_args", _obj(ev, "task_args", "eval.task_args", f)),
        (
            "eval.model_generate_config",
            _obj(ev, "model_generate_config", "eval.model_generate_config", f),
        ),
        ("plan.config", _obj(_obj(header, "plan", "plan", f), "config", "plan.config", f)),
    ):
        many = too_many_keys(obj, where)  # each key is a factor column
        if many:
            raise IngestError(many, path=str(f))
    status = header.get("status")
    if status is not None and not isinstance(status, str):
        raise IngestError(f"field 'status' is {_kind(status)}; expected a string.", path=str(f))


#: Zip compression method of Zstandard members (APPNOTE 4.4.5), written by current Inspect.
_ZIP_ZSTANDARD = 93


def _zstd_decompress(raw: bytes, what: str, f: Path, cap: int) -> bytes:
    """Decompress a (possibly multi-frame) Zstandard stream.

    Python 3.14's ``compression.zstd`` when present, else the ``zstandard`` package (the
    maintained binding of the reference C library that inspect_ai itself depends on).
    """
    try:
        from compression import zstd  # type: ignore[import-not-found]  # Python >= 3.14

        with zstd.ZstdFile(io.BytesIO(raw)) as fh:
            return read_capped(fh, what, f, cap)
    except ImportError:
        pass
    try:
        import zstandard
    except ImportError:
        raise MissingDependencyError(
            "reading Zstandard-compressed .eval logs needs the `zstandard` package: "
            "pip install zstandard"
        ) from None
    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(raw), read_across_frames=True)
    with reader:
        return read_capped(reader, what, f, cap)


#: Default cap on all members of one ``.eval`` archive together (4 GiB, decompressed);
#: ``EVALSTATS_MAX_LOG_BYTES``. Agentic logs hold whole transcripts: a 3.6 MB archive
#: decompressed to more than 32 MiB, the old cap on the members together. Members are parsed
#: one at a time and only the fields read are kept (:func:`_slim`), so memory follows the
#: largest member, not the total; the cap guards against zip bombs.
DEFAULT_MAX_LOG_BYTES = 4 * 2**30

#: Default cap on one decompressed member of an ``.eval`` archive (256 MiB), unless
#: ``EVALSTATS_MAX_MEMBER_BYTES`` sets it (it also caps ``.gz`` tables, 32 MiB by default).
DEFAULT_MAX_EVAL_MEMBER_BYTES = 256 * 2**20


def max_log_bytes() -> int:
    """The cap on all members of one ``.eval`` archive, from ``EVALSTATS_MAX_LOG_BYTES``.

    Examples
    --------
    >>> max_log_bytes() > 2**30
    True
    """
    from evalstats.io._files import env_bytes

    return env_bytes("EVALSTATS_MAX_LOG_BYTES", DEFAULT_MAX_LOG_BYTES)


def _max_eval_member_bytes() -> int:
    import os

    raw = os.environ.get("EVALSTATS_MAX_MEMBER_BYTES")
    return max_member_bytes() if raw and raw.strip() else DEFAULT_MAX_EVAL_MEMBER_BYTES


def _needed(n: int) -> int:
    """``n`` bytes rounded up to a whole MiB: the setting that reads the file."""
    return -(-n // 2**20) * 2**20


def _read_member(z: zipfile.ZipFile, f: Path, name: str, budget: list[int] | None = None) -> bytes:
    """The bytes of member ``name``; Zstandard members (method 93) read without patching zipfile.

    ``budget`` (one number, updated): decompressed bytes the archive's members may still take
    together (:func:`max_log_bytes`); one member is capped at ``EVALSTATS_MAX_MEMBER_BYTES``
    when that is set, else 256 MiB.
    """
    member_cap = _max_eval_member_bytes()
    left = member_cap if budget is None else max(min(budget[0], member_cap), 0)
    try:
        data = _read_member_capped(z, f, name, left)
    except IngestError:
        if budget is None or budget[0] >= member_cap:
            raise
        total = max_log_bytes()
        raise IngestError(
            f"the archive's members decompress to more than {total:,} bytes together (reached "
            f"at member {name!r}); raise EVALSTATS_MAX_LOG_BYTES if the file is trusted.",
            path=str(f),
        ) from None
    if budget is not None:
        budget[0] -= len(data)
    return data


def _read_member_capped(z: zipfile.ZipFile, f: Path, name: str, cap: int) -> bytes:
    info = z.getinfo(name)
    what = f"member {name!r}"
    if info.file_size > cap:
        raise IngestError(
            f"{what} declares {info.file_size:,} bytes, more than the limit of {cap:,}; "
            f"set EVALSTATS_MAX_MEMBER_BYTES={_needed(info.file_size)} to read it if the file "
            "is trusted.",
            path=str(f),
        )
    if info.compress_type != _ZIP_ZSTANDARD:
        with z.open(info) as fh:
            return read_capped(fh, what, f, cap)
    try:
        with z.open(info) as fh:  # Python >= 3.14, or zipfile patched by another package
            return read_capped(fh, what, f, cap)
    except NotImplementedError:
        pass
    except (zipfile.BadZipFile, OSError, EOFError):
        raise
    except Exception as exc:  # the patch's or the stdlib's Zstandard error
        raise zipfile.BadZipFile(f"member {name!r}: Zstandard data is damaged ({exc})") from None
    with open(f, "rb") as fh:
        fh.seek(info.header_offset)
        local = fh.read(30)
        if local[:4] != b"PK\x03\x04":
            raise zipfile.BadZipFile(f"bad local file header of member {name!r}")
        skip = int.from_bytes(local[26:28], "little") + int.from_bytes(local[28:30], "little")
        fh.seek(info.header_offset + 30 + skip)
        raw = fh.read(info.compress_size)
    try:
        data = _zstd_decompress(raw, what, f, cap)
    except (MissingDependencyError, IngestError):
        raise
    except Exception as exc:  # zstandard.ZstdError, compression.zstd.ZstdError
        raise zipfile.BadZipFile(f"member {name!r}: Zstandard data is damaged ({exc})") from None
    if zlib.crc32(data) != info.CRC:
        raise zipfile.BadZipFile(f"member {name!r}: CRC check failed")
    return data


def _open_eval(f: Path) -> tuple[dict, list[dict], str | None]:
    try:
        z = zipfile.ZipFile(f)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise IngestError(f"not a readable .eval (zip) archive ({exc}).", path=str(f)) from None
    with z:
        names = z.namelist()
        note = None
        total_cap = max_log_bytes()
        wanted = [
            i
            for i in z.infolist()
            if _SAMPLE_MEMBER.match(i.filename)
            or i.filename in ("header.json", "_journal/start.json", "start.json")
        ]
        declared = sum(i.file_size for i in {i.filename: i for i in wanted}.values())
        if declared > total_cap:
            raise IngestError(
                f"the archive's header and sample members decompress to {declared:,} bytes "
                f"together, more than the limit of {total_cap:,}; set "
                f"EVALSTATS_MAX_LOG_BYTES={_needed(declared)} to read it if the file is trusted.",
                path=str(f),
            )
        budget = [total_cap]  # all members together
        try:
            if "header.json" in names:
                header = json.loads(_read_member(z, f, "header.json", budget))
            elif "_journal/start.json" in names:
                header = json.loads(_read_member(z, f, "_journal/start.json", budget))
                note = "no header.json (the run did not finish); model and task from _journal/start.json"
            elif "start.json" in names:
                header = json.loads(_read_member(z, f, "start.json", budget))
            else:
                raise IngestError(
                    "not an Inspect .eval log: the archive has no header.json or "
                    f"_journal/start.json (members: {', '.join(names[:6])}).",
                    path=str(f),
                )
            samples = []
            # a log appended to (a resumed run) repeats member names: the last entry wins,
            # as for every zip reader, so each name is read once
            for name in dict.fromkeys(names):
                if _SAMPLE_MEMBER.match(name):
                    raw = _read_member(z, f, name, budget)
                    try:
                        sample = json.loads(raw)
                    except (ValueError, RecursionError) as exc:
                        raise IngestError(
                            f"sample file {name!r} is not valid UTF-8 JSON ({exc}).", path=str(f)
                        ) from None
                    if not isinstance(sample, dict):
                        raise IngestError(
                            f"sample file {name!r} holds {_kind(sample)}; expected an object.",
                            path=str(f),
                        )
                    samples.append(_slim(sample))
        except IngestError:
            raise
        except (
            zipfile.BadZipFile,
            OSError,
            EOFError,
            zlib.error,
            NotImplementedError,
            RuntimeError,
        ) as exc:  # RuntimeError: an encrypted member; NotImplementedError: unknown method
            raise IngestError(f"the .eval archive is damaged ({exc}).", path=str(f)) from None
        except (ValueError, RecursionError) as exc:
            raise IngestError(
                f"the log header is not valid UTF-8 JSON ({exc}).", path=str(f)
            ) from None
    if not isinstance(header, dict) or not isinstance(header.get("eval"), dict):
        raise IngestError("the log header has no 'eval' section.", path=str(f))
    _check_samples(samples, f)
    _check_header(header, f)
    if not samples and note is None:
        note = "the log holds no samples"
    return header, _sorted(samples), note


#: Fields of a sample the reader uses; the rest (messages, events, the transcript of an agent)
#: is dropped as each member is parsed, so memory follows the largest member.
_SAMPLE_FIELDS = ("id", "epoch", "scores", "score", "target", "input", "error")


def _slim(sample: dict) -> dict:
    """The fields of ``sample`` the reader uses (its completion kept as ``output.completion``)."""
    out = {k: sample[k] for k in _SAMPLE_FIELDS if k in sample}
    if not isinstance(out.get("input"), str):
        out.pop("input", None)
    if "error" in out and out["error"] is not None:
        out["error"] = True
    completion = _completion(sample)
    if completion is not None:
        out["output"] = {"completion": completion}
    return out


def _sorted(samples: list[dict]) -> list[dict]:
    def key(s: dict) -> tuple:
        sid = s.get("id")
        epoch = s.get("epoch")
        return (
            epoch if type(epoch) is int else 0,
            isinstance(sid, str),
            sid if sid is not None else "",
        )

    try:
        return sorted(samples, key=key)
    except TypeError:
        return samples


def _scorer_names(header: dict, samples: list[dict]) -> list[str]:
    """Scorer names in header order, then others seen in samples; dict values give ``name.key``."""
    seen: list[str] = []
    for spec in header["eval"].get("scorers") or []:
        if isinstance(spec, dict) and spec.get("name"):
            seen.append(str(spec["name"]))
    if not seen and isinstance((header.get("eval") or {}).get("scorer"), str):
        seen.append(header["eval"]["scorer"])
    keys: dict[str, list[str]] = {}
    for s in samples:
        for name, score in (_scores(s) or {}).items():
            name = str(name)
            if name not in seen:
                seen.append(name)
            value = score.get("value") if isinstance(score, dict) else None
            if isinstance(value, dict):
                for k in map(str, value):
                    if k not in keys.setdefault(name, []):
                        keys[name].append(k)
    names: list[str] = []
    for name in seen:
        if name in keys:
            names.extend(f"{name}.{k}" for k in keys[name])
        else:
            names.append(name)
    return names


def _scores(sample: dict) -> dict | None:
    scores = sample.get("scores")
    if scores is None and isinstance(sample.get("score"), dict):  # log format version 1
        scores = {"score": sample["score"]}
    return scores if isinstance(scores, dict) else None


def _lookup(scores: dict | None, scorer: str) -> tuple[bool, Any, Any]:
    """(found, value, answer) for ``scorer`` (``name`` or ``name.key`` for dict values)."""
    if not scores:
        return False, None, None
    if scorer in scores and isinstance(scores[scorer], dict):
        sc = scores[scorer]
        return "value" in sc, sc.get("value"), sc.get("answer")
    if "." in scorer:
        name, key = scorer.split(".", 1)
        sc = scores.get(name)
        if isinstance(sc, dict) and isinstance(sc.get("value"), dict) and key in sc["value"]:
            return True, sc["value"][key], sc.get("answer")
    return False, None, None


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        if all(isinstance(v, str) for v in value):
            return json.dumps(value, ensure_ascii=False)
        parts = [
            c.get("text") for c in value if isinstance(c, dict) and isinstance(c.get("text"), str)
        ]
        return "".join(parts) if parts else None
    return str(value)


def _sample_error(sample: dict) -> str:
    """The text of a sample's ``error`` (its message), classed later; never empty."""
    err = sample.get("error")
    text = err.get("message") if isinstance(err, dict) else err
    return str(text).strip() if text is not None and str(text).strip() else "error"


def _completion(sample: dict) -> str | None:
    out = sample.get("output")
    if not isinstance(out, dict):
        return None
    if isinstance(out.get("completion"), str):
        return out["completion"]
    choices = out.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        message = choices[0].get("message")
        return _text(message.get("content")) if isinstance(message, dict) else None
    return None


def _factors(header: dict) -> dict[str, Any]:
    ev = header["eval"]
    out: dict[str, Any] = {}
    for k, v in (ev.get("task_args") or {}).items():
        if isinstance(v, (str, int, float, bool)) and not (isinstance(v, int) and abs(v) >= 2**63):
            out[k] = v
    config = dict(ev.get("model_generate_config") or {})
    config.update((header.get("plan") or {}).get("config") or {})
    for k in _GENERATE_KEYS:
        v = config.get(k)
        if isinstance(v, (str, int, float, bool)) and not (isinstance(v, int) and abs(v) >= 2**63):
            out[k] = v
    renamed = {}
    for k, v in out.items():
        name = (
            f"task_{k}"
            if k in OBSERVATION_COLUMNS or k.startswith("__") or k in ("item", "variant", "n_items")
            else k
        )
        renamed[name] = v if not isinstance(v, bool) else str(v).lower()
    return renamed


def _frame(f: Path, header: dict, samples: list[dict], scorer: str | None):
    ev = header["eval"]
    names = _scorer_names(header, samples)
    notes: list[str] = []
    status = header.get("status")
    if status not in (None, "success"):
        notes.append(f"{f}: log status is {status!r}; only the samples it holds are read")
    chosen = scorer
    if chosen is None:
        chosen = names[0] if names else None
        scored_names = [n for n in names if _has_values(samples, n)]
        if chosen is not None and scored_names and chosen not in scored_names:
            # the first declared scorer never ran (or gave no value): the scored one is read
            notes.append(
                f"{f}: scorer {chosen!r}, declared first, has no value on any sample; scores "
                f"from {scored_names[0]!r}, the first scorer that has values "
                "(pick one with scorer=..., CLI: --columns <scorer>=score)"
            )
            chosen = scored_names[0]
        elif len(names) > 1:
            notes.append(
                f"{f}: scores from scorer {chosen!r} (also available: "
                f"{', '.join(repr(n) for n in names[1:])}); pick one with scorer=... "
                f"(CLI: --columns <scorer>=score)"
            )
    elif samples and names and chosen not in names:
        raise IngestError(
            f"no scorer {chosen!r} in the log (scorers: {', '.join(repr(n) for n in names)}).",
            path=str(f),
        )
    factors = _factors(header)
    model, task = _name(ev, "model", f), _name(ev, "task", f)
    rows: dict[str, list] = {
        k: []
        for k in (
            "model",
            "dataset",
            "item",
            "run",
            "score",
            "answer",
            "response",
            "gold",
            "__input_text",
            "__unscored",
            "__sample_error",
            "error",
        )
    }
    scored = 0
    graded = True  # every scored value one of Inspect's letter grades (C, P, I, N)
    categories = _categories(samples, chosen) if chosen else None
    rows["__categorical"] = []
    for s in samples:
        found, value, answer = _lookup(_scores(s), chosen) if chosen else (False, None, None)
        unscored = not found or value is None or (isinstance(value, float) and math.isnan(value))
        graded = graded and (unscored or (isinstance(value, str) and value in _LETTERS))
        errored = s.get("error") is not None and unscored
        num = None if unscored else value_to_float(value)
        categorical = False
        if categories is not None and not unscored:
            num = categories.get((str(value), _text(s.get("target"))))
            categorical = num is None
        if unscored:
            raw = None
        elif num is not None:
            raw = repr(num)
        else:
            raw = value if isinstance(value, str) else json.dumps(value)
        scored += 0 if unscored else 1
        sid = s.get("id")
        epoch = s.get("epoch", 1)
        rows["model"].append(model)
        rows["dataset"].append(task)
        rows["item"].append(None if sid is None else str(sid))
        rows["run"].append(epoch - 1 if type(epoch) is int and 1 <= epoch <= _MAX_EPOCH else None)
        rows["score"].append(raw)
        rows["answer"].append(None if answer is None else str(answer))
        rows["response"].append(_completion(s))
        rows["gold"].append(_text(s.get("target")))
        rows["__input_text"].append(s.get("input") if isinstance(s.get("input"), str) else None)
        rows["__unscored"].append(unscored and not errored)
        rows["__sample_error"].append(errored)
        rows["error"].append(_sample_error(s) if errored else None)
        rows["__categorical"].append(categorical)
    schema = {
        "model": pl.String,
        "dataset": pl.String,
        "item": pl.String,
        "run": pl.Int64,
        "score": pl.String,
        "answer": pl.String,
        "response": pl.String,
        "gold": pl.String,
        "__input_text": pl.String,
        "__unscored": pl.Boolean,
        "__sample_error": pl.Boolean,
        "error": pl.String,
        "__categorical": pl.Boolean,
    }
    frame = pl.DataFrame(rows, schema=schema)
    if categories is not None:
        values = sorted({str(v) for (v, _t) in _category_pairs(samples, chosen)})
        if categories:
            notes.append(
                f"{f}: scorer {chosen!r} gives categories ({', '.join(values[:6])}), and each "
                "sample's target is one of them: scored 1 when the value equals the target, "
                "else 0 (range [0, 1])"
            )
        else:
            others = [n for n in names if n != chosen]
            notes.append(
                f"{f}: scorer {chosen!r} gives categories ({', '.join(values[:6])}) that are "
                "neither Inspect's grades (C, P, I, N) nor the samples' targets: its samples are "
                "set aside as categorical_score"
                + (
                    f" (another scorer: {', '.join(map(repr, others))}; "
                    "CLI: --columns <scorer>=score)"
                    if others
                    else ""
                )
            )
    if chosen is not None:
        info, note = _metric_info(header, chosen)
        if categories and info.low is None and info.high is None:
            info = MetricInfo(chosen, 0.0, 1.0, info.higher_is_better)
        if info.low is None and info.high is None and graded and scored:
            # C, P, I and N map to 1, 0.5, 0 and 0: the scorer's scale is [0, 1]
            info = MetricInfo(chosen, 0.0, 1.0, info.higher_is_better)
            graded_note = (
                f"scorer {chosen!r} gives Inspect's letter grades (C, P, I, N = 1, 0.5, 0, 0): "
                "its range is [0, 1]"
            )
            if graded_note not in notes:
                notes.append(graded_note)
        if note:
            notes.append(f"{f}: {note}")
        frame = frame.with_columns(info.columns())
    if factors:
        frame = frame.with_columns(pl.lit(v).alias(k) for k, v in factors.items())
    return frame, chosen, scored, notes


def _has_values(samples: list[dict], scorer: str) -> bool:
    """Whether some sample has a value (not null, not NaN) for ``scorer``."""
    for s in samples:
        found, value, _ = _lookup(_scores(s), scorer)
        if found and value is not None and not (isinstance(value, float) and math.isnan(value)):
            return True
    return False


def _category_pairs(samples: list[dict], scorer: str) -> list[tuple[Any, str | None]]:
    out = []
    for s in samples:
        found, value, _ = _lookup(_scores(s), scorer)
        if found and value is not None and not (isinstance(value, float) and math.isnan(value)):
            out.append((value, _text(s.get("target"))))
    return out


#: Most distinct labels (values and targets together) of a categorical scorer read by its target.
_MAX_CATEGORIES = 20


def _categories(samples: list[dict], scorer: str) -> dict[tuple[str, str | None], float] | None:
    """The scores of a categorical scorer, or None when the scorer is not one.

    A scorer is categorical when every value it gives is text that
    :func:`value_to_float` cannot read ("left", "right", "A"). When every scored sample's
    target is text among those values (a pairwise judge asked which side is right), a value
    equal to the target scores 1, another 0: ``{(value, target): score}`` (at most 20 labels,
    and some value equal to some target). Otherwise ``{}``:
    the values have no known order, and the samples are set aside as ``categorical_score``.
    """
    pairs = _category_pairs(samples, scorer)
    if not pairs or not all(isinstance(v, str) and value_to_float(v) is None for v, _ in pairs):
        return None
    values = {v for v, _ in pairs}
    targets = {t for _, t in pairs}
    if None in targets or not (values & targets) or len(values | targets) > _MAX_CATEGORIES:
        return {}
    return {(v, t): 1.0 if v == t else 0.0 for v, t in pairs}


def _metric_info(header: dict, chosen: str) -> tuple[MetricInfo, str | None]:
    """The chosen scorer's bounds and direction from its metadata in the log header.

    Inspect records a scorer's extra ``@scorer(..., **metadata)`` arguments in
    ``eval.scorers[].metadata`` (and ``results.scores[].metadata``). Read here: ``higher_is_better``
    or ``lower_is_better`` (booleans), and ``low``/``high`` (numbers) or ``bounds`` ([low,
    high]). For a dictionary-valued scorer (``name.key``) the metadata may be keyed by the key.
    """
    name, _, key = chosen.partition(".")
    meta: dict[str, Any] = {}
    specs = list((header.get("eval") or {}).get("scorers") or [])
    results = header.get("results")  # the producer's summary: read only when it is one
    scores = results.get("scores") if isinstance(results, dict) else None
    specs += scores if isinstance(scores, list) else []
    for spec in specs:
        if isinstance(spec, dict) and spec.get("name") in (name, chosen):
            m = spec.get("metadata")
            if isinstance(m, dict):
                meta = {**m, **meta}
    if key and isinstance(meta.get(key), dict):
        meta = meta[key]
    hib = meta.get("higher_is_better")
    if isinstance(meta.get("lower_is_better"), bool):
        hib = not meta["lower_is_better"]
    low, high = meta.get("low"), meta.get("high")
    bounds = meta.get("bounds")
    if isinstance(bounds, (list, tuple)) and len(bounds) == 2:
        low, high = bounds

    number = finite  # an integer too large for a float is no bound (was an OverflowError)

    try:
        info = MetricInfo(chosen, number(low), number(high), hib if isinstance(hib, bool) else True)
    except ValueError as exc:
        return MetricInfo(chosen), f"scorer metadata of {chosen!r} ignored ({exc})"
    return info, None


def _factor_order(parts: list[tuple[str, pl.LazyFrame]]) -> list[str]:
    order: list[str] = []
    for _, lf in parts:
        for name in lf.collect_schema().names():
            if name not in OBSERVATION_COLUMNS and not name.startswith("__") and name not in order:
                order.append(name)
    return order
