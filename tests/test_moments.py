from __future__ import annotations

import itertools
import warnings

import numpy as np
import polars as pl
import pytest
from numpy.testing import assert_allclose
from scipy import stats

from evalstats._kernels import mean_pairwise_abs_diff
from evalstats.errors import DegenerateDataWarning, SchemaError
from evalstats.io.state_of_what_art import read_state_of_what_art
from evalstats.moments import SPREAD_COLUMNS, prompt_spread
from evalstats.simulate import observations, unit_table


def test_prompt_spread_matches_published_state_of_what_art_metrics(shared_data):
    """avg_p, max_p, cps vs the authors' "bbh {AvgP,MaxP,CPS} (no filtering).csv".

    Both read in place from ../shared/data/state-of-what-art (SLAB-NLP/Multi-Prompt-LLM-Evaluation,
    CDLA-Permissive-2.0): the paraphrase accuracies of all 15 BBH tasks and the authors'
    published tables in ``metric results/``. Tolerance 1e-9: the published values are float64
    means of the same two-decimal accuracies.
    """
    obs, _ = read_state_of_what_art(shared_data / "state-of-what-art", metadata=False)
    out = prompt_spread(obs)
    ref_dir = shared_data / "state-of-what-art" / "metric results"
    checked = 0
    for metric, col in (("AvgP", "avg_p"), ("MaxP", "max_p"), ("CPS", "cps")):
        ref = pl.read_csv(ref_dir / f"bbh {metric} (no filtering).csv")
        ref = ref.rename({"task ": "task"})
        ref = (
            ref.with_columns(pl.exclude("benchmark", "task").cast(pl.Float64))
            .unpivot(index=["benchmark", "task"], variable_name="model", value_name="expected")
            .drop_nulls("expected")
        )
        joined = ref.join(
            out, left_on=["model", "task"], right_on=["model", "dataset"], how="inner"
        )
        # every published cell for a model present in the accuracies is checked
        models = set(out["model"])
        assert joined.height == ref.filter(pl.col("model").is_in(models)).height
        assert_allclose(joined[col].to_numpy(), joined["expected"].to_numpy(), rtol=0, atol=1e-9)
        checked += joined.height
    assert checked == 3 * 15 * 11


def test_moments_match_numpy_and_scipy(rng):
    x = rng.beta(5, 3, size=37)
    units = pl.DataFrame(
        {
            "model": "m",
            "dataset": "d",
            "variant": [f"v{i}" for i in range(37)],
            "score": x,
            "n_items": 50,
        }
    )
    r = prompt_spread(units).row(0, named=True)
    assert r["n_variants"] == 37
    assert_allclose(r["mean"], x.mean(), rtol=1e-12)
    assert_allclose(r["variance"], np.var(x), rtol=1e-12)
    assert_allclose(r["variance_unbiased"], np.var(x, ddof=1), rtol=1e-12)
    assert_allclose(r["std"], np.std(x), rtol=1e-12)
    assert_allclose(r["skewness"], stats.skew(x), rtol=1e-10)
    assert_allclose(r["kurtosis"], stats.kurtosis(x), rtol=1e-10)
    for q, name in ((0.05, "q05"), (0.25, "q25"), (0.5, "median"), (0.75, "q75"), (0.95, "q95")):
        assert_allclose(r[name], np.quantile(x, q), rtol=1e-12)
    assert r["spread"] == pytest.approx(x.max() - x.min())
    assert r["cps"] == pytest.approx(x.max() * (1 - (x.max() - x.mean())))
    # unit scores alone cannot tell prompt effects from noise (variants share their items)
    assert r["noise_variance"] is None and r["prompt_variance"] is None
    assert r["pss"] is None


def test_columns_are_fixed_and_sorted():
    out = prompt_spread(unit_table(n_models=3, n_datasets=2, n_items=20, n_variants=5, seed=1))
    assert out.columns == ["model", "dataset", "metric", *SPREAD_COLUMNS]
    assert out.select("model", "dataset").rows() == sorted(out.select("model", "dataset").rows())


def test_pss_equals_brute_force_pairwise_mean():
    obs = observations(n_models=1, n_items=15, n_variants=6, seed=3)
    got = prompt_spread(obs)["pss"].item()
    per_item = []
    for _, g in obs.group_by("item"):
        y = g.sort("variant")["score"].to_numpy()
        diffs = [abs(a - b) for a, b in itertools.combinations(y, 2)]
        per_item.append(np.mean(diffs))
    assert_allclose(got, np.mean(per_item), rtol=1e-12)


def test_pss_is_zero_when_variants_agree_on_every_item():
    obs = pl.DataFrame(
        {
            "model": "m",
            "dataset": "d",
            "item": ["1", "2", "1", "2"],
            "variant": ["a", "a", "b", "b"],
            "score": [1.0, 0.0, 1.0, 0.0],
        }
    )
    assert prompt_spread(obs)["pss"].item() == 0.0


def test_mean_pairwise_abs_diff_kernel_matches_loop(rng):
    y = rng.random(11)
    loop = np.mean([abs(a - b) for a, b in itertools.combinations(y, 2)])
    assert_allclose(mean_pairwise_abs_diff(y), loop, rtol=1e-12)
    assert np.isnan(mean_pairwise_abs_diff(np.array([0.3])))


def test_runs_are_averaged_within_a_variant():
    units = pl.DataFrame(
        {
            "model": "m",
            "dataset": "d",
            "variant": ["a", "a", "b", "b"],
            "run": [0, 1, 0, 1],
            "score": [0.2, 0.4, 0.6, 0.8],
            "n_items": 10,
        }
    )
    r = prompt_spread(units).row(0, named=True)
    assert r["n_variants"] == 2
    assert r["mean"] == pytest.approx(0.5)
    assert r["min"] == pytest.approx(0.3)
    assert r["noise_variance"] is None  # unit input


def test_single_variant_warns_and_gives_nan():
    units = pl.DataFrame({"model": "m", "dataset": "d", "variant": ["a"], "score": [0.5]})
    with pytest.warns(DegenerateDataWarning, match="single variant"):
        r = prompt_spread(units).row(0, named=True)
    assert np.isnan(r["variance_unbiased"]) and r["variance"] == 0.0


def test_unknown_n_items_gives_null_noise():
    units = pl.DataFrame({"model": "m", "dataset": "d", "variant": ["a", "b"], "score": [0.5, 0.7]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = prompt_spread(units).row(0, named=True)
    assert r["noise_variance"] is None and r["prompt_variance"] is None


def test_invariant_to_row_order():
    units = unit_table(n_models=2, n_items=20, n_variants=9, seed=5)
    a = prompt_spread(units)
    b = prompt_spread(units.sample(fraction=1.0, shuffle=True, seed=1))
    assert_allclose(
        a.drop("model", "dataset", "metric").to_numpy(),
        b.drop("model", "dataset", "metric").to_numpy(),
        rtol=1e-12,
    )


def test_by_names_a_missing_column():
    with pytest.raises(SchemaError, match="`by` names 'prompt'"):
        prompt_spread(
            unit_table(n_models=1, n_items=5, n_variants=2, seed=0), by=("model", "prompt")
        )


def test_cli_moments_json_and_plot(shared_data, tmp_path, capsys):
    import json

    from evalstats.cli import main

    f = shared_data / "state-of-what-art/paraphrases accuracies/BBH/snarks.csv"
    png = tmp_path / "box.png"
    assert main(["moments", str(f), "--json", "--plot", str(png)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["command"] == "moments" and len(doc["rows"]) == 11
    assert list(doc["rows"][0])[:4] == ["model", "dataset", "metric", "n_variants"]
    assert png.stat().st_size > 0


def test_cli_moments_bad_by_exits_2(shared_data, capsys):
    from evalstats.cli import main

    f = shared_data / "state-of-what-art/paraphrases accuracies/BBH/snarks.csv"
    assert main(["moments", str(f), "--by", "model,prompt"]) == 2
    err = capsys.readouterr().err
    assert "evalstats: error: `--by` names 'prompt'" in err
    assert "Traceback" not in err


def test_prompt_spread_is_bitwise_identical_on_repeated_calls():
    """PSS averages items in a fixed order: hash grouping alone moved its last bit."""
    obs = observations(n_models=3, n_datasets=2, n_items=20, n_variants=8, n_runs=3, seed=1)
    first = prompt_spread(obs)
    for _ in range(15):
        assert prompt_spread(obs).equals(first)


# --- issue 18, point 2: noise from the data's own structure -----------------------------------


def _shared_item_obs(rng, *, n_items, n_variants, prompt_sd=0.0, n_runs=1, model="m"):
    """0/1 scores: every variant answers the same items (as in State of What Art, DOVE).

    p(item, variant) = p_item + u_variant, p_item ~ Beta(0.4, 0.4) (most items nearly always
    right or wrong, as on real benchmarks), u ~ N(0, prompt_sd). With prompt_sd = 0 the
    variants are exchangeable draws of each item's answer: no prompt variance at all. With a
    planted prompt effect p_item is squeezed into [0.1, 0.9] so that p stays a probability
    (clipping would change the effect): the true prompt variance is then prompt_sd².
    """
    p_item = rng.beta(0.4, 0.4, n_items)
    if prompt_sd:
        p_item = 0.1 + 0.8 * p_item
    u = rng.normal(0.0, prompt_sd, n_variants)
    p = np.clip(p_item[:, None] + u[None, :], 0.0, 1.0)
    y = (rng.random((n_runs, n_items, n_variants)) < p[None]).astype(float)
    r, i, v = np.meshgrid(range(n_runs), range(n_items), range(n_variants), indexing="ij")
    frame = pl.DataFrame(
        {
            "model": model,
            "dataset": "d",
            "item": [f"q{k:04d}" for k in i.ravel()],
            "variant": [f"v{k:03d}" for k in v.ravel()],
            "run": r.ravel(),
            "score": y.ravel(),
        }
    )
    true_noise = float(np.sum(p * (1 - p), axis=0).mean() / n_items**2 / n_runs)
    return frame, prompt_sd**2, true_noise


def test_noise_is_the_item_level_binomial_variance_not_the_unit_binomial(rng):
    """Shared items, no prompt effect: the noise is Σ p_i(1 − p_i)/n², not x(1 − x)/n.

    The unit formula treats each variant as a fresh sample of items and overstated the noise
    several-fold, pushing prompt_variance to 0; the item x variant interaction gets it right.
    """
    obs, _, true_noise = _shared_item_obs(rng, n_items=200, n_variants=30)
    r = prompt_spread(obs).row(0, named=True)
    x = r["mean"]
    assert x * (1 - x) / 200 > 2 * true_noise  # about what the old estimator reported
    assert r["noise_variance"] == pytest.approx(true_noise, rel=0.15)
    assert r["prompt_variance_low"] <= 0.0 <= r["prompt_variance_high"]
    assert r["confidence_level"] == 0.95


def test_noise_and_prompt_variance_equal_a_two_way_anova(rng):
    """MS_iv and MS_v from statsmodels' OLS of score ~ C(item) + C(variant) (runs averaged)."""
    import statsmodels.formula.api as smf
    from statsmodels.stats.anova import anova_lm

    obs, _, _ = _shared_item_obs(rng, n_items=25, n_variants=6, prompt_sd=0.1, n_runs=2)
    r = prompt_spread(obs).row(0, named=True)
    cells = obs.group_by("item", "variant").agg(pl.col("score").mean()).to_pandas()
    table = anova_lm(smf.ols("score ~ C(item) + C(variant)", data=cells).fit())
    ms_v, ms_iv = table.loc["C(variant)", "mean_sq"], table.loc["Residual", "mean_sq"]
    assert_allclose(r["noise_variance"], ms_iv / 25, rtol=1e-10)
    assert_allclose(r["prompt_variance"], (ms_v - ms_iv) / 25, rtol=1e-10)
    assert r["prompt_variance_low"] <= r["prompt_variance"] <= r["prompt_variance_high"]


def _prompt_variance_coverage(n_sims, prompt_sd, seed):
    rng = np.random.default_rng(seed)
    est, cover, truth = [], [], []
    for _ in range(n_sims):
        obs, true_prompt, _ = _shared_item_obs(rng, n_items=100, n_variants=20, prompt_sd=prompt_sd)
        r = prompt_spread(obs).row(0, named=True)
        est.append(r["prompt_variance"] - true_prompt)
        cover.append(r["prompt_variance_low"] <= true_prompt <= r["prompt_variance_high"])
        truth.append(true_prompt)
    return np.array(est), float(np.mean(cover)), float(np.mean(truth))


@pytest.mark.parametrize("prompt_sd", [0.0, 0.03])
def test_prompt_variance_unbiased_and_covered_short(prompt_sd):
    err, cover, truth = _prompt_variance_coverage(150, prompt_sd, seed=31)
    assert abs(err.mean()) <= 4 * err.std() / np.sqrt(err.size)
    assert 0.88 <= cover <= 0.995


@pytest.mark.slow
@pytest.mark.parametrize("prompt_sd", [0.0, 0.03])
def test_prompt_variance_unbiased_and_covered_full(prompt_sd):
    err, cover, truth = _prompt_variance_coverage(2000, prompt_sd, seed=32)
    print(
        f"prompt_sd={prompt_sd}: true prompt variance {truth:.6f}, bias {err.mean():.2e} "
        f"(MC se {err.std() / np.sqrt(err.size):.1e}), coverage {cover:.4f}"
    )
    assert abs(err.mean()) <= 3 * err.std() / np.sqrt(err.size)
    assert 0.935 <= cover <= 0.965


def test_variant_scores_are_built_from_counts_so_equal_fractions_tie_exactly():
    """Point 3: runs 1/10 and 2/10 average to 3/20; as a float mean, 0.15000000000000002."""
    from evalstats.moments import variant_scores

    units = pl.DataFrame(
        {
            "model": "m",
            "dataset": "d",
            "variant": ["a", "a", "b", "c", "c"],
            "run": [0, 1, 0, 0, 1],
            "score": [0.1, 0.2, 0.15, 0.25, 0.3],
            "n_items": [10, 10, 20, 20, 20],
        }
    )
    assert (0.1 + 0.2) / 2 != 0.15
    got = dict(variant_scores(units).select("variant", "score").rows())
    assert got == {"a": 0.15, "b": 0.15, "c": 11 / 40}
    # not counts (BLEU-like scores): the plain mean
    frac = units.with_columns(pl.Series("score", [0.1234, 0.2, 0.15, 0.25, 0.3]))
    assert variant_scores(frac).filter(pl.col("variant") == "a")["score"].item() == (
        (0.1234 + 0.2) / 2
    )


def test_mls_interval_reduces_to_the_chi_square_interval_without_a_second_mean_square():
    from scipy import stats

    from evalstats._kernels import mls_interval

    lo, hi = mls_interval(0.004, 29, 0.0, 1000, 0.9)
    assert_allclose(lo, 0.004 * 29 / stats.chi2.ppf(0.95, 29), rtol=1e-10)
    assert_allclose(hi, 0.004 * 29 / stats.chi2.ppf(0.05, 29), rtol=1e-10)
