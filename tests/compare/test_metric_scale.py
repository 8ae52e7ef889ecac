"""Comparisons on metrics other than accuracy (issue 14's convention): bounds, direction, refusals."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from numpy.testing import assert_allclose
from scipy import stats

from evalstats.compare import compare_models, friedman_nemenyi, intervals, paired_difference
from evalstats.errors import ParameterError
from evalstats.schema import MetricInfo, with_metric
from evalstats.simulate import observations


def _bleu(seed: int = 0) -> pl.DataFrame:
    """BLEU-like scores in [0, 100]; model m2 scores 100 in three runs and 96 in one."""
    obs = observations(n_models=3, n_items=12, n_variants=1, n_runs=4, seed=seed)
    top = np.where(obs["run"] == 2, 96.0, 100.0)
    obs = obs.with_columns(
        pl.Series("score", np.where(obs["model"] == "m2", top, obs["score"] * 60))
    )
    return with_metric(obs, MetricInfo("bleu", 0, 100))


def test_intervals_clip_to_the_metrics_own_bounds_and_wilson_refuses():
    obs = _bleu()
    with pytest.warns(Warning):  # m0, m1: identical runs, a degenerate interval
        out = intervals(obs, over="runs", method="t")
    m2 = out.filter(pl.col("model") == "m2").row(0, named=True)
    x = obs.filter(pl.col("model") == "m2").group_by("run").agg(pl.col("score").mean())["score"]
    unclipped = stats.ttest_1samp(x.to_numpy(), 0).confidence_interval().high
    assert unclipped > 100 and m2["ci_high"] == 100.0  # a t bound above the metric's range
    assert set(out["method"]) == {"t"}
    auto = intervals(obs, over="items")
    assert set(auto["method"]) == {"logit"}  # not 0/1, bounded: logit, not Wilson
    ok = auto.filter(pl.col("ci_low").is_not_nan())
    assert ok.height == 2 and ((ok["ci_low"] >= 0) & (ok["ci_high"] <= 100)).all()
    assert auto.filter(pl.col("ci_low").is_nan())["note"].str.contains("no spread").all()
    with pytest.raises(ParameterError, match="`method='wilson'` is for a proportion of 0/1"):
        intervals(obs, over="items", method="wilson")


def test_mcnemar_refuses_a_non_binary_metric_in_one_line():
    obs = _bleu()
    with pytest.raises(ParameterError, match="needs 0/1 paired scores") as err:
        compare_models(obs, method="mcnemar")
    assert "\n" not in str(err.value)
    with pytest.raises(ParameterError, match="needs 0/1 scores on both sides"):
        paired_difference(np.array([3.0, 4.0]), np.array([1.0, 0.0]), method="mcnemar-midp")
    out = compare_models(obs)  # auto: the permutation test on any metric
    assert set(out["method"]) == {"permutation"} and set(out["metric"]) == {"bleu"}


def test_friedman_ranks_lower_is_better_metrics_from_the_bottom():
    units = observations(n_models=4, n_datasets=12, n_items=30, n_variants=1, seed=3)
    err = units.with_columns((1 - pl.col("score")).alias("score"))
    acc = friedman_nemenyi(units, blocks=("dataset",))
    low = friedman_nemenyi(
        with_metric(err, MetricInfo("error", 0, 1, higher_is_better=False)), blocks=("dataset",)
    )
    assert_allclose(low.ranks["mean_rank"], acc.ranks["mean_rank"], rtol=1e-12)
    assert_allclose(low.statistic, acc.statistic, rtol=1e-12)
    wide = (
        err.group_by("dataset", "model")
        .agg(pl.col("score").mean())
        .pivot(on="model", index="dataset", values="score", sort_columns=True)
        .sort("dataset")
    )
    ref = stats.friedmanchisquare(*wide.drop("dataset").to_numpy().T)
    assert_allclose(low.statistic, ref.statistic, rtol=1e-12)


def test_zero_one_scores_of_a_count_or_log_probability_are_not_a_proportion():
    """Issue 30: a HELM log-probability of 0 got a Wilson interval up to 0.33 (its range ends at
    0) and a count of one output token one down to 0.59."""
    import polars as pl

    from evalstats.compare import intervals
    from evalstats.schema import MetricInfo, with_metric

    base = pl.DataFrame(
        {"model": "m", "dataset": "d", "item": [str(i) for i in range(12)], "score": 0.0}
    )
    logprob = with_metric(base, MetricInfo("logprob", None, 0.0, True))
    tokens = with_metric(
        base.with_columns(score=pl.lit(1.0)), MetricInfo("tokens", 0.0, None, False)
    )
    for table, bound in ((logprob, ("ci_high", 0.0)), (tokens, ("ci_low", 0.0))):
        out = intervals(table).row(0, named=True)
        assert out["method"] != "wilson"
        col, edge = bound  # never beyond the range (here no interval at all: constant scores)
        assert not (out[col] > edge) if col == "ci_high" else not (out[col] < edge)
        assert col != "ci_low" or out["ci_low"] != out["ci_low"] or out["ci_low"] > 0.5
    # a proportion keeps Wilson
    acc = with_metric(base, MetricInfo("acc", 0.0, 1.0, True))
    assert intervals(acc).row(0, named=True)["method"] == "wilson"
