"""Which analyses the data supports, running them, and the result objects of the report.

Every number of the report comes from a public analysis function called here; this module
decides *which* functions apply (from the columns present), passes them the parameters, and
keeps their result frames. It computes no statistic of its own: the data summary only counts
rows and distinct values.
"""

from __future__ import annotations

import inspect
import platform
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import polars as pl

from evalstats.errors import (
    InsufficientDataError,
    MetricScaleError,
    ParameterError,
    SchemaError,
)

if TYPE_CHECKING:
    from evalstats.io import IngestReport
    from evalstats.schema import MetricInfo

__all__ = [
    "ANALYSES",
    "SECTIONS",
    "AnalysisResult",
    "AuditReport",
    "DataSummary",
    "Skipped",
    "audit_report",
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

#: Packages whose versions the report records.
_PACKAGES = (
    "evalstats",
    "polars",
    "numpy",
    "scipy",
    "statsmodels",
    "xgboost",
    "matplotlib",
    "seaborn",
    "tqdm",
)


# ---------------------------------------------------------------------------------------------
# What the data holds
# ---------------------------------------------------------------------------------------------


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
        }


def _summarise(obs: pl.DataFrame, factors: Sequence[str] | None) -> DataSummary:
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
                f"table (columns: {', '.join(cols)})."
            )
        candidates = list(factors)
    levels = {f: obs[f].n_unique() for f in candidates}
    provider = "provider" if "provider" in cols and obs["provider"].n_unique() > 1 else None
    per_group = obs.group_by("model", "dataset").agg(pl.col("variant").n_unique().alias("v"))
    per_config = obs.group_by("model", "dataset", "variant").agg(
        pl.col("run").n_unique().alias("r")
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
    )


# ---------------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------------


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
class AuditReport:
    """Result of :func:`audit_report`: every analysis run, those skipped, and how it was made.

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
    """

    analyses: tuple[AnalysisResult, ...]
    skipped: tuple[Skipped, ...]
    data: DataSummary
    ingest: IngestReport | None
    source: dict[str, Any]
    parameters: dict[str, Any]
    environment: dict[str, Any]
    units: pl.DataFrame = field(default_factory=pl.DataFrame, repr=False, compare=False)

    def __getitem__(self, key: str) -> AnalysisResult:
        for a in self.analyses:
            if a.key == key:
                return a
        ran = ", ".join(a.key for a in self.analyses)
        raise KeyError(f"no analysis {key!r} in the report (ran: {ran}).")

    def __contains__(self, key: object) -> bool:
        return any(a.key == key for a in self.analyses)

    def to_dict(self) -> dict[str, Any]:
        """The ``results.json`` document (without the file lists that :meth:`write` adds)."""
        from evalstats.report._commands import command_line
        from evalstats.report._tables import round_floats, table_to_dict, to_jsonable

        return {
            "report": "evalstats audit report",
            "schema_version": SCHEMA_VERSION,
            "evalstats_version": self.environment["packages"].get("evalstats"),
            "source": to_jsonable(self.source),
            "ingest": self.ingest.to_dict() if self.ingest is not None else None,
            "data": self.data.to_dict(),
            "parameters": to_jsonable(self.parameters),
            "environment": to_jsonable(self.environment),
            "sections": [
                {
                    "key": key,
                    "title": title,
                    "analyses": [a.key for a in self.analyses if a.section == key],
                }
                for key, title in SECTIONS.items()
            ],
            "analyses": [
                {
                    "key": a.key,
                    "title": a.title,
                    "section": a.section,
                    "function": a.function,
                    "command": a.command,
                    "command_line": command_line(a, self.source),
                    "params": to_jsonable(a.params),
                    "values": round_floats(to_jsonable(a.values)),
                    "reading": a.reading,
                    "warnings": list(a.warnings),
                    "tables": {name: table_to_dict(t) for name, t in a.tables.items()},
                }
                for a in self.analyses
            ],
            "skipped": [s.to_dict() for s in self.skipped],
        }

    def write(
        self,
        out: str | Path,
        *,
        figure_formats: Sequence[str] = ("png", "pdf"),
        serif: bool = False,
        progress: bool = False,
        force: bool = False,
    ) -> Path:
        """Write the report into the folder ``out``; return the path of ``report.html``.

        Parameters
        ----------
        out : str or Path
            Folder (created if needed). It receives ``report.html`` (self-contained),
            ``report.md``, ``results.json``, ``figures/<name>.<format>`` and
            ``tables/<name>.csv`` and ``.tex``.
        figure_formats : sequence of {'png', 'pdf', 'svg'}, default ('png', 'pdf')
            File formats of each figure. The HTML page embeds PNG whatever is chosen.
        serif : bool, default False
            Serif fonts in the figures (:func:`evalstats.plots.paper_style`).
        progress : bool, default False
            Show a progress bar on stderr while drawing the figures.
        force : bool, default False
            Write into a folder that holds other files (files of the same name are replaced,
            nothing else is removed). A new, empty, or earlier-report folder needs no ``force``:
            an earlier report there is replaced whole.

        Returns
        -------
        pathlib.Path
            ``out / "report.html"``.

        Raises
        ------
        ParameterError
            An unknown figure format.
        OutputError
            ``out`` is a file, a folder with other files (without ``force``), or read-only.

        Notes
        -----
        The files are written into a hidden staging folder inside ``out`` and moved into place
        at the end, ``report.html`` last, so an interrupted run leaves the earlier report as it
        was.
        """
        from evalstats.report._write import write_report

        return write_report(
            self,
            Path(out),
            figure_formats=figure_formats,
            serif=serif,
            progress=progress,
            force=force,
        )


# ---------------------------------------------------------------------------------------------
# The analyses
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Context:
    obs: pl.DataFrame
    data: DataSummary
    default: dict[str, Any] | None
    done: dict[str, AnalysisResult]


@dataclass(frozen=True, slots=True)
class _Spec:
    key: str
    title: str
    section: str
    function: str  # dotted public name
    command: str | None
    applies: Callable[[_Context], str | None]  # None when it applies, else why not
    run: Callable[[_Context, dict[str, Any]], tuple[dict, dict, dict]]  # tables, values, objects
    fixed: Callable[[_Context], dict[str, Any]] = lambda ctx: {}  # arguments the report sets


def _resolve(dotted: str) -> Callable[..., Any]:
    import importlib

    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


def _bound(function: Callable[..., Any], params: Mapping[str, Any]) -> dict[str, Any]:
    """Every keyword parameter of ``function`` with the value used (defaults filled in)."""
    out = {}
    for name, p in inspect.signature(function).parameters.items():
        if p.kind is inspect.Parameter.KEYWORD_ONLY:
            out[name] = params.get(name, p.default)
    return out


def _keyword_names(function: Callable[..., Any]) -> list[str]:
    return [
        n
        for n, p in inspect.signature(function).parameters.items()
        if p.kind is inspect.Parameter.KEYWORD_ONLY
    ]


# applicability ------------------------------------------------------------------------------


def _need_variants(ctx: _Context) -> str | None:
    if ctx.data.n_variants < 2:
        return "each model and dataset has a single prompt variant: there is no spread over prompts"
    return None


def _need_runs(ctx: _Context) -> str | None:
    if ctx.data.n_runs < 2:
        return "each configuration was run once: run-to-run stability needs repeated runs"
    if ctx.data.n_items is None:
        return "the input has no item column: stability compares each item's answers over runs"
    return None


def _need_stability(ctx: _Context) -> str | None:
    reason = _need_runs(ctx)
    if reason is None and "stability" not in ctx.done:
        return "it correlates the columns of the stability table, which was skipped"
    return reason


def _need_factors(ctx: _Context) -> str | None:
    if not ctx.data.factors:
        const, partial = ctx.data.constant_factors, ctx.data.incomplete_factors
        notes = []
        if const:
            notes.append(f"{', '.join(const)} have a single level")
        if partial:
            notes.append(f"{', '.join(partial)} have rows without a value")
        tail = f" ({'; '.join(notes)})" if notes else ""
        return f"no complete factor column with two or more levels{tail}; name them with --factors"
    return None


def _need_models(ctx: _Context) -> str | None:
    if len(ctx.data.models) < 2:
        return f"only one model ({ctx.data.models[0]}): nothing to compare"
    if ctx.data.n_items is None:
        return "the input has no item column: paired comparisons and rank bootstraps need items"
    return None


def _need_blocks(ctx: _Context) -> str | None:
    if len(ctx.data.models) < 2:
        return f"only one model ({ctx.data.models[0]}): nothing to rank"
    if len(ctx.data.datasets) < 2:
        return "a single dataset: the Friedman test ranks models across several datasets"
    return None


def _need_noise(ctx: _Context) -> str | None:
    if ctx.data.n_items is None and ctx.data.n_variants < 2:
        return "unit-level input with a single prompt variant: no variance to decompose"
    if ctx.data.n_items is not None and ctx.data.n_variants < 2 and ctx.data.n_runs < 2:
        return "one prompt and one run per item: only the item variance is there, see intervals"
    return None


def _need_default(ctx: _Context) -> str | None:
    if not ctx.default:
        return "no default configuration given (--default factor=value,...)"
    return None


def _need_providers(ctx: _Context) -> str | None:
    if ctx.data.provider is None and not ctx.data.n_errors:
        return "no provider column with two or more providers and no recorded errors"
    if ctx.data.n_items is None:
        return "the input has no item column: provider differences are paired on items"
    return None


# runners ------------------------------------------------------------------------------------


def _run_moments(ctx: _Context, p: dict) -> tuple[dict, dict, dict]:
    from evalstats.moments import prompt_spread

    return {"moments": prompt_spread(ctx.obs, **p)}, {}, {}


def _run_nstar(ctx: _Context, p: dict) -> tuple[dict, dict, dict]:
    from evalstats.resampling import required_sample_size, sample_size_curve

    nstar = required_sample_size(ctx.obs, **p)
    epsilon_only = ("epsilon", "relative_epsilon", "relative_to")
    curve = sample_size_curve(ctx.obs, **{k: v for k, v in p.items() if k not in epsilon_only})
    tables = {"nstar": nstar, "curve": curve}
    if p.get("method", "pool") != "pool" and p.get("compat") is None:
        # the claim about the recorded variants only, beside the one about unseen variants
        pool = {k: v for k, v in p.items() if k != "population_size"} | {"method": "pool"}
        tables["recorded_variants"] = required_sample_size(ctx.obs, **pool)
    return tables, {}, {}


def _nstar_fixed(ctx: _Context) -> dict[str, Any]:
    """n* about unseen prompt variants (bootstrap); the pool n* is only about the recorded ones."""
    return {"method": "bootstrap"}


def _run_converge(ctx: _Context, p: dict) -> tuple[dict, dict, dict]:
    from evalstats.compare import convergence

    return {"converge": convergence(ctx.obs, **p)}, {}, {}


def _run_stability(ctx: _Context, p: dict) -> tuple[dict, dict, dict]:
    from evalstats.stability import stability_table

    return {"stability": stability_table(ctx.obs, **p)}, {}, {}


def _run_normality(ctx: _Context, p: dict) -> tuple[dict, dict, dict]:
    from evalstats.normality import run_distribution, run_normality

    table = run_normality(ctx.obs, **p)
    if table.height and table["pvalue"].fill_nan(None).is_null().all():
        runs = ", ".join(str(n) for n in sorted(set(table["n"].to_list())))
        from evalstats.report._readings import method_name

        tests = ", ".join(method_name(m) for m in sorted(set(table["method"].to_list())))
        raise InsufficientDataError(
            f"the {tests} test could not be computed in any group ({runs} runs per group are "
            "too few)"
        )
    dist = run_distribution(ctx.obs, **({"by": p["by"]} if "by" in p else {}))
    return {"normality": table}, {}, {"distribution": dist}


def _run_correlation(ctx: _Context, p: dict) -> tuple[dict, dict, dict]:
    from evalstats.correlation import correlation_matrix

    table = ctx.done["stability"].tables["stability"]
    return {"correlation": correlation_matrix(table, **p)}, {}, {}


def _run_anova(ctx: _Context, p: dict) -> tuple[dict, dict, dict]:
    from evalstats.attribution import factor_anova, interaction_means

    res = factor_anova(ctx.obs, **p)
    tables = {"anova": res.to_frame()}
    term = res.strongest_interaction()
    if term is not None:
        tables["interaction"] = interaction_means(ctx.obs, term=term)
    values = {
        "ss_type": res.ss_type,
        "method": res.method,
        "n_obs": res.n_obs,
        "strongest_interaction": term,
    }
    return tables, values, {"anova": res}


def _run_attribution(ctx: _Context, p: dict) -> tuple[dict, dict, dict]:
    from evalstats.attribution import attribute

    res = attribute(ctx.obs, **p)
    tables = {"attribution": res.to_frame()}
    if res.coefficients.height:
        tables["coefficients"] = res.coefficients
    values = {
        "cv_r_sq": res.cv_r_sq,
        "n_folds": res.n_folds,
        "n_obs": res.n_obs,
        "score_scale": res.score_scale,
    }
    return tables, values, {"attribution": res}


def _run_intervals(ctx: _Context, p: dict) -> tuple[dict, dict, dict]:
    from evalstats.compare import intervals

    return {"intervals": intervals(ctx.obs, **p)}, {}, {}


def _run_compare(ctx: _Context, p: dict) -> tuple[dict, dict, dict]:
    from evalstats.compare import compare_models

    return {"compare": compare_models(ctx.obs, **p)}, {}, {}


def _need_gold(ctx: _Context) -> str | None:
    if "gold_score" not in ctx.obs.columns or ctx.data.n_items is None:
        return "no gold_score column: PPI needs human scores on part of the items"
    n_gold = ctx.obs["gold_score"].is_not_null().sum()
    if n_gold == 0 or n_gold == ctx.obs.height:
        return "gold scores cover none or all of the rows: nothing for PPI to correct"
    return None


def _run_ppi(ctx: _Context, p: dict) -> tuple[dict, dict, dict]:
    from evalstats.compare import ppi_mean

    return {"ppi": ppi_mean(ctx.obs, **p)}, {}, {}


def _run_ranks(ctx: _Context, p: dict) -> tuple[dict, dict, dict]:
    from evalstats.compare import rank_intervals

    return {"ranks": rank_intervals(ctx.obs, **p)}, {}, {}


def _run_friedman(ctx: _Context, p: dict) -> tuple[dict, dict, dict]:
    from evalstats.compare import friedman_nemenyi

    res = friedman_nemenyi(ctx.obs, **p)
    values = {
        "statistic": res.statistic,
        "pvalue": res.pvalue,
        "n_blocks": res.n_blocks,
        "n_models": res.n_models,
        "critical_difference": res.critical_difference,
    }
    return {"friedman": res.to_frame()}, values, {"friedman": res}


#: Interval width the report plans for, as a share of the metric's range (0.05 for accuracy in
#: [0, 1]): the full width of the 95 % interval of each model's mean.
NOISE_TARGET_SHARE = 0.05


def _run_noise(ctx: _Context, p: dict) -> tuple[dict, dict, dict]:
    from evalstats.noise import plan, variance_components
    from evalstats.schema import metric_info

    comps = variance_components(ctx.obs, **p)
    level = p.get("confidence_level", 0.95)
    plans, targets, objects = [], {}, {}
    by_metric = "metric" in comps.columns
    for name, info in metric_info(ctx.obs).items():
        if info.range is None:  # unbounded: no scale-free default target
            continue
        target = NOISE_TARGET_SHARE * info.range
        sub = comps.filter(pl.col("metric") == name) if by_metric else comps
        if sub.height == 0:
            continue
        res = plan(ctx.obs, target_width=target, components=sub, confidence_level=level)
        plans.append(res.best)
        targets[name] = target
        objects.setdefault("plan", res)
    values = {
        "target_width": targets,
        "target_share_of_range": NOISE_TARGET_SHARE,
        "cost": "run=1 (model calls)",
    }
    tables = {"components": comps}
    if plans:
        tables["plan"] = pl.concat(plans, how="diagonal_relaxed")
    return tables, values, objects


def _run_audit(ctx: _Context, p: dict) -> tuple[dict, dict, dict]:
    from evalstats.compare import reversal_audit

    res = reversal_audit(ctx.obs, **p)
    tables = {"pairs": res.pairs, "models": res.models}
    return tables, {"n_reversals": res.n_reversals}, {"audit": res}


def _run_providers(ctx: _Context, p: dict) -> tuple[dict, dict, dict]:
    from evalstats.compare import provider_audit

    res = provider_audit(ctx.obs, **p)
    tables = {
        "scores": res.scores,
        "errors": res.errors,
        "differences": res.differences,
    }
    if res.latency.height:
        tables["latency"] = res.latency
        tables["tail_quality"] = res.tail_quality
    return tables, {}, {"providers": res}


def _anova_fixed(ctx: _Context) -> dict[str, Any]:
    """Factors, and models and datasets as nuisance blocks when there are several of them.

    Pooling models and datasets would put their differences into the residual and let their
    interactions with the factors pass for factor effects; blocking compares configurations
    within each (model, dataset) and permutes only there.
    """
    block = tuple(
        col
        for col, levels in (("model", ctx.data.models), ("dataset", ctx.data.datasets))
        if len(levels) > 1
    )
    fixed: dict[str, Any] = {"factors": list(ctx.data.factors)}
    if block:
        fixed["block"] = block[0] if len(block) == 1 else block
    return fixed


def _provider_fixed(ctx: _Context) -> dict[str, Any]:
    if ctx.data.provider is not None:
        return {}
    # errors but no provider column: audit the error rates and policies per model
    return {"provider": "model", "by": ()}


#: Every analysis of the report, in report order.
ANALYSES: tuple[_Spec, ...] = (
    _Spec(
        "moments",
        "Scores over prompt variants",
        "prompts",
        "evalstats.prompt_spread",
        "moments",
        _need_variants,
        _run_moments,
    ),
    _Spec(
        "nstar",
        "Variants needed for a stable estimate (n*)",
        "prompts",
        "evalstats.required_sample_size",
        "nstar",
        _need_variants,
        _run_nstar,
        _nstar_fixed,
    ),
    _Spec(
        "converge",
        "Sequential stopping rule",
        "prompts",
        "evalstats.convergence",
        "converge",
        _need_variants,
        _run_converge,
    ),
    _Spec(
        "stability",
        "Agreement over repeated runs (TARa@N, TARr@N)",
        "stability",
        "evalstats.stability_table",
        "stability",
        _need_runs,
        _run_stability,
    ),
    _Spec(
        "normality",
        "Normality of run accuracies",
        "stability",
        "evalstats.run_normality",
        "normality",
        _need_runs,
        _run_normality,
    ),
    _Spec(
        "correlation",
        "Correlations between stability measures",
        "stability",
        "evalstats.correlation_matrix",
        "correlate",
        _need_stability,
        _run_correlation,
    ),
    _Spec(
        "anova",
        "Factorial ANOVA",
        "factors",
        "evalstats.factor_anova",
        "anova",
        _need_factors,
        _run_anova,
        _anova_fixed,
    ),
    _Spec(
        "attribution",
        "Factor importance (SHAP)",
        "factors",
        "evalstats.attribute",
        "attribute",
        _need_factors,
        _run_attribution,
        lambda ctx: {"factors": list(ctx.data.factors)},
    ),
    _Spec(
        "intervals",
        "Mean score with confidence interval",
        "models",
        "evalstats.intervals",
        "intervals",
        lambda ctx: None,
        _run_intervals,
    ),
    _Spec(
        "compare",
        "Paired model differences",
        "models",
        "evalstats.compare_models",
        "compare",
        _need_models,
        _run_compare,
    ),
    _Spec(
        "ppi",
        "Judge scores corrected with gold labels (PPI++)",
        "models",
        "evalstats.ppi_mean",
        "ppi",
        _need_gold,
        _run_ppi,
    ),
    _Spec(
        "ranks",
        "Rank uncertainty",
        "models",
        "evalstats.rank_intervals",
        None,
        _need_models,
        _run_ranks,
    ),
    _Spec(
        "friedman",
        "Ranks across datasets (Friedman, Nemenyi)",
        "models",
        "evalstats.friedman_nemenyi",
        None,
        _need_blocks,
        _run_friedman,
    ),
    _Spec(
        "noise",
        "Variance components and the next design",
        "noise",
        "evalstats.variance_components",
        "noise",
        _need_noise,
        _run_noise,
    ),
    _Spec(
        "audit",
        "Conclusion-reversal audit",
        "default",
        "evalstats.reversal_audit",
        "audit",
        _need_default,
        _run_audit,
        lambda ctx: {"default": dict(ctx.default or {})},
    ),
    _Spec(
        "providers",
        "Provider and error audit",
        "providers",
        "evalstats.provider_audit",
        "providers",
        _need_providers,
        _run_providers,
        _provider_fixed,
    ),
)

_SPECS = {s.key: s for s in ANALYSES}


def _check_options(options: Mapping[str, Mapping[str, Any]] | None) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for key, params in (options or {}).items():
        if key not in _SPECS:
            raise ParameterError(
                f"`options` names the analysis {key!r}; the analyses are {', '.join(_SPECS)}."
            )
        names = _keyword_names(_resolve(_SPECS[key].function))
        for name in params:
            if name not in names:
                raise ParameterError(
                    f"`options` sets {key}.{name}, which {_SPECS[key].function} does not take "
                    f"(parameters: {', '.join(names)})."
                )
        out[key] = dict(params)
    return out


def _environment() -> dict[str, Any]:
    from importlib import metadata

    packages = {}
    for name in _PACKAGES:
        try:
            packages[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            packages[name] = None
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": f"{platform.system()} {platform.machine()}",
        "packages": packages,
    }


def audit_report(
    observations: pl.DataFrame | pl.LazyFrame,
    *,
    ingest: IngestReport | None = None,
    source: str | Path | Mapping[str, Any] | None = None,
    factors: Sequence[str] | None = None,
    default: Mapping[str, Any] | None = None,
    seed: int = 0,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    skip: Sequence[str] = (),
    progress: bool = False,
    on_mismatch: Literal["error", "intersect", "keep"] = "error",
) -> AuditReport:
    """Run every analysis the observation table supports; say which were skipped and why.

    Parameters
    ----------
    observations : polars.DataFrame or polars.LazyFrame
        Observation table (see :mod:`evalstats.schema`), e.g. from :func:`evalstats.read`.
    ingest : IngestReport, optional
        The loader's report, shown in the report's data section.
    source : str, Path or mapping, optional
        Where the observations came from (recorded, not read): a path, or
        ``{"path": ..., "format": ..., "options": {...}}`` with the loader and its options.
    factors : sequence of str, optional
        Factor columns for ANOVA and attribution (default: every factor column with two or
        more levels; see :func:`evalstats.schema.factor_columns`).
    default : mapping, optional
        The default configuration ``{factor: value}``; enables the conclusion-reversal audit.
    seed : int, default 0
        Seed of every stochastic analysis (resampling, permutations, bootstrap, xgboost);
        the same seed gives the same report.
    options : mapping, optional
        Parameters per analysis, ``{analysis: {parameter: value}}``, e.g.
        ``{"anova": {"n_resamples": 2000}}``; keys are those of :data:`ANALYSES`, parameters
        those of the analysis function. Unset parameters keep the function's default.
    skip : sequence of str, default ()
        Analyses not to run (keys of :data:`ANALYSES`).
    progress : bool, default False
        Show a progress bar on stderr, one step per analysis.
    on_mismatch : {'error', 'intersect', 'keep'}, default 'error'
        Repeated runs of a configuration that cover different items, for every analysis of
        the report alike (:func:`evalstats.aggregate.align_item_sets`): stop, analyse the
        items every run scored (biases TAR upward), or keep each run over its own items (the
        stability analyses then say they could not run).

    Returns
    -------
    AuditReport
        The analyses run (tables, parameters, readings) and those skipped; write it with
        :meth:`AuditReport.write`.

    Raises
    ------
    SchemaError
        The table lacks a required column, or ``factors`` names a missing column.
    ParameterError
        ``options`` or ``skip`` names an unknown analysis or parameter, or a parameter value is
        out of its domain (raised by the analysis function).

    Notes
    -----
    Which analyses apply is decided from the columns present: several variants per model and
    dataset give the prompt-sensitivity analyses (moments, n*, stopping rule); several runs
    with items give stability, normality and correlations; factor columns give ANOVA and
    attribution; several models give paired comparisons and rank intervals (Friedman also
    needs several datasets); ``default`` gives the reversal audit; a provider column or
    recorded errors give the provider audit. An analysis that finds the data too thin
    (:class:`~evalstats.errors.InsufficientDataError`) is listed as skipped with its message.
    The report computes nothing itself: each table is the return value of the public function
    named in it, called with the parameters recorded next to it.

    Examples
    --------
    >>> from evalstats.simulate import observations
    >>> obs = observations(n_models=2, n_items=20, n_variants=4, seed=0)
    >>> rep = audit_report(obs, options={"nstar": {"n_resamples": 200}})
    >>> [a.key for a in rep.analyses]
    ['moments', 'nstar', 'intervals', 'compare', 'ranks', 'noise']
    >>> reasons = {s.key: s.reason for s in rep.skipped}
    >>> reasons["stability"]
    'each configuration was run once: run-to-run stability needs repeated runs'
    >>> reasons["converge"]  # the analysis's own message
    "the stopping rule needs at least 2 batches (20 configurations); model='m0', dataset='d0', metric='score' has 4. Lower `batch`."
    """
    from evalstats.aggregate import align_item_sets, item_set_rule
    from evalstats.schema import validate_observations

    checked = _check_options(options)
    unknown = [k for k in skip if k not in _SPECS]
    if unknown:
        raise ParameterError(
            f"`skip` names the analysis {unknown[0]!r}; the analyses are {', '.join(_SPECS)}."
        )
    obs = align_item_sets(validate_observations(observations), on_mismatch=on_mismatch).collect()
    with item_set_rule(on_mismatch):  # every analysis aggregating to units applies it too
        return _audit(
            obs,
            factors=factors,
            default=default,
            seed=seed,
            checked=checked,
            skip=skip,
            progress=progress,
            ingest=ingest,
            source=source,
            on_mismatch=on_mismatch,
        )


def _audit(
    obs: pl.DataFrame,
    *,
    factors: Sequence[str] | None,
    default: Mapping[str, Any] | None,
    seed: int,
    checked: dict[str, dict[str, Any]],
    skip: Sequence[str],
    progress: bool,
    ingest: IngestReport | None,
    source: str | Path | Mapping[str, Any] | None,
    on_mismatch: str,
) -> AuditReport:
    """The body of :func:`audit_report`, run under its item-set rule."""
    from tqdm.auto import tqdm

    from evalstats.aggregate import to_units

    data = _summarise(obs, factors)
    ctx = _Context(obs=obs, data=data, default=dict(default) if default else None, done={})
    skipped: list[Skipped] = []
    bar = tqdm(
        total=len(ANALYSES),
        desc="report",
        unit="analysis",
        file=sys.stderr,
        disable=not progress,
        leave=False,
    )
    with bar:
        for spec in ANALYSES:
            bar.set_description_str(f"report: {spec.key}")
            reason = "skipped on request" if spec.key in skip else spec.applies(ctx)
            if reason is None:
                result, reason = _run(spec, ctx, checked.get(spec.key, {}), seed)
                if result is not None:
                    ctx.done[spec.key] = result
            if reason is not None:
                skipped.append(Skipped(spec.key, spec.title, spec.section, reason))
            bar.update()
    parameters = {
        "seed": seed,
        "factors": list(data.factors),
        "default": dict(default) if default else None,
        "options": checked,
        "skip": list(skip),
        "on_mismatch": on_mismatch,
    }
    return AuditReport(
        analyses=tuple(ctx.done[s.key] for s in ANALYSES if s.key in ctx.done),
        skipped=tuple(skipped),
        data=data,
        ingest=ingest,
        source=_source(source, ingest),
        parameters=parameters,
        environment=_environment(),
        units=to_units(obs).collect(),
    )


def _source(
    source: str | Path | Mapping[str, Any] | None, ingest: IngestReport | None
) -> dict[str, Any]:
    info = dict(source) if isinstance(source, Mapping) else {"path": source}
    path = info.get("path")
    return {
        "path": None if path is None else str(path),
        "format": info.get("format") or (ingest.format if ingest is not None else None),
        "options": dict(info.get("options") or {}),
    }


def _run(
    spec: _Spec, ctx: _Context, options: dict[str, Any], seed: int
) -> tuple[AnalysisResult | None, str | None]:
    from evalstats.report._readings import READINGS

    function = _resolve(spec.function)
    names = _keyword_names(function)
    params = {**spec.fixed(ctx)}
    if "seed" in names:
        params["seed"] = seed
    params.update(options)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            tables, values, objects = spec.run(ctx, params)
        except InsufficientDataError as exc:
            return None, str(exc)
        except MetricScaleError as exc:  # a method for [0, 1] or 0/1 scores, or mixed metrics
            return None, f"does not apply to these metrics: {exc}"
        except SchemaError as exc:  # e.g. runs covering different items
            return None, f"could not run: {exc}"
    messages = tuple(dict.fromkeys(str(w.message) for w in caught))
    result = AnalysisResult(
        key=spec.key,
        title=spec.title,
        section=spec.section,
        function=spec.function,
        command=spec.command,
        params=_bound(function, params),
        tables=tables,
        values=values,
        reading="",
        warnings=messages,
        objects=objects,
    )
    from evalstats.report._readings import scale

    with scale(ctx.data.percent):
        reading = READINGS[spec.key](result, ctx.data)
    return _replace_reading(result, reading), None


def _replace_reading(result: AnalysisResult, reading: str) -> AnalysisResult:
    from dataclasses import replace

    return replace(result, reading=reading)
