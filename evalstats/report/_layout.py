"""Page layout of the report's figures: specs, pages of rows or panels, one legend per figure.

A figure larger than a page is split into pages (:func:`paged`), rows of one dataset kept
together (:func:`row_pages`); small multiples share one legend below their panels
(:func:`one_legend`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import polars as pl

__all__ = [
    "FigureSpec",
    "cells_span",
    "chunks",
    "datasets_of",
    "marker_legend",
    "named_rows_height",
    "fit_titles",
    "legend_columns",
    "one_legend",
    "paged",
    "panel_labels",
    "panels",
    "panels_per_page",
    "per_dataset",
    "row_pages",
    "span",
]

#: Rows of one page of a forest plot (one row per model, pair or group): at 0.3 inch a row
#: and 0.26 inch for 32 they fill a page (:data:`evalstats.plots._style.PAGE_HEIGHT_IN`).
_ROWS_PER_PAGE = 32

#: Panels of one page of small multiples (two columns of three).
PANELS_PER_PAGE = 6

#: Pages a figure is split into at most; what does not fit is in the tables (the caption says
#: which groups are drawn).
_MAX_PAGES = 4


@dataclass(frozen=True, slots=True)
class FigureSpec:
    """A figure of the report: file name, title, caption, the analysis it shows, how to draw."""

    key: str
    title: str
    caption: str
    analysis: str
    draw: Callable[[dict[str, Any]], Any]  # palette -> matplotlib Figure


def panels(n: int, *, width: float = 3.4, height: float = 2.7, ncol_max: int = 2) -> Any:
    from evalstats.plots._style import PAGE_HEIGHT_IN, PAGE_WIDTH_IN, require_plotting

    plt, _ = require_plotting()
    ncol = min(ncol_max, n)
    nrow = -(-n // ncol)
    fig, axes = plt.subplots(
        nrow,
        ncol,
        figsize=(min(PAGE_WIDTH_IN, width * ncol), min(PAGE_HEIGHT_IN, height * nrow)),
        squeeze=False,
        layout="constrained",
    )
    flat = list(axes.ravel())
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def chunks(items: list[Any], size: int) -> list[list[Any]]:
    return [items[i : i + size] for i in range(0, len(items), max(size, 1))]


def row_pages(frame: pl.DataFrame, by: str = "dataset") -> list[pl.DataFrame]:
    """``frame`` cut into pages of at most :data:`_ROWS_PER_PAGE` rows.

    Whole ``by`` groups stay together where they fit.
    """
    if by not in frame.columns:
        return [frame[i : i + _ROWS_PER_PAGE] for i in range(0, frame.height, _ROWS_PER_PAGE)]
    pages: list[pl.DataFrame] = []
    current: list[pl.DataFrame] = []
    rows = 0
    for (_,), group in frame.group_by(by, maintain_order=True):
        n_parts = -(-group.height // _ROWS_PER_PAGE)
        size = -(-group.height // n_parts)  # equal parts, not a full page and a scrap
        for part in (group[i : i + size] for i in range(0, group.height, size)):
            if current and rows + part.height > _ROWS_PER_PAGE:
                pages.append(pl.concat(current))
                current, rows = [], 0
            current.append(part)
            rows += part.height
    if current:
        pages.append(pl.concat(current))
    return pages or [frame]


def paged(
    key: str,
    title: str,
    caption: str,
    analysis: str,
    pages: list[Any],
    draw: Callable[[Any, dict[str, Any]], Any],
    describe: Callable[[Any], str],
    total: str,
) -> list[FigureSpec]:
    """One spec per page (``key``, ``key_2``, ...), at most :data:`_MAX_PAGES`.

    The last caption says so when groups are left out.
    """
    shown = pages[:_MAX_PAGES]
    specs = []
    for i, page in enumerate(shown):
        if len(pages) == 1:
            k, t, c = key, title, caption
        else:
            k = key if i == 0 else f"{key}_{i + 1}"
            t = f"{title} ({i + 1} of {len(shown)})"
            c = f"{caption} This page: {describe(page)}."
            if len(pages) > len(shown) and i == len(shown) - 1:
                c += f" The first {len(shown)} pages are drawn; {total} has every group."
        specs.append(
            FigureSpec(k, t, c, analysis, lambda pal, page=page: said_once(draw(page, pal)))
        )
    return specs


def span(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{names[0]} to {names[-1]} ({len(names)} datasets)"


def cells_span(page: list[tuple[str, dict[str, Any]]]) -> str:
    """'d0 to d1 (4 panels)' for panels of a dataset and the settings held fixed there."""
    names = [
        d + (f" ({', '.join(f'{k} {v}' for k, v in held.items())})" if held else "")
        for d, held in page
    ]
    if len(names) == 1:
        return names[0]
    unit = "datasets" if not any(held for _, held in page) else "panels"
    return f"{names[0]} to {names[-1]} ({len(names)} {unit})"


def by_rank(frame: pl.DataFrame, rank: dict[str, int], *models: str) -> pl.DataFrame:
    """``frame`` sorted by dataset (and metric), then by the models' rank."""
    keys = [c for c in ("dataset", "metric") if c in frame.columns]
    order = [
        pl.col(m).replace_strict(rank, default=len(rank)).alias(f"_r{i}")
        for i, m in enumerate(models)
    ]
    tmp = frame.with_columns(order)
    return tmp.sort([*keys, *(f"_r{i}" for i in range(len(models)))]).drop(
        [f"_r{i}" for i in range(len(models))]
    )


def cells_of(page: list[tuple]) -> str:
    """'d0 to d1 (2 datasets)', or with metrics 'd0, acc to d1, f1 (4 panels)'."""
    names = [", ".join(str(v) for v in cell) for cell in page]
    if len(page[0]) == 1:
        return span(names)
    return names[0] if len(names) == 1 else f"{names[0]} to {names[-1]} ({len(names)} panels)"


def datasets_of(frame: pl.DataFrame) -> str:
    if "dataset" not in frame.columns:
        return f"{frame.height} rows"
    return span(list(dict.fromkeys(frame["dataset"].to_list())))


def one_legend(fig: Any, axes: list[Any], pal: dict[str, Any], ranked: list[str]) -> None:
    """Replace the panels' legends by one legend below them.

    It lists the coloured models in rank order, one entry for the grey ones, and the other
    labelled lines (ε) once.
    """
    from matplotlib.lines import Line2D

    from evalstats.plots._style import OTHER_COLOR

    for ax in axes:
        if ax.get_legend() is not None:
            ax.get_legend().remove()
    drawn = {line.get_label() for ax in axes for line in ax.get_lines()}
    coloured = [m for m in ranked if m in drawn and pal.get(m) != OTHER_COLOR]
    handles = [Line2D([], [], color=pal[m], label=m) for m in coloured]
    if any(m in drawn and pal.get(m) == OTHER_COLOR for m in ranked):
        handles.append(Line2D([], [], color=OTHER_COLOR, label="other models"))
    seen = set(ranked)
    for line in axes[0].get_lines() if axes else []:
        name = line.get_label()
        if name not in seen and not name.startswith("_"):
            seen.add(name)
            handles.append(
                Line2D([], [], color=line.get_color(), linestyle=line.get_linestyle(), label=name)
            )
    if handles:
        fig.legend(
            handles=handles,
            loc="outside lower center",
            ncol=legend_columns(fig, [h.get_label() for h in handles], 4),
            fontsize="x-small",
            frameon=False,
        )


def _char_width(size: str | float) -> float:
    """The mean width (inches) of a character of the sans-serif font at ``size``."""
    from matplotlib.font_manager import FontProperties

    return 0.55 * FontProperties(size=size).get_size_in_points() / 72


def legend_columns(fig: Any, labels: list[str], most: int) -> int:
    """The most columns (up to ``most``) whose widest entries fit side by side in the figure.

    A legend wider than its figure reaches beyond the canvas: cut off in a PNG drawn once, or
    drawn twice to hold it. Each entry is estimated as its handle (0.45 inch with the gaps)
    and its text.
    """
    widths = sorted((0.45 + _char_width("x-small") * len(t) for t in labels), reverse=True)
    room = fig.get_size_inches()[0] - 0.1
    for ncol in range(min(most, len(labels)), 1, -1):
        if sum(widths[:ncol]) <= room:
            return ncol
    return 1


def fit_titles(axes: list[Any]) -> None:
    """Break panel titles wider than their panel after spaces or ``, : _ - / .``.

    A HELM scenario (``commonsense:dataset=hellaswag,method=multiple_choice_joint``) has no
    space to break at: its title ran over the next panel's. Names are cut inside a part only
    where a part is longer than the panel (:func:`evalstats.plots._style.wrap_label`).
    """
    from evalstats.plots._style import wrap_label

    for ax in axes:
        title = ax.get_title()
        if not title:
            continue
        size = ax.title.get_fontsize()
        fits = int(ax.get_position().width * ax.figure.get_size_inches()[0] / _char_width(size))
        if len(title) > fits > 10:
            ax.set_title("\n".join(wrap_label(title, fits)), fontsize=size)


def shared_axis_labels(fig: Any, axes: list[Any]) -> None:
    """Labels said once in a grid of panels: x under each column, y left of the first.

    In a grid whose panels' labels all say the same, the x label stays only under the lowest
    panel of each column and the y label only left of the first column. Six copies of "Number
    of variants n" and of the y label say nothing the first did not, and each costs a text to
    lay out and draw in every format. Labels that differ stay. So do row names: panels whose
    rows are the same names at the same places (the models of a forest or of box plots, in
    the report's order) name them left of the first column only, as a shared y axis would.
    (``fig.supxlabel`` would say it once, but the layout engine puts it on top of a legend
    below the panels.)
    """
    if len(axes) < 2:
        return
    spans = [ax.get_subplotspec() for ax in axes]
    if any(s is None for s in spans):
        return
    rows = [s.rowspan.start for s in spans]
    cols = [s.colspan.start for s in spans]
    lowest = {c: max(r for r, c2 in zip(rows, cols) if c2 == c) for c in set(cols)}
    first = min(cols)
    for get, clear, keep in (
        ("get_xlabel", "set_xlabel", [rows[i] == lowest[cols[i]] for i in range(len(axes))]),
        ("get_ylabel", "set_ylabel", [cols[i] == first for i in range(len(axes))]),
    ):
        labels = {getattr(ax, get)() for ax in axes}
        if len(labels) == 1 and labels.pop():
            for ax, k in zip(axes, keep):
                if not k:
                    getattr(ax, clear)("")
    # the same row names down every panel (models in the report's order) are named once, left
    # of the first column, as a shared y axis would: beside every panel they took a quarter of
    # a page's width and of its text to lay out and draw
    from matplotlib.ticker import FixedLocator

    def named(ax: Any) -> Any:
        """Its rows' names, places and span; None for a numeric axis (labels made at drawing)."""
        loc = ax.yaxis.get_major_locator()
        if not isinstance(loc, FixedLocator):
            return None
        fmt = ax.yaxis.get_major_formatter()
        locs = tuple(float(v) for v in loc.locs)
        return tuple(fmt(v, i) for i, v in enumerate(locs)), locs, tuple(ax.get_ylim())

    rows_named = {named(ax) for ax in axes}
    if len(rows_named) == 1 and None not in rows_named and any(next(iter(rows_named))[0]):
        for ax, c in zip(axes, cols):
            if c != first:
                ax.tick_params(axis="y", labelleft=False)


def said_once(fig: Any) -> Any:
    """``fig`` with :func:`shared_axis_labels` applied to its visible panels."""
    shared_axis_labels(fig, [ax for ax in fig.axes if ax.get_visible()])
    return fig


def named_rows_height(names: Any, n_rows: int) -> float:
    """Height (inches) of a panel of ``n_rows`` rows named by ``names`` (models), as drawn.

    Each name wrapped as the forest and bar figures wrap it
    (:func:`evalstats.plots._style.tick_labels`), each row as tall as the most lines of one
    (:func:`evalstats.plots._style.row_panel_height`), measured at the report's type sizes.
    """
    from evalstats.plots._style import paper_style, row_panel_height, tick_labels

    _, _, lines = tick_labels(sorted({str(n) for n in names if n is not None}))
    with paper_style():
        return row_panel_height(n_rows, lines)


def panels_per_page(height: float) -> int:
    """Panels of ``height`` inches on one page, two to a row."""
    return 2 * max(1, int(8.6 // height))


def panel_labels(ax: Any, title: str, n_rows: int) -> None:
    ax.set_title(title, fontsize="small")
    ax.set_ylabel("")
    ax.tick_params(axis="y", labelsize="x-small" if n_rows > 16 else "small")
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(nbins=4))  # half a page wide: labels apart


def per_dataset(frame: pl.DataFrame, model: str) -> pl.DataFrame:
    """One model's rows with the dataset in the ``model`` column, so each row is named by it."""
    return frame.with_columns(
        pl.col("dataset").cast(pl.String).alias("model"), pl.lit(model).alias("dataset")
    )


def marker_legend(fig: Any, axes: list[Any]) -> None:
    """Replace the panels' legends by one below them, listing each labelled marker once."""
    from matplotlib.lines import Line2D

    handles: dict[str, Any] = {}
    for ax in axes:
        if ax.get_legend() is not None:
            ax.get_legend().remove()
        for line in ax.get_lines():
            name = line.get_label()
            if not name.startswith("_") and name not in handles:
                handles[name] = Line2D(
                    [],
                    [],
                    linestyle="none",
                    marker=line.get_marker(),
                    markersize=line.get_markersize(),
                    color=line.get_color(),
                    label=name,
                )
    if handles:
        fig.legend(
            handles=list(handles.values()),
            loc="outside lower center",
            ncol=len(handles),
            fontsize="x-small",
            frameon=False,
        )


def by_metric(page: pl.DataFrame, draw_one: Callable[..., Any]) -> Any:
    """``draw_one(page)``, or with several metrics one stacked panel per metric.

    A difference in BLEURT and one in accuracy are not on one scale: drawn on one axis (its
    label "score (2 metrics)") they read as comparable. Panels share the page's height in
    proportion to their rows.
    """
    from evalstats.plots._style import (
        PAGE_HEIGHT_IN,
        PAGE_WIDTH_IN,
        require_plotting,
        tick_labels,
    )

    if "metric" not in page.columns or page["metric"].n_unique() < 2:
        return draw_one(page)
    plt, _ = require_plotting()
    parts = [g for _, g in page.group_by("metric", maintain_order=True)]
    # a row per pair, as tall as its wrapped label ("a − b (dataset)")
    dataset = pl.col("dataset") if "dataset" in page.columns else pl.lit("")
    label = pl.format("{} − {} ({})", "model_a", "model_b", dataset)
    _, _, lines = tick_labels(page.select(label)[:, 0].to_list())
    heights = [0.7 + 0.3 * lines * g.height for g in parts]
    fig, axes = plt.subplots(
        len(parts),
        1,
        figsize=(PAGE_WIDTH_IN, min(PAGE_HEIGHT_IN, sum(heights))),
        height_ratios=heights,
        squeeze=False,
        layout="constrained",
    )
    for ax, part in zip(axes[:, 0], parts):
        draw_one(part, ax=ax)
        ax.set_title(str(part["metric"][0]), fontsize="small")
    return fig
