"""Panels of the report's multi-panel figures name their own models, and long names overlap nothing.

A real lm-eval folder (``real-logs-2/lm-eval``: gpt-4o on four GPQA groups, a 71-character
memorisation checkpoint on MATH) drew its prompt-spread boxes with a slot for both models in
every panel, one of them empty, and the long name, slanted, ran into the title of the panel
below. Every multi-panel figure (prompt spread, intervals, variance components, n*
convergence) is drawn here from a planted table whose groups have different models with long
names, and checked with matplotlib's window extents after drawing.
"""

from __future__ import annotations

import re
import warnings

import polars as pl
import pytest

from tests._figures import tick_label_overlaps
from tests.conftest import shared

pytest.importorskip("matplotlib")

#: Long names that differ only after 40 characters (checkpoints of one sweep on the Hub).
LONG = {
    f"m{i}": f"RylanSchaeffer/mem_Qwen3-93M_minerva_math_rep_{i}_sbst_1.0000_epch_1_ot_{i}"
    for i in range(4)
}

#: Names that stand under their boxes, slanted and wrapped (about 20 characters).
MEDIUM = {f"m{i}": f"Llama-3.{i}-8B-Instruct-{i}" for i in range(4)}

#: The multi-panel figures and the axis their rows or slots of models lie on.
PANEL_FIGURES = ("prompt_spread", "intervals", "noise_components", "convergence")


def _names(ax) -> list[str]:
    """The model names of a panel's category axis, top (or left) first, wrapped lines joined.

    Read from the axis's formatter: a row of panels naming the same models shows them once.
    """
    from matplotlib.ticker import FixedLocator

    lying = isinstance(ax.yaxis.get_major_locator(), FixedLocator)
    axis = ax.yaxis if lying else ax.xaxis
    locs = axis.get_major_locator().locs
    names = [axis.get_major_formatter()(v, i).replace("\n", "") for i, v in enumerate(locs)]
    return names if not lying or ax.get_ylim()[0] > ax.get_ylim()[1] else names[::-1]


def _check(report, models_of) -> list[str]:
    """Draw every multi-panel figure of ``report``: each spread panel names its own models in
    the report's order; no tick label overlaps another panel, title or neighbour. The keys
    of the figures drawn."""
    import matplotlib.pyplot as plt

    from evalstats.errors import EvalstatsError
    from evalstats.plots import paper_style
    from evalstats.report._figures import figure_specs, ranked_models, report_palette

    palette = report_palette(report)
    ranked = ranked_models(report)
    specs = [s for s in figure_specs(report) if re.sub(r"_\d+$", "", s.key) in PANEL_FIGURES]
    assert {s.key for s in specs} >= {"prompt_spread", "intervals"}
    drawn = []
    for spec in specs:
        with paper_style(), warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)  # "constrained_layout not applied"
            try:
                fig = spec.draw(palette)
            except EvalstatsError:  # the report lists such a figure as not drawn, with why
                continue
            assert tick_label_overlaps(fig) == [], spec.key
            drawn.append(spec.key)
        if spec.key.startswith("prompt_spread"):
            for ax in (a for a in fig.axes if a.get_visible()):
                here = models_of(ax.get_title())
                assert _names(ax) == [m for m in ranked if m in here], ax.get_title()
                colours = _drawn_colours(ax)
                assert colours == [tuple(palette[m]) for m in ranked if m in here]
        plt.close(fig)
    return drawn


def _drawn_colours(ax) -> list[tuple]:
    from matplotlib.colors import to_rgb

    (boxes,) = [c for c in ax.collections if c.get_gid() == "boxes"]
    return [tuple(to_rgb(tuple(f))) for f in boxes.get_facecolors()]


@pytest.mark.parametrize(
    ("n_datasets", "names", "orient"), [(2, LONG, "h"), (5, LONG, "h"), (5, MEDIUM, "v")]
)
def test_panels_of_groups_with_different_models_name_their_own_and_overlap_nothing(
    n_datasets, names, orient
):
    from evalstats.report import audit_report
    from evalstats.simulate import observations

    obs = observations(
        n_models=4, n_datasets=n_datasets, n_items=8, n_variants=6, n_runs=2, instability=0.1,
        seed=1,
    )  # fmt: skip
    # dataset d<k> is not run by model m<k mod 4>
    missing = pl.format("m{}", pl.col("dataset").str.slice(1).cast(pl.Int64) % 4)
    obs = obs.filter(pl.col("model") != missing).with_columns(pl.col("model").replace(names))
    report = audit_report(
        obs,
        options={"nstar": {"n_resamples": 20}},
        skip=["converge", "anova", "attribution", "compare", "ranks", "correlation", "friedman"],
    )
    by_dataset = {
        d: set(g["model"].to_list()) for (d,), g in obs.group_by("dataset", maintain_order=True)
    }
    from evalstats.plots import paper_style
    from evalstats.plots.moments import spread_orientation

    with paper_style():  # long names lie down beside their boxes, shorter ones stand
        assert spread_orientation(list(names.values()), rows=3) == orient
    drawn = _check(report, lambda title: by_dataset[title.split(" ")[0]])
    assert {re.sub(r"_\d+$", "", k) for k in drawn} == {
        "prompt_spread",
        "intervals",
        "noise_components",
        "convergence",
    }


@pytest.mark.shared_data
def test_the_real_gpqa_and_math_folder_draws_each_model_where_it_ran():
    from evalstats import read
    from evalstats.report import audit_report

    ingest = read(shared("real-logs-2", "lm-eval"))
    obs = ingest.observations.collect()
    report = audit_report(obs, ingest=ingest.report)
    units = report.units

    def models_of(title: str) -> set[str]:
        dataset, _, rest = title.partition(" (")
        sub = units.filter(pl.col("dataset") == dataset)
        if "doc_set" in rest and "–" not in rest:
            sub = sub.filter(pl.col("doc_set") == rest.split("doc_set ", 1)[1].rstrip(")"))
        elif "doc_set" in rest:
            sub = sub.filter(pl.col("doc_set").is_null())
        return set(sub["model"].to_list())

    # the variance components too: their panel of the GPQA task without a doc_set matched
    # the text 'None' and the figure was not drawn
    assert set(_check(report, models_of)) == {"prompt_spread", "intervals", "noise_components"}
