"""The report's figures: which plot functions draw which results, with titles and captions.

Every figure is drawn by a public function of :mod:`evalstats.plots` from the analyses' result
tables, with one colour per model across all figures (:func:`evalstats.plots.model_colors`
of every model in the data).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

if TYPE_CHECKING:
    from evalstats.report._model import ReportContents

__all__ = ["FigureSpec", "figure_specs"]

#: At most this many panels in one figure of per-group histograms.
_MAX_HIST_PANELS = 6


@dataclass(frozen=True, slots=True)
class FigureSpec:
    """A figure of the report: file name, title, caption, the analysis it shows, how to draw."""

    key: str
    title: str
    caption: str
    analysis: str
    draw: Callable[[dict[str, Any]], Any]  # palette -> matplotlib Figure


def _panels(n: int, *, width: float = 3.4, height: float = 2.7, ncol_max: int = 2) -> Any:
    from evalstats.plots._style import require_plotting

    plt, _ = require_plotting()
    ncol = min(ncol_max, n)
    nrow = -(-n // ncol)
    fig, axes = plt.subplots(
        nrow, ncol, figsize=(width * ncol, height * nrow), squeeze=False, layout="constrained"
    )
    flat = list(axes.ravel())
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def _prompt_figures(report: ReportContents) -> list[FigureSpec]:
    from evalstats import plots

    specs = []
    if "moments" in report:
        specs.append(
            FigureSpec(
                "prompt_spread",
                "Accuracy over prompt variants",
                "Accuracy of each prompt variant (runs averaged), one box per model, one panel "
                "per dataset. Boxes span the quartiles, whiskers 1.5 times the interquartile "
                "range; points beyond them are single variants.",
                "moments",
                lambda pal: plots.plot_prompt_spread(report.units, palette=pal),
            )
        )
    if "nstar" in report:
        nstar = report["nstar"]
        curve, table = nstar.tables["curve"], nstar.tables["nstar"]
        datasets = sorted(curve["dataset"].unique().to_list())

        def draw(pal: dict[str, Any]) -> Any:
            fig, axes = _panels(len(datasets))
            for ax, d in zip(axes, datasets):
                plots.plot_convergence_overlay(
                    curve, table, dataset=d, moment="mean", ax=ax, palette=pal
                )
            return fig

        eps_values = table.filter(pl.col("moment") == "mean")["epsilon"].unique().drop_nulls()
        eps = f"ε = {eps_values[0]:.4g}" if eps_values.len() == 1 else "each metric's ε"
        what = "accuracy" if report.data.percent else "score"
        specs.append(
            FigureSpec(
                "convergence",
                "Convergence of the mean over prompt variants",
                f"Mean distance |Δ(n)| between the mean {what} over n sampled variants and over "
                f"all variants, with its {1 - nstar.params['delta']:.0%} band, per model; the "
                f"dashed line is {eps} and the dots mark n*, the fewest variants whose "
                "band stays below ε.",
                "nstar",
                draw,
            )
        )
    return specs


def _stability_figures(report: ReportContents) -> list[FigureSpec]:
    from evalstats import plots

    specs = []
    if "stability" in report:
        table = report["stability"].tables["stability"]
        values = [c for c in ("tar_a", "tar_r") if table[c].drop_nulls().drop_nans().len()]
        if values:
            one_cell = table.group_by("model", "dataset").len()["len"].max() == 1
            if one_cell:

                def draw(pal: dict[str, Any]) -> Any:
                    fig, axes = _panels(len(values))
                    for ax, v in zip(axes, values):
                        plots.plot_tar_heatmap(table, value=v, ax=ax)
                    return fig

                caption = (
                    "Share of items with the same parsed answer (TARa@N) or the same raw "
                    "response (TARr@N) in all N runs, in percent, per model and dataset."
                )
            else:

                def draw(pal: dict[str, Any]) -> Any:
                    fig, axes = _panels(len(values))
                    for ax, v in zip(axes, values):
                        plots.plot_stability_distribution(table, value=v, ax=ax, palette=pal)
                    return fig

                caption = (
                    "Share of items with the same parsed answer (TARa@N) or the same raw "
                    "response (TARr@N) in all N runs, one value per configuration; one box per "
                    "model and dataset."
                )
            specs.append(
                FigureSpec("stability", "Agreement over repeated runs", caption, "stability", draw)
            )
    if "normality" in report:
        dist = report["normality"].objects.get("distribution")
        if dist is not None and 0 < dist.height <= _MAX_HIST_PANELS and dist["n"].min() >= 5:
            specs.append(
                FigureSpec(
                    "run_distribution",
                    "Distribution of run accuracies",
                    "Histogram of the accuracy of each run, per configuration, with the mean "
                    "(solid), median (dashed) and the 5 % and 95 % quantiles (dotted).",
                    "normality",
                    lambda pal: plots.plot_run_distribution(dist),
                )
            )
    if "correlation" in report:
        corr = report["correlation"].tables["correlation"]
        specs.append(
            FigureSpec(
                "correlation",
                "Correlations between stability measures",
                "Correlation of the stability measures across configurations (lower "
                "triangle); * marks permutation p ≤ 0.05, blank cells are undefined "
                "(a constant column).",
                "correlation",
                lambda pal: plots.plot_correlation_heatmap(corr),
            )
        )
    return specs


def _factor_figures(report: ReportContents) -> list[FigureSpec]:
    from evalstats import plots

    specs = []
    if "anova" in report:
        anova = report["anova"]
        specs.append(
            FigureSpec(
                "anova",
                "Variance explained by each factor",
                "η² of each term of the factorial ANOVA (largest 20), with permutation "
                "p-value marks: * p < 0.05, ** p < 0.01, *** p < 0.001.",
                "anova",
                lambda pal: plots.plot_anova_effects(anova.objects["anova"]),
            )
        )
        if "interaction" in anova.tables:
            cells = anova.tables["interaction"]
            term = anova.values["strongest_interaction"]
            specs.append(
                FigureSpec(
                    "interaction",
                    f"Strongest interaction: {term}",
                    f"Mean accuracy in each cell of {term}, the two-way term with the largest η².",
                    "anova",
                    lambda pal: plots.plot_interaction_heatmap(cells),
                )
            )
    if "attribution" in report:
        res = report["attribution"].objects["attribution"]
        specs.append(
            FigureSpec(
                "attribution",
                "Factor importance",
                "Mean |SHAP| of each factor (dark: above its null band, light: within it). The "
                f"grey band ends at the {res.confidence_level:.0%} quantile of the importance "
                f"after {res.n_null} refits on permuted scores.",
                "attribution",
                lambda pal: plots.plot_attribution(res),
            )
        )
    return specs


def _model_figures(report: ReportContents) -> list[FigureSpec]:
    from evalstats import plots

    specs = []
    if "intervals" in report:
        res = report["intervals"]
        t = res.tables["intervals"]
        specs.append(
            FigureSpec(
                "intervals",
                "Mean accuracy with confidence intervals",
                f"Mean accuracy per model with its {res.params['confidence_level']:.0%} "
                f"{res.params['method']} interval over {res.params['over']}.",
                "intervals",
                lambda pal, t=t: plots.plot_intervals(t, palette=pal),
            )
        )
    if "compare" in report:
        res = report["compare"]
        t = res.tables["compare"]
        specs.append(
            FigureSpec(
                "differences",
                "Paired differences between models",
                f"Mean difference of each model pair (paired on {res.params['paired_on']}) "
                f"with its {res.params['confidence_level']:.0%} interval; the dashed line is no "
                "difference.",
                "compare",
                lambda pal, t=t: plots.plot_differences(t),
            )
        )
    if "friedman" in report:
        fr = report["friedman"].objects["friedman"]
        specs.append(
            FigureSpec(
                "critical_difference",
                "Critical-difference diagram",
                "Mean rank of each model across datasets (1 = best). The bar labelled CD is "
                "the Nemenyi critical difference; models joined by a thick black bar are not "
                "significantly different.",
                "friedman",
                lambda pal: plots.plot_critical_difference(fr, palette=pal),
            )
        )
    return specs


def _noise_figures(report: ReportContents) -> list[FigureSpec]:
    from evalstats import plots

    if "noise" not in report:
        return []
    res = report["noise"]
    comps = res.tables["components"]
    datasets = sorted(comps["dataset"].unique().to_list())

    def draw_components(pal: dict[str, Any]) -> Any:
        fig, axes = _panels(len(datasets), width=4.4, ncol_max=2)
        for ax, d in zip(axes, datasets):
            plots.plot_noise_components(comps.filter(pl.col("dataset") == d), ax=ax)
            ax.set_title(d, fontsize="small")
        return fig

    specs = [
        FigureSpec(
            "noise_components",
            "Where the variance of an item score comes from",
            "Variance components of item scores per model, one panel per dataset: items, prompt "
            "variants, their interaction and run-to-run noise (runs within an item and prompt). "
            "A component the design cannot separate is left out of its bar.",
            "noise",
            draw_components,
        )
    ]
    plan = res.objects.get("plan")
    if plan is not None and plan.best.filter(pl.col("scope") == "group")["feasible"].any():
        first = plan.best.filter(pl.col("scope") == "group", pl.col("feasible")).row(0, named=True)
        keys = plan.curves.columns[: plan.curves.columns.index("allocation")]
        group = {k: first[k] for k in keys}
        specs.append(
            FigureSpec(
                "noise_plan",
                "Interval width against cost",
                f"Predicted width of the interval of the mean of {first['model']} "
                f"({first['dataset']}) against the number of model calls, as items are added to "
                "each allocation of prompt variants and runs; the dashed line is the report's "
                "target and the diamond the cheapest design that reaches it.",
                "noise",
                lambda pal: plots.plot_plan(plan, group=group),
            )
        )
    return specs


def _default_figures(report: ReportContents) -> list[FigureSpec]:
    from evalstats import plots

    if "audit" not in report:
        return []
    res = report["audit"].objects["audit"]
    level = f"{res.confidence_level:.0%}"
    specs = [
        FigureSpec(
            "default_scores",
            "Default configuration against all configurations",
            f"Mean accuracy over configurations with its {level} interval (dots and bars) and "
            "the score at the default configuration (black diamonds).",
            "audit",
            lambda pal: plots.plot_intervals(res, palette=pal),
        )
    ]
    if res.pairs.height:
        specs.append(
            FigureSpec(
                "default_differences",
                "Model differences: default configuration against all configurations",
                f"Mean difference of each model pair over configurations with its {level} "
                "interval, and the difference at the default configuration (black diamonds).",
                "audit",
                lambda pal: plots.plot_differences(res),
            )
        )
    return specs


def _provider_figures(report: ReportContents) -> list[FigureSpec]:
    from evalstats import plots

    if "providers" not in report:
        return []
    result = report["providers"]
    if result.params["provider"] == "model":  # errors audited per model: no provider axis
        return []
    res = result.objects["providers"]
    specs = [
        FigureSpec(
            "provider_scores",
            "Accuracy per provider under two error policies",
            f"Mean accuracy per model and provider with its {res.confidence_level:.0%} "
            f"interval ({res.method}): errors scored as failures (circles) or left out "
            "(squares).",
            "providers",
            lambda pal: plots.plot_provider_comparison(res, palette=pal),
        )
    ]
    if res.tail_quality.height:
        specs.append(
            FigureSpec(
                "tail_quality",
                "Accuracy within a latency budget",
                "Share of calls answered correctly within latency t (errors count as wrong), "
                "per model (colour) and provider (line style).",
                "providers",
                lambda pal: plots.plot_tail_quality(res, palette=pal),
            )
        )
    return specs


def figure_specs(report: ReportContents) -> list[FigureSpec]:
    """The figures of ``report``, in report order."""
    return [
        *_prompt_figures(report),
        *_stability_figures(report),
        *_factor_figures(report),
        *_model_figures(report),
        *_noise_figures(report),
        *_default_figures(report),
        *_provider_figures(report),
    ]
