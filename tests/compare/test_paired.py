"""Paired model differences: references (scipy, statsmodels) and calibration under the null."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from numpy.testing import assert_allclose
from scipy import stats

from evalstats.compare import compare_models, paired_difference
from evalstats.errors import DesignWarning, InsufficientDataError, ParameterError
from evalstats.simulate import observations


def test_interval_matches_scipy_ttest_rel(rng):
    a = rng.normal(0.6, 0.1, 40)
    b = a + rng.normal(-0.02, 0.05, 40)
    res = paired_difference(a, b, method="t", confidence_level=0.9)
    ref = stats.ttest_rel(a, b).confidence_interval(0.9)
    assert_allclose(
        [res.confidence_interval.low, res.confidence_interval.high], [ref.low, ref.high], rtol=1e-12
    )
    assert_allclose(res.correlation, stats.pearsonr(a, b).statistic, rtol=1e-12)


def test_exact_sign_flip_pvalue_matches_enumeration():
    d = np.array([0.5, 1.0, -0.2, 0.3, 0.9, 0.1])
    res = paired_difference(d, np.zeros_like(d), method="permutation")
    signs = np.array(np.meshgrid(*[[-1, 1]] * 6)).reshape(6, -1).T
    null = (signs * d).mean(axis=1)
    expected = np.mean(np.abs(null) >= abs(d.mean()) - 1e-12)
    assert_allclose(res.pvalue, expected, rtol=1e-12)
    assert res.null_distribution.size == 64


def test_mcnemar_matches_statsmodels_exact(rng):
    from statsmodels.stats.contingency_tables import mcnemar

    a = (rng.random(80) < 0.7).astype(float)
    b = (rng.random(80) < 0.6).astype(float)
    res = paired_difference(a, b)
    table = [
        [np.sum((a == 1) & (b == 1)), np.sum((a == 1) & (b == 0))],
        [np.sum((a == 0) & (b == 1)), np.sum((a == 0) & (b == 0))],
    ]
    ref = mcnemar(table, exact=True)
    assert res.method == "mcnemar"
    assert_allclose(res.pvalue, ref.pvalue, rtol=1e-12)
    assert res.statistic == ref.statistic


def test_mdd_matches_statsmodels_ttestpower(rng):
    from statsmodels.stats.power import TTestPower

    a = rng.normal(0.6, 0.1, 50)
    b = a + rng.normal(0, 0.05, 50)
    res = paired_difference(a, b, n_resamples=99)
    es = TTestPower().solve_power(nobs=50, alpha=0.05, power=0.8)
    # statsmodels' root finder stops near 1e-8 relative; ours solves to 1e-14
    assert_allclose(res.mdd, es * np.std(a - b, ddof=1), rtol=1e-7)
    # at the mdd a paired t test has 80% power by statsmodels' own power function
    power = TTestPower().power(res.mdd / np.std(a - b, ddof=1), nobs=50, alpha=0.05)
    assert_allclose(power, 0.8, atol=1e-12)


def test_compare_models_holm_matches_multipletests():
    from statsmodels.stats.multitest import multipletests

    obs = observations(n_models=4, n_items=40, n_variants=3, seed=4)
    for correction, sm in (("holm", "holm"), ("bh", "fdr_bh")):
        # conditional on the 3 recorded prompts: the paired t test on item means
        out = compare_models(obs, correction=correction, n_resamples=999, over="recorded-prompts")
        assert_allclose(out["pvalue_corrected"], multipletests(out["pvalue"], method=sm)[1])
    assert out.height == 6 and (out["method"] == "t").all()  # 40 items: auto is t


def test_compare_models_single_run_binary_items_use_mcnemar():
    obs = observations(n_models=2, n_items=60, n_variants=1, seed=0)
    row = compare_models(obs).row(0, named=True)
    assert row["method"] == "mcnemar"
    assert row["n_a_only"] + row["n_b_only"] > 0
    a = obs.filter(pl.col("model") == "m0").sort(pl.col("item").cast(int))["score"]
    b = obs.filter(pl.col("model") == "m1").sort(pl.col("item").cast(int))["score"]
    assert_allclose(row["difference"], (a - b).mean(), rtol=1e-12)


def test_compare_models_finds_planted_gap_and_renaming_invariance():
    obs = observations(n_models=2, n_items=150, n_variants=4, model_accuracy=(0.6, 0.7), seed=9)
    kw = {"n_resamples": 1999, "over": "recorded-prompts"}  # the gap on the 4 recorded prompts
    out = compare_models(obs, **kw).row(0, named=True)
    assert out["ci_high"] < 0 and out["pvalue"] < 0.01
    # over the prompt space the model x prompt interaction widens it: 4 prompts say less
    space = compare_models(obs, n_resamples=1999).row(0, named=True)
    assert space["method"] == "generalized-design" and space["se"] > out["se"]
    assert_allclose(space["difference"], out["difference"], rtol=1e-12)
    renamed = obs.with_columns(pl.col("model").replace({"m0": "z", "m1": "a"}))
    swapped = compare_models(renamed, **kw).row(0, named=True)
    assert (swapped["model_a"], swapped["model_b"]) == ("a", "z")
    assert_allclose(swapped["difference"], -out["difference"], rtol=1e-12)
    assert_allclose(swapped["pvalue"], out["pvalue"], atol=2e-3)


def test_comparing_a_prompt_factor_keeps_the_other_prompt_factors_random():
    """Comparing the levels of one prompt factor (two templates) pairs them on items x the
    other prompt factor (phrasings): that factor stays a random prompt facet (t-design, a
    finite interval); comparing the variant column itself leaves no prompt facet, the paired
    t of scipy on item means. Both were NaN when the compared column was part of the prompt."""
    from scipy import stats

    rng = np.random.default_rng(0)
    rows = [
        {"model": "m", "dataset": "d", "item": str(i), "template": t, "phrasing": ph,
         "run": 0, "score": float(rng.random() < 0.5 + 0.1 * (t == "t2") + 0.1 * (ph == "p3"))}
        for t in ("t1", "t2") for ph in ("p1", "p2", "p3") for i in range(40)
    ]  # fmt: skip
    obs = pl.DataFrame(rows)
    space = compare_models(obs, column="template", method="t").row(0, named=True)
    fixed = compare_models(obs, column="template", method="t", over="recorded-prompts").row(
        0, named=True
    )
    assert space["method"] == "generalized-design" and np.isfinite(space["se"])
    assert space["se"] > fixed["se"] and fixed["method"] == "t"
    wide = (
        obs.group_by("item", "template")
        .agg(pl.col("score").mean())
        .pivot(on="template", index="item", values="score", sort_columns=True)
    )
    ref = stats.ttest_rel(wide["t1"], wide["t2"])
    assert_allclose(fixed["pvalue"], ref.pvalue, rtol=1e-10)
    variants = obs.with_columns(
        pl.concat_str("template", "phrasing", separator="|").alias("variant")
    ).drop("template", "phrasing")
    pair = compare_models(
        variants.filter(pl.col("variant").is_in(["t1|p1", "t2|p1"])), column="variant"
    ).row(0, named=True)
    assert np.isfinite(pair["pvalue"]) and not pair["method"].endswith("-design")


def test_difference_interval_never_leaves_the_metric_range():
    """Two prompt variants give the prompt-space interval about one degree of freedom: its
    t interval ran to [-62, 63] for a 0/1 metric (HELM suite, 8 items). It is clipped to
    [-1, 1] (the difference of two means on [0, 1]), which keeps its coverage. (Asked for:
    with 2 variants the default compares over the recorded prompts since issue 46.)"""
    rng = np.random.default_rng(3)
    rows = []
    for i in range(8):  # prompt p0: a right, b wrong on every item; p1: the same answers
        same = float(rng.random() < 0.5)
        rows += [("a", "p0", i, 1.0), ("b", "p0", i, 0.0), ("a", "p1", i, same)]
        rows += [("b", "p1", i, same)]
    obs = pl.DataFrame(rows, schema=["model", "variant", "item", "score"], orient="row")
    obs = obs.with_columns(dataset=pl.lit("d"), run=pl.lit(0), item=pl.col("item").cast(str))
    row = compare_models(obs, method="t", over="prompt-space").row(0, named=True)
    assert row["method"] == "generalized-design" and row["difference"] == 0.5
    assert row["se"] * 12.7 > 1.5  # t(0.975) on about 1 df: unclipped it reaches past +-1
    assert (row["ci_low"], row["ci_high"]) == (-1.0, 1.0)
    scaled = obs.with_columns(
        pl.col("score") * 100, metric_low=pl.lit(0.0), metric_high=pl.lit(100.0)
    )
    wide = compare_models(scaled, method="t", over="prompt-space").row(0, named=True)
    assert (wide["ci_low"], wide["ci_high"]) == (-100.0, 100.0)


def test_errors():
    with pytest.raises(InsufficientDataError, match="at least 2 models"):
        compare_models(observations(n_models=1, n_items=5, n_variants=1, seed=0))
    with pytest.raises(ParameterError, match="`correction` must be one of"):
        compare_models(observations(n_models=2, n_items=5, n_variants=1, seed=0), correction="bonf")
    with pytest.raises(ParameterError, match="0/1 scores"):
        paired_difference(np.array([0.5, 0.2]), np.array([0.1, 0.3]), method="mcnemar")


def _null_rejection(method: str, reps: int, seed: int, n: int = 60) -> float:
    rng = np.random.default_rng(seed)
    rejected = 0
    for r in range(reps):
        if method == "mcnemar":
            p = rng.uniform(0.2, 0.9, n)  # item difficulty shared by both models: no difference
            a = (rng.random(n) < p).astype(float)
            b = (rng.random(n) < p).astype(float)
        else:
            base = rng.normal(0.6, 0.1, n)
            a = base + rng.normal(0, 0.05, n)
            b = base + rng.normal(0, 0.05, n)
        res = paired_difference(a, b, method=method, n_resamples=999, seed=r)
        rejected += res.pvalue <= 0.05
    return rejected / reps


@pytest.mark.parametrize("method", ["permutation", "mcnemar"])
def test_null_rejection_short(method):
    rate = _null_rejection(method, 200, seed=3)
    assert rate <= 0.05 + 3.5 * np.sqrt(0.05 * 0.95 / 200)
    assert rate >= 0.01


@pytest.mark.slow
@pytest.mark.parametrize("method", ["permutation", "mcnemar"])
def test_null_rejection_full(method):
    """2,000 null replicates: the sign-flip test rejects at ~alpha; exact McNemar at most alpha."""
    rate = _null_rejection(method, 2000, seed=2024)
    if method == "permutation":
        assert 0.04 <= rate <= 0.06, rate
    else:
        assert 0.025 <= rate <= 0.055, rate


# --- McNemar's interval when every disagreement points one way (issue 30) ----------------------


def _binary_pair(n10: int, n01: int, n: int) -> pl.DataFrame:
    a = np.zeros(n)
    b = np.zeros(n)
    a[:n10] = 1
    b[n10 : n10 + n01] = 1
    a[n10 + n01 : n10 + n01 + n // 4] = b[n10 + n01 : n10 + n01 + n // 4] = 1
    return pl.DataFrame(
        {
            "model": ["A"] * n + ["B"] * n,
            "dataset": "he",
            "metric": "pass",
            "item": [str(i) for i in range(n)] * 2,
            "score": np.concatenate([a, b]),
        }
    )


def test_mcnemar_interval_is_not_degenerate_when_disagreements_point_one_way():
    """Was [31.6, 42.7] for 42.7 points: the conditional bound collapsed onto the estimate."""
    out = compare_models(_binary_pair(70, 0, 164))
    r = out.row(0, named=True)
    assert r["method"] == "mcnemar"
    assert r["ci_low"] < r["difference"] < r["ci_high"]
    # the far bound is Tango's score bound: the score statistic equals the normal quantile there
    from evalstats.compare._pairtests import tango_bounds

    lo, hi = tango_bounds(70, 0, 164, 0.05)
    assert r["ci_high"] == pytest.approx(hi)
    d0 = hi  # Tango (1998): Z(d0) with the restricted MLE of p01 (here b = n01 = 0)
    p = (70 * (1 + d0) - 2 * 164 * d0 + abs(70 * (1 + d0) - 2 * 164 * d0)) / (4 * 164)
    z = (70 / 164 - d0) / np.sqrt((2 * p + d0 - d0 * d0) / 164)
    assert z == pytest.approx(-stats.norm.isf(0.025), abs=1e-8)


@pytest.mark.parametrize("n", [20, 60, 200])
def test_mcnemar_interval_excludes_zero_exactly_when_the_exact_test_rejects(n):
    for n10 in range(0, 12):
        for n01 in range(0, 12 - n10):
            if n10 + n01 == 0 or n10 + n01 > n:
                continue
            r = compare_models(_binary_pair(n10, n01, n), correction="none").row(0, named=True)
            excludes = r["ci_low"] > 0 or r["ci_high"] < 0
            assert excludes == (r["pvalue"] < 0.05), (n10, n01, n, r)
            assert r["ci_low"] <= r["difference"] <= r["ci_high"]


def _mcnemar_coverage(reps: int, seed: int) -> dict[tuple, float]:
    from evalstats.compare._pairtests import McNemar

    rng = np.random.default_rng(seed)
    out = {}
    for n, p10, p01 in [(164, 0.05, 0.0), (164, 0.10, 0.01), (50, 0.06, 0.02), (30, 0.1, 0.0)]:
        hits = 0
        for _ in range(reps):
            u = rng.random(n)
            a = ((u < p10) | (u > 0.6)).astype(float)
            b = (((u >= p10) & (u < p10 + p01)) | (u > 0.6)).astype(float)
            m = McNemar(a[:, None], b[:, None], np.ones((n, 1), bool), "two-sided", False)
            lo, hi = m.interval(np.array([0.05]), None)
            if m.k[0] == 0:
                lo, hi = np.array([0.0]), np.array([0.0])
            hits += lo[0] <= p10 - p01 <= hi[0]
        out[(n, p10, p01)] = hits / reps
    return out


def test_mcnemar_interval_coverage_with_few_discordant_pairs():
    """The conditional interval alone covered 0.42-0.84 here (4,000 replicates each)."""
    for case, cov in _mcnemar_coverage(reps=300, seed=1).items():
        assert cov >= 0.91, (case, cov)


@pytest.mark.slow
def test_mcnemar_interval_coverage_with_few_discordant_pairs_long():
    for case, cov in _mcnemar_coverage(reps=4000, seed=2).items():
        assert 0.935 <= cov <= 0.985, (case, cov)


def _own_prompts(prompts: dict[str, tuple[str, ...]], n_items: int = 5, seed: int = 0):
    """Issue 41's table: each model on its own prompt ids, items shared, 3 runs."""
    rng = np.random.default_rng(seed)
    rows = [
        (m, i, p, r, float(rng.random() < (0.7 if m == "a" else 0.4)))
        for m, ps in prompts.items()
        for p in ps
        for i in range(n_items)
        for r in range(3)
    ]
    return pl.DataFrame(
        rows, schema=["model", "item", "variant", "run", "score"], orient="row"
    ).with_columns(dataset=pl.lit("d"), metric=pl.lit("acc"), item=pl.col("item").cast(str))


def test_models_without_a_shared_prompt_are_compared_over_their_recorded_prompts():
    """Issue 41: a NaN difference without a warning; now the recorded prompts' test, named.

    (2 prompt variants in the group: the prompt space is asked for, as the default compares
    over the recorded prompts with 2 since issue 46, which gives this same answer.)
    """
    obs = _own_prompts({"a": ("p1",), "b": ("p2",)})
    with pytest.warns(DesignWarning, match=r"share no prompt variant .*a vs b in dataset='d'"):
        out = compare_models(obs, over="prompt-space")
    ref = compare_models(obs, over="recorded-prompts")
    row, want = out.row(0, named=True), ref.row(0, named=True)
    assert row["method"] == want["method"] + "-recorded" == "permutation-recorded"
    for col in ("n", "mean_a", "mean_b", "difference", "se", "ci_low", "ci_high", "pvalue"):
        assert row[col] == want[col], col
    # the difference of the item means over each model's own 3 runs, by hand
    means = obs.group_by("model", "item").agg(pl.col("score").mean()).sort("item")
    d = means.filter(model="a")["score"].to_numpy() - means.filter(model="b")["score"].to_numpy()
    assert_allclose(row["difference"], d.mean(), rtol=1e-12)
    assert np.isfinite([row["difference"], row["se"], row["pvalue"]]).all()


def test_a_pair_is_compared_on_its_shared_prompts_as_on_the_filtered_table():
    """Partly shared prompts: every number equals the comparison of the shared ones alone."""
    obs = _own_prompts({"a": ("p1", "p2", "p3"), "b": ("p1", "p2", "p4")}, n_items=12, seed=1)
    shared = obs.filter(pl.col("variant").is_in(["p1", "p2"]))
    # the group has 4 prompt variants (the prompt space); the filtered table 2: asked for
    out, ref = compare_models(obs), compare_models(shared, over="prompt-space")
    cols = ["n", "mean_a", "mean_b", "difference", "se", "ci_low", "ci_high", "pvalue", "method"]
    assert out.select(cols).rows() == ref.select(cols).rows()
    assert out["method"].to_list() == ["generalized-design"]
    assert_allclose(out["mean_a"] - out["mean_b"], out["difference"], rtol=1e-12)
    # a resampling correction bootstraps the item means over all prompts: its means are those
    boot = compare_models(obs, correction="maxt", n_resamples=999).row(0, named=True)
    assert boot["method"] == "bootstrap"
    assert_allclose(boot["mean_a"] - boot["mean_b"], boot["difference"], rtol=1e-12)


def test_three_models_two_share_prompts_one_does_not():
    """a and b share p1 (prompt-space test); c shares none: its pairs say '-recorded'."""
    obs = _own_prompts({"a": ("p1", "p3"), "b": ("p1", "p4"), "c": ("p2",)}, n_items=8)
    with pytest.warns(DesignWarning, match=r"2 pair\(s\) share no prompt variant"):
        out = compare_models(obs)
    assert out.select("model_a", "model_b", "method").rows() == [
        ("a", "b", "t-design"),
        ("a", "c", "permutation-recorded"),
        ("b", "c", "permutation-recorded"),
    ]
    assert out["difference"].is_finite().all() and out["pvalue"].is_finite().all()


def test_compare_cli_without_a_shared_prompt_exits_0(tmp_path):
    from tests._cli import cli, ok

    path = tmp_path / "own_prompts.csv"
    _own_prompts({"a": ("p1",), "b": ("p2",)}).write_csv(path)
    code, out, err = cli("compare", str(path), "--over", "prompt-space")
    ok(code, err)
    row = pl.read_csv(out.encode()).row(0, named=True)
    assert row["method"] == "permutation-recorded" and math.isfinite(row["difference"])
    assert "share no prompt variant" in err
    code, out, err = cli("compare", str(path))  # 2 prompt variants: the recorded prompts
    ok(code, err)
    row = pl.read_csv(out.encode()).row(0, named=True)
    assert row["method"] == "permutation" and "2 variants cannot estimate" in err


def _one_model_on_d0(**kw) -> pl.DataFrame:
    """Issue 41: three datasets, d0 with model m0 alone, d1 and d2 with m0, m1 and m2."""
    obs = observations(n_models=3, n_items=40, n_datasets=3, n_variants=1, seed=0, **kw)
    return obs.filter((pl.col("dataset") != "d0") | (pl.col("model") == "m0"))


def test_a_dataset_with_one_model_leaves_the_others_compared():
    """Issue 41: it raised for the whole table; now the others are compared as on their own."""
    obs = _one_model_on_d0()
    with pytest.warns(DesignWarning, match=r"at least 2 models in dataset='d0'.*got \['m0'\]"):
        out = compare_models(obs)
    assert out.equals(compare_models(obs.filter(pl.col("dataset") != "d0")))
    assert out["dataset"].unique().sort().to_list() == ["d1", "d2"] and out.height == 6
    # a setting value with one model (by a setting column) is left out in the same way
    by_setting = obs.with_columns(
        server=pl.when((pl.col("dataset") == "d1") & (pl.col("model") == "m2"))
        .then(pl.lit("s2"))
        .otherwise(pl.lit("s1"))
    )
    with pytest.warns(DesignWarning, match=r"dataset='d1'.*server='s2'.*got \['m2'\]"):
        out = compare_models(by_setting, by=("dataset", "metric", "server"), family="group")
    assert out.select("dataset", "server").unique().sort("dataset").rows() == [
        ("d1", "s1"),
        ("d2", "s1"),
    ]


def test_a_pair_sharing_one_item_is_left_out_and_the_others_compared():
    """m2 answered one item of d1: its two pairs there are left out, named; the rest stay."""
    obs = _one_model_on_d0().filter(
        (pl.col("dataset") != "d1") | (pl.col("model") != "m2") | (pl.col("item") == "0")
    )
    with pytest.warns(DesignWarning, match=r"'m0' and 'm2' share 1 unit\(s\) in dataset='d1'"):
        out = compare_models(obs, family="group")
    assert out.select("dataset", "model_a", "model_b").rows() == [
        ("d1", "m0", "m1"),
        ("d2", "m0", "m1"),
        ("d2", "m0", "m2"),
        ("d2", "m1", "m2"),
    ]
    alone = obs.filter(pl.col("model") != "m2", pl.col("dataset") == "d1")
    assert out.filter(dataset="d1").equals(compare_models(alone))


def test_compare_cli_on_a_dump_with_a_single_model_dataset(tmp_path):
    from tests._cli import cli, ok

    path = tmp_path / "one_model_d0.csv"
    _one_model_on_d0().write_csv(path)
    code, out, err = cli("compare", str(path))
    ok(code, err)
    assert pl.read_csv(out.encode())["dataset"].unique().sort().to_list() == ["d1", "d2"]
    assert "at least 2 models in dataset='d0'" in err


def test_two_models_right_on_every_item_get_an_interval_around_zero():
    """Issue 41: both models at 1.0 gave a NaN interval (no discordant pair). Tango's score
    interval with no discordant pair is ±z²/(n + z²) (it solves d²n = z²(d − d²))."""
    n = 20
    obs = pl.DataFrame(
        {"model": ["a"] * n + ["b"] * n, "dataset": "d", "item": [f"i{i}" for i in range(n)] * 2,
         "score": 1.0}
    )  # fmt: skip
    row = compare_models(obs).row(0, named=True)
    z2 = stats.norm.isf(0.025) ** 2
    assert row["difference"] == 0.0 and row["pvalue"] == 1.0
    np.testing.assert_allclose([row["ci_low"], row["ci_high"]], [-z2 / (n + z2), z2 / (n + z2)])
