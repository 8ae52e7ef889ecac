"""Text in figures of real dumps: labels broken at name separators, heatmap cell numbers that
fit their cells, legends and marks for what is not drawn (found on the llm-stability report)."""

from __future__ import annotations

import warnings

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
import pytest  # noqa: E402

from evalstats import plots  # noqa: E402
from evalstats.plots._style import tick_labels, wrap_label  # noqa: E402
from evalstats.plots.stability import fit_heatmap_cells  # noqa: E402

MMLU = [
    "college_mathematics",
    "high_school_european_history",
    "logical_deduction",
    "navigate",
    "professional_accounting",
    "public_relations",
    "ruin_names",
]


@pytest.mark.parametrize(
    ("text", "width", "lines"),
    [
        ("high_school_european_history", 26, ["high_school_european_", "history"]),
        ("meta-llama/Llama-3.1-8B-Instruct", 20, ["meta-llama/Llama-", "3.1-8B-Instruct"]),
        ("claude-sonnet-4-0", 16, ["claude-sonnet-", "4-0"]),  # a version stays whole
        ("two words", 26, ["two words"]),
        ("a b c", 1, ["a", "b", "c"]),
        ("", 5, [""]),
    ],
)
def test_labels_break_after_separators_not_inside_words(text, width, lines):
    assert wrap_label(text, width) == lines
    assert all(len(line) <= width for line in wrap_label(text, width))


def test_a_part_longer_than_a_line_is_cut_and_nothing_is_lost():
    text = "x" * 30 + "_tail"
    got = wrap_label(text, 12)
    assert "".join(got) == text and all(len(line) <= 12 for line in got)


def test_tick_labels_keep_whole_words():
    labels, _, lines = tick_labels(MMLU)
    assert "high_school_european_\nhistory" in labels and lines == 2


def _stability(n_models: int, datasets: list[str]) -> pl.DataFrame:
    rng = np.random.default_rng(0)
    return pl.DataFrame(
        [
            {"model": f"m{i}", "dataset": d, "tar_a": float(rng.uniform()), "tar_r": 1.0}
            for i in range(n_models)
            for d in datasets
        ]
    )


def _overlaps(fig, ax) -> list[tuple[str, str]]:
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in ax.texts]
    return [
        (a, b) for i, (a, ba) in enumerate(boxes) for b, bb in boxes[i + 1 :] if ba.overlaps(bb)
    ]


def _cell_width_px(ax) -> float:
    x0, x1 = ax.get_xlim()
    a = ax.transData.transform((x0, 0))[0]
    b = ax.transData.transform((x0 + 1, 0))[0]
    return abs(b - a)


@pytest.mark.parametrize("n_datasets", [3, 7, 12, 25])
def test_heatmap_cell_numbers_never_overlap_and_fit_their_cells(n_datasets):
    # the report draws TARa and TARr side by side; seven MMLU tasks ran "47.092.789.2..."
    datasets = (MMLU * 4)[:n_datasets]
    datasets = [f"{d}_{i}" for i, d in enumerate(datasets)]
    table = _stability(2, datasets)
    with plots.paper_style():
        fig, axes = matplotlib.pyplot.subplots(1, 2, figsize=(7.0, 3.0), layout="constrained")
        for ax, v in zip(axes, ("tar_a", "tar_r")):
            plots.plot_tar_heatmap(table, value=v, ax=ax)
        fit_heatmap_cells(fig)  # as the report does once every panel is drawn
        sizes = {t.get_fontsize() for ax in axes for t in ax.texts}
        assert len(sizes) <= 1  # the panels' numbers alike (the first was sized alone)
        for ax in axes:
            assert not _overlaps(fig, ax)
            renderer = fig.canvas.get_renderer()
            cell = _cell_width_px(ax)
            for t in ax.texts:
                assert t.get_window_extent(renderer).width < cell
    texts = [t.get_text() for t in axes[1].texts]
    if n_datasets <= 3:
        assert texts[0] == "100.0"  # one decimal where it fits
    elif n_datasets == 7:
        assert texts and texts[0] == "100"  # whole percentages where they fit
    if n_datasets == 25:
        assert texts == []  # too narrow: the colour bar reads the cells
    matplotlib.pyplot.close(fig)


def test_the_llm_stability_heatmap_numbers_fit_in_both_panels():
    # one model, seven MMLU tasks, TARa and TARr side by side: the first panel's numbers were
    # sized before the second panel took its room, and ran together ("47.092.789.2")
    table = pl.DataFrame(
        {
            "model": ["gpt-4o_OAI"] * 7,
            "dataset": MMLU,
            "tar_a": [0.47, 0.927, 0.892, 0.6, 0.642, 0.773, 0.916],
            "tar_r": [0.45, 0.927, 0.892, 0.6, 0.638, 0.773, 0.916],
        }
    )
    from evalstats.report._layout import panels

    with plots.paper_style():
        fig, axes = panels(2)
        for ax, v in zip(axes, ("tar_a", "tar_r")):
            plots.plot_tar_heatmap(table, value=v, ax=ax)
        fit_heatmap_cells(fig)
        for ax in axes:
            assert len(ax.texts) == 7 and not _overlaps(fig, ax)
            renderer = fig.canvas.get_renderer()
            assert max(t.get_window_extent(renderer).width for t in ax.texts) < _cell_width_px(ax)
    matplotlib.pyplot.close(fig)


def test_rows_and_columns_without_a_value_take_no_room():
    # Inspect logs: only one task was run more than once; the others have no TAR
    table = pl.DataFrame(
        {
            "model": ["a", "b", "c"],
            "dataset": ["oxdna", "mmlu", "class_eval"],
            "tar_a": [1.0, None, None],
            "tar_r": [0.0, None, None],
        }
    )
    ax = plots.plot_tar_heatmap(table, value="tar_a").axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["oxdna"]
    assert [t.get_text() for t in ax.texts] == ["100.0"]


def test_undefined_correlations_are_marked_not_blank():
    from evalstats.correlation import correlation_matrix

    t = pl.DataFrame(
        {"tar_a": [0.5, 0.7, 0.9, 0.8], "spread": [0.3, 0.2, 0.05, 0.1], "out_len": [5.0] * 4}
    )
    with pytest.warns(Warning):
        corr = correlation_matrix(t, columns=["tar_a", "spread", "out_len"])
    ax = plots.plot_correlation_heatmap(corr).axes[0]
    marks = [t.get_text() for t in ax.texts if t.get_text() == "n/a"]
    assert len(marks) == 2  # out_len against tar_a and spread (lower triangle)


def test_noise_legend_names_components_no_group_has_and_gives_them_no_key():
    from evalstats.noise import variance_components
    from evalstats.simulate import observations

    # one prompt variant, repeated runs (the llm-stability design): no variant components
    obs = observations(n_models=2, n_items=40, n_variants=1, n_runs=4, instability=0.1, seed=0)
    comps = variance_components(obs)
    absent = comps.filter(~pl.col("identified"))["component"].unique().to_list()
    assert absent  # the design cannot separate the variant components
    leg = plots.plot_noise_components(comps).axes[0].get_legend()
    keys = [t.get_text() for t in leg.get_texts()]
    assert "prompt variant" not in keys and "item" in keys
    assert "prompt variant" in leg.get_title().get_text()


def test_a_page_of_component_panels_without_any_bar_has_no_legend_and_no_error():
    # Inspect logs: constant scores and single runs, no panel draws a bar (the report's
    # figure legend was built with ncol=0 and matplotlib raised)
    from evalstats.noise import variance_components
    from evalstats.plots.noise import components_legend
    from evalstats.simulate import observations

    obs = observations(n_models=2, n_items=20, n_variants=1, n_runs=2, seed=0).with_columns(
        score=pl.lit(1.0)
    )
    with pytest.warns(Warning):
        comps = variance_components(obs)
    fig, axes = matplotlib.pyplot.subplots(1, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib's "no artists with labels" note too
        for ax, m in zip(axes, ("m0", "m1")):
            plots.plot_noise_components(comps.filter(pl.col("model") == m), ax=ax)
    components_legend(fig, axes, comps)
    assert fig.legends == [] and all(ax.get_legend() is None for ax in axes)
    matplotlib.pyplot.close(fig)


def test_differences_in_two_metrics_get_a_panel_each():
    # lm-eval SlurmEvals: BLEURT and accuracy differences shared one axis, "score (2 metrics)"
    from evalstats.compare import compare_models
    from evalstats.report._layout import by_metric
    from evalstats.simulate import observations

    a = observations(n_models=3, n_items=40, n_variants=1, seed=0).with_columns(
        metric=pl.lit("acc")
    )
    b = a.with_columns(metric=pl.lit("bleurt_max"), dataset=pl.lit("truthfulqa"))
    cmp = compare_models(pl.concat([a, b], how="diagonal_relaxed"), n_resamples=99)
    fig = by_metric(cmp, plots.plot_differences)
    labels = [ax.get_xlabel() for ax in fig.axes]
    assert len(labels) == 2 and "metrics" not in " ".join(labels), labels
    assert {ax.get_title() for ax in fig.axes} == set(cmp["metric"].unique().to_list())
    # one metric: the plain figure, one axes
    one = by_metric(cmp.filter(pl.col("metric") == "bleurt_max"), plots.plot_differences)
    assert len(one.axes) == 1


def test_heatmap_rows_follow_a_given_order_then_names():
    table = _stability(3, ["d0", "d1"]).with_columns(
        model=pl.col("model").replace({"m0": "m10", "m1": "m2", "m2": "m9"})
    )
    ax = plots.plot_tar_heatmap(table, value="tar_a", row_order=["m9", "m2"]).axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["m9", "m2", "m10"]
    ax = plots.plot_tar_heatmap(table, value="tar_a").axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["m10", "m2", "m9"]


def test_tick_labels_widen_to_fit_the_rows_of_a_page():
    """27 pairs named with a temperature wrapped to three lines overlapped on a 9-inch page;
    with the rows given, the lines widen until they fit (or reach 44 characters), uncut."""
    from evalstats.plots._style import tick_labels

    labels = [
        f"gemini-1.5-pro-preview-0409 − mistral-large (Temperature 0.{i % 10})" for i in range(27)
    ]
    narrow, _, lines_narrow = tick_labels(labels)
    wide, _, lines_wide = tick_labels(labels, rows=27)
    assert lines_narrow == 3 and lines_wide == 2
    assert all(
        w.replace("\n", "").replace(" ", "") == t.replace(" ", "") for w, t in zip(wide, labels)
    )
