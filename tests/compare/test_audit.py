"""Conclusion-reversal audit and subset rankings on planted simulations."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from numpy.testing import assert_allclose
from scipy import stats

from evalstats.aggregate import to_units
from evalstats.compare import parse_claim, reversal_audit, subset_rankings
from evalstats.errors import ParameterError, SchemaError
from evalstats.simulate import observations, unit_table

FACTORS = {
    "template": {"plain": 0.0, "qa": 0.02, "mcq": -0.03, "expert": 0.01},
    "shots": {0: 0.0, 5: 0.06},
    "cot": {False: 0.0, True: 0.03},
    "enumerator": {"letters": 0.0, "numbers": 0.0},
}
DEFAULT = {"template": "plain", "shots": 0, "cot": False, "enumerator": "letters"}


def _obs(plant: bool, seed: int):
    """32 configurations, 400 items; the plant makes m1's default 25 points better."""
    effects = {"m1": {"template": {"plain": 0.25}}} if plant else None
    return observations(
        n_models=3,
        n_items=400,
        n_variants=32,
        model_accuracy=(0.5, 0.6, 0.75),
        prompt_sd=0.01,
        factors=FACTORS,
        model_effects=effects,
        seed=seed,
    )


def _units(plant: bool, seed: int):
    return to_units(_obs(plant, seed)).collect()


def test_planted_default_reversal_is_reported():
    audit = reversal_audit(_obs(True, 0), default=DEFAULT, claim="m1>m2")
    pair = audit.pairs.filter(model_a="m1", model_b="m2").row(0, named=True)
    assert pair["reversal"] and pair["default_difference"] > 0 and pair["ci_high"] < 0
    assert pair["claim"] == "m1>m2" and pair["claim_status"] == "contradicted"
    assert audit.n_reversals == 1
    assert pair["method"] == "item_interval" and pair["default_ci_low"] > 0
    m1 = audit.models.filter(model="m1").row(0, named=True)
    assert (
        m1["outside_interval"] and m1["percentile"] > 75
    )  # 8 of 32 configurations share the boost


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_no_reversal_without_plant(seed):
    audit = reversal_audit(_obs(False, seed), default=DEFAULT)
    assert audit.n_reversals == 0


@pytest.mark.slow
def test_reversal_detection_over_seeds():
    """20 seeds: the plant is reported in >= 85% of them (18/20 measured); never without it."""
    found = [reversal_audit(_obs(True, s), default=DEFAULT).n_reversals for s in range(20)]
    false = [reversal_audit(_obs(False, s), default=DEFAULT).n_reversals for s in range(20)]
    assert sum(found) >= 17 and max(found) == 1
    assert sum(false) == 0


def test_unit_level_input_uses_the_sign_rule():
    audit = reversal_audit(_units(True, 0), default=DEFAULT)
    assert (audit.pairs["method"] == "sign").all()
    assert (
        audit.pairs["default_ci_low"].is_null().all()
        or audit.pairs["default_ci_low"].is_nan().all()
    )
    assert audit.pairs.filter(model_a="m1", model_b="m2")["reversal"].item()


def test_default_matching_strings_from_cli_and_free_factors():
    units = _units(True, 0)
    a = reversal_audit(
        units, default={"template": "plain", "shots": "0", "cot": "false", "enumerator": "letters"}
    )
    b = reversal_audit(units, default=DEFAULT)
    assert a.pairs.equals(b.pairs)
    loose = reversal_audit(units, default={"template": "plain"})
    assert (loose.models["n_default"] == 8).all()
    x = units.filter(model="m0", template="plain")["score"].mean()
    assert_allclose(loose.models.filter(model="m0")["default_score"], x, rtol=1e-12)


def test_model_rows_match_direct_formulas():
    units = _units(True, 1)
    audit = reversal_audit(units, default=DEFAULT)
    x = units.filter(model="m2")["score"].to_numpy()
    x0 = units.filter(model="m2", **DEFAULT)["score"].item()
    row = audit.models.filter(model="m2").row(0, named=True)
    ci = stats.ttest_1samp(x, 0).confidence_interval(0.95)
    assert_allclose([row["ci_low"], row["ci_high"]], [ci.low, ci.high], rtol=1e-12)
    assert_allclose(row["percentile"], stats.percentileofscore(x, x0, kind="mean"), rtol=1e-12)


def test_errors_name_the_problem():
    units = _units(False, 0)
    with pytest.raises(SchemaError, match="`default` names 'prompt'"):
        reversal_audit(units, default={"prompt": "a"})
    with pytest.raises(ParameterError, match="no configuration matches"):
        reversal_audit(units, default={"template": "fancy"})
    with pytest.raises(ParameterError, match="`claim` names model 'gpt'"):
        reversal_audit(units, default=DEFAULT, claim="gpt>m1")
    with pytest.raises(ParameterError, match="'A>B'"):
        parse_claim("m1 = m2")


def test_subset_rankings_kendall_matches_scipy():
    units = unit_table(
        n_models=5,
        n_items=120,
        model_accuracy=(0.5, 0.55, 0.6, 0.65, 0.7),
        factors={"workload": {"original": 0.0, "novel": -0.1}},
        model_effects={"m4": {"workload": {"novel": -0.2}}},
        seed=2,
    )
    r = subset_rankings(units, subset="workload")
    wide = r.ranks.pivot(on="workload", index="model", values="score").sort("model")
    ref = stats.kendalltau(wide["novel"], wide["original"])
    row = r.kendall.row(0, named=True)
    assert (row["subset_a"], row["subset_b"]) == ("novel", "original")
    assert_allclose([row["statistic"], row["pvalue"]], [ref.statistic, ref.pvalue], rtol=1e-12)
    orig = r.ranks.filter(workload="original").sort("model")["rank"].to_list()
    assert orig[-1] == 1.0  # m4 is best on the original workload
    assert r.ranks.filter(workload="novel", model="m4")["rank"].item() > 1
    assert np.all(np.isin(r.ranks["rank"].to_numpy(), np.arange(1, 6)))
    assert isinstance(r.ranks, pl.DataFrame)


def test_a_tie_within_rounding_does_not_contradict():
    """Equal configuration means summed in another order differ by 1e-16: still a tie.

    polars' streaming engine adds a group's floats in the order its threads finish, so a tie
    came out as 0 or -1e-16 from run to run and ``share_contradicting`` with it.
    """
    rows = []
    # m0 - m1 per configuration: +0.1 three times, and 0.3 - (0.1 + 0.2) = -5.6e-17 (a tie)
    for v, (a, b) in enumerate([(0.5, 0.4), (0.6, 0.5), (0.7, 0.6), (0.3, 0.1 + 0.2)]):
        rows += [("m0", f"v{v}", a), ("m1", f"v{v}", b)]
    units = pl.DataFrame(rows, schema=["model", "variant", "score"], orient="row").with_columns(
        dataset=pl.lit("d"), run=pl.lit(0), n_items=pl.lit(100), template=pl.col("variant")
    )
    assert 0.3 - (0.1 + 0.2) < 0
    pair = reversal_audit(units, default={"template": "v0"}).pairs.row(0, named=True)
    assert pair["share_contradicting"] == 0.0
    assert pair["n_configs"] == 4
    assert_allclose(pair["difference"], 0.075, rtol=1e-12)
