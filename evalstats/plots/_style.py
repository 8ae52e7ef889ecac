"""Shared figure style: display names, one colour per model, paper style, axes creation.

Nothing here changes matplotlib's global state at import; :func:`paper_style` is a context
manager.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from evalstats._text import MAX_LABEL_CHARS, shorten
from evalstats.errors import MissingDependencyError

__all__ = [
    "COLORS",
    "DPI",
    "LABELS",
    "OTHER_COLOR",
    "PAGE_HEIGHT_IN",
    "PAGE_WIDTH_IN",
    "TOP_K",
    "fit_height",
    "highlight_palette",
    "label",
    "model_colors",
    "new_axes",
    "outside_legend",
    "slant_xticks",
    "paper_style",
    "plain_text",
    "require_plotting",
    "resolve_palette",
    "row_panel_height",
    "slanted_drop",
    "slanted_labels",
    "text_inches",
    "tick_label_points",
    "tick_labels",
    "wrap_label",
]

#: Colours of the non-model elements, from the same colour-blind-safe palette as the models
#: (seaborn's ``colorblind``, after Okabe and Ito) or greys. Figures draw with these, never
#: ad-hoc names. Lines that mark a threshold next to model curves are never a model colour.
COLORS: dict[str, str] = {
    "accent": "#0173b2",  # the one data series of a figure without models (bars, effects)
    "accent_light": "#56b4e9",  # the same series, de-emphasised (below a null band)
    "secondary": "#029e73",  # a second series (variance next to the mean)
    # thresholds and critical values (epsilon, CD bar, a target): near-black, because every
    # colour of the palette is some model's in a figure with ten or more models
    "highlight": "0.15",
    "reference": "0.1",  # the default configuration's marker (a black diamond)
    "neutral": "0.25",  # text-like marks: points, pair differences, axes of a diagram
    "band": "0.85",  # null bands and other backgrounds
    "zero": "0.5",  # the no-difference line
}

#: The figure budget: no figure is wider or taller than a page of text (inches), so at the
#: print resolution :data:`DPI` no PNG exceeds 2100 × 2700 pixels. Plot functions cap their
#: height at it (rows get thinner); the report splits larger figures into pages.
PAGE_WIDTH_IN = 7.0
PAGE_HEIGHT_IN = 9.0

#: Resolution of saved figures (dots per inch): print quality.
DPI = 300

#: With more models than this, the report colours the best ``TOP_K`` and draws the rest grey.
TOP_K = 8

#: Colour of the models outside the highlighted ones.
OTHER_COLOR = "0.72"


def fit_height(n_rows: int, *, per_row: float = 0.3, extra: float = 0.6) -> float:
    """Figure height (inches) for ``n_rows`` rows, capped at :data:`PAGE_HEIGHT_IN`."""
    return min(PAGE_HEIGHT_IN, extra + per_row * max(n_rows, 1))


def highlight_palette(
    palette: dict[str, Any], ranked: Iterable[str], k: int = TOP_K
) -> dict[str, Any]:
    """``palette`` with only the first ``k`` models of ``ranked`` keeping their colours.

    The others are drawn in :data:`OTHER_COLOR`. With ``k`` or fewer models the palette is
    returned as it is. A highlighted model keeps the colour ``palette`` gives it, so it has the
    same colour in every figure.
    """
    ranked = list(ranked)
    if len(palette) <= k:
        return dict(palette)
    top = set(ranked[:k])
    return {m: (c if m in top else OTHER_COLOR) for m, c in palette.items()}


#: Display names of result columns (axis labels come from here, never from ad-hoc strings).
#: Scores are proportions, so their unit is written "(0–1)"; counts and lengths name theirs.
LABELS: dict[str, str] = {
    "score": "Accuracy (0–1)",
    "mean": "Mean accuracy (0–1)",
    "variance": "Variance of accuracy",
    "n": "Number of variants n",
    "delta_mean": "|Δ(n)| (accuracy, 0–1)",
    "eta_sq": "η²",
    "partial_eta_sq": "Partial η²",
    "tar_a": "TARa@N",
    "tar_r": "TARr@N",
    "spread": "Spread, max − min (0–1)",
    "acc_mean": "Mean accuracy over runs (0–1)",
    "input_len": "Input length (words)",
    "output_len": "Output length (words)",
    "latency_s": "Latency (s)",
    "model": "Model",
    "dataset": "Dataset",
    "variant": "Variant",
    "statistic": "Statistic",
    "pvalue": "p-value",
    "difference": "Difference in accuracy (0–1)",
    "mean_abs_shap": "Mean |SHAP| (accuracy, 0–1)",
    "term": "Term",
    "factor": "Factor",
    "mean_rank": "Mean rank",
    "quality": "Share answered correctly within t",
    "runs": "Runs",
    "model_provider": "Model @ provider",
    "pair": "Model pair",
    "component_variance": "Variance of an item score (accuracy, 0–1)",
    "share": "Share of the variance",
    "cost": "Cost (call units)",
    "width": "Interval width (accuracy, 0–1)",
}


#: Score-valued columns, labelled after the metric when it is not an accuracy on [0, 1].
_SCORE_LIKE: dict[str, str] = {
    "score": "{m}",
    "mean": "Mean {m}",
    "variance": "Variance of {m}",
    "delta_mean": "|Δ(n)| ({m})",
    "spread": "Spread of {m}, max − min",
    "acc_mean": "Mean {m} over runs",
    "difference": "Difference in {m}",
    "mean_abs_shap": "Mean |SHAP| ({m})",
    "component_variance": "Variance of an item score ({m}, squared units)",
    "width": "Interval width ({m})",
}


def _metric_of(frame: Any) -> Any:
    """The one MetricInfo of a frame with a ``metric`` column; None for accuracies or unknown."""
    import polars as pl

    from evalstats.schema import MetricInfo, metric_info

    if not isinstance(frame, (pl.DataFrame, pl.LazyFrame)):
        return None
    names = frame.collect_schema().names()
    if "metric" not in names:
        return None
    infos = metric_info(frame)
    if len(infos) != 1:
        return MetricInfo(f"score ({len(infos)} metrics)") if infos else None
    info = next(iter(infos.values()))
    if info.unit_interval and info.higher_is_better and info.name in ("score", "accuracy", "acc"):
        return None  # an accuracy: the registered labels
    if "metric_low" not in names and "higher_is_better" not in names:
        # only the name is known here: an accuracy keeps its label, another metric its name
        return None if info.name in ("score", "accuracy", "acc") else info.name
    if "metric_low" not in names:  # the direction only
        return (info.name, info.higher_is_better)
    if info.low is None and info.high is None:
        # no declared range: not "unbounded" (nobody said so). An accuracy-named metric whose
        # scores all lie in [0, 1] keeps the accuracy label, as the analyses treat it; any
        # other metric is named with its direction only
        if info.name in ("score", "accuracy", "acc") and info.higher_is_better:
            if "score" in names:
                lo, hi = (
                    frame.lazy()
                    .select(pl.col("score").min().alias("lo"), pl.col("score").max().alias("hi"))
                    .collect()
                    .row(0)
                )
                if lo is not None and lo >= 0 and hi <= 1:
                    return None
        return (info.name, info.higher_is_better)
    return info


def label(column: str, frame: Any = None) -> str:
    """Display name of ``column`` (the column name itself when none is registered).

    With ``frame`` (the result or unit frame drawn), score-valued columns of a metric other
    than an accuracy on [0, 1] are named after the metric, with its range and direction:
    ``"abs_error (range [0, inf), lower is better)"``.
    """
    info = _metric_of(frame) if column in _SCORE_LIKE else None
    if info is None:
        return LABELS.get(column, column.replace("_", " "))
    if isinstance(info, str):
        return _SCORE_LIKE[column].format(m=info)
    if isinstance(info, tuple):
        name, hib = info
        return _SCORE_LIKE[column].format(m=name) + ("" if hib else " (lower is better)")
    scale = info.describe().split(": ", 1)[1]
    if info.higher_is_better and scale.endswith(", higher is better"):
        scale = scale[: -len(", higher is better")]
    return f"{_SCORE_LIKE[column].format(m=info.name)} ({scale})"


def require_plotting() -> tuple[Any, Any]:
    """``(matplotlib.pyplot, seaborn)``; a clear error if they are missing.

    seaborn is imported when a plot first uses it (a heatmap, a strip plot): its import (with
    pandas and scipy.stats) cost 1.6 s of CPU in every figure worker of a report whose
    figures never call it. The style, the palette and most plots need matplotlib only.
    """
    try:
        import importlib.util

        import matplotlib

        if matplotlib.get_backend().lower() not in ("agg", "pdf", "svg") and not _has_display():
            matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        if importlib.util.find_spec("seaborn") is None:
            raise ImportError("No module named 'seaborn'")
    except ImportError as exc:  # pragma: no cover - seaborn is a dependency
        raise MissingDependencyError(
            f"plotting needs matplotlib and seaborn ({exc}); pip install seaborn"
        ) from None
    return plt, _SEABORN


class _LazySeaborn:
    """seaborn, imported at the first attribute read."""

    def __getattr__(self, name: str) -> Any:
        import seaborn

        return getattr(seaborn, name)


_SEABORN = _LazySeaborn()

#: seaborn's "colorblind" palette (its ``SEABORN_PALETTES``), the models' colours.
COLORBLIND = (
    "#0173B2",
    "#DE8F05",
    "#029E73",
    "#D55E00",
    "#CC78BC",
    "#CA9161",
    "#FBAFE4",
    "#949494",
    "#ECE133",
    "#56B4E9",
)


def colorblind(n: int) -> list[tuple[float, float, float]]:
    """``n`` colours of :data:`COLORBLIND` (cycled), as seaborn's ``color_palette`` gives them."""
    from matplotlib.colors import to_rgb

    return [to_rgb(COLORBLIND[i % len(COLORBLIND)]) for i in range(n)]


_F = TypeVar("_F", bound=Callable[..., Any])


def plain_text(function: _F) -> _F:
    """Decorator of the public plot functions: names from the input are drawn as plain text.

    Inside the function matplotlib's mathtext parser is off, so a model called ``a$b$c`` is
    drawn as written instead of failing to parse; afterwards every text of the returned figure
    is cut to :data:`evalstats._text.MAX_LABEL_CHARS` characters a line, so a 20,000-character
    name cannot make a figure thousands of inches wide.
    """

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        plt, _ = require_plotting()
        with plt.rc_context({"text.parse_math": False}):
            fig = function(*args, **kwargs)
        # a panel drawn into a given axes: its texts only (a page of 24 panels would otherwise
        # go over every text of the page 24 times)
        ax = kwargs.get("ax")
        limit_text(fig, axes=None if ax is None else [ax])
        return fig

    return wrapper  # type: ignore[return-value]


def limit_text(fig: Any, limit: int = MAX_LABEL_CHARS, *, axes: list[Any] | None = None) -> None:
    """Cut every text of ``fig`` (or of ``axes`` only) to ``limit`` characters per line.

    Texts that exist are cut now; tick labels, which matplotlib makes only when it draws (a
    categorical axis of model names), are cut by wrapping each axis's formatters.
    """
    for text in _texts(fig if axes is None else axes):
        value = text.get_text()
        if len(value) > limit or value.count("\n") >= MAX_LABEL_LINES:
            text.set_text(_cut(value, limit))
    for ax in fig.axes if axes is None else axes:
        for axis in (ax.xaxis, ax.yaxis):
            for which in ("major", "minor"):
                getter = getattr(axis, f"get_{which}_formatter")
                setter = getattr(axis, f"set_{which}_formatter")
                inner = getter()
                if not isinstance(inner, _ShortFormatter.kind()):
                    # keep the axis's "default formatter" flag: an axis not drawn yet (the
                    # next panel of the same figure) must still take the categorical
                    # formatter its data installs (else its labels read 0, 1, ...)
                    flag = f"isDefault_{which[:3]}fmt"
                    default = getattr(axis, flag, False)
                    setter(_ShortFormatter.wrap(inner, limit))
                    setattr(axis, flag, default)


def _texts(root: Any) -> Iterator[Any]:
    """The texts under ``root`` (an artist or a list of them), tick labels left out.

    Tick labels go through the axes' formatters (:func:`limit_text`); walking into an axis
    would make its tick objects just to read them.
    """
    from matplotlib.axis import Axis
    from matplotlib.text import Text

    stack = list(root) if isinstance(root, list) else [root]
    while stack:
        artist = stack.pop()
        if isinstance(artist, Axis):
            yield from (artist.label, artist.offsetText)
            continue
        if isinstance(artist, Text):
            yield artist
        stack.extend(artist.get_children())


#: Most lines of one text in a figure: a name of 50,000 lines made a figure that Agg could not
#: allocate (``std::bad_alloc``).
MAX_LABEL_LINES = 12


def _cut(value: str, limit: int) -> str:
    lines = str(value).split("\n")
    if len(lines) > MAX_LABEL_LINES:
        lines = [*lines[: MAX_LABEL_LINES - 1], "…"]
    return "\n".join(shorten(line, limit) for line in lines)


class _ShortFormatter:
    """A matplotlib formatter that cuts the labels of another to a length."""

    _cls: Any = None

    @classmethod
    def kind(cls) -> Any:
        if cls._cls is None:
            from matplotlib.ticker import Formatter

            class Short(Formatter):
                def __init__(self, inner: Any, limit: int) -> None:
                    self.inner = inner
                    self.limit = limit

                def __call__(self, x: Any, pos: Any = None) -> str:
                    return _cut(self.inner(x, pos), self.limit)

                def format_ticks(self, values: Any) -> list[str]:
                    # tick labels are made when the figure is drawn, outside plain_text's
                    # mathtext-off context (a `$` in a model name reached the parser there);
                    # the axis has made them by now
                    axis = getattr(self, "axis", None)
                    if axis is not None:
                        for tick in (*axis.majorTicks, *axis.minorTicks):
                            tick.label1.set_parse_math(False)
                            tick.label2.set_parse_math(False)
                    return [_cut(v, self.limit) for v in self.inner.format_ticks(values)]

                def set_locs(self, locs: Any) -> None:
                    self.inner.set_locs(locs)

                def get_offset(self) -> str:
                    return self.inner.get_offset()

                def format_data_short(self, value: Any) -> str:
                    return self.inner.format_data_short(value)

            cls._cls = Short
        return cls._cls

    @classmethod
    def wrap(cls, inner: Any, limit: int) -> Any:
        return cls.kind()(inner, limit)


def _has_display() -> bool:
    import os

    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def model_colors(models: Iterable[str]) -> dict[str, Any]:
    """One colour per model, stable across figures: colour-blind-safe palette in sorted order.

    The same set of models always gets the same colours, whatever order a figure draws them in.
    """
    _, sns = require_plotting()
    names = sorted(set(models))
    palette = colorblind(max(len(names), 1))
    if len(names) > 10:
        palette = sns.color_palette("husl", n_colors=len(names))
    return dict(zip(names, palette))


def resolve_palette(models: Iterable[str], palette: Any = None) -> dict[str, Any]:
    """Colours for ``models``: those ``palette`` gives, else :func:`model_colors`.

    Pass one ``palette = model_colors(all_models)`` to every figure of a report so that a model
    keeps its colour even in a figure that shows only some of the models. A model that
    ``palette`` does not name gets a colour ``palette`` does not use.
    """
    names = list(dict.fromkeys(models))
    if palette is None:
        return model_colors(names)
    given = dict(palette)
    missing = [m for m in names if m not in given]
    if missing:
        candidates = list(model_colors([*given, *missing]).values())
        free = [c for c in candidates if c not in given.values()] or candidates
        given.update({m: free[i % len(free)] for i, m in enumerate(missing)})
    return {m: given[m] for m in names}


def tick_labels(
    labels: Iterable[str], *, width: int = 26, base: float = 3.4, rows: int | None = None
) -> tuple[list[str], float, int]:
    """Long tick labels wrapped to ``width`` characters, the figure width they need, and lines.

    Returns ``(labels, figure_width, lines)``: the wrapped labels, ``base`` inches widened by
    what the longest line takes beyond 12 characters (at most 7 inches, a page), and the most
    lines of one label, so a figure with long model or level names stays readable. With
    ``rows`` (the rows of one figure), the lines are widened (up to 44 characters) until the
    rows' labels fit the page height at 0.3 inches a line: 27 pairs named with a temperature
    wrapped to three lines overlapped on a 9-inch page. A label may be twice
    :data:`~evalstats._text.MAX_LABEL_CHARS` long (a pair of names and a setting's level).
    """
    labels = [shorten(str(t), 2 * MAX_LABEL_CHARS) for t in labels]
    while True:
        wrapped = ["\n".join(wrap_label(t, width)) for t in labels]
        lines = max((t.count("\n") + 1 for t in wrapped), default=1)
        fits = rows is None or 0.6 + 0.3 * lines * max(rows, 1) <= PAGE_HEIGHT_IN
        if fits or lines == 1 or width >= 44:
            break
        width += 6
    longest = max((len(line) for t in wrapped for line in t.split("\n")), default=0)
    return wrapped, min(7.0, base + 0.055 * max(0, longest - 12)), lines


#: Where a label may break besides spaces: after the separators of dataset and model names
#: (``high_school_european_history``, ``meta-llama/Llama-3-8B``).
_BREAK_AFTER = re.compile(r"(?<=[\s_\-/.:,])")


def _unbreakable(parts: list[str]) -> list[str]:
    """``parts`` with no break between two digits (``4-0``, ``3.1``): a version stays whole."""
    out: list[str] = []
    for part in parts:
        prev = out[-1] if out else ""
        if len(prev) > 1 and prev[-2].isdigit() and part[:1].isdigit():
            out[-1] = prev + part
        else:
            out.append(part)
    return out


def wrap_label(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width`` characters, broken after spaces or ``_ - / . : ,``.

    A name is cut inside a word only where a part between separators is longer than a line
    (``textwrap`` breaks at spaces only, so ``high_school_european_history`` came out as
    ``high_school_european_histo`` / ``ry``).

    Examples
    --------
    >>> wrap_label("high_school_european_history", 26)
    ['high_school_european_', 'history']
    >>> wrap_label("abcdefgh", 3)
    ['abc', 'def', 'gh']
    >>> wrap_label("claude-sonnet-4-0", 16)  # never a version cut from its number
    ['claude-sonnet-', '4-0']
    """
    lines: list[str] = []
    line = ""
    for part in _unbreakable(_BREAK_AFTER.split(text)):
        if line and len(line + part.rstrip()) > width:
            lines.append(line.rstrip())
            line = part.lstrip()
        else:
            line += part
        while len(line.rstrip()) > width:  # a part longer than a line
            lines.append(line[:width])
            line = line[width:]
    if line.strip() or not lines:
        lines.append(line.rstrip())
    return lines


def tick_label_points() -> float:
    """The size of x tick labels in points under the current style."""
    import matplotlib as mpl
    from matplotlib.font_manager import FontProperties

    return float(FontProperties(size=mpl.rcParams["xtick.labelsize"]).get_size_in_points())


def text_inches(text: str, points: float) -> tuple[float, float]:
    """Width and height (inches) of ``text`` (one or more lines) at ``points`` in the current font.

    Measured with Agg's font metrics, as a figure would draw it, without a figure: a layout
    sized before its figure exists (the report's panels per page) reads the same widths as the
    drawing. The height counts matplotlib's line spacing (1.2).
    """
    from matplotlib.font_manager import FontProperties

    lines = str(text).split("\n")
    font = FontProperties(size=points)
    renderer = _measuring_renderer()
    widest = max(renderer.get_text_width_height_descent(t, font, ismath=False)[0] for t in lines)
    return widest / 72.0, 1.2 * points * len(lines) / 72.0


@functools.cache
def _measuring_renderer() -> Any:
    """An Agg renderer at 72 dpi (a pixel is a point), for :func:`text_inches`."""
    from matplotlib.backends.backend_agg import RendererAgg

    return RendererAgg(8, 8, 72)


def slanted_drop(labels: Iterable[str], points: float | None = None) -> float:
    """Inches the longest of ``labels``, slanted by :func:`slant_xticks`, hangs below its axes.

    0 for no labels. A label anchored at its top right end and turned by 45 degrees hangs down by (width +
    height) / sqrt(2). ``points``: the labels' size (default: the x tick labels' size).
    """
    size = tick_label_points() if points is None else points
    sizes = [text_inches(t, size) for t in labels if str(t)]
    return max((w + h for w, h in sizes), default=0.0) * 0.5**0.5


def slanted_labels(
    names: Iterable[str], slot: float, points: float | None = None
) -> tuple[list[str], float]:
    """``names`` wrapped to slant side by side in slots ``slot`` inches wide; their drop.

    Slanted at 45 degrees, neighbouring labels run parallel ``slot`` / sqrt(2) inches apart;
    a label wrapped to more lines than fit that gap runs into its neighbour, one left long
    hangs far below the axes (a 60-character model name reached the title of the panel
    below). Each name is wrapped (:func:`wrap_label`) to as many lines as the gap holds, so
    the labels hang as little as they can; names of at most 12 characters stay whole.
    Returns the wrapped labels and :func:`slanted_drop` of them (inches).
    """
    size = tick_label_points() if points is None else points
    names = [shorten(str(t), 2 * MAX_LABEL_CHARS) for t in names]
    if not names:
        return [], 0.0
    line = 1.2 * size / 72.0
    fit = max(1, int(0.9 * slot * 0.5**0.5 // line))  # lines that fit between neighbours
    longest = max((len(t) for t in names), default=0)
    width = max(12, -(-longest // fit))
    while True:
        wrapped = ["\n".join(wrap_label(t, width)) for t in names]
        if width >= longest or max(t.count("\n") + 1 for t in wrapped) <= fit:
            break
        width += 2
    return wrapped, slanted_drop(wrapped, size)


def row_panel_height(n_rows: int, lines: int = 1) -> float:
    """Height (inches) of a panel of ``n_rows`` named rows whose labels have up to ``lines`` lines.

    0.17 inch a row of one-line labels (0.12 beyond 16 rows, whose labels are drawn smaller);
    a row of wrapped labels is as tall as its lines at the small tick size, so labels of
    neighbouring rows never run into each other (a panel of three models named in four lines
    each overprinted them), plus 0.85 inch for the title, axis and its label.
    """
    from matplotlib.font_manager import FontProperties

    per_row = 0.17 if n_rows <= 16 else 0.12
    if lines > 1:
        size = FontProperties(size="x-small" if n_rows > 16 else "small").get_size_in_points()
        per_row = max(per_row, 1.2 * size / 72.0 * lines + 0.04)
    return 0.85 + per_row * n_rows


def slant_xticks(ax: Any, angle: float = 45) -> None:
    """Slant the x tick labels, each ending at its tick (long labels never overlap a neighbour).

    matplotlib rotates a label about its centre by default, so at 45 degrees long labels of
    neighbouring ticks cross each other; anchored at their right end they run parallel.
    """
    for t in ax.get_xticklabels():
        t.set_rotation(angle)
        t.set_horizontalalignment("right")
        t.set_multialignment("right")  # the lines of a wrapped label end at its tick
        t.set_rotation_mode("anchor")


def outside_legend(ax: Any, **kwargs: Any) -> Any:
    """The axes' legend beside them (right), where it covers no data; one column per 18 entries.

    Keyword arguments go to :meth:`matplotlib.axes.Axes.legend` (``title``, ``fontsize``...).
    With constrained layout the axes shrink to make room, so the legend stays inside the figure.
    """
    handles, _ = ax.get_legend_handles_labels()
    options = {
        "loc": "center left",
        "bbox_to_anchor": (1.02, 0.5),
        "frameon": False,
        "fontsize": "x-small",
        "ncol": max(1, -(-len(handles) // 18)),
        "borderaxespad": 0.0,
    }
    options.update(kwargs)
    return ax.legend(**options)


def new_axes(ax: Any = None, *, figsize: tuple[float, float] = (3.4, 2.6)) -> tuple[Any, Any]:
    """``(figure, axes)``: the given ``ax`` and its figure, or a new column-width figure."""
    plt, _ = require_plotting()
    if ax is not None:
        return ax.figure, ax
    fig, ax = plt.subplots(figsize=figsize, layout="constrained")
    return fig, ax


#: seaborn 0.13's "whitegrid" style (``seaborn.axes_style("whitegrid")``), set without
#: importing seaborn; its default colour map, "rocket", is seaborn's and left out (every
#: heatmap names its own).
_WHITEGRID: dict[str, Any] = {
    "figure.facecolor": "white",
    "axes.labelcolor": ".15",
    "xtick.direction": "out",
    "ytick.direction": "out",
    "xtick.color": ".15",
    "ytick.color": ".15",
    "axes.axisbelow": True,
    "grid.linestyle": "-",
    "text.color": ".15",
    "font.family": ["sans-serif"],
    "font.sans-serif": [
        "Arial",
        "DejaVu Sans",
        "Liberation Sans",
        "Bitstream Vera Sans",
        "sans-serif",
    ],
    "lines.solid_capstyle": "round",
    "patch.edgecolor": "w",
    "patch.force_edgecolor": True,
    "xtick.top": False,
    "ytick.right": False,
    "axes.grid": True,
    "axes.facecolor": "white",
    "axes.edgecolor": ".8",
    "grid.color": ".8",
    "axes.spines.left": True,
    "axes.spines.bottom": True,
    "xtick.bottom": False,
    "ytick.left": False,
}


def _paper_context(font_scale: float) -> dict[str, float]:
    """Seaborn 0.13's ``plotting_context("paper", font_scale)``: its sizes x 0.8, fonts x scale."""
    fonts = {
        "font.size": 12,
        "axes.labelsize": 12,
        "axes.titlesize": 12,
        "xtick.labelsize": 11,
        "ytick.labelsize": 11,
        "legend.fontsize": 11,
        "legend.title_fontsize": 12,
    }
    lines = {
        "axes.linewidth": 1.25,
        "grid.linewidth": 1,
        "lines.linewidth": 1.5,
        "lines.markersize": 6,
        "patch.linewidth": 1,
        "xtick.major.width": 1.25,
        "ytick.major.width": 1.25,
        "xtick.minor.width": 1,
        "ytick.minor.width": 1,
        "xtick.major.size": 6,
        "ytick.major.size": 6,
        "xtick.minor.size": 4,
        "ytick.minor.size": 4,
    }
    out = {k: v * 0.8 for k, v in lines.items()}
    out.update({k: v * 0.8 * font_scale for k, v in fonts.items()})
    return out


@contextlib.contextmanager
def paper_style(*, serif: bool = False, font_scale: float = 0.9) -> Iterator[None]:
    """Context manager: a paper look (white grid, small fonts, optional serif) within the block."""
    plt, _ = require_plotting()
    rc = {
        **_WHITEGRID,
        **_paper_context(font_scale),
        "axes.spines.top": False,
        "axes.spines.right": False,
        "savefig.dpi": DPI,
        "figure.dpi": 100,
        # matplotlib 3.11's PDF sizes font subsets by ps.fonttype: 3 put –, Δ in a 2nd copy
        "pdf.fonttype": 42,
        "ps.fonttype": 42,
        # names from the input are text: a `$` in one is a dollar sign, not mathtext
        "text.parse_math": False,
    }
    if serif:
        rc["font.family"] = "serif"
    with plt.rc_context(rc):
        yield
