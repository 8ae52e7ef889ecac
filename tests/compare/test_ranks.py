"""Rank intervals (joint bootstrap) and Friedman + Nemenyi critical difference."""

from __future__ import annotations

import math
import warnings

import numpy as np
import polars as pl
import pytest
from numpy.testing import assert_allclose
from scipy import stats

from evalstats.compare import friedman_nemenyi, rank_intervals
from evalstats.errors import DesignWarning, InsufficientDataError
from evalstats.simulate import observations, unit_table


def test_rank_intervals_separate_clear_gaps_and_p_best_sums_to_one():
    obs = observations(
        n_models=3, n_items=300, n_variants=2, model_accuracy=(0.5, 0.6, 0.75), seed=1
    )
    # the recorded prompts (two of them): items resampled
    kw = {"over": "recorded-prompts"}
    boot = rank_intervals(obs, n_resamples=300, method="bootstrap", **kw)
    assert boot["rank"].to_list() == [3, 2, 1]
    assert boot["rank_low"].to_list() == boot["rank_high"].to_list() == [3, 2, 1]
    assert_allclose(boot["p_best"].sum(), 1.0, rtol=1e-12)
    assert boot.filter(model="m2")["p_best"].item() > 0.95
    # the simultaneous (step-down max-t) sets: m1 - m2 has an unadjusted p of 0.035 (paired
    # t), which the last step's max over the two remaining claims does not pass; m0 is last
    out = rank_intervals(obs, n_resamples=300, method="simultaneous", **kw)
    assert out["rank_low"].to_list() == [3, 1, 1] and out["rank_high"].to_list() == [3, 2, 2]
    assert out["method"].unique().to_list() == ["simultaneous"]
    # the default follows the paired tests with Holm: the two clear pairs go first, and the
    # last step tests m1 - m2 at 0.05, which p = 0.035 passes (step-down gains over single-step)
    paired = rank_intervals(obs, n_resamples=300, **kw)
    assert paired["rank_low"].to_list() == paired["rank_high"].to_list() == [3, 2, 1]
    assert paired["method"].unique().to_list() == ["paired"]
    # over the prompt space (asked for: two prompts default to the recorded ones) two prompts
    # say little: no set is narrower
    space = rank_intervals(obs, n_resamples=300, over="prompt-space")
    assert space["n_prompts"].to_list() == [2, 2, 2]
    assert ((space["rank_high"] - space["rank_low"]) >= (out["rank_high"] - out["rank_low"])).all()


def test_rank_intervals_overlap_for_tied_models():
    obs = observations(n_models=2, n_items=100, n_variants=1, model_accuracy=(0.6, 0.6), seed=3)
    for method in ("paired", "simultaneous", "marginal", "bootstrap"):
        out = rank_intervals(obs, n_resamples=500, method=method)
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


# --- rank confidence sets (Mogstad, Romano, Shaikh and Wilhelm 2024) ------------------------


def _direct_rank_sets(x, boot_means, level, simultaneous):
    """The same sets by a plain double loop over pairs (independent of the vectorised code)."""
    n, k = x.shape
    theta = x.mean(axis=0)
    se = {}
    for j in range(k):
        for m in range(k):
            if j != m:
                se[j, m] = np.std(x[:, j] - x[:, m], ddof=1) / math.sqrt(n)

    def tmax(pairs):
        out = []
        for b in boot_means:
            out.append(
                max(
                    abs((b[j] - b[m]) - (theta[j] - theta[m])) / se[j, m] if se[j, m] > 0 else 0
                    for j, m in pairs
                )
            )
        return np.quantile(out, level)

    all_pairs = [(j, m) for j in range(k) for m in range(j + 1, k)]
    low, high = [], []
    for j in range(k):
        mine = [(j, m) for m in range(k) if m != j]
        c = tmax(all_pairs if simultaneous else mine)
        above = sum(theta[m] - theta[j] > c * se[j, m] > 0 for m in range(k) if m != j)
        below = sum(theta[j] - theta[m] > c * se[j, m] > 0 for m in range(k) if m != j)
        low.append(1 + above)
        high.append(k - below)
    return low, high


@pytest.mark.parametrize("simultaneous", [True, False])
def test_rank_sets_equal_a_direct_computation(simultaneous):
    from evalstats.compare._ranks import _pairwise_rank_sets

    rng = np.random.default_rng(3)
    n, k = 120, 5
    ability = np.array([0.0, 0.1, 0.15, 0.5, 0.52])
    x = (rng.random((n, k)) < 0.4 + ability).astype(float)
    idx = rng.integers(0, n, size=(300, n))
    boot = x[idx].mean(axis=1)
    low, high = _pairwise_rank_sets(x, boot, 0.95, simultaneous)
    want_low, want_high = _direct_rank_sets(x, boot, 0.95, simultaneous)
    assert low.tolist() == want_low and high.tolist() == want_high
    assert (low <= high).all()


def _binary_obs(rng, p_model, n_items, item_sd=1.0):
    """0/1 item scores with shared item difficulty; true ranks follow ``p_model``."""
    logit = np.log(p_model / (1 - p_model))
    diff = rng.normal(0, item_sd, n_items)
    p = 1 / (1 + np.exp(-(logit[None, :] + diff[:, None])))
    y = (rng.random(p.shape) < p).astype(float)
    k = len(p_model)
    return pl.DataFrame(
        {
            "model": np.tile([f"m{j}" for j in range(k)], n_items),
            "dataset": "d",
            "item": np.repeat([str(i) for i in range(n_items)], k),
            "variant": "v",
            "run": 0,
            "score": y.ravel(),
        }
    )


def _rank_coverage(replicates, n_resamples, method="simultaneous"):
    rng = np.random.default_rng(2026)
    p_model = np.array([0.40, 0.45, 0.47, 0.55, 0.70])  # close pairs and clear gaps
    true_rank = np.array([5, 4, 3, 2, 1])
    covered = 0
    for r in range(replicates):
        obs = _binary_obs(rng, p_model, 200)
        out = rank_intervals(obs, n_resamples=n_resamples, seed=r, method=method)
        lo, hi = out["rank_low"].to_numpy(), out["rank_high"].to_numpy()
        covered += bool(np.all((lo <= true_rank) & (true_rank <= hi)))
    return covered / replicates


@pytest.mark.parametrize("method", ["paired", "simultaneous"])
def test_rank_sets_cover_every_true_rank_short(method):
    """Joint coverage of the true ranks of 5 models (200 items), 100 seeded replicates
    (1,000 replicates: 0.996 for 'paired', the Holm sets over exact McNemar tests)."""
    cov = _rank_coverage(100, 200, method=method)
    assert cov >= 0.90  # nominal 0.95; 100 replicates: SE 0.022


@pytest.mark.slow
@pytest.mark.parametrize("method", ["paired", "simultaneous"])
def test_rank_sets_cover_every_true_rank_slow(method):
    """1,000 replicates: joint coverage at least nominal up to Monte Carlo error (SE 0.007)."""
    cov = _rank_coverage(1000, 500, method=method)
    assert cov >= 0.935


# --- rank sets agree with the paired tests (issue 30) -------------------------------------------


def _decided_by_ranks(ranks):
    """Pairs whose rank sets do not overlap: {(better, worse)}."""
    rows = ranks.rows(named=True)
    return {
        (a["model"], b["model"])
        for a in rows
        for b in rows
        if a["rank_high"] < b["rank_low"] and a["dataset"] == b["dataset"]
    }


def _decided_by_pairs(pairs):
    out = set()
    for r in pairs.filter(pl.col("reject")).iter_rows(named=True):
        a, b = r["model_a"], r["model_b"]
        out.add((a, b) if r["difference"] > 0 else (b, a))
    return out


def _separated_by_rank_sets(ranks):
    """Pairs the rank sets put in order: the better one's whole set above the other's."""
    lows = {r["model"]: r for r in ranks.iter_rows(named=True)}
    implied = set()
    for a, ra in lows.items():
        for b, rb in lows.items():
            # a is declared above b when b's low rank counts a and a's high rank counts b;
            # with sets from pairwise decisions that is rank_high(a) < rank_low(b) or a direct claim
            if a != b and ra["rank_high"] < rb["rank_low"]:
                implied.add((a, b))
    return implied


@pytest.mark.parametrize(
    ("n_items", "n_variants"),
    [(3, 1), (12, 1), (60, 1), (1500, 1), (40, 4), (400, 5)],
)
def test_rank_sets_and_paired_decisions_agree(n_items, n_variants):
    """Every separation of the rank sets is a significant paired test in the same direction,
    and the number of models each set excludes is the number of decided pairs (small and large
    item counts, with and without prompt variants)."""
    from evalstats.compare import compare_models

    obs = observations(
        n_models=5,
        n_items=n_items,
        n_variants=n_variants,
        model_accuracy=(0.3, 0.5, 0.52, 0.7, 0.95),
        seed=n_items,
    )
    ranks = rank_intervals(obs, n_resamples=200, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pairs = compare_models(obs, correction="holm", family="group", seed=1)
    decided = _decided_by_pairs(pairs)
    assert _separated_by_rank_sets(ranks) <= decided
    for r in ranks.iter_rows(named=True):
        m = r["model"]
        assert r["rank_low"] - 1 == sum(1 for a, b in decided if b == m)
        assert 5 - r["rank_high"] == sum(1 for a, b in decided if a == m)
    if n_items == 3:  # no paired test decides from 3 items, so every set is 1..5
        assert not decided
        assert ranks["rank_low"].to_list() == [1] * 5 and ranks["rank_high"].to_list() == [5] * 5
    if n_items == 1500:  # clear gaps are decided at this size
        assert ("m4", "m3") in decided and ("m3", "m2") in decided


def test_bootstrap_max_t_from_three_items_claims_what_the_paired_test_does_not():
    """Why 'paired' is the default: the bootstrap distribution of 3 items is degenerate."""
    obs = observations(
        n_models=4, n_items=3, n_variants=1, model_accuracy=(0.05, 0.3, 0.6, 0.95), seed=7
    )
    paired = rank_intervals(obs, n_resamples=300)
    assert (paired["rank_low"] == 1).all() and (paired["rank_high"] == 4).all()
    maxt = rank_intervals(obs, n_resamples=300, method="simultaneous")
    assert (maxt["rank_high"] - maxt["rank_low"]).min() < 3


def test_rank_sets_reuse_a_given_pairs_table_and_refuse_one_they_cannot_follow():
    from evalstats.compare import compare_models
    from evalstats.errors import ParameterError

    obs = observations(
        n_models=4, n_datasets=2, n_items=150, n_variants=1,
        model_accuracy=(0.4, 0.5, 0.6, 0.75), seed=3,
    )  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pairs = compare_models(obs, correction="holm", family="group")
        own = rank_intervals(obs, n_resamples=200)
        reused = rank_intervals(obs, n_resamples=200, pairs=pairs)
    assert own.equals(reused)
    for bad in (
        compare_models(obs, correction="bonferroni", family="group"),
        compare_models(obs, correction="holm", family="global"),  # 2 datasets in one family
        compare_models(obs, correction="holm", family="group", confidence_level=0.9),
        pairs.drop("reject"),
    ):
        with pytest.raises(ParameterError, match="pairs"):
            rank_intervals(obs, n_resamples=50, pairs=bad)


def test_the_reports_rank_sets_follow_its_per_dataset_comparison(monkeypatch):
    import evalstats
    from evalstats.compare import _ranks

    def no_second_run(*a, **k):
        raise AssertionError("the report's ranks ran the paired tests again")

    monkeypatch.setattr(_ranks, "_paired_decisions", no_second_run)

    obs = observations(
        n_models=4, n_datasets=3, n_items=80, n_variants=1,
        model_accuracy=(0.35, 0.5, 0.55, 0.8), seed=5,
    )  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = evalstats.audit_report(
            obs,
            options={"ranks": {"n_resamples": 100}, "compare": {"n_resamples": 99}},
            skip=("nstar", "converge", "noise", "moments", "intervals", "friedman"),
        )
    ranks = rep["ranks"].tables["ranks"]
    per = rep["compare"].tables["compare_per_dataset"]
    for (d,), g in ranks.partition_by("dataset", as_dict=True).items():
        decided = _decided_by_pairs(per.filter(pl.col("dataset") == d))
        for r in g.iter_rows(named=True):
            assert r["rank_low"] - 1 == sum(1 for a, b in decided if b == r["model"])
            assert 4 - r["rank_high"] == sum(1 for a, b in decided if a == r["model"])
    assert ranks["method"].unique().to_list() == ["paired"]


# --- the paired rank sets under the designs users have (clusters, prompts x runs) ---------------

_ABIL = np.array([-0.4, -0.2, -0.1, 0.2, 0.6])  # logits of 5 models; true ranks 5, 4, 3, 2, 1
_TRUE = np.array([5, 4, 3, 2, 1])


def _clustered_obs(rng, g=30, m=8):
    """30 passages of 8 items (passage sd 1.5 on the logit scale), 0/1 scores."""
    from scipy.special import expit

    c = np.repeat(rng.normal(0, 1.5, g), m)
    rows = []
    for k, a in enumerate(_ABIL):
        y = (rng.random(g * m) < expit(a + c + rng.normal(0, 0.5, g * m))).astype(float)
        rows += [(f"m{k}", "d", str(i), str(i // m), "v", 0, float(y[i])) for i in range(g * m)]
    cols = ["model", "dataset", "item", "cluster", "variant", "run", "score"]
    return pl.DataFrame(rows, schema=cols, orient="row")


def _prompt_obs(rng, n=100, p=5, r=3, missing=0.0):
    """100 items x 5 prompts x 3 runs with a model x prompt interaction (sd 0.3); ``missing``
    of the item x prompt cells dropped (unbalanced). Ranks are of the means over the prompt
    space, which keep the order of the abilities."""
    from scipy.special import expit

    item = rng.normal(0, 1, n)
    rows = []
    for k, a in enumerate(_ABIL):
        inter = rng.normal(0, 0.3, p)
        for j in range(p):
            for i in range(n):
                if missing and rng.random() < missing:
                    continue
                pr = expit(a + item[i] + inter[j])
                rows += [
                    (f"m{k}", "d", str(i), f"v{j}", t, float(rng.random() < pr)) for t in range(r)
                ]
    return pl.DataFrame(
        rows, schema=["model", "dataset", "item", "variant", "run", "score"], orient="row"
    )


def _design_rank_coverage(make, reps, method="paired"):
    rng = np.random.default_rng(11)
    covered, width = 0, 0.0
    for r in range(reps):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = rank_intervals(make(rng), n_resamples=100, seed=r, method=method).sort("model")
        lo, hi = out["rank_low"].to_numpy(), out["rank_high"].to_numpy()
        covered += bool(np.all((lo <= _TRUE) & (_TRUE <= hi)))
        width += float((hi - lo).mean())
    return covered / reps, width / reps


@pytest.mark.parametrize(
    "make",
    [_clustered_obs, _prompt_obs, lambda rng: _prompt_obs(rng, missing=0.2)],
    ids=["clustered", "prompts-x-runs", "unbalanced"],
)
def test_paired_rank_sets_cover_under_clusters_and_prompts_short(make):
    """Joint coverage of the true ranks, 40 seeded replicates (the slow test runs 300-400)."""
    cov, _ = _design_rank_coverage(make, 40)
    assert cov >= 0.9


@pytest.mark.slow
@pytest.mark.parametrize(
    ("make", "reps"),
    [(_clustered_obs, 400), (_prompt_obs, 300), (lambda rng: _prompt_obs(rng, missing=0.2), 200)],
    ids=["clustered", "prompts-x-runs", "unbalanced"],
)
def test_paired_rank_sets_cover_under_clusters_and_prompts_slow(make, reps):
    """Measured: 1.000 in all three designs (mean set width 2.78, 3.36, 3.40 ranks of 5; the
    bootstrap max-t: 2.54 and 2.51 for the first two, also covering); at least nominal."""
    cov, _ = _design_rank_coverage(make, reps)
    assert cov >= 0.94


def _own_prompts(prompts: dict[str, tuple[str, ...]], n_items: int = 5, seed: int = 0):
    """Issue 41's table: each model on its own prompt ids, items shared, 3 runs."""
    rng = np.random.default_rng(seed)
    rows = [
        (m, i, p, r, float(rng.random() < (0.8 if m == "a" else 0.3)))
        for m, ps in prompts.items()
        for p in ps
        for i in range(n_items)
        for r in range(3)
    ]
    return pl.DataFrame(
        rows, schema=["model", "item", "variant", "run", "score"], orient="row"
    ).with_columns(dataset=pl.lit("d"), metric=pl.lit("acc"), item=pl.col("item").cast(str))


@pytest.mark.parametrize(
    "prompts", [{"a": ("p1",), "b": ("p2",)}, {"a": ("p1",), "b": ("p2",), "c": ("p1",)}]
)
def test_rank_intervals_without_a_shared_prompt_rank_over_the_recorded_prompts(prompts):
    """Issue 41: 'zero-size array to reduction operation maximum' in _two_way.

    Two prompts in the group: the prompt space is asked for (the default ranks over the
    recorded prompts with 2 since issue 46, which is the same answer here).
    """
    obs = _own_prompts(prompts, n_items=20)
    for method in ("paired", "simultaneous", "bootstrap"):
        with pytest.warns(DesignWarning, match=r"share no prompt variant .*dataset='d'"):
            out = rank_intervals(obs, n_resamples=200, method=method, over="prompt-space")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DesignWarning)
            ref = rank_intervals(obs, n_resamples=200, method=method, over="recorded-prompts")
        assert out.equals(ref)
        assert out["n_prompts"].is_null().all() and out["n_items"].to_list() == [20] * len(prompts)
    assert out.filter(model="a")["rank"].item() == 1


def test_rank_intervals_rank_on_the_prompts_every_model_shares():
    """Partly shared prompts: the same ranks as on the table of the shared prompts alone."""
    obs = _own_prompts({"a": ("p1", "p2", "p3"), "b": ("p1", "p2", "p4")}, n_items=12)
    shared = obs.filter(pl.col("variant").is_in(["p1", "p2"]))
    kw = {"n_resamples": 200, "method": "simultaneous", "over": "prompt-space"}
    out = rank_intervals(obs, **kw)
    assert out.equals(rank_intervals(shared, **kw))
    assert out["n_prompts"].to_list() == [2, 2]
    # by default the group decides (4 prompt variants: the prompt space, as compare_models)
    auto = rank_intervals(obs, n_resamples=200, method="simultaneous")
    assert auto.equals(out)


def test_a_dataset_with_one_model_leaves_the_others_ranked():
    """Issue 41: one single-model dataset raised for the whole table; now it is named, skipped."""
    obs = observations(n_models=3, n_items=40, n_datasets=3, n_variants=1, seed=0)
    obs = obs.filter((pl.col("dataset") != "d0") | (pl.col("model") == "m0"))
    with pytest.warns(DesignWarning, match=r"dataset='d0'.*got 1 model\(s\) \(m0\)"):
        out = rank_intervals(obs, n_resamples=200)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the other datasets alone: nothing to warn about
        ref = rank_intervals(obs.filter(pl.col("dataset") != "d0"), n_resamples=200)
    assert out.equals(ref) and out["dataset"].unique().sort().to_list() == ["d1", "d2"]
    with pytest.raises(InsufficientDataError, match=r"^rank intervals need at least 2 models"):
        rank_intervals(obs.filter(dataset="d0"))


def test_p_best_on_a_sparse_grid_leaves_out_resamples_without_means():
    """Issue 41: a two-way resample can draw prompts no drawn item was run under; it has no
    means. P(best) was NaN for every model ('best in nan% of resamples')."""
    rows = [
        ("m0", "i0", "p0", 1.0), ("m0", "i1", "p0", 0.0), ("m0", "i2", "p0", 0.0),
        ("m0", "i0", "p1", 1.0), ("m0", "i2", "p1", 0.0), ("m1", "i0", "p0", 1.0),
        ("m1", "i1", "p0", 1.0), ("m1", "i2", "p0", 0.0), ("m1", "i2", "p1", 0.0),
    ]  # fmt: skip
    obs = pl.DataFrame(rows, schema=["model", "item", "prompt_id", "score"], orient="row")
    obs = obs.with_columns(dataset=pl.lit("d0"), run=pl.lit(0))
    out = rank_intervals(obs)
    assert out["p_best"].is_finite().all()
    assert out["p_best"].sum() == pytest.approx(1.0)


def test_rank_sets_with_clusters_key_items_by_dataset_and_item():
    """Issue 46: item ids repeated across datasets broke the cluster join (a ValueError).

    3 models x 2 datasets x 40 items in clusters of 8, the same item ids in both datasets:
    each dataset has its own 5 clusters, and its ranks equal those of the dataset alone.
    """
    rng = np.random.default_rng(2)
    rows = []
    for ds in ("d1", "d2"):
        for k, mu in enumerate((0.2, 0.5, 0.8)):
            y = (rng.random(40) < mu).astype(float)
            rows += [(f"m{k}", ds, str(i), f"c{i // 8}", "v", 0, y[i]) for i in range(40)]
    cols = ["model", "dataset", "item", "cluster", "variant", "run", "score"]
    obs = pl.DataFrame(rows, schema=cols, orient="row")
    for method in ("paired", "simultaneous", "bootstrap"):
        out = rank_intervals(obs, n_resamples=200, method=method)
        assert out.height == 6 and out["n_clusters"].to_list() == [5] * 6
        alone = rank_intervals(obs.filter(pl.col("dataset") == "d2"), n_resamples=200,
                               method=method)  # fmt: skip
        if method != "bootstrap":  # the resamples of d2 differ (d1 drew first)
            both = out.filter(pl.col("dataset") == "d2").select("model", "rank_low", "rank_high")
            assert both.equals(alone.select("model", "rank_low", "rank_high"))
