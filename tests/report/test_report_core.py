"""audit_report: which analyses the columns support, parameters, seeds, and no own statistics."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from evalstats.attribution import factor_anova
from evalstats.compare import compare_models, provider_audit
from evalstats.errors import ParameterError, SchemaError
from evalstats.report import ANALYSES, audit_report
from evalstats.report._model import summarise as _summarise
from evalstats.resampling import required_sample_size
from evalstats.simulate import observations, unit_table

#: Every resampling step small, so each test takes a moment.
FAST = {
    "nstar": {"n_resamples": 200},
    "converge": {"n_orders": 20, "batch": 2},
    "correlation": {"n_resamples": 99},
    "anova": {"n_resamples": 99},
    "attribution": {"n_null": 2, "n_folds": 3, "method": "linear"},  # xgboost overfits 48 units
    "intervals": {},
    "compare": {"n_resamples": 99},
    "ranks": {"n_resamples": 100},
    "providers": {"n_resamples": 99},
}


@pytest.fixture(scope="module")
def full_obs() -> pl.DataFrame:
    """Every column the report can use: factors, runs, providers, errors, latency."""
    # 8 prompt variants and 3 datasets: the design supports n* (5 or more prompt variants) and
    # a ranking across datasets (3 or more)
    return observations(
        n_models=3,
        n_datasets=3,
        n_items=20,
        n_variants=16,
        n_runs=4,
        factors={
            "shots": {0: 0.0, 5: 0.1},
            "cot": {False: 0.0, True: 0.05},
            "template": {"plain": 0.0, "quoted": -0.03},
        },
        instability=0.1,
        raw_instability=0.1,
        providers=("a", "b"),
        error_rates={"a": {"api_error": 0.02}, "b": {"api_error": 0.1}},
        latency=True,
        seed=1,
    ).with_columns(  # gold scores on 8 of 20 items: the report runs PPI++
        gold_score=pl.when(pl.col("item").cast(pl.Int64) < 8).then(pl.col("score"))
    )


@pytest.fixture(scope="module")
def full_report(full_obs):
    return audit_report(full_obs, default={"shots": 0, "cot": False}, options=FAST, seed=3)


def test_every_analysis_runs_when_the_columns_support_it(full_report):
    assert [a.key for a in full_report.analyses] == [s.key for s in ANALYSES]
    assert full_report.skipped == ()
    assert all(a.reading for a in full_report.analyses)


def test_unit_level_scores_with_one_run_skip_the_variance_components():
    """State of What Art shape (one accuracy per model, task and paraphrase, no items, no
    repeated runs): the only variance is between prompts, so the noise analysis would read
    "100 % from prompt variants" in every group. It is skipped, and the reason says why."""
    obs = pl.DataFrame(
        {
            "model": ["a"] * 6 + ["b"] * 6,
            "dataset": (["t1"] * 3 + ["t2"] * 3) * 2,
            "variant": ["p0", "p1", "p2"] * 4,
            "score": [0.5, 0.6, 0.4, 0.3, 0.35, 0.2, 0.7, 0.6, 0.65, 0.5, 0.45, 0.4],
        }
    )
    rep = audit_report(obs, options={"nstar": {"n_resamples": 100}}, skip=("converge",))
    reasons = {s.key: s.reason for s in rep.skipped}
    assert "noise" not in [a.key for a in rep.analyses]
    assert "one run per prompt variant" in reasons["noise"]
    assert "item-level scores or repeated runs" in reasons["noise"]


def test_a_lean_table_skips_with_reasons():
    obs = observations(n_models=1, n_items=20, n_variants=5, seed=0)
    rep = audit_report(obs, options={"nstar": {"n_resamples": 100}})
    assert [a.key for a in rep.analyses] == ["moments", "nstar", "intervals", "noise"]
    reasons = {s.key: s.reason for s in rep.skipped}
    assert "run once" in reasons["stability"] and "run once" in reasons["normality"]
    assert "no complete factor column" in reasons["anova"] and "--factors" in reasons["attribution"]
    assert "only one model (m0)" in reasons["compare"]
    assert "--default" in reasons["audit"]
    assert "no provider column" in reasons["providers"]
    # the stopping rule needs 2 batches of 10 variants: the analysis's own message is kept
    assert "converge" in reasons and "batch" in reasons["converge"]


def test_unit_level_input_skips_the_item_analyses():
    units = unit_table(n_models=2, n_items=20, n_variants=6, n_runs=2, seed=0)
    rep = audit_report(units, options={"nstar": {"n_resamples": 100}})
    reasons = {s.key: s.reason for s in rep.skipped}
    assert "no item column" in reasons["stability"]
    assert "no item column" in reasons["compare"] and "no item column" in reasons["ranks"]
    assert rep.data.n_items is None and "intervals" in rep


def test_errors_without_provider_column_are_audited_per_model():
    obs = observations(
        n_models=2,
        n_items=30,
        n_variants=3,
        providers=("only",),
        error_rates={"only": {"timeout": 0.1}},
        seed=0,
    ).drop("provider")
    rep = audit_report(obs, skip=["nstar", "converge", "moments"], options=FAST)
    res = rep["providers"]
    assert res.params["provider"] == "model" and tuple(res.params["by"]) == ()
    assert "no provider column" in res.reading
    # a real llm-stability report read "calls to 10 (model, model) pairs" and "Holm over the
    # model's models"
    assert "calls to 2 models;" in res.reading, res.reading
    assert "(model, model)" not in res.reading and "model's models" not in res.reading
    assert "Against the reference model (paired on items, Holm over the models;" in res.reading
    expected = provider_audit(obs, provider="model", by=(), n_resamples=99, seed=0)
    assert_frame_equal(res.tables["errors"], expected.errors)


def test_tables_are_the_public_functions_results(full_obs, full_report):
    assert_frame_equal(
        full_report["nstar"].tables["nstar"],
        required_sample_size(full_obs, n_resamples=200, seed=3, method="bootstrap"),
    )
    assert_frame_equal(
        full_report["nstar"].tables["recorded_variants"],
        required_sample_size(full_obs, n_resamples=200, seed=3, method="pool"),
    )
    anova = factor_anova(
        full_obs,
        factors=["shots", "cot", "template", "provider"],
        block=("model", "dataset"),  # the report blocks on models and datasets when several
        n_resamples=99,
        seed=3,
    )
    assert_frame_equal(full_report["anova"].tables["anova"], anova.to_frame())
    assert_frame_equal(
        full_report["compare"].tables["compare"],
        # the report's study-wide family and the design's prompt factors (provider held)
        compare_models(
            full_obs,
            n_resamples=99,
            seed=3,
            family="global",
            variant_factors=["shots", "cot", "template"],
        ),
    )


def test_params_record_every_default_and_the_seed(full_report):
    nstar = full_report["nstar"].params
    assert nstar["n_resamples"] == 200 and nstar["seed"] == 3
    assert nstar["epsilon"] is None and nstar["delta"] == 0.1  # library defaults, recorded
    # epsilon None: the default for [0, 1] metrics, resolved per metric and said in the table
    table = full_report["nstar"].tables["nstar"]
    assert set(table.filter(pl.col("moment") == "mean")["epsilon"].to_list()) == {0.01}
    var = table.filter(pl.col("moment") == "variance")["epsilon"]
    assert ((var > 0) & (var < 0.01)).all()  # 2 x sd x 0.01: on the sd scale (issue 30)
    assert table["epsilon_rule"].str.starts_with("default 0.01").all()
    for a in full_report.analyses:
        if "seed" in a.params:
            assert a.params["seed"] == 3, a.key
    assert full_report.parameters["seed"] == 3
    assert full_report.parameters["factors"] == ["shots", "cot", "template", "provider"]


def test_same_seed_gives_identical_results(full_obs, full_report):
    again = audit_report(full_obs, default={"shots": 0, "cot": False}, options=FAST, seed=3)
    first = json.dumps(full_report.to_dict(), sort_keys=True)
    assert json.dumps(again.to_dict(), sort_keys=True) == first
    other = audit_report(full_obs, default={"shots": 0, "cot": False}, options=FAST, seed=4)
    assert json.dumps(other.to_dict(), sort_keys=True) != first


def test_unknown_options_name_what_exists(full_obs):
    with pytest.raises(ParameterError, match="`options` names the analysis 'anvoa'"):
        audit_report(full_obs, options={"anvoa": {}})
    with pytest.raises(ParameterError, match=r"anova\.n_permutations.*parameters: factors"):
        audit_report(full_obs, options={"anova": {"n_permutations": 10}})
    with pytest.raises(ParameterError, match="`skip` names the analysis 'nope'"):
        audit_report(full_obs, skip=["nope"])
    with pytest.raises(SchemaError, match="`factors` names 'prompt'"):
        audit_report(full_obs, factors=["prompt"])


def test_a_default_that_matches_nothing_is_a_user_error(full_obs):
    with pytest.raises(ParameterError, match="`default` sets shots=3, which is not a level"):
        audit_report(full_obs, default={"shots": 3}, options=FAST, skip=["attribution"])


def test_computing_the_report_does_not_import_matplotlib():
    code = (
        "import sys\n"
        "from evalstats.report import audit_report\n"
        "from evalstats.simulate import observations\n"
        "obs = observations(n_models=2, n_items=10, n_variants=3, seed=0)\n"
        "audit_report(obs, options={'nstar': {'n_resamples': 50}, 'compare': {'n_resamples': 9},"
        " 'ranks': {'n_resamples': 9}})\n"
        "print('matplotlib' in sys.modules, 'seaborn' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_detected_factor_with_missing_values_is_left_out_and_said():
    """A detected factor column with nulls (metadata only some variants carry) is not analysed
    by default, and the data summary and the skip reason name it."""
    obs = observations(
        n_models=1,
        n_items=20,
        n_runs=1,
        seed=0,
        factors={"shots": {0: 0.0, 5: 0.1}, "cot": {False: 0.0, True: 0.0}},
    ).with_columns(method=pl.when(pl.col("shots") == 0).then(pl.lit("manual")).otherwise(None))
    summary = _summarise(obs, None)
    assert summary.incomplete_factors == ("method",)
    assert "method" not in summary.factors and set(summary.factors) == {"shots", "cot"}
    only = obs.drop("shots", "cot")
    reason = _summarise(only, None)
    assert reason.factors == () and reason.incomplete_factors == ("method",)


def test_gold_scores_on_part_of_the_items_bring_in_ppi():
    """Issue 20: a gold column covering part of the items makes the report run PPI++."""
    from evalstats.compare import ppi_mean
    from evalstats.simulate import judged_observations

    others = [s.key for s in ANALYSES if s.key != "ppi"]
    obs = judged_observations(n_models=2, n_items=300, n_labelled=80, seed=1)
    rep = audit_report(obs, skip=others)
    assert_frame_equal(rep["ppi"].tables["ppi"], ppi_mean(obs))
    assert "judge bias" in rep["ppi"].reading
    plain = audit_report(observations(n_models=2, n_items=30, seed=0), skip=others)
    reasons = {s.key: s.reason for s in plain.skipped}
    assert "gold_score" in reasons["ppi"]


def test_n_star_leads_with_unseen_variants_and_names_the_population(full_report):
    """Issue 18, point 13: the report's n* is about prompts not yet evaluated (bootstrap).

    The pool n* (a claim about the recorded variants only) comes second, and the reading says
    which population each claim is about.
    """
    res = full_report["nstar"]
    assert res.params["method"] == "bootstrap"
    assert set(res.tables["nstar"]["population"]) == {"unseen"}
    assert set(res.tables["recorded_variants"]["population"]) == {"recorded"}
    assert "not yet evaluated" in res.reading
    assert "recorded variants alone (pool" in res.reading
    assert res.reading.index("not yet evaluated") < res.reading.index("pool")


def test_stability_reading_leaves_single_run_configurations_out():
    """Inspect logs where one task has 6 epochs and two were run once: the reading said "over 1
    and 6 identical runs ... changed by up to 0.0 points". Single runs are left out of the
    ranges and counted."""
    obs = observations(n_models=2, n_items=30, n_variants=1, n_runs=4, instability=0.3, seed=5)
    obs = obs.filter((pl.col("model") == "m0") | (pl.col("run") == 0))
    rep = audit_report(obs, options=FAST, skip=("correlation", "normality", "noise"))
    reading = rep["stability"].reading
    assert reading.startswith(
        "Over 4 identical runs of one configuration, 30 items, accuracy changed"
    ), reading
    assert "1 configuration was run once and is left out of these ranges." in reading
    assert "1 and 4" not in reading


def test_noise_reading_counts_only_groups_with_variance_to_split():
    """Inspect logs (three models, one task each, one run except one task): the reading said
    "the largest share ... comes from items in 2 of 3 groups (100.0 %)" of a group with constant
    scores and one whose only separable component was the items, then "not separable: items"."""
    obs = observations(n_models=3, n_items=30, n_variants=1, n_runs=3, instability=0.3, seed=2)
    obs = obs.with_columns(  # m1: constant scores; m2: run once (only the items separable)
        score=pl.when(pl.col("model") == "m1").then(1.0).otherwise(pl.col("score"))
    ).filter((pl.col("model") != "m2") | (pl.col("run") == 0))
    rep = audit_report(obs, options=FAST, skip=tuple(a.key for a in ANALYSES if a.key != "noise"))
    reading = rep["noise"].reading
    assert "1 of the 1 model-dataset groups (of 3) where scores vary" in reading, reading
    assert "1 of 3 group(s) have constant scores" in reading
    # every score of m1 is 1, the metric's bound: 0 in the sample, not a known 0; its largest
    # upper bound is the items' (30): m (1 - m), m = 1 - 0.025^(1/30)
    m = 1 - 0.025 ** (1 / 30)
    assert (
        "(no variance in the sample; their scores sit at the metric's bound, so the components "
        f"are not known to be 0 beyond it: upper bounds up to {m * (1 - m):.3g} in the table)"
    ) in reading, reading
    assert "In 1 of 3 group(s) only one component is separable" in reading
    assert "run-to-run noise (in 1 of 3 groups)" in reading


def test_noise_reading_of_a_fit_that_did_not_converge_says_so(monkeypatch):
    """A REML fit with no stationary point has null components; the reading said "constant
    scores (no variance)" of it, and the plan "every group's scores are constant"."""
    from evalstats.noise import _kernels

    monkeypatch.setattr(_kernels, "_stationary", lambda fv, th, tol=1e-2: False)
    obs = observations(n_models=1, n_items=30, n_variants=4, seed=1)
    keep = np.random.default_rng(0).random(obs.height) < 0.7
    obs = obs.filter(pl.Series(keep))  # cells missing at random: unbalanced, so REML
    rep = audit_report(obs, options=FAST, skip=tuple(a.key for a in ANALYSES if a.key != "noise"))
    reading = rep["noise"].reading
    assert "constant" not in reading, reading
    assert "the REML fit of the components reached no stationary point" in reading
    assert reading.endswith("No plan: no group has both varying scores and fitted components.")


def test_the_plan_sentence_says_when_it_needs_more_items_than_the_dump_has():
    """A 5 % sample of a 545-item MMLU grid planned "1816 items" with no word that the
    benchmark has 545: the sentence now says the plan needs a larger item pool."""
    import dataclasses

    from evalstats.report._noise_reading import noise_reading

    obs = observations(n_models=1, n_items=30, n_variants=4, seed=4)
    rep = audit_report(obs, options=FAST, skip=tuple(a.key for a in ANALYSES if a.key != "noise"))
    res = rep["noise"]
    planned = res.tables["plan"].filter(pl.col("scope") == "group")["n_items"].item()
    assert planned > 30
    assert "That is more items than the 30 the dump holds" in res.reading, res.reading
    within = res.tables["plan"].with_columns(n_items=pl.lit(25, dtype=pl.Int64))
    text = noise_reading(dataclasses.replace(res, tables={**res.tables, "plan": within}), rep.data)
    assert "more items than" not in text and "25 items ×" in text


def test_a_dataset_with_one_model_leaves_comparisons_and_ranks_on_the_others():
    """Issue 41: one single-model dataset switched off every comparison and rank.

    d0 has model m0 alone, d1 and d2 all three: the comparison, the rank intervals and the
    Friedman test run on d1 and d2, and each names d0 as left out, with its reason.
    """
    obs = observations(n_models=3, n_items=40, n_datasets=3, n_variants=1, seed=0)
    obs = obs.filter((pl.col("dataset") != "d0") | (pl.col("model") == "m0"))
    rep = audit_report(obs, options=FAST, skip=("providers",))
    done = {a.key: a for a in rep.analyses}
    assert {"compare", "ranks", "friedman"} <= set(done), [(s.key, s.reason) for s in rep.skipped]
    for key, table in (("compare", "compare"), ("ranks", "ranks")):
        assert done[key].tables[table]["dataset"].unique().sort().to_list() == ["d1", "d2"]
        named = [w for w in done[key].warnings if "dataset='d0'" in w]
        assert len(named) == 1 and "at least 2 models" in named[0], done[key].warnings
    assert done["friedman"].values["n_blocks"] == 2
    assert done["friedman"].values["dropped_blocks"][0]["dataset"] == "d0"


def test_the_plan_sentence_leaves_out_groups_of_constant_scores():
    """A group whose scores are all 0 plans "1 item x 1 variant x 1 run" (zero variance); the
    reading must not state that as the design to run. With a plan for every model (the "all"
    row) it states that; with a plan per group only (a group per held setting, as on a real
    GPQA dump with a group per document setting, which read "1 calls per model" before) it
    names the most demanding group where scores vary and says the constant ones are left out;
    with every group constant it says there is no plan."""
    import dataclasses

    from evalstats.report._noise_reading import noise_reading

    rng = np.random.default_rng(5)
    ii, pp = np.meshgrid(np.arange(40), np.arange(4), indexing="ij")
    varied = (rng.random(ii.shape) < 0.3 + 0.4 * (ii % 2)).astype(float)
    frames = [
        pl.DataFrame(
            {
                "model": "m",
                "dataset": name,
                "item": ii.ravel().astype(str),
                "variant": [f"v{p}" for p in pp.ravel()],
                "score": y.ravel(),
            }
        )  # fmt: skip
        for name, y in (("flat", np.zeros(ii.shape)), ("varied", varied))
    ]
    rep = audit_report(pl.concat(frames), skip=["nstar", "converge"], options=FAST)
    res = rep["noise"]
    # two groups that vary: the most demanding is named
    wide = (rng.random(ii.shape) < 0.5).astype(float)
    two = audit_report(
        pl.concat([frames[1], frames[1].with_columns(dataset=pl.lit("wide"), score=wide.ravel())]),
        skip=["nstar", "converge"],
        options=FAST,
    )["noise"]
    g2 = two.tables["plan"].filter(pl.col("scope") == "group")
    top = g2.sort("calls", descending=True).row(0, named=True)
    text = noise_reading(dataclasses.replace(two, tables={**two.tables, "plan": g2}), rep.data)
    assert (
        f"in each of the 2 groups where scores vary, the most demanding (model m, dataset "
        f"{top['dataset']}, metric score) needs"
        in text
        and f"({top['calls']:,} calls" in text
    )
    plan = res.tables["plan"]
    assert plan.filter(pl.col("dataset") == "flat")["calls"].item() == 1
    calls = plan.filter(pl.col("dataset") == "varied")["calls"].item()
    assert calls > 1 and f"({calls:,} calls per model)" in res.reading
    groups = plan.filter(pl.col("scope") == "group")
    per_group = dataclasses.replace(res, tables={**res.tables, "plan": groups})
    reading = noise_reading(per_group, rep.data)
    assert "(1 calls per model)" not in reading
    assert "on the model, the cheapest design is" in reading  # the one group that varies
    assert f"({calls:,} calls per model)" in reading
    assert "Groups with constant scores are left out" in reading
    flat_only = groups.filter(pl.col("dataset") == "flat")
    flat_res = dataclasses.replace(res, tables={**res.tables, "plan": flat_only})
    comps = res.tables["components"]
    flat_res = dataclasses.replace(
        flat_res,
        tables={**flat_res.tables, "components": comps.filter(pl.col("dataset") == "flat")},
    )
    assert noise_reading(flat_res, rep.data).endswith(
        "No plan: every group's scores are constant (no variance to plan from)."
    )


def test_the_anova_skip_reason_agrees_in_number():
    """A real MBSE dump read "(version have a single level)"."""
    obs = observations(n_models=2, n_items=30, n_variants=1, seed=0)
    skip = tuple(a.key for a in ANALYSES if a.key != "anova")
    one = audit_report(obs.with_columns(version=pl.lit("1.0")), skip=skip)
    two = audit_report(obs.with_columns(version=pl.lit("1.0"), build=pl.lit("b")), skip=skip)
    (r1,) = [s.reason for s in one.skipped if s.key == "anova"]
    (r2,) = [s.reason for s in two.skipped if s.key == "anova"]
    assert "(version has a single level)" in r1, r1
    assert " have a single level" in r2 and "version" in r2 and "build" in r2, r2


def test_n_star_leaves_out_groups_with_a_single_prompt_variant():
    """A real llm-stability dump held three groups apart by a setting, one of them run under a
    single prompt: the reading said its mean "needs 1 of 1 variants" and its variance "is
    within ε of 0", and the figure drew an empty panel with n* = 1 on axes from 0.96 to 1.04.
    Such a group is left out and counted; the variant axis has whole ticks only."""
    import warnings

    from evalstats.report._figures import figure_specs, report_palette

    obs = observations(n_models=1, n_items=30, n_variants=6, seed=3)
    obs = pl.concat(
        [
            obs.with_columns(setting=pl.lit("a")),
            obs.filter(pl.col("variant").is_in(["v00", "v01", "v02", "v03"])).with_columns(
                setting=pl.lit("b")
            ),
            obs.filter(pl.col("variant") == "v00").with_columns(setting=pl.lit("c")),
        ]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = audit_report(
            obs,
            roles={"setting": "setting"},
            skip=tuple(a.key for a in ANALYSES if a.key not in ("moments", "nstar")),
            options={"nstar": {"n_resamples": 200}},
        )
    res = rep["nstar"]
    assert set(res.tables["nstar"]["setting"]) == {"a", "b"}
    assert set(res.tables["curve"]["setting"]) == {"a", "b"}
    assert "1 group with a single prompt variant is left out: n* needs two or more." in res.reading
    assert "1 of 1 variants" not in res.reading
    (spec,) = [s for s in figure_specs(rep) if s.key == "convergence"]
    assert len([ax for ax in spec.draw(report_palette(rep)).axes if ax.get_visible()]) == 2


@pytest.mark.parametrize("n", [2, 3, 4])
def test_the_variant_axis_of_a_convergence_panel_has_whole_ticks(n):
    """A 4-variant panel of a real report ticked 1.0, 1.5, ..., 4.0 (a count of variants)."""
    import matplotlib.pyplot as plt

    from evalstats.plots import paper_style
    from evalstats.plots.moments import plot_convergence_overlay

    curve = pl.DataFrame(
        {"model": "m", "dataset": "d", "metric": "accuracy", "moment": "mean",
         "n": list(range(1, n + 1)), "delta_mean": [0.02 / k for k in range(1, n + 1)],
         "ci_low": 0.0, "ci_high": 0.04, "exhaustive": False}
    )  # fmt: skip
    with paper_style():
        fig, ax = plt.subplots(figsize=(5.0, 2.5))
        plot_convergence_overlay(curve, epsilon=0.01, ax=ax)
        fig.canvas.draw()
    lo, hi = ax.get_xlim()
    ticks = [float(t) for t in ax.get_xticks() if lo <= t <= hi]
    plt.close(fig)
    assert ticks and all(t.is_integer() for t in ticks), ticks
