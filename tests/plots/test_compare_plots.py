"""Claim-audit figures: structure matches the result they draw (Agg backend, no pixels)."""

from __future__ import annotations

import matplotlib
import polars as pl
import pytest

matplotlib.use("Agg")

from evalstats import plots  # noqa: E402
from evalstats.aggregate import to_units  # noqa: E402
from evalstats.compare import (  # noqa: E402
    compare_models,
    friedman_nemenyi,
    intervals,
    provider_audit,
    reversal_audit,
)
from evalstats.errors import SchemaError  # noqa: E402
from evalstats.simulate import observations, unit_table  # noqa: E402


@pytest.fixture(scope="module")
def obs():
    return observations(
        n_models=3,
        n_items=40,
        providers=("a", "b"),
        factors={"template": {"plain": 0.0, "qa": 0.0}, "shots": {0: 0.0, 5: 0.1}},
        error_rates={"b": {"timeout": 0.05}},
        latency=True,
        seed=0,
    )


def test_forest_plot_has_one_row_per_model_and_default_markers(obs):
    audit = reversal_audit(obs, default={"template": "plain", "shots": 0})
    fig = plots.plot_intervals(audit)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["m0", "m1", "m2"]
    diamonds = [ln for ln in ax.lines if ln.get_marker() == "D"]
    assert len(diamonds) == 3
    assert diamonds[0].get_xdata()[0] == audit.models["default_score"][0]
    # the two providers pooled on purpose (by default each provider has its own interval)
    fig2 = plots.plot_intervals(intervals(obs, by=("model", "dataset", "metric")))
    assert len(fig2.axes[0].get_yticklabels()) == 3


def test_difference_plot_rows_and_zero_line(obs):
    cmp = compare_models(obs, n_resamples=99, by=("dataset", "metric"))  # providers pooled
    ax = plots.plot_differences(cmp).axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["m0 − m1", "m0 − m2", "m1 − m2"]
    assert ax.get_xlabel() == "Difference in accuracy (0–1)"


def test_distribution_plot_and_cd_diagram():
    units = unit_table(n_models=4, n_datasets=5, n_items=30, n_variants=3, seed=0)
    ax = plots.plot_score_distribution(units).axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["m0", "m1", "m2", "m3"]
    res = friedman_nemenyi(units)
    ax = plots.plot_critical_difference(res).axes[0]
    texts = [t.get_text() for t in ax.texts]
    assert any(t.startswith("CD = ") for t in texts)
    assert sum(t.split(" ")[0] in {"m0", "m1", "m2", "m3"} for t in texts) == 4


def test_provider_plots(obs):
    audit = provider_audit(obs, n_resamples=99)
    ax = plots.plot_provider_comparison(audit).axes[0]
    assert len(ax.get_yticklabels()) == audit.scores.height == 12
    ax = plots.plot_tail_quality(audit).axes[0]
    assert len(ax.lines) == 6 and ax.get_xlabel() == "Latency (s)"


def test_provider_audit_plot_is_one_model_sorted_with_errors_beside(obs):
    audit = provider_audit(obs, n_resamples=99)
    with pytest.raises(SchemaError, match="3 models"):
        plots.plot_provider_audit(audit)
    fig = plots.plot_provider_audit(audit, model="m1")
    ax, ax_err = fig.axes
    names = [t.get_text() for t in ax.get_yticklabels()]
    pol = audit.policies.filter(pl.col("model") == "m1")
    want = pol.sort("as_failures", descending=True)["provider"].to_list()
    assert names == want  # sorted by the score with errors as failures, best on top
    bold = [t.get_text() for t in ax.get_yticklabels() if t.get_fontweight() == "bold"]
    ref = audit.versus.filter(pl.col("model") == "m1", pl.col("is_reference"))["provider"]
    assert bold == ref.to_list()
    # the error panel stacks the planted class (timeouts at b) and nothing at a
    widths = {names[round(p.get_y() + p.get_height() / 2)]: p.get_width() for p in ax_err.patches}
    rate = audit.errors.filter(
        pl.col("model") == "m1", pl.col("provider") == "b", pl.col("category") == "timeout"
    )["rate"].item()
    assert widths["b"] == pytest.approx(rate) and widths["a"] == 0.0


def test_wrong_input_is_a_schema_error(obs):
    with pytest.raises(SchemaError, match="lacks column 'model_a'"):
        plots.plot_differences(to_units(obs).collect())


def test_tail_quality_axis_stops_where_the_curves_flatten():
    """Issue 30: the latency axis ran to 60 s while every curve was flat from 4 s."""
    import polars as pl

    from evalstats.plots.compare import plot_tail_quality

    grid = [0.5 * i for i in range(121)]  # 0 to 60 s
    rows = []
    for m, top in (("a", 0.7), ("b", 0.6)):
        for t in grid:
            rows.append({"model": m, "provider": "p", "latency_s": t,
                         "quality": top * min(t / 4.0, 1.0)})  # fmt: skip
    ax = plot_tail_quality(pl.DataFrame(rows)).axes[0]
    lo, hi = ax.get_xlim()
    assert lo == 0 and 4.0 <= hi <= 4.6


def test_interval_marks_draw_each_interval_its_caps_and_its_point():
    """Planted intervals, one without bounds: bars from low to high at each row, a cap at
    each end, the point at the centre in the row's colour, nothing for the missing bounds,
    and finite limits that hold every mark."""
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.colors import to_hex

    from evalstats.plots.compare import interval_marks

    fig, ax = plt.subplots()
    centre, low, high = [0.5, 0.2, 0.9], [0.4, np.nan, 0.7], [0.7, np.nan, 1.1]
    interval_marks(ax, centre, [0, 1, 2], low, high, ["C0", "C1", "C2"])
    (bars,) = [c for c in ax.collections if c.get_gid() == "bars"]
    drawn = [s for s in bars.get_segments() if len(s) and np.isfinite(s).all()]
    assert [s.tolist() for s in drawn] == [[[0.4, 0.0], [0.7, 0.0]], [[0.7, 2.0], [1.1, 2.0]]]
    (caps,) = [c for c in ax.collections if c.get_gid() == "caps"]
    ends = sorted(map(tuple, np.ma.compress_rows(np.ma.masked_invalid(caps.get_offsets()))))
    assert ends == [(0.4, 0.0), (0.7, 0.0), (0.7, 2.0), (1.1, 2.0)]
    (points,) = [c for c in ax.collections if c.get_gid() == "points"]
    assert points.get_offsets().tolist() == [[0.5, 0.0], [0.2, 1.0], [0.9, 2.0]]
    assert [to_hex(c) for c in points.get_facecolors()] == [to_hex(f"C{i}") for i in range(3)]
    fig.canvas.draw()
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    assert np.isfinite([x0, x1, y0, y1]).all()
    assert x0 < 0.2 and x1 > 1.1 and y0 < 0.0 and y1 > 2.0
    plt.close(fig)


def test_forest_rows_are_full_bands_with_the_first_on_top():
    """Each row of a forest plot gets a whole band: with the axis's 5 % margins a short panel
    of three models drew the last row's point on the bottom spine (the demo's intervals)."""
    import matplotlib.pyplot as plt

    frame = pl.DataFrame(
        {"model": ["m2", "m1", "m0"], "mean": [0.7, 0.69, 0.61],
         "ci_low": [0.65, 0.64, 0.55], "ci_high": [0.75, 0.74, 0.68]}
    )  # fmt: skip
    for fig in (plots.plot_intervals(frame), plots.plot_differences(
        frame.rename({"model": "model_a", "mean": "difference"}).with_columns(model_b=pl.lit("x"))
    )):  # fmt: skip
        assert fig.axes[0].get_ylim() == (2.5, -0.5)
        assert [t.get_text() for t in fig.axes[0].get_yticklabels()][0].startswith("m2")
        plt.close(fig)
