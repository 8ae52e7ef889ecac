"""Rank intervals (joint bootstrap) and Friedman + Nemenyi critical difference."""

from __future__ import annotations

import math

import polars as pl
import pytest
from numpy.testing import assert_allclose
from scipy import stats

from evalstats.compare import friedman_nemenyi, rank_intervals
from evalstats.errors import InsufficientDataError
from evalstats.simulate import observations, unit_table


def test_rank_intervals_separate_clear_gaps_and_p_best_sums_to_one():
    obs = observations(
        n_models=3, n_items=300, n_variants=2, model_accuracy=(0.5, 0.6, 0.75), seed=1
    )
    out = rank_intervals(obs, n_resamples=300)
    assert out["rank"].to_list() == [3, 2, 1]
    assert out["rank_low"].to_list() == out["rank_high"].to_list() == [3, 2, 1]
    assert_allclose(out["p_best"].sum(), 1.0, rtol=1e-12)
    assert out.filter(model="m2")["p_best"].item() > 0.95


def test_rank_intervals_overlap_for_tied_models():
    obs = observations(n_models=2, n_items=100, n_variants=1, model_accuracy=(0.6, 0.6), seed=3)
    out = rank_intervals(obs, n_resamples=500)
    assert out["rank_low"].to_list() == [1, 1] and out["rank_high"].to_list() == [2, 2]
    assert 0.02 < out["p_best"][0] < 0.98  # neither model is certainly best


def test_rank_intervals_seeded_and_score_is_item_mean():
    obs = observations(n_models=2, n_items=50, n_variants=3, seed=0)
    a = rank_intervals(obs, n_resamples=100, seed=4)
    assert a.equals(rank_intervals(obs, n_resamples=100, seed=4))
    assert_allclose(
        a.filter(model="m0")["score"].item(), obs.filter(model="m0")["score"].mean(), rtol=1e-12
    )


@pytest.mark.parametrize(("k", "q005"), [(3, 2.343), (4, 2.569), (5, 2.728), (10, 3.164)])
def test_nemenyi_q_matches_demsar_table(k, q005):
    """Demšar (2006), Table 5(a): q_0.05 for the Nemenyi test (3 decimals)."""
    units = unit_table(n_models=k, n_datasets=8, n_items=20, n_variants=1, seed=k)
    res = friedman_nemenyi(units)
    assert_allclose(res.critical_difference, q005 * math.sqrt(k * (k + 1) / (6 * 8)), atol=6e-4)


def test_friedman_matches_scipy_and_mean_ranks():
    units = unit_table(n_models=4, n_datasets=6, n_items=40, n_variants=2, seed=2)
    res = friedman_nemenyi(units)
    wide = (
        units.group_by("dataset", "model")
        .agg(pl.col("score").mean())
        .pivot(on="model", index="dataset", values="score", sort_columns=True)
    )
    x = wide.select("m0", "m1", "m2", "m3").to_numpy()
    ref = stats.friedmanchisquare(*x.T)
    assert_allclose([res.statistic, res.pvalue], [ref.statistic, ref.pvalue], rtol=1e-12)
    assert_allclose(res.ranks["mean_rank"], stats.rankdata(-x, axis=1).mean(axis=0))
    assert res.to_frame().height == 4 and res.ranks["mean_rank"].sum() == pytest.approx(10.0)


def test_friedman_needs_three_models():
    with pytest.raises(InsufficientDataError, match="at least 3 values of 'model'"):
        friedman_nemenyi(unit_table(n_models=2, n_datasets=3, n_items=10, n_variants=1, seed=0))


def test_bootstrap_rank_is_stable_under_row_shuffle():
    obs = observations(n_models=3, n_items=60, n_variants=1, seed=5)
    shuffled = obs.sample(fraction=1.0, shuffle=True, seed=2)
    assert rank_intervals(obs, n_resamples=50).equals(rank_intervals(shuffled, n_resamples=50))
    assert (rank_intervals(obs, n_resamples=50)["rank_low"] >= 1).all()


def test_friedman_is_bitwise_identical_on_repeated_calls():
    """Blocks in a fixed order, so the mean score over blocks adds the same floats each call."""
    obs = observations(n_models=3, n_datasets=5, n_items=20, n_variants=4, n_runs=2, seed=1)
    first = friedman_nemenyi(obs).to_frame()
    for _ in range(15):
        assert friedman_nemenyi(obs).to_frame().equals(first)
