"""LightEval per-sample details (``details_<task>_<date>.parquet``) into the observation table.

``lighteval ... --save-details`` writes, beside ``results/<model>/results_<date>.json`` (the
aggregates), one parquet file per task:
``details/<model>/<date>/details_<task>_<date>.parquet``. In LightEval 0.9 and later each row is
one ``Detail``: a ``doc`` struct (``id``, ``task_name``, ``query``, ``choices``, ``gold_index``,
...), a ``model_response`` struct (``text``, ``logprobs``, ...) and a ``metric`` struct (one field
per metric, e.g. ``acc``). Older releases wrote flat columns (``example``, ``full_prompt``,
``predictions``, ``gold``, ``metrics`` struct, ...). See ``docs/formats/lighteval.md``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from evalstats.errors import IngestError
from evalstats.io._files import expand_paths, lfs_pointer, skipped_note
from evalstats.io._pipeline import OnInvalid, ScoreScale, finalize, validate_options
from evalstats.io._report import Ingest
from evalstats.schema import MetricInfo

__all__ = ["detect_lighteval", "read_lighteval"]

_DETAILS = re.compile(r"^details_(?P<task>.+)_(?P<date>\d{4}-\d\d-\d\dT[^_]+)\.parquet$")

#: Metrics LightEval reports on [0, 1] (per-sample 0/1 or a fraction).
_UNIT_METRICS = re.compile(
    r"^(acc|acc_norm|em|exact_match|quasi_exact_match|prefix_exact_match|pass@\d+|"
    r"maj@\d+|f1|extractive_match|loglikelihood_acc.*|mc\d?|truthfulqa.*|gpqa.*)$"
)


def detect_lighteval(path: str | Path) -> bool:
    """Whether ``path`` is a LightEval details file (or a folder holding them).

    Examples
    --------
    >>> detect_lighteval("no/such/details_arc_2025-01-01T00-00-00.parquet")
    False
    """
    p = Path(path)
    if p.is_dir():
        return any(_DETAILS.match(f.name) for f in p.rglob("details_*.parquet"))
    return p.is_file() and bool(_DETAILS.match(p.name))


def _model_of(f: Path) -> str:
    """``details/<model>/<date>/details_...``: the model is the path between details and date."""
    parts = f.parts
    if "details" in parts[:-2]:
        i = len(parts) - 1 - parts[::-1].index("details")
        name = "/".join(parts[i + 1 : -2])
        if name:
            return name
    return f.parent.parent.name or f.parent.name


def _results_of(f: Path, model: str, date: str) -> dict | None:
    """The ``results_<date>.json`` of the run, under ``results/<model>/`` beside ``details/``."""
    parts = f.parts
    if "details" not in parts:
        return None
    i = len(parts) - 1 - parts[::-1].index("details")
    root = Path(*parts[:i])
    for cand in (root / "results" / model / f"results_{date}.json",):
        try:
            doc = json.loads(cand.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        return doc if isinstance(doc, dict) else None
    return None


def read_lighteval(
    path: str | Path | Sequence[str | Path],
    *,
    metric: str | Mapping[str, str] | None = None,
    on_invalid: OnInvalid = "error",
    score_scale: ScoreScale = "auto",
) -> Ingest:
    r"""Read LightEval details parquet files into the observation table.

    Parameters
    ----------
    path : str, Path or sequence of them
        The ``--output-dir`` folder, a ``details`` folder, one details file, a glob or a list.
    metric : str or mapping, optional
        The metric read (a field of the ``metric`` struct), for every task or per task
        (``{task: metric}``). Default: each file's first metric.
    on_invalid, score_scale
        As for :func:`evalstats.io.table.read_table`.

    Returns
    -------
    Ingest
        One row per sample: ``model`` (the folder under ``details/``), ``dataset`` (the task,
        ``suite|task|shots``), ``item`` (``doc.id``, else the row number), ``run`` (runs of one
        (model, task) numbered by date), ``score``, ``response`` (the first generated text),
        ``gold`` (the gold choice).

    Notes
    -----
    The run's ``results/<model>/results_<date>.json`` (the producer's aggregates), when present
    beside ``details/``, is quoted in the notes per task, so the means can be checked against
    it. The default metric is the first the task declares in that file's ``config_tasks`` (the
    parquet struct's fields are sorted), and each metric's direction is its declared
    ``higher_is_better``. Checked against: output written by LightEval 0.13.0 itself
    (``fixtures/dumps/lighteval/producer``), two real dumps of the real corpus (every mean equal
    to the results file's), and files in the older flat layout (``tests/io/test_lighteval.py``).

    Examples
    --------
    >>> import pathlib, tempfile, polars as pl
    >>> d = pathlib.Path(tempfile.mkdtemp()) / "details" / "org" / "m" / "2025-01-01T00-00-00"
    >>> d.mkdir(parents=True)
    >>> pl.DataFrame({"doc": [{"id": "0", "task_name": "lighteval|arc|0", "gold_index": 0}],
    ...               "metric": [{"acc": 1.0}]}).write_parquet(
    ...     d / "details_lighteval|arc|0_2025-01-01T00-00-00.parquet")
    >>> obs, report = read_lighteval(d.parents[2])
    >>> obs.select("model", "dataset", "item", "score").collect().rows()
    [('org/m', 'lighteval|arc|0', '0', 1.0)]
    """
    from evalstats.io.lm_eval import _parse_metric  # ``TASK=NAME,...`` as the CLI gives it

    validate_options(on_invalid, score_scale)
    metric = _parse_metric(metric)
    hidden: list[Path] = []
    files = [
        f
        for f in expand_paths(path, suffixes=(".parquet",), skipped=hidden)
        if _DETAILS.match(f.name)
    ]
    if not files:
        raise IngestError(
            "no LightEval details_<task>_<date>.parquet files (LightEval writes them with "
            "--save-details).",
            path=str(path),
        )
    notes: list[str] = []
    parts: list[tuple[str, pl.DataFrame]] = []
    keys: list[tuple[str, str, str]] = []
    quoted: set[tuple[str, str]] = set()
    for f in files:
        m = _DETAILS.match(f.name)
        task, date = m["task"], m["date"]
        model = _model_of(f)
        pointer = lfs_pointer(f)
        if pointer:  # LightEval's own reference details are kept in Git LFS
            raise IngestError(pointer, path=str(f))
        try:
            raw = pl.read_parquet(f)
        except (pl.exceptions.PolarsError, OSError) as exc:
            raise IngestError(f"not a readable parquet file ({exc}).", path=str(f)) from None
        metrics_col = "metric" if "metric" in raw.columns else "metrics"
        if metrics_col not in raw.columns or not isinstance(raw.schema[metrics_col], pl.Struct):
            raise IngestError(
                f"no 'metric' struct column (columns: {', '.join(raw.columns)}); expected "
                "LightEval's Detail layout (doc, model_response, metric).",
                path=str(f),
            )
        available = [fld.name for fld in raw.schema[metrics_col].fields]
        results = _results_of(f, model, date)
        declared, directions = _declared(results, task)
        # the parquet struct's field order is not the producer's (datasets sorts it): the
        # default is the first metric the task declares in the results file, when there is one
        order = [d for d in declared if d in available] + [
            a for a in available if a not in declared
        ]
        wanted = metric.get(task) if isinstance(metric, Mapping) else metric
        chosen = wanted if wanted is not None else (order[0] if order else None)
        if chosen is None or chosen not in available:
            raise IngestError(
                f"no metric {chosen!r} in task {task!r} (metrics: {', '.join(available)}).",
                path=str(f),
                column=metrics_col,
            )
        if wanted is None and len(available) > 1:
            first = "the first the task declares" if chosen in declared else "the first logged"
            note = (
                f"{task}: score = metric {chosen!r}, {first} (also: "
                f"{', '.join(a for a in order if a != chosen)}; pick one with --metric)"
            )
            if note not in notes:
                notes.append(note)
        n = raw.height
        doc = raw["doc"] if "doc" in raw.columns else None
        ids = _field(doc, "id") if doc is not None else None
        if ids is None or all(v in (None, "") for v in ids):
            ids = [str(i) for i in range(n)]
            notes.append(f"{f.name}: no doc.id: the item is the row number")
        golds = _gold(raw, doc)
        frame = pl.DataFrame(
            {
                "model": [model] * n,
                "dataset": [task] * n,
                "item": [str(v) for v in ids],
                "score": raw[metrics_col].struct.field(chosen).cast(pl.String),
                "response": _response(raw),
                "gold": golds,
            },
            schema={
                "model": pl.String,
                "dataset": pl.String,
                "item": pl.String,
                "score": pl.String,
                "response": pl.String,
                "gold": pl.String,
            },
        )
        low, high = (0.0, 1.0) if _UNIT_METRICS.match(chosen) else (None, None)
        higher = directions.get(chosen, True)
        frame = frame.with_columns(MetricInfo(chosen, low, high, higher).columns())
        parts.append((str(f), frame))
        keys.append((model, task, date))
        if results is not None and (model, date) not in quoted:
            quoted.add((model, date))
            res = (results.get("results") or {}).get(task) or {}
            if isinstance(res, dict) and chosen in res:
                notes.append(
                    f"{model} / {task} ({date}): the producer's {chosen} = {res[chosen]!r} "
                    "(results_<date>.json)"
                )
    # runs: several dates of one (model, task) are repeated runs, oldest first
    order: dict[tuple[str, str], list[str]] = {}
    for model, task, date in keys:
        order.setdefault((model, task), []).append(date)
    numbered = []
    for (name, frame), (model, task, date) in zip(parts, keys):
        run = sorted(order[(model, task)]).index(date)
        numbered.append((name, frame.with_columns(pl.lit(run, dtype=pl.Int64).alias("run")).lazy()))
    note = skipped_note(hidden)
    if note:
        notes.append(note)
    return finalize(
        numbered,
        format="lighteval",
        on_invalid=on_invalid,
        score_scale=score_scale,
        source_names={"score": "metric.<name>", "item": "doc.id"},
        notes=notes,
    )


def _declared(results: dict | None, task: str) -> tuple[list[str], dict[str, bool]]:
    """The task's metrics in the order its ``config_tasks`` declares them, and their directions.

    LightEval writes ``config_tasks[task]["metrics"]`` as a list of metric specs, each with a
    ``metric_name`` (a name or a list of names) and ``higher_is_better`` (one flag or a mapping of
    name to flag). Older results files key tasks with ``:`` where the details use ``|``.
    """
    tasks = (results or {}).get("config_tasks")
    if not isinstance(tasks, dict):
        return [], {}
    conf = tasks.get(task) or tasks.get(task.replace("|", ":"))
    specs = conf.get("metrics") if isinstance(conf, dict) else None
    if isinstance(specs, dict):
        specs = [specs]
    names: list[str] = []
    directions: dict[str, bool] = {}
    for spec in specs if isinstance(specs, list) else []:
        if not isinstance(spec, dict):
            continue
        these = spec.get("metric_name")
        these = [these] if isinstance(these, str) else these if isinstance(these, list) else []
        these = [n for n in these if isinstance(n, str)]
        names.extend(n for n in these if n not in names)
        hib = spec.get("higher_is_better")
        for n in these:
            flag = hib.get(n) if isinstance(hib, dict) else hib
            if isinstance(flag, bool):
                directions[n] = flag
    return names, directions


def _field(col: pl.Series | None, name: str) -> list[Any] | None:
    if col is None or not isinstance(col.dtype, pl.Struct):
        return None
    if name not in [f.name for f in col.dtype.fields]:
        return None
    return col.struct.field(name).to_list()


def _response(raw: pl.DataFrame) -> list[str | None]:
    texts = _field(raw["model_response"], "text") if "model_response" in raw.columns else None
    if texts is None and "predictions" in raw.columns:
        texts = raw["predictions"].to_list()
    if texts is None:
        return [None] * raw.height
    out = []
    for t in texts:
        while isinstance(t, list) and t:
            t = t[0]
        out.append(t if isinstance(t, str) else None)
    return out


def _gold(raw: pl.DataFrame, doc: pl.Series | None) -> list[str | None]:
    choices = _field(doc, "choices")
    gold = _field(doc, "gold_index")
    if gold is None:
        return [None] * raw.height
    out = []
    for i, g in enumerate(gold):
        g = g[0] if isinstance(g, list) and len(g) == 1 else g
        ch = choices[i] if choices is not None else None
        if isinstance(g, int) and isinstance(ch, list) and 0 <= g < len(ch):
            out.append(str(ch[g]))
        else:
            out.append(None if g is None else json.dumps(g))
    return out
