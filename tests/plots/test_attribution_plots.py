"""Structure tests of the attribution figures (Agg backend; no pixel comparisons)."""

from __future__ import annotations

import polars as pl
import pytest

from evalstats.attribution import attribute, factor_anova, interaction_means
from evalstats.errors import SchemaError
from evalstats.simulate import unit_table

pytest.importorskip("matplotlib")


@pytest.fixture(scope="module")
def units() -> pl.DataFrame:
    return unit_table(
        n_models=1,
        n_items=100,
        n_runs=3,
        instability=1.0,
        prompt_sd=0.0,
        seed=0,
        model_accuracy=[0.3],
        item_sd=0.3,
        factors={
            "a": {0: 0.0, 1: 0.15},
            "b": {0: 0.0, 1: 0.1},
            "c": {"x": 0.0, "y": 0.0, "z": 0.0},
        },
        interactions={("a", "b"): {(1, 1): 0.12}},
    )


def test_anova_effects_bars_and_marks(units):
    from evalstats.plots.attribution import plot_anova_effects

    res = factor_anova(units, factors=["a", "b", "c"], n_resamples=199, seed=0)
    fig = plot_anova_effects(res)
    ax = fig.axes[0]
    tab = res.to_frame().filter(pl.col("term") != "Residual")
    assert len(ax.patches) == tab.height
    assert [t.get_text() for t in ax.get_yticklabels()][::-1] == tab["term"].to_list()
    widths = sorted(p.get_width() for p in ax.patches)
    assert widths == sorted(tab["eta_sq"].to_list())
    marks = [t.get_text() for t in ax.texts]
    assert (
        marks.count("**")
        == tab.filter((pl.col("pvalue_perm") < 0.01) & (pl.col("pvalue_perm") >= 0.001)).height
    )
    assert ax.get_xlabel() == "η²"


def test_attribution_band_and_bars(units):
    from evalstats.plots import plot_attribution

    res = attribute(units, factors=["a", "b", "c"], method="linear", n_null=19, seed=0)
    fig = plot_attribution(res)
    ax = fig.axes[0]
    assert len(ax.patches) == 2 * 3  # band + observed per factor
    heights = sorted(round(p.get_width(), 12) for p in ax.patches)
    expected = sorted(
        round(v, 12)
        for v in res.to_frame()["mean_abs_shap"].to_list() + res.to_frame()["null_high"].to_list()
    )
    assert heights == expected


def test_interaction_heatmap_cells(units):
    from evalstats.plots import plot_interaction_heatmap

    res = factor_anova(units, factors=["a", "b", "c"], n_resamples=0)
    cells = interaction_means(units, term=res.strongest_interaction())
    fig = plot_interaction_heatmap(cells)
    ax = fig.axes[0]
    assert ax.get_title() == res.strongest_interaction() == "a:b"
    values = sorted(float(t.get_text()) for t in ax.texts)
    assert values == sorted(round(v, 3) for v in cells["score"].to_list())
    # the row levels read across (seaborn turns short numeric row labels upright)
    assert all(t.get_rotation() == 0 for t in ax.get_yticklabels())


def test_plot_rejects_wrong_frame():
    from evalstats.plots.attribution import plot_anova_effects

    with pytest.raises(SchemaError, match="lacks column 'term'"):
        plot_anova_effects(pl.DataFrame({"x": [1]}))
