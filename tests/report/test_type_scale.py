"""One type scale for every figure of a report (issue 30): the same four sizes everywhere."""

from __future__ import annotations

import collections
import warnings

import pytest

pytest.importorskip("matplotlib")

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.text import Text  # noqa: E402

FAST = {
    "nstar": {"n_resamples": 200},
    "converge": {"n_orders": 30},
    "correlation": {"n_resamples": 99},
    "anova": {"n_resamples": 99},
    "attribution": {"n_null": 2},
    "compare": {"n_resamples": 99},
    "ranks": {"n_resamples": 99},
    "providers": {"n_resamples": 99},
}


def test_every_demo_figure_uses_the_styles_four_sizes():
    """Tick labels, axis labels, titles, legends, annotations: each of the style's x-small,
    small, tick and medium sizes (no size written in points in a plot function), so text
    in one figure is never 3x the text of another; the largest is under 1.5x the smallest."""
    import evalstats
    from evalstats.demo import demo_path
    from evalstats.plots import paper_style
    from evalstats.report._figures import figure_specs
    from evalstats.report._palette import report_palette

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import polars as pl

        obs = pl.read_parquet(demo_path())
        rep = evalstats.audit_report(obs, options=FAST, default={"shots": 0})
    pal = report_palette(rep)
    with paper_style():  # the style's sizes: relative ones, and the tick and legend size
        allowed = {
            round(matplotlib.font_manager.FontProperties(size=s).get_size_in_points(), 1)
            for s in ("x-small", "small", "medium", plt.rcParams["xtick.labelsize"])
        }
    seen: dict[str, collections.Counter] = {}
    for spec in figure_specs(rep):
        with paper_style(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fig = spec.draw(pal)
            fig.canvas.draw()
            sizes = collections.Counter(
                round(t.get_fontsize(), 1)
                for t in fig.findobj(Text)
                if t.get_visible() and t.get_text().strip()
            )
            plt.close(fig)
        seen[spec.key] = sizes
    assert len(seen) >= 10  # the demo draws most kinds of figure
    for key, sizes in seen.items():
        assert set(sizes) <= allowed, (key, sizes, allowed)
    every = {s for sizes in seen.values() for s in sizes}
    assert max(every) / min(every) < 1.5
