"""The report's figures at leaderboard scale: 30 models on 25 datasets stay within the page budget.

Every figure of the report of a 30-model, 25-dataset table is drawn and checked: its size is
within a page (7 × 9 inches, so at most 2100 × 2700 pixels at 300 dpi, plus the saved
margin), no legend overlaps an axes (matplotlib's window extents), nothing falls outside the
figure, and drawing raises no layout warning. The written PNGs are checked for their pixel size.
"""

from __future__ import annotations

import struct
import warnings

import pytest

from evalstats.plots._style import DPI, OTHER_COLOR, PAGE_HEIGHT_IN, PAGE_WIDTH_IN
from evalstats.report import audit_report
from evalstats.simulate import observations

pytest.importorskip("matplotlib")

N_MODELS, N_DATASETS = 30, 25
#: bbox_inches="tight" adds a 0.1 inch pad on each side
PAD_PX = int(2 * 0.1 * DPI) + 2


@pytest.fixture(scope="module")
def wide_report():
    obs = observations(
        n_models=N_MODELS,
        n_datasets=N_DATASETS,
        n_items=6,
        n_variants=6,
        n_runs=2,
        # 6 prompt variants: the design supports n* (5 or more), whose convergence figure is drawn
        factors={"shots": {0: 0.0, 3: 0.02, 5: 0.05}, "cot": {False: 0.0, True: 0.0}},
        instability=0.1,
        seed=3,
    )
    return audit_report(
        obs,
        default={"shots": 0, "cot": False},  # the reversal audit's figures too
        options={
            "nstar": {"n_resamples": 20},
            "compare": {"n_resamples": 19},
            "ranks": {"n_resamples": 50},
            "correlation": {"n_resamples": 19},
        },
        skip=["noise", "converge", "anova", "attribution"],
    )


def _tick_labels_apart(ax, renderer, key: str) -> None:
    """Upright tick labels of one axis do not overlap each other (a 168-row forest did)."""
    for axis, lo, hi in ((ax.yaxis, "y0", "y1"), (ax.xaxis, "x0", "x1")):
        labels = [t for t in axis.get_ticklabels() if t.get_visible() and t.get_text()]
        if any(t.get_rotation() % 180 for t in labels):
            continue  # slanted labels: their upright boxes overlap though the text does not
        boxes = sorted(
            (t.get_window_extent(renderer) for t in labels), key=lambda b: getattr(b, lo)
        )
        for a, b in zip(boxes, boxes[1:]):
            assert getattr(b, lo) >= getattr(a, hi) - 1.0, f"{key}: tick labels overlap"


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def _overlap(a, b) -> float:
    """Area of the intersection of two display-space boxes (0 when they only touch)."""
    w = min(a.x1, b.x1) - max(a.x0, b.x0)
    h = min(a.y1, b.y1) - max(a.y0, b.y0)
    return max(w, 0.0) * max(h, 0.0)


def test_every_figure_is_within_the_page_and_no_legend_covers_an_axes(wide_report):
    from evalstats.plots import paper_style
    from evalstats.report._figures import figure_specs, report_palette

    palette = report_palette(wide_report)
    specs = figure_specs(wide_report)
    keys = [s.key for s in specs]
    assert "intervals" in keys and "convergence" in keys and "prompt_spread" in keys
    assert "default_scores" in keys and "default_differences" in keys
    assert len(keys) == len(set(keys))
    import matplotlib.pyplot as plt

    for spec in specs:
        with paper_style(), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fig = spec.draw(palette)
            fig.canvas.draw()
            renderer = fig.canvas.get_renderer()
            w_in, h_in = fig.get_size_inches()
            assert w_in <= PAGE_WIDTH_IN + 1e-9 and h_in <= PAGE_HEIGHT_IN + 1e-9, spec.key
            axes = [ax for ax in fig.axes if ax.get_visible()]
            legends = [*fig.legends, *(ax.get_legend() for ax in axes if ax.get_legend())]
            for legend in legends:
                box = legend.get_window_extent(renderer)
                for ax in axes:
                    assert _overlap(box, ax.get_window_extent(renderer)) < 1.0, (
                        f"{spec.key}: a legend covers an axes"
                    )
                # the legend is inside the figure (else the saved image grows past the page)
                assert box.x0 >= -1 and box.y0 >= -1, spec.key
                assert box.x1 <= fig.bbox.x1 + 1 and box.y1 <= fig.bbox.y1 + 1, spec.key
            for ax in axes:
                _tick_labels_apart(ax, renderer, spec.key)
            plt.close(fig)
        layout = [str(w.message) for w in caught if "layout" in str(w.message)]
        assert not layout, (spec.key, layout)


def test_many_models_keep_one_colour_each_and_the_rest_are_grey(wide_report):
    from evalstats.plots import model_colors
    from evalstats.plots._style import TOP_K
    from evalstats.report._figures import ranked_models, report_palette

    palette = report_palette(wide_report)
    ranked = ranked_models(wide_report)
    assert sorted(ranked) == sorted(wide_report.data.models)
    assert [m for m in ranked if palette[m] != OTHER_COLOR] == ranked[:TOP_K]
    top = [tuple(palette[m]) for m in ranked[:TOP_K]]
    assert len(set(top)) == TOP_K  # distinct colours for the highlighted models
    # the same palette whatever the figure: computed once per report, stable
    assert report_palette(wide_report) == palette
    assert len(model_colors(wide_report.data.models)) == N_MODELS
    # best by mean unit score
    means = wide_report.units.group_by("model").agg(__import__("polars").col("score").mean())
    best = means.sort("score", descending=True)["model"][0]
    assert ranked[0] == best


def test_written_pngs_are_print_resolution_and_within_the_budget(wide_report, tmp_path):
    out = tmp_path / "r"
    wide_report.write(out, figure_formats=["png"])
    pngs = sorted((out / "figures").glob("*.png"))
    assert len(pngs) >= 6
    limit = (int(PAGE_WIDTH_IN * DPI) + PAD_PX, int(PAGE_HEIGHT_IN * DPI) + PAD_PX)
    for png in pngs:
        width, height = _png_size(png.read_bytes())
        assert width <= limit[0] and height <= limit[1], (png.name, width, height)
        # 300 dpi: a figure is at least a column wide in pixels
        assert width >= 2.5 * DPI, (png.name, width)
    # pages: the interval plot of 750 rows is split, at most 4 pages, captions say so
    assert (out / "figures" / "intervals.png").is_file()
    assert (out / "figures" / "intervals_2.png").is_file()
    assert not (out / "figures" / "intervals_5.png").exists()
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "tables/intervals.csv has every group" in html


def test_every_prompt_spread_page_lists_the_models_in_the_reports_order(wide_report):
    """A model keeps its row on every page and panel of the prompt spread, best first as in
    the interval figures; each page used to sort by its own medians (State of What Art: alpaca
    above vicuna on one page, below it on the next). The rows are named once per row of
    panels, beside the first."""
    import matplotlib.pyplot as plt

    from evalstats.plots import paper_style
    from evalstats.report._figures import figure_specs, ranked_models, report_palette

    ranked = ranked_models(wide_report)
    pages = [s for s in figure_specs(wide_report) if s.key.startswith("prompt_spread")]
    assert len(pages) > 1
    palette = report_palette(wide_report)
    for spec in pages:
        with paper_style():
            fig = spec.draw(palette)
        for ax in (a for a in fig.axes if a.get_visible()):
            # boxes lie down the y axis (30 models), the first row on top
            fmt, locs = ax.yaxis.get_major_formatter(), ax.yaxis.get_major_locator().locs
            rows = [fmt(v, i) for i, v in enumerate(locs)]
            top_first = rows if ax.get_ylim()[0] > ax.get_ylim()[1] else rows[::-1]
            assert top_first == ranked, spec.key
            # the same rows in every panel: named once, left of the first column
            shown = [t.get_text() for t in ax.get_yticklabels()]
            assert shown == (rows if ax.get_subplotspec().colspan.start == 0 else []), spec.key
        plt.close(fig)
