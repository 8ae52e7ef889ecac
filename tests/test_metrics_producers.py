"""Issue 14 on real and producer-written files: metrics that are not accuracies.

- real lm-eval truthfulqa_gen logs (BLEU/ROUGE on 0-100, 0/1 ``*_acc``, signed ``*_diff``),
  read from ../shared/data/real-logs/lm-eval/results__truthfulqa (MIT; see SOURCES.md there):
  the first 60 documents of the full run and the 20-document ``--limit`` run, derived at test
  time by the ``lm_eval_subsets`` fixture (tests/conftest.py); skipped without ../shared/data.
- ``fixtures/dumps/inspect_written/``: logs written by inspect_ai's own eval loop and log writer
  (``make_logs.py``): a count of passed tests (0-3) and an absolute error (lower is better) on
  which model ``b`` is planted better, over four prompt templates ("terse" planted worse).
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from numpy.testing import assert_allclose
from scipy import stats

import evalstats as ev
from evalstats.cli import main
from evalstats.errors import MetricScaleError
from evalstats.io import read
from evalstats.io.lm_eval import read_lm_eval
from evalstats.schema import MetricInfo

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "dumps"
INSPECT = FIX / "inspect_written" / "logs"
METRICS = [
    f"{m}_{k}" for m in ("bleu", "rouge1", "rouge2", "rougeL") for k in ("max", "acc", "diff")
]


def _records(folder: Path) -> dict[str, list[dict]]:
    return {
        f.name: [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
        for f in sorted(folder.rglob("samples_*.jsonl"))
    }


# --- real lm-eval logs: BLEU/ROUGE and signed differences ----------------------------------


@pytest.fixture
def tqa(lm_eval_subsets) -> Path:
    """The two truthfulqa_gen sample files (60 + 20 documents) in one folder."""
    return lm_eval_subsets / "results__truthfulqa"


@pytest.mark.parametrize("metric", METRICS)
def test_real_truthfulqa_keeps_every_finite_row_and_the_per_task_mean_is_lm_evals(tqa, metric):
    """lm-eval aggregates these metrics by ``mean`` over documents (truthfulqa_gen.yaml); no
    results file was published with the logs, so the summary is recomputed from the records."""
    records = _records(tqa)
    obs, report = read_lm_eval(tqa, metric=metric)
    n = sum(len(r) for r in records.values())
    finite = sum(math.isfinite(float(x[metric])) for r in records.values() for x in r)
    assert report.rows_read == n == 80 and report.rows_kept == finite == 80
    assert not report.set_aside
    units = ev.to_units(obs).collect()
    # the full run (60 docs here) and the --limit run (20) are two document sets, kept apart
    for name, recs in records.items():
        want = float(np.mean([float(x[metric]) for x in recs]))
        got = units.filter(pl.col("n_items") == len(recs))["score"].item()
        assert_allclose(got, want, rtol=1e-12, err_msg=name)
    (info,) = report.metrics
    kind = metric.rsplit("_", 1)[1]
    assert (info.low, info.high) == {"max": (0, 100), "acc": (0, 1), "diff": (-100, 100)}[kind]
    assert units["metric"].unique().to_list() == [metric]


def test_real_signed_differences_are_kept_negative_and_not_rescaled(tqa):
    obs, _ = read_lm_eval(tqa, metric="bleu_diff")
    scores = obs.collect()["score"]
    assert (scores < 0).sum() > 0 and (scores > 1).sum() > 0  # neither set aside nor divided
    raw = [float(x["bleu_diff"]) for r in _records(tqa).values() for x in r]
    assert_allclose(sorted(scores.to_list()), sorted(raw), rtol=0)


def test_real_bleu_analyses_on_their_scale_and_accuracy_only_methods_refuse(tqa):
    obs = read_lm_eval(tqa, metric="bleu_max").observations.collect()
    it = ev.intervals(obs, over="items", method="t")
    row = it
    assert row["mean"][0] > 1  # BLEU points, not a fraction
    with pytest.raises(MetricScaleError, match="`method='wilson'` is for a proportion of 0/1"):
        ev.intervals(
            obs.filter(pl.col("variant").str.contains("60")), over="items", method="wilson"
        )
    acc = read_lm_eval(tqa, metric="bleu_acc").observations.collect()
    assert ev.intervals(
        acc.filter(pl.col("variant").str.contains("60")), over="items", method="wilson"
    ).height


def test_cli_refuses_accuracy_only_methods_with_one_line_and_exit_2(tqa, capsys):
    code = main(["intervals", str(tqa), "--format", "lm-eval", "--metric", "bleu_max",
                 "--over", "items", "--method", "wilson"])  # fmt: skip
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("evalstats: error:")]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err
    assert "0/1 scores" in lines[0]


# --- producer-written Inspect logs: a count and a lower-is-better error ----------------------


@pytest.fixture(scope="module")
def errors():
    obs, report = read(INSPECT, format="inspect", scorer="abs_error")
    return obs.collect(), report


@pytest.fixture(scope="module")
def passed():
    obs, report = read(INSPECT, format="inspect", scorer="tests_passed")
    return obs.collect(), report


def _inspect_summaries(scorer: str) -> dict[tuple[str, str], float]:
    """Inspect's own per-log summary: results.scores[scorer].metrics.mean.value."""
    out = {}
    for f in sorted(INSPECT.glob("*.json")):
        doc = json.loads(f.read_text())
        (score,) = [s for s in doc["results"]["scores"] if s["name"] == scorer]
        key = (doc["eval"]["model"], str(doc["eval"]["task_args"]["template"]))
        out[key] = score["metrics"]["mean"]["value"]
    return out


@pytest.mark.parametrize("scorer", ["tests_passed", "abs_error"])
def test_inspect_logs_keep_every_row_and_the_mean_is_inspects_summary(scorer):
    obs, report = read(INSPECT, format="inspect", scorer=scorer)
    assert report.rows_read == report.rows_kept == 8 * 30 * 2 and not report.set_aside
    obs = obs.collect()
    per_log = obs.group_by("model", "template").agg(pl.col("score").mean()).rows()
    summary = _inspect_summaries(scorer)
    assert len(per_log) == len(summary) == 8
    for model, template, mean in per_log:
        assert_allclose(mean, summary[(model, str(template))], rtol=1e-12)
    assert obs["score"].max() > 1  # counts and errors, not fractions


def test_inspect_scorer_metadata_declares_bounds_and_direction(errors, passed):
    assert errors[1].metrics == (MetricInfo("abs_error", 0, None, higher_is_better=False),)
    assert passed[1].metrics == (MetricInfo("tests_passed", 0, 3),)
    assert set(passed[0]["score"].unique().to_list()) <= {0.0, 1.0, 2.0, 3.0}


def test_planted_better_model_on_a_lower_is_better_metric_is_reported_better(errors):
    obs, _ = errors
    ranks = ev.rank_intervals(obs, n_resamples=300, seed=1)
    best = ranks.filter(pl.col("rank") == 1)
    assert best["model"].to_list() == ["mockllm/b"] and best["p_best"].item() > 0.95
    assert ranks["higher_is_better"].unique().to_list() == [False]
    spread = ev.prompt_spread(obs)
    b = spread.filter(pl.col("model") == "mockllm/b").row(0, named=True)
    assert b["max_p"] == b["min"]  # MaxP is the best variant: the lowest error
    assert b["cps"] is None and b["pss"] is None  # [0, 1]-only
    # the variant x item noise (issue 18) holds on any scale
    assert b["noise_variance"] is not None and b["noise_variance"] >= 0
    cmp = ev.compare_models(obs, n_resamples=999, seed=2).row(0, named=True)
    assert (cmp["model_a"], cmp["model_b"]) == ("mockllm/a", "mockllm/b")
    assert cmp["difference"] > 0 and cmp["pvalue"] < 0.05  # a's error is higher
    audit = ev.reversal_audit(obs, default={"template": "plain"}, claim="mockllm/b>mockllm/a")
    assert audit.pairs["claim_status"].to_list() == ["supported"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = ev.audit_report(
            obs, seed=3, options={"nstar": {"relative_epsilon": 0.05, "relative_to": "sd"}}
        )
    reading = rep["intervals"].reading
    assert "mockllm/b has the best mean score (the lowest: lower is better)" in reading
    # over items and the 4 templates (prompt variants; issue 27), t on the design's variance
    # of an unbounded metric, in its units, not in percent; conditional on the recorded
    # templates it is scipy's t on the item means (issue 15)
    item_means = (
        obs.filter(pl.col("model") == "mockllm/b")
        .group_by("dataset", "item")
        .agg(pl.col("score").mean())["score"]
        .to_numpy()
    )
    ci = stats.ttest_1samp(item_means, 0).confidence_interval()
    fixed = ev.intervals(obs, over="recorded-prompts").filter(pl.col("model") == "mockllm/b")
    assert_allclose([fixed["ci_low"][0], fixed["ci_high"][0]], [ci.low, ci.high], rtol=1e-10)
    space = ev.intervals(obs).filter(pl.col("model") == "mockllm/b").row(0, named=True)
    assert space["ci_low"] < ci.low and space["ci_high"] > ci.high and space["n_prompts"] == 4
    assert f"0.7946 (95% CI {space['ci_low']:.4g} to {space['ci_high']:.4g})" in reading
    assert "t intervals (the metric has no bounds), over items and prompts" in reading
    assert "(typically 30 items and 4 prompts per model)" in reading
    assert "mockllm/b is best in 100% of bootstrap resamples" in rep["ranks"].reading
    assert "mockllm/b ahead of mockllm/a" in rep["compare"].reading


def test_anova_finds_the_planted_template_on_an_error_metric(errors):
    obs, _ = errors
    # item-level rows, models and items as blocks: the template effect against item noise
    res = ev.factor_anova(
        obs, factors=["template"], block=["model", "item"], n_resamples=500, seed=4
    )
    row = res.table.filter(pl.col("term") == "template").row(0, named=True)
    assert row["pvalue"] < 0.01 and row["eta_sq"] > 0.05
    means = obs.group_by("template").agg(pl.col("score").mean()).sort("score")
    assert means["template"][-1] == "terse"  # the planted worst template


def test_nstar_on_an_error_needs_an_epsilon_in_its_units(errors):
    obs, _ = errors
    with pytest.raises(MetricScaleError, match="metric 'abs_error' is not on \\[0, 1\\]"):
        ev.required_sample_size(obs)
    with pytest.raises(MetricScaleError, match="no declared range"):
        ev.required_sample_size(obs, relative_epsilon=0.05)  # [0, inf): no range
    out = ev.required_sample_size(obs, epsilon=0.1, moments="mean", n_resamples=200)
    assert out["epsilon_rule"].unique().to_list() == ["given: 0.1"]
    rel = ev.required_sample_size(
        obs, relative_epsilon=0.5, relative_to="sd", moments="mean", n_resamples=200
    )
    sd = ev.prompt_spread(obs).sort("model")["variance_unbiased"].sqrt().to_numpy()
    mean_rows = rel.filter(pl.col("moment") == "mean").sort("model")
    assert_allclose(mean_rows["epsilon"].to_numpy(), 0.5 * sd, rtol=1e-12)
    assert mean_rows["epsilon_rule"].str.contains("across-variant sd").all()


def test_report_lists_default_epsilon_nstar_as_skipped_with_the_reason(errors):
    # the Inspect logs have 4 templates, too few prompt variants for n* (the design says so:
    # at least 5); six simulated prompt variants scored as absolute errors reach n*, whose
    # default epsilon has no meaning for a metric in its own units
    from evalstats.schema import MetricInfo, with_metric
    from evalstats.simulate import observations

    rng = np.random.default_rng(0)
    sim = observations(n_models=2, n_items=20, n_variants=6, seed=0)
    sim = sim.with_columns(pl.Series("score", np.abs(rng.normal(2.0, 1.0, sim.height))))
    obs = with_metric(sim, MetricInfo("abs_error", low=0.0, higher_is_better=False))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = ev.audit_report(obs, seed=3, skip=("converge", "noise", "ranks", "compare"))
    reasons = {s.key: s.reason for s in rep.skipped}
    assert reasons["nstar"].startswith("does not apply to these metrics: metric 'abs_error'")
    assert "relative_epsilon" in reasons["nstar"]


def test_cli_nstar_exit_2_without_epsilon_and_runs_with_a_relative_one(capsys):
    args = ["nstar", str(INSPECT), "--format", "inspect", "--metric", "abs_error"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("evalstats: error:") == 1 and "not on [0, 1]" in err
    assert main([*args, "--relative-epsilon", "0.2", "--relative-to", "sd", "--json",
                 "--n-resamples", "200"]) == 0  # fmt: skip
    doc = json.loads(capsys.readouterr().out)
    assert {r["metric"] for r in doc["rows"]} == {"abs_error"}
    assert all("relative: 0.2" in r["epsilon_rule"] for r in doc["rows"])


def test_convergence_needs_tolerances_in_the_metrics_units(errors):
    obs, _ = errors
    with pytest.raises(MetricScaleError, match="default `mean_tol` .* 'abs_error' is not on"):
        ev.convergence(obs, batch=2)
    out = ev.convergence(obs, batch=2, mean_tol=0.05, ci_width=0.5, n_orders=20)
    assert out["mean_tol"].unique().to_list() == [0.05]


def test_cli_report_on_an_error_metric_ranks_the_lowest_first(tmp_path, capsys):
    out = tmp_path / "audit"
    args = ["report", str(INSPECT), "--format", "inspect", "--metric", "abs_error", "--out",
            str(out), "--quiet"]  # fmt: skip
    code = main(args)
    err = capsys.readouterr().err
    assert code == 0, err
    doc = json.loads((out / "results.json").read_text())
    assert doc["data"]["metrics"] == [
        {"name": "abs_error", "low": 0.0, "high": None, "higher_is_better": False}
    ]
    skipped = {s["key"]: s["reason"] for s in doc["skipped"]}
    # four templates per model: too few prompt variants for n* (the design needs 5)
    assert "5 or more prompt variants" in skipped["nstar"]
    ranks = next(a for a in doc["analyses"] if a["key"] == "ranks")
    assert "mockllm/b is best" in ranks["reading"]


def test_stability_on_a_count_keeps_its_units_and_refuses_the_percent_table(passed):
    obs, _ = passed
    plain = obs.filter(pl.col("template") == "plain")
    table = ev.stability_table(plain, on_mismatch="intersect")
    assert table["acc_mean"].max() > 1  # mean tests passed per run, not a share
    assert table["best_possible"].null_count() == table.height  # an accuracy notion only
    with pytest.raises(MetricScaleError, match="Table 2 quotes accuracies in percent"):
        ev.format_stability_table(table)
