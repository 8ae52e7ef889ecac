"""inspect_ai's analysis frames (``samples_df``, ``evals_df``) into the observation table.

inspect_ai users often hold their results as the pandas frames of ``inspect_ai.analysis``
rather than as log files. :func:`from_inspect` reads them with the mapping of
:func:`evalstats.io.inspect_log.read_inspect`, so a frame made from a log gives the same
observations as the log itself: the sample ``id`` is the item, ``epoch - 1`` the run, the
``score_<scorer>`` column the score (its values converted as inspect_ai's ``value_to_float``
does), the model and task the model and dataset, the task arguments and generation settings
the factor columns, and logs that repeat a configuration numbered on as further runs.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

import polars as pl

from evalstats._frames import describe, to_polars
from evalstats.errors import IngestError, ParameterError
from evalstats.io._pipeline import Check, OnInvalid, ScoreScale, finalize, validate_options
from evalstats.io.inspect_log import _GENERATE_KEYS, value_to_float
from evalstats.schema import OBSERVATION_COLUMNS, MetricInfo

if TYPE_CHECKING:
    from evalstats._frames import TableLike
    from evalstats.io._report import Ingest

__all__ = ["from_inspect"]

#: Columns of ``evals_df`` (EvalInfo, EvalModel, EvalTask) that a samples frame may lack.
_FROM_EVALS = ("model", "task_name", "created", "model_generate_config")


def _scorers(frame: pl.DataFrame) -> list[str]:
    """Scorer names (``score_<name>`` columns); a dictionary-valued scorer gives ``name.key``."""
    names: list[str] = []
    for col in frame.columns:
        if not col.startswith("score_") or col.startswith("score_headline"):
            continue
        name = col.removeprefix("score_")
        keys: list[str] = []
        for v in frame[col].drop_nulls().head(1000).to_list():
            parsed = _json_object(v)
            if parsed is not None:
                keys += [str(k) for k in parsed if str(k) not in keys]
        names += [f"{name}.{k}" for k in keys] if keys else [name]
    return names


def _json_object(value: Any) -> dict | None:
    if isinstance(value, dict):
        return value
    if isinstance(value, str) and value.lstrip().startswith("{"):
        try:
            out = json.loads(value)
        except ValueError:
            return None
        return out if isinstance(out, dict) else None
    return None


def _raw_score(value: Any, key: str | None) -> tuple[str | None, bool]:
    """(the score as read_inspect writes it, unscored) for one cell of a ``score_`` column."""
    if key is not None:
        parsed = _json_object(value)
        value = parsed.get(key) if parsed is not None else None
    if value is None or (isinstance(value, float) and math.isnan(value)) or value == "":
        return None, True
    num = value_to_float(value)
    if num is not None:
        return repr(num), False
    return (value if isinstance(value, str) else json.dumps(value)), False


def _factor_name(arg: str) -> str:
    clash = arg in OBSERVATION_COLUMNS or arg.startswith("__") or arg in ("item", "variant")
    return f"task_{arg}" if clash or arg == "n_items" else arg


def _generate_factors(frame: pl.DataFrame) -> pl.DataFrame:
    """The generation settings read_inspect reads (temperature, ...) from ``model_generate_config``."""
    if "model_generate_config" not in frame.columns:
        return frame
    rows = [_json_object(v) or {} for v in frame["model_generate_config"].to_list()]
    cols = {}
    for key in _GENERATE_KEYS:
        values = [r.get(key) for r in rows]
        if any(isinstance(v, (str, int, float, bool)) for v in values):
            cols[key] = [str(v).lower() if isinstance(v, bool) else v for v in values]
    return frame.with_columns(pl.Series(k, v, strict=False) for k, v in cols.items())


def from_inspect(
    samples: TableLike,
    *,
    evals: TableLike | None = None,
    scorer: str | None = None,
    on_invalid: OnInvalid = "error",
    score_scale: ScoreScale = "auto",
) -> Ingest:
    """Read inspect_ai's ``samples_df`` frame (with ``evals_df``) into the observation table.

    Parameters
    ----------
    samples : pandas, polars or pyarrow table
        ``inspect_ai.analysis.samples_df(logs)``: one row per sample and epoch, with ``id``,
        ``epoch`` and a ``score_<scorer>`` column per scorer.
    evals : pandas, polars or pyarrow table, optional
        ``inspect_ai.analysis.evals_df(logs)``, joined on ``eval_id`` for the model, the task,
        the task arguments (``task_arg_*``) and the generation config; not needed when
        ``samples`` already holds them (``samples_df(logs, columns=SampleSummary + EvalInfo +
        EvalModel + EvalTask)``).
    scorer : str, optional
        The scorer whose values are the score (default: the first ``score_`` column);
        ``name.key`` for a key of a dictionary-valued scorer, as in :func:`read_inspect`.
    on_invalid : {'error', 'skip'}, default 'error'
        Raise on the first invalid sample (a score that is not a number, ...) or set such
        samples aside and count them.
    score_scale : {'auto', 'unit', 'percent'}, default 'auto'
        See :func:`evalstats.io._pipeline.finalize`.

    Returns
    -------
    Ingest
        ``(observations, report)``, the same observations :func:`read_inspect` reads from the
        logs the frames were made from: ``model``, ``dataset`` (the task), ``item`` (``id``),
        ``run`` (``epoch - 1``), ``score``, ``metric`` (the scorer), ``gold`` (``target``) and
        the task arguments and generation settings as factor columns.

    Raises
    ------
    IngestError
        A column it needs is missing (named, with how to get it), or a sample is invalid and
        ``on_invalid='error'``.
    ParameterError
        ``scorer`` names no ``score_`` column.

    Notes
    -----
    Samples without a value for the scorer are set aside as ``unscored`` (``sample_error``
    when the sample ended in an error), as :func:`read_inspect` does. Logs of one model and
    task with the same task arguments and generation config (by ``eval_id``) are repeated runs
    of one configuration: their epochs are numbered on, oldest log first (``created``).
    ``samples_df`` does not hold the solver plan, so logs that differ only in their solver are
    read as repeated runs here, where :func:`read_inspect` makes them prompt variants.
    Checked against: frames made by inspect_ai's ``samples_df``/``evals_df`` from logs its
    writer made (``tests/io/test_inspect_frames.py``).

    Examples
    --------
    >>> import pandas as pd
    >>> samples = pd.DataFrame({"eval_id": "e1", "id": [1, 2, 1, 2], "epoch": [1, 1, 2, 2],
    ...                         "score_match": ["C", "I", "C", "P"], "target": "4"})
    >>> evals = pd.DataFrame({"eval_id": ["e1"], "model": ["openai/gpt-4o"],
    ...                       "task_name": ["arith"]})
    >>> obs, report = from_inspect(samples, evals=evals)
    >>> obs.select("model", "dataset", "metric", "item", "run", "score").collect().rows()
    [('openai/gpt-4o', 'arith', 'match', '1', 0, 1.0), ('openai/gpt-4o', 'arith', 'match', '2', 0, 0.0), ('openai/gpt-4o', 'arith', 'match', '1', 1, 1.0), ('openai/gpt-4o', 'arith', 'match', '2', 1, 0.5)]
    """
    validate_options(on_invalid, score_scale)
    source = describe(samples)
    frame = to_polars(samples, what="inspect_ai's samples_df frame")
    frame = frame.collect() if isinstance(frame, pl.LazyFrame) else frame
    if evals is not None:
        ev = to_polars(evals, what="inspect_ai's evals_df frame")
        ev = ev.collect() if isinstance(ev, pl.LazyFrame) else ev
        if "eval_id" not in frame.columns or "eval_id" not in ev.columns:
            raise IngestError("both frames need `eval_id` to be joined.", path=source)
        take = [c for c in ev.columns if c == "eval_id" or c not in frame.columns]
        take = [c for c in take if c in ("eval_id", *_FROM_EVALS) or c.startswith("task_arg_")]
        frame = frame.join(ev.select(take).unique("eval_id"), on="eval_id", how="left")
    missing = [c for c in ("id", "epoch", "model", "task_name") if c not in frame.columns]
    if missing:
        hint = (
            " Pass evals=evals_df(logs), or make the frame with samples_df(logs, "
            "columns=SampleSummary + EvalInfo + EvalModel + EvalTask)."
            if set(missing) & {"model", "task_name"}
            else ""
        )
        raise IngestError(
            f"the samples frame has no column {missing[0]!r} (inspect_ai's samples_df has "
            f"id, epoch and score_<scorer>).{hint}",
            path=source,
        )
    names = _scorers(frame)
    if not names:
        raise IngestError(
            "the samples frame has no score_<scorer> column (score the logs with "
            "`inspect score` first).",
            path=source,
        )
    notes: list[str] = []
    if scorer is None:
        chosen = names[0]
        if len(names) > 1:
            notes.append(
                f"scores from scorer {chosen!r} (also available: "
                f"{', '.join(repr(n) for n in names[1:])}); pick one with scorer=..."
            )
    elif scorer in names:
        chosen = scorer
    else:
        raise ParameterError(
            f"`scorer` {scorer!r} is not a scorer of the frame (scorers: "
            f"{', '.join(repr(n) for n in names)})."
        )
    column, _, key = chosen.partition(".")
    column = f"score_{column}" if f"score_{column}" in frame.columns else f"score_{chosen}"
    cells = [_raw_score(v, key or None) for v in frame[column].to_list()]
    errors = frame["error"].to_list() if "error" in frame.columns else [None] * frame.height
    errored = [bool(e) and unscored for e, (_, unscored) in zip(errors, cells)]
    frame = _generate_factors(frame)
    args = [c for c in frame.columns if c.startswith("task_arg_")]
    factors = [_factor_name(c.removeprefix("task_arg_")) for c in args]
    factors += [k for k in _GENERATE_KEYS if k in frame.columns and k not in factors]
    epoch = pl.col("epoch").cast(pl.Int64, strict=False)
    out = frame.select(
        pl.col("model").cast(pl.String),
        pl.col("task_name").cast(pl.String).alias("dataset"),
        pl.col("id").cast(pl.String).alias("item"),
        pl.when(epoch >= 1).then(epoch - 1).alias("run"),
        pl.Series("score", [c[0] for c in cells], dtype=pl.String),
        *([pl.col("target").cast(pl.String).alias("gold")] if "target" in frame.columns else []),
        *[
            (
                pl.col(c).cast(pl.String).str.to_lowercase()
                if frame.schema[c] == pl.Boolean
                else pl.col(c)
            ).alias(f)
            for c, f in zip(args, factors)
        ],
        *[pl.col(k) for k in _GENERATE_KEYS if k in factors and k in frame.columns],
        pl.Series("__unscored", [c[1] and not e for c, e in zip(cells, errored)]),
        pl.Series("__sample_error", errored),
        *[pl.col(c) for c in ("eval_id", "created") if c in frame.columns],
    )
    out, repeated = _runs_numbered_on(out, factors)
    if repeated:
        notes.append(
            f"{repeated} configuration(s) with several logs (same model, task, task arguments "
            "and generation config) read as repeated runs: their epochs numbered on, log "
            "after log, oldest first"
        )
    out = out.with_columns(MetricInfo(chosen).columns())
    return finalize(
        [(source, out.lazy())],
        format="inspect",
        on_invalid=on_invalid,
        score_scale=score_scale,
        checks=[
            Check(
                "sample_error",
                pl.col("__sample_error"),
                quirk=True,
                message="the sample ended in an error and has no score",
            ),
            Check(
                "unscored",
                pl.col("__unscored"),
                column="score",
                quirk=True,
                message="the sample has no value for the chosen scorer",
            ),
        ],
        factors=factors,
        source_names={"score": column, "item": "id", "run": "epoch"},
        notes=[*notes, "run = epoch - 1 (Inspect epochs start at 1)"],
    )


def _runs_numbered_on(frame: pl.DataFrame, factors: list[str]) -> tuple[pl.DataFrame, int]:
    """Number the epochs of repeated logs of one configuration on, oldest log first.

    Returns the frame (without ``eval_id`` and ``created``) and the number of configurations
    with several logs.
    """
    extra = [c for c in ("eval_id", "created") if c in frame.columns]
    if "eval_id" not in frame.columns:
        return frame.drop(extra), 0
    config = ["model", "dataset", *factors]
    logs = (
        frame.with_row_index("__first")
        .group_by([*config, "eval_id"], maintain_order=True)
        .agg(
            pl.col("run").max().fill_null(0).alias("__last"),
            pl.col("__first").min(),
            *([pl.col("created").min()] if "created" in frame.columns else []),
        )
        # oldest log first (inspect_ai's `created`), then in the order the frame lists them
        .sort([*(["created"] if "created" in frame.columns else []), "__first"], nulls_last=True)
        .with_columns((pl.col("__last") + 1).cum_sum().over(config).alias("__end"))
        .with_columns((pl.col("__end") - pl.col("__last") - 1).alias("__offset"))
    )
    repeated = logs.group_by(config).len().filter(pl.col("len") > 1).height
    out = frame.join(
        logs.select([*config, "eval_id", "__offset"]),
        on=[*config, "eval_id"],
        nulls_equal=True,
        maintain_order="left",
    )
    out = out.with_columns(pl.col("run") + pl.col("__offset"))
    return out.drop(["__offset", *extra]), repeated
