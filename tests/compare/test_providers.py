"""Provider audit: planted error rates are recovered; the two policies differ by the error share."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from numpy.testing import assert_allclose

from evalstats.compare import provider_audit
from evalstats.errors import SchemaError
from evalstats.simulate import observations

RATES = {
    "fast": {"api_error": 0.01, "empty": 0.02},
    "slow": {"api_error": 0.05, "truncated": 0.03, "timeout": 0.02},
}


@pytest.fixture(scope="module")
def obs():
    return observations(
        n_models=2,
        n_items=200,
        n_variants=10,
        providers=("fast", "slow"),
        provider_effects={"slow": -0.03},
        error_rates=RATES,
        latency=True,
        seed=21,
    )


@pytest.fixture(scope="module")
def audit(obs):
    return provider_audit(obs, n_resamples=999)


def test_recovers_planted_error_rates(audit):
    """Each planted rate lies within 4 binomial SEs of the estimate (2,000 calls per cell)."""
    for prov, rates in RATES.items():
        for cat in ("api_error", "empty", "truncated", "timeout"):
            truth = rates.get(cat, 0.0)
            got = audit.errors.filter(provider=prov, category=cat)
            assert got.height == 2
            for r in got.iter_rows(named=True):
                se = np.sqrt(max(truth, 1e-3) * (1 - truth) / r["n_calls"])
                assert abs(r["rate"] - truth) <= 4 * se, (prov, cat, r["rate"])
        anyrate = audit.errors.filter(provider=prov, category="any")["rate"].to_numpy()
        assert_allclose(anyrate, sum(rates.values()), atol=4 * np.sqrt(0.1 * 0.9 / 2000))


def test_policies_differ_exactly_by_error_share(audit):
    s = audit.scores.pivot(on="policy", index=["model", "provider", "error_share"], values="mean")
    assert_allclose(
        s["errors_as_failures"], s["errors_excluded"] * (1 - s["error_share"]), rtol=1e-12
    )


def test_scores_match_direct_computation(obs, audit):
    sub = obs.filter(model="m0", provider="slow")
    fail = sub.select(
        pl.when(pl.col("error").is_null()).then(pl.col("score")).otherwise(0.0).mean()
    ).item()
    excl = sub.filter(pl.col("error").is_null())["score"].mean()
    row = audit.scores.filter(model="m0", provider="slow")
    assert_allclose(row.filter(policy="errors_as_failures")["mean"], fail, rtol=1e-12)
    assert_allclose(row.filter(policy="errors_excluded")["mean"], excl, rtol=1e-12)
    assert (row["ci_low"] < row["mean"]).all() and (row["mean"] < row["ci_high"]).all()


def test_provider_differences_paired_on_items(audit):
    d = audit.differences.filter(policy="errors_as_failures")
    assert d.height == 2 and (d["n"] == 200).all()
    # slow is worse by its extra errors (~0.07 of calls) plus 3 points: detected for both models
    assert (d["ci_low"] > 0).all()
    assert (d["provider_a"] == "fast").all()


def test_latency_and_tail_quality(obs, audit):
    lat = audit.latency.filter(model="m0", provider="slow").row(0, named=True)
    t = obs.filter(model="m0", provider="slow")["latency_s"]
    assert_allclose(lat["mean"], t.mean(), rtol=1e-12)
    assert lat["p99"] == pytest.approx(60.0)  # timeouts are recorded at 60 s
    tq = audit.tail_quality.filter(model="m0", provider="slow")
    q = tq["quality"].to_numpy()
    assert np.all(np.diff(q) >= 0) and q[0] == 0.0
    final = audit.scores.filter(model="m0", provider="slow", policy="errors_as_failures")
    assert_allclose(q[-1], final["mean"].item(), rtol=1e-12)


def test_without_latency_or_errors_frames_are_empty_but_typed():
    obs = observations(n_models=1, n_items=20, n_variants=2, providers=("a", "b"), seed=0)
    audit = provider_audit(obs, n_resamples=99)
    assert audit.latency.height == 0 and "p99" in audit.latency.columns
    assert audit.errors["rate"].to_list() == [0.0, 0.0]
    s = audit.scores.pivot(on="policy", index="provider", values="mean")
    assert_allclose(s["errors_as_failures"], s["errors_excluded"], rtol=1e-12)


def test_missing_provider_column_names_it():
    obs = observations(n_models=1, n_items=5, n_variants=1, seed=0)
    with pytest.raises(SchemaError, match="provider column 'provider'"):
        provider_audit(obs)


def test_errored_calls_without_a_score_are_counted(tmp_path):
    """A dump whose errored calls carry no score: the audit counts them (it used to see none)."""
    from evalstats.cli import main

    dump = pl.DataFrame(
        {
            "model": ["m"] * 8,
            "provider": ["a"] * 4 + ["b"] * 4,
            "item": ["1", "2", "3", "4"] * 2,
            "score": [1.0, 1.0, None, None, 1.0, 0.0, 1.0, 0.0],
            "error": ["", "", "429 Too Many Requests", "503 Service Unavailable"] + [""] * 4,
        }
    )
    path = tmp_path / "dump.csv"
    dump.write_csv(path)
    from evalstats.io import read_table

    res = provider_audit(read_table(path).observations, n_resamples=99)
    rates = res.errors.filter(pl.col("category") == "any").select("provider", "n_errors")
    assert rates.rows() == [("a", 2), ("b", 0)]
    s = res.scores.filter(pl.col("provider") == "a").sort("policy")
    assert s["mean"].to_list() == pytest.approx([0.5, 1.0])  # as failures, excluded
    out = tmp_path / "errors.csv"
    assert main(["providers", str(path), "--table", "errors", "--out", str(out)]) == 0
    cli = pl.read_csv(out).filter(pl.col("category") == "any")
    assert cli.select("provider", "n_errors").rows() == [("a", 2), ("b", 0)]


def test_a_provider_whose_every_call_failed_is_named_so_and_raw_error_text_is_classed():
    """Seven items are too few for a paired test; a provider that never answered is a finding.

    The shape of a real dump (a judge called under four settings, one refused with HTTP 400):
    a hand-built table keeps the raw error text, which the audit classes as the loaders do.
    """
    rows = []
    for item in range(7):
        for run in range(10):
            rows.append(("ref", str(item), run, float((item + run) % 2), None))
            rows.append(("gone", str(item), run, None, "Error code: 400 - invalid_request_error"))
    obs = pl.DataFrame(
        rows, schema=["provider", "item", "run", "score", "error"], orient="row"
    ).with_columns(pl.lit("judge").alias("model"), pl.lit("d").alias("dataset"))
    res = provider_audit(obs, reference="ref", n_resamples=99)
    row = res.versus.filter(pl.col("provider") == "gone").row(0, named=True)
    assert row["all_failed"] and row["verdict"] == "every call failed (errors)"
    err = res.errors.filter(pl.col("provider") == "gone", pl.col("n_errors") > 0)
    assert dict(err.select("category", "n_errors").rows()) == {"any": 70, "not_found": 70}


def test_settings_checked_by_default_are_few_level_factors():
    """A factor of 25 levels (a prompt id) is not checked unless named; a 2-level one is."""
    n = 50
    obs = pl.DataFrame(
        {
            "model": ["m"] * (4 * n),
            "dataset": ["d"] * (4 * n),
            "provider": ["a", "b"] * (2 * n),
            "item": [str(i // 4) for i in range(4 * n)],
            "effort": (["low"] * 2 + ["high"] * 2) * n,
            "prompt_id": [f"p{(i // 4) % 25}" for i in range(4 * n)],
            "answer": ["A"] * (4 * n),
            "score": [1.0] * (4 * n),
        }
    )
    res = provider_audit(obs, n_resamples=99)
    assert set(res.settings["setting"]) == {"effort"}
    assert res.settings["no_effect"].all()
    res = provider_audit(obs, settings=("effort",), n_resamples=99)
    assert set(res.settings["setting"]) == {"effort"}
    res = provider_audit(obs, settings=(), n_resamples=99)
    assert res.settings.height == 0
    with pytest.raises(SchemaError, match="`settings` names 'nope'"):
        provider_audit(obs, settings=("nope",))


def test_templates_are_compared_at_each_temperature_not_pooled_over_unequal_ones():
    """A setting that varies within the groups of two or more compared levels splits them: 'b'
    alone also ran at temperature 1.6, where it fails; pooled, its score mixed that level in."""
    rng = np.random.default_rng(0)
    rows = []
    for template, temps in (("a", (0.0, 0.7)), ("b", (0.0, 0.7, 1.6))):
        for t in temps:
            for i in range(60):
                p = 0.1 if t == 1.6 else 0.7
                rows.append(
                    {"model": "m", "item": f"q{i}", "template": template, "temperature": t,
                     "score": float(rng.random() < p)}
                )  # fmt: skip
    table = pl.DataFrame(rows)
    audit = provider_audit(table, provider="template", n_resamples=99)
    assert audit.by == ("model", "metric", "temperature")
    pol = audit.policies
    assert pol.height == 5  # (template, temperature) pairs, never pooled
    hand = table.group_by("template", "temperature").agg(pl.col("score").mean())
    got = pol.join(hand, on=["template", "temperature"])
    assert_allclose(got["as_failures"], got["score"])
    # given explicitly, `by` pools on purpose
    pooled = provider_audit(table, provider="template", by=("model", "metric"), n_resamples=99)
    assert pooled.policies.height == 2


def test_degenerate_interval_warnings_name_their_model_and_policy():
    """A real MBSE report read "constant scores: cluster-robust SE is 0; NaN." and "interval of
    0 score(s) is undefined" with no word of which model or which scoring policy."""
    import warnings

    from evalstats.errors import DegenerateDataWarning

    obs = observations(
        n_models=2, n_items=30, n_variants=1, providers=("p",),
        error_rates={"p": {"timeout": 0.1}}, seed=0,
    ).drop("provider")  # fmt: skip
    obs = obs.with_columns(  # m1 errored on every call
        error=pl.when(pl.col("model") == "m1").then(pl.lit("api_error")).otherwise("error")
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        provider_audit(obs, provider="model", by=(), n_resamples=99, seed=0)
    said = [str(w.message) for w in caught if issubclass(w.category, DegenerateDataWarning)]
    assert said and all(m.startswith("model='m1' (errors ") for m in said), said
    assert any("(errors excluded): interval of 0 score(s)" in m for m in said), said


def test_a_model_that_failed_every_call_scores_0_with_an_exact_interval():
    """A real MBSE report gave the models that errored on every call (59 tasks) a NaN interval
    ("constant scores: cluster-robust SE is 0"). Scored as failures they sit at the metric's
    lower bound on every item: the interval is the exact one over the items, the
    Clopper-Pearson bound of 0 successes (statsmodels), valid for any scores on [0, 1]."""
    import warnings

    from statsmodels.stats.proportion import proportion_confint

    from evalstats.errors import DegenerateDataWarning

    rows = []
    for item in range(30):
        for run in range(3):
            rows.append(("ok", str(item), run, float((item + run) % 3 > 0), None))
            rows.append(("down", str(item), run, None, "api_error"))
    obs = pl.DataFrame(
        rows, schema=["model", "item", "run", "score", "error"], orient="row"
    ).with_columns(pl.lit("d").alias("dataset"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = provider_audit(obs, provider="model", by=(), n_resamples=99, seed=0)
    row = res.scores.filter(pl.col("model") == "down", pl.col("policy") == "errors_as_failures")
    row = row.row(0, named=True)
    _, upper = proportion_confint(0, 30, alpha=0.05, method="beta")  # 30 items, the clusters
    assert row["mean"] == 0.0 and row["ci_low"] == 0.0
    assert row["ci_high"] == pytest.approx(upper, rel=1e-12)
    said = [str(w.message) for w in caught if issubclass(w.category, DegenerateDataWarning)]
    assert not any("cluster-robust SE is 0" in m for m in said), said
