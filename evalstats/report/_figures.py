"""The report's figures: which plot functions draw which results, with titles and captions.

Every figure is drawn by a public function of :mod:`evalstats.plots` from the analyses' result
tables, with one colour per model across all figures (:func:`evalstats.plots.model_colors`
of every model in the data).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from evalstats.report._basis import MIN_RANGE_ITEMS
from evalstats.report._forest import forest
from evalstats.report._layout import (
    PANELS_PER_PAGE,
    FigureSpec,
    by_metric,
    by_rank,
    cells_span,
    chunks,
    datasets_of,
    fit_titles,
    named_rows_height,
    one_legend,
    paged,
    panel_labels,
    panels,
    panels_per_page,
    per_dataset,
    row_pages,
    shared_axis_labels,
    span,
)
from evalstats.report._metric_words import noun, with_metric
from evalstats.report._palette import GREY_NOTE, ranked_models, report_palette, top_k

if TYPE_CHECKING:
    from evalstats.report._model import ReportContents

__all__ = ["FigureSpec", "figure_specs", "ranked_models", "report_palette"]

#: At most this many panels in one figure of per-group histograms.
_MAX_HIST_PANELS = 6

#: With more models than :data:`~evalstats.plots._style.TOP_K`, the difference plots draw the
#: pairs among this many best models only (the full table has every pair).
_TOP_PAIRS = 5


def _prompt_figures(report: ReportContents) -> list[FigureSpec]:
    from evalstats import plots

    specs: list[FigureSpec] = []
    many = len(report.data.models) > top_k()
    if "moments" in report:
        from evalstats.report._sparse import figure_units, sparse_caption

        units = figure_units(report.units, report["moments"])
        from evalstats.moments import SPREAD_COLUMNS
        from evalstats.plots.moments import spread_orientation, spread_panel_height

        # settings the analysis held fixed (decoding, serving) get panels of their own, so that
        # a box holds the variants of one group of the moments table
        held = [
            c
            for c in report["moments"].tables["moments"].columns
            if c not in (*SPREAD_COLUMNS, "model", "dataset", "metric") and c in units.columns
        ]
        if "metric" in units.columns and units["metric"].n_unique() > 1:
            held = ["metric", *held]  # a panel per metric: scores of two metrics never pooled
        cells = (
            [
                (r.pop("dataset"), r)
                for r in units.select("dataset", *held)
                .unique()
                .sort(["dataset", *held], nulls_last=True)
                .iter_rows(named=True)
            ]
            if units.height
            else []
        )
        ranked = ranked_models(report)
        # one orientation on every page (many models or long names: boxes lie down the y
        # axis); as many rows of panels as fit a page, each as tall as its most models and
        # their names need
        rows = units.group_by("dataset", *held).agg(pl.col("model").n_unique())["model"].max()
        with plots.paper_style():
            orient = spread_orientation(ranked, rows=rows or 1)
            height = spread_panel_height(ranked, rows=rows or 1, horizontal=orient == "h")
        per_page = 2 * max(1, int(8.4 // height))

        def draw_spread(page: list[tuple[str, dict[str, Any]]], pal: dict[str, Any]) -> Any:
            keys = pl.DataFrame(
                [{"dataset": d, **where} for d, where in page],
                schema={"dataset": units.schema["dataset"], **{c: units.schema[c] for c in held}},
            )
            sub = units.join(keys, on=["dataset", *held], nulls_equal=True)
            order = [m for m in ranked if m in set(sub["model"])]  # best first on every page
            return plots.plot_prompt_spread(
                sub, palette=pal, col_wrap=2, panel_by=held, order=order, orient=orient
            )

        specs += paged(
            "prompt_spread",
            "Accuracy over prompt variants",
            "Accuracy of each prompt variant (runs averaged), one box per model, one panel "
            "per dataset"
            + (" and metric" if "metric" in held else "")
            + (
                f" and setting of {', '.join(c for c in held if c != 'metric')}"
                if [c for c in held if c != "metric"]
                else ""
            )
            + ". Boxes span the quartiles, whiskers 1.5 times the interquartile "
            "range; points beyond them are single variants."
            + sparse_caption(report["moments"])
            + (GREY_NOTE if many else ""),
            "moments",
            chunks(cells, per_page),
            draw_spread,
            cells_span,
            "tables/moments.csv",
        )
    if "nstar" in report:
        nstar = report["nstar"]
        curve, table = nstar.tables["curve"], nstar.tables["nstar"]
        from evalstats.report._sparse import sparse_caption
        from evalstats.resampling import CURVE_COLUMNS

        # settings held fixed (decoding, serving) are groups of their own: a panel each
        known = (*CURVE_COLUMNS, "model", "dataset", "metric", "scores")
        held = [c for c in curve.columns if c not in known]
        cells = (
            curve.select("dataset", *held)
            .unique()
            .sort(["dataset", *held], nulls_last=True)
            .iter_rows(named=True)
        )
        datasets = [(r.pop("dataset"), r) for r in cells]
        ranked = ranked_models(report)

        def draw(page: list[tuple[str, dict[str, Any]]], pal: dict[str, Any]) -> Any:
            fig, axes = panels(len(page))
            for ax, (d, where) in zip(axes, page):
                plots.plot_convergence_overlay(
                    curve, table, dataset=d, moment="mean", ax=ax, palette=pal, where=where
                )
            shared_axis_labels(fig, axes)  # before the legend, which goes below the label
            fit_titles(axes)
            one_legend(fig, axes, pal, ranked)
            return fig

        eps_values = table.filter(pl.col("moment") == "mean")["epsilon"].unique().drop_nulls()
        eps = f"ε = {eps_values[0]:.4g}" if eps_values.len() == 1 else "each metric's ε"
        what = noun(report)
        specs += paged(
            "convergence",
            "Convergence of the mean over prompt variants",
            f"Mean distance |Δ(n)| between the mean {what} over n sampled variants and over "
            f"all variants, with its {1 - nstar.params['delta']:.0%} band, per model; the "
            f"dashed line is {eps} and the dots mark n*, the fewest variants whose "
            "band stays below ε." + sparse_caption(nstar) + (GREY_NOTE if many else ""),
            "nstar",
            chunks(datasets, PANELS_PER_PAGE),
            draw,
            cells_span,
            "tables/nstar_curve.csv",
        )
    return specs


#: Datasets above which the agreement heatmap gives each dataset a row instead of a column.
_WIDE_DATASETS = 12


def _stability_figures(report: ReportContents) -> list[FigureSpec]:
    from evalstats import plots
    from evalstats.plots.stability import fit_category_labels, fit_heatmap_cells

    specs = []
    if "stability" in report:
        table = report["stability"].tables["stability"]
        # agreement over a handful of shared items is no finding (the reading leaves them out)
        if "n_items" in table.columns:
            table = table.filter(pl.col("n_items") >= MIN_RANGE_ITEMS)
        values = [c for c in ("tar_a", "tar_r") if table[c].drop_nulls().drop_nans().len()]
        if values:
            one_cell = table.group_by("model", "dataset").len()["len"].max() == 1
            many = len(report.data.models) > top_k()
            if many and not one_cell:
                # a box per model and dataset does not fit: the mean over configurations
                means = table.group_by("model", "dataset").agg(
                    pl.col(v).drop_nans().mean() for v in values
                )
                small = means["dataset"].n_unique() <= 10 and means["model"].n_unique() <= 24
                order = ranked_models(report)  # best first, as in the other figures

                def draw(pal: dict[str, Any]) -> Any:
                    fig, axes = panels(len(values), width=7.0, height=4.4, ncol_max=1)
                    for ax, v in zip(axes, values):
                        plots.plot_tar_heatmap(
                            means, value=v, ax=ax, annot=small, row_order=order, fit=False
                        )
                    fit_heatmap_cells(fig)  # to the cells as all panels leave them
                    return fig

                caption = (
                    "Share of items with the same parsed answer (TARa@N) or the same raw "
                    "response (TARr@N) in all N runs, in percent, per model and dataset: the "
                    "mean over the configurations (prompt variants) of each cell; "
                    "tables/stability.csv has each configuration."
                )
            elif one_cell:
                # many datasets: a row each (42 slanted names under two narrow columns of
                # cells overprinted one another), the models across
                tall = table["dataset"].n_unique() > _WIDE_DATASETS
                n_rows = table["dataset"].n_unique()

                def draw(pal: dict[str, Any]) -> Any:
                    if tall:
                        fig, axes = panels(
                            len(values), width=3.6, height=1.2 + 0.22 * n_rows, ncol_max=2
                        )
                        for ax, v in zip(axes, values):
                            plots.plot_tar_heatmap(
                                table, value=v, ax=ax, x="model", y="dataset", fit=False
                            )
                    else:
                        fig, axes = panels(len(values))
                        for ax, v in zip(axes, values):
                            plots.plot_tar_heatmap(table, value=v, ax=ax, fit=False)
                    fit_heatmap_cells(fig)
                    return fig

                caption = (
                    "Share of items with the same parsed answer (TARa@N) or the same raw "
                    "response (TARr@N) in all N runs, in percent, per model and dataset."
                )
            else:

                def draw(pal: dict[str, Any]) -> Any:
                    fig, axes = panels(len(values))
                    for ax, v in zip(axes, values):
                        plots.plot_stability_distribution(table, value=v, ax=ax, palette=pal)
                    for ax in axes[:-1]:  # the same models in each panel: one legend, last
                        if ax.get_legend() is not None:
                            ax.get_legend().remove()
                    fit_category_labels(fig)  # to the slots as all panels leave them
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
                    f"Mean {noun(report)} in each cell of {term}, the two-way term with the "
                    "largest η².",
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

    specs: list[FigureSpec] = []
    ranked = ranked_models(report)
    rank = {m: i for i, m in enumerate(ranked)}
    many = len(ranked) > top_k()
    if "intervals" in report:
        res = report["intervals"]
        t = with_metric(by_rank(res.tables["intervals"], rank, "model"), report)
        # the method and unit actually used (the parameters may say 'auto')
        used = ", ".join(t["method"].unique(maintain_order=True).to_list()) or "no"
        over = t["over"][0] if t.height else res.params["over"]
        caption = (
            f"Mean {noun(report)} per model with its {res.params['confidence_level']:.0%} "
            f"{used} interval over {over}."
            + (
                " Models without an interval (see the table's note) show the mean only."
                if t["ci_low"].is_nan().any()
                else ""
            )
            + (GREY_NOTE if many else "")
        )
        specs += forest(
            "intervals",
            f"Mean {noun(report)} with confidence intervals",
            caption,
            "intervals",
            t,
            "tables/intervals.csv",
        )
    if "compare" in report:
        res = report["compare"]
        t = res.tables["compare"]
        note = ""
        if many:
            top = set(ranked[:_TOP_PAIRS])
            t = t.filter(pl.col("model_a").is_in(top) & pl.col("model_b").is_in(top))
            note = (
                f" Pairs among the {_TOP_PAIRS} best models by mean score only; "
                "tables/compare.csv has every pair."
            )
        t = with_metric(by_rank(t, rank, "model_a", "model_b"), report)
        specs += paged(
            "differences",
            "Paired differences between models",
            f"Mean difference of each model pair (paired on {res.params['paired_on']}) "
            f"with its {res.params['confidence_level']:.0%} interval; the dashed line is no "
            "difference." + note,
            "compare",
            row_pages(t),
            lambda page, pal: by_metric(page, plots.plot_differences),
            datasets_of,
            "tables/compare.csv",
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


def _cell_text(cell: dict[str, Any] | str) -> str:
    """A noise panel's title: its group's values (a missing one as '–'), or its own text."""
    from evalstats.plots.compare import _group_value

    if isinstance(cell, str):
        return cell
    return ", ".join(_group_value(k, v) for k, v in cell.items())


def _noise_figures(report: ReportContents) -> list[FigureSpec]:
    from evalstats import plots

    if "noise" not in report:
        return []
    from evalstats.plots.noise import components_legend

    res = report["noise"]
    rank = {m: i for i, m in enumerate(ranked_models(report))}  # the models' rows best first
    comps = by_rank(res.tables["components"], rank, "model")
    datasets: list[Any] = [{"dataset": d} for d in sorted(comps["dataset"].unique().to_list())]

    n_models = max(1, comps.filter(pl.col("model_b").is_null())["model"].n_unique())
    one = n_models == 1
    # several metrics: a panel per dataset and metric (one for all ran labels together, HELM)
    multi = "metric" in comps.columns and comps["metric"].n_unique() > 1
    # each setting held apart (a provider) is a panel of its own, never a second bar per model
    by = res.params.get("by", ())
    held = [
        c
        for c in ((by,) if isinstance(by, str) else by)
        if c not in ("model", "dataset", "metric") and c in comps.columns
        and comps[c].n_unique() > 1
    ]  # fmt: skip
    keys = ["dataset", *(["metric"] if multi else []), *held]
    if (multi or held) and not one:
        # a group's values as they are: a setting missing for some groups (doc_set on one
        # GPQA task only) is a panel of its own, matched as missing (its text 'None' matched
        # no row, and the figure was not drawn)
        datasets = comps.select(keys).unique().sort(keys, nulls_last=True).rows(named=True)
    n_bars = comps.select("dataset", *(["metric"] if multi else [])).n_unique()
    if one:  # one bar per dataset (and metric) in one panel
        datasets = [", ".join(sorted(comps["dataset"].unique().to_list()))] if datasets else []
    # two columns of panels, as many rows as fit a page
    # (one model: a dataset a row, room for a name wrapped on two lines)
    # (one model: the x label on two lines and the legend with its title below the bars; at
    # 0.85 in plus the bars they overlapped on a one-dataset sparse MMLU report)
    height = 1.35 + 0.3 * n_bars if one else named_rows_height(comps["model"], n_models)
    per_page = panels_per_page(height)

    def draw_components(page: list[Any], pal: dict[str, Any]) -> Any:
        fig, axes = panels(len(page), width=7.0 if one else 3.5, height=height)
        for ax, d in zip(axes, page):
            if one:  # a bar per dataset, labelled by the dataset alone
                name = str(comps["model"][0])
                plots.plot_noise_components(per_dataset(comps, name), ax=ax)
                panel_labels(ax, name, n_bars)
                continue
            here = comps.filter(pl.all_horizontal([pl.col(k).eq_missing(v) for k, v in d.items()]))
            plots.plot_noise_components(here, ax=ax)
            panel_labels(ax, _cell_text(d), n_models)
        fit_titles(axes)
        components_legend(fig, axes, comps.filter(pl.col("model_b").is_null()))
        return fig

    specs = paged(
        "noise_components",
        "Where the variance of an item score comes from",
        "Variance components of item scores per model, one panel per dataset: items, prompt "
        "variants, their interaction and run-to-run noise (runs within an item and prompt). "
        "A component the design cannot separate is left out of its bar.",
        "noise",
        chunks(datasets, per_page),
        draw_components,
        lambda names: span([_cell_text(n) for n in names]),
        "tables/noise_components.csv",
    )
    plan = res.objects.get("plan")
    # the first group with a plan to draw: feasible, and with variance (a group of constant
    # scores has zero-width intervals at any cost)
    shown = (
        plan.best.filter(pl.col("scope") == "group", pl.col("feasible"), pl.col("se") > 0)
        if plan is not None
        else None
    )
    if shown is not None and shown.height:
        first = shown.row(0, named=True)
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
    ranked = ranked_models(report)
    rank = {m: i for i, m in enumerate(ranked)}
    many = len(ranked) > top_k()
    specs = forest(
        "default_scores",
        "Default configuration against all configurations",
        f"Mean {noun(report)} over configurations with its {level} interval (dots and bars) and "
        "the score at the default configuration (black diamonds)." + (GREY_NOTE if many else ""),
        "audit",
        by_rank(res.models, rank, "model"),
        "tables/audit_models.csv",
    )
    pairs = res.pairs
    note = ""
    if many:
        top = set(ranked[:_TOP_PAIRS])
        pairs = pairs.filter(pl.col("model_a").is_in(top) & pl.col("model_b").is_in(top))
        note = (
            f" Pairs among the {_TOP_PAIRS} best models by mean score only; "
            "tables/audit_pairs.csv has every pair."
        )
    if pairs.height:
        specs += paged(
            "default_differences",
            "Model differences: default configuration against all configurations",
            f"Mean difference of each model pair over configurations with its {level} "
            "interval, and the difference at the default configuration (black diamonds)." + note,
            "audit",
            row_pages(by_rank(pairs, rank, "model_a", "model_b")),
            lambda page, pal: by_metric(page, plots.plot_differences),
            datasets_of,
            "tables/audit_pairs.csv",
        )
    return specs


#: At most this many per-model provider figures (the tables hold every model).
_MAX_PROVIDER_FIGURES = 12


def _provider_figures(report: ReportContents) -> list[FigureSpec]:
    from evalstats import plots

    if "providers" not in report:
        return []
    result = report["providers"]
    if result.params["provider"] == "model":  # errors audited per model: no provider axis
        return []
    res = result.objects["providers"]
    models = sorted({str(m) for m in res.policies["model"].to_list()})
    col = str(result.params["provider"])
    # the compared column named as it is: a provider, or a setting's levels (Temperature 0.7)
    what, each = (
        ("Providers", "provider") if col.lower() == "provider" else (f"{col} levels", "level")
    )
    specs = []
    for k, model in enumerate(models[:_MAX_PROVIDER_FIGURES]):
        # one figure per model: its providers sorted, errors by class beside (40-80 rows read)
        specs.append(
            FigureSpec(
                "provider_scores" if k == 0 else f"provider_scores_{k + 1}",
                f"{what} of {model}: two error policies and the errors",
                f"{model}: mean {noun(report)} per {each} with its {res.confidence_level:.0%} "
                f"interval ({res.method}), errors scored as failures (filled circles) or left "
                f"out (open squares; a circle inside a square: no errors), {each}s sorted by "
                "the first; the reference in bold, labels red where lower than the reference "
                "beyond noise, blue where higher; right: the error rate stacked by class.",
                "providers",
                lambda pal, model=model: plots.plot_provider_audit(res, model=model),
            )
        )
    if res.tail_quality.height:
        specs.append(
            FigureSpec(
                "tail_quality",
                "Accuracy within a latency budget",
                "Share of calls answered correctly within latency t (errors count as wrong), "
                "per model (colour) and provider (line style); the axis stops where every curve is "
                "flat (99.5 % of its final share).",
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
