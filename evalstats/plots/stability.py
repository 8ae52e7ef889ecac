"""Figures of run-to-run stability: TAR heatmaps, correlation heatmap, run-accuracy histogram.

Every number drawn comes from :func:`evalstats.stability.stability_table`,
:func:`evalstats.correlation.correlation_matrix` and :func:`evalstats.normality.run_distribution`;
these functions only arrange and draw it (the llm-stability paper's Figures 2 to 6).
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np
import polars as pl

from evalstats.errors import ParameterError, SchemaError
from evalstats.plots._style import (
    COLORS,
    PAGE_HEIGHT_IN,
    PAGE_WIDTH_IN,
    fit_height,
    label,
    new_axes,
    outside_legend,
    plain_text,
    require_plotting,
    resolve_palette,
    slant_xticks,
    slanted_drop,
    tick_label_points,
    tick_labels,
)

__all__ = [
    "fit_category_labels",
    "fit_heatmap_cells",
    "plot_correlation_heatmap",
    "plot_run_distribution",
    "plot_stability_distribution",
    "plot_tar_heatmap",
]


def _need(frame: pl.DataFrame, columns: list[str], what: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise SchemaError(
            f"the {what} has no column {missing[0]!r} (columns: {', '.join(frame.columns)})."
        )


@plain_text
def plot_tar_heatmap(
    stability: pl.DataFrame,
    *,
    value: str = "tar_r",
    x: str = "dataset",
    y: str = "model",
    ax: Any = None,
    annot: bool = True,
    cmap: str = "viridis",
    row_order: list[str] | None = None,
    fit: bool = True,
) -> Any:
    """Heatmap of TARr@N or TARa@N, models by tasks (the paper's Figures 3 and 4).

    Parameters
    ----------
    stability : polars.DataFrame
        Result of :func:`evalstats.stability.stability_table`, one row per (y, x) cell.
    value : str, default 'tar_r'
        Column to colour by: ``tar_r``, ``tar_a`` or any column in [0, 1].
    x, y : str, default 'dataset', 'model'
        Columns for the heatmap's columns and rows (sorted).
    ax : matplotlib.axes.Axes, optional
        Draw here instead of a new figure.
    annot : bool, default True
        Write each cell's value (as a percentage) where it fits: with one decimal, else as a
        whole percentage, else (cells too narrow for 5-point text) not at all. Rows and
        columns without any value (configurations run once have no TAR) are left out.
    cmap : str, default 'viridis'
        Colour map; the colour scale spans [0, 1].
    row_order : list of str, optional
        Order of the rows (e.g. models best first, as the report's other figures); rows not
        in it follow by name. Default: by name.
    fit : bool, default True
        Size the cell numbers to the cells now (:func:`fit_heatmap_cells`, one layout pass of
        the figure). Drawing several panels into one figure, pass False and call
        ``fit_heatmap_cells(fig)`` once when every panel is drawn: later panels take room from
        the earlier ones, so only the last fit counts.

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    SchemaError
        If ``value``, ``x`` or ``y`` is not a column.
    ParameterError
        If a (y, x) cell has several rows (several variants: filter them first).

    Examples
    --------
    >>> from evalstats.stability import stability_table
    >>> from evalstats.simulate import observations
    >>> obs = observations(n_models=3, n_datasets=4, n_items=30, n_variants=1, n_runs=5,
    ...                    instability=0.1, raw_instability=0.1, seed=0)
    >>> fig = plot_tar_heatmap(stability_table(obs), value="tar_a")  # doctest: +SKIP
    """
    _, sns = require_plotting()
    _need(stability, [value, x, y], "stability table")
    dup = stability.group_by(y, x).len().filter(pl.col("len") > 1).sort(y, x)
    if dup.height:
        r = dup.row(0, named=True)
        raise ParameterError(
            f"{r['len']} rows for {y}={r[y]!r}, {x}={r[x]!r}; the heatmap takes one row per "
            f"({y}, {x}). Filter the variants first, e.g. "
            f"stability.filter(pl.col('variant') == ...)."
        )
    rows = sorted(stability[y].unique().to_list(), key=str)
    if row_order is not None:
        place = {r: i for i, r in enumerate(row_order)}
        rows.sort(key=lambda r: (place.get(r, len(place)), str(r)))
    cols = sorted(stability[x].unique().to_list(), key=str)
    mat = np.full((len(rows), len(cols)), np.nan)
    ri = {v: i for i, v in enumerate(rows)}
    ci = {v: i for i, v in enumerate(cols)}
    for ry, cx, v in stability.select(y, x, value).iter_rows():
        mat[ri[ry], ci[cx]] = np.nan if v is None else float(v)
    has = np.isfinite(mat)
    if has.any():  # rows and columns without a value (run once: no TAR) take no room
        keep_r, keep_c = has.any(axis=1), has.any(axis=0)
        mat = mat[keep_r][:, keep_c]
        rows = [r for r, k in zip(rows, keep_r) if k]
        cols = [c for c, k in zip(cols, keep_c) if k]
    row_labels, _, _ = tick_labels(rows)
    fig, ax = new_axes(
        ax,
        figsize=(
            min(PAGE_WIDTH_IN, 1.0 + 0.9 * len(cols)),
            fit_height(len(rows), per_row=0.45, extra=0.8),
        ),
    )
    sns.heatmap(
        mat * 100,
        ax=ax,
        vmin=0,
        vmax=100,
        cmap=cmap,
        annot=False,
        xticklabels=[str(c) for c in cols],
        yticklabels=row_labels,
        cbar_kws={"label": f"{label(value)} (%)"},
        linewidths=0.5,
        linecolor="white",
    )
    ax.set_xlabel(label(x))
    ax.set_ylabel(label(y))
    ax.set_title(label(value))
    ax.tick_params(axis="y", rotation=0)
    ax.grid(False)
    _CELLS[ax] = {"values": mat * 100, "cmap": cmap, "annot": annot, "texts": []}
    if fit:
        # the slanted column labels hang below the cells: room for them, or the layout
        # collapses the cells of a one-model heatmap with long task names to nothing
        width, height = fig.get_size_inches()
        need = fit_height(len(rows), per_row=0.45, extra=0.8) + slanted_drop([str(c) for c in cols])
        if need > height:
            fig.set_size_inches(width, min(PAGE_HEIGHT_IN, need))
        fit_heatmap_cells(fig)
    return fig


#: Cell values of each TAR heatmap drawn, for :func:`fit_heatmap_cells`.
_CELLS: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()


def fit_heatmap_cells(fig: Any) -> None:
    """Size the cell numbers and column labels of every TAR heatmap in ``fig`` to its cells.

    The figure is laid out first (as it will be saved), so the cell size is measured, not
    guessed: numbers with one decimal where they fit at the tick labels' size, whole numbers
    where those fit at 5 points or more, none in narrower cells (the colour bar reads them);
    column labels slanted, or upright where slanted ones would touch. Text colour follows the
    cell's luminance, as seaborn's own annotations.

    All panels of the figure get one format and size (the largest that fits every one).
    :func:`plot_tar_heatmap` calls it for its own figure; a figure of several panels calls it
    again once every panel is drawn (a later panel's labels and colour bar take room from the
    earlier ones: the first panel's numbers were sized for cells wider than they end up).
    """
    import matplotlib as mpl
    from matplotlib.font_manager import FontProperties
    from seaborn.utils import relative_luminance

    axes = [ax for ax in fig.axes if ax in _CELLS]
    if not axes:
        return
    for ax in axes:
        for t in _CELLS[ax]["texts"]:
            t.remove()
        _CELLS[ax]["texts"] = []
        slant_xticks(ax, 45)  # laid out slanted: upright labels (below) only widen the cells
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    tick = tick_label_points()
    line = 1.2 * tick * fig.dpi / 72.0

    def width(text: str) -> float:
        w, _, _ = renderer.get_text_width_height_descent(
            text, FontProperties(size=tick), ismath=False
        )
        return w

    measured = []  # (axes, cells, cell width, cell height, finite cells)
    for ax in axes:
        cells = _CELLS[ax]
        (x0, y0), (x1, y1) = ax.transData.transform([(0.0, 0.0), (1.0, 1.0)])
        cell_w, cell_h = abs(x1 - x0), abs(y1 - y0)
        if cell_w < 1.45 * line:
            slant_xticks(ax, 90)
        finite = np.argwhere(np.isfinite(cells["values"]))
        if cells["annot"] and finite.size:
            measured.append((ax, cells, cell_w, cell_h, finite))
    if not measured:
        return
    # one format and size for all panels of the figure: the largest that fits every one
    size, fmt = None, ""
    for fmt, least in ((".1f", 0.8 * tick), (".0f", 5.0)):
        fits = min(
            tick
            * min(
                1.0,
                0.8 * w / max(max(width(format(c["values"][i, j], fmt)) for i, j in f), 1e-9),
                0.8 * h / line,
            )
            for _, c, w, h, f in measured
        )
        if fits >= least:
            size = fits
            break
    if size is None:
        return
    for ax, cells, _, _, finite in measured:
        colours = mpl.colormaps[cells["cmap"]]
        for i, j in finite:
            v = cells["values"][i, j]
            dark = relative_luminance(colours(np.clip(v / 100.0, 0.0, 1.0))) <= 0.408
            cells["texts"].append(
                ax.text(
                    j + 0.5,
                    i + 0.5,
                    format(v, fmt),
                    ha="center",
                    va="center",
                    fontsize=size,
                    color="w" if dark else ".15",
                )
            )


@plain_text
def plot_stability_distribution(
    stability: pl.DataFrame,
    *,
    value: str = "tar_r",
    x: str = "dataset",
    ax: Any = None,
    palette: Any = None,
) -> Any:
    """Box plots of a stability column over configurations, one box per model and ``x`` level.

    The figure for stability tables with many variants per (model, dataset), where the
    heatmap of :func:`plot_tar_heatmap` would need one cell per configuration.

    Parameters
    ----------
    stability : polars.DataFrame
        Result of :func:`evalstats.stability.stability_table`, one row per configuration.
    value : str, default 'tar_r'
        Column drawn: ``tar_r``, ``tar_a``, ``spread`` or any numeric column.
    x : str, default 'dataset'
        Column whose levels are the groups of boxes along the x axis.
    ax : matplotlib.axes.Axes, optional
        Draw here instead of a new figure.
    palette : mapping of str to colour, optional
        Colour of each model (default: :func:`~evalstats.plots.model_colors` of the models
        drawn); pass one mapping to all figures to keep each model's colour.

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    SchemaError
        If ``value``, ``x`` or ``model`` is not a column.

    Notes
    -----
    Draws the recorded per-configuration values (boxes: quartiles and 1.5 IQR whiskers, as
    :func:`seaborn.boxplot`); no other statistic is computed.

    Examples
    --------
    >>> from evalstats.stability import stability_table
    >>> from evalstats.simulate import observations
    >>> obs = observations(n_models=2, n_items=30, n_variants=6, n_runs=3, instability=0.1, seed=0)
    >>> fig = plot_stability_distribution(stability_table(obs))  # doctest: +SKIP
    """
    require_plotting()
    _need(stability, [value, x, "model"], "stability table")
    # configurations run once have no TAR (NaN): their levels would take an empty slot
    drawn = stability.filter(pl.col(value).is_not_null() & ~pl.col(value).cast(pl.Float64).is_nan())
    stability = drawn if drawn.height else stability
    models = sorted(stability["model"].unique().to_list(), key=str)
    levels = sorted(stability[x].unique().to_list(), key=str)
    colors = resolve_palette(models, palette)
    fig, ax = new_axes(
        ax, figsize=(min(PAGE_WIDTH_IN, max(3.4, 0.9 + 0.45 * len(models) * len(levels))), 2.6)
    )
    # boxes dodged as seaborn's hue does (each level 0.8 wide, split between the models),
    # drawn by Matplotlib's bxp with `orientation` (seaborn 0.13 passes the removed `vert`)
    import matplotlib as mpl
    import numpy as np

    from evalstats.plots.moments import draw_boxes

    k = max(len(models), 1)
    width = 0.8 / k
    cells = {
        (str(a), str(m)): np.asarray(v, dtype=float)
        for a, m, v in stability.group_by(
            pl.col(x).cast(pl.String), pl.col("model").cast(pl.String)
        )
        .agg(pl.col(value).cast(pl.Float64).drop_nulls().drop_nans())
        .iter_rows()
    }
    positions, arrays, box_colors = [], [], []
    for i, lv in enumerate(levels):
        for j, m in enumerate(models):
            v = cells.get((str(lv), str(m)))
            if v is not None and v.size:
                positions.append(i + (j - (k - 1) / 2) * width)
                arrays.append(v)
                box_colors.append(colors[m])
    draw_boxes(ax, positions, arrays, box_colors, width=width)
    ax.set_xticks(range(len(levels)), [str(v) for v in levels])
    ax.set_xlim(-0.5, len(levels) - 0.5)
    ax.xaxis.grid(False)
    ax.set_xlabel(label(x))
    ax.set_ylabel(label(value))
    if models:
        handles = [
            mpl.patches.Patch(facecolor=colors[m], edgecolor="0.3", linewidth=0.8, label=str(m))
            for m in models
        ]
        outside_legend(
            ax,
            handles=handles,
            title=label("model"),
            fontsize="small",
            title_fontsize="small",
            ncol=max(1, -(-len(handles) // 18)),
        )
    _CATEGORIES[ax] = [str(v) for v in levels]
    fit_category_labels(fig)
    return fig


#: Category levels of each stability box plot drawn, for :func:`fit_category_labels`.
_CATEGORIES: weakref.WeakKeyDictionary[Any, list[str]] = weakref.WeakKeyDictionary()


def fit_category_labels(fig: Any) -> None:
    """Wrap the category labels of every stability box plot in ``fig`` to its slots.

    Neighbouring labels ran together (two GPQA subsets' names were printed over each other).
    The figure is laid out first (as it will be saved) and each label is wrapped, narrower, until
    it fits the width its category gets. :func:`plot_stability_distribution` calls it for its
    own figure; a figure of several panels calls it again once every panel is drawn (a later
    panel takes room from the earlier ones).
    """
    axes = [ax for ax in fig.axes if ax in _CATEGORIES]
    chars = dict.fromkeys(axes, 40)
    for _ in range(6):
        for ax in axes:
            ax.set_xticks(range(len(_CATEGORIES[ax])))
            ax.set_xticklabels(tick_labels(_CATEGORIES[ax], width=chars[ax])[0])
        fig.draw_without_rendering()
        renderer = fig.canvas.get_renderer()
        done = True
        for ax in axes:
            slot = ax.get_window_extent(renderer).width / max(len(_CATEGORIES[ax]), 1)
            labels = ax.get_xticklabels()
            widest = max((t.get_window_extent(renderer).width for t in labels), default=0)
            if widest > 0.92 * slot and chars[ax] > 6:
                chars[ax] = max(6, int(chars[ax] * 0.9 * slot / widest))
                done = False
        if done:
            return


@plain_text
def plot_correlation_heatmap(
    corr: pl.DataFrame,
    *,
    ax: Any = None,
    annot: bool = True,
    alpha: float | None = 0.05,
    pvalue: str = "pvalue_perm",
    cmap: str = "vlag",
) -> Any:
    """Heatmap of a correlation matrix (the paper's Figures 5 and 6).

    Parameters
    ----------
    corr : polars.DataFrame
        Result of :func:`evalstats.correlation.correlation_matrix` (one row per pair).
    ax : matplotlib.axes.Axes, optional
        Draw here instead of a new figure.
    annot : bool, default True
        Write each coefficient in its cell.
    alpha : float or None, default 0.05
        Mark with ``*`` the pairs whose ``pvalue`` column is at most ``alpha``; None marks none.
    pvalue : {'pvalue_perm', 'pvalue'}, default 'pvalue_perm'
        Which p-value column the marks use.
    cmap : str, default 'vlag'
        Diverging colour map over [-1, 1].

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    SchemaError
        If ``corr`` lacks ``x``, ``y``, ``statistic`` or the ``pvalue`` column.

    Notes
    -----
    The matrix is symmetric with 1 on the diagonal; the lower triangle is drawn. A NaN
    coefficient (a constant column) is a blank cell marked ``n/a``. The variable
    order is the order of first appearance in ``corr`` (the ``columns`` order).

    Examples
    --------
    >>> from evalstats.correlation import correlation_matrix
    >>> t = pl.DataFrame({"tar_a": [0.5, 0.7, 0.9, 0.8], "spread": [0.3, 0.2, 0.05, 0.1],
    ...                   "acc_mean": [0.6, 0.5, 0.9, 0.7]})
    >>> fig = plot_correlation_heatmap(correlation_matrix(t, columns=list(t.columns)))  # doctest: +SKIP
    """
    _, sns = require_plotting()
    _need(
        corr, ["x", "y", "statistic"] + ([pvalue] if alpha is not None else []), "correlation table"
    )
    names: list[str] = []
    for a, b in corr.select("x", "y").iter_rows():
        for v in (a, b):
            if v not in names:
                names.append(v)
    k = len(names)
    idx = {v: i for i, v in enumerate(names)}
    mat = np.eye(k)
    text = np.full((k, k), "", dtype=object)
    pcol = corr[pvalue].to_list() if alpha is not None else [None] * corr.height
    for (a, b, s), p in zip(corr.select("x", "y", "statistic").iter_rows(), pcol):
        i, j = idx[a], idx[b]
        s = np.nan if s is None else s
        mat[i, j] = mat[j, i] = s
        star = "*" if (alpha is not None and p is not None and p <= alpha) else ""
        text[i, j] = text[j, i] = "" if np.isnan(s) else f"{s:.2f}{star}"
    for i in range(k):
        text[i, i] = "1"
    mask = np.triu(np.ones((k, k), dtype=bool), k=1)
    fig, ax = new_axes(
        ax, figsize=(min(PAGE_WIDTH_IN, 1.8 + 0.95 * k), min(PAGE_HEIGHT_IN, 1.2 + 0.8 * k))
    )
    method = corr["method"][0] if "method" in corr.columns and corr.height else "correlation"
    sns.heatmap(
        mat,
        mask=mask,
        ax=ax,
        vmin=-1,
        vmax=1,
        cmap=cmap,
        annot=text if annot else False,
        fmt="",
        annot_kws={"fontsize": "small"},
        square=True,
        xticklabels=[label(n) for n in names],
        yticklabels=[label(n) for n in names],
        cbar_kws={"label": f"{str(method).capitalize()} coefficient"},
        linewidths=0.5,
        linecolor="white",
    )
    if annot:
        # an undefined coefficient (a constant column: correlation_matrix warned) is a blank
        # cell to seaborn, which reads as a missing figure part: mark it
        for i, j in zip(*np.nonzero(np.isnan(mat) & ~mask)):
            ax.text(
                j + 0.5, i + 0.5, "n/a", ha="center", va="center", fontsize="small", color="0.35"
            )
    slant_xticks(ax)
    ax.grid(False)
    return fig


@plain_text
def plot_run_distribution(
    dist: pl.DataFrame,
    *,
    ax: Any = None,
    bins: int | str = "auto",
    col_wrap: int = 3,
) -> Any:
    """Histogram of run accuracies with mean, median and quantiles (the paper's Figure 2).

    Parameters
    ----------
    dist : polars.DataFrame
        Result of :func:`evalstats.normality.run_distribution`; one panel per row.
    ax : matplotlib.axes.Axes, optional
        Draw here; only allowed when ``dist`` has one row.
    bins : int or str, default 'auto'
        Histogram bins (as ``numpy.histogram_bin_edges``).
    col_wrap : int, default 3
        Panels per row when there are several.

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    SchemaError
        If ``dist`` lacks a column of :func:`~evalstats.normality.run_distribution`'s output.
    ParameterError
        If ``ax`` is given and ``dist`` has several rows, or ``dist`` is empty.

    Notes
    -----
    Vertical lines: mean (solid), median (dashed), the ``q_low`` and ``q_high`` quantiles
    (dotted), with their levels in the legend.

    Examples
    --------
    >>> from evalstats.normality import run_distribution
    >>> from evalstats.simulate import unit_table
    >>> units = unit_table(n_models=1, n_items=200, n_variants=1, n_runs=100,
    ...                    instability=0.3, seed=0)
    >>> fig = plot_run_distribution(run_distribution(units))  # doctest: +SKIP
    """
    plt, _ = require_plotting()
    need = ["values", "mean", "median", "q_low", "q_high", "q_low_level", "q_high_level", "n"]
    _need(dist, need, "run distribution")
    if dist.height == 0:
        raise ParameterError("`dist` has no rows; nothing to draw.")
    if ax is not None and dist.height > 1:
        raise ParameterError(
            f"`ax` takes one panel but `dist` has {dist.height} rows; omit `ax` or filter `dist`."
        )
    keys = [c for c in dist.columns if c not in need and c not in ("sd", "min", "max")]
    if "metric" in keys and dist["metric"].n_unique() == 1:
        keys.remove("metric")  # one metric: it names the x axis instead
    metric_name = dist["metric"][0] if "metric" in dist.columns and dist.height else None
    if ax is not None:
        fig, axes = ax.figure, [ax]
    elif dist.height == 1:
        fig, ax = new_axes(None, figsize=(4.0, 2.8))
        axes = [ax]
    else:
        ncol = min(col_wrap, dist.height)
        nrow = -(-dist.height // ncol)
        fig, grid = plt.subplots(
            nrow, ncol, figsize=(3.4 * ncol, 2.6 * nrow), layout="constrained", squeeze=False
        )
        axes = list(grid.ravel())
        for extra in axes[dist.height :]:
            extra.set_visible(False)
    for a, row in zip(axes, dist.iter_rows(named=True)):
        vals = np.asarray(row["values"], dtype=float)
        a.hist(vals, bins=bins, color=COLORS["band"], edgecolor="white")
        lines = [
            (row["mean"], "-", COLORS["accent"], "mean"),
            (row["median"], "--", COLORS["secondary"], "median"),
            (row["q_low"], ":", COLORS["highlight"], f"{row['q_low_level']:.0%} quantile"),
            (row["q_high"], ":", COLORS["highlight"], f"{row['q_high_level']:.0%} quantile"),
        ]
        for v, ls, color, name in lines:
            if v is not None and np.isfinite(v):
                a.axvline(v, linestyle=ls, color=color, linewidth=1.2, label=name)
        x_label = label("score", dist if "metric" in dist.columns else None)
        if (
            metric_name not in (None, "score")
            and "metric" not in keys
            and x_label == label("score")
        ):
            x_label = f"{x_label}: {metric_name}"
        a.set_xlabel(x_label)
        a.set_ylabel(f"{label('runs')} (N = {row['n']})")
        a.set_title(" / ".join(str(row[k]) for k in keys))
        outside_legend(a, fontsize="small")
    return fig
