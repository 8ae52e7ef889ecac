"""Corrections and the intervals that agree with them (issue 20), references and simulations."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from numpy.testing import assert_allclose
from scipy import stats

from evalstats.compare import compare_models, paired_difference
from evalstats.compare._multiplicity import CORRECTIONS
from evalstats.compare._pairtests import Bootstrap, resampling_family
from evalstats.errors import DesignWarning, ParameterError
from evalstats.simulate import observations

ALPHA = 0.05


def _obs(n_models=5, n_items=40, seed=0, gap=0.04, binary=False):
    """Real-shaped item table: shared item difficulty, models a few points apart."""
    rng = np.random.default_rng(seed)
    runs = 1 if binary else 4
    diff = rng.uniform(0.2, 0.9, n_items)
    rows = []
    for m in range(n_models):
        p = np.clip(diff + gap * m, 0, 1)
        for r in range(runs):
            y = (rng.random(n_items) < p).astype(float)
            rows += [(f"m{m}", "d0", str(i), "v0", r, y[i]) for i in range(n_items)]
    return pl.DataFrame(
        rows, schema=["model", "dataset", "item", "variant", "run", "score"], orient="row"
    )


def _excludes_zero(out: pl.DataFrame) -> np.ndarray:
    return ((out["ci_low"] > 0) | (out["ci_high"] < 0)).to_numpy()


@pytest.mark.parametrize("correction", list(CORRECTIONS))
@pytest.mark.parametrize("method", ["t", "permutation", "bootstrap", "mcnemar", "mcnemar-midp"])
def test_interval_excludes_zero_iff_corrected_p_below_alpha(correction, method):
    if correction in ("maxt", "romano-wolf") and method != "bootstrap":
        pytest.skip("resampling corrections are bootstrap-only (a ParameterError, tested below)")
    decisions = 0
    for seed in range(3):
        obs = _obs(seed=seed, binary=method.startswith("mcnemar"), gap=0.03 + 0.03 * seed)
        for alternative in ("two-sided", "greater") if seed < 2 else ("two-sided",):
            out = compare_models(
                obs,
                correction=correction,
                method=method,
                alternative=alternative,
                n_resamples=999,
                seed=seed,
            )
            adj = out["pvalue_corrected"].to_numpy()
            assert np.array_equal(_excludes_zero(out), adj < ALPHA), (seed, alternative)
            assert np.array_equal(out["reject"].to_numpy(), adj < ALPHA)
            decisions += int((adj < ALPHA).sum())
    assert decisions > 0  # the property was exercised on rejected pairs too


def test_corrected_pvalues_match_statsmodels():
    from statsmodels.stats.multitest import multipletests

    obs = _obs(seed=3)
    for ours, sm in [(k, v) for k, v in CORRECTIONS.items() if v is not None]:
        out = compare_models(obs, correction=ours, method="t")
        assert_allclose(out["pvalue_corrected"], multipletests(out["pvalue"], method=sm)[1])


def test_our_corrections_equal_multipletests_on_random_families_with_ties():
    """The formulas are written out in numpy (multipletests calls gc.collect() per call)."""
    from statsmodels.stats.multitest import multipletests

    from evalstats.compare._multiplicity import adjust

    rng = np.random.default_rng(0)
    for _ in range(200):
        m = int(rng.integers(1, 40))
        p = np.round(rng.random(m) ** 3, int(rng.integers(2, 6)))  # rounding makes ties
        for ours, sm in [(k, v) for k, v in CORRECTIONS.items() if v is not None]:
            with np.errstate(divide="ignore"):
                ref = multipletests(p, method=sm)[1]
            assert_allclose(adjust(p, ours), ref, rtol=0, atol=4.5e-16)


def test_single_step_intervals_are_the_adjusted_level_t_intervals():
    obs = _obs(seed=1)
    m = 10
    for correction, level in (("bonferroni", 1 - ALPHA / m), ("sidak", (1 - ALPHA) ** (1 / m))):
        out = compare_models(obs, correction=correction, method="t")
        assert out["interval"].unique().to_list() == ["simultaneous"]
        assert_allclose(out["ci_level"], level, rtol=1e-12)
        wide = (
            obs.group_by("model", "item")
            .agg(pl.col("score").mean())
            .pivot(on="model", index="item", values="score")
        )
        d = (wide["m0"] - wide["m1"]).to_numpy()
        ref = stats.ttest_1samp(d, 0).confidence_interval(level)
        row = out.filter((pl.col("model_a") == "m0") & (pl.col("model_b") == "m1"))
        assert_allclose([row["ci_low"].item(), row["ci_high"].item()], [ref.low, ref.high])


def test_permutation_interval_inverts_the_exact_sign_flip_test():
    """Exact enumeration (n=10): p(delta) by scipy is >= alpha inside, < alpha just outside."""
    rng = np.random.default_rng(5)
    d = rng.normal(0.3, 0.5, 10)
    res = paired_difference(d, np.zeros(10), method="permutation", confidence_level=0.9)
    lo, hi = res.confidence_interval.low, res.confidence_interval.high

    def p(delta):
        return stats.permutation_test(
            (d - delta,), np.mean, permutation_type="samples", n_resamples=5000
        ).pvalue

    for edge, step in ((lo, -1), (hi, 1)):
        assert p(edge - step * 1e-7) >= 0.1
        assert p(edge + step * 1e-7) < 0.1
    assert_allclose(res.pvalue, p(0.0), rtol=1e-12)


def test_mcnemar_interval_is_clopper_pearson_mapped_to_the_difference():
    a = np.r_[np.ones(30), np.zeros(50), np.ones(12), np.zeros(8)]
    b = np.r_[np.ones(30), np.zeros(50), np.zeros(12), np.ones(8)]
    res = paired_difference(a, b, method="mcnemar", confidence_level=0.95)
    ci = stats.binomtest(12, 20).proportion_ci(0.95, method="exact")
    # the bound on the side of 0 is Clopper-Pearson's (it decides the exact test); the far one
    # the farther of it and Tango's unconditional score bound (issue 30)
    from evalstats.compare._pairtests import tango_bounds

    far = max(0.2 * (2 * ci.high - 1), tango_bounds(12, 8, 100, 0.05)[1])
    assert_allclose(
        [res.confidence_interval.low, res.confidence_interval.high],
        [0.2 * (2 * ci.low - 1), far],
        rtol=1e-9,
    )
    assert far > 0.2 * (2 * ci.high - 1)  # here Tango's bound is the farther


def _romano_wolf_reference(null: np.ndarray, obs: np.ndarray) -> np.ndarray:
    """Romano & Wolf (2016), Algorithm 4.1, written as a plain loop."""
    b, m = null.shape
    order = np.argsort(-obs)
    raw = np.empty(m)
    for r in range(m):
        mx = null[:, order[r:]].max(axis=1)
        raw[r] = (1 + np.sum(mx >= obs[order[r]])) / (b + 1)
    adj = np.maximum.accumulate(raw)
    out = np.empty(m)
    out[order] = adj
    return out


def test_romano_wolf_matches_direct_stepdown():
    rng = np.random.default_rng(0)
    base = rng.normal(size=(80, 1))
    d = base + rng.normal(size=(80, 6)) * 0.8 + np.array([0.0, 0.1, 0.2, 0.3, 0.35, 0.5])
    test = Bootstrap(d, np.ones_like(d, dtype=bool), "two-sided", 999, 1)
    p_adj, _ = resampling_family([test], ALPHA, "romano-wolf")
    assert_allclose(p_adj, _romano_wolf_reference(test.null, test.obs), rtol=1e-14)
    p_max, _ = resampling_family([test], ALPHA, "maxt")
    assert np.all(p_adj <= p_max + 1e-15)  # step-down never loses to single step


def _correlated_family(rng, n, gap):
    """Model 0 with large item-specific noise; its pairs with the other models are correlated."""
    common = rng.normal(0, 1, n)
    x0 = common + rng.normal(0, 1.0, n)
    cols = [x0] + [common + rng.normal(0, 0.3, n) - gap for _ in range(4)]
    return np.column_stack(cols)


def _fwer_and_power(reps: int, seed: int) -> tuple[float, float, float]:
    rng = np.random.default_rng(seed)
    fw = 0
    rw_rej = holm_rej = 0
    for r in range(reps):
        rows = []
        for gap, tag in ((0.0, "null"), (0.22, "alt")):
            x = _correlated_family(rng, 60, gap)
            for m in range(x.shape[1]):
                rows += [(f"m{m}", tag, str(i), float(x[i, m])) for i in range(x.shape[0])]
        frame = pl.DataFrame(rows, schema=["model", "dataset", "item", "score"], orient="row")
        frame = frame.with_columns(pl.lit("v0").alias("variant"), pl.lit(0).alias("run"))
        frame = frame.with_columns((pl.col("score") / 12 + 0.5).clip(0, 1).alias("score"))
        rw = compare_models(frame, correction="romano-wolf", n_resamples=499, seed=r)
        holm = compare_models(frame, correction="holm", method="bootstrap", n_resamples=499, seed=r)
        fw += bool(rw.filter(pl.col("dataset") == "null")["reject"].any())
        sel = (pl.col("dataset") == "alt") & (pl.col("model_a") == "m0")
        rw_rej += int(rw.filter(sel)["reject"].sum())
        holm_rej += int(holm.filter(sel)["reject"].sum())
    return fw / reps, rw_rej / (4 * reps), holm_rej / (4 * reps)


def test_romano_wolf_size_and_power_short():
    fwer, p_rw, p_holm = _fwer_and_power(60, seed=11)
    assert fwer <= ALPHA + 3 * np.sqrt(ALPHA * (1 - ALPHA) / 60)
    assert p_rw >= p_holm


def _core_fwer_and_power(reps: int, seed: int, n: int = 60, gap: float = 0.25):
    """The same design on the vectorised core (no frames): RW vs Holm on one bootstrap."""
    from itertools import combinations

    from evalstats.compare._multiplicity import adjust

    rng = np.random.default_rng(seed)
    pairs = list(combinations(range(5), 2))
    fw = rw = holm = 0
    for r in range(reps):
        for planted in (0.0, gap):
            x = _correlated_family(rng, n, planted)
            d = np.column_stack([x[:, i] - x[:, j] for i, j in pairs])
            t = Bootstrap(d, np.ones_like(d, dtype=bool), "two-sided", 499, r)
            p_rw, _ = resampling_family([t], ALPHA, "romano-wolf")
            if planted == 0:
                fw += bool((p_rw < ALPHA).any())
            else:
                first = np.array([i == 0 for i, _ in pairs])  # the 4 pairs with a true gap
                rw += int((p_rw[first] < ALPHA).sum())
                holm += int((adjust(t.pvalue, "holm")[first] < ALPHA).sum())
    return fw / reps, rw / (4 * reps), holm / (4 * reps)


@pytest.mark.slow
def test_romano_wolf_size_and_power_full():
    """2,000 replicates on the vectorised core: FWER at nominal under the null (within 2 SE);
    more rejections than Holm on the same bootstrap p-values when pairs are correlated."""
    fwer, p_rw, p_holm = _core_fwer_and_power(2000, seed=2024)
    assert abs(fwer - 0.05) <= 2 * np.sqrt(0.05 * 0.95 / 2000), fwer
    assert p_rw > p_holm + 0.02, (p_rw, p_holm)


def test_resampling_corrections_need_the_bootstrap():
    with pytest.raises(ParameterError, match="needs method='bootstrap'"):
        compare_models(_obs(), correction="romano-wolf", method="permutation")


def test_global_family_corrects_across_datasets_and_resamples_scale():
    """Issue 18 point 6: `family='global'`; on main there is no such option (TypeError)."""
    obs = pl.concat([_obs(seed=s).with_columns(pl.lit(f"d{s}").alias("dataset")) for s in range(3)])
    per = compare_models(obs, correction="bonferroni", method="t")
    glob = compare_models(obs, correction="bonferroni", method="t", family="global")
    assert per["family_size"].unique().to_list() == [10]
    assert glob["family_size"].unique().to_list() == [30]
    assert_allclose(glob["pvalue_corrected"], np.minimum(per["pvalue"] * 30, 1))
    perm = compare_models(obs, correction="holm", family="global", method="permutation")
    # the p-value floor 1/(B+1) is at most alpha/(2m): a Holm family can reject
    assert perm["n_resamples"].unique().to_list() == [max(9999, int(np.ceil(2 * 30 / ALPHA)))]
    with pytest.warns(DesignWarning, match="cannot be significant by construction"):
        tiny = compare_models(obs, correction="holm", method="permutation", n_resamples=19)
    assert tiny["at_floor"].any()
    assert not tiny["reject"].any()


def test_unpaired_items_and_missing_runs_are_counted_and_warned():
    obs = _obs(n_models=3, seed=2)
    cut = obs.filter(~((pl.col("model") == "m2") & (pl.col("item").cast(int) < 5)))
    cut = cut.filter(~((pl.col("model") == "m1") & (pl.col("item") == "7") & (pl.col("run") == 3)))
    with pytest.warns(DesignWarning) as rec:
        out = compare_models(cut, method="t", on_mismatch="keep")
    text = " ".join(str(w.message) for w in rec)
    assert "only one model" in text and "missing runs" in text
    row = out.filter((pl.col("model_a") == "m0") & (pl.col("model_b") == "m2")).row(0, named=True)
    assert (row["n"], row["n_unpaired"], row["n_incomplete"]) == (35, 5, 0)
    row = out.filter((pl.col("model_a") == "m0") & (pl.col("model_b") == "m1")).row(0, named=True)
    assert (row["n"], row["n_unpaired"], row["n_incomplete"]) == (40, 0, 1)


def test_same_seed_same_output():
    obs = observations(n_models=3, n_items=30, n_variants=2, seed=1)
    for correction in ("holm", "romano-wolf"):
        a = compare_models(obs, correction=correction, seed=4, n_resamples=499)
        b = compare_models(obs, correction=correction, seed=4, n_resamples=499)
        assert a.equals(b)
