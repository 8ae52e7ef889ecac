"""Issue 15 guards in the analysis modules, each on a small real-shaped fixture.

- n* is vacuous where the moment itself is below epsilon (State of What Art paraphrases,
  ../shared/data/state-of-what-art, CDLA-Permissive-2.0);
- constant inputs are detected with a tolerance (llm-stability fine-tuned runs, Apache-2.0,
  ../shared/data/llm-stability/fine_tuned_data.tgz: gpt-35-turbo on navigate scores 0.96 in all
  ten runs);
- prompt variants are prompt dimensions, decoding settings are held fixed;
- factors aliased with the model or another factor are left out of ANOVA and attribution, and a
  cross-validated R² <= 0 is flagged (llm-stability: ``top_p_k`` differs by model only);
- Friedman names the blocks it drops.
"""

from __future__ import annotations

import warnings

import numpy as np
import polars as pl
import pytest

from evalstats._kernels import is_constant
from evalstats.aggregate import to_units
from evalstats.attribution import attribute, factor_anova
from evalstats.compare import friedman_nemenyi
from evalstats.correlation import correlation_matrix
from evalstats.errors import (
    DegenerateDataWarning,
    DesignWarning,
    InsufficientDataError,
    SchemaError,
)
from evalstats.factors import factor_role, held_factors
from evalstats.io import read
from evalstats.moments import prompt_spread
from evalstats.normality import run_normality
from evalstats.resampling import (
    reference_model_check,
    required_sample_size,
    sample_size_uncertainty,
)
from tests.conftest import needs_shared_data, shared

#: State of What Art paraphrase accuracies, all 15 BBH tasks, read in place.
SOWA = shared("state-of-what-art", "paraphrases accuracies", "BBH")


@pytest.fixture(scope="module")
def sowa(shared_data) -> pl.DataFrame:
    """Three BBH tasks x 11 models x 136-188 instruction paraphrases (unit level)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        obs = read(SOWA).observations.collect()
    return obs.filter(pl.col("dataset").is_in(["snarks", "navigate", "hyperbaton"]))


@pytest.fixture(scope="module")
def fine_tuned(fine_tuned_data) -> pl.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return read(fine_tuned_data / "runs").observations.collect()


# --- n* vacuity ---------------------------------------------------------------------------------


def test_vacuous_nstar_is_flagged_on_every_nstar_result(sowa):
    """Variance over paraphrases below epsilon = 0.01 in every group: n* = 1 is vacuous there."""
    small = sowa.filter(pl.col("model").is_in(["vicuna-13b", "falcon-7b-instruct"]))
    var = small.group_by("model", "dataset").agg(pl.col("score").var(ddof=0).alias("v"))
    assert (var["v"] < 0.01).all()  # the premise, computed independently
    # the paper's one epsilon for both moments (the default before issue 30)
    nstar = required_sample_size(small, moments="variance", n_resamples=200, epsilon=0.01)
    rows = nstar.filter(pl.col("moment") == "variance")
    assert rows["vacuous"].all()
    unc = sample_size_uncertainty(
        small, moments="variance", n_bootstrap=3, n_resamples=50, epsilon=0.01
    )
    assert "vacuous" in unc.columns and unc["vacuous"].all()
    ref = reference_model_check(
        small, reference_model="vicuna-13b", moments="variance", n_resamples=50, epsilon=0.01
    )
    assert "vacuous" in ref.columns and ref["vacuous"].all()


def test_the_default_variance_tolerance_is_on_the_sd_scale(sowa):
    """Issue 30: 0.01 on the variance was vacuous where every variance is below 0.01.

    The default tolerates 2 x sd x 0.01 (a change of about 0.01 in the sd); it is vacuous only
    where the sd itself is within 0.02 of 0.
    """
    small = sowa.filter(pl.col("model").is_in(["vicuna-13b", "falcon-7b-instruct"]))
    sd = small.group_by("model", "dataset").agg(pl.col("score").std(ddof=0).alias("sd"))
    rows = required_sample_size(small, moments="variance", n_resamples=200).filter(
        pl.col("moment") == "variance"
    )
    rows = rows.join(sd, on=["model", "dataset"])
    assert np.allclose(rows["epsilon"].to_numpy(), 2 * 0.01 * rows["sd"].to_numpy())
    assert (rows["vacuous"] == (rows["sd"] <= 0.02)).all()
    assert not rows["vacuous"].all()  # informative somewhere now
    assert rows["epsilon_rule"].str.contains("sd scale").all()


def test_mean_nstar_is_not_vacuous(sowa):
    small = sowa.filter(pl.col("model") == "vicuna-13b")
    nstar = required_sample_size(small, moments="mean", n_resamples=200)
    assert not nstar["vacuous"].any()


# --- constant inputs ----------------------------------------------------------------------------


def test_is_constant_uses_a_relative_tolerance():
    x = np.array([0.96] * 9 + [np.nextafter(0.96, 1.0)])
    assert np.std(x, ddof=1) > 0  # what `sd > 0` saw
    assert is_constant(x)
    assert not is_constant(np.array([0.96] * 9 + [0.97]))
    assert is_constant(np.zeros(5))
    assert not is_constant(np.array([1e-6, 2e-6]))  # small but real differences
    assert is_constant(np.array([0.5, 0.5 + 1e-12]), scale=1.0)


def test_equal_run_accuracies_are_not_tested_for_normality(fine_tuned):
    """gpt-35-turbo on navigate: 240/250 correct in all ten runs (0.96, sd 2e-16 by rounding)."""
    units = to_units(fine_tuned).collect()
    nav = units.filter((pl.col("model") == "gpt-35-turbo") & (pl.col("dataset") == "navigate"))
    assert nav.height == 10
    assert np.allclose(nav["score"].to_numpy(), 0.96, rtol=0, atol=1e-12)
    with pytest.warns(DegenerateDataWarning, match="equal up to rounding"):
        out = run_normality(nav, method="all")
    assert out["statistic"].is_nan().all() and out["pvalue"].is_nan().all()
    assert (out["sd"] == 0.0).all()
    # the same values as float noise around 0.96 (what `sd > 0` let through)
    noisy = nav.with_columns(
        pl.Series("score", [0.96] * 9 + [float(np.nextafter(0.96, 1.0))], dtype=pl.Float64)
    )
    with pytest.warns(DegenerateDataWarning):
        out = run_normality(noisy, method="lilliefors")
    assert out["pvalue"].is_nan().all()


def test_constant_column_gives_nan_correlation():
    t = pl.DataFrame({"a": [0.96, 0.96, float(np.nextafter(0.96, 1.0)), 0.96], "b": [1, 2, 3, 4]})
    with pytest.warns(DegenerateDataWarning, match="constant"):
        out = correlation_matrix(t, columns=["a", "b"], n_resamples=0)
    assert out["statistic"].is_nan().all()


def test_constant_variant_scores_have_zero_variance_and_nan_shape():
    u = pl.DataFrame(
        {
            "model": ["m"] * 4,
            "dataset": ["d"] * 4,
            "variant": ["a", "b", "c", "d"],
            "run": [0] * 4,
            "score": [0.7 - 0.5, 0.4 - 0.2, 0.2, 0.2],  # 0.19999999999999996 and 0.2
        }
    )
    with pytest.warns(DegenerateDataWarning, match="equal up to rounding") as caught:
        out = prompt_spread(u)
    assert out["variance"][0] == 0.0 and out["spread"][0] == 0.0
    assert np.isnan(out["skewness"][0]) and np.isnan(out["kurtosis"][0])
    # the warning names the group it is about, as the report lists it without the table
    assert "(first: model='m', dataset='d'" in str(caught[0].message)


def test_relative_epsilon_warning_names_its_group():
    """A group whose prompt variants all score alike has no sd to take a share of; among many
    groups, the warning says which one."""
    from evalstats.resampling import required_sample_size

    u = pl.DataFrame(
        {
            "model": ["flat"] * 4 + ["varied"] * 4,
            "dataset": ["d"] * 8,
            "variant": ["a", "b", "c", "d"] * 2,
            "run": [0] * 8,
            "score": [0.5] * 4 + [0.2, 0.4, 0.6, 0.8],
        }
    )
    with pytest.warns(DegenerateDataWarning, match="relative epsilon is undefined") as caught:
        required_sample_size(
            u, relative_epsilon=0.1, relative_to="sd", moments="mean", n_resamples=50
        )
    said = [str(w.message) for w in caught if "relative epsilon" in str(w.message)]
    assert said == [
        "model='flat', dataset='d', metric='score': the across-variant standard deviation is "
        "0.0, so a relative epsilon is undefined; n* is not reached."
    ]


def test_attribution_on_scores_equal_up_to_rounding_is_nan():
    u = pl.DataFrame(
        {
            "model": ["m"] * 8,
            "dataset": ["d"] * 8,
            "variant": [f"v{i}" for i in range(8)],
            "run": [0] * 8,
            "score": [0.2, 0.7 - 0.5, 0.4 - 0.2, 0.2] * 2,
            "shots": [0, 0, 5, 5] * 2,
        }
    )
    with pytest.warns(DegenerateDataWarning, match="constant"):
        res = attribute(u, factors=["shots"], method="linear", n_null=0, n_folds=2)
    assert np.isnan(res.cv_r_sq)


# --- prompt vs decoding factors -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "role"),
    [
        ("template", "prompt"),
        ("choices_order", "prompt"),
        ("shots", "prompt"),
        ("temperature", "decoding"),
        ("top_p_k", "decoding"),
        ("generation.max_tokens", "decoding"),
        ("presence_penalty", "decoding"),
        ("seed", "decoding"),
        ("provider", "deployment"),
        ("quantization", "deployment"),
        ("method", "other"),
    ],
)
def test_factor_roles(name, role):
    assert factor_role(name) == role


def _with_temperature(sowa: pl.DataFrame) -> pl.DataFrame:
    """One task's paraphrases at two temperatures, the second 20 points lower."""
    base = sowa.filter(pl.col("dataset") == "snarks", pl.col("model") == "vicuna-13b")
    hot = base.with_columns((pl.col("score") * 0.5).alias("score"))
    return pl.concat(
        [
            base.with_columns(pl.lit(0.0).alias("temperature")),
            hot.with_columns(pl.lit(1.0).alias("temperature")),
        ]
    ).with_columns(pl.concat_str("variant", pl.lit("|t="), pl.col("temperature")).alias("variant"))


def test_moments_and_nstar_hold_decoding_settings_fixed(sowa):
    obs = _with_temperature(sowa)
    assert held_factors(obs) == ("temperature",)
    with pytest.warns(DesignWarning, match="temperature"):
        out = prompt_spread(obs)
    assert out["temperature"].to_list() == [0.0, 1.0]
    cold = sowa.filter(pl.col("dataset") == "snarks", pl.col("model") == "vicuna-13b")
    assert out["n_variants"][0] == cold.height
    np.testing.assert_allclose(out["variance"][0], cold["score"].var(ddof=0), rtol=1e-12)
    with pytest.warns(DesignWarning):
        nstar = required_sample_size(obs, moments="mean", n_resamples=100)
    assert set(nstar["temperature"].to_list()) == {0.0, 1.0}
    # the user's word: both dimensions make the variants (the old behaviour)
    mixed = prompt_spread(obs, variant_factors="all")
    assert "temperature" not in mixed.columns and mixed["n_variants"][0] == 2 * cold.height
    assert mixed["variance"][0] > 2 * out["variance"][0]


def test_unknown_variant_factor_is_an_error_naming_the_factor_columns(sowa):
    obs = _with_temperature(sowa)
    with pytest.raises(SchemaError, match=r"'temprature'.*factor columns: .*temperature"):
        prompt_spread(obs, variant_factors=["temprature"])


# --- attribution guards -------------------------------------------------------------------------


def test_factor_aliased_with_the_model_is_left_out(fine_tuned):
    """llm-stability: top_p_k is 0.0 for gpt-35-turbo and 1.0 for gpt-35_OAI (the model)."""
    units = to_units(fine_tuned).collect()
    per_model = units.group_by("model").agg(pl.col("top_p_k").n_unique())
    assert (per_model["top_p_k"] == 1).all() and units["top_p_k"].n_unique() == 2
    with pytest.raises(InsufficientDataError, match="'top_p_k' takes one value per model"):
        factor_anova(units, factors=["top_p_k"], block="model", n_resamples=0)
    with pytest.raises(InsufficientDataError, match="aliased with the model"):
        attribute(units, factors=["top_p_k"], method="linear", n_null=0)


def test_aliased_factor_is_named_and_the_others_estimated(sowa):
    obs = sowa.filter(
        pl.col("model").is_in(["vicuna-13b", "falcon-7b-instruct", "t0pp"]),
        pl.col("dataset").is_in(["snarks", "navigate"]),  # the tasks with paraphrase metadata
    )
    obs = obs.with_columns(
        pl.col("model")
        .replace_strict({"vicuna-13b": "a", "falcon-7b-instruct": "b", "t0pp": "b"})
        .alias("top_p_k"),
        pl.col("dataset").alias("task_copy"),
    )
    with pytest.warns(DesignWarning, match="top_p_k"):
        res = factor_anova(obs, factors=["top_p_k", "method", "task_copy"], n_resamples=0)
    assert set(res.aliased) == {"top_p_k", "task_copy"}
    assert "per dataset" in res.aliased["task_copy"]
    assert res.table["term"].to_list() == ["method", "Residual"]


def test_factor_determined_by_another_factor_is_left_out():
    rng = np.random.default_rng(0)
    template = np.repeat(["a", "b", "c", "d"], 10)
    family = np.where(np.isin(template, ["a", "b"]), "x", "y")
    u = pl.DataFrame(
        {
            "model": ["m"] * 40,
            "dataset": ["d"] * 40,
            "variant": [f"v{i}" for i in range(40)],
            "run": [0] * 40,
            "score": rng.uniform(0.4, 0.6, 40),
            "template": template,
            "family": family,
            "shots": np.tile([0, 5], 20),
        }
    )
    with pytest.warns(DesignWarning, match="'family' is determined by 'template'"):
        res = factor_anova(u, factors=["template", "family", "shots"], n_resamples=0)
    assert list(res.aliased) == ["family"]
    assert "family" not in res.table["term"].to_list()


def test_negative_cross_validated_r_sq_is_flagged():
    rng = np.random.default_rng(3)
    n = 40
    u = pl.DataFrame(
        {
            "model": ["m"] * n,
            "dataset": ["d"] * n,
            "variant": [f"v{i}" for i in range(n)],
            "run": [0] * n,
            "score": rng.normal(0.5, 0.05, n),
            "a": rng.choice(["x", "y", "z"], n),
            "b": rng.choice(["p", "q"], n),
        }
    )
    with pytest.warns(DesignWarning, match=r"cross-validated R² = -"):
        res = attribute(u, factors=["a", "b"], method="linear", n_null=0)
    assert res.cv_r_sq <= 0


# --- Friedman dropped blocks --------------------------------------------------------------------


@needs_shared_data
def test_friedman_names_the_blocks_it_drops():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        obs = read(SOWA).observations.collect()
    gone = ["navigate", "snarks", "hyperbaton"]
    obs = obs.filter(~((pl.col("model") == "vicuna-13b") & pl.col("dataset").is_in(gone)))
    with pytest.warns(DesignWarning, match=r"ranks over 12 of 15 blocks: 3 left out"):
        res = friedman_nemenyi(obs)
    assert res.n_blocks == 12 and res.n_dropped_blocks == 3
    assert sorted(res.dropped_blocks["dataset"].to_list()) == sorted(gone)
    assert set(res.dropped_blocks["missing"].to_list()) == {"vicuna-13b"}
