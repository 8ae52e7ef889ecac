"""Figures of configuration attribution: η² bars, SHAP importance with null band, interaction heatmap.

Each function draws a result of :mod:`evalstats.attribution` and computes no statistics.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from evalstats.errors import SchemaError
from evalstats.plots._style import (
    COLORS,
    label,
    new_axes,
    outside_legend,
    plain_text,
    require_plotting,
    tick_labels,
)

__all__ = ["plot_anova_effects", "plot_attribution", "plot_interaction_heatmap"]


def _frame(result: Any, needed: tuple[str, ...], what: str) -> pl.DataFrame:
    frame = result.to_frame() if hasattr(result, "to_frame") else result
    if not isinstance(frame, pl.DataFrame):
        raise SchemaError(
            f"expected the result of {what} or its to_frame(), got {type(result).__name__}."
        )
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise SchemaError(
            f"the frame lacks column {missing[0]!r} (columns: "
            f"{', '.join(frame.columns)}); pass the result of {what}."
        )
    return frame


def _stars(p: float | None) -> str:
    if p is None or p != p:
        return ""
    return "***" if p < 0.001 else "**" if p < 0.01 else "*" if p < 0.05 else ""


@plain_text
def plot_anova_effects(anova: Any, *, ax: Any = None, max_terms: int | None = 20) -> Any:
    """Bar chart of η² per term, with significance marks from the permutation p-values.

    Parameters
    ----------
    anova : AnovaResult or polars.DataFrame
        Result of :func:`evalstats.attribution.factor_anova` (or its ``to_frame()``).
    ax : matplotlib.axes.Axes, optional
        Axes to draw into; a new figure otherwise.
    max_terms : int or None, default 20
        Draw the largest terms only (None: all).

    Returns
    -------
    matplotlib.figure.Figure

    Notes
    -----
    Marks: ``*`` p < 0.05, ``**`` p < 0.01, ``***`` p < 0.001, from ``pvalue_perm`` (``pvalue``
    when no permutations were run). The residual row is not drawn. A term whose η² is NaN
    (constant scores, a fully aliased term; :func:`~evalstats.attribution.factor_anova` warns)
    gets no bar and the mark ``n/a``.

    Examples
    --------
    >>> fig = plot_anova_effects(res)  # doctest: +SKIP
    """
    from matplotlib.ticker import MaxNLocator

    frame = _frame(anova, ("term", "eta_sq", "pvalue", "pvalue_perm"), "factor_anova")
    rows = frame.filter(pl.col("term") != "Residual")
    if max_terms is not None:
        rows = rows.head(max_terms)
    fig, ax = new_axes(ax, figsize=(3.4, 0.9 + 0.22 * max(rows.height, 1)))
    terms = rows["term"].to_list()[::-1]
    raw = rows["eta_sq"].fill_null(0.0).to_list()[::-1]
    # NaN η² (constant scores, an aliased term: factor_anova warned) has no bar and no share of
    # the axis; it is marked "n/a" so that it does not read as an effect of 0
    undefined = [e != e for e in raw]
    eta = [0.0 if u else e for e, u in zip(raw, undefined)]
    pvals = [pp if pp is not None else p for pp, p in zip(rows["pvalue_perm"], rows["pvalue"])]
    bars = ax.barh(range(len(terms)), eta, color=COLORS["accent"])
    for bar, p, u in zip(bars, pvals[::-1], undefined):
        mark = "n/a" if u else _stars(p)
        if mark:
            ax.annotate(
                mark,
                (bar.get_width(), bar.get_y() + bar.get_height() / 2),
                xytext=(2, 0),
                textcoords="offset points",
                va="center",
                fontsize="small",
            )
    ax.set_yticks(range(len(terms)), terms)
    ax.grid(axis="y", visible=False)  # a term's grid line ran on past its bar, through the marks
    ax.xaxis.set_major_locator(MaxNLocator(nbins=4))
    ax.set_xlabel(label("eta_sq"))
    ax.set_ylabel(label("term"))
    if eta:
        ax.set_xlim(0, max(eta) * 1.15 or 1.0)
    return fig


@plain_text
def plot_attribution(result: Any, *, ax: Any = None) -> Any:
    """Mean |SHAP| per factor with its null band from refits on permuted scores.

    Parameters
    ----------
    result : AttributionResult or polars.DataFrame
        Result of :func:`evalstats.attribution.attribute` (or its ``to_frame()``).
    ax : matplotlib.axes.Axes, optional
        Axes to draw into; a new figure otherwise.

    Returns
    -------
    matplotlib.figure.Figure

    Notes
    -----
    The grey band of each factor spans [0, ``null_high``]; a bar that ends beyond it is above
    the null (``above_null``), drawn dark, otherwise light.

    Examples
    --------
    >>> fig = plot_attribution(res)  # doctest: +SKIP
    """
    from matplotlib.ticker import MaxNLocator

    frame = _frame(result, ("factor", "mean_abs_shap", "null_high", "above_null"), "attribute")
    fig, ax = new_axes(ax, figsize=(3.4, 0.9 + 0.25 * max(frame.height, 1)))
    factors = frame["factor"].to_list()[::-1]
    shap = frame["mean_abs_shap"].to_list()[::-1]
    high = frame["null_high"].to_list()[::-1]
    above = frame["above_null"].to_list()[::-1]
    pos = range(len(factors))
    if any(h is not None for h in high):
        ax.barh(pos, [h or 0.0 for h in high], height=0.8, color=COLORS["band"], label="null band")
    ax.barh(
        pos,
        shap,
        height=0.4,
        color=[COLORS["accent"] if a else COLORS["accent_light"] for a in above],
        label="observed",
    )
    ax.set_yticks(list(pos), factors)
    ax.grid(axis="y", visible=False)
    ax.xaxis.set_major_locator(MaxNLocator(nbins=4))
    ax.set_xlabel(label("mean_abs_shap"))
    ax.set_ylabel(label("factor"))
    outside_legend(ax, fontsize="x-small")
    return fig


@plain_text
def plot_interaction_heatmap(cells: pl.DataFrame, *, ax: Any = None, annotate: bool = True) -> Any:
    """Heatmap of mean score over the cells of a two-way term.

    Parameters
    ----------
    cells : polars.DataFrame
        Result of :func:`evalstats.attribution.interaction_means` (``term, level_a, level_b,
        score, n``). For the strongest interaction, pass
        ``interaction_means(units, term=anova.strongest_interaction())``.
    ax : matplotlib.axes.Axes, optional
        Axes to draw into; a new figure otherwise.
    annotate : bool, default True
        Write each cell's mean in it.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = plot_interaction_heatmap(interaction_means(units, term="shots:cot"))  # doctest: +SKIP
    """
    frame = _frame(cells, ("term", "level_a", "level_b", "score"), "interaction_means")
    _, sns = require_plotting()
    a, b = frame["term"][0].split(":")
    rows = frame["level_a"].unique(maintain_order=True).to_list()
    cols = frame["level_b"].unique(maintain_order=True).to_list()
    lookup = {(r["level_a"], r["level_b"]): r["score"] for r in frame.iter_rows(named=True)}
    grid = [[lookup.get((ra, cb), float("nan")) for cb in cols] for ra in rows]
    row_labels, _, lines = tick_labels(rows, width=22)
    col_labels, _, _ = tick_labels(
        [repr(c)[1:-1] if c.strip() != c or not c else c for c in cols], width=12
    )
    longest = max((len(line) for t in row_labels for line in t.split("\n")), default=0)
    fig, ax = new_axes(
        ax,
        figsize=(1.6 + 0.6 * len(cols) + 0.055 * longest, 1.0 + 0.3 * lines * len(rows)),
    )
    sns.heatmap(
        grid,
        ax=ax,
        annot=annotate,
        fmt=".3f",
        cmap="viridis",
        xticklabels=col_labels,
        yticklabels=row_labels,
        cbar_kws={"label": label("score")},
        annot_kws={"fontsize": "x-small"},
    )
    ax.set_xlabel(label(b))
    ax.set_ylabel(label(a))
    ax.tick_params(axis="y", rotation=0)  # level names read across, as the columns' do
    ax.set_title(frame["term"][0])
    return fig
