"""One colour per model across figures: resolve_palette and the palette= of every plot function."""

from __future__ import annotations

import inspect

import matplotlib

matplotlib.use("Agg")

import polars as pl  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402

from evalstats import plots  # noqa: E402
from evalstats.plots._style import COLORS, LABELS, model_colors, resolve_palette  # noqa: E402

#: Plot functions that colour by model: each takes ``palette``.
MODEL_COLOURED = (
    "plot_prompt_spread",
    "plot_convergence_overlay",
    "plot_intervals",
    "plot_score_distribution",
    "plot_critical_difference",
    "plot_provider_comparison",
    "plot_tail_quality",
    "plot_stability_distribution",
)


@pytest.mark.parametrize("name", MODEL_COLOURED)
def test_model_coloured_plots_take_a_palette(name):
    assert "palette" in inspect.signature(getattr(plots, name)).parameters


def test_resolve_palette_keeps_given_colours_and_fills_gaps_with_unused_ones():
    pal = model_colors(["a", "b", "c"])
    assert resolve_palette(["c", "a"], pal) == {"c": pal["c"], "a": pal["a"]}
    got = resolve_palette(["a", "z"], {"a": pal["a"], "b": pal["b"]})
    assert got["a"] == pal["a"] and got["z"] not in (pal["a"], pal["b"])
    assert resolve_palette(["b", "a"]) == model_colors(["a", "b"])


def test_a_model_keeps_its_colour_when_others_are_missing():
    pal = model_colors(["m0", "m1", "m2"])
    frame = pl.DataFrame(
        {"model": ["m1", "m2"], "mean": [0.6, 0.7], "ci_low": [0.5, 0.6], "ci_high": [0.7, 0.8]}
    )
    ax = plots.plot_intervals(frame, palette=pal).axes[0]
    assert _point_colours(ax) == [to_hex(pal["m1"]), to_hex(pal["m2"])]
    # without a palette the two models would take the first two colours
    alone = plots.plot_intervals(frame).axes[0]
    assert _point_colours(alone) == [to_hex(c) for c in model_colors(["m1", "m2"]).values()]


def _point_colours(ax):
    """Colours of the interval points of ``ax``, in row order (``interval_marks``'s points)."""
    (points,) = [c for c in ax.collections if c.get_gid() == "points"]
    rows = points.get_offsets()[:, 1]
    colours = [to_hex(c) for c in points.get_facecolors()]
    return [c for _, c in sorted(zip(rows, colours))]


def test_style_colours_come_from_the_colour_blind_palette():
    import seaborn as sns

    safe = set(sns.color_palette("colorblind").as_hex())
    for key in ("accent", "accent_light", "secondary"):
        assert COLORS[key] in safe, key


def test_threshold_lines_are_never_a_model_colour():
    """ε, the CD bar and targets sit next to model curves: with ten models every palette colour
    is some model's, so a threshold in one (it was vermillion) reads as that model."""
    from matplotlib.colors import to_hex

    from evalstats.plots import model_colors

    models = [f"m{i}" for i in range(10)]
    used = {to_hex(c) for c in model_colors(models).values()}
    assert to_hex(COLORS["highlight"]) not in used


def test_score_labels_carry_their_unit():
    for column in ("score", "mean", "difference", "delta_mean", "mean_abs_shap"):
        assert "0–1" in LABELS[column], column
    assert LABELS["latency_s"].endswith("(s)")


def test_stability_distribution_draws_one_box_per_model_and_dataset():
    from evalstats.simulate import observations
    from evalstats.stability import stability_table

    obs = observations(
        n_models=3, n_datasets=2, n_items=20, n_variants=4, n_runs=3, instability=0.2, seed=0
    )
    table = stability_table(obs)
    pal = model_colors(["m0", "m1", "m2", "m9"])
    ax = plots.plot_stability_distribution(table, value="tar_a", palette=pal).axes[0]
    (boxes,) = [c for c in ax.collections if c.get_gid() == "boxes"]
    assert len(boxes.get_paths()) == 6
    assert {to_hex(c) for c in boxes.get_facecolors()} == {
        to_hex(pal[m]) for m in ("m0", "m1", "m2")
    }
    assert ax.get_ylabel() == LABELS["tar_a"] and ax.get_xlabel() == LABELS["dataset"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["d0", "d1"]


def test_long_labels_wrap_and_widen_the_figure():
    from evalstats.plots._style import tick_labels

    labels, width, lines = tick_labels(["m0", "Llama-3.2-1B-Instruct − OLMoE-1B-7B-0924-Instruct"])
    assert labels[0] == "m0" and all(len(line) <= 26 for line in labels[1].split("\n"))
    assert lines == 2 and 3.4 < width <= 7.0
    assert tick_labels(["m0", "m1"]) == (["m0", "m1"], 3.4, 1)
    frame = pl.DataFrame(
        {
            "model_a": ["Llama-3.2-1B-Instruct"],
            "model_b": ["OLMoE-1B-7B-0924-Instruct"],
            "difference": [0.1],
            "ci_low": [0.0],
            "ci_high": [0.2],
        }
    )
    fig = plots.plot_differences(frame)
    assert fig.get_size_inches()[0] > 3.4
    assert "\n" in fig.axes[0].get_yticklabels()[0].get_text()


def test_score_axes_name_a_metric_that_is_not_an_accuracy_with_its_range_and_direction():
    from evalstats.plots._style import label
    from evalstats.schema import MetricInfo, with_metric

    units = pl.DataFrame({"model": ["a"], "dataset": ["d"], "score": [0.5]})
    assert label("score", units) == label("score") == "Accuracy (0–1)"
    err = with_metric(units, MetricInfo("abs_error", 0, None, higher_is_better=False))
    assert label("score", err) == "abs_error (range [0, inf), lower is better)"
    bleu = with_metric(units, MetricInfo("bleu", 0, 100))
    assert label("mean", bleu) == "Mean bleu (range [0, 100])"
    assert label("mean", bleu.select("metric", "score")) == "Mean bleu"
    assert label("difference", err.drop("metric_low", "metric_high")) == (
        "Difference in abs_error (lower is better)"
    )


def test_style_and_palette_need_no_seaborn_import_and_serif_applies():
    """The paper style and the model colours are set without importing seaborn (1.6 s of CPU
    per figure worker); they equal seaborn's whitegrid/paper style and colour-blind palette;
    ``serif`` reaches the fonts (seaborn's style used to override it)."""
    import subprocess
    import sys

    code = (
        "import sys, matplotlib; matplotlib.use('Agg');"
        "import matplotlib.pyplot as plt;"
        "from evalstats.plots._style import paper_style, model_colors;"
        "c = model_colors(['a', 'b', 'c']);"
        "s = paper_style(serif=True); s.__enter__();"
        "print(plt.rcParams['font.family'], 'seaborn' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["['serif']", "False"], out.stdout + out.stderr

    import matplotlib.pyplot as plt
    import seaborn as sns

    from evalstats.plots._style import _WHITEGRID, _paper_context, colorblind, paper_style

    assert colorblind(12) == sns.color_palette("colorblind", 12)
    style = {**sns.axes_style("whitegrid")}
    style.pop("image.cmap")
    assert {
        k: style[k] for k in _WHITEGRID if k not in ("axes.spines.top", "axes.spines.right")
    } == {k: v for k, v in _WHITEGRID.items() if k not in ("axes.spines.top", "axes.spines.right")}
    assert _paper_context(0.9) == dict(sns.plotting_context("paper", font_scale=0.9))
    with paper_style():
        assert plt.rcParams["font.size"] == _paper_context(0.9)["font.size"]
