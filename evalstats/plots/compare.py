"""Figures of the claim audit: forest plots, score distributions, CD diagram, providers.

Each function draws a result of :mod:`evalstats.compare` and computes no statistics.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from evalstats.errors import SchemaError
from evalstats.io._errors import ERROR_CLASSES
from evalstats.plots._style import (
    COLORS,
    fit_height,
    label,
    new_axes,
    outside_legend,
    plain_text,
    require_plotting,
    resolve_palette,
    tick_labels,
)

__all__ = [
    "plot_critical_difference",
    "plot_differences",
    "plot_intervals",
    "plot_provider_audit",
    "plot_provider_comparison",
    "plot_score_distribution",
    "plot_tail_quality",
]


#: The default configuration's marker in every figure: a black diamond (shape, not colour,
#: tells it apart, so it reads in greyscale and next to any model colour).
_DEFAULT_MARKER: dict[str, Any] = {
    "marker": "D",
    "color": COLORS["reference"],
    "markeredgecolor": "white",
    "markeredgewidth": 0.5,
    "markersize": 5,
}


def _frame(
    result: Any, needed: tuple[str, ...], what: str, attr: str | None = None
) -> pl.DataFrame:
    if attr is not None and hasattr(result, attr):
        result = getattr(result, attr)
    frame = (
        result.to_frame()
        if hasattr(result, "to_frame") and not isinstance(result, pl.DataFrame)
        else result
    )
    if not isinstance(frame, pl.DataFrame):
        raise SchemaError(
            f"expected the result of {what} or a polars DataFrame, got {type(result).__name__}."
        )
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise SchemaError(
            f"the frame lacks column {missing[0]!r} (columns: {', '.join(frame.columns)}); "
            f"pass the result of {what}."
        )
    return frame


def _legend_above(ax: Any) -> None:
    """Legend in one row above the axes, where it cannot cover a row of the forest plot."""
    ax.legend(
        loc="lower left",
        bbox_to_anchor=(0.0, 1.0),
        ncol=2,
        fontsize="small",
        frameon=False,
        borderaxespad=0.2,
        handletextpad=0.3,
    )


def interval_marks(
    ax: Any,
    centre: Any,
    rows: Any,
    low: Any,
    high: Any,
    colors: list[Any],
) -> None:
    """Horizontal intervals with capped ends and a point at ``centre``, one per row ``rows``.

    Drawn as ``errorbar(fmt=marker, capsize=3)`` draws them (bars under the points, caps as
    6-point ticks, the style's line width and marker size), but in three artists for all rows,
    not four per row: the bars (gid ``"bars"``), the caps (``"caps"``) and the points
    (``"points"``). A page of 66 intervals built and drew twice (PNG and
    PDF) about 0.3 s faster.
    """
    import matplotlib as mpl
    import numpy as np
    from matplotlib.collections import LineCollection

    y = np.asarray(rows, dtype=float)
    if not y.size:
        return
    c = np.asarray(centre, dtype=float)
    lo, hi = np.asarray(low, dtype=float), np.asarray(high, dtype=float)
    rgba = [mpl.colors.to_rgba(v) for v in colors]
    rc = mpl.rcParams
    edge = rc["lines.markeredgewidth"]
    bars = np.stack([np.stack([lo, y], axis=1), np.stack([hi, y], axis=1)], axis=1)
    ax.add_collection(
        LineCollection(bars, colors=rgba, linewidths=rc["lines.linewidth"], zorder=2, gid="bars"),
        autolim=True,
    )
    ax.scatter(
        np.concatenate([lo, hi]),
        np.concatenate([y, y]),
        s=6.0**2,
        marker="|",
        c=rgba + rgba,
        linewidths=edge,
        zorder=2,
        gid="caps",
    )
    ax.scatter(
        c,
        y,
        s=rc["lines.markersize"] ** 2,
        marker="o",
        c=rgba,
        edgecolors="face",
        linewidths=edge,
        zorder=2.1,
        gid="points",
    )


#: Result columns that are never group columns of a row label.
_NOT_GROUPS = frozenset({"metric", "model", "model_a", "model_b", "pair", "compared"})


def _group_columns(frame: pl.DataFrame, first: str) -> tuple[str, ...]:
    """The group columns of a result frame: the dataset and every setting held apart.

    A result's group columns come first (``dataset, metric, provider, model_a, ...``; or
    ``model, dataset, metric, provider, over, ...``): those before the compared columns (or,
    for intervals, before ``over``), the metric left out (it names the axis).
    """
    cols = frame.columns
    stop = next((c for c in ("model_a", "over", "n_items") if c in cols), None)
    head = cols[: cols.index(stop)] if stop is not None else ["dataset"]
    return tuple(c for c in head if c not in _NOT_GROUPS and c != first)


def _group_value(column: str, value: object) -> str:
    """A group's value as a label: ``d0``, ``temperature 0.7``, ``provider_a`` (not doubled)."""
    text = "–" if value is None else str(value)  # no value: a dash, as in the other figures
    return text if column == "dataset" or column.lower() in text.lower() else f"{column} {text}"


def _row_labels(frame: pl.DataFrame, first: str, extra: tuple[str, ...] | None = None) -> list[str]:
    """``first`` of each row, with the group columns that vary in brackets: ``m0 (d1, a)``."""
    extra = _group_columns(frame, first) if extra is None else extra
    parts = [c for c in extra if c in frame.columns and frame[c].n_unique() > 1]
    labels = []
    for r in frame.iter_rows(named=True):
        # the dataset by its name, a setting with its column's (provider a, temperature 0.7)
        tail = ", ".join(_group_value(c, r[c]) for c in parts if r[c] is not None)
        labels.append(f"{r[first]} ({tail})" if tail else str(r[first]))
    return labels


@plain_text
def plot_intervals(intervals: Any, *, ax: Any = None, palette: Any = None) -> Any:
    """Forest plot of mean score with interval per model, with the default-configuration marker.

    Parameters
    ----------
    intervals : polars.DataFrame or ReversalAudit
        Result of :func:`evalstats.compare.intervals`, or :func:`evalstats.compare.reversal_audit`
        (its ``models`` frame, which adds ``default_score``, drawn as a black diamond).
    ax : matplotlib.axes.Axes, optional
        Axes to draw into; a new figure otherwise.
    palette : mapping of str to colour, optional
        Colour of each model (default: :func:`~evalstats.plots.model_colors` of the models
        drawn); pass one mapping to all figures to keep each model's colour.

    Returns
    -------
    matplotlib.figure.Figure

    Notes
    -----
    The evaluatology paper's Figure 5a: one row per model (and dataset), a dot at the mean over
    configurations, a bar for ``[ci_low, ci_high]``, and the default configuration's score.

    Examples
    --------
    >>> from evalstats.compare import intervals
    >>> from evalstats.simulate import unit_table
    >>> fig = plot_intervals(intervals(unit_table(n_models=3, seed=0)))  # doctest: +SKIP
    """
    frame = _frame(intervals, ("model", "mean", "ci_low", "ci_high"), "intervals()", "models")
    labels, width, lines = tick_labels(_row_labels(frame, "model"))
    fig, ax = new_axes(ax, figsize=(width, fit_height(frame.height, per_row=0.3 * lines)))
    colors = resolve_palette(sorted(frame["model"].unique().to_list()), palette)
    interval_marks(
        ax,
        frame["mean"],
        range(frame.height),
        frame["ci_low"],
        frame["ci_high"],
        [colors[m] for m in frame["model"]],
    )
    for y, r in enumerate(frame.iter_rows(named=True)):
        if r.get("default_score") is not None:
            ax.plot(
                r["default_score"],
                y,
                linestyle="none",
                label="default configuration" if y == 0 else None,
                **_DEFAULT_MARKER,
            )
    ax.set_yticks(range(frame.height), labels)
    ax.set_ylim(max(frame.height, 1) - 0.5, -0.5)  # first row on top, each row a full band
    ax.set_xlabel(label("score", frame))
    ax.set_ylabel(label("model"))
    if "default_score" in frame.columns:
        _legend_above(ax)
    return fig


@plain_text
def plot_differences(differences: Any, *, ax: Any = None) -> Any:
    """Forest plot of paired differences between models with intervals (and default marker).

    Parameters
    ----------
    differences : polars.DataFrame or ReversalAudit
        Result of :func:`evalstats.compare.compare_models` or ``reversal_audit(...).pairs``
        (whose ``default_difference`` is drawn as a black diamond).
    ax : matplotlib.axes.Axes, optional
        Axes to draw into; a new figure otherwise.

    Returns
    -------
    matplotlib.figure.Figure

    Notes
    -----
    The evaluatology paper's Figure 5b; the dashed line marks no difference.

    Examples
    --------
    >>> from evalstats.compare import compare_models
    >>> from evalstats.simulate import observations
    >>> fig = plot_differences(compare_models(observations(seed=0)))  # doctest: +SKIP
    """
    frame = _frame(
        differences,
        ("model_a", "model_b", "difference", "ci_low", "ci_high"),
        "compare_models() or reversal_audit()",
        "pairs",
    )
    frame = frame.with_columns(pair=pl.col("model_a") + " − " + pl.col("model_b"))
    labels, width, lines = tick_labels(_row_labels(frame, "pair"), rows=frame.height)
    fig, ax = new_axes(ax, figsize=(width, fit_height(frame.height, per_row=0.3 * lines)))
    interval_marks(
        ax,
        frame["difference"],
        range(frame.height),
        frame["ci_low"],
        frame["ci_high"],
        [COLORS["neutral"]] * frame.height,
    )
    for y, r in enumerate(frame.iter_rows(named=True)):
        if r.get("default_difference") is not None:
            ax.plot(
                r["default_difference"],
                y,
                linestyle="none",
                label="default configuration" if y == 0 else None,
                **_DEFAULT_MARKER,
            )
    ax.axvline(0.0, color=COLORS["zero"], linestyle="--", linewidth=0.8)
    ax.set_yticks(range(frame.height), labels)
    ax.set_ylim(max(frame.height, 1) - 0.5, -0.5)  # first row on top, each row a full band
    ax.set_xlabel(label("difference", frame))
    ax.set_ylabel(label("pair"))
    if "default_difference" in frame.columns:
        _legend_above(ax)
    return fig


@plain_text
def plot_score_distribution(units: pl.DataFrame, *, ax: Any = None, palette: Any = None) -> Any:
    """Distribution of each model's scores over configurations (box plot with points).

    Parameters
    ----------
    units : polars.DataFrame
        Unit table (one score per configuration and run), e.g. from
        :func:`evalstats.aggregate.to_units`.
    ax : matplotlib.axes.Axes, optional
        Axes to draw into; a new figure otherwise.
    palette : mapping of str to colour, optional
        Colour of each model (default: :func:`~evalstats.plots.model_colors` of the models
        drawn); pass one mapping to all figures to keep each model's colour.

    Returns
    -------
    matplotlib.figure.Figure

    Notes
    -----
    The evaluatology paper's Figure 4. Draws the recorded unit scores; no statistic is computed
    beyond the box plot's quartiles.

    Examples
    --------
    >>> from evalstats.simulate import unit_table
    >>> fig = plot_score_distribution(unit_table(seed=0))  # doctest: +SKIP
    """
    _, sns = require_plotting()
    frame = _frame(units, ("model", "score"), "to_units()")
    fig, ax = new_axes(ax)
    order = sorted(frame["model"].unique().to_list())
    values = [frame.filter(pl.col("model") == m)["score"].to_numpy() for m in order]
    box = ax.boxplot(
        values, positions=range(len(order)), showfliers=False, patch_artist=True, widths=0.6
    )
    colors = resolve_palette(order, palette)
    for patch, m in zip(box["boxes"], order):
        patch.set_facecolor(colors[m])
        patch.set_alpha(0.6)
    # a plain dict: seaborn takes it without polars' pyarrow bridge (pyarrow is not a dependency)
    data = frame.select("model", "score").to_dict(as_series=False)
    sns.stripplot(
        data=data,
        x="model",
        y="score",
        order=order,
        color=COLORS["neutral"],
        size=2,
        ax=ax,
        jitter=0.2,
    )
    ax.set_xticks(range(len(order)), order)
    ax.set_xlabel(label("model"))
    ax.set_ylabel(label("score", frame))
    return fig


@plain_text
def plot_critical_difference(result: Any, *, ax: Any = None, palette: Any = None) -> Any:
    """Critical-difference diagram: mean ranks, the CD bar, and cliques of tied models.

    Parameters
    ----------
    result : FriedmanResult
        Result of :func:`evalstats.compare.friedman_nemenyi`.
    ax : matplotlib.axes.Axes, optional
        Axes to draw into; a new figure otherwise.
    palette : mapping of str to colour, optional
        Colour of each model (default: :func:`~evalstats.plots.model_colors` of the models
        drawn); pass one mapping to all figures to keep each model's colour.

    Returns
    -------
    matplotlib.figure.Figure

    Notes
    -----
    Demšar (2006): models whose mean ranks differ by less than the critical difference are
    joined by a thick bar (not significantly different).

    Examples
    --------
    >>> from evalstats.compare import friedman_nemenyi
    >>> from evalstats.simulate import unit_table
    >>> res = friedman_nemenyi(unit_table(n_models=4, n_datasets=5, seed=0))
    >>> fig = plot_critical_difference(res)  # doctest: +SKIP
    """
    if not hasattr(result, "critical_difference"):
        raise SchemaError(
            f"expected the result of friedman_nemenyi(), got {type(result).__name__}."
        )
    ranks = result.ranks.sort("mean_rank")
    k = result.n_models
    cd = result.critical_difference
    names, means = ranks["model"].to_list(), ranks["mean_rank"].to_list()
    colors = resolve_palette(sorted(names), palette)
    # cliques: maximal runs of models whose mean ranks are within CD of each other
    cliques: list[tuple[int, int]] = []
    for i in range(len(means)):
        j = i
        while j + 1 < len(means) and means[j + 1] - means[i] < cd:
            j += 1
        if j > i and not any(i0 <= i and j <= j0 for i0, j0 in cliques):
            cliques.append((i, j))
    # labels as in Demsar's Figure 1: the better half on the left, the worse half on the right,
    # each joined to its rank by an elbow line; rows ordered so that no two lines cross
    mid = (k + 1) / 2
    left = [(m, r) for m, r in zip(names, means) if r <= mid]
    right = sorted(((m, r) for m, r in zip(names, means) if r > mid), key=lambda t: -t[1])
    top = -0.1 * (len(cliques) + 1)
    n_rows = max(len(left), len(right), 1)
    fig, ax = new_axes(
        ax, figsize=(4.5, fit_height(n_rows, per_row=0.22, extra=0.9 + 0.1 * len(cliques)))
    )
    ax.grid(False)  # a diagram, not a chart: grid lines would cross the labels
    x_lo, x_hi = 0.5, max(k, 1 + cd) + 0.5
    ax.set_xlim(x_lo, x_hi)
    ax.set_ylim(top - 0.25 * n_rows - 0.1, 0.75)
    ax.hlines(0, 1, k, color=COLORS["neutral"])
    for r in range(1, k + 1):
        ax.vlines(r, -0.05, 0.05, color=COLORS["neutral"])
    ax.hlines(0.4, 1, 1 + cd, color=COLORS["highlight"], linewidth=2)
    ax.text(1 + cd / 2, 0.45, f"CD = {cd:.2f}", ha="center", va="bottom", fontsize="small")
    for side, items in (("left", left), ("right", right)):
        for row, (m, r) in enumerate(items, start=1):
            y = top - 0.25 * (row - 1)
            end = x_lo if side == "left" else x_hi
            ax.plot([r, r, end], [0, y, y], color=colors[m], linewidth=0.8)
            ax.plot(r, 0, "o", color=colors[m], markersize=3)
            ax.text(
                end + (-0.05 if side == "left" else 0.05),
                y,
                f"{m} ({r:.2f})",
                va="center",
                ha="right" if side == "left" else "left",
                fontsize="small",
            )
    for level, (i, j) in enumerate(cliques, start=1):
        ax.hlines(
            -0.1 * level, means[i] - 0.03, means[j] + 0.03, color=COLORS["reference"], linewidth=3
        )
    ax.set_yticks([])
    for side in ("left", "right", "bottom"):
        ax.spines[side].set_visible(False)
    # every rank labelled up to 15 models, then every 2nd or 5th: 30 labels do not fit 4.5 in
    step = 1 if k <= 15 else 2 if k <= 30 else 5
    ax.set_xticks(range(1, k + 1, step))
    ax.xaxis.set_ticks_position("top")
    ax.set_xlabel(label("mean_rank"))
    return fig


@plain_text
def plot_provider_comparison(audit: Any, *, ax: Any = None, palette: Any = None) -> Any:
    """Score per model and provider under both error policies, with intervals.

    Parameters
    ----------
    audit : ProviderAudit or polars.DataFrame
        Result of :func:`evalstats.compare.provider_audit` (its ``scores`` frame).
    ax : matplotlib.axes.Axes, optional
        Axes to draw into; a new figure otherwise.
    palette : mapping of str to colour, optional
        Colour of each model (default: :func:`~evalstats.plots.model_colors` of the models
        drawn); pass one mapping to all figures to keep each model's colour.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from evalstats.compare import provider_audit
    >>> from evalstats.simulate import demo_observations
    >>> fig = plot_provider_comparison(provider_audit(demo_observations()))  # doctest: +SKIP
    """
    frame = _frame(
        audit,
        ("model", "provider", "policy", "mean", "ci_low", "ci_high"),
        "provider_audit()",
        "scores",
    )
    labels, width, lines = tick_labels(
        [f"{r['model']} @ {r['provider']}" for r in frame.iter_rows(named=True)], base=3.8
    )
    fig, ax = new_axes(ax, figsize=(width, fit_height(frame.height, per_row=0.3 * lines)))
    markers = {"errors_as_failures": "o", "errors_excluded": "s"}
    colors = resolve_palette(sorted(frame["model"].unique().to_list()), palette)
    seen = set()
    for y, r in enumerate(frame.iter_rows(named=True)):
        lab = r["policy"].replace("_", " ") if r["policy"] not in seen else None
        seen.add(r["policy"])
        ax.errorbar(
            r["mean"],
            y,
            xerr=[[r["mean"] - r["ci_low"]], [r["ci_high"] - r["mean"]]],
            fmt=markers.get(r["policy"], "o"),
            color=colors[r["model"]],
            capsize=3,
            label=lab,
        )
    ax.set_yticks(range(frame.height), labels)
    ax.set_ylim(max(frame.height, 1) - 0.5, -0.5)  # first row on top, each row a full band
    ax.set_xlabel(label("score", frame))
    ax.set_ylabel(label("model_provider"))
    _legend_above(ax)
    return fig


@plain_text
def plot_tail_quality(audit: Any, *, ax: Any = None, palette: Any = None) -> Any:
    """Tail-to-quality curves: share of calls answered correctly within latency t.

    Parameters
    ----------
    audit : ProviderAudit or polars.DataFrame
        Result of :func:`evalstats.compare.provider_audit` (its ``tail_quality`` frame).
    ax : matplotlib.axes.Axes, optional
        Axes to draw into; a new figure otherwise.
    palette : mapping of str to colour, optional
        Colour of each model (default: :func:`~evalstats.plots.model_colors` of the models
        drawn); pass one mapping to all figures to keep each model's colour.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from evalstats.compare import provider_audit
    >>> from evalstats.simulate import demo_observations
    >>> fig = plot_tail_quality(provider_audit(demo_observations()))  # doctest: +SKIP
    """
    frame = _frame(
        audit, ("model", "provider", "latency_s", "quality"), "provider_audit()", "tail_quality"
    )
    if frame.height == 0:
        raise SchemaError("the tail-to-quality frame is empty: the observations had no latency_s.")
    fig, ax = new_axes(ax)
    colors = resolve_palette(sorted(frame["model"].unique().to_list()), palette)
    styles = ["-", "--", ":", "-."]
    providers = sorted(frame["provider"].unique().to_list())
    for (m, p), g in frame.group_by(["model", "provider"], maintain_order=True):
        ax.plot(
            g["latency_s"],
            g["quality"],
            color=colors[m],
            linestyle=styles[providers.index(p) % len(styles)],
            label=f"{m} @ {p}",
        )
    ax.set_xlabel(label("latency_s"))
    ax.set_ylabel(label("quality"))
    right = _flat_from(frame)
    if right is not None:  # the curves are flat beyond: the rest of the grid shows nothing
        ax.set_xlim(left=0, right=right)
    outside_legend(ax, fontsize="small")
    return fig


def _flat_from(frame: pl.DataFrame, share: float = 0.995) -> float | None:
    """The latency by which every curve has reached ``share`` of its final value, plus 10 %.

    The latency grid runs to the slowest call (60 s in the demo) while every curve flattens by
    4 s; the axis stops where the last curve does. None when that is the grid's end anyway.
    """
    reach = []
    for _, g in frame.group_by(["model", "provider"]):
        g = g.sort("latency_s")
        final = g["quality"][-1]
        if final is None or not final > 0:
            continue
        hit = g.filter(pl.col("quality") >= share * final)["latency_s"]
        if hit.len():
            reach.append(float(hit[0]))
    if not reach:
        return None
    end = float(frame["latency_s"].max())
    right = 1.1 * max(reach)
    return right if 0 < right < 0.8 * end else None


#: Colour of a provider's tick label by the first word of its verdict (``provider_audit``).
_VERDICT_COLORS = {
    "reference": "black",
    "lower": "#b2182b",
    "every": "#b2182b",
    "higher": "#2166ac",
    "within": "#4d4d4d",
    "identical": "#8c510a",
    "no": "#999999",
}


@plain_text
def plot_provider_audit(audit: Any, *, model: str | None = None, ax: Any = None) -> Any:
    """One model's providers, sorted: both scores with intervals, and errors by class beside.

    Left panel: the score with errors scored as failures (filled circle) and with errors
    excluded (open square), each with its interval; providers sorted by the first, the
    reference in bold, each tick label coloured by the provider's verdict (red lower, blue
    higher, grey within noise, brown identical outputs). Right panel: the error rate stacked
    by class. Tick labels shrink with the number of providers, so 40 to 80 endpoints fit on
    one page.

    Parameters
    ----------
    audit : ProviderAudit
        Result of :func:`evalstats.compare.provider_audit`.
    model : str, optional
        The model to draw; required when the audit holds several.
    ax : matplotlib.axes.Axes, optional
        Axes for the score panel (the error panel is then left out); a new two-panel figure
        otherwise.

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    SchemaError
        ``model`` is missing while the audit holds several models, or names none of them.

    Examples
    --------
    >>> from evalstats.compare import provider_audit
    >>> from evalstats.simulate import demo_observations
    >>> fig = plot_provider_audit(provider_audit(demo_observations()), model="m0")  # doctest: +SKIP
    """
    plt, _ = require_plotting()
    policies, versus, errors = audit.policies, audit.versus, audit.errors
    provider = getattr(audit, "provider", None) or (
        next(c for c in versus.columns if c not in ("model", "metric"))
        if len(versus.columns)
        else "provider"
    )
    # settings the providers were compared at each level of (a temperature beside templates):
    # one row per (provider, level), labelled with both
    held = [b for b in getattr(audit, "by", ()) if b not in ("model", "metric")]

    def row_label() -> pl.Expr:
        parts = [pl.col(provider).cast(pl.String)]
        for h in held:
            parts += [pl.lit(f" · {h} "), pl.col(h).cast(pl.String)]
        return pl.concat_str(parts, ignore_nulls=True)

    models = (
        sorted({str(m) for m in policies["model"].to_list()}) if "model" in policies.columns else []
    )
    if model is None:
        if len(models) > 1:
            raise SchemaError(
                f"the audit holds {len(models)} models ({', '.join(models[:5])}"
                f"{', ...' if len(models) > 5 else ''}); name one with `model`."
            )
        model = models[0] if models else None
    elif model not in models:
        raise SchemaError(f"`model` {model!r} is not in the audit (models: {', '.join(models)}).")
    pick = (lambda f: f.filter(pl.col("model") == model)) if model is not None else (lambda f: f)
    pol = pick(policies).sort("as_failures", descending=True, nulls_last=True)
    ver = pick(versus)
    verdict = dict(zip(ver.select(row_label()).to_series(), ver["verdict"])) if ver.height else {}
    names = [str(p) for p in pol.select(row_label()).to_series().to_list()]
    n = len(names)
    # the style's tick size up to 25 rows, its smallest size beyond (the style's sizes only)
    size = None if n <= 25 else "x-small"
    height = fit_height(n, per_row=0.26 if n <= 25 else 0.11, extra=1.0)
    if ax is None:
        fig, (ax, ax_err) = plt.subplots(
            1,
            2,
            # long row labels (a template and a temperature) take width from the panels
            figsize=(6.8 + 0.055 * max(0, max(map(len, names), default=0) - 24), height),
            sharey=True,
            layout="constrained",
            gridspec_kw={"width_ratios": [3, 1.3]},
        )
    else:
        fig, ax_err = ax.figure, None
    y = list(range(n))
    # the open square is hollow and under the circle: where both scores are equal (no errors)
    # the circle shows inside the square instead of being hidden by it
    for col, marker, face, lab in (
        ("as_failures", "o", None, "errors as failures"),
        ("excluded", "s", "none", "errors excluded"),
    ):
        mean = pol[col].cast(pl.Float64).to_numpy()
        # an interval that is not defined (one item) draws no bar, not a NaN one
        low = (mean - pol[f"{col}_ci_low"].cast(pl.Float64).to_numpy()).clip(0)
        high = (pol[f"{col}_ci_high"].cast(pl.Float64).to_numpy() - mean).clip(0)
        low[low != low] = 0.0
        high[high != high] = 0.0
        ax.errorbar(
            mean,
            y,
            xerr=[low, high],
            fmt=marker,
            markersize=4 if n <= 25 else 3,
            color=COLORS.get("reference", "black") if marker == "o" else "#555555",
            markerfacecolor=face,
            capsize=2 if n <= 25 else 0,
            linewidth=0.8,
            label=lab,
            zorder=3 if marker == "o" else 2,
        )
    ax.set_yticks(y, names, fontsize=size)
    for tick, name in zip(ax.get_yticklabels(), names):
        v = verdict.get(name, "")
        tick.set_color(_VERDICT_COLORS.get(v.split(" ")[0], "black") if v else "black")
        if v == "reference":
            tick.set_fontweight("bold")
    ax.set_ylim(max(n, 1) - 0.5, -0.5)
    ax.set_xlabel(label("score", pol))
    rows = " · ".join([provider, *held])
    ax.set_ylabel(f"{model}: {rows}" if model is not None else rows)
    _legend_above(ax)
    if ax_err is not None:
        err = pick(errors).filter(pl.col("category") != "any", pl.col("n_errors") > 0)
        classes = sorted(set(err["category"].to_list()))
        left = [0.0] * n
        cmap = plt.get_cmap("tab10")
        # one colour per class in every figure (the order of ERROR_CLASSES), not per figure
        known = [*ERROR_CLASSES, *(c for c in classes if c not in ERROR_CLASSES)]
        for cls in classes:
            of = err.filter(pl.col("category") == cls)
            rate = dict(zip(of.select(row_label()).to_series(), of["rate"]))
            width = [float(rate.get(p, 0.0)) for p in names]
            ax_err.barh(
                y,
                width,
                left=left,
                height=0.7,
                color=cmap(known.index(cls)) if known.index(cls) < 10 else "#444444",
                label=cls.replace("_", " "),
            )
            left = [a + b for a, b in zip(left, width)]
        ax_err.set_xlabel("error rate")
        ax_err.set_xlim(0, max([*left, 0.05]) * 1.05)
        if classes:  # above the panel, as the score legend: inside, it covered the top bars
            ax_err.legend(
                fontsize="x-small",
                frameon=False,
                loc="lower left",
                bbox_to_anchor=(0.0, 1.0),
                ncol=2 if len(classes) > 1 else 1,
                borderaxespad=0.2,
                handlelength=1.0,
                columnspacing=0.8,
            )
        ax_err.tick_params(axis="y", labelleft=False)
    return fig
