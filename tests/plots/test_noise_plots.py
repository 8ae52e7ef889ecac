"""Figures of the variance components and the planner: structure matches the result drawn."""

from __future__ import annotations

import matplotlib
import pytest

matplotlib.use("Agg")

from evalstats import plots  # noqa: E402
from evalstats.errors import SchemaError  # noqa: E402
from evalstats.noise import plan, variance_components  # noqa: E402
from evalstats.simulate import crossed_scores  # noqa: E402


@pytest.fixture(scope="module")
def comps():
    obs = crossed_scores(n_models=3, n_items=30, n_variants=5, n_runs=2, seed=0)
    return variance_components(obs, pairs=True)


def test_stacked_bars_have_one_row_per_model_and_segments_add_up(comps):
    fig = plots.plot_noise_components(comps)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["m0", "m1", "m2"]
    bars = ax.patches
    assert len(bars) == 4 * 3  # four components per model
    single = comps.filter(comps["model_b"].is_null())
    totals = single.group_by("model", maintain_order=True).agg(
        __import__("polars").col("variance").sum()
    )
    right = {}
    for b in bars:
        y = round(b.get_y() + b.get_height() / 2)
        right[y] = max(right.get(y, 0.0), b.get_x() + b.get_width())
    for y, total in enumerate(totals["variance"]):
        assert right[y] == pytest.approx(total)


def test_pairs_and_shares(comps):
    fig = plots.plot_noise_components(comps, pairs=True, share=True)
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels == ["m0 − m1", "m0 − m2", "m1 − m2"]
    assert max(b.get_x() + b.get_width() for b in fig.axes[0].patches) == pytest.approx(1.0)
    with pytest.raises(SchemaError, match="variance_components"):
        plots.plot_noise_components(comps.drop("share"))


def test_plan_figure_marks_the_recommended_design():
    res = plan(crossed_scores(n_items=60, n_variants=6, n_runs=2, seed=1), target_width=0.04)
    fig = plots.plot_plan(res)
    ax = fig.axes[0]
    best = res.best.row(0, named=True)
    marks = [ln for ln in ax.get_lines() if ln.get_marker() == "D"]
    assert len(marks) == 1
    assert marks[0].get_xdata()[0] == pytest.approx(best["cost"])
    assert marks[0].get_ydata()[0] == pytest.approx(best["width"])
    assert ax.get_xscale() == "log"


def test_log_axes_of_the_plan_have_plain_tick_labels():
    """A tick label was printed as raw `$\\mathdefault{2\\times10^{-2}}$` (mathtext is off)."""
    import matplotlib.pyplot as plt

    from evalstats.plots.noise import _log_label, _plain_log

    assert [_log_label(v) for v in (0.02, 0.5, 300, 1000, 1e4, 1e5, 2e-4)] == [
        "0.02",
        "0.5",
        "300",
        "1000",
        "1e4",  # one style from 10,000 up: never "10000" beside "1e5"
        "1e5",
        "2e-4",
    ]
    fig, ax = plt.subplots()
    ax.plot([0.015, 0.045], [10, 5000])
    ax.set_xscale("log")
    ax.set_yscale("log")
    _plain_log(ax.xaxis)
    _plain_log(ax.yaxis)
    fig.canvas.draw()
    texts = [t.get_text() for t in [*ax.get_xticklabels(), *ax.get_xticklabels(minor=True),
                                    *ax.get_yticklabels()]]  # fmt: skip
    assert not any("$" in t or "mathdefault" in t for t in texts)
    assert "0.02" in texts  # less than 1.5 decades: the 2s and 5s are labelled
    plt.close(fig)
