"""Figures of :mod:`evalstats.noise`: where the variance comes from, and what a design buys.

Each function draws a result of :mod:`evalstats.noise` and computes no statistics.
"""

from __future__ import annotations

import math
from typing import Any

import polars as pl

from evalstats.errors import SchemaError
from evalstats.plots._style import (
    COLORS,
    PAGE_WIDTH_IN,
    colorblind,
    fit_height,
    label,
    new_axes,
    plain_text,
    require_plotting,
    tick_labels,
)

__all__ = ["plot_noise_components", "plot_plan"]

#: One colour per component, in the order of the stack.
_COMPONENT_COLORS: dict[str, str] = {
    "item": COLORS["accent"],
    "variant": "#d55e00",  # the palette's vermillion: no model colours in this figure
    "item_variant": COLORS["secondary"],
    "residual": "0.6",
}
_COMPONENT_LABELS: dict[str, str] = {
    "item": "item",
    "variant": "prompt variant",
    "item_variant": "item × variant",
    "residual": "run / residual",
}


def _group_label(r: dict, extra: list[str]) -> str:
    name = str(r["model"]) if r.get("model_b") is None else f"{r['model']} − {r['model_b']}"
    tail = ", ".join(str(r[c]) for c in extra)
    return f"{name} ({tail})" if tail else name


@plain_text
def plot_noise_components(
    components: pl.DataFrame, *, share: bool = False, pairs: bool = False, ax: Any = None
) -> Any:
    """Stacked bar per model (or pair): the variance components of its item scores.

    Parameters
    ----------
    components : polars.DataFrame
        Result of :func:`evalstats.noise.variance_components`.
    share : bool, default False
        Draw shares of the total instead of variances.
    pairs : bool, default False
        Draw the paired-difference rows (``model_b`` set) instead of the single models.
    ax : matplotlib.axes.Axes, optional
        Axes to draw into; a new figure otherwise.

    Returns
    -------
    matplotlib.figure.Figure

    Notes
    -----
    Components the design could not separate (``identified`` false) are absent from their bar;
    the legend says so when any bar lacks one, and names those that no bar has (they get no
    legend key).

    Examples
    --------
    >>> from evalstats.noise import variance_components
    >>> from evalstats.simulate import crossed_scores
    >>> fig = plot_noise_components(variance_components(crossed_scores(seed=0)))  # doctest: +SKIP
    """
    needed = ("model", "model_b", "component", "variance", "share", "identified")
    missing = [c for c in needed if c not in components.columns]
    if missing:
        raise SchemaError(
            f"the frame lacks column {missing[0]!r}; pass the result of variance_components()."
        )
    frame = components.filter(
        pl.col("model_b").is_not_null() if pairs else pl.col("model_b").is_null()
    )
    if frame.height == 0:
        raise SchemaError("no rows to draw (pairs=True needs variance_components(pairs=True)).")
    keys = [c for c in frame.columns[: frame.columns.index("model_b") + 1]]
    groups = frame.select(keys).unique(maintain_order=True).rows(named=True)
    extra = [c for c in ("dataset", "metric") if c in keys and frame[c].n_unique() > 1]
    labels, width, lines = tick_labels([_group_label(g, extra) for g in groups])
    fig, ax = new_axes(
        ax,
        figsize=(
            min(PAGE_WIDTH_IN, width + 1.2),
            fit_height(len(groups), per_row=0.32 * lines, extra=0.9),
        ),
    )
    value = "share" if share else "variance"
    left = [0.0] * len(groups)
    for comp, color in _COMPONENT_COLORS.items():
        vals = []
        for g in groups:
            sel = frame.filter(
                *(pl.col(k) == v if v is not None else pl.col(k).is_null() for k, v in g.items()),
                pl.col("component") == comp,
            )
            ok = sel.height and sel["identified"].item()
            v = sel[value].item() if ok else None
            vals.append(float(v) if v is not None else 0.0)
        drawn = any(v > 0 for v in vals)
        ax.barh(
            range(len(groups)),
            vals,
            left=left,
            color=color,
            # a component no group has (not separable, or zero everywhere) is not in the
            # legend: a coloured key for a bar that is nowhere reads as a share of 0
            label=_COMPONENT_LABELS[comp] if drawn else "_nolegend_",
            edgecolor="white",
            linewidth=0.4,
        )
        left = [a + b for a, b in zip(left, vals)]
    ax.set_yticks(range(len(groups)), labels)
    ax.grid(axis="y", visible=False)  # a group's grid line ran on past its bar
    if not any(t > 0 for t in left):
        # constant scores or nothing separable: an empty panel with a negative variance axis
        # looked like a drawing failure
        ax.set_xlim(0.0, 1.0)
        ax.text(
            0.5,
            0.5,
            "no variance to split",
            transform=ax.transAxes,
            ha="center",
            va="center",
            fontsize="small",
            color="0.35",
        )
    else:
        ax.set_xlim(left=0.0)
    ax.invert_yaxis()
    xlabel = label("share") if share else label("component_variance", frame)
    if len(xlabel) > 36:  # a metric's name and units under a half-page panel: two lines
        xlabel = xlabel.replace(" (", "\n(", 1)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(label("pair" if pairs else "model"))
    title = components_legend_title(frame)
    if not ax.get_legend_handles_labels()[0]:
        return fig  # no bar (constant scores): no key, and no matplotlib note about it
    ax.legend(
        loc="lower left",
        bbox_to_anchor=(0.0, 1.0),
        ncol=2,
        fontsize="small",
        frameon=False,
        borderaxespad=0.2,
        handletextpad=0.3,
        title=title,
        title_fontsize="x-small",
    )
    return fig


def components_legend_title(components: pl.DataFrame) -> str | None:
    """The legend title of a components figure: the components it cannot show, or None.

    Components separable in no row of ``components`` are named (they have no bar and no
    legend key; item x variant with one run sits inside the residual); when some are missing
    from some bars only, the title says so generally.
    """
    known = components.filter(pl.col("component").is_in(list(_COMPONENT_COLORS)))
    if known.is_empty():
        return None
    ok = known.group_by("component").agg(
        pl.col("identified").fill_null(False).any().alias("any"),
        pl.col("identified").fill_null(False).all().alias("all"),
    )
    nowhere = set(ok.filter(~pl.col("any"))["component"].to_list())
    # item x variant with one run sits inside the residual; a facet with one level has no
    # variance to show
    names = [
        _COMPONENT_LABELS[c] + (" (inside run / residual)" if c == "item_variant" else "")
        for c in _COMPONENT_COLORS
        if c in nowhere
    ]
    if names:
        return f"not separable here: {', '.join(names)}"
    if not ok["all"].all():
        return "components not separable in a group have no bar there"
    return None


def components_legend(fig: Any, axes: Any, components: pl.DataFrame) -> None:
    """One legend below a figure of :func:`plot_noise_components` panels, instead of theirs.

    It keys every component some panel draws (a panel keys only its own), in stack order,
    with :func:`components_legend_title`; no legend when no panel draws a bar.
    """
    keys: dict[str, Any] = {}
    for ax in axes:
        for handle, text in zip(*ax.get_legend_handles_labels()):
            keys.setdefault(text, handle)
        if ax.get_legend() is not None:
            ax.get_legend().remove()
    order = [t for t in _COMPONENT_LABELS.values() if t in keys]
    if order:
        fig.legend(
            [keys[t] for t in order],
            order,
            loc="outside lower center",
            ncol=len(order),
            fontsize="x-small",
            frameon=False,
            title=components_legend_title(components),
            title_fontsize="x-small",
        )


@plain_text
def plot_plan(result: Any, *, group: dict | None = None, ax: Any = None) -> Any:
    """Predicted interval width against cost for several (variants, runs) allocations.

    Parameters
    ----------
    result : PlanResult
        Result of :func:`evalstats.noise.plan`.
    group : dict, optional
        The group to draw, e.g. ``{"model": "m0", "dataset": "d0"}``; default the first.
    ax : matplotlib.axes.Axes, optional
        Axes to draw into; a new figure otherwise.

    Returns
    -------
    matplotlib.figure.Figure

    Notes
    -----
    Each line adds items to one allocation of variants and runs; the horizontal line is the
    target (the width, or the ``2 z`` multiple of the target standard error for a detection
    plan) and the diamond the recommended design. Both axes are logarithmic.

    Examples
    --------
    >>> from evalstats.noise import plan
    >>> from evalstats.simulate import crossed_scores
    >>> fig = plot_plan(plan(crossed_scores(seed=0), target_width=0.03))  # doctest: +SKIP
    """
    plt, _ = require_plotting()
    curves = getattr(result, "curves", None)
    best = getattr(result, "best", None)
    if curves is None or best is None:
        raise SchemaError(f"expected the result of plan(), got {type(result).__name__}.")
    keys = curves.columns[: curves.columns.index("allocation")]
    if group is None:
        first = best.filter(pl.col("scope") == "group").row(0, named=True)
        group = {k: first[k] for k in keys}
    sel = [pl.col(k) == v if v is not None else pl.col(k).is_null() for k, v in group.items()]
    cur = curves.filter(*sel)
    if cur.height == 0:
        raise SchemaError(f"the plan has no group {group!r}.")
    b = best.filter(*sel, pl.col("scope") == "group").row(0, named=True)
    fig, ax = new_axes(ax, figsize=(5.4, 3.0))
    title = ", ".join(str(v) for v in group.values() if v is not None)
    if not (cur["width"].fill_nan(None).drop_nulls() > 0).any():
        # constant scores: every design has a zero-width interval (nothing on a log axis)
        ax.text(0.5, 0.5, "constant scores: no variance to plan for", ha="center", va="center",
                transform=ax.transAxes, fontsize="small")  # fmt: skip
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_title(title, fontsize="small")
        return fig
    allocs = cur["allocation"].unique(maintain_order=True).to_list()
    palette = colorblind(max(len(allocs), 1))
    for color, alloc in zip(palette, allocs):
        c = cur.filter(pl.col("allocation") == alloc)
        style = "o" if c.height == 1 else "-"
        ax.plot(c["cost"].to_list(), c["width"].to_list(), style, color=color, label=alloc, lw=1.2)
    z_width = b["target_se"] * (b["width"] / b["se"]) if b["feasible"] and b["se"] else None
    if z_width is not None:
        ax.axhline(z_width, color=COLORS["highlight"], lw=0.9, ls="--", label="target")
        ax.plot(b["cost"], b["width"], "D", color=COLORS["reference"], ms=6, label="recommended")
    ax.set_xscale("log")
    ax.set_yscale("log")
    _plain_log(ax.xaxis)
    _plain_log(ax.yaxis)
    ax.set_xlabel(label("cost"))
    ax.set_ylabel(label("width", cur))
    ax.legend(fontsize="x-small", frameon=False, loc="center left", bbox_to_anchor=(1.0, 0.5))
    ax.set_title(title, fontsize="small")
    return fig


def _log_label(v: float) -> str:
    """'0.02', '300', '1e4': a log-axis tick as plain text (no mathtext, which is off)."""
    if not (v > 0 and math.isfinite(v)):
        return ""
    if 1e-3 <= v < 1e4:  # 10,000 and up as 1e4, 1e5: never "10000" beside "1e5"
        return f"{v:g}"
    exp = math.floor(math.log10(v))
    mant = round(v / 10**exp, 6)
    return f"{mant:g}e{exp}" if mant != 1 else f"1e{exp}"


def _plain_log(axis: Any) -> None:
    """Tick labels of a log axis as plain numbers; 2s and 5s labelled when it spans < 1.5 decades.

    Matplotlib's log formatter writes ``$mathdefault{2 times 10^{-2}}$`` (TeX), which is printed
    raw where mathtext is off (a tick label seen in a report).
    """
    from matplotlib import ticker

    axis.set_major_formatter(ticker.FuncFormatter(lambda v, _: _log_label(v)))
    lo, hi = axis.get_view_interval()
    if lo > 0 and hi / lo < 30:

        def minor(v: float, _: Any) -> str:
            if not v > 0:
                return ""
            lead = round(v / 10 ** math.floor(math.log10(v)), 6)
            return _log_label(v) if lead in (2.0, 5.0) else ""

        axis.set_minor_formatter(ticker.FuncFormatter(minor))
    else:
        axis.set_minor_formatter(ticker.NullFormatter())
