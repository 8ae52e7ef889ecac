from __future__ import annotations

import json
import math
from itertools import combinations
from statistics import NormalDist

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from evalstats.errors import ParameterError, SchemaError
from evalstats.resampling import (
    CURVE_COLUMNS,
    NSTAR_COLUMNS,
    reference_model_check,
    required_sample_size,
    sample_size_curve,
    sample_size_uncertainty,
)
from evalstats.simulate import unit_table


def _units(scores: dict[str, np.ndarray], dataset: str = "d") -> pl.DataFrame:
    rows = [
        {"model": m, "dataset": dataset, "variant": f"v{i:03d}", "score": float(v)}
        for m, xs in scores.items()
        for i, v in enumerate(xs)
    ]
    return pl.DataFrame(rows)


def _order_statistic(values, level):
    """The smallest value with at least ``level`` of the values at or below it."""
    e = sorted(values)
    k = next(k for k in range(1, len(e) + 1) if k >= level * len(e) - 1e-9)
    return e[k - 1]


def _loop_curve(x, n_resamples, delta, rng):
    """The paper's algorithm written plainly: loops over n and over subsets (independent code)."""
    N = len(x)
    mu, var = float(np.mean(x)), float(np.var(x))
    out = {"mean": [], "variance": []}
    for n in range(1, N + 1):
        if math.comb(N, n) <= n_resamples:
            subsets = [list(c) for c in combinations(range(N), n)]
            exhaustive = True
        else:
            subsets = [list(rng.choice(N, size=n, replace=False)) for _ in range(n_resamples)]
            exhaustive = False
        em = [abs(float(np.mean(x[s])) - mu) for s in subsets]
        ev = [abs(float(np.var(x[s])) - var) for s in subsets]
        for name, e in (("mean", em), ("variance", ev)):
            lo, hi = _order_statistic(e, delta / 2), _order_statistic(e, 1 - delta / 2)
            out[name].append((float(np.mean(e)), float(lo), float(hi), exhaustive, np.array(e)))
    return out


def test_pool_equals_loop_implementation_exactly_when_exhaustive(rng):
    x = rng.beta(6, 4, size=9)
    curve = sample_size_curve(_units({"m": x}), n_resamples=200, delta=0.1, method="pool")
    assert curve.columns == ["model", "dataset", "metric", *CURVE_COLUMNS]
    assert curve["exhaustive"].all()  # C(9, n) <= 126 <= 200 for every n
    ref = _loop_curve(x, 200, 0.1, rng)
    for moment in ("mean", "variance"):
        got = curve.filter(pl.col("moment") == moment).sort("n")
        exp = np.array([r[:3] for r in ref[moment]])
        assert_allclose(got["delta_mean"].to_numpy(), exp[:, 0], rtol=1e-11, atol=1e-15)
        assert_allclose(got["ci_low"].to_numpy(), exp[:, 1], rtol=1e-11, atol=1e-15)
        assert_allclose(got["ci_high"].to_numpy(), exp[:, 2], rtol=1e-11, atol=1e-15)


def test_pool_equals_loop_implementation_within_mc_error_when_sampled(rng):
    x = rng.beta(6, 4, size=30)
    R = 1000
    curve = sample_size_curve(_units({"m": x}), n_resamples=R, seed=7, method="pool")
    ref = _loop_curve(x, R, 0.1, np.random.default_rng(99))
    for moment in ("mean", "variance"):
        got = curve.filter(pl.col("moment") == moment).sort("n")
        for n in range(1, 31):
            mean_l, _lo, hi_l, exh, draws = ref[moment][n - 1]
            row = got.row(n - 1, named=True)
            assert row["exhaustive"] == exh
            if exh:
                assert row["delta_mean"] == pytest.approx(mean_l, rel=1e-11, abs=1e-15)
                continue
            # mean of |Delta|: both are means of R draws; 5 standard errors of the difference
            se = draws.std() * math.sqrt(2 / R)
            assert abs(row["delta_mean"] - mean_l) <= 5 * se + 1e-15
            # 95th percentile: within the loop draws' 91st..99th percentiles (~4 MC SE)
            lo_q, hi_q = np.percentile(draws, [91, 99])
            assert lo_q - 1e-15 <= row["ci_high"] <= hi_q + 1e-15


def test_pool_curve_is_zero_at_n_equal_N_and_n_star_never_silently_N():
    x = np.linspace(0.2, 0.8, 12)
    curve = sample_size_curve(_units({"m": x}), moments="mean", method="pool")
    assert curve.filter(pl.col("n") == 12)["ci_high"].item() == 0.0
    out = required_sample_size(_units({"m": x}), epsilon=1e-6, moments="mean", method="bootstrap")
    assert out.columns == ["model", "dataset", "metric", *NSTAR_COLUMNS]
    row = out.filter(pl.col("moment") == "mean").row(0, named=True)
    assert row["n_star"] is None and row["reached"] is False and row["n_available"] == 12
    over = out.filter(pl.col("moment") == "overall").row(0, named=True)
    assert over["n_star"] is None and over["reached"] is False


def test_compat_reliable_eval_matches_reference_script(fixtures):
    """fixtures/reference/reliable_eval: loop re-implementation of the reference script's choices.

    Exhaustive sizes (k <= 2) exactly; random sizes within Monte Carlo error; n* exactly.
    """
    ref_dir = fixtures / "reference/reliable_eval"
    scores = json.loads((ref_dir / "scores.json").read_text())
    expected = json.loads((ref_dir / "expected.json").read_text())
    units = _units({m: np.array(list(v.values())) for m, v in scores.items()})
    eps, delta = expected["epsilon"], expected["delta"]
    curve = sample_size_curve(units, delta=delta, compat="reliable-eval", n_resamples=5000)
    nstar = required_sample_size(
        units, epsilon=eps, delta=delta, compat="reliable-eval", n_resamples=5000
    )
    for model, exp in expected["models"].items():
        for moment in ("mean", "variance"):
            got = curve.filter(pl.col("model") == model, pl.col("moment") == moment).sort("n")
            assert got["exhaustive"].to_list()[:2] == [True, True]
            assert not got["exhaustive"][2:].any()
            for col, key in (("delta_mean", "mean"), ("ci_low", "low"), ("ci_high", "high")):
                assert_allclose(
                    got[col].to_numpy()[:2], exp[moment][key][:2], rtol=1e-12, atol=1e-15
                )
                assert_allclose(got[col].to_numpy(), exp[moment][key], rtol=0, atol=0.004)
        row = nstar.filter(pl.col("model") == model, pl.col("moment") == "mean").row(0, named=True)
        assert row["n_star"] == exp["n_star_mean"]
        assert row["method"] == "pool+reliable-eval"


def test_compat_uses_truncated_percentiles_and_strict_comparison():
    x = np.array([0.0, 1.0])
    units = _units({"m": x})
    # n = 1: |Delta| is 0.5 for both subsets; strict < epsilon = 0.5 fails, <= passes
    strict = required_sample_size(units, epsilon=0.5, moments="mean", compat="reliable-eval")
    loose = required_sample_size(units, epsilon=0.5, moments="mean")
    assert strict.filter(pl.col("moment") == "mean")["n_star"].item() == 2
    assert loose.filter(pl.col("moment") == "mean")["n_star"].item() == 1


def test_analytic_n_star_is_the_closed_form():
    rng = np.random.default_rng(3)
    x = rng.normal(0.6, 0.04, size=200).clip(0, 1)
    out = required_sample_size(
        _units({"m": x}), epsilon=0.01, delta=0.1, moments="mean", method="analytic"
    )
    z = NormalDist().inv_cdf(0.975)  # P(|Z| > z) = delta/2, the 1 - delta/2 quantile of |Z|
    n0 = (z * np.std(x, ddof=1) / 0.01) ** 2
    assert out.filter(pl.col("moment") == "mean")["n_star"].item() == math.ceil(n0)
    fpc = required_sample_size(
        _units({"m": x}), epsilon=0.01, moments="mean", method="analytic", population_size=200
    )
    assert fpc.filter(pl.col("moment") == "mean")["n_star"].item() == math.ceil(
        n0 / (1 + (n0 - 1) / 200)
    )


def test_n_star_does_not_grow_with_epsilon():
    units = unit_table(n_models=2, n_items=100, n_variants=25, prompt_sd=0.03, seed=4)
    prev = None
    for eps in (0.005, 0.01, 0.02, 0.04, 0.08):
        out = required_sample_size(units, epsilon=eps, n_resamples=500, seed=1)
        vals = [v if v is not None else 10**9 for v in out.sort("model", "moment")["n_star"]]
        if prev is not None:
            assert all(a <= b for a, b in zip(vals, prev))
        prev = vals


def test_results_are_reproducible_with_seed_and_change_without():
    units = unit_table(n_models=1, n_items=100, n_variants=40, prompt_sd=0.03, seed=2)
    a = sample_size_curve(units, n_resamples=300, seed=5)
    b = sample_size_curve(units, n_resamples=300, seed=5)
    c = sample_size_curve(units, n_resamples=300, seed=6)
    assert a.equals(b)
    assert not a.equals(c)


def test_bootstrap_curve_does_not_vanish_at_N():
    units = unit_table(n_models=1, n_items=100, n_variants=20, prompt_sd=0.03, seed=2)
    curve = sample_size_curve(units, method="bootstrap", moments="mean", n_resamples=500)
    assert curve.filter(pl.col("n") == 20)["ci_high"].item() > 0
    assert not curve["exhaustive"].any()


def test_uncertainty_and_proxy_tables():
    units = unit_table(n_models=2, n_items=100, n_variants=20, prompt_sd=0.03, seed=0)
    unc = sample_size_uncertainty(
        units, epsilon=0.02, moments="mean", n_bootstrap=30, n_resamples=200, method="pool"
    )
    row = unc.filter(pl.col("model") == "m0", pl.col("moment") == "mean").row(0, named=True)
    assert row["ci_low"] <= row["n_star_median"] <= row["ci_high"]
    assert 0 <= row["share_reached"] <= 1 and row["confidence_level"] == 0.9
    proxy = reference_model_check(
        units, reference_model="m1", epsilon=0.02, moments="mean", n_resamples=300, method="pool"
    )
    m1 = proxy.filter(pl.col("model") == "m1", pl.col("moment") == "mean").row(0, named=True)
    assert m1["proxy_sufficient"] is True and m1["within_epsilon_at_reference"] is True
    for r in proxy.filter(pl.col("moment") == "mean").iter_rows(named=True):
        assert r["proxy_sufficient"] == (r["n_star"] <= r["reference_n_star"])
        assert r["within_epsilon_at_reference"] == (r["ci_high_at_reference"] <= 0.02)


def test_reference_model_must_exist():
    units = unit_table(n_models=2, n_items=10, n_variants=4, seed=0)
    with pytest.raises(SchemaError, match="`reference_model` 'gpt'"):
        reference_model_check(units, reference_model="gpt")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"delta": 10}, r"`delta` must be in \(0, 1\), got 10. Did you mean 0.1\?"),
        ({"method": "jackknife"}, "`method` must be one of"),
        ({"moments": ("mean", "skew")}, "`moments` must be among"),
        ({"n_resamples": 0}, "`n_resamples` must be a positive integer"),
        ({"compat": "paper"}, "`compat` must be None or 'reliable-eval'"),
        ({"compat": "reliable-eval", "method": "bootstrap"}, "cannot be combined"),
        ({"epsilon": -1}, "`epsilon` must be a positive number"),
    ],
)
def test_bad_parameters(kwargs, match):
    units = unit_table(n_models=1, n_items=10, n_variants=4, seed=0)
    with pytest.raises(ParameterError, match=match):
        required_sample_size(units, **kwargs)


# --- issue 18: n* reached only when it means something ------------------------------------


def _sowa_first(shared_data, task, k):
    """The first ``k`` paraphrases of a State of What Art BBH task, one group per model
    (read in place from ../shared/data/state-of-what-art)."""
    path = shared_data / f"state-of-what-art/paraphrases accuracies/BBH/{task}.csv"
    frame = pl.read_csv(path).head(k)
    return _units({c.removesuffix("_acc"): frame[c].to_numpy() for c in frame.columns[1:]})


def test_pool_n_star_is_not_reached_when_only_the_full_set_qualifies(shared_data):
    """Point 10: Delta(N) = 0 by construction, so n* = N 'reached' claimed nothing.

    First 12 paraphrases of causal_judgement: for every model whose pool bound at n = 11 is
    above epsilon, n* used to be 12 with reached = True.
    """
    units = _sowa_first(shared_data, "causal_judgement", 12)
    curve = sample_size_curve(units, moments="mean", method="pool")
    above = curve.filter(pl.col("n") == 11, pl.col("ci_high") > 0.01)["model"].to_list()
    assert len(above) >= 3
    out = required_sample_size(units, epsilon=0.01, moments="mean", method="pool")
    rows = out.filter(pl.col("moment") == "mean", pl.col("model").is_in(above))
    assert rows["n_star"].null_count() == rows.height
    assert not rows["reached"].any()
    assert set(out["population"]) == {"recorded"}
    # a model whose bound is below epsilon before N keeps its n*
    below = curve.filter(pl.col("n") == 11, pl.col("ci_high") <= 0.01)["model"].to_list()
    kept = out.filter(pl.col("moment") == "mean", pl.col("model").is_in(below))
    assert kept["reached"].all() and (kept["n_star"] < 12).all()


def test_enumerated_bound_is_an_order_statistic_not_an_interpolation():
    """Point 11: 12 paraphrases, 11 at 26/50 and one at 32/50.

    Of the 12 subsets of size 11, the one without the outlier misses the pool mean by
    0.12/12 = 0.01 > epsilon = 0.008: 1 in 12 (8.3 % > delta/2 = 5 %). Interpolating between
    the 11th and 12th deviation gave 0.005 and n* = 11; the 1 - delta/2 order statistic is the
    largest deviation, so n = 11 does not qualify and (pool) n* is not reached.
    """
    x = np.array([26 / 50] * 11 + [32 / 50])
    units = _units({"m": x})
    curve = sample_size_curve(units, moments="mean", delta=0.1, method="pool")
    at11 = curve.filter(pl.col("n") == 11).row(0, named=True)
    assert at11["exhaustive"]
    assert at11["ci_high"] == pytest.approx(0.12 / 12, abs=1e-12)
    # brute force: share of 11-subsets that miss by more than epsilon
    misses = [abs(np.mean(x[list(c)]) - x.mean()) > 0.008 for c in combinations(range(12), 11)]
    assert np.mean(misses) == pytest.approx(1 / 12)
    out = required_sample_size(units, epsilon=0.008, moments="mean", delta=0.1, method="pool")
    row = out.filter(pl.col("moment") == "mean").row(0, named=True)
    assert row["n_star"] is None and row["reached"] is False


def test_analytic_bound_is_the_same_quantile_as_the_bootstrap_bound():
    """Point 12: the 1 - delta/2 quantile of |Delta| is z(1 - delta/4) sd, not z(1 - delta/2) sd.

    With 400 normal variant scores the bootstrap bound is the normal one up to Monte Carlo
    error; with z(1 - delta/2) the analytic bound was 1.645/1.96 = 0.84 of it, and its n*
    about 0.7 of the bootstrap's.
    """
    rng = np.random.default_rng(5)
    units = _units({"m": rng.normal(0.6, 0.03, size=400)})
    kw = dict(moments="mean", delta=0.1, seed=1)
    boot = sample_size_curve(units, method="bootstrap", n_resamples=4000, **kw)
    ana = sample_size_curve(units, method="analytic", **kw)
    ns = [5, 10, 20, 40, 80]
    b = boot.filter(pl.col("n").is_in(ns)).sort("n")["ci_high"].to_numpy()
    a = ana.filter(pl.col("n").is_in(ns)).sort("n")["ci_high"].to_numpy()
    assert_allclose(a / b, 1.0, atol=0.06)
    nb = required_sample_size(units, epsilon=0.01, method="bootstrap", n_resamples=4000, **kw)
    na = required_sample_size(units, epsilon=0.01, method="analytic", **kw)
    ratio = (
        na.filter(pl.col("moment") == "mean")["n_star"].item()
        / nb.filter(pl.col("moment") == "mean")["n_star"].item()
    )
    assert 0.85 <= ratio <= 1.15


def test_n_star_is_where_the_bound_stays_below_epsilon():
    """Point 13: the variance bound dips below epsilon at n = 1 and rises above it again.

    Scores mostly at 0.5 with a few at 0.2 and 0.8 (variance 0.009 < epsilon = 0.01): a single
    variant has variance 0, so |Delta(1)| = 0.009 <= epsilon, but a pair holding 0.2 or 0.8
    misses by more. The first crossing gave n* = 1; the n after which the bound stays below
    epsilon is larger, and the variance is flagged as vacuous (the moment itself is within
    epsilon of 0).
    """
    x = np.array([0.5] * 45 + [0.2] * 2 + [0.8] * 3)
    units = _units({"m": x})
    assert np.var(x) < 0.01
    curve = sample_size_curve(units, moments="variance", method="bootstrap", n_resamples=2000)
    high = curve.sort("n")["ci_high"].to_numpy()
    assert high[0] <= 0.01 and high[1] > 0.01
    out = required_sample_size(
        units, epsilon=0.01, moments="variance", method="bootstrap", n_resamples=2000
    )
    row = out.filter(pl.col("moment") == "variance").row(0, named=True)
    n_star = row["n_star"]
    assert n_star is not None and n_star > 2
    assert (high[n_star - 1 :] <= 0.01).all() and high[n_star - 2] > 0.01
    assert row["vacuous"] is True and row["population"] == "unseen"
    mean_row = required_sample_size(units, epsilon=0.01, moments="mean").row(0, named=True)
    assert mean_row["vacuous"] is False


# --- the guarantee on fresh draws from a super-population -------------------------------------


def _failure_probability(n_star, sigma, epsilon):
    """P(|mean of n fresh variants - mu| > epsilon) for normal variant scores (exact)."""
    return 2 * (1 - NormalDist().cdf(epsilon * math.sqrt(n_star) / sigma))


def _guarantee(n_reps, n_resamples, seed):
    mu, sigma, N, eps, delta = 0.6, 0.03, 80, 0.01, 0.1
    rng = np.random.default_rng(seed)
    fail = {"pool": [], "bootstrap": [], "analytic": []}
    for rep in range(n_reps):
        x = rng.normal(mu, sigma, size=N)
        units = _units({"m": x})
        for method in fail:
            out = required_sample_size(
                units,
                epsilon=eps,
                delta=delta,
                moments="mean",
                method=method,
                n_resamples=n_resamples,
                seed=rep,
            )
            n_star = out.filter(pl.col("moment") == "mean")["n_star"].item()
            n_star = (
                N if n_star is None else n_star
            )  # not reached: all N variants (counted as used)
            fail[method].append(_failure_probability(n_star, sigma, eps))
    return {m: np.array(v) for m, v in fail.items()}, delta


def _check_guarantee(fail, delta, n_reps):
    from evalstats.report._analyses import _nstar_fixed

    mc = 3 / math.sqrt(n_reps) * 0.05  # 3 MC SE of a mean of failure probabilities (sd <~ 0.05)
    report_default = _nstar_fixed(None)["method"]
    assert report_default == "bootstrap"
    assert fail[report_default].mean() <= delta + mc
    assert fail["analytic"].mean() <= delta + mc
    # pool mode is optimistic (finite-population effect): its n* falls short of the guarantee
    # (failure probability above delta) far more often than the bootstrap n*
    short_pool = (fail["pool"] > delta).mean()
    short_boot = (fail["bootstrap"] > delta).mean()
    assert short_pool > short_boot + 0.2
    assert fail["pool"].mean() > fail["bootstrap"].mean()
    return short_pool


def test_bootstrap_and_analytic_n_star_keep_the_guarantee_short():
    fail, delta = _guarantee(n_reps=40, n_resamples=500, seed=11)
    _check_guarantee(fail, delta, 40)


@pytest.mark.slow
def test_bootstrap_and_analytic_n_star_keep_the_guarantee_full():
    fail, delta = _guarantee(n_reps=1000, n_resamples=5000, seed=12)
    short_pool = _check_guarantee(fail, delta, 1000)
    print(
        f"P(fail): pool {fail['pool'].mean():.4f} bootstrap {fail['bootstrap'].mean():.4f} "
        f"analytic {fail['analytic'].mean():.4f}; pool n* falls short in {short_pool:.1%}"
    )


# --- command line ---------------------------------------------------------------------------------


def _sowa(shared_data):
    """State of What Art's snarks accuracies, read in place from ../shared/data."""
    return str(shared_data / "state-of-what-art/paraphrases accuracies/BBH/snarks.csv")


def test_cli_nstar_json(shared_data, capsys):
    from evalstats.cli import main

    code = main(
        [
            "nstar",
            _sowa(shared_data),
            "--epsilon",
            "0.02",
            "--moments",
            "mean",
            "--n-resamples",
            "300",
            "--json",
        ]
    )
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["command"] == "nstar"
    assert doc["params"] == {"epsilon": 0.02, "moments": ["mean"], "n_resamples": 300}
    assert {r["moment"] for r in doc["rows"]} == {"mean", "overall"}
    assert list(doc["rows"][0]) == ["model", "dataset", "metric", *NSTAR_COLUMNS]


def test_cli_nstar_reference_model_and_plot(shared_data, tmp_path, capsys):
    from evalstats.cli import main

    small = tmp_path / "snarks.csv"  # two models keep the figure small
    pl.read_csv(_sowa(shared_data)).select(
        "paraphrase idx", "flan-t5-xxl_acc", "t0pp_acc"
    ).write_csv(small)
    png = tmp_path / "conv.png"
    code = main(
        [
            "nstar",
            str(small),
            "--epsilon",
            "0.02",
            "--moments",
            "mean",
            "--n-resamples",
            "200",
            "--reference-model",
            "flan-t5-xxl",
            "--plot",
            str(png),
        ]
    )
    assert code == 0
    out = pl.read_csv(capsys.readouterr().out.encode())
    assert set(out["reference_model"]) == {"flan-t5-xxl"} and png.stat().st_size > 0
    assert set(out["model"]) == {"flan-t5-xxl", "t0pp"}


def test_cli_nstar_bad_delta_exits_2(shared_data, capsys):
    from evalstats.cli import main

    assert main(["nstar", _sowa(shared_data), "--delta", "10"]) == 2
    err = capsys.readouterr().err
    assert (
        "evalstats: error: `--delta` must be in (0, 1), got 10.0" in err and "Traceback" not in err
    )


# --- properties -------------------------------------------------------------------------------


@given(st.lists(st.floats(0, 1, allow_nan=False), min_size=2, max_size=7))
def test_property_exhaustive_pool_matches_brute_force_and_bounds(values):
    x = np.array(values)
    curve = sample_size_curve(_units({"m": x}), n_resamples=10**6, method="pool")
    assert curve["exhaustive"].all()
    ref = _loop_curve(x, 10**6, 0.1, np.random.default_rng(0))
    for moment in ("mean", "variance"):
        got = curve.filter(pl.col("moment") == moment).sort("n")
        exp = np.array([r[:3] for r in ref[moment]])
        assert_allclose(got["delta_mean"].to_numpy(), exp[:, 0], rtol=1e-9, atol=1e-12)
        assert_allclose(got["ci_high"].to_numpy(), exp[:, 2], rtol=1e-9, atol=1e-12)
        assert (got["ci_low"] <= got["ci_high"] + 1e-15).all()
        assert (got["ci_low"] >= 0).all()


@given(st.lists(st.floats(0, 1, allow_nan=False), min_size=3, max_size=12), st.integers(0, 10**6))
def test_property_renaming_models_and_shuffling_rows_keeps_enumerated_sizes(values, seed):
    x = np.array(values)
    a = sample_size_curve(_units({"m": x}), n_resamples=50, moments="mean", seed=seed)
    b = sample_size_curve(_units({"other": x[::-1]}), n_resamples=50, moments="mean", seed=seed)
    ea, eb = a.filter(pl.col("exhaustive")), b.filter(pl.col("exhaustive"))
    assert_allclose(ea["ci_high"].to_numpy(), eb["ci_high"].to_numpy(), rtol=1e-9, atol=1e-12)


def test_a_groups_n_star_does_not_depend_on_the_other_groups():
    """Groups are seeded by their key, not their position: n* of one task is the same alone
    and in a call over every task (sampled, non-exhaustive subsets)."""
    rng = np.random.default_rng(8)
    frames = {f"t{k}": rng.normal(0.6, 0.05, 60) for k in range(3)}
    rows = [
        {"model": "m", "dataset": t, "variant": f"v{i}", "run": 0, "score": float(v)}
        for t, x in frames.items()
        for i, v in enumerate(x)
    ]
    units = pl.DataFrame(rows)
    kw = dict(moments="mean", n_resamples=300, seed=5)
    every = required_sample_size(units, **kw).filter(pl.col("dataset") == "t2")
    alone = required_sample_size(units.filter(pl.col("dataset") == "t2"), **kw)
    assert every.equals(alone)
    curve_every = sample_size_curve(units, **kw).filter(pl.col("dataset") == "t2")
    curve_alone = sample_size_curve(units.filter(pl.col("dataset") == "t2"), **kw)
    assert curve_every.equals(curve_alone)


@pytest.mark.slow
def test_real_paraphrases_bootstrap_n_star_holds_on_fresh_paraphrases(shared_data):
    """State of What Art BBH: each model's ~170 paraphrase accuracies are the perturbation space.

    40 paraphrases are the recorded set; n* is computed on them, and n* fresh paraphrases are
    drawn from the whole space (200 times) to see how often their mean misses the space's mean
    by more than epsilon. Pool n* is a claim about the recorded 40 only and misses far more
    often than delta; the bootstrap n* (the report's default) keeps the failure rate <= delta.
    Only reached n* are scored (an unreached n* makes no claim).
    """
    eps, delta = 0.02, 0.1
    rng = np.random.default_rng(0)
    fail: dict[str, list[float]] = {"pool": [], "bootstrap": [], "analytic": []}
    sizes: dict[str, list[int]] = {m: [] for m in fail}
    base = shared_data / "state-of-what-art/paraphrases accuracies/BBH"
    for path in sorted(base.glob("*.csv")):
        frame = pl.read_csv(path)
        for col in frame.columns[1:]:
            space = frame[col].to_numpy().astype(float)
            for rep in range(2):
                recorded = space[rng.choice(space.size, 40, replace=False)]
                units = _units({"m": recorded})
                for method in fail:
                    out = required_sample_size(
                        units, epsilon=eps, delta=delta, moments="mean", method=method,
                        n_resamples=2000, seed=rep,
                    )  # fmt: skip
                    n = out.filter(pl.col("moment") == "mean")["n_star"].item()
                    if n is None:
                        continue
                    fresh = [
                        space[rng.choice(space.size, n, replace=False)].mean() for _ in range(200)
                    ]
                    fail[method].append(
                        float(np.mean(np.abs(np.array(fresh) - space.mean()) > eps))
                    )
                    sizes[method].append(n)
    rate = {m: float(np.mean(v)) for m, v in fail.items()}
    print(
        "fresh-paraphrase failure rate (reached n*): "
        + ", ".join(
            f"{m} {rate[m]:.3f} (n = {len(fail[m])}, median n* {np.median(sizes[m]):g})"
            for m in fail
        )
    )
    assert rate["bootstrap"] <= delta
    assert rate["pool"] > 2 * rate["bootstrap"]


def test_groups_on_threads_give_the_same_tables_as_one_thread(monkeypatch):
    # the groups' curves run on threads (parallel_map); each group draws from its own seeded
    # generator, so the tables must be the same bit for bit on one thread and on four
    import evalstats._threads as threads
    from evalstats.resampling import _CURVES

    units = unit_table(n_models=3, n_items=40, n_variants=25, n_datasets=3, seed=4)
    monkeypatch.setattr(threads, "PARALLEL_MIN_WORK", 0)
    out = {}
    for n in ("1", "4"):
        monkeypatch.setenv("EVALSTATS_THREADS", n)
        _CURVES.clear()  # computed again, not read from the cache
        out[n] = (
            required_sample_size(units, method="bootstrap", n_resamples=500, seed=3),
            sample_size_curve(units, method="pool", n_resamples=500, seed=3),
        )
    assert threads.usable_cores() == 4
    assert out["1"][0].equals(out["4"][0])
    assert out["1"][1].equals(out["4"][1])


# --- the variance's default tolerance on fresh draws (issue 30) ---------------------------------


def _variance_guarantee(n_reps, n_resamples, seed, sigma=0.05, n=80, eps=0.01, delta=0.1):
    """P(|variance of n* fresh variants - sigma^2| > 2 sigma eps) with the default tolerance.

    The default tolerates 2 x sd x 0.01 with the sd estimated from the recorded variants; the
    failure is measured against the tolerance the user means, 2 x sigma x 0.01 (Monte Carlo over
    400 fresh sets of n* variants per replicate). Unreached n* make no claim and are not scored.
    """
    rng = np.random.default_rng(seed)
    target = 2 * sigma * eps
    fails = []
    for rep in range(n_reps):
        x = rng.normal(0.6, sigma, size=n)
        out = required_sample_size(
            _units({"m": x}), delta=delta, moments="variance", n_resamples=n_resamples, seed=rep
        ).filter(pl.col("moment") == "variance")
        row = out.row(0, named=True)
        assert row["epsilon"] == pytest.approx(2 * float(np.std(x)) * eps)
        if row["n_star"] is None:
            continue
        draws = rng.normal(0.6, sigma, size=(400, row["n_star"]))
        fails.append(float(np.mean(np.abs(draws.var(axis=1) - sigma**2) > target)))
    return float(np.mean(fails)), len(fails)


def test_default_variance_tolerance_keeps_the_guarantee_short():
    rate, reached = _variance_guarantee(n_reps=40, n_resamples=500, seed=1)
    assert reached >= 30
    assert rate <= 0.1 + 3 / math.sqrt(reached) * 0.05  # delta, as the mean's test


@pytest.mark.slow
def test_default_variance_tolerance_keeps_the_guarantee_full():
    """Measured: 0.065 over 983 reached n* of 1,000 (the oracle tolerance 2 sigma eps: 0.079)."""
    rate, reached = _variance_guarantee(n_reps=1000, n_resamples=2000, seed=2)
    print(f"variance n*, default tolerance: P(fail) {rate:.4f} over {reached} reached n*")
    assert rate <= 0.1
