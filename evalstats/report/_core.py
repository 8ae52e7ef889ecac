"""The report object and :func:`audit_report`, the top of the report pipeline.

:func:`audit_report` validates the table, summarises what it holds
(:func:`~evalstats.report._model.summarise`), runs each analysis of the registry
(:mod:`~evalstats.report._analyses`) that applies, and returns an :class:`AuditReport`;
:meth:`AuditReport.write` hands it to :mod:`~evalstats.report._write`. Nothing in the report
package imports this module.
"""

from __future__ import annotations

import dataclasses
import platform
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import polars as pl

from evalstats.errors import ParameterError, SchemaError
from evalstats.report._analyses import ANALYSES, SPECS, Context, check_options
from evalstats.report._applies import design_gate
from evalstats.report._model import (
    SCHEMA_VERSION,
    SECTIONS,
    AnalysisResult,
    DataSummary,
    ReportContents,
    Skipped,
    summarise,
)
from evalstats.report._parallel import Outcome, resolve_workers, run_all
from evalstats.report._progress import Progress, progress_env

if TYPE_CHECKING:
    from evalstats._frames import TableLike
    from evalstats.design import Design
    from evalstats.io import IngestReport

__all__ = [
    "ANALYSES",
    "SCHEMA_VERSION",
    "SECTIONS",
    "AnalysisResult",
    "AuditReport",
    "DataSummary",
    "Skipped",
    "audit_report",
]

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


@dataclass(frozen=True, slots=True)
class AuditReport(ReportContents):
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

    @property
    def failed(self) -> tuple[Skipped, ...]:
        """The analyses that failed through an evalstats bug (not the data): reported, not run."""
        from evalstats.report._failed import FAILED

        return tuple(s for s in self.skipped if s.reason.startswith(FAILED))

    def to_dict(self) -> dict[str, Any]:
        """The ``results.json`` document (without the file lists that :meth:`write` adds)."""
        from evalstats.report._render import report_document

        return report_document(self)

    def write(
        self,
        out: str | Path,
        *,
        figure_formats: Sequence[str] = ("png", "pdf"),
        serif: bool = False,
        progress: bool | str = False,
        force: bool = False,
        workers: int | Literal["auto"] = 1,
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
        progress : bool or {'bar', 'lines'}, default False
            Progress on stderr while drawing the figures: a bar on a terminal, else (and
            with ``'lines'``) one line per figure with its time.
        force : bool, default False
            Write into a folder that holds other files (files of the same name are replaced,
            nothing else is removed). A new, empty, or earlier-report folder needs no ``force``:
            an earlier report there is replaced whole.
        workers : int or 'auto', default 1
            Processes that draw the figures (``'auto'``: the usable cores when the table has
            20,000 rows or more, else 1); the files are the same whatever the number. As with
            :func:`audit_report`, guard a script's code with ``if __name__ == "__main__":``.

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
        from evalstats.report._writer import write_report

        return write_report(
            self,
            Path(out),
            figure_formats=figure_formats,
            serif=serif,
            progress=progress,
            force=force,
            workers=resolve_workers(workers, self.data.n_rows),
        )


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
    observations: TableLike,
    *,
    ingest: IngestReport | None = None,
    source: str | Path | Mapping[str, Any] | None = None,
    factors: Sequence[str] | None = None,
    default: Mapping[str, Any] | None = None,
    seed: int = 0,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    skip: Sequence[str] = (),
    progress: bool | str = False,
    on_mismatch: Literal["auto", "error", "intersect", "keep"] = "auto",
    variant_factors: Sequence[str] | str | None = None,
    workers: int | Literal["auto"] = 1,
    on_result: Callable[[AnalysisResult, ReportContents], None] | None = None,
    design: Design | str | Path | None = None,
    roles: str | Mapping[str, str] | None = None,
) -> AuditReport:
    """Run every analysis the observation table supports; say which were skipped and why.

    Parameters
    ----------
    observations : polars.DataFrame, polars.LazyFrame, pandas.DataFrame or pyarrow.Table
        Observation table (see :mod:`evalstats.schema`), e.g. from :func:`evalstats.read`. A
        table whose columns are not named as the observation table's is read as a table file
        of the same rows is (:mod:`evalstats.design._frames`).
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
    progress : bool or {'bar', 'lines'}, default False
        Progress on stderr, one step per analysis: a bar on a terminal, else (and with
        ``'lines'``) one line per analysis with its time.
    on_mismatch : {'auto', 'error', 'intersect', 'keep'}, default 'auto'
        Repeated runs of a configuration that cover different items
        (:func:`evalstats.aggregate.align_item_sets`). ``'auto'``: each run's mean is over its
        own items, and the stability table (TAR) is over the items every run scored; the
        report's design section says so. ``'error'`` stops, ``'intersect'`` analyses the items
        every run scored everywhere (biases TAR upward), ``'keep'`` keeps each run over its own
        items everywhere (the stability analyses then say they could not run).
    design : Design or path, optional
        The design to use (:func:`evalstats.design.infer_design`), already applied to
        ``observations`` when they are the observation table (as ``evalstats report`` does),
        or the path of a design file whose roles are used (``--design``). Default: inferred
        from ``observations`` here, with ``roles``, and applied.
    roles : str or mapping, optional
        Explicit column roles for the inferred design (``{"passage": "cluster"}``); with
        ``design`` given, they are already in it.
    variant_factors : sequence of str or 'all', optional
        The factor columns whose combinations are the prompt variants of the prompt-sensitivity
        analyses (moments, n*). Default: the prompt dimensions; decoding settings
        (temperature, top_p, ...) and serving settings (provider, ...) that vary are analysed
        per value. ``'all'``: every factor column. See :mod:`evalstats.factors`.
    workers : int or 'auto', default 1
        Processes that run the analyses: 1 runs them one after the other in this process;
        ``'auto'`` uses the usable cores for a table of 20,000 rows or more (else 1); the
        command line's default. The report is the same whatever the number (see
        :mod:`evalstats.report._parallel`). Workers are started with ``spawn``, which imports
        the calling script again: guard a script's code with ``if __name__ == "__main__":``.
    on_result : callable, optional
        Called in this process with each analysis's result as it finishes and the report so
        far (a :class:`ReportContents` of the analyses done, the data summary and the units).
        ``evalstats report`` writes each analysis's tables and figures then
        (:class:`~evalstats.report._writer.ReportWriter`), drawing figures while the longer
        analyses still run.

    Returns
    -------
    AuditReport
        The analyses run (tables, parameters, readings) and those skipped; write it with
        :meth:`AuditReport.write`.

    Raises
    ------
    SchemaError
        The table lacks a required column, or ``factors``, ``default`` or ``variant_factors``
        names a column that is not a factor column.
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
    (:class:`~evalstats.errors.InsufficientDataError`), or too large to run at once
    (:class:`~evalstats.errors.LimitError`: 100,000 models to compare pair by pair), is listed
    as skipped with its message. The report computes nothing itself: each table is the return value of the public function
    named in it, called with the parameters recorded next to it.

    Examples
    --------
    >>> from evalstats.simulate import observations
    >>> obs = observations(n_models=2, n_items=20, n_variants=6, seed=0)
    >>> rep = audit_report(obs, options={"nstar": {"n_resamples": 200}})
    >>> [a.key for a in rep.analyses]
    ['moments', 'nstar', 'intervals', 'compare', 'ranks', 'noise']
    >>> reasons = {s.key: s.reason for s in rep.skipped}
    >>> reasons["stability"]  # the design's reason
    'the design does not support it: each configuration was run once: run-to-run stability needs repeated runs'
    >>> reasons["converge"]  # the analysis's own message
    "the stopping rule needs at least 2 batches (20 configurations); model='m0', dataset='d0', metric='score' has 6. Lower `--option converge.batch`."
    """
    from evalstats._frames import to_polars
    from evalstats._reproducible import reproducible
    from evalstats.aggregate import align_item_sets, item_set_rule
    from evalstats.design import apply_design, design_and_table, parse_roles, read_design_file
    from evalstats.design._files import design_roles
    from evalstats.design._read import is_canonical, read_frame
    from evalstats.schema import validate_observations

    checked = check_options(options)
    resolve_workers(workers, 0)  # a bad value fails before any work
    unknown = [k for k in skip if k not in SPECS]
    if unknown:
        raise ParameterError(
            f"`skip` names the analysis {unknown[0]!r}; the analyses are {', '.join(SPECS)}."
        )
    # the in-memory engine makes every group mean the same from run to run (ties stay ties; see
    # evalstats._reproducible)
    with reproducible():
        if design is not None and roles:
            raise ParameterError("give `roles` or `design`, not both: a design holds its roles.")
        if isinstance(design, (str, Path)):  # a design file: its roles
            given, design = read_design_file(design), None
        else:
            given = dict(design.roles) if design is not None else parse_roles(roles)
        table = to_polars(observations, what="the observation table")
        if ingest is None and not is_canonical(table):
            # read as a table file of the same rows is, with the roles the loader applies
            read, kept = read_frame(
                observations, roles=design_roles(design) if design is not None else given
            )
            table, ingest = read.observations, read.report
            if design is not None:
                table = apply_design(table, design)
            else:
                given = kept
        # errored calls without a score stay: the provider audit counts them (see _audit)
        obs = validate_observations(table, errored="keep")
        chosen = _variant_roles(obs, variant_factors)
        if design is None or any(given.get(k) != v for k, v in chosen.items()):
            # the variant factors asked for are roles of the design: prompt or setting
            design, obs = design_and_table(obs, ingest=ingest, roles={**given, **chosen})
        rule = "keep" if on_mismatch == "auto" else on_mismatch
        obs = align_item_sets(obs, on_mismatch=rule)
        with item_set_rule(rule):  # every analysis aggregating to units applies it too
            return _audit(
                obs.collect(),
                factors=factors,
                default=default,
                seed=seed,
                checked=checked,
                skip=skip,
                progress=progress,
                ingest=ingest,
                source=source,
                on_mismatch=on_mismatch,
                variant_factors=variant_factors,
                workers=workers,
                on_result=on_result,
                design=design,
            )


def _variant_roles(
    obs: pl.LazyFrame, variant_factors: Sequence[str] | str | None
) -> dict[str, str]:
    """``variant_factors`` as design roles: the named factors prompt, the other factors setting."""
    from evalstats.schema import factor_columns

    if variant_factors is None:
        return {}
    factors = factor_columns(obs.collect_schema().names())
    if variant_factors == "all":
        return dict.fromkeys(factors, "prompt")
    named = (
        [v.strip() for v in variant_factors.split(",") if v.strip()]
        if isinstance(variant_factors, str)
        else list(variant_factors)
    )
    unknown = [f for f in named if f not in factors]
    if unknown:
        raise SchemaError(
            f"`variant_factors` names {unknown[0]!r}, which is not a factor column of the "
            f"table (factor columns: {', '.join(factors) or 'none'})."
        )
    return {f: "prompt" if f in named else "setting" for f in factors}


def _check_default(obs: pl.DataFrame, default: Mapping[str, Any] | None) -> None:
    """A default configuration names factor columns and levels they have (else an error)."""
    from evalstats.schema import factor_columns

    if not default:
        return
    factors = factor_columns(obs.columns)
    for name, value in default.items():
        if name not in factors:
            raise SchemaError(
                f"`default` names {name!r}, which is not a factor column of the observation "
                f"table (factor columns: {', '.join(factors) or 'none'})."
            )
        levels = obs[name].unique().sort(nulls_last=True).to_list()
        if str(value).lower() not in {str(v).lower() for v in levels}:
            shown = ", ".join(map(str, levels[:20])) + (", ..." if len(levels) > 20 else "")
            raise ParameterError(
                f"`default` sets {name}={value!r}, which is not a level of {name!r} "
                f"(levels: {shown})."
            )


def _audit(
    obs: pl.DataFrame,
    *,
    factors: Sequence[str] | None,
    default: Mapping[str, Any] | None,
    seed: int,
    checked: dict[str, dict[str, Any]],
    skip: Sequence[str],
    progress: bool | str,
    ingest: IngestReport | None,
    source: str | Path | Mapping[str, Any] | None,
    on_mismatch: str,
    variant_factors: Sequence[str] | str | None = None,
    workers: int | str = 1,
    on_result: Callable[[AnalysisResult, ReportContents], None] | None = None,
    design: Design | None = None,
) -> AuditReport:
    """The body of :func:`audit_report`, run under its item-set rule."""
    from evalstats.aggregate import to_units
    from evalstats.factors import held_factors
    from evalstats.report._applies import split_calls

    obs, calls = split_calls(obs)  # analyses read scored rows; the provider audit every call
    n_workers = resolve_workers(workers, obs.height)
    data = summarise(obs, factors)
    if calls is not None:
        data = dataclasses.replace(data, n_errors=int(calls["error"].is_not_null().sum()))
    if design is not None:
        inferred = tuple(
            c.column
            for c in design.columns
            if c.role == "prompt" and c.source == "values" and c.column in obs.columns
        )
        differ = design.groups.filter(~pl.col("runs_cover_same_items").fill_null(True)).height
        data = dataclasses.replace(data, inferred=inferred, runs_differ=differ)
        if factors is None:
            # a column the design holds fixed (one value per model and dataset) is no factor
            # of an ANOVA or an attribution: it is aliased with the blocks
            dims = [f for f in data.factors if design.role(f) in ("prompt", "setting", None)]
            data = dataclasses.replace(data, factors=tuple(dims))
    _check_default(obs, default)
    if variant_factors is None and design is not None and (design.held or design.roles):
        variant_factors = tuple(design.prompt_factors)  # the design's prompt factors
    if variant_factors is not None and not isinstance(variant_factors, str):
        variant_factors = tuple(variant_factors)
    held_factors(obs.head(0), variant_factors=variant_factors)  # names checked before any work
    ctx = Context(
        obs=obs,
        data=data,
        default=dict(default) if default else None,
        done={},
        variant_factors=variant_factors,
        item_rule=on_mismatch,
        design=design,
        calls=calls,
    )
    reasons: dict[str, str | None] = {}
    units = to_units(obs).collect()

    def applies(key: str, ctx: Context) -> str | None:
        if key in skip:
            return "skipped on request"
        return design_gate(key, ctx) or SPECS[key].applies(ctx)

    with Progress("report", len(ANALYSES), progress) as bar, progress_env(progress):

        def report(outcome: Outcome) -> None:
            key, result, reason, seconds = outcome
            reasons[key] = reason
            bar.finished(key, seconds, "skipped" if reason is not None else None)
            if result is not None and on_result is not None:
                so_far = tuple(ctx.done[s.key] for s in ANALYSES if s.key in ctx.done)
                on_result(result, ReportContents(so_far, (), data, None, {}, {}, {}, units, design))

        run_all(
            [s.key for s in ANALYSES],
            ctx,
            checked,
            seed,
            on_mismatch,
            n_workers,
            applies,
            report,
        )
    skipped = [
        Skipped(s.key, s.title, s.section, reason)
        for s in ANALYSES
        if (reason := reasons.get(s.key)) is not None
    ]
    parameters = {
        "seed": seed,
        "factors": list(data.factors),
        "default": dict(default) if default else None,
        "options": checked,
        "skip": list(skip),
        "on_mismatch": on_mismatch,
        "variant_factors": (
            variant_factors
            if variant_factors is None or isinstance(variant_factors, str)
            else list(variant_factors)
        ),
    }
    return AuditReport(
        analyses=tuple(ctx.done[s.key] for s in ANALYSES if s.key in ctx.done),
        skipped=tuple(skipped),
        data=data,
        ingest=ingest,
        source=_source(source, ingest),
        parameters=parameters,
        environment=_environment(),
        units=units,
        design=design,
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
