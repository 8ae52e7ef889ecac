"""The observation table and the unit table: columns, dtypes, metrics and validation.

Every loader yields the **observation table**, one row per scored model output. Aggregating it
over items gives the **unit table**, one row per (model, dataset, metric, variant, run).
Analyses accept either, and call :func:`validate_observations` or :func:`validate_units` at
their boundary so a hand-built frame gets the same checks as a loaded one.

======================  =========  ===========================================================
column                  dtype      meaning
======================  =========  ===========================================================
``model``               String     evaluated object (model, or model@provider)
``dataset``             String     benchmark / task
``metric``              String     the metric's name (``acc``, ``bleu_max``, ``mae``, ...)
``item``                String     item id within the dataset (absent for unit-level input)
``cluster``             String     a group of items whose scores are correlated (a passage, ...)
``variant``             String     one point of the perturbation / configuration space
``run``                 Int64      index of an identical repeated run (0 if absent)
``score``               Float64    the score on the metric's own scale: any finite real
factors                 any        the dimensions that define ``variant`` (template, shots, ...)
``answer``     String     parsed answer (TARa)
``response``   String     raw output text (TARr, output length)
``gold``       String     reference answer
``input_len``  Int64      whitespace word count of the input
``output_len`` Int64      whitespace word count of the output
``latency_s``  Float64    per-call latency in seconds
``error``               String     null for a clean call, else a category (``api_error``, ...)
``metric_low``          Float64    the metric's lower bound; null: unbounded or not declared
``metric_high``         Float64    the metric's upper bound; null: unbounded or not declared
``higher_is_better``    Boolean    the metric's direction (false for errors, latency, cost)
======================  =========  ===========================================================

``gold_score`` (Float64, optional) is a human (gold) score of the output on the same scale as
``score``, null where the item was not labelled; with ``score`` from an LLM judge it is what
:func:`evalstats.compare.ppi_mean` corrects the judge with.

``cumulative_logprob`` (Float64, optional) keeps the summed token log-probability of the output
when a source records it (DOVE); like the other optional columns it is not a factor.

The unit table has ``model, dataset, metric, variant, run, score, n_items``, ``n_errors`` when
the observations carried an ``error`` column, the three metric columns when they carried them,
and the factor columns.

An errored call a loader kept without a score (a non-null ``error``, a null ``score``; see
:mod:`evalstats.io._errors`) is an observation of the provider, not of the model's answers:
:func:`validate_observations` leaves it out unless asked (``errored='keep'``, what the
provider audit does), so units average scored rows only, ``n_items`` counts them and
``n_errors`` counts the scored rows that carry an error.

Metrics
-------
Scores are not all accuracies. A table may hold several metrics (``acc`` and ``acc_norm``,
BLEU and ROUGE, accuracy and latency), told apart by the ``metric`` column and never mixed:
the unit key includes ``metric`` and every analysis groups by it by default. Each metric
carries a :class:`MetricInfo`: its name, its bounds (``[0, 1]``, ``[0, 100]``, or unbounded)
and its direction. The bounds and direction travel **with the data**, as the constant
per-metric columns ``metric_low``, ``metric_high`` and ``higher_is_better``, so they survive
a round trip through a Parquet or CSV file written by ``evalstats ingest --out``. Loaders fill
them from what the format declares (lm-eval's ``higher_is_better``, a known accuracy metric's
``[0, 1]``), and the user overrides them (``metric_range=``/``--metric-range LO,HI``,
``higher_is_better=False``/``--lower-is-better``). A frame without these columns has an
undeclared metric: unbounded, higher is better; a frame without ``metric`` gets
``metric = "score"``. :func:`metric_info` reads the records back from a table and
:func:`with_metric` sets them on a hand-built one.

Scores are any finite real on the metric's own scale; nothing is rescaled unless the user or
the format asks. Non-finite values (NaN, +-inf) are never averaged: loaders set them aside and
count them (``nonfinite_score``), and ``validate_*`` refuses them in a hand-built table. A
score outside its metric's declared bounds is invalid.

The unit table is the observation table averaged over items: :func:`to_units`, with the rule
for runs over different item sets (:func:`align_item_sets`, :func:`item_set_rule`), is defined
here, so that :func:`validate_units` can take either table without importing
:mod:`evalstats.aggregate` (which re-exports them and adds reading files straight to units).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import polars as pl

from evalstats._frames import describe_group
from evalstats.errors import EvalstatsWarning, ParameterError, SchemaError

if TYPE_CHECKING:
    from evalstats._frames import TableLike

__all__ = [
    "DEFAULT_METRIC",
    "KEY_COLUMNS",
    "METRIC_INFO_COLUMNS",
    "OBSERVATION_COLUMNS",
    "UNIT_COLUMNS",
    "MetricInfo",
    "as_lazy",
    "factor_columns",
    "metric_info",
    "single_metric",
    "directions",
    "higher_is_better",
    "unit_interval_metrics",
    "validate_by",
    "validate_observations",
    "validate_units",
    "variant_key",
    "with_metric",
]

#: Columns that identify a unit (one model on one dataset and metric, one variant, one run).
KEY_COLUMNS: tuple[str, ...] = ("model", "dataset", "metric", "variant", "run")

#: Name of the metric of a table that names none.
DEFAULT_METRIC = "score"

#: The per-metric columns that carry a metric's bounds and direction with the data.
METRIC_INFO_COLUMNS: tuple[str, ...] = ("metric_low", "metric_high", "higher_is_better")

#: Canonical observation columns and their dtypes, in display order.
OBSERVATION_COLUMNS: dict[str, pl.DataType] = {
    "model": pl.String(),
    "dataset": pl.String(),
    "metric": pl.String(),
    "item": pl.String(),
    "cluster": pl.String(),
    "variant": pl.String(),
    "run": pl.Int64(),
    "score": pl.Float64(),
    "answer": pl.String(),
    "response": pl.String(),
    "gold": pl.String(),
    "input_len": pl.Int64(),
    "output_len": pl.Int64(),
    "latency_s": pl.Float64(),
    "error": pl.String(),
    "cumulative_logprob": pl.Float64(),
    "gold_score": pl.Float64(),
    "metric_low": pl.Float64(),
    "metric_high": pl.Float64(),
    "higher_is_better": pl.Boolean(),
}

#: Columns of the unit table besides the factor columns.
UNIT_COLUMNS: dict[str, pl.DataType] = {
    "model": pl.String(),
    "dataset": pl.String(),
    "metric": pl.String(),
    "variant": pl.String(),
    "run": pl.Int64(),
    "score": pl.Float64(),
    "n_items": pl.Int64(),
    "n_errors": pl.Int64(),
    "metric_low": pl.Float64(),
    "metric_high": pl.Float64(),
    "higher_is_better": pl.Boolean(),
}

_REQUIRED_OBS = ("model", "dataset", "metric", "variant", "run", "score")
_NON_FACTOR = frozenset(OBSERVATION_COLUMNS) | frozenset(UNIT_COLUMNS)


def as_lazy(frame: TableLike) -> pl.LazyFrame:
    """Return ``frame`` as a LazyFrame: a polars frame as it is, pandas and pyarrow converted.

    Raises
    ------
    SchemaError
        ``frame`` is not a table (a path, a Series, a list); see :mod:`evalstats._frames`.
    """
    if isinstance(frame, pl.LazyFrame):
        return frame
    if isinstance(frame, pl.DataFrame):
        return frame.lazy()
    from evalstats._frames import to_polars

    return to_polars(frame).lazy()


def factor_columns(columns: Iterable[str]) -> list[str]:
    """Names among ``columns`` that are factor columns (not canonical and not private).

    Examples
    --------
    >>> factor_columns(["model", "dataset", "variant", "run", "score", "template", "shots"])
    ['template', 'shots']
    """
    return [c for c in columns if c not in _NON_FACTOR and not c.startswith("__")]


def variant_key(factors: Sequence[str]) -> pl.Expr:
    """Expression for a stable, readable variant key built from factor columns.

    The key is ``"name=value|name=value"`` in the order given; a null value is written ``null``.
    With no factors every row belongs to the single variant ``"default"``.

    Examples
    --------
    >>> df = pl.DataFrame({"template": ["a", "b"], "shots": [0, 5]})
    >>> df.select(variant_key(["template", "shots"])).to_series().to_list()
    ['template=a|shots=0', 'template=b|shots=5']
    """
    if not factors:
        return pl.lit("default", dtype=pl.String).alias("variant")
    parts = [
        pl.concat_str([pl.lit(f"{f}="), pl.col(f).cast(pl.String).fill_null("null")])
        for f in factors
    ]
    return pl.concat_str(parts, separator="|").alias("variant")


def _columns_hint(names: Iterable[str]) -> str:
    return ", ".join(names)


def validate_by(
    names: Sequence[str], by: Sequence[str] | str, *, table: str = "unit table"
) -> tuple[str, ...]:
    """Check that every column in ``by`` exists; return ``by`` as a tuple.

    ``metric`` is accepted when absent: :func:`validate_observations` and
    :func:`validate_units` add it (as ``"score"``), so group after validating.

    Raises
    ------
    SchemaError
        If ``by`` names a column that ``names`` lacks.
    """
    if isinstance(by, str):
        by = (by,)
    by = tuple(by)
    # ``metric`` is always there after validate_*: a table without it has the metric "score"
    missing = [b for b in by if b not in names and b != "metric"]
    if missing:
        raise SchemaError(
            f"`by` names {missing[0]!r}, which is not a column of the {table} "
            f"(columns: {_columns_hint(names)})."
        )
    return by


def _check_dtypes(schema: pl.Schema, expected: dict[str, pl.DataType], table: str) -> None:
    for name, dtype in expected.items():
        if name not in schema:
            continue
        got = schema[name]
        ok = got == dtype
        if not ok and dtype == pl.Float64():
            ok = got.is_numeric()
        if not ok and dtype == pl.Int64():
            ok = got.is_integer()
        if not ok and got == pl.Null():
            ok = True  # an all-null optional column
        if not ok:
            raise SchemaError(
                f"column {name!r} of the {table} must be {dtype}, got {got}. "
                "Loaders produce the right types; a hand-built frame needs a cast."
            )


def _fmt(x: float | None) -> str:
    return "-inf" if x is None else f"{x:g}"


@dataclass(frozen=True, slots=True)
class MetricInfo:
    """A metric's name, bounds and direction: what analyses need to know about its scale.

    Parameters
    ----------
    name : str
        The metric's name, as in the ``metric`` column.
    low, high : float or None, default None
        Known bounds of a score (``0`` and ``1`` for an accuracy, ``0`` and ``100`` for a BLEU
        score); None when the metric is unbounded on that side or its bound is not declared.
    higher_is_better : bool, default True
        False for errors, losses, latency, cost.

    Examples
    --------
    >>> MetricInfo("acc", 0, 1).describe()
    'acc: range [0, 1], higher is better'
    >>> MetricInfo("mae", low=0, higher_is_better=False).describe()
    'mae: range [0, inf), lower is better'
    >>> MetricInfo("acc", 0, 1).unit_interval, MetricInfo("bleu", 0, 100).unit_interval
    (True, False)
    """

    name: str
    low: float | None = None
    high: float | None = None
    higher_is_better: bool = True

    def __post_init__(self) -> None:
        for side in ("low", "high"):
            v = getattr(self, side)
            if v is not None:
                if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                    raise SchemaError(
                        f"metric {self.name!r}: bound `{side}` must be a finite number or None, "
                        f"got {v!r}."
                    )
                object.__setattr__(self, side, float(v))
        if self.low is not None and self.high is not None and not self.low < self.high:
            raise SchemaError(
                f"metric {self.name!r}: the lower bound must be below the upper one, got "
                f"[{self.low:g}, {self.high:g}]."
            )
        if not isinstance(self.higher_is_better, bool):
            raise SchemaError(
                f"metric {self.name!r}: `higher_is_better` must be True or False, got "
                f"{self.higher_is_better!r}."
            )

    @property
    def bounded(self) -> bool:
        """Whether both bounds are known."""
        return self.low is not None and self.high is not None

    @property
    def unit_interval(self) -> bool:
        """Whether the metric is known to lie in [0, 1] (an accuracy, a rate, a probability)."""
        return self.bounded and self.low >= 0.0 and self.high <= 1.0  # type: ignore[operator]

    @property
    def range(self) -> float | None:
        """``high - low`` when both bounds are known, else None."""
        return self.high - self.low if self.bounded else None  # type: ignore[operator]

    @property
    def direction(self) -> str:
        """``'higher is better'`` or ``'lower is better'``."""
        return "higher is better" if self.higher_is_better else "lower is better"

    def describe(self) -> str:
        """One line: name, bounds and direction."""
        if self.low is None and self.high is None:
            scale = "unbounded"
        else:
            lo = "(-inf" if self.low is None else f"[{self.low:g}"
            hi = "inf)" if self.high is None else f"{self.high:g}]"
            scale = f"range {lo}, {hi}"
        return f"{self.name}: {scale}, {self.direction}"

    def to_dict(self) -> dict[str, object]:
        """JSON-ready dictionary."""
        return {
            "name": self.name,
            "low": self.low,
            "high": self.high,
            "higher_is_better": self.higher_is_better,
        }

    def columns(self) -> list[pl.Expr]:
        """The constant ``metric`` and metric-info columns of this metric, as expressions."""
        return [
            pl.lit(self.name, dtype=pl.String).alias("metric"),
            pl.lit(self.low, dtype=pl.Float64).alias("metric_low"),
            pl.lit(self.high, dtype=pl.Float64).alias("metric_high"),
            pl.lit(self.higher_is_better, dtype=pl.Boolean).alias("higher_is_better"),
        ]


def metric_info(frame: pl.DataFrame | pl.LazyFrame) -> dict[str, MetricInfo]:
    """The :class:`MetricInfo` of every metric in an observation or unit table, by name.

    A table without a ``metric`` column has the single metric ``"score"``; without the
    metric-info columns, its metrics are undeclared (unbounded, higher is better).

    Raises
    ------
    SchemaError
        If one metric carries two different bounds or directions.

    Examples
    --------
    >>> units = pl.DataFrame({"model": ["a"], "dataset": ["d"], "score": [3.0]})
    >>> metric_info(units)
    {'score': MetricInfo(name='score', low=None, high=None, higher_is_better=True)}
    >>> metric_info(with_metric(units, MetricInfo("passed", 0, 3)))["passed"].describe()
    'passed: range [0, 3], higher is better'
    """
    lf = as_lazy(frame)
    names = lf.collect_schema().names()
    if "metric" not in names:
        lf = lf.with_columns(pl.lit(DEFAULT_METRIC, dtype=pl.String).alias("metric"))
    info = [c for c in METRIC_INFO_COLUMNS if c in names]
    rows = _metric_rows(lf, info)
    out: dict[str, MetricInfo] = {}
    for r in rows.iter_rows(named=True):
        name = r["metric"]
        hib = r.get("higher_is_better")
        mi = MetricInfo(
            str(name),
            r.get("metric_low"),
            r.get("metric_high"),
            True if hib is None else bool(hib),
        )
        if name in out and out[name] != mi:
            raise SchemaError(
                f"metric {name!r} is declared twice, as {out[name].describe()!r} and "
                f"{mi.describe()!r}; the columns {', '.join(METRIC_INFO_COLUMNS)} must be "
                "constant within a metric."
            )
        out[str(name)] = mi
    return out


def _metric_rows(lf: pl.LazyFrame, info: list[str]) -> pl.DataFrame:
    """The distinct (metric, info columns) rows, sorted by metric.

    Most tables declare each info column once for all rows: its count of distinct values
    (one pass of cheap aggregations) proves it, and the rows are then the metric names beside
    those single values. Only when a column takes several values are the distinct combinations
    found (a hash of every row's combination: a second of CPU at 20M rows, and this runs in
    every validation).
    """
    if info:
        counts = lf.select(pl.col(c).n_unique() for c in info).collect().row(0)
        if max(counts) == 1:
            values = lf.select(pl.col(c).first() for c in info).collect()
            names = lf.select(pl.col("metric").unique()).collect()
            return names.join(values, how="cross").sort("metric", nulls_last=True)
    return lf.select("metric", *info).unique().sort("metric", nulls_last=True).collect()


def with_metric(
    frame: pl.DataFrame | pl.LazyFrame, info: MetricInfo | Mapping[str, MetricInfo]
) -> pl.DataFrame | pl.LazyFrame:
    """Set the ``metric`` column and the metric-info columns of a hand-built table.

    Parameters
    ----------
    frame : polars.DataFrame or polars.LazyFrame
        Observation or unit table.
    info : MetricInfo or mapping of str to MetricInfo
        One metric for every row (its name is written to ``metric``), or one per metric name
        already in the ``metric`` column (rows of metrics not in the mapping keep what they had).

    Returns
    -------
    polars.DataFrame or polars.LazyFrame
        Same type as ``frame``.

    Examples
    --------
    >>> units = pl.DataFrame({"model": ["a"], "dataset": ["d"], "score": [0.4]})
    >>> with_metric(units, MetricInfo("mae", low=0, higher_is_better=False)).row(0)
    ('a', 'd', 0.4, 'mae', 0.0, None, False)
    """
    lf = as_lazy(frame)
    if isinstance(info, MetricInfo):
        lf = lf.with_columns(info.columns())
    else:
        names = lf.collect_schema().names()
        if "metric" not in names:
            raise SchemaError(
                "a mapping of metrics needs a 'metric' column in the table; pass one MetricInfo "
                "to label every row."
            )
        for c, default in zip(METRIC_INFO_COLUMNS, (None, None, True)):
            if c not in names:
                dt = OBSERVATION_COLUMNS[c]
                lf = lf.with_columns(pl.lit(default, dtype=dt).alias(c))
        for name, mi in info.items():
            hit = pl.col("metric") == name
            lf = lf.with_columns(
                pl.when(hit)
                .then(pl.lit(v, dtype=OBSERVATION_COLUMNS[c]))
                .otherwise(pl.col(c))
                .alias(c)
                for c, v in zip(METRIC_INFO_COLUMNS, (mi.low, mi.high, mi.higher_is_better))
            )
    return lf.collect() if isinstance(frame, pl.DataFrame) else lf


def directions(
    frame: pl.DataFrame | pl.LazyFrame, by: Sequence[str]
) -> tuple[dict[str, bool], int | None]:
    """Each metric's ``higher_is_better``, and where ``metric`` sits in a group key of ``by``.

    Use :func:`higher_is_better` on the result for one group.

    Raises
    ------
    MetricScaleError
        If ``by`` has no ``metric`` and the table mixes metrics of opposite directions (their
        scores cannot be ranked together).
    """
    from evalstats.errors import MetricScaleError

    infos = metric_info(frame)
    hib = {n: i.higher_is_better for n, i in infos.items()}
    by = tuple(by)
    if "metric" in by:
        return hib, by.index("metric")
    if len(set(hib.values())) > 1:
        raise MetricScaleError(
            f"the table mixes metrics where higher is better and where lower is better "
            f"({', '.join(map(repr, hib))}) and `by` has no 'metric'; rank them apart: add "
            "'metric' to `by`."
        )
    return hib, None


def higher_is_better(table: tuple[dict[str, bool], int | None], key: Sequence[object]) -> bool:
    """The direction of the group ``key`` (see :func:`directions`)."""
    hib, position = table
    if position is not None:
        return hib.get(str(key[position]), True)
    return next(iter(hib.values()), True)


def unit_interval_metrics(frame: pl.DataFrame | pl.LazyFrame) -> dict[str, bool]:
    """Per metric: whether its scores are on [0, 1], as accuracy-only methods need.

    A metric is on [0, 1] when its declared bounds lie within [0, 1], or, when it declares no
    bounds, when every score of it lies in [0, 1] (a hand-built table of accuracies).

    Examples
    --------
    >>> t = pl.DataFrame({"metric": ["acc", "acc", "bleu"], "score": [0.0, 1.0, 41.2]})
    >>> unit_interval_metrics(t)
    {'acc': True, 'bleu': False}
    """
    lf = as_lazy(frame)
    names = lf.collect_schema().names()
    if "metric" not in names:
        lf = lf.with_columns(pl.lit(DEFAULT_METRIC, dtype=pl.String).alias("metric"))
    seen = (
        lf.group_by("metric")
        .agg(((pl.col("score") >= 0) & (pl.col("score") <= 1)).all().alias("inside"))
        .collect()
    )
    inside = dict(seen.iter_rows())
    out = {}
    for name, info in metric_info(lf).items():
        declared = info.low is not None or info.high is not None
        out[name] = info.unit_interval if declared else bool(inside.get(name, False))
    return out


def single_metric(frame: pl.DataFrame | pl.LazyFrame, *, analysis: str) -> MetricInfo:
    """The one metric of ``frame``; refuse a table that mixes metrics.

    For analyses that pool every row (ANOVA, attribution) and cannot run per metric.

    Raises
    ------
    MetricScaleError
        If the table holds more than one metric.
    """
    from evalstats.errors import MetricScaleError

    infos = metric_info(frame)
    if len(infos) > 1:
        raise MetricScaleError(
            f"{analysis} pools all rows, and the table holds {len(infos)} metrics "
            f"({', '.join(map(repr, infos))}), which must not be mixed; keep one, e.g. "
            f"table.filter(pl.col('metric') == {next(iter(infos))!r}) (CLI: --metric NAME)."
        )
    return next(iter(infos.values())) if infos else MetricInfo(DEFAULT_METRIC)


def _check_scores(lf: pl.LazyFrame, table: str) -> None:
    """Scores finite and within their metric's declared bounds; one declaration per metric."""
    names = lf.collect_schema().names()
    s = pl.col("score")
    bad = s.is_null() | s.is_nan() | s.is_infinite()
    if "metric_low" in names:
        bad = bad | (s < pl.col("metric_low")).fill_null(False)
    if "metric_high" in names:
        bad = bad | (s > pl.col("metric_high")).fill_null(False)
    hit = (
        lf.with_row_index("__row", offset=1)
        .filter(bad)
        .select("__row", "score", *[c for c in ("metric", *METRIC_INFO_COLUMNS[:2]) if c in names])
        .head(1)
        .collect()
    )
    if hit.height:
        r = hit.row(0, named=True)
        v = r["score"]
        if v is None or not math.isfinite(v):
            raise SchemaError(
                f"{table}, row {r['__row']}, column 'score': expected a finite number, got "
                f"{v!r}. Non-finite scores cannot be averaged; drop such rows (loaders set them "
                "aside and count them)."
            )
        lo, hi = r.get("metric_low"), r.get("metric_high")
        raise SchemaError(
            f"{table}, row {r['__row']}, column 'score': expected a number in the declared "
            f"range [{_fmt(lo)}, {'inf' if hi is None else f'{hi:g}'}] of metric "
            f"{r.get('metric', DEFAULT_METRIC)!r}, got {v!r}."
        )
    if any(c in names for c in METRIC_INFO_COLUMNS):
        metric_info(lf)  # raises on a metric declared twice


def validate_observations(
    frame: pl.DataFrame | pl.LazyFrame,
    *,
    require_item: bool = False,
    check_values: bool = True,
    errored: Literal["drop", "keep"] = "drop",
) -> pl.LazyFrame:
    """Check an observation table and return it as a LazyFrame with canonical dtypes.

    Parameters
    ----------
    frame : polars.DataFrame or polars.LazyFrame
        Observation table (see the module docstring).
    require_item : bool, default False
        Whether the analysis needs item-level rows (an ``item`` column without nulls).
    check_values : bool, default True
        Also scan the data for missing or non-finite scores and scores outside their metric's
        declared bounds. Costs one pass.
    errored : {'drop', 'keep'}, default 'drop'
        Rows of errored calls kept without a score (a non-null ``error`` and a null
        ``score``; see :mod:`evalstats.io._errors`): left out (every analysis of scores), or
        kept (the provider audit, which counts them).

    Returns
    -------
    polars.LazyFrame
        The same rows (less the unscored errored calls, unless ``errored='keep'``); ``run``
        added as 0, ``variant`` as ``"default"`` and ``metric`` as ``"score"`` when absent.

    Raises
    ------
    SchemaError
        A required column is missing or mistyped, a score is missing or not finite or outside
        its metric's declared bounds, or a metric is declared with two bounds or directions.

    Examples
    --------
    >>> obs = pl.DataFrame({"model": ["m"], "dataset": ["d"], "item": ["1"], "score": [1.0]})
    >>> validate_observations(obs).collect().columns
    ['model', 'dataset', 'item', 'score', 'run', 'variant', 'metric']
    """
    lf = as_lazy(frame)
    schema = lf.collect_schema()
    if "run" not in schema:
        lf = lf.with_columns(pl.lit(0, dtype=pl.Int64).alias("run"))
    if "variant" not in schema:
        lf = lf.with_columns(variant_key(factor_columns(schema.names())))
    if "metric" not in schema:
        lf = lf.with_columns(pl.lit(DEFAULT_METRIC, dtype=pl.String).alias("metric"))
    schema = lf.collect_schema()
    required = _REQUIRED_OBS + (("item",) if require_item else ())
    missing = [c for c in required if c not in schema]
    if missing:
        hint = ""
        if missing == ["item"]:
            hint = " This analysis needs item-level rows; the input looks unit-level."
        raise SchemaError(
            f"the observation table has no column {missing[0]!r} "
            f"(columns: {_columns_hint(schema.names())}).{hint}"
        )
    _check_dtypes(schema, OBSERVATION_COLUMNS, "observation table")
    casts = [
        pl.col(c).cast(t) for c, t in OBSERVATION_COLUMNS.items() if c in schema and schema[c] != t
    ]
    if casts:
        lf = lf.with_columns(casts)
    if errored not in ("drop", "keep"):
        raise ParameterError(f"`errored` must be 'drop' or 'keep', got {errored!r}.")
    unscored = pl.col("score").is_null() & pl.col("error").is_not_null()
    if "error" in schema and errored == "drop":
        lf = lf.filter(~unscored)
    if check_values:
        _check_scores(lf.filter(~unscored) if "error" in schema else lf, "observation table")
    return lf


#: The choices of :func:`align_item_sets` (``on_mismatch``; CLI ``--on-mismatch``).
ITEM_SET_RULES: tuple[str, ...] = ("error", "intersect", "keep")

_RUN_GROUP = ("model", "dataset", "metric", "variant")

#: The rule :func:`to_units` applies when the caller gives none (see :func:`item_set_rule`).
_ITEM_SET_RULE: ContextVar[str] = ContextVar("evalstats_item_set_rule", default="error")


@contextmanager
def item_set_rule(on_mismatch: Literal["error", "intersect", "keep"]) -> Iterator[None]:
    """Set the item-set rule of every analysis run inside the ``with`` block.

    Every analysis that aggregates an observation table to unit scores does so through
    :func:`to_units`, which applies :func:`align_item_sets` with this rule (default
    ``'error'``). The command line and :func:`evalstats.report.audit_report` set it from
    ``--on-mismatch`` / ``on_mismatch``.

    Examples
    --------
    >>> obs = pl.DataFrame({"model": "m", "dataset": "d", "item": ["1", "2", "1"],
    ...                     "run": [0, 0, 1], "score": [1.0, 0.0, 1.0]})
    >>> with item_set_rule("keep"):
    ...     to_units(obs).select("run", "score", "n_items").collect().rows()
    [(0, 0.5, 2), (1, 1.0, 1)]
    """
    if on_mismatch not in ITEM_SET_RULES:
        raise ParameterError(
            f"`on_mismatch` must be one of {', '.join(map(repr, ITEM_SET_RULES))}, "
            f"got {on_mismatch!r}."
        )
    token = _ITEM_SET_RULE.set(on_mismatch)
    try:
        yield
    finally:
        _ITEM_SET_RULE.reset(token)


def align_item_sets(
    observations: pl.DataFrame | pl.LazyFrame,
    *,
    on_mismatch: Literal["error", "intersect", "keep"] = "error",
    by: Sequence[str] | None = None,
) -> pl.LazyFrame:
    """The one rule for repeated runs of a configuration that cover different items.

    Runs of one configuration (a group in ``by``) that score different item sets are not
    comparable: a run's mean then mixes a change of items with a change of run, and one model
    gets different means in different analyses. Every analysis command and the report apply
    this function at their boundary, so the choice is made once and applies everywhere.

    Parameters
    ----------
    observations : polars.DataFrame or polars.LazyFrame
        Observation table with ``item`` and ``run``; without ``item`` (unit-level input) it is
        returned unchanged.
    on_mismatch : {'error', 'intersect', 'keep'}, default 'error'
        ``'error'`` raises naming the first group and its runs' item counts (the message gives
        the CLI flag); ``'intersect'`` keeps, per group, the items present in every run of the
        group and warns with what was left out; ``'keep'`` keeps every row (each run's mean
        over its own items).
    by : sequence of str, optional
        The configuration columns (default: those of ``model``, ``dataset``, ``metric`` and
        ``variant`` present).

    Returns
    -------
    polars.LazyFrame
        The observations (filtered with ``'intersect'``).

    Raises
    ------
    SchemaError
        ``on_mismatch='error'`` and the runs of a group cover different items.
    ParameterError
        ``on_mismatch`` is unknown.

    Warns
    -----
    EvalstatsWarning
        ``'intersect'`` left items out. Intersecting keeps the items every run reached, which
        are often the easier or more stable ones (re-runs of the items that had not varied yet),
        so it biases TAR and agreement rates upward; the warning says so.

    Examples
    --------
    >>> obs = pl.DataFrame({"model": "m", "dataset": "d", "item": ["1", "2", "1"],
    ...                     "run": [0, 0, 1], "score": [1.0, 0.0, 1.0]})
    >>> align_item_sets(obs, on_mismatch="keep").collect().height
    3
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     align_item_sets(obs, on_mismatch="intersect").collect()["item"].to_list()
    ['1', '1']
    """
    if on_mismatch not in ITEM_SET_RULES:
        raise ParameterError(
            f"`on_mismatch` must be one of {', '.join(map(repr, ITEM_SET_RULES))}, "
            f"got {on_mismatch!r}."
        )
    lf = as_lazy(observations)
    schema = lf.collect_schema()
    if on_mismatch == "keep" or "item" not in schema or "run" not in schema:
        return lf
    keys = [c for c in (by if by is not None else _RUN_GROUP) if c in schema]
    per_run_q = lf.group_by([*keys, "run"]).agg(pl.col("item").n_unique().alias("__n"))
    total_q = lf.group_by(keys).agg(
        pl.col("item").n_unique().alias("__total"), pl.col("run").n_unique().alias("__runs")
    )
    per_run, total = pl.collect_all([per_run_q, total_q])
    short = (
        per_run.join(total, on=keys, nulls_equal=True)
        .filter(pl.col("__n") < pl.col("__total"))
        .sort([*keys, "run"], nulls_last=True)
    )
    if not short.height:
        return lf

    groups = short.select(keys).unique(maintain_order=True)
    first = groups.row(0, named=True)
    where = pl.all_horizontal([pl.col(k).eq_missing(v) for k, v in first.items()])
    lacking = "; ".join(
        f"run {r['run']} has {r['__n']} of {r['__total']} items"
        for r in short.filter(where).head(4).iter_rows(named=True)
    )
    if on_mismatch == "error":
        more = f" ({groups.height} groups in all)" if groups.height > 1 else ""
        raise SchemaError(
            f"the runs of {describe_group(first)} cover different items ({lacking}){more}. Pass "
            "--on-mismatch intersect (Python: on_mismatch='intersect') to analyse the items "
            "every run scored (this biases TAR upward), or --on-mismatch keep to use each run "
            "over its own items."
        )
    complete = (
        lf.group_by([*keys, "item"])
        .agg(pl.col("run").n_unique().alias("__r"))
        .join(total.lazy().select(*keys, "__runs"), on=keys, nulls_equal=True)
        .filter(pl.col("__r") == pl.col("__runs"))
        .select(*keys, "item")
    )
    out = lf.join(complete, on=[*keys, "item"], how="semi", nulls_equal=True)
    warnings.warn(
        f"{groups.height} configuration(s) have runs over different items (e.g. "
        f"{describe_group(first)}: {lacking}); analysed only the items every run scored. "
        "Intersecting keeps the items every run reached and biases TAR upward.",
        EvalstatsWarning,
        stacklevel=2,
    )
    return out


def to_units(
    observations: pl.DataFrame | pl.LazyFrame,
    *,
    check_values: bool = True,
    on_mismatch: Literal["error", "intersect", "keep"] | None = None,
) -> pl.LazyFrame:
    """Aggregate item rows to unit rows.

    Parameters
    ----------
    observations : polars.DataFrame or polars.LazyFrame
        Observation table (see :mod:`evalstats.schema`). Unit-level input (no ``item`` column)
        passes through with its ``n_items`` (null when unknown).
    check_values : bool, default True
        Validate scores first (one extra pass over the data).
    on_mismatch : {'error', 'intersect', 'keep'}, optional
        Repeated runs of a configuration over different items: see :func:`align_item_sets`.
        Default: the rule set by :func:`item_set_rule` (``'error'`` outside one).

    Returns
    -------
    polars.LazyFrame
        One row per (model, dataset, metric, variant, run) and factor values, with ``score``
        (mean over items, on the metric's scale), ``n_items`` (items scored), ``n_errors``
        (scored rows with a non-null ``error``, only when the observations have an ``error``
        column; errored calls without a score are in no unit), the
        metric-info columns (when the observations have them) and the factor columns; sorted by
        the keys.

    Notes
    -----
    Factor columns are grouping keys: they describe the configuration, so they are constant
    within a variant for every loader. A hand-built table whose factor varies within a variant
    yields one unit per factor value, which :func:`evalstats.schema.validate_units` reports as a
    duplicated unit.

    Examples
    --------
    >>> obs = pl.DataFrame({"model": ["a"] * 4, "dataset": ["d"] * 4, "item": ["1", "2"] * 2,
    ...                     "variant": ["p", "p", "q", "q"], "score": [1.0, 0.0, 1.0, 1.0]})
    >>> to_units(obs).select("metric", "variant", "score", "n_items").collect().rows()
    [('score', 'p', 0.5, 2), ('score', 'q', 1.0, 2)]
    """
    lf = validate_observations(as_lazy(observations), check_values=check_values)
    schema = lf.collect_schema()
    if "item" in schema:
        rule = on_mismatch if on_mismatch is not None else _ITEM_SET_RULE.get()
        lf = align_item_sets(lf, on_mismatch=rule)  # type: ignore[arg-type]
    factors = factor_columns(schema.names())
    nkey = len(KEY_COLUMNS)
    info = [c for c in METRIC_INFO_COLUMNS if c in schema]
    keys = list(KEY_COLUMNS) + info + factors
    if "item" not in schema:
        n_items = (
            pl.col("n_items").cast(pl.Int64)
            if "n_items" in schema
            else pl.lit(None, dtype=pl.Int64)
        )
        out = lf.with_columns(n_items.alias("n_items"))
        cols = keys[:nkey] + ["score", "n_items"]
        if "error" in schema:
            out = out.with_columns(pl.col("error").is_not_null().cast(pl.Int64).alias("n_errors"))
            cols.append("n_errors")
        return out.select(cols + info + factors).sort(keys[:nkey])
    aggs = [pl.col("score").mean().alias("score"), pl.len().cast(pl.Int64).alias("n_items")]
    if "error" in schema:
        aggs.append(pl.col("error").is_not_null().sum().cast(pl.Int64).alias("n_errors"))
    out = lf.group_by(keys).agg(aggs)
    cols = keys[:nkey] + [a.meta.output_name() for a in aggs] + info + factors
    return out.select(cols).sort(keys[:nkey])


def validate_units(
    frame: pl.DataFrame | pl.LazyFrame, *, check_values: bool = True
) -> pl.LazyFrame:
    """Check a unit table (or accept an observation table and aggregate it).

    An observation table (it has an ``item`` column) is aggregated with
    :func:`evalstats.aggregate.to_units`, so analyses on unit scores accept either table.

    Parameters
    ----------
    frame : polars.DataFrame or polars.LazyFrame
        Unit table, one row per (model, dataset, metric, variant, run).
    check_values : bool, default True
        Also scan the data for missing, non-finite or out-of-bounds scores and duplicated units.

    Returns
    -------
    polars.LazyFrame
        The same rows; ``run``, ``variant``, ``metric`` and ``n_items`` added when absent.

    Raises
    ------
    SchemaError
        A required column is missing or mistyped, a score is missing or not finite or outside
        its metric's declared bounds, a metric is declared twice, or a unit appears twice.
    """
    lf = as_lazy(frame)
    schema = lf.collect_schema()
    if "item" in schema:
        return to_units(lf)
    if "run" not in schema:
        lf = lf.with_columns(pl.lit(0, dtype=pl.Int64).alias("run"))
    if "variant" not in schema:
        lf = lf.with_columns(variant_key(factor_columns(schema.names())))
    if "metric" not in schema:
        lf = lf.with_columns(pl.lit(DEFAULT_METRIC, dtype=pl.String).alias("metric"))
    if "n_items" not in schema:
        lf = lf.with_columns(pl.lit(None, dtype=pl.Int64).alias("n_items"))
    schema = lf.collect_schema()
    missing = [c for c in _REQUIRED_OBS if c not in schema]
    if missing:
        raise SchemaError(
            f"the unit table has no column {missing[0]!r} (columns: {_columns_hint(schema.names())})."
        )
    _check_dtypes(schema, UNIT_COLUMNS, "unit table")
    casts = [pl.col(c).cast(t) for c, t in UNIT_COLUMNS.items() if c in schema and schema[c] != t]
    if casts:
        lf = lf.with_columns(casts)
    if check_values:
        _check_scores(lf, "unit table")
        dup = lf.group_by(KEY_COLUMNS).len().filter(pl.col("len") > 1).head(1).collect()
        if dup.height:
            r = dup.row(0, named=True)
            raise SchemaError(
                "the unit table has more than one row for model={model!r}, dataset={dataset!r}, "
                "metric={metric!r}, variant={variant!r}, run={run}; units must be unique. Give each repeat its own "
                "`run`, or pass item-level rows.".format(**r)
            )
    return lf
