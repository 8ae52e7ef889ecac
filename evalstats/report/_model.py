"""The report's data model: what the data holds, each analysis's result, the report's contents.

The bottom of the report package: every other report module imports from here and this module
imports none of them. The pipeline above it runs one way: the analysis registry
(:mod:`~evalstats.report._analyses`) produces :class:`AnalysisResult` objects with their
readings (:mod:`~evalstats.report._readings`); the figures (:mod:`~evalstats.report._figures`)
and tables (:mod:`~evalstats.report._tables`) are drawn from them; :mod:`~evalstats.report._render`
and :mod:`~evalstats.report._write` turn them into files; :mod:`~evalstats.report._core` ties it
together behind :func:`evalstats.audit_report`.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import polars as pl

from evalstats.errors import SchemaError

if TYPE_CHECKING:
    from evalstats.io import IngestReport
    from evalstats.schema import MetricInfo

__all__ = [
    "SCHEMA_VERSION",
    "SECTIONS",
    "AnalysisResult",
    "DataSummary",
    "RenderedFigure",
    "RenderedTable",
    "ReportContents",
    "Skipped",
    "bound",
    "keyword_names",
    "resolve",
    "summarise",
    "table_key",
    "table_title",
]

#: Version of the ``results.json`` layout (docs/report.schema.json).
SCHEMA_VERSION = 1

#: Report sections in order: key and title.
SECTIONS: dict[str, str] = {
    "prompts": "Prompt sensitivity",
    "stability": "Run-to-run stability",
    "factors": "Configuration factors",
    "models": "Model comparison",
    "noise": "Where the noise comes from",
    "default": "Default-configuration audit",
    "providers": "Providers and errors",
}


@dataclass(frozen=True, slots=True)
class DataSummary:
    """What the observation table holds: the counts that decide which analyses apply.

    Attributes
    ----------
    n_rows : int
        Rows of the observation table.
    models, datasets : tuple of str
        Distinct values, sorted.
    n_items : int or None
        Distinct (dataset, item) pairs; None without an ``item`` column (unit-level input).
    n_variants : int
        Most variants of any (model, dataset).
    n_runs : int
        Most runs of any (model, dataset, variant).
    factors : tuple of str
        Factor columns analysed (at least two levels each).
    constant_factors : tuple of str
        Factor columns with a single level (nothing to attribute).
    incomplete_factors : tuple of str
        Detected factor columns left out because some rows have no value (e.g. paraphrase
        metadata that only some variants carry); naming them with ``factors`` analyses them
        and reports the first null row.
    provider : str or None
        The provider column, when present with at least two providers.
    n_errors : int or None
        Rows with a non-null ``error``; None without an ``error`` column.
    has_latency, has_answers, has_responses : bool
        Whether ``latency_s``, ``answer`` and ``response`` are present.
    metrics : tuple of MetricInfo
        Every metric with its bounds and direction (see :mod:`evalstats.schema`).
    percent : bool
        Whether every metric is on [0, 1], so that readings quote percentages and points.
    inferred : tuple of str
        Prompt factors the design took from their values alone (no declaration, no loader
        knowledge, no known name): every reading that rests on them names them and the
        one-flag correction.
    variant_items : tuple of (str, str, int)
        ``(model, dataset, n)``: the fewest items any prompt variant of the group was scored
        on (a spread over prompts is drawn only where each prompt has enough items).
    runs_differ : int
        Groups whose runs cover different items (the stability reading says so first).
    """

    n_rows: int
    models: tuple[str, ...]
    datasets: tuple[str, ...]
    n_items: int | None
    n_variants: int
    n_runs: int
    factors: tuple[str, ...]
    constant_factors: tuple[str, ...]
    incomplete_factors: tuple[str, ...]
    provider: str | None
    n_errors: int | None
    has_latency: bool
    has_answers: bool
    has_responses: bool
    metrics: tuple[MetricInfo, ...] = ()
    percent: bool = True
    inferred: tuple[str, ...] = ()
    variant_items: tuple[tuple[str, str, int], ...] = ()
    runs_differ: int = 0

    def higher_is_better(self, metric: str | None) -> bool:
        """The direction of ``metric`` (higher is better when unknown)."""
        for m in self.metrics:
            if m.name == metric:
                return m.higher_is_better
        if metric is None and len(self.metrics) == 1:
            return self.metrics[0].higher_is_better
        return True

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary."""
        return {
            "n_rows": self.n_rows,
            "models": list(self.models),
            "datasets": list(self.datasets),
            "n_items": self.n_items,
            "n_variants": self.n_variants,
            "n_runs": self.n_runs,
            "factors": list(self.factors),
            "constant_factors": list(self.constant_factors),
            "incomplete_factors": list(self.incomplete_factors),
            "provider": self.provider,
            "n_errors": self.n_errors,
            "has_latency": self.has_latency,
            "has_answers": self.has_answers,
            "has_responses": self.has_responses,
            "metrics": [m.to_dict() for m in self.metrics],
            "percent": self.percent,
            "inferred": list(self.inferred),
            "variant_items": [list(v) for v in self.variant_items],
            "runs_differ": self.runs_differ,
        }

    def items_of(self, model: Any, dataset: Any) -> int | None:
        """The fewest items of any prompt variant of (model, dataset), when known."""
        for m, d, n in self.variant_items:
            if m == model and d == dataset:
                return n
        return None


def summarise(obs: pl.DataFrame, factors: Sequence[str] | None) -> DataSummary:
    from evalstats.schema import factor_columns, metric_info, unit_interval_metrics

    cols = obs.columns
    incomplete: list[str] = []
    if factors is None:
        candidates = factor_columns(cols)
        incomplete = [f for f in candidates if obs[f].null_count()]
        candidates = [f for f in candidates if f not in incomplete]
    else:
        missing = [f for f in factors if f not in cols]
        if missing:
            raise SchemaError(
                f"`factors` names {missing[0]!r}, which is not a column of the observation "
                f"table (factor columns: {', '.join(factor_columns(cols)) or 'none'})."
            )
        candidates = list(factors)
    levels = {f: obs[f].n_unique() for f in candidates}
    provider = "provider" if "provider" in cols and obs["provider"].n_unique() > 1 else None
    per_group = obs.group_by("model", "dataset").agg(pl.col("variant").n_unique().alias("v"))
    per_config = obs.group_by("model", "dataset", "variant").agg(
        pl.col("run").n_unique().alias("r"),
        *([pl.col("item").n_unique().alias("i")] if "item" in cols else []),
    )
    variant_items = (
        tuple(
            (m, d, int(i))
            for m, d, i in per_config.group_by("model", "dataset")
            .agg(pl.col("i").min())
            .sort("model", "dataset")
            .iter_rows()
        )
        if "item" in cols
        else ()
    )
    return DataSummary(
        n_rows=obs.height,
        models=tuple(sorted(obs["model"].unique().to_list())),
        datasets=tuple(sorted(obs["dataset"].unique().to_list())),
        n_items=(
            obs.select(pl.struct("dataset", "item").n_unique()).item() if "item" in cols else None
        ),
        n_variants=int(per_group["v"].max() or 0),
        n_runs=int(per_config["r"].max() or 0),
        factors=tuple(f for f in candidates if levels[f] > 1),
        constant_factors=tuple(f for f in candidates if levels[f] <= 1),
        incomplete_factors=tuple(incomplete),
        provider=provider,
        n_errors=int(obs["error"].is_not_null().sum()) if "error" in cols else None,
        has_latency="latency_s" in cols,
        has_answers="answer" in cols,
        has_responses="response" in cols,
        metrics=tuple(metric_info(obs).values()),
        percent=all(unit_interval_metrics(obs).values()),
        variant_items=variant_items,
    )


@dataclass(frozen=True, slots=True)
class AnalysisResult:
    """One analysis of the report: the function called, its parameters, its result tables.

    Attributes
    ----------
    key : str
        Short name (``nstar``, ``anova``, ...); the key of :data:`ANALYSES`.
    title, section : str
        Display title and the key of the section in :data:`SECTIONS`.
    function : str
        The public function that produced the main table, e.g. ``evalstats.factor_anova``.
    command : str or None
        The ``evalstats`` subcommand that computes the same table, if there is one.
    params : dict
        Every parameter of the call, defaults included (data argument excluded).
    tables : dict of str to polars.DataFrame
        Result tables, the main one first; full precision.
    values : dict
        Scalar results (``cv_r_sq``, ``n_reversals``, ...).
    reading : str
        A short plain-language reading of the result.
    warnings : tuple of str
        Warnings the analysis raised (degenerate groups, low power, ...).
    objects : dict
        The raw result objects (for the figures); not serialised.
    """

    key: str
    title: str
    section: str
    function: str
    command: str | None
    params: dict[str, Any]
    tables: dict[str, pl.DataFrame]
    values: dict[str, Any]
    reading: str
    warnings: tuple[str, ...] = ()
    objects: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True, slots=True)
class Skipped:
    """An analysis the data did not support, and why."""

    key: str
    title: str
    section: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        """JSON-ready dictionary."""
        return {
            "key": self.key,
            "title": self.title,
            "section": self.section,
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class ReportContents:
    """What :func:`evalstats.audit_report` computed; :class:`~evalstats.AuditReport` adds ``write``.

    The layers below the report object (figures, rendering, writing) see only these fields, so
    that nothing under :mod:`evalstats.report._core` imports it.

    Attributes
    ----------
    analyses : tuple of AnalysisResult
        In report order.
    skipped : tuple of Skipped
        Analyses not run, with the reason.
    data : DataSummary
        What the observation table holds.
    ingest : IngestReport or None
        The loader's report (None when the table was passed in directly).
    source : dict
        ``{"path", "format", "options"}``: the input file, its loader and the loader options
        (values None when the table was passed in).
    parameters : dict
        ``seed``, ``factors``, ``default``, ``options`` and ``skip`` as given.
    environment : dict
        Python version, platform and package versions.
    units : polars.DataFrame
        The unit table (:func:`evalstats.to_units` of the observations), for the figures that
        draw every unit score; not serialised.
    design : Design or None
        The design the report used (:mod:`evalstats.design`): the report opens with it.
    """

    analyses: tuple[AnalysisResult, ...]
    skipped: tuple[Skipped, ...]
    data: DataSummary
    ingest: IngestReport | None
    source: dict[str, Any]
    parameters: dict[str, Any]
    environment: dict[str, Any]
    units: pl.DataFrame = field(default_factory=pl.DataFrame, repr=False, compare=False)
    design: Any = field(default=None, repr=False, compare=False)

    def __getitem__(self, key: str) -> AnalysisResult:
        for a in self.analyses:
            if a.key == key:
                return a
        ran = ", ".join(a.key for a in self.analyses)
        raise KeyError(f"no analysis {key!r} in the report (ran: {ran}).")

    def __contains__(self, key: object) -> bool:
        return any(a.key == key for a in self.analyses)


@dataclass(frozen=True, slots=True)
class RenderedFigure:
    """A figure as written: its spec fields, files, and the PNG the HTML page embeds."""

    number: int
    key: str
    title: str
    caption: str
    analysis: str
    files: dict[str, str]
    png: bytes = field(repr=False)
    width_in: float
    height_in: float


@dataclass(frozen=True, slots=True)
class RenderedTable:
    """A table as written: which analysis, its name, number and files."""

    number: int
    key: str
    analysis: str
    name: str
    title: str
    files: dict[str, str]


def table_key(analysis: str, name: str) -> str:
    """File stem of a table: the analysis key, plus the table name when they differ."""
    return analysis if name == analysis else f"{analysis}_{name}"


def table_title(report: ReportContents, analysis: str, name: str) -> str:
    """Caption of a table."""
    res = report[analysis]
    if name == analysis or len(res.tables) == 1:
        return res.title
    return f"{res.title}: {name.replace('_', ' ')}"


def resolve(dotted: str) -> Callable[..., Any]:
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


def bound(function: Callable[..., Any], params: Mapping[str, Any]) -> dict[str, Any]:
    """Every keyword parameter of ``function`` with the value used (defaults filled in)."""
    out = {}
    for name, p in inspect.signature(function).parameters.items():
        if p.kind is inspect.Parameter.KEYWORD_ONLY:
            out[name] = params.get(name, p.default)
    return out


def keyword_names(function: Callable[..., Any]) -> list[str]:
    return [
        n
        for n, p in inspect.signature(function).parameters.items()
        if p.kind is inspect.Parameter.KEYWORD_ONLY
    ]
