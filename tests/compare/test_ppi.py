"""PPI++ (issue 20): formulas by an independent computation, coverage with a biased judge."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from numpy.testing import assert_allclose
from scipy import stats

from evalstats.compare import ppi_difference, ppi_mean
from evalstats.compare._ppi import ppi_kernel
from evalstats.errors import ParameterError
from evalstats.simulate import judged_observations


def test_ppi_mean_matches_the_ppi_plus_plus_formulas():
    obs = judged_observations(n_models=1, n_items=600, n_labelled=150, seed=3)
    out = ppi_mean(obs, by=("model",)).row(0, named=True)
    lab = obs.filter(pl.col("gold_score").is_not_null())
    unl = obs.filter(pl.col("gold_score").is_null())
    y, f, ft = lab["gold_score"].to_numpy(), lab["score"].to_numpy(), unl["score"].to_numpy()
    n, big_n = y.size, ft.size
    lam = np.cov(y, f)[0, 1] / ((1 + n / big_n) * np.var(np.r_[f, ft], ddof=1))
    lam = min(max(lam, 0), 1)
    est = y.mean() + lam * (ft.mean() - f.mean())
    se = np.sqrt(np.var(y - lam * f, ddof=1) / n + lam**2 * np.var(ft, ddof=1) / big_n)
    z = stats.norm.ppf(0.975)
    assert_allclose(out["lam"], lam, rtol=1e-12)
    assert_allclose([out["estimate"], out["se"]], [est, se], rtol=1e-12)
    assert_allclose([out["ci_low"], out["ci_high"]], [est - z * se, est + z * se], rtol=1e-12)
    assert (out["n_labelled"], out["n_unlabelled"]) == (150, 450)
    # the PPI++ interval is narrower than the gold-only one, and the judge is biased upwards
    assert out["ci_high"] - out["ci_low"] < out["classical_ci_high"] - out["classical_ci_low"]
    assert out["judge_bias"] > 0.05
    # lam = 0 is the classical estimate; lam = 1 the original PPI
    zero = ppi_mean(obs, by=("model",), lam=0.0).row(0, named=True)
    assert_allclose(zero["estimate"], y.mean(), rtol=1e-12)
    one = ppi_mean(obs, by=("model",), lam=1.0).row(0, named=True)
    assert_allclose(one["estimate"], y.mean() + ft.mean() - f.mean(), rtol=1e-12)


def test_ppi_difference_is_ppi_on_item_differences():
    obs = judged_observations(n_models=3, n_items=400, n_labelled=120, seed=1)
    out = ppi_difference(obs)
    assert out.select("model_a", "model_b").rows() == [("m0", "m1"), ("m0", "m2"), ("m1", "m2")]
    w = obs.sort("item").pivot(on="model", index="item", values=["score", "gold_score"])
    lab = w.filter(pl.col("gold_score_m0").is_not_null())
    unl = w.filter(pl.col("gold_score_m0").is_null())
    k = ppi_kernel(
        (lab["gold_score_m0"] - lab["gold_score_m2"]).to_numpy(),
        (lab["score_m0"] - lab["score_m2"]).to_numpy(),
        (unl["score_m0"] - unl["score_m2"]).to_numpy(),
    )
    row = out.row(1, named=True)
    assert_allclose([row["estimate"], row["se"]], [k["estimate"], k["se"]], rtol=1e-12)
    assert_allclose(row["pvalue"], 2 * stats.norm.sf(abs(k["estimate"] / k["se"])), rtol=1e-10)


def _coverage(reps: int, seed: int, paired: bool) -> tuple[float, float, float]:
    """Biased judge (sensitivity 0.95, false-positive rate 0.4); n = 200 labelled, N = 1800."""
    rng = np.random.default_rng(seed)
    n, big_n = 200, 1800
    diff = rng.normal(0, 1, (reps, n + big_n))

    def model(acc):
        truth = rng.random((reps, n + big_n)) < 1 / (1 + np.exp(-(np.log(acc / (1 - acc)) - diff)))
        judge = np.where(truth, rng.random(truth.shape) < 0.95, rng.random(truth.shape) < 0.4)
        return truth.astype(float), judge.astype(float)

    ya, fa = model(0.7)
    if paired:
        yb, fb = model(0.6)
        y, f = ya - yb, fa - fb
        theta = np.mean(_truth_mean(0.7, rng) - _truth_mean(0.6, rng))
    else:
        y, f = ya, fa
        theta = float(np.mean(_truth_mean(0.7, rng)))
    k = ppi_kernel(y[:, :n], f[:, :n], f[:, n:])
    covered = (k["ci_low"] <= theta) & (theta <= k["ci_high"])
    naive = f.mean(axis=1)
    return float(covered.mean()), float(np.mean(naive - theta)), theta


def _truth_mean(acc, rng, size=4_000_000):
    """Population accuracy over the difficulty distribution (Monte Carlo, 4e6 draws)."""
    d = np.random.default_rng(99).normal(0, 1, size)
    return 1 / (1 + np.exp(-(np.log(acc / (1 - acc)) - d)))


@pytest.mark.parametrize("paired", [False, True])
def test_ppi_coverage_with_biased_judge_short(paired):
    cov, bias, _ = _coverage(400, seed=5, paired=paired)
    assert abs(bias) > 0.03  # the judge alone is off
    assert 0.95 - 3.5 * np.sqrt(0.05 * 0.95 / 400) <= cov <= 0.95 + 3.5 * np.sqrt(0.0475 / 400)


@pytest.mark.slow
@pytest.mark.parametrize("paired", [False, True])
def test_ppi_coverage_with_biased_judge_full(paired):
    """4,000 replicates: coverage within 93.5-96.5 % for accuracy and paired differences."""
    cov, _, _ = _coverage(4000, seed=2024, paired=paired)
    assert 0.935 <= cov <= 0.965, cov


def test_ppi_errors():
    obs = judged_observations(n_items=50, n_labelled=10, seed=0)
    with pytest.raises(ParameterError, match="`gold` names 'human'"):
        ppi_mean(obs, gold="human")
    with pytest.raises(ParameterError, match="`lam` must be in"):
        ppi_mean(obs, lam=2.0)
