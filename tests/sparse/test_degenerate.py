"""Sparse groups whose observed cells are all right (or all wrong): a level the cells can tell."""

from __future__ import annotations

import polars as pl
import pytest

from evalstats.sparse import full_grid, sparse_prompt_distribution, subsample_cells


@pytest.mark.parametrize("value", [1.0, 0.0])
def test_a_group_with_every_observed_cell_at_a_bound_is_estimated_there(value):
    """5 % of a 40 x 200 grid, every cell right (or wrong). The flat prior on the intercept let
    it run off to 18 logits and the draws' level to +-1e6: the mean came out 0.60 either way.
    Now the mean is within 0.02 of the bound and its 90 % interval reaches the bound and holds
    the Clopper-Pearson bound of the observed cells (0.05 ** (1 / N) from the bound)."""
    grid = full_grid(n_items=200, n_variants=40, factors={}, seed=1)
    obs = subsample_cells(grid.with_columns(pl.lit(value).alias("score")), share=0.05, seed=1)
    out = sparse_prompt_distribution(obs, n_resamples=100, seed=0, grid_items=200)
    mean = out.filter(pl.col("quantity") == "mean").row(0, named=True)
    cp = 1.0 - 0.05 ** (1.0 / obs.height)  # distance of the Clopper-Pearson bound from it
    if value == 1.0:
        assert mean["estimate"] >= 0.98
        assert mean["ci_high"] == pytest.approx(1.0)
        assert mean["ci_low"] <= 1.0 - cp
    else:
        assert mean["estimate"] <= 0.02
        assert mean["ci_low"] == pytest.approx(0.0)
        assert mean["ci_high"] >= cp
    assert out["estimate"].is_finite().all() and out["ci_low"].is_finite().all()
