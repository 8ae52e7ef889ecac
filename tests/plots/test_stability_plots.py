from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
import pytest  # noqa: E402

from evalstats.correlation import correlation_matrix  # noqa: E402
from evalstats.errors import ParameterError, SchemaError  # noqa: E402
from evalstats.normality import run_distribution  # noqa: E402
from evalstats.plots import (  # noqa: E402
    plot_correlation_heatmap,
    plot_run_distribution,
    plot_tar_heatmap,
)


@pytest.fixture
def stability():
    """A hand-built stability table: 2 models x 3 tasks, known TAR values."""
    models, tasks = ["m0", "m1"], ["t0", "t1", "t2"]
    rows = []
    for i, m in enumerate(models):
        for j, t in enumerate(tasks):
            rows.append(
                {
                    "model": m,
                    "dataset": t,
                    "variant": "default",
                    "tar_a": 0.5 + 0.1 * i + 0.05 * j,
                    "tar_r": 0.4 + 0.1 * i + 0.05 * j,
                    "spread": 0.2 - 0.03 * j - 0.05 * i,
                    "acc_mean": 0.6 + 0.02 * j + 0.04 * i,
                }
            )
    return pl.DataFrame(rows)


def _cell_texts(ax) -> list[str]:
    return [t.get_text() for t in ax.texts]


def test_tar_heatmap_has_one_cell_per_model_and_task(stability):
    fig = plot_tar_heatmap(stability, value="tar_r")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["m0", "m1"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["t0", "t1", "t2"]
    assert _cell_texts(ax) == ["40.0", "45.0", "50.0", "50.0", "55.0", "60.0"]
    assert ax.get_title() == "TARr@N"
    assert ax.collections[0].get_clim() == (0.0, 100.0)


def test_tar_heatmap_of_tar_a_is_labelled(stability):
    ax = plot_tar_heatmap(stability, value="tar_a").axes[0]
    assert ax.get_title() == "TARa@N"
    assert _cell_texts(ax)[0] == "50.0"


def test_tar_heatmap_rejects_several_variants_per_cell(stability):
    two = pl.concat([stability, stability.with_columns(variant=pl.lit("other"))])
    with pytest.raises(ParameterError, match="2 rows for model='m0', dataset='t0'"):
        plot_tar_heatmap(two)


def test_tar_heatmap_missing_column(stability):
    with pytest.raises(SchemaError, match="no column 'tar_x'"):
        plot_tar_heatmap(stability, value="tar_x")


def test_correlation_heatmap_draws_the_lower_triangle(stability):
    corr = correlation_matrix(stability, columns=["tar_a", "tar_r", "spread", "acc_mean"])
    ax = plot_correlation_heatmap(corr, alpha=None).axes[0]
    texts = _cell_texts(ax)
    assert len(texts) == 4 + 6  # diagonal + lower triangle
    assert texts.count("1") == 4
    expected = {f"{s:.2f}" for s in corr["statistic"]}
    assert set(texts) - {"1"} <= expected
    assert [t.get_text() for t in ax.get_yticklabels()][:2] == ["TARa@N", "TARr@N"]


def test_correlation_heatmap_marks_significant_pairs(stability):
    corr = correlation_matrix(stability, columns=["tar_a", "tar_r", "spread"])
    ax = plot_correlation_heatmap(corr, alpha=0.05).axes[0]
    starred = [t for t in _cell_texts(ax) if t.endswith("*")]
    assert len(starred) == int((corr["pvalue_perm"] <= 0.05).sum())


def test_run_distribution_lines_are_the_analysis_values(rng):
    vals = rng.normal(0.6, 0.02, 100)
    frame = pl.DataFrame(
        {"model": ["m"], "dataset": ["d"], "variant": ["v"], "acc_per_run": [vals.tolist()]}
    )
    dist = run_distribution(frame)
    ax = plot_run_distribution(dist).axes[0]
    xs = [line.get_xdata()[0] for line in ax.lines]
    row = dist.row(0, named=True)
    np.testing.assert_allclose(xs, [row["mean"], row["median"], row["q_low"], row["q_high"]])
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["mean", "median", "5% quantile", "95% quantile"]
    assert sum(p.get_height() for p in ax.patches) == 100
    assert ax.get_title() == "m / d / v"


def test_run_distribution_one_panel_per_group():
    frame = pl.DataFrame(
        {
            "model": ["a", "b", "c", "d"],
            "dataset": "t",
            "variant": "v",
            "acc_per_run": [[0.1, 0.2, 0.3]] * 4,
        }
    )
    fig = plot_run_distribution(run_distribution(frame), col_wrap=3)
    assert len([a for a in fig.axes if a.get_visible()]) == 4


def test_run_distribution_rejects_ax_with_several_rows():
    import matplotlib.pyplot as plt

    frame = pl.DataFrame(
        {"model": ["a", "b"], "dataset": "t", "variant": "v", "acc_per_run": [[0.1, 0.2]] * 2}
    )
    _, ax = plt.subplots()
    with pytest.raises(ParameterError, match="one panel"):
        plot_run_distribution(run_distribution(frame), ax=ax)


def test_plot_functions_draw_into_a_given_ax(stability):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    assert plot_tar_heatmap(stability, ax=ax) is fig
    assert ax.get_title() == "TARr@N"


def test_panels_drawn_one_after_another_keep_their_category_labels(stability):
    # the first call cut the labels of every axes of the figure by wrapping their formatters,
    # which also marked the second (empty) axes' formatter as set by hand: matplotlib then did
    # not install its categorical formatter there, and the panel read 0, 1, 2 for t0, t1, t2
    import matplotlib.pyplot as plt

    from evalstats.plots import plot_stability_distribution

    fig, axes = plt.subplots(1, 2)
    for ax, v in zip(axes, ["tar_a", "tar_r"]):
        plot_stability_distribution(stability, value=v, ax=ax)
    fig.canvas.draw()
    assert [[t.get_text() for t in ax.get_xticklabels()] for ax in axes] == [["t0", "t1", "t2"]] * 2
    plt.close(fig)


def test_stability_boxes_use_no_deprecated_matplotlib_argument(recwarn):
    """seaborn 0.13's boxplot passes `vert`, deprecated in Matplotlib 3.11, removed in 3.13."""
    from evalstats.plots.stability import plot_stability_distribution
    from evalstats.simulate import observations
    from evalstats.stability import stability_table

    obs = observations(n_models=3, n_datasets=2, n_items=20, n_variants=4, n_runs=3,
                       instability=0.1, seed=0)  # fmt: skip
    fig = plot_stability_distribution(stability_table(obs))
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["d0", "d1"]
    # 3 models x 2 datasets: six boxes, dodged within each dataset's slot
    (boxes,) = [c for c in ax.collections if c.get_gid() == "boxes"]
    assert len(boxes.get_paths()) == 6
    legend = ax.get_legend()
    assert [t.get_text() for t in legend.get_texts()] == ["m0", "m1", "m2"]
    assert not [w for w in recwarn if "vert" in str(w.message)]


def test_boxes_of_few_values_show_the_values():
    """A box of 1 to 4 values is not a distribution: its values are drawn as points too, at
    their place (a box of one value would be a bare line); boxes of 5 or more are boxes only."""
    import matplotlib.pyplot as plt

    from evalstats.plots import plot_stability_distribution

    rows = [{"model": "m0", "dataset": "d0", "tar_r": 0.6}]  # one configuration
    rows += [{"model": "m0", "dataset": "d1", "tar_r": v} for v in (0.2, 0.4, 0.5, 0.7, 0.9)]
    rows += [{"model": "m1", "dataset": "d1", "tar_r": v} for v in (0.3, 0.8)]
    fig = plot_stability_distribution(pl.DataFrame(rows))
    (ax,) = [a for a in fig.axes if a.collections]
    (values,) = [c for c in ax.collections if c.get_gid() == "values"]
    points = values.get_offsets()
    # d0 at x = 0 (m0's box, offset left as the hue dodge puts it), d1's m1 right of 1
    assert sorted(points[:, 1].tolist()) == pytest.approx([0.3, 0.6, 0.8])
    assert (points[points[:, 1] == pytest.approx(0.6)][:, 0] < 0.5).all()
    assert (points[np.isin(points[:, 1], [0.3, 0.8])][:, 0] > 1).all()
    plt.close(fig)


def test_one_model_heatmap_with_long_task_names_is_laid_out(recwarn):
    """One model, seven tasks with names up to 28 characters (the llm-stability runs): the
    slanted names hung below a figure sized for the cells, and matplotlib gave up the layout
    ("axes sizes collapsed to zero"); the figure now makes room for them."""
    import matplotlib.pyplot as plt

    from evalstats.plots import paper_style, plot_tar_heatmap

    tasks = ["college_mathematics", "high_school_european_history", "logical_deduction",
             "navigate", "professional_accounting", "public_relations", "ruin_names"]  # fmt: skip
    table = pl.DataFrame(
        {"model": ["gpt-4o_OAI"] * 7, "dataset": tasks, "tar_a": np.linspace(0.4, 0.9, 7)}
    )
    with paper_style():
        fig = plot_tar_heatmap(table, value="tar_a")
        fig.canvas.draw()
    assert not [w for w in recwarn if "collapsed" in str(w.message)]
    ax = fig.axes[0]
    renderer = fig.canvas.get_renderer()
    cells = ax.get_window_extent(renderer)
    lowest = min(t.get_window_extent(renderer).y0 for t in ax.get_xticklabels())
    assert cells.height / fig.dpi > 0.35  # a row of cells, not a sliver
    assert lowest >= 0  # every slanted name inside the figure
    plt.close(fig)
