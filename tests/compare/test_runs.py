"""A/B of two runs (issue 29, part 4): pairing, the tests against references, and the size of
the non-inferiority and equivalence tests at the margin, by simulation."""

from __future__ import annotations

import warnings

import numpy as np
import polars as pl
import pytest
from numpy.testing import assert_allclose
from scipy import stats

from evalstats.compare import (
    compare_runs,
    equivalence_tests,
    mean_interval,
    paired_binary_tests,
    paired_difference,
)
from evalstats.errors import (
    DesignWarning,
    InsufficientDataError,
    ParameterError,
    SchemaError,
)
from evalstats.simulate import observations

ALPHA = 0.05


def run(seed: int, accuracy: float = 0.7, n_items: int = 200, n_variants: int = 1):
    return observations(
        n_models=1, n_items=n_items, n_variants=n_variants, model_accuracy=[accuracy], seed=seed
    )


def test_the_same_model_in_two_runs_is_paired_on_items():
    a, b = run(0), run(0, accuracy=0.8)  # the same items, 10 points better
    out = compare_runs(a, b, labels=("baseline", "new"))
    row = out.row(0, named=True)
    assert (row["model_a"], row["model_b"], row["n"], row["paired_on"]) == (
        "m0",
        "m0",
        200,
        "items+variants",  # the one prompt both runs used
    )
    xa = a.sort("item")["score"].to_numpy()
    xb = b.sort("item")["score"].to_numpy()
    ref = paired_difference(xb, xa)  # the machinery of compare_models, b - a
    assert row["method"] == ref.method == "mcnemar"
    assert_allclose(
        [row["difference"], row["pvalue"], row["ci_low"], row["ci_high"], row["mdd"]],
        [
            ref.difference,
            ref.pvalue,
            ref.confidence_interval.low,
            ref.confidence_interval.high,
            ref.mdd,
        ],
        rtol=1e-12,
    )
    assert row["verdict"].startswith("new - baseline on d0, score: +")
    assert "new is better" in row["verdict"] and "80% power" in row["verdict"]


def test_a_planted_gain_is_found_and_identical_runs_are_equivalent():
    base = run(0, n_items=400)
    gained = compare_runs(base, run(1, accuracy=0.85, n_items=400)).row(0, named=True)
    assert gained["pvalue"] < ALPHA and gained["difference"] > 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # constant (zero) differences: degenerate interval
        same = compare_runs(base, base, margin=0.01).row(0, named=True)
    assert same["difference"] == 0 and same["noninferior"] and same["equivalent"]
    assert "the two runs give each of the 400 paired items the same score" in same["verdict"]
    assert "b is non-inferior" in same["verdict"] and "equivalent within +-0.01" in same["verdict"]


def test_shared_prompt_variants_are_paired_and_other_prompts_are_averaged():
    a = run(0, n_variants=4)
    b = run(1, n_variants=4)
    both = compare_runs(a, b).row(0, named=True)
    assert both["paired_on"] == "items+variants" and both["n"] == 200
    # a new prompt on the same items: the runs share no variant, items are paired
    renamed = b.with_columns(pl.col("variant").str.replace("v", "new"))
    other = compare_runs(a, renamed).row(0, named=True)
    assert other["paired_on"] == "items"
    assert_allclose(other["mean_b"], b["score"].mean(), rtol=1e-12)
    # part of the variants shared: only those are averaged, on both sides
    half = b.filter(pl.col("variant").is_in(["v00", "v01"]))
    part = compare_runs(a, half).row(0, named=True)
    expected = a.filter(pl.col("variant").is_in(["v00", "v01"]))["score"].mean()
    assert_allclose(part["mean_a"], expected, rtol=1e-12)


def test_renamed_single_models_pair_and_several_models_pair_by_name():
    a, b = run(0), run(1).with_columns(model=pl.lit("m0-finetuned"))
    row = compare_runs(a, b).row(0, named=True)
    assert (row["model_a"], row["model_b"]) == ("m0", "m0-finetuned")
    two_a = observations(n_models=2, n_items=50, n_variants=1, seed=0)
    two_b = observations(n_models=2, n_items=50, n_variants=1, seed=1)
    assert compare_runs(two_a, two_b)["model_a"].to_list() == ["m0", "m1"]
    with pytest.raises(SchemaError, match="pairs the same model names"):
        compare_runs(two_a, two_b.with_columns(model=pl.lit("x") + pl.col("model")))


def test_item_clusters_give_the_cluster_robust_test(rng):
    n, g = 300, 30
    a = run(0, n_items=n)
    b = run(1, accuracy=0.75, n_items=n)
    cluster = (pl.col("item").cast(pl.Int64) % g).cast(pl.String).alias("cluster")
    row = compare_runs(a.with_columns(cluster), b.with_columns(cluster)).row(0, named=True)
    assert (row["method"], row["n_clusters"], row["df"]) == ("cluster", g, g - 1)
    d = (b.sort("item")["score"] - a.sort("item")["score"]).to_numpy()
    clusters = (np.arange(n) % g).astype(str)[np.argsort(np.arange(n).astype(str))]
    mean, se, low, high = mean_interval(d, method="cluster", clusters=clusters)
    assert_allclose(
        [row["difference"], row["se"], row["ci_low"], row["ci_high"]],
        [mean, se, low, high],
        rtol=1e-12,
    )
    with pytest.raises(ParameterError, match="cluster-robust t test"):
        compare_runs(a.with_columns(cluster), b.with_columns(cluster), method="mcnemar")


def test_margin_tests_match_statsmodels_tost_and_scipy(rng):
    from statsmodels.stats.weightstats import ttost_paired

    a = rng.normal(0.6, 0.1, 80)
    b = a + rng.normal(0.004, 0.03, 80)
    d = b - a
    se = d.std(ddof=1) / np.sqrt(d.size)
    p_ni, p_eq = equivalence_tests(d.mean(), se, d.size - 1, 0.01)
    assert_allclose(p_eq, ttost_paired(b, a, -0.01, 0.01)[0], rtol=1e-10)
    ni = stats.ttest_rel(b + 0.01, a, alternative="greater").pvalue
    assert_allclose(p_ni, ni, rtol=1e-10)
    # lower is better: non-inferior means not higher by the margin
    p_ni_low, _ = equivalence_tests(d.mean(), se, d.size - 1, 0.01, higher_is_better=False)
    assert_allclose(p_ni_low, stats.ttest_rel(b - 0.01, a, alternative="less").pvalue, rtol=1e-10)


def test_score_tests_of_0_1_pairs_match_the_restricted_likelihood():
    """Tango's score statistic from its closed form against the null-restricted maximum
    likelihood found numerically (scipy), on counts of discordant pairs."""
    from scipy import optimize

    n10, n01, n, m = 41, 27, 500, 0.05

    def z(d0: float) -> float:
        def nll(q: float) -> float:
            rest = 1 - 2 * q - d0
            return -(n10 * np.log(q) + n01 * np.log(q + d0) + (n - n10 - n01) * np.log(rest))

        lo = max(0.0, -d0) + 1e-12
        q = optimize.minimize_scalar(
            nll, bounds=(lo, (1 - d0) / 2 - 1e-12), method="bounded", options={"xatol": 1e-14}
        ).x
        return ((n01 - n10) / n - d0) / np.sqrt((2 * q + d0 - d0**2) / n)

    p_ni, p_eq = paired_binary_tests(n10, n01, n, m)
    assert_allclose(p_ni, stats.norm.sf(z(-m)), rtol=1e-6)
    assert_allclose(p_eq, max(stats.norm.sf(z(-m)), stats.norm.cdf(z(m))), rtol=1e-6)
    p_low, _ = paired_binary_tests(n10, n01, n, m, higher_is_better=False)
    assert_allclose(p_low, stats.norm.cdf(z(m)), rtol=1e-6)
    row = compare_runs(run(0), run(1), margin=m).row(0, named=True)
    assert row["margin_method"] == "score"


def test_a_lower_is_better_metric_reads_a_drop_as_a_gain():
    a = run(0).with_columns(higher_is_better=pl.lit(False))
    b = run(1, accuracy=0.55).with_columns(higher_is_better=pl.lit(False))
    row = compare_runs(a, b, margin=0.02).row(0, named=True)
    assert row["difference"] < 0 and not row["higher_is_better"]
    assert "b is better" in row["verdict"] and row["noninferior"]


def test_unpaired_items_are_counted_and_wrong_inputs_refused():
    a, b = run(0), run(1).filter(pl.col("item").cast(pl.Int64) < 150)
    with pytest.warns(DesignWarning, match="50 item"):
        row = compare_runs(a, b).row(0, named=True)
    assert (row["n"], row["n_unpaired"]) == (150, 50)
    with pytest.raises(ParameterError, match="`labels` must be two different names"):
        compare_runs(a, b, labels=("x", "x"))
    with pytest.raises(ParameterError, match="`margin` must be a positive number"):
        compare_runs(a, b, margin=0)
    units = a.group_by("model", "dataset").agg(pl.col("score").mean())
    with pytest.raises(SchemaError, match="'b' has no item column"):
        compare_runs(a, units)
    with pytest.raises(InsufficientDataError, match="share 1 item"):
        compare_runs(a, b.filter(item="0"))


# --- size at the margin -------------------------------------------------------------------------


def scenario(kind: str, delta: float, reps: int, seed: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``reps`` independent A/B comparisons (one dataset each) whose true difference is delta.

    The standard errors are a fraction of the margins used below, so that the equivalence test
    can reject at all (with an interval wider than the margin TOST never rejects, and its size
    at the margin says nothing):

    continuous: 40 items, scores N(0.6, 0.15), b - a ~ N(delta, 0.03) (method t);
    binary: 600 0/1 items, P(a=1, b=0) = 0.06 and P(a=0, b=1) = 0.06 + delta (McNemar for the
    difference; the margin tests on the paired standard error);
    clustered: 25 clusters of 8 items, b - a = delta + u_cluster (sd 0.02) + e (sd 0.05)
    (cluster-robust t).
    """
    rng = np.random.default_rng(seed)
    if kind == "continuous":
        n = 40
        a = rng.normal(0.6, 0.15, (reps, n))
        b = a + delta + rng.normal(0, 0.03, (reps, n))
        cluster = None
    elif kind == "binary":
        n = 600
        u = rng.random((reps, n))
        p10, p01 = 0.06, 0.06 + delta
        a = np.where(u < p10, 1.0, np.where(u < p10 + p01, 0.0, (u < 0.75).astype(float)))
        b = np.where(u < p10, 0.0, np.where(u < p10 + p01, 1.0, a))
        cluster = None
    else:
        g, per = 25, 8
        n = g * per
        a = rng.normal(0.6, 0.1, (reps, n))
        u = np.repeat(rng.normal(0, 0.02, (reps, g)), per, axis=1)
        b = a + delta + u + rng.normal(0, 0.05, (reps, n))
        cluster = np.tile(np.repeat([f"c{k:02d}" for k in range(g)], per), reps)

    def frame(x: np.ndarray) -> pl.DataFrame:
        out = pl.DataFrame(
            {
                "model": "m",
                "dataset": np.repeat([f"r{r:05d}" for r in range(reps)], n),
                "item": np.tile([f"{i:03d}" for i in range(n)], reps),
                "score": x.ravel(),
            }
        )
        return out if cluster is None else out.with_columns(pl.Series("cluster", cluster))

    return frame(a), frame(b)


def rejection_rates(kind: str, margin: float, reps: int) -> dict[str, float]:
    """Non-inferiority at delta = -margin, equivalence at delta = -margin and +margin."""
    out = {}
    seeds = {"continuous": 11, "binary": 23, "clustered": 37}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k, (name, delta, column) in enumerate(
            (
                ("noninferior", -margin, "noninferior"),
                ("equivalent_low", -margin, "equivalent"),
                ("equivalent_high", margin, "equivalent"),
            )
        ):
            a, b = scenario(kind, delta, reps, seed=seeds[kind] + k)
            res = compare_runs(a, b, margin=margin)
            out[name] = float(res[column].mean())
    return out


def bound(reps: int) -> float:
    """alpha plus 2.58 Monte Carlo standard errors (one-sided 99.5%)."""
    return ALPHA + 2.58 * np.sqrt(ALPHA * (1 - ALPHA) / reps)


@pytest.mark.parametrize(
    ("kind", "margin"), [("continuous", 0.02), ("binary", 0.05), ("clustered", 0.02)]
)
def test_margin_tests_keep_their_size_at_the_margin_short(kind, margin):
    reps = 300
    rates = rejection_rates(kind, margin, reps)
    assert all(r <= bound(reps) for r in rates.values()), rates


def test_margin_tests_size_vectorised_against_the_exact_t():
    """The t reference of equivalence_tests on many paired-normal samples: size = alpha for
    non-inferiority at the margin, <= alpha for TOST (its two tests cannot both be at alpha)."""
    rng = np.random.default_rng(7)
    reps, n, m = 40_000, 30, 0.05
    for delta, which in ((-m, 0), (-m, 1), (m, 1)):
        d = delta + rng.normal(0, 0.1, (reps, n))
        se = d.std(axis=1, ddof=1) / np.sqrt(n)
        p = equivalence_tests(d.mean(axis=1), se, n - 1, m)[which]
        rate = float(np.mean(p < ALPHA))
        assert rate <= bound(reps), (delta, which, rate)
        if which == 0:
            assert rate >= ALPHA - 2.58 * np.sqrt(ALPHA * (1 - ALPHA) / reps)  # exact


@pytest.mark.slow
@pytest.mark.parametrize(
    ("kind", "margin"), [("continuous", 0.02), ("binary", 0.05), ("clustered", 0.02)]
)
def test_margin_tests_keep_their_size_at_the_margin(kind, margin):
    reps = 10_000
    rates = rejection_rates(kind, margin, reps)
    assert all(r <= bound(reps) for r in rates.values()), rates
