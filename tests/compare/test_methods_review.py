"""Issue 18, points 5-9, on real data; each test fails on the code before the fix.

Data, read in place from ../shared/data (skipped without it): the real llm-stability runs
(llm-stability/strict_json_schema_runs.tgz; gpt-4o, 5 identical runs, 0/1 item scores;
Apache-2.0) and the State of What Art paraphrase accuracies (state-of-what-art/;
CDLA-Permissive-2.0). Comparing the five *runs* of one model
with ``column='run'`` gives real paired 0/1 data with real item difficulty.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import polars as pl
import pytest
from numpy.testing import assert_allclose
from scipy import stats

from evalstats.compare import compare_models, friedman_nemenyi, intervals, paired_difference
from evalstats.compare._pairtests import McNemar
from evalstats.errors import DesignWarning
from evalstats.io import read
from evalstats.io.state_of_what_art import read_state_of_what_art

HISTORY = "gpt-4o_OAI-0.0-high_school_european_history-few_2025-03-02_08-48-33"
NAVIGATE = "gpt-4o_OAI-0.0-navigate-few_2025-03-01_10-58-34"


@pytest.fixture(scope="module")
def history(llm_stability_runs):
    return read(llm_stability_runs / HISTORY).observations.collect()


@pytest.fixture(scope="module")
def all_tasks(llm_stability_runs):
    return read(llm_stability_runs).observations.collect()


def _first_items(obs: pl.DataFrame, n: int, run: int = 0) -> pl.DataFrame:
    one = obs.filter(pl.col("run") == run).sort(pl.col("item").cast(pl.Int64))
    return one.head(n)


# --- point 5: Wilson by default for 0/1 item scores, bounds in range, all-correct not NaN -----


def test_default_interval_for_binary_items_is_wilson_within_range(history):
    """Before the fix: method 't' (NaN for all-correct items, stated nowhere as a choice)."""
    from statsmodels.stats.proportion import proportion_confint

    sample = _first_items(history, 30)  # 26 of 30 correct
    out = intervals(sample, over="items").row(0, named=True)
    assert out["method"] == "wilson"
    low, high = proportion_confint(26, 30, alpha=0.05, method="wilson")
    assert_allclose([out["ci_low"], out["ci_high"]], [low, high], rtol=1e-12)
    correct = history.filter((pl.col("run") == 0) & (pl.col("score") == 1)).head(30)
    allc = intervals(correct, over="items").row(0, named=True)
    z2 = stats.norm.ppf(0.975) ** 2
    assert allc["method"] == "wilson"
    assert_allclose([allc["ci_low"], allc["ci_high"]], [30 / (30 + z2), 1.0], rtol=1e-12)


def test_t_interval_bounds_are_clipped_to_the_score_range(history):
    """Before the fix: a t interval over 5 runs near 1 ran above 1."""
    item_runs = history.filter(pl.col("item").is_in(["0", "1", "2", "38"]))  # 38: 4 of 5 runs
    out = intervals(item_runs, over="runs", method="t")
    assert (out["ci_high"] <= 1).all() and (out["ci_low"] >= 0).all()


def _wilson_exact_coverage(n: int, p: float) -> float:
    from statsmodels.stats.proportion import proportion_confint

    x = np.arange(n + 1)
    lo, hi = proportion_confint(x, n, alpha=0.05, method="wilson")
    return float(stats.binom.pmf(x, n, p)[(lo <= p) & (p <= hi)].sum())


@pytest.mark.slow
@pytest.mark.parametrize("n", [30, 100])
@pytest.mark.parametrize("p", [0.5, 0.9, 0.97])
def test_default_binary_interval_coverage_by_simulation(n, p):
    """20,000 samples per cell through ``intervals``; the simulated coverage matches the exact
    binomial coverage of Wilson (MC tolerance 4 SE), which lies in [0.935, 0.975]."""
    rng = np.random.default_rng(int(1000 * p) + n)
    reps = 20_000
    y = (rng.random((reps, n)) < p).astype(float)
    frame = pl.DataFrame(
        {
            "model": np.repeat([f"r{i}" for i in range(reps)], n),
            "dataset": "d",
            "item": np.tile([str(i) for i in range(n)], reps),
            "variant": "v",
            "run": 0,
            "score": y.ravel(),
        }
    )
    out = intervals(frame, over="items", by=("model",))
    assert set(out["method"]) == {"wilson"}
    covered = float(((out["ci_low"] <= p) & (p <= out["ci_high"])).mean())
    exact = _wilson_exact_coverage(n, p)
    assert abs(covered - exact) < 4 * math.sqrt(exact * (1 - exact) / reps)
    assert 0.935 <= exact <= 0.975, exact


# --- point 6: family choice, resamples scaled to the family, floor flag -----------------------


def test_global_family_over_real_tasks_can_reject_where_the_floor_would_forbid(all_tasks):
    """Runs of gpt-4o compared on every task: 7 x 10 = 70 pairs in one Holm family.
    Before the fix: no `family=` (TypeError), 9999 resamples whatever the family."""
    out = compare_models(
        all_tasks, column="run", family="global", method="permutation", correction="holm"
    )
    assert out.height == 70 and (out["family_size"] == 70).all()
    b = int(out["n_resamples"][0])
    assert b >= 2 * 70 / 0.05
    assert (1 / (b + 1)) * 70 < 0.05  # the floor no longer blocks every rejection
    assert out["can_reject"].all()
    with pytest.warns(DesignWarning, match="cannot be significant by construction"):
        floor = compare_models(
            all_tasks,
            column="run",
            family="global",
            method="permutation",
            n_resamples=99,
            stop_after=None,
        )
    at_floor = floor.filter("at_floor")
    assert_allclose(at_floor["pvalue"], 1 / 100)
    # the analytic paired t has no floor and agrees with scipy
    t = compare_models(all_tasks, column="run", family="global", method="t")
    r = t.row(0, named=True)
    one = all_tasks.filter(pl.col("dataset") == r["dataset"])
    wide = one.pivot(on="run", index="item", values="score").sort("item")
    ref = stats.ttest_rel(wide[r["model_a"]], wide[r["model_b"]])
    assert_allclose(r["pvalue"], ref.pvalue, rtol=1e-10)


# --- point 7: mid-p McNemar and the MDD of the test used ------------------------------------


def test_midp_mcnemar_and_mdd_of_the_mcnemar_test(llm_stability_runs):
    """Runs 0 and 3 of gpt-4o on navigate (250 items, 61 discordant). Before the fix:
    'mcnemar-midp' did not exist and the MDD came from t-test power."""
    navigate = read(llm_stability_runs / NAVIGATE).observations.collect()
    r0 = _first_items(navigate, 250, run=0)["score"].to_numpy()
    r1 = _first_items(navigate, 250, run=3)["score"].to_numpy()
    n10 = int(np.sum((r0 == 1) & (r1 == 0)))
    n01 = int(np.sum((r0 == 0) & (r1 == 1)))
    k = n10 + n01
    res = paired_difference(r0, r1, method="mcnemar-midp")
    x = min(n10, n01)
    midp = 2 * (stats.binom.cdf(x, k, 0.5) - 0.5 * stats.binom.pmf(x, k, 0.5))
    assert_allclose(res.pvalue, min(1.0, midp), rtol=1e-12)
    exact = paired_difference(r0, r1, method="mcnemar")
    assert res.pvalue < exact.pvalue
    # at the reported MDD, the exact McNemar test itself has 80% power (given k discordant)
    assert k == 61
    pi = 0.5 * (1 + exact.mdd * 250 / k)
    xs = np.arange(k + 1)
    p_of_x = np.array([stats.binomtest(int(v), k, 0.5).pvalue for v in xs])
    power = stats.binom.pmf(xs, k, pi)[p_of_x < 0.05].sum()
    assert_allclose(power, 0.8, atol=1e-6)
    t_based = paired_difference(r0, r1, method="t").mdd
    assert exact.mdd > t_based  # t-test power was optimistic for the exact test


def test_midp_mcnemar_size_is_closer_to_nominal_than_exact():
    """n = 30 items, no difference: exact McNemar's rejection rate is far below 0.05."""
    rng = np.random.default_rng(7)
    reps, n = 2000, 30
    diff = rng.uniform(0.2, 0.9, (reps, n))
    a = (rng.random((reps, n)) < diff).astype(float)
    b = (rng.random((reps, n)) < diff).astype(float)
    mask = np.ones((n, reps), dtype=bool)
    rates = {}
    for method in ("mcnemar", "mcnemar-midp"):
        # the vectorised core of paired_difference: one column per replicate
        test = McNemar(a.T, b.T, mask, "two-sided", midp=method == "mcnemar-midp")
        rates[method] = float(np.mean(test.pvalue < 0.05))
    assert rates["mcnemar"] < 0.03
    assert rates["mcnemar"] < rates["mcnemar-midp"] <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / reps)


# --- point 8: Iman-Davenport, independent blocks, items as blocks ---------------------------


def test_friedman_reports_iman_davenport_on_real_tasks(shared_data):
    """State of What Art: 15 BBH tasks as blocks. Before the fix: chi-square only."""
    units = read_state_of_what_art(shared_data / "state-of-what-art", metadata=False)
    units = units.observations.collect()
    res = friedman_nemenyi(units)
    wide = (
        units.group_by("dataset", "model")
        .agg(pl.col("score").mean())
        .pivot(on="model", index="dataset", values="score", sort_columns=True)
        .drop_nulls()
    )
    x = wide.drop("dataset").to_numpy()
    n, k = x.shape
    chi2 = stats.friedmanchisquare(*x.T).statistic
    f = (n - 1) * chi2 / (n * (k - 1) - chi2)
    assert_allclose(res.f_statistic, f, rtol=1e-12)
    assert_allclose(res.f_pvalue, stats.f.sf(f, k - 1, (k - 1) * (n - 1)), rtol=1e-12)
    assert res.f_pvalue <= res.pvalue  # Iman-Davenport is the less conservative one
    with pytest.warns(DesignWarning, match="not independent"):
        friedman_nemenyi(units, blocks=("dataset", "variant"))


def test_friedman_with_items_as_blocks_matches_scipy(history):
    """Items as blocks, the five runs compared. Before the fix: SchemaError ('item' not in the
    unit table) and no way to rank anything but models."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = friedman_nemenyi(history, blocks=("dataset", "item"), column="run")
    wide = history.pivot(on="run", index="item", values="score", sort_columns=True)
    x = wide.drop("item").to_numpy()
    ref = stats.friedmanchisquare(*x.T)
    assert res.n_blocks == 165 and res.n_models == 5 and res.column == "run"
    assert_allclose([res.statistic, res.pvalue], [ref.statistic, ref.pvalue], rtol=1e-12)
    assert_allclose(res.ranks["mean_rank"], stats.rankdata(-x, axis=1).mean(axis=0))


# --- point 9: warnings below a method's documented minimum size ------------------------------


def test_bootstrap_below_twenty_units_warns(history):
    """Five runs of a real item set: percentile/BCa at n = 5. Before the fix: silent."""
    for method in ("percentile", "bootstrap"):
        with pytest.warns(DesignWarning, match="below n = 20"):
            intervals(history, over="runs", method=method, n_resamples=199)


def test_test_below_its_minimum_size_warns(history):
    """Four items cannot give an exact McNemar p-value below 0.05 (2 * 0.5**4 = 0.125)."""
    few = history.filter(pl.col("item").is_in(["0", "1", "2", "3"]) & (pl.col("run") < 2))
    few = few.with_columns(
        pl.when(pl.col("run") == 1).then(1 - pl.col("score")).otherwise(pl.col("score"))
    )
    with pytest.warns(DesignWarning, match="cannot be significant by construction"):
        compare_models(few, column="run", over="recorded-prompts")  # the McNemar test
