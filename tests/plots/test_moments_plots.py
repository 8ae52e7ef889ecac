from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import polars as pl  # noqa: E402
import pytest  # noqa: E402

from evalstats.errors import ParameterError  # noqa: E402
from evalstats.plots import (  # noqa: E402
    plot_convergence,
    plot_convergence_overlay,
    plot_prompt_spread,
)
from evalstats.resampling import required_sample_size, sample_size_curve  # noqa: E402
from evalstats.simulate import unit_table  # noqa: E402
from tests._figures import tick_label_overlaps  # noqa: E402


@pytest.fixture(scope="module")
def units():
    return unit_table(n_models=3, n_datasets=2, n_items=50, n_variants=15, prompt_sd=0.03, seed=0)


def test_prompt_spread_boxes_one_panel_per_dataset(units):
    fig = plot_prompt_spread(units)
    visible = [a for a in fig.axes if a.get_visible()]
    assert [a.get_title() for a in visible] == ["d0", "d1"]
    for a in visible:
        assert [t.get_text() for t in a.get_xticklabels()] == ["m0", "m1", "m2"]
        assert len(_drawn(a, "boxes").get_paths()) == 3  # one box per model
    # the shared score axis is labelled once per row, beside its first panel
    assert [a.get_ylabel() for a in visible] == ["Accuracy (0–1)", ""]


def test_prompt_spread_boxes_are_the_quartiles_and_whiskers_of_the_variant_scores(units):
    import numpy as np

    from evalstats.moments import variant_scores

    one = units.filter(pl.col("dataset") == "d0")
    fig = plot_prompt_spread(one, order=["m0", "m1", "m2"], orient="v")
    ax = fig.axes[0]
    scores = variant_scores(one)
    boxes = _drawn(ax, "boxes").get_paths()
    whiskers = _drawn(ax, "whiskers").get_segments()
    medians = _drawn(ax, "medians").get_segments()
    assert len(boxes) == len(medians) == 3 and len(whiskers) == 4 * 3  # two whiskers, two caps
    for i, (m, box) in enumerate(zip(["m0", "m1", "m2"], boxes)):
        x = np.sort(scores.filter(pl.col("model") == m)["score"].to_numpy())
        q1, med, q3 = np.percentile(x, [25, 50, 75])
        ys = box.vertices[:, 1]
        assert min(ys) == pytest.approx(q1) and max(ys) == pytest.approx(q3)
        xs = box.vertices[:, 0]
        assert (min(xs) + max(xs)) / 2 == pytest.approx(i)  # at the model's tick
        # whiskers end at the furthest scores within 1.5 IQR of the box
        inside = x[(x >= q1 - 1.5 * (q3 - q1)) & (x <= q3 + 1.5 * (q3 - q1))]
        ends = sorted(y for seg in whiskers if np.allclose(seg[:, 0], i) for y in seg[:, 1])
        assert ends[0] == pytest.approx(inside.min()) and ends[-1] == pytest.approx(inside.max())
        (line,) = [seg for seg in medians if np.allclose(seg[:, 0].mean(), i)]
        assert line[:, 1] == pytest.approx([med, med]), f"median of {m}"
        # the variants beyond the whiskers, and only they, are drawn as points at the tick
        beyond = np.sort(x[(x < inside.min()) | (x > inside.max())])
        (fliers,) = [ln for ln in ax.lines if ln.get_gid() == "fliers"] or [None]
        got = (
            []
            if fliers is None
            else [
                y for px, y in zip(fliers.get_xdata(), fliers.get_ydata()) if px == pytest.approx(i)
            ]
        )
        assert np.sort(got) == pytest.approx(beyond)


def test_prompt_spread_rejects_ax_with_several_datasets(units):
    import matplotlib.pyplot as plt

    _, ax = plt.subplots()
    with pytest.raises(ParameterError, match="one panel"):
        plot_prompt_spread(units, ax=ax)


def test_convergence_draws_band_epsilon_and_n_star(units):
    one = units.filter(pl.col("model") == "m0", pl.col("dataset") == "d0")
    curve = sample_size_curve(one, n_resamples=300)
    nstar = required_sample_size(one, epsilon=0.02, n_resamples=300)
    fig = plot_convergence(curve, nstar)
    ax = fig.axes[0]
    assert len(ax.collections) == 2  # one CI band per moment
    eps_lines = [ln for ln in ax.lines if list(ln.get_ydata()) == [0.02, 0.02]]
    assert len(eps_lines) == 1
    reached = nstar.filter(pl.col("moment") != "overall", pl.col("reached"))
    markers = [ln for ln in ax.lines if len(ln.get_xdata()) == 1]
    assert sorted(m.get_xdata()[0] for m in markers) == sorted(reached["n_star"].to_list())
    assert ax.get_xlabel() == "Number of variants n"


def test_convergence_needs_one_group(units):
    curve = sample_size_curve(units, n_resamples=100, moments="mean")
    with pytest.raises(ParameterError, match="groups"):
        plot_convergence(curve)
    fig = plot_convergence(curve, model="m1", dataset="d1")
    assert fig.axes[0].get_title() == "m1 · d1"


def test_overlay_one_line_per_model(units):
    curve = sample_size_curve(units, n_resamples=200, moments="mean")
    nstar = required_sample_size(units, epsilon=0.03, moments="mean", n_resamples=200)
    fig = plot_convergence_overlay(curve, nstar, dataset="d0")
    ax = fig.axes[0]
    assert len(ax.collections) == 3
    assert [t.get_text() for t in ax.get_legend().get_texts()][:3] == ["m0", "m1", "m2"]
    with pytest.raises(ParameterError, match="datasets"):
        plot_convergence_overlay(curve)


def test_axis_label_of_a_metric_without_a_declared_range_claims_no_range():
    # the demo's metric 'score' (0/1 items, no declared range) was labelled "score (unbounded)"
    # in the prompt-spread figure and "Accuracy (0–1)" in the others
    from evalstats.plots._style import label

    base = unit_table(n_models=2, n_items=20, n_variants=3, seed=0).with_columns(
        pl.lit(None, dtype=pl.Float64).alias("metric_low"),
        pl.lit(None, dtype=pl.Float64).alias("metric_high"),
        pl.lit(True).alias("higher_is_better"),
    )
    assert label("score", base) == "Accuracy (0–1)"
    wide = base.with_columns(pl.col("score") * 50, pl.lit("bleu").alias("metric"))
    assert label("score", wide) == "bleu"
    lower = wide.with_columns(
        pl.lit(False).alias("higher_is_better"), pl.lit("err").alias("metric")
    )
    assert label("score", lower) == "err (lower is better)"
    declared = wide.with_columns(
        pl.lit(0.0).alias("metric_low"), pl.lit(100.0).alias("metric_high")
    )
    assert label("score", declared) == "bleu (range [0, 100])"


def test_convergence_overlay_draws_each_held_setting_as_its_own_line(units):
    # n* groups per (model, dataset, temperature): the demo's figure joined a model's
    # temperatures into one line sorted by n, a saw-tooth of vertical jumps
    from evalstats.resampling import sample_size_curve

    both = pl.concat(
        [units.with_columns(pl.lit(t).alias("temperature")) for t in (0.0, 0.7)]
    ).with_columns(pl.col("variant") + "|t=" + pl.col("temperature").cast(pl.String))
    one = both.filter(pl.col("dataset") == "d0")
    curve = sample_size_curve(one, n_resamples=100, moments="mean")
    assert "temperature" in curve.columns
    fig = plot_convergence_overlay(curve, dataset="d0")
    curves = [ln for ln in fig.axes[0].lines if len(ln.get_xdata()) > 1]
    assert len(curves) == 3 * 2  # a line per model and temperature
    for ln in curves:  # no line goes back in n
        x = list(ln.get_xdata())
        assert x == sorted(x) and len(set(x)) == len(x)
    fig = plot_convergence_overlay(curve, dataset="d0", where={"temperature": 0.7})
    assert len([ln for ln in fig.axes[0].lines if len(ln.get_xdata()) > 1]) == 3
    assert fig.axes[0].get_title() == "d0 · mean (temperature 0.7)"
    with pytest.raises(ParameterError, match="where"):
        plot_convergence_overlay(curve, dataset="d0", where={"top_p": 1})


def test_prompt_spread_gives_each_held_setting_its_own_panel(units):
    # the moments table groups by the settings held fixed; the boxes must too (the demo's
    # boxes pooled four temperature x provider groups)
    both = pl.concat(
        [units.with_columns(pl.lit(t).alias("temperature")) for t in (0.0, 0.7)]
    ).with_columns(pl.col("variant") + "|t=" + pl.col("temperature").cast(pl.String))
    fig = plot_prompt_spread(both, panel_by=["temperature"], col_wrap=2)
    visible = [a for a in fig.axes if a.get_visible()]
    assert [a.get_title() for a in visible] == [
        "d0 (temperature 0.0)",
        "d0 (temperature 0.7)",
        "d1 (temperature 0.0)",
        "d1 (temperature 0.7)",
    ]
    with pytest.raises(ParameterError, match="panel_by"):
        plot_prompt_spread(both, panel_by=["top_p"])


def test_convergence_overlay_draws_bands_for_a_few_models_only():
    """Issue 30: sixteen models' bands overplotted into one blur."""
    from evalstats.plots.moments import MAX_BANDS, plot_convergence_overlay
    from evalstats.resampling import sample_size_curve
    from evalstats.simulate import unit_table

    for k, bands in ((3, 3), (MAX_BANDS + 3, 0)):
        units = unit_table(n_models=k, n_items=20, n_variants=8, seed=0)
        curve = sample_size_curve(units, moments="mean", n_resamples=50, method="pool")
        ax = plot_convergence_overlay(curve).axes[0]
        assert len(ax.collections) == bands, k  # fill_between makes one collection per band
        assert len([ln for ln in ax.lines if ln.get_label() in {f"m{i}" for i in range(k)}]) == k


def test_prompt_spread_never_pools_two_metrics_into_one_box():
    """Issue 30: a HELM suite's 16 metrics were drawn as one box per model ('score (16 metrics)')."""
    import polars as pl

    from evalstats.plots.moments import plot_prompt_spread
    from evalstats.simulate import unit_table

    acc = unit_table(n_models=2, n_items=20, n_variants=6, seed=0)
    tokens = acc.with_columns(pl.lit("tokens").alias("metric"), pl.col("score") * 100)
    units = pl.concat([acc.with_columns(pl.lit("acc").alias("metric")), tokens])
    fig = plot_prompt_spread(units)
    titles = [a.get_title() for a in fig.axes if a.get_visible()]
    assert len(titles) == 2 and all("acc" in t or "tokens" in t for t in titles)
    tops = sorted(max(a.get_ylim()) for a in fig.axes if a.get_visible())
    assert tops[0] < 2 < 50 < tops[1]  # each metric on its own axis


def _drawn(ax, gid):
    """The one collection of ``ax`` with ``gid`` (``draw_boxes`` names its four artists)."""
    (found,) = [c for c in ax.collections if c.get_gid() == gid]
    return found


@pytest.mark.parametrize("horizontal", [False, True])
def test_draw_boxes_places_quartiles_whiskers_and_outliers_in_either_orientation(horizontal):
    """Planted values: a box of 0..9 with one value at 30 (beyond 1.5 IQR) and a box of three
    values (drawn as points as well); the value axis is x when horizontal."""
    import matplotlib.pyplot as plt
    import numpy as np

    from evalstats.plots.moments import draw_boxes

    big = np.r_[np.arange(10.0), 30.0]
    small = np.array([2.0, 4.0, 5.0])
    fig, ax = plt.subplots()
    draw_boxes(ax, [0.0, 1.0], [big, small], ["C0", "C1"], width=0.8, horizontal=horizontal)

    def along(xy):  # (position, value) of points whatever the orientation
        xy = np.asarray(xy, dtype=float)
        return xy[:, ::-1] if horizontal else xy

    q1, med, q3 = np.percentile(big, [25, 50, 75])
    box = along(_drawn(ax, "boxes").get_paths()[0].vertices)
    assert box[:, 1].min() == pytest.approx(q1) and box[:, 1].max() == pytest.approx(q3)
    assert box[:, 0].min() == pytest.approx(-0.4) and box[:, 0].max() == pytest.approx(0.4)
    ends = sorted(
        v for seg in _drawn(ax, "whiskers").get_segments()
        if np.allclose(along(seg)[:, 0], 0.0) for v in along(seg)[:, 1]
    )  # fmt: skip
    assert ends[0] == 0.0 and ends[-1] == 9.0  # the furthest values within 1.5 IQR
    assert along(_drawn(ax, "medians").get_segments()[0])[:, 1] == pytest.approx([med, med])
    (fliers,) = [ln for ln in ax.lines if ln.get_gid() == "fliers"]
    assert along(np.c_[fliers.get_xdata(), fliers.get_ydata()]).tolist() == [[0.0, 30.0]]
    shown = along(_drawn(ax, "values").get_offsets())
    assert shown.tolist() == [[1.0, 2.0], [1.0, 4.0], [1.0, 5.0]]
    value_lim = ax.get_xlim() if horizontal else ax.get_ylim()
    assert value_lim[0] < 0.0 and value_lim[1] > 30.0  # the axis reaches every value
    plt.close(fig)


#: Model names as long as real ones (a memorisation sweep's checkpoints on the Hub), which
#: differ only after their first 40 characters.
LONG_NAMES = {
    f"m{i}": f"RylanSchaeffer/mem_Qwen3-93M_minerva_math_rep_{i}_sbst_1.0000_epch_1_ot_{i}"
    for i in range(4)
}


def _uneven_units(n_datasets: int) -> pl.DataFrame:
    """Four long-named models; dataset d<k> lacks model m<k mod 4>, so panels' models differ."""
    units = unit_table(n_models=4, n_datasets=n_datasets, n_items=10, n_variants=6, seed=2)
    missing = pl.format("m{}", pl.col("dataset").str.slice(1).cast(pl.Int64) % 4)
    return units.filter(pl.col("model") != missing).with_columns(
        pl.col("model").replace(LONG_NAMES)
    )


@pytest.mark.parametrize("orient", ["v", "h"])
@pytest.mark.parametrize("n_datasets", [2, 4])
def test_prompt_spread_panels_name_their_own_models_and_long_names_overlap_nothing(
    orient, n_datasets
):
    """A real lm-eval folder (two models, five GPQA/MATH panels, each run by one model):
    every panel had a slot for every model of the table, empty where the model had no
    scores, and the 71-character name, slanted, ran into the title of the panel below.
    Each panel now has its own models in the one order (and colours) of the figure, the
    names wrapped, and the panels as tall as the names need."""
    from evalstats.plots import paper_style

    units = _uneven_units(n_datasets)
    order = [LONG_NAMES[f"m{i}"] for i in (3, 1, 0, 2)]
    palette = {m: f"C{i}" for i, m in enumerate(order)}
    with paper_style():
        fig = plot_prompt_spread(units, order=order, col_wrap=2, orient=orient, palette=palette)
    panels = [a for a in fig.axes if a.get_visible()]
    assert len(panels) == n_datasets
    for ax in panels:
        here = set(units.filter(pl.col("dataset") == ax.get_title())["model"].to_list())
        ticks = ax.get_xticklabels() if orient == "v" else ax.get_yticklabels()
        names = [t.get_text().replace("\n", "") for t in ticks]
        if orient == "h" and ax.get_ylim()[0] < ax.get_ylim()[1]:
            names = names[::-1]
        assert names == [m for m in order if m in here], ax.get_title()  # exactly its models
        assert all(t.get_text().count("\n") >= 1 for t in ticks)  # wrapped, not one long line
        # each box in its model's colour, whatever slot it takes in this panel
        faces = _drawn(ax, "boxes").get_facecolors()
        expected = [matplotlib.colors.to_rgba(palette[m]) for m in order if m in here]
        assert faces.ravel().tolist() == pytest.approx([c for rgba in expected for c in rgba])
    assert tick_label_overlaps(fig) == []


def test_slanted_labels_fit_between_their_neighbours_and_keep_each_name():
    from evalstats.plots._style import slanted_drop, slanted_labels, text_inches

    names = [*LONG_NAMES.values(), "gpt-4o"]
    points = 8.0
    for slot in (0.45, 0.9, 2.0):
        wrapped, drop = slanted_labels(names, slot, points)
        assert [w.replace("\n", "") for w in wrapped] == names  # broken, never cut
        assert wrapped[-1] == "gpt-4o"  # a short name stays whole
        gap = slot * 0.5**0.5  # neighbours' distance across their slant
        assert all(text_inches(w, points)[1] <= 0.9 * gap or "\n" not in w for w in wrapped)
        assert drop == pytest.approx(slanted_drop(wrapped, points))
    # a wider slot takes more lines and hangs less far
    assert slanted_labels(names, 2.0, points)[1] < slanted_labels(names, 0.45, points)[1]
    assert slanted_labels([], 1.0) == ([], 0.0)
