"""Property tests (hypothesis): bounds, symmetry, invariance."""

from __future__ import annotations

import numpy as np
import polars as pl
from hypothesis import given
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from evalstats.compare import compare_models, intervals, mean_interval, paired_difference
from evalstats.simulate import observations, unit_table

scores = st.lists(st.floats(0, 1, allow_nan=False), min_size=3, max_size=40)
binary = st.lists(st.sampled_from([0.0, 1.0]), min_size=3, max_size=40)


@given(scores)
def test_t_interval_contains_the_mean(x):
    x = np.asarray(x)
    if np.all(x == x[0]):
        return
    mean, se, low, high = mean_interval(x)
    assert low <= mean <= high and se >= 0


@given(binary)
def test_wilson_interval_is_inside_unit_interval(x):
    mean, _, low, high = mean_interval(np.asarray(x), method="wilson")
    assert -1e-12 <= low <= mean <= high <= 1 + 1e-12


@given(st.data())
def test_paired_difference_is_antisymmetric_with_p_in_bounds(data):
    n = data.draw(st.integers(3, 30))
    a = np.asarray(data.draw(st.lists(st.floats(0, 1), min_size=n, max_size=n)))
    b = np.asarray(data.draw(st.lists(st.floats(0, 1), min_size=n, max_size=n)))
    if np.all(a - b == (a - b)[0]):
        return
    ab = paired_difference(a, b, n_resamples=199, seed=1)
    ba = paired_difference(b, a, n_resamples=199, seed=1)
    assert 0 <= ab.pvalue <= 1
    assert_allclose(ab.difference, -ba.difference, atol=1e-12)
    assert_allclose(ab.pvalue, ba.pvalue, rtol=1e-12)


def test_intervals_invariant_to_model_renaming():
    units = unit_table(n_models=3, n_items=30, n_variants=6, seed=8)
    renamed = units.with_columns(pl.col("model").replace({"m0": "x0", "m1": "x1", "m2": "x2"}))
    a = intervals(units).drop("model")
    b = intervals(renamed).drop("model")
    assert a.equals(b)


def test_compare_paired_on_variants_uses_configuration_scores():
    units = unit_table(n_models=2, n_items=30, n_variants=12, seed=3)
    out = compare_models(units, paired_on="variants", n_resamples=999).row(0, named=True)
    a = units.filter(model="m0").sort("variant")["score"].to_numpy()
    b = units.filter(model="m1").sort("variant")["score"].to_numpy()
    assert out["n"] == 12 and out["paired_on"] == "variants"
    assert_allclose(out["difference"], (a - b).mean(), rtol=1e-12)
    assert_allclose(out["correlation"], np.corrcoef(a, b)[0, 1], rtol=1e-12)


def test_compare_uses_only_shared_items():
    obs = observations(n_models=2, n_items=30, n_variants=1, seed=2)
    obs = obs.filter(~((pl.col("model") == "m1") & (pl.col("item").cast(pl.Int64) < 5)))
    assert compare_models(obs).row(0, named=True)["n"] == 25
