"""Coverage of the design's default intervals (issue 27), by simulation with a known truth.

Scenarios (0/1 scores from a logit-normal model, the truth by Gauss-Hermite quadrature):
independent items; 50 passages x 8 items with a passage sd of 0, 0.8 and 1.5 on the logit
scale; 200 items x 5 prompts x 3 runs, the target the mean over the prompt space; the same grid
with 40 % of the cells missing and 1-3 runs per cell. For paired differences: a passage x model
effect, and a model x prompt and model x item interaction on the crossed and sparse grids.

The intervals are built with the kernels the library calls (``design_variance``,
``wilson_effective``, the t inversion of ``DesignT``); ``test_the_kernels_are_what_the_api_computes``
checks that ``intervals`` and ``compare_models`` give the same numbers on one replicate. The
short runs (400 replicates, Monte Carlo SE about 0.011) assert 0.92-0.975; the slow runs (4,000,
SE about 0.0035) assert the issue's 0.935-0.965. Measured values are in docs/methods/compare.md
(command: ``pytest -m slow tests/compare/test_design_coverage.py -s``).
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from scipy import stats
from scipy.special import expit

from evalstats.compare._design_var import design_variance, wilson_effective

_GH_X, _GH_W = np.polynomial.hermite_e.hermegauss(80)


def true_mean(mu: float, tau: float) -> float:
    """E[expit(mu + tau Z)], Z standard normal."""
    return float(np.sum(_GH_W * expit(mu + tau * _GH_X)) / math.sqrt(2 * math.pi))


def _grid(rng, sparse: bool, n_items=200, n_prompts=5, n_runs=3):
    if sparse:
        runs = rng.integers(1, n_runs + 1, (n_items, n_prompts))
        runs = runs * (rng.random((n_items, n_prompts)) > 0.4)
    else:
        runs = np.full((n_items, n_prompts), n_runs)
    ii, pp = np.nonzero(runs)
    return ii, pp, runs[ii, pp]


def mean_case(rng, kind: str, sd_c: float = 0.0):
    """One replicate: (item, prompt, cell scores, clusters, truth, scored outputs, prompts?)."""
    if kind == "independent":
        n = 300
        a = rng.normal(0.8, 1.0, n)
        y = (rng.random(n) < expit(a)).astype(float)
        return np.arange(n), np.zeros(n, int), y, None, true_mean(0.8, 1.0), n
    if kind == "clusters":
        g, m = 50, 8
        lin = 0.8 + np.repeat(rng.normal(0, sd_c, g), m) + rng.normal(0, 1.0, g * m)
        y = (rng.random(g * m) < expit(lin)).astype(float)
        clusters = np.repeat(np.arange(g), m)
        truth = true_mean(0.8, math.hypot(sd_c, 1.0))
        return np.arange(g * m), np.zeros(g * m, int), y, clusters, truth, g * m
    ii, pp, n = _grid(rng, kind == "sparse")
    a = rng.normal(0, 1.0, 200)
    b = rng.normal(0, 0.4, 5)
    ab = rng.normal(0, 0.5, (200, 5))
    k = rng.binomial(n, expit(0.5 + a[ii] + b[pp] + ab[ii, pp]))
    truth = true_mean(0.5, math.sqrt(1.0 + 0.4**2 + 0.5**2))
    return ii, pp, k / n, None, truth, int(n.sum())


def diff_case(rng, kind: str, sd_c: float = 1.0):
    """One paired replicate: (item, prompt, cell differences, clusters, truth, prompt space)."""
    if kind == "independent":  # 300 items, one prompt: the returned 'd' holds both models
        a = rng.normal(0, 1.0, 300)
        ya = (rng.random(300) < expit(0.9 + a)).astype(float)
        yb = (rng.random(300) < expit(0.6 + a)).astype(float)
        truth = true_mean(0.9, 1.0) - true_mean(0.6, 1.0)
        return None, None, (ya, yb), None, truth, False
    if kind == "passages":
        g, m = 50, 8
        c = np.repeat(rng.normal(0, sd_c, g), m)
        a = rng.normal(0, 1.0, g * m)
        ys = []
        for mu in (0.9, 0.6):
            lin = mu + c + np.repeat(rng.normal(0, 0.6, g), m) + a  # passage x model effect
            ys.append((rng.random(g * m) < expit(lin)).astype(float))
        tau = math.sqrt(sd_c**2 + 1.0 + 0.6**2)
        truth = true_mean(0.9, tau) - true_mean(0.6, tau)
        return (
            np.arange(g * m),
            np.zeros(g * m, int),
            ys[0] - ys[1],
            np.repeat(np.arange(g), m),
            truth,
            False,
        )
    ii, pp, n = _grid(rng, kind == "sparse")
    a = rng.normal(0, 1.0, 200)
    b = rng.normal(0, 0.4, 5)
    ab = rng.normal(0, 0.4, (200, 5))
    ys = []
    for mu in (0.7, 0.5):
        mp, mi = rng.normal(0, 0.3, 5), rng.normal(0, 0.4, 200)
        ys.append(rng.binomial(n, expit(mu + a[ii] + b[pp] + ab[ii, pp] + mp[pp] + mi[ii])) / n)
    tau = math.sqrt(1.0 + 0.4**2 + 0.4**2 + 0.3**2 + 0.4**2)
    return ii, pp, ys[0] - ys[1], None, true_mean(0.7, tau) - true_mean(0.5, tau), True


def mean_interval_of(item, prompt, y, clusters, n_obs, level=0.95):
    """The default interval of a mean as ``intervals`` builds it for 0/1 scores."""
    mv = design_variance(item, prompt, y, clusters=clusters, prompt_space=True)
    if mv.n_prompts < 2 and clusters is None:  # one prompt, independent items: plain Wilson
        from statsmodels.stats.proportion import proportion_confint

        return proportion_confint(int(y.sum()), y.size, alpha=1 - level, method="wilson")
    top = mv.n_clusters if clusters is not None else mv.n_items
    return wilson_effective(mv.mean, mv.var, mv.df, n_min=top, confidence_level=level)


def diff_interval_of(item, prompt, d, clusters, prompt_space, level=0.95):
    """The design's paired interval as ``compare_models`` inverts its t test (one pair)."""
    if item is None:  # one prompt, independent 0/1 items: the exact McNemar interval
        from evalstats.compare import paired_difference

        ci = paired_difference(*d, confidence_level=level).confidence_interval
        return ci.low, ci.high
    mv = design_variance(item, prompt, d, clusters=clusters, prompt_space=prompt_space)
    q = float(stats.t.isf((1 - level) / 2, mv.df))
    se = math.sqrt(mv.var)
    return mv.mean - q * se, mv.mean + q * se


def mean_coverage(kind, reps, sd_c=0.0, seed=0):
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(reps):
        item, prompt, y, cl, truth, n_obs = mean_case(rng, kind, sd_c)
        lo, hi = mean_interval_of(item, prompt, y, cl, n_obs)
        hits += lo <= truth <= hi
    return hits / reps


def diff_coverage(kind, reps, sd_c=1.0, seed=0):
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(reps):
        item, prompt, d, cl, truth, space = diff_case(rng, kind, sd_c)
        lo, hi = diff_interval_of(item, prompt, d, cl, space)
        hits += lo <= truth <= hi
    return hits / reps


MEAN_CASES = [
    ("independent", 0.0),
    ("clusters", 0.0),
    ("clusters", 0.8),
    ("clusters", 1.5),
    ("crossed", 0.0),
    ("sparse", 0.0),
]
DIFF_CASES = [
    ("independent", 0.0),
    ("passages", 0.0),
    ("passages", 0.8),
    ("passages", 1.5),
    ("crossed", 0.0),
    ("sparse", 0.0),
]


@pytest.mark.parametrize(("kind", "sd_c"), MEAN_CASES)
def test_mean_interval_covers(kind, sd_c):
    assert 0.92 <= mean_coverage(kind, 400, sd_c, seed=1) <= 0.975


@pytest.mark.parametrize(("kind", "sd_c"), DIFF_CASES)
def test_paired_interval_covers(kind, sd_c):
    assert 0.92 <= diff_coverage(kind, 400, sd_c, seed=2) <= 0.975


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "sd_c"), MEAN_CASES)
def test_mean_interval_covers_long(kind, sd_c):
    cov = mean_coverage(kind, 4000, sd_c, seed=11)
    print(f"mean {kind} sd_c={sd_c}: coverage {cov:.4f}")
    # clusters that are not correlated (sd 0): the cluster-robust interval pays for not
    # assuming so with a little width (measured 0.961, 0.970 before the n_eff cap was removed
    # in issue 46; docs/methods/compare.md)
    high = 0.975 if (kind, sd_c) == ("clusters", 0.0) else 0.965
    assert 0.935 <= cov <= high


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "sd_c"), DIFF_CASES)
def test_paired_interval_covers_long(kind, sd_c):
    cov = diff_coverage(kind, 4000, sd_c, seed=12)
    print(f"difference {kind} sd_c={sd_c}: coverage {cov:.4f}")
    assert 0.935 <= cov <= 0.965


def test_plain_intervals_under_cover_clustered_items():
    """Why the design: Wilson over items ignores the passages (the issue's 0.875 / 0.774)."""
    from statsmodels.stats.proportion import proportion_confint

    rng = np.random.default_rng(3)
    hits = 0
    for _ in range(400):
        _, _, y, _, truth, _ = mean_case(rng, "clusters", 1.5)
        lo, hi = proportion_confint(int(y.sum()), y.size, alpha=0.05, method="wilson")
        hits += lo <= truth <= hi
    assert hits / 400 < 0.85


def test_the_kernels_are_what_the_api_computes():
    """One replicate of each kind through ``intervals`` and ``compare_models``."""
    import evalstats

    rng = np.random.default_rng(5)
    # clustered items: intervals takes the `cluster` column
    item, prompt, y, cl, _, n_obs = mean_case(rng, "clusters", 0.8)
    obs = pl.DataFrame(
        {
            "model": "m",
            "dataset": "d",
            "item": item.astype(str),
            "cluster": cl.astype(str),
            "score": y,
        }  # fmt: skip
    )
    row = evalstats.intervals(obs).row(0, named=True)
    lo, hi = mean_interval_of(item, prompt, y, cl, n_obs)
    assert row["over"] == "clusters" and row["method"] == "wilson"
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((lo, hi), rel=1e-12)
    # crossed prompts: the prompt space, from the variant column
    ii, pp, y, _, _, _ = mean_case(rng, "sparse")
    cells = pl.DataFrame({"item": ii.astype(str), "variant": pp.astype(str), "score": y})
    obs = cells.with_columns(model=pl.lit("m"), dataset=pl.lit("d"))
    row = evalstats.intervals(obs, method="t").row(0, named=True)
    mv = design_variance(ii, pp, y)
    q = stats.t.isf(0.025, mv.df)
    assert row["over"] == "items+prompts" and row["n_prompts"] == 5
    assert row["se"] == pytest.approx(math.sqrt(mv.var), rel=1e-12)
    assert row["ci_low"] == pytest.approx(mv.mean - q * math.sqrt(mv.var), rel=1e-12)
    # a pair with passages: compare_models' t-design test and interval
    item, prompt, d, cl, _, space = diff_case(rng, "passages", 0.8)
    a = (d > 0).astype(float)  # any two score vectors with this difference
    b = a - d
    obs = pl.concat(
        [
            pl.DataFrame(
                {
                    "model": name,
                    "dataset": "d",
                    "item": item.astype(str),
                    "cluster": cl.astype(str),
                    "score": s,
                }
            )  # fmt: skip
            for name, s in (("a", a), ("b", b))
        ]
    )
    row = evalstats.compare_models(obs, correction="none").row(0, named=True)
    lo, hi = diff_interval_of(item, prompt, d, cl, space)
    assert row["method"] == "t-design"
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((lo, hi), rel=1e-12)


# --- clusters in the rank sets and in PPI -----------------------------------------------------


def _judged_clusters(rng, g=40, m=10, sd_c=1.5, share=0.25):
    c = np.repeat(rng.normal(0, sd_c, g), m)
    y = (rng.random(g * m) < expit(0.4 + c + rng.normal(0, 1.0, g * m))).astype(float)
    f = np.where(rng.random(g * m) < 0.15, 1.0 - y, y)  # a judge that is wrong 15 % of the time
    f = np.where((y == 0) & (rng.random(g * m) < 0.1), 1.0, f)  # and lenient: biased upward
    gold = np.where(rng.random(g * m) < share, y, np.nan)
    truth = true_mean(0.4, math.hypot(sd_c, 1.0))
    obs = pl.DataFrame(
        {
            "model": "m",
            "dataset": "d",
            "item": [str(i) for i in range(g * m)],
            "cluster": [str(i // m) for i in range(g * m)],
            "score": f,
            "gold_score": gold,
        }  # fmt: skip
    ).with_columns(pl.col("gold_score").fill_nan(None))
    return obs, truth


def test_ppi_with_clusters_covers_where_the_plain_interval_does_not():
    import evalstats

    rng = np.random.default_rng(8)
    hit_c = hit_i = 0
    reps = 200
    for _ in range(reps):
        obs, truth = _judged_clusters(rng)
        c = evalstats.ppi_mean(obs).row(0, named=True)
        i = evalstats.ppi_mean(obs.drop("cluster")).row(0, named=True)
        assert c["method"] == "ppi++-cluster" and c["n_clusters"] == 40
        hit_c += c["ci_low"] <= truth <= c["ci_high"]
        hit_i += i["ci_low"] <= truth <= i["ci_high"]
    assert hit_c / reps >= 0.92
    assert hit_i / reps < 0.9  # items of a passage are not independent


def test_rank_sets_resample_whole_clusters():
    import evalstats
    from evalstats.compare._ranks import _pairwise_rank_sets

    rng = np.random.default_rng(4)
    g, m = 30, 8
    c = np.repeat(rng.normal(0, 1.5, g), m)
    rows = []
    for k, mu in enumerate((0.5, 0.62, 0.74, 0.86)):
        lin = mu + c + np.repeat(rng.normal(0, 0.6, g), m) + rng.normal(0, 1, g * m)
        y = (rng.random(g * m) < expit(lin)).astype(float)
        rows += [(f"m{k}", "d", str(i), str(i // m), float(y[i])) for i in range(g * m)]
    obs = pl.DataFrame(rows, schema=["model", "dataset", "item", "cluster", "score"], orient="row")
    clustered = evalstats.rank_intervals(obs, n_resamples=400)
    plain = evalstats.rank_intervals(obs.drop("cluster"), n_resamples=400)
    assert clustered["n_clusters"].to_list() == [30] * 4 and plain["n_clusters"].is_null().all()
    width = lambda t: int((t["rank_high"] - t["rank_low"]).sum())  # noqa: E731
    assert width(clustered) >= width(plain)
    # one item per cluster: the cluster-robust SE of a difference is the paired one
    x = rng.normal(size=(50, 3))
    boot = x[rng.integers(0, 50, size=(200, 50))].mean(axis=1)
    a = _pairwise_rank_sets(x, boot, 0.95, simultaneous=True)
    b = _pairwise_rank_sets(x, boot, 0.95, simultaneous=True, clusters=np.arange(50))
    assert all((u == v).all() for u, v in zip(a, b))


# --- the report's headline count: one study-wide family ---------------------------------------


def _null_study(rng, n_models=10, n_datasets=15, n_items=40):
    """Per dataset, items x models of 0/1 scores with equal accuracy (shared item difficulty)."""
    out = []
    for _ in range(n_datasets):
        a = rng.normal(0.3, 1.0, n_items)
        out.append((rng.random((n_items, n_models)) < expit(a)[:, None]).astype(float))
    return out


def _mcnemar_pvalues(x: np.ndarray) -> np.ndarray:
    """Exact two-sided McNemar p-values of every pair of columns of ``x`` (items x models)."""
    from itertools import combinations

    pairs = list(combinations(range(x.shape[1]), 2))
    a, b = x[:, [p[0] for p in pairs]], x[:, [p[1] for p in pairs]]
    n10, n01 = ((a == 1) & (b == 0)).sum(0), ((a == 0) & (b == 1)).sum(0)
    k = n10 + n01
    p = np.where(k > 0, 2 * stats.binom.cdf(np.minimum(n10, n01), np.maximum(k, 1), 0.5), 1.0)
    return np.minimum(p, 1.0)


def _family_error(reps, seed):
    """Share of null studies with any rejection: one study-wide Holm family, and per dataset."""
    from evalstats.compare._multiplicity import adjust

    rng = np.random.default_rng(seed)
    any_global = any_group = 0
    for _ in range(reps):
        pvals = [_mcnemar_pvalues(x) for x in _null_study(rng)]
        any_global += bool((adjust(np.concatenate(pvals), "holm") < 0.05).any())
        any_group += any(bool((adjust(p, "holm") < 0.05).any()) for p in pvals)
    return any_global / reps, any_group / reps


def test_study_wide_family_keeps_the_headline_count_honest():
    """10 models on 15 datasets, no differences: the report's study-wide Holm family rejects
    anything in at most 5 % of studies; a family per dataset does so far more often."""
    fwer, per_dataset = _family_error(200, seed=21)
    assert fwer <= 0.05
    assert per_dataset > 2 * max(fwer, 0.01)


@pytest.mark.slow
def test_study_wide_family_error_long():
    fwer, per_dataset = _family_error(2000, seed=22)
    print(f"study-wide family: {fwer:.4f}; per dataset: {per_dataset:.4f}")
    assert fwer <= 0.05


def test_the_study_wide_family_is_compare_models_global():
    """The simulation's p-values and Holm family are compare_models' own (one study)."""
    import evalstats
    from evalstats.compare._multiplicity import adjust

    rng = np.random.default_rng(23)
    frames = []
    for d, x in enumerate(_null_study(rng, n_models=4, n_datasets=3)):
        for m in range(x.shape[1]):
            frames.append(
                pl.DataFrame(
                    {
                        "model": f"m{m}",
                        "dataset": f"d{d}",
                        "score": x[:, m],
                        "item": [str(i) for i in range(x.shape[0])],
                    }
                )  # fmt: skip
            )
    out = evalstats.compare_models(pl.concat(frames), family="global")
    assert (out["family_size"] == 18).all() and (out["method"] == "mcnemar").all()
    rng = np.random.default_rng(23)
    ours = np.concatenate([_mcnemar_pvalues(x) for x in _null_study(rng, 4, 3)])
    assert out["pvalue"].to_list() == pytest.approx(list(ours), rel=1e-10)
    assert out["pvalue_corrected"].to_list() == pytest.approx(
        list(adjust(out["pvalue"].to_numpy(), "holm")), rel=1e-12
    )


def _judged_prompts(rng, n_items=150, n_prompts=5, share=0.3):
    a = rng.normal(0, 1.0, n_items)
    b = rng.normal(0, 0.5, n_prompts)
    ii, pp = np.meshgrid(np.arange(n_items), np.arange(n_prompts), indexing="ij")
    ii, pp = ii.ravel(), pp.ravel()
    y = (rng.random(ii.size) < expit(0.3 + a[ii] + b[pp] + rng.normal(0, 0.4, ii.size))).astype(
        float
    )
    f = np.where(rng.random(ii.size) < 0.12, 1.0 - y, y)
    labelled = rng.random(n_items) < share
    gold = np.where(labelled[ii], y, np.nan)
    truth = true_mean(0.3, math.sqrt(1.0 + 0.25 + 0.16))
    obs = pl.DataFrame(
        {
            "model": "m",
            "dataset": "d",
            "item": ii.astype(str),
            "variant": pp.astype(str),
            "score": f,
            "gold_score": gold,
        }  # fmt: skip
    ).with_columns(pl.col("gold_score").fill_nan(None))
    return obs, truth


def test_ppi_over_the_prompt_space_covers():
    import evalstats

    rng = np.random.default_rng(9)
    hit_space = hit_recorded = 0
    reps = 150
    for _ in range(reps):
        obs, truth = _judged_prompts(rng)
        s = evalstats.ppi_mean(obs).row(0, named=True)
        r = evalstats.ppi_mean(obs, over="recorded-prompts").row(0, named=True)
        assert s["method"] == "ppi++-prompts" and r["method"] == "ppi++"
        hit_space += s["ci_low"] <= truth <= s["ci_high"]
        hit_recorded += r["ci_low"] <= truth <= r["ci_high"]
    assert hit_space / reps >= 0.9
    assert hit_recorded / reps < 0.8  # five prompts are a small sample of the prompt space


@pytest.mark.parametrize("df", [1e-6, 1e-3, 0.01, 0.02])
def test_wilson_effective_at_a_vanishing_df_is_the_whole_range(df):
    """A Satterthwaite df near 0 makes the t quantile infinite or astronomically large: the
    interval is [0, 1], never a division by zero (found by the report's property test)."""
    from evalstats.compare._design_var import wilson_effective

    assert wilson_effective(0.4, 0.01, df, n_min=5, confidence_level=0.95) == (0.0, 1.0)
