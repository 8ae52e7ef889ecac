"""Forest figures of intervals (mean with its interval per model), paged and paneled."""

from __future__ import annotations

from typing import Any

import polars as pl

from evalstats.report._layout import (
    FigureSpec,
    cells_of,
    chunks,
    datasets_of,
    fit_titles,
    marker_legend,
    named_rows_height,
    paged,
    panel_labels,
    panels,
    panels_per_page,
    per_dataset,
    row_pages,
)

__all__ = ["forest"]


def forest(
    key: str, title: str, caption: str, analysis: str, t: pl.DataFrame, total: str
) -> list[FigureSpec]:
    """Intervals of :func:`~evalstats.plots.plot_intervals`, paged.

    Several models and datasets: one panel per dataset, models in the frame's order, two
    panels to a row. One model: a row per dataset. Otherwise one forest cut into pages of rows.
    """
    from evalstats import plots
    from evalstats.plots.compare import _group_columns, _group_value

    datasets = list(dict.fromkeys(t["dataset"].to_list())) if "dataset" in t.columns else []
    defaults = "default_score" in t.columns
    # several metrics are never drawn on one axis: a panel per dataset and metric
    multi = "metric" in t.columns and t["metric"].n_unique() > 1 and bool(datasets)
    # each setting held apart (a provider, a temperature) is a panel of its own
    held = [c for c in _group_columns(t, "model") if c != "dataset" and t[c].n_unique() > 1]
    keys = ["dataset", *(["metric"] if multi else []), *held]
    cells = list(dict.fromkeys(t.select(keys).iter_rows())) if datasets else []
    if held:  # datasets in the table's order, each one's settings in order of their values
        cells.sort(key=lambda c: (datasets.index(c[0]), [str(v) for v in c[1:]]))
    if len(cells) > 1 and (t["model"].n_unique() > 1 or multi):
        n_rows = int(t.group_by(keys).len()["len"].max() or 1)
        height = named_rows_height(t["model"], n_rows)

        def draw_panels(page: list[tuple], pal: dict[str, Any]) -> Any:
            fig, axes = panels(len(page), width=3.5, height=height)
            for ax, cell in zip(axes, page):
                here = pl.all_horizontal([pl.col(k).eq_missing(v) for k, v in zip(keys, cell)])
                plots.plot_intervals(t.filter(here), ax=ax, palette=pal)
                panel_labels(ax, ", ".join(_group_value(k, v) for k, v in zip(keys, cell)), n_rows)
            fit_titles(axes)  # a long name (a HELM scenario) breaks, never runs over
            if defaults:  # one legend for the diamonds, below the panels
                marker_legend(fig, axes)
            return fig

        return paged(
            key,
            title,
            caption
            + (" One panel per dataset and metric" if multi else " One panel per dataset")
            + (f" and {', '.join(held)}." if held else "."),
            analysis,
            chunks(cells, panels_per_page(height)),
            draw_panels,
            cells_of,
            total,
        )
    if len(datasets) > 1:

        def draw_one_model(page: pl.DataFrame, pal: dict[str, Any]) -> Any:
            name = str(page["model"][0])
            rows = per_dataset(page, name)
            colour = {d: pal.get(name) for d in rows["model"].to_list()}
            fig = plots.plot_intervals(rows, palette=colour)
            fig.axes[0].set_title(name, fontsize="small")
            fig.axes[0].set_ylabel("Dataset")
            return fig

        return paged(
            key, title, caption, analysis, row_pages(t), draw_one_model, datasets_of, total
        )
    return paged(
        key,
        title,
        caption,
        analysis,
        row_pages(t),
        lambda page, pal: plots.plot_intervals(page, palette=pal),
        datasets_of,
        total,
    )
