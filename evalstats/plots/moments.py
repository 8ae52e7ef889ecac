"""Figures of prompt sensitivity: scores over variants, and ReliableEval's convergence of Delta(n).

Every number drawn comes from :func:`evalstats.moments.variant_scores`,
:func:`evalstats.resampling.sample_size_curve` and :func:`evalstats.resampling.required_sample_size`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from evalstats.errors import ParameterError
from evalstats.plots._style import (
    COLORS,
    OTHER_COLOR,
    PAGE_HEIGHT_IN,
    PAGE_WIDTH_IN,
    label,
    new_axes,
    outside_legend,
    plain_text,
    require_plotting,
    resolve_palette,
    slant_xticks,
    wrap_label,
)

__all__ = [
    "plot_convergence",
    "plot_convergence_overlay",
    "plot_prompt_spread",
    "spread_orientation",
    "spread_panel_height",
]

_MOMENT_COLORS = {"mean": COLORS["accent"], "variance": COLORS["secondary"]}


#: Most models whose CI bands a convergence overlay draws; beyond it, lines only (16 models'
#: bands overplotted into one blur).
MAX_BANDS = 5


def draw_boxes(
    ax: Any,
    positions: list[float],
    arrays: list[Any],
    colors: list[Any],
    *,
    width: float,
    horizontal: bool = False,
) -> None:
    """Box plots of ``arrays`` at ``positions``, styled as seaborn's, in at most five artists.

    Quartile boxes filled with each colour, whiskers to the furthest value within 1.5 IQR, the
    rest as open points, lines in a grey as dark as the darkest colour * 0.6. The statistics
    are matplotlib's (``cbook.boxplot_stats``). All boxes are drawn together: one collection
    of boxes (gid ``"boxes"``), one of whiskers and caps (``"whiskers"``), one of medians
    (``"medians"``), one line of the outlying points (``"fliers"``), and the values of small
    boxes (``"values"``); ``bxp`` made seven artists per box, and a page of 66 boxes took half
    a second more to build and draw twice (PNG and PDF). A box of fewer than
    :data:`FEW_VALUES` values also shows each value as a filled point: its quartiles are not a
    distribution, and a box of one value is a bare line a reader cannot tell from a collapsed
    spread.
    """
    from colorsys import rgb_to_hls

    import matplotlib as mpl
    import numpy as np
    from matplotlib.collections import LineCollection, PolyCollection

    stats = [mpl.cbook.boxplot_stats(v, whis=1.5)[0] for v in arrays]
    used = [mpl.colors.to_rgb(c) for c in colors]
    lum = min((rgb_to_hls(*c)[1] for c in used), default=0.5) * 0.6
    grey = (lum, lum, lum)
    if not stats:
        return
    pos = np.asarray(positions, dtype=float)
    half, cap = width / 2, width / 4
    q1, q3 = np.array([s["q1"] for s in stats]), np.array([s["q3"] for s in stats])
    lo, hi = np.array([s["whislo"] for s in stats]), np.array([s["whishi"] for s in stats])
    med = np.array([s["med"] for s in stats])

    def place(across: Any, along: Any) -> Any:
        """Points (position axis, value axis) as (x, y) for the orientation."""
        xy = np.stack([across, along], axis=-1)
        return xy[..., ::-1] if horizontal else xy

    left, right = pos - half, pos + half
    boxes = place(np.stack([left, right, right, left], axis=1), np.stack([q1, q1, q3, q3], axis=1))
    whiskers = np.concatenate(
        [
            place(np.stack([pos, pos], axis=1), np.stack([q1, lo], axis=1)),
            place(np.stack([pos, pos], axis=1), np.stack([q3, hi], axis=1)),
            place(np.stack([pos - cap, pos + cap], axis=1), np.stack([lo, lo], axis=1)),
            place(np.stack([pos - cap, pos + cap], axis=1), np.stack([hi, hi], axis=1)),
        ]
    )
    medians = place(np.stack([left, right], axis=1), np.stack([med, med], axis=1))
    line = {"colors": [grey], "linewidths": 0.8, "capstyle": "butt"}
    ax.add_collection(
        PolyCollection(
            boxes, facecolors=used, edgecolors=[grey], linewidths=0.8, zorder=2, gid="boxes"
        ),
        autolim=True,
    )
    ax.add_collection(LineCollection(whiskers, zorder=2, gid="whiskers", **line), autolim=True)
    ax.add_collection(LineCollection(medians, zorder=2.1, gid="medians", **line), autolim=True)
    out = [(p, s["fliers"]) for p, s in zip(pos, stats) if len(s["fliers"])]
    if out:
        along = np.concatenate([f for _, f in out]).astype(float)
        across = np.concatenate([np.full(len(f), p) for p, f in out])
        xy = place(across, along)
        ax.plot(
            xy[:, 0],
            xy[:, 1],
            linestyle="none",
            marker="o",
            markersize=2,
            markerfacecolor="none",
            markeredgecolor=grey,
            zorder=2,
            gid="fliers",
        )
    ax.autoscale_view()
    few = [(p, v, c) for p, v, c in zip(positions, arrays, used) if 0 < len(v) < FEW_VALUES]
    if few:
        at = np.concatenate([np.full(len(v), p, dtype=float) for p, v, _ in few])
        val = np.concatenate([np.asarray(v, dtype=float) for _, v, _ in few])
        face = [c for _, v, c in few for _ in range(len(v))]
        xy = (val, at) if horizontal else (at, val)
        ax.scatter(*xy, s=9, c=face, edgecolors=[grey], linewidths=0.6, zorder=3, gid="values")


#: Boxes of fewer values than this also show the values themselves (:func:`draw_boxes`).
FEW_VALUES = 5


def _boxes(
    ax: Any, scores: pl.DataFrame, order: list[str], colors: dict, labels: dict, *, horizontal: bool
) -> list[str]:
    """One box per model of ``order`` that has scores here, at positions 0, 1, ...; those models.

    Drawn as seaborn's ``boxplot`` draws them (:func:`draw_boxes`), without its per-box calls,
    which took a quarter of a second per panel of eleven models. A model without scores in
    this panel gets no slot (a GPQA subset run by one of two models showed an empty, labelled
    slot for the other); the models keep ``order`` and their colours, and ``labels`` names
    them. The axis spans at least two slots, so a panel of one model draws its box as wide as
    the others, centred.
    """
    import numpy as np

    values = {
        m: np.asarray(v, dtype=float)
        for m, v in scores.group_by("model").agg(pl.col("score").drop_nulls()).iter_rows()
    }
    drawn = [m for m in order if m in values and values[m].size]
    draw_boxes(
        ax,
        list(range(len(drawn))),
        [values[m] for m in drawn],
        [colors[m] for m in drawn],
        width=0.8,
        horizontal=horizontal,
    )
    pad = max(0.5, (2 - len(drawn)) / 2 + 0.5)
    ticks, span = range(len(drawn)), (-pad, len(drawn) - 1 + pad)
    if horizontal:
        ax.set_yticks(ticks, [labels[m] for m in drawn])
        ax.set_ylim(span[::-1])  # the first model at the top
        ax.yaxis.grid(False)
    else:
        ax.set_xticks(ticks, [labels[m] for m in drawn])
        ax.set_xlim(span)
        ax.xaxis.grid(False)
    return drawn


@plain_text
def plot_prompt_spread(
    units: pl.DataFrame | pl.LazyFrame,
    *,
    ax: Any = None,
    order: list[str] | None = None,
    col_wrap: int = 3,
    palette: Any = None,
    orient: str = "auto",
    panel_by: Sequence[str] = (),
) -> Any:
    """Box plots of unit scores over prompt variants, one box per model, one panel per dataset.

    Parameters
    ----------
    units : polars.DataFrame or polars.LazyFrame
        Unit (or observation) table; scores per variant come from
        :func:`evalstats.moments.variant_scores` (runs averaged).
    ax : matplotlib.axes.Axes, optional
        Draw here; only allowed when the table has a single dataset.
    order : list of str, optional
        Model order (default: by median score).
    col_wrap : int, default 3
        Panels per row.
    palette : mapping of str to colour, optional
        Colour of each model (default: :func:`~evalstats.plots.model_colors` of the models
        drawn); pass one mapping to all figures to keep each model's colour.
    orient : {'auto', 'v', 'h'}, default 'auto'
        ``'v'``: models along the x axis; ``'h'``: models down the y axis, where many model
        names stay readable side by side; ``'auto'``: as :func:`spread_orientation` chooses
        (``'h'`` beyond :data:`VERTICAL_MAX` models, or for names too long to hang under
        standing boxes).
    panel_by : sequence of str, default ()
        Further columns whose values get panels of their own (settings held fixed, such as
        ``temperature``): each panel then draws the variants of one dataset at one setting, as
        :func:`evalstats.moments.prompt_spread` groups them, named in its title.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from evalstats.simulate import unit_table
    >>> fig = plot_prompt_spread(unit_table(n_models=3, n_items=20, n_variants=8, seed=0))  # doctest: +SKIP
    """
    from evalstats.moments import variant_scores

    plt, _ = require_plotting()
    from evalstats.schema import as_lazy

    panel_by = [panel_by] if isinstance(panel_by, str) else list(panel_by)
    names = as_lazy(units).collect_schema().names()
    missing = [c for c in panel_by if c not in names]
    if missing:
        raise ParameterError(f"`panel_by` names {missing[0]!r}, which is not a column of `units`.")
    extra = [c for c in panel_by if c not in ("model", "dataset", "metric")]
    scores = variant_scores(units, by=("model", "dataset", "metric", *extra))
    # several metrics are never pooled into one box: a panel per metric, each on its own axis
    multi = "metric" in scores.columns and scores["metric"].n_unique() > 1
    keys = ["dataset", *(["metric"] if multi and "metric" not in panel_by else []), *panel_by]
    cells = scores.select(keys).unique().sort(keys, nulls_last=True)
    datasets = cells.rows(named=True)
    if ax is not None and len(datasets) > 1:
        raise ParameterError(
            f"`ax` takes one panel but the table has {len(datasets)} datasets"
            + (" and settings" if panel_by else "")
            + "; omit `ax`."
        )
    ordered_by_median = order is None
    if order is None:
        med = scores.group_by("model").agg(pl.col("score").median()).sort("score", "model")
        order = med["model"].to_list()
    if orient not in ("auto", "v", "h"):
        raise ParameterError(f"`orient` must be 'auto', 'v' or 'h', got {orient!r}.")
    subs = [
        scores.filter(pl.all_horizontal([pl.col(c).eq_missing(v) for c, v in cell.items()]))
        for cell in datasets
    ]
    # the most models of one panel: each panel has slots for its own models only
    rows = max((s["model"].n_unique() for s in subs), default=1)
    horizontal = orient == "h" or (orient == "auto" and spread_orientation(order, rows=rows) == "h")
    if horizontal and ordered_by_median:
        order = order[::-1]  # the highest median at the top
    colors = resolve_palette(sorted(scores["model"].unique().to_list()), palette)
    ncol = min(col_wrap, max(len(datasets), 1))
    if ax is not None:
        fig, axes = ax.figure, [ax]
        panel = ax.get_position().width * fig.get_size_inches()[0]
    else:
        width = 3.4 if horizontal else max(3.4, 0.22 * rows)
        panel = min(PAGE_WIDTH_IN, width * ncol) / ncol
    labels, height = _spread_labels(order, rows=rows, horizontal=horizontal, width=panel)
    if ax is None:
        nrow = -(-len(datasets) // ncol)
        fig, grid = plt.subplots(
            nrow,
            ncol,
            figsize=(min(PAGE_WIDTH_IN, panel * ncol), min(PAGE_HEIGHT_IN, height * nrow)),
            layout="constrained",
            squeeze=False,
            sharex=horizontal and not multi,
            sharey=not horizontal and not multi,
        )
        axes = list(grid.ravel())
        for extra in axes[len(datasets) :]:
            extra.set_visible(False)
    for a, cell, sub in zip(axes, datasets, subs):
        _boxes(a, sub, order, colors, labels, horizontal=horizontal)
        held = ", ".join(f"{c} {'–' if cell[c] is None else cell[c]}" for c in panel_by)
        metric = f", {cell['metric']}" if multi and "metric" not in panel_by else ""
        title = cell["dataset"] + metric + (f" ({held})" if held else "")
        if len(title) > 40:  # settings on a line of their own: long titles ran together
            title = cell["dataset"] + metric + f"\n{held}"
        a.set_title(title, **({"fontsize": "small"} if "\n" in title else {}))
        scale = units.filter(pl.col("metric") == cell["metric"]) if multi else units
        # the shared score axis is labelled once: under the last panel of each column, beside
        # the first panel of each row (the lowest panel of a column above an empty slot gets
        # its tick labels back)
        spec = a.get_subplotspec() if ax is None else None
        if horizontal:
            below = spec is not None and spec.rowspan.stop * ncol + spec.colspan.start < len(
                datasets
            )
            below = below and not multi  # each metric's panel keeps its own axis
            a.set_xlabel("" if below else label("score", scale))
            a.xaxis.set_tick_params(labelbottom=not below)
            a.set_ylabel("")
            a.tick_params(axis="y", labelsize="x-small" if rows > 16 else "small")
        else:
            a.set_xlabel(label("model"))
            first = spec is None or spec.colspan.start == 0 or multi
            text = label("score", scale) if first else ""
            a.set_ylabel("\n".join(wrap_label(text, 34)) if multi and text else text)
            slant_xticks(a)
    return fig


#: Up to this many models the boxes stand along the x axis; beyond, they lie down the y axis.
VERTICAL_MAX = 6


#: Standing boxes whose names, slanted and wrapped, would make a panel taller than this
#: (inches) lie down instead: a name of about 30 characters or more (a 71-character Hub
#: checkpoint hung an inch below its box), read across in a few lines beside its box.
STANDING_MAX_HEIGHT = 3.0


def spread_orientation(models: Sequence[str], *, rows: int | None = None) -> str:
    """``'h'`` (boxes down the y axis) or ``'v'`` for panels naming ``models``.

    ``rows``: the most models of one panel (default: all). Boxes stand (``'v'``) for up to :data:`VERTICAL_MAX` models whose names, slanted under
    them, keep the panel within :data:`STANDING_MAX_HEIGHT`; otherwise they lie down, one
    row per model named across.
    """
    models = list(models)
    rows = len(models) if rows is None else rows
    if len(models) > VERTICAL_MAX:
        return "h"
    height = _spread_labels(models, rows=rows, horizontal=False, width=3.4)[1]
    return "h" if height > STANDING_MAX_HEIGHT else "v"


def spread_panel_height(
    models: Sequence[str], *, rows: int | None = None, horizontal: bool | None = None
) -> float:
    """Height (inches) of one panel of :func:`plot_prompt_spread` naming ``models``.

    ``rows``: the most models one panel draws (default: all of ``models``); ``horizontal``:
    the boxes' orientation (default: :func:`spread_orientation`'s). Lying boxes take a row
    each, as tall as their names wrapped (:func:`~evalstats.plots._style.row_panel_height`);
    standing boxes take 2.6 inches, more when their slanted names hang lower than short names
    do (:func:`~evalstats.plots._style.slanted_labels`). The report reads it to put as many
    panels on a page as fit.
    """
    models = list(models)
    rows = len(models) if rows is None else rows
    if horizontal is None:
        horizontal = spread_orientation(models, rows=rows) == "h"
    return _spread_labels(models, rows=rows, horizontal=horizontal, width=3.4)[1]


def _spread_labels(
    models: list[str], *, rows: int, horizontal: bool, width: float
) -> tuple[dict[str, str], float]:
    """Each model's tick label (wrapped) and the height of a panel ``width`` inches wide."""
    from evalstats.plots._style import row_panel_height, slanted_labels, tick_labels

    if horizontal:
        wrapped, _, lines = tick_labels(models)
        return dict(zip(models, wrapped)), row_panel_height(rows, lines)
    # the slots share the panel's width less its value axis (ticks and label, ~0.65 inch)
    slot = max(width - 0.65, 0.5) / max(rows, 2)
    wrapped, drop = slanted_labels(models, slot)
    return dict(zip(models, wrapped)), max(2.6, 2.2 + drop)


def _one_group(
    frame: pl.DataFrame, model: str | None, dataset: str | None, what: str
) -> tuple[pl.DataFrame, str, str]:
    if model is not None:
        frame = frame.filter(pl.col("model") == model)
    if dataset is not None:
        frame = frame.filter(pl.col("dataset") == dataset)
    groups = frame.select("model", "dataset").unique().sort("model", "dataset")
    if groups.height != 1:
        raise ParameterError(
            f"{what} holds {groups.height} (model, dataset) groups; pass `model` and `dataset` "
            "to pick one."
        )
    m, d = groups.row(0)
    return frame, m, d


def _epsilon(
    nstar: pl.DataFrame | None, epsilon: float | None, moment: str = "mean"
) -> float | None:
    """The epsilon line of ``moment``: given, else ``nstar``'s when all its groups share it.

    The variance's default tolerance depends on each group's sd (2 x sd x epsilon), so with
    several groups there is no one line: None, and each n* marker sits at its own epsilon.
    """
    if epsilon is not None:
        return float(epsilon)
    if nstar is not None and nstar.height:
        rows = nstar.filter(pl.col("moment") == moment) if "moment" in nstar.columns else nstar
        values = (rows if rows.height else nstar)["epsilon"].drop_nulls().unique()
        return float(values[0]) if values.len() == 1 else None
    return None


@plain_text
def plot_convergence(
    curve: pl.DataFrame,
    nstar: pl.DataFrame | None = None,
    *,
    model: str | None = None,
    dataset: str | None = None,
    epsilon: float | None = None,
    ax: Any = None,
) -> Any:
    """Convergence of one model: mean Delta(n) and its CI band per moment, epsilon and n*.

    Parameters
    ----------
    curve : polars.DataFrame
        Result of :func:`evalstats.resampling.sample_size_curve`.
    nstar : polars.DataFrame, optional
        Result of :func:`evalstats.resampling.required_sample_size`; adds the n* markers and
        the epsilon line.
    model, dataset : str, optional
        The group to draw when ``curve`` holds several.
    epsilon : float, optional
        Epsilon line (default: from ``nstar``).
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from evalstats.resampling import sample_size_curve
    >>> from evalstats.simulate import unit_table
    >>> curve = sample_size_curve(unit_table(n_models=1, n_items=50, n_variants=20, seed=0))
    >>> fig = plot_convergence(curve)  # doctest: +SKIP
    """
    curve, m, d = _one_group(curve, model, dataset, "`curve`")
    fig, ax = new_axes(ax, figsize=(4.2, 3.0))
    for moment in curve["moment"].unique(maintain_order=True).to_list():
        c = curve.filter(pl.col("moment") == moment).sort("n")
        color = _MOMENT_COLORS.get(moment, None)
        ax.plot(
            c["n"].to_numpy(),
            c["delta_mean"].to_numpy(),
            color=color,
            label=f"{moment}: mean |Δ(n)|",
        )
        ax.fill_between(
            c["n"].to_numpy(),
            c["ci_low"].to_numpy(),
            c["ci_high"].to_numpy(),
            color=color,
            alpha=0.25,
            linewidth=0,
            label=f"{moment}: CI",
        )
    mine = nstar.filter(pl.col("model") == m, pl.col("dataset") == d) if nstar is not None else None
    eps = _epsilon(mine, epsilon)
    if eps is not None:
        ax.axhline(
            eps, color=COLORS["highlight"], linestyle="--", linewidth=1, label=f"ε = {eps:g}"
        )
    has_var = "variance" in curve["moment"].to_list()
    eps_var = _epsilon(mine, epsilon, "variance") if has_var else None
    if eps_var is not None and eps_var != eps:  # the variance's own tolerance (sd scale)
        ax.axhline(
            eps_var,
            color=_MOMENT_COLORS.get("variance", COLORS["neutral"]),
            linestyle=":",
            linewidth=1,
            label=f"ε variance = {eps_var:.2g}",
        )
    if nstar is not None:
        ns = nstar.filter(
            pl.col("model") == m,
            pl.col("dataset") == d,
            pl.col("moment") != "overall",
            pl.col("reached"),
        )
        for r in ns.iter_rows(named=True):
            color = _MOMENT_COLORS.get(r["moment"], COLORS["neutral"])
            ax.plot([r["n_star"]], [r["epsilon"]], "o", color=color, zorder=3)
            ax.annotate(
                f"n* = {r['n_star']} ({r['moment']})",
                (r["n_star"], r["epsilon"]),
                textcoords="offset points",
                xytext=(4, 4),
                fontsize="small",
                color=color,
            )
    ax.set_xlabel(label("n"))
    _whole_ticks(ax)
    ax.set_ylabel(label("delta_mean", curve))
    ax.set_title(f"{m} · {d}")
    outside_legend(ax, fontsize=6)
    return fig


@plain_text
def plot_convergence_overlay(
    curve: pl.DataFrame,
    nstar: pl.DataFrame | None = None,
    *,
    dataset: str | None = None,
    moment: str = "mean",
    epsilon: float | None = None,
    ax: Any = None,
    palette: Any = None,
    where: Mapping[str, Any] | None = None,
) -> Any:
    """Several models' convergence of one moment on one dataset (ReliableEval's Figure 2).

    Each model's mean Delta(n) is a line; its CI band is drawn when at most :data:`MAX_BANDS`
    models are coloured (more bands overplot into one blur; the table holds them).

    Parameters
    ----------
    curve : polars.DataFrame
        Result of :func:`evalstats.resampling.sample_size_curve`.
    nstar : polars.DataFrame, optional
        Result of :func:`evalstats.resampling.required_sample_size` (n* markers).
    dataset : str, optional
        The dataset when ``curve`` holds several.
    moment : str, default 'mean'
    epsilon : float, optional
        Epsilon line (default: from ``nstar``).
    ax : matplotlib.axes.Axes, optional
    palette : mapping of str to colour, optional
        Colour of each model (default: :func:`~evalstats.plots.model_colors` of the models
        drawn).
    where : mapping of str to value, optional
        Values of the other group columns of ``curve`` (settings held fixed, e.g.
        ``{"temperature": 0.7}``) to draw; named in the title. A group left unselected is
        drawn as a line of its own (never joined with another group of the same model).

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from evalstats.resampling import sample_size_curve
    >>> from evalstats.simulate import unit_table
    >>> curve = sample_size_curve(unit_table(n_models=3, n_items=50, n_variants=20, seed=0))
    >>> fig = plot_convergence_overlay(curve)  # doctest: +SKIP
    """
    c = curve.filter(pl.col("moment") == moment)
    if dataset is not None:
        c = c.filter(pl.col("dataset") == dataset)
    held = dict(where or {})
    for col, value in held.items():
        if col not in c.columns:
            raise ParameterError(f"`where` names {col!r}, which is not a column of `curve`.")
        c = c.filter(pl.col(col).eq_missing(value))
        if nstar is not None and col in nstar.columns:
            nstar = nstar.filter(pl.col(col).eq_missing(value))
    # every group column but the model: one line per group, never two groups joined
    from evalstats.resampling import CURVE_COLUMNS

    lines = [col for col in c.columns if col not in (*CURVE_COLUMNS, "model", "dataset")]
    datasets = c["dataset"].unique().to_list()
    if len(datasets) != 1:
        raise ParameterError(
            f"`curve` holds {len(datasets)} datasets for moment {moment!r}; pass `dataset`."
        )
    d = datasets[0]
    fig, ax = new_axes(ax, figsize=(4.2, 3.0))
    models = sorted(c["model"].unique().to_list())
    colors = resolve_palette(models, palette)
    # grey (not highlighted) models first, thin and without bands, under the coloured ones
    models.sort(key=lambda m: colors[m] != OTHER_COLOR)
    # bands of more than MAX_BANDS coloured models overplot into one blur: lines only then
    bands = sum(colors[m] != OTHER_COLOR for m in models) <= MAX_BANDS
    # one pass over the table per panel, not one filter per model (30 models, 24 panels)
    by_model = c.sort("n", maintain_order=True).partition_by("model", as_dict=True)
    marks: dict[Any, pl.DataFrame] = {}
    if nstar is not None:
        reached = nstar.filter(
            pl.col("dataset") == d, pl.col("moment") == moment, pl.col("reached")
        )
        marks = reached.partition_by("model", as_dict=True) if reached.height else {}
    for m in models:
        grey = colors[m] == OTHER_COLOR
        mine = by_model[(m,)]
        groups = mine.partition_by(lines, maintain_order=True) if lines else [mine]
        for i, cm in enumerate(groups):
            ax.plot(
                cm["n"].to_numpy(),
                cm["delta_mean"].to_numpy(),
                color=colors[m],
                label=m if i == 0 else None,
                linewidth=0.7 if grey else 1.3,
                zorder=1 if grey else 2,
            )
            if not grey and bands:
                ax.fill_between(
                    cm["n"].to_numpy(),
                    cm["ci_low"].to_numpy(),
                    cm["ci_high"].to_numpy(),
                    color=colors[m],
                    alpha=0.2,
                    linewidth=0,
                )
        if (m,) in marks:
            for r in marks[(m,)].iter_rows(named=True):
                ax.plot([r["n_star"]], [r["epsilon"]], "o", color=colors[m], zorder=3)
    eps = _epsilon(
        nstar.filter(pl.col("dataset") == d) if nstar is not None else None, epsilon, moment
    )
    if eps is None and nstar is not None and moment != "mean":
        # one epsilon per model (the variance's is 2 x sd x epsilon): a short mark each
        for r in nstar.filter(pl.col("dataset") == d, pl.col("moment") == moment).iter_rows(
            named=True
        ):
            if r["model"] in colors and r["epsilon"] is not None:
                ax.axhline(r["epsilon"], color=colors[r["model"]], linestyle="--", linewidth=0.8)
    if eps is not None:
        ax.axhline(
            eps, color=COLORS["highlight"], linestyle="--", linewidth=1, label=f"ε = {eps:g}"
        )
    ax.set_xlabel(label("n"))
    _whole_ticks(ax)
    ax.set_ylabel(label("delta_mean", curve))
    # a setting missing for the group reads "–", as in the other figures ("None" before)
    setting = ", ".join(f"{k} {'–' if v is None else v}" for k, v in held.items())
    ax.set_title(f"{d} · {moment}" + (f" ({setting})" if setting else ""))
    _legend(ax, len(models) + (eps is not None))
    return fig


def _whole_ticks(ax: Any) -> None:
    """A count of variants takes whole values: no tick at 1.5 (a real 4-variant panel had them)."""
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def _legend(ax: Any, entries: int) -> None:
    """Beside the axes, where it covers no curve."""
    outside_legend(ax, fontsize=6, ncol=1 if entries <= 18 else 2)
