"""HELM run folders: the suite in fixtures/dumps/helm/ was written by helm-run 0.5.16 (PROVENANCE).

The reference values are HELM's own: each run folder's ``stats.json`` holds, per statistic and
perturbation, the mean over train trials of the trial's mean over instances (with ``count`` the
number of trials and ``min``/``max`` the extreme trial means).
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import sys
from pathlib import Path

import polars as pl
import pytest
from numpy.testing import assert_allclose

from evalstats.errors import IngestError, ParameterError
from evalstats.io import detect_format, read
from evalstats.io.helm import ORIGINAL, _dataset, detect_helm, helm_metric, read_helm

SUITE = (
    Path(__file__).resolve().parents[2] / "fixtures/dumps/helm/benchmark_output/runs/evalstats-v1"
)
RUNS = sorted(p for p in SUITE.iterdir() if (p / "run_spec.json").is_file())


@pytest.fixture(scope="module")
def suite():
    obs, report = read_helm(SUITE)
    return obs.collect(), report


def _stats_entry(stats: list[dict], metric: str, perturbation: str) -> dict:
    """The stats.json entry of ``metric`` on the test split for one perturbation."""
    hits = []
    for s in stats:
        name = s["name"]
        if name["name"] != metric or name.get("split") != "test":
            continue
        pert = name.get("perturbation")
        if perturbation == ORIGINAL and pert is None:
            hits.append(s)
        elif pert and pert["name"] == perturbation and pert.get("computed_on") == "perturbed":
            hits.append(s)
    assert len(hits) == 1, (metric, perturbation, hits)
    return hits[0]


def test_per_run_means_equal_helm_stats_json_for_every_metric(suite):
    """Our per-run (train trial) means, averaged over runs, are stats.json's mean (1e-9).

    Every (run folder, metric, perturbation) kept is compared: mean, min and max over trials and
    the number of trials.
    """
    obs, _ = suite
    compared = 0
    for run in RUNS:
        spec = json.loads((run / "run_spec.json").read_text())
        stats = json.loads((run / "stats.json").read_text())
        mine = obs.filter(
            pl.col("model") == spec["adapter_spec"]["model"],
            pl.col("dataset") == spec["name"].split(":")[0],
        )
        trials = (
            mine.group_by("metric", "perturbation", "run", "train_trial")
            .agg(pl.col("score").mean())
            .group_by("metric", "perturbation")
            .agg(
                pl.col("score").mean().alias("mean"),
                pl.col("score").min().alias("min"),
                pl.col("score").max().alias("max"),
                pl.len().alias("count"),
            )
            .sort("metric", "perturbation")
        )
        assert trials.height > 0
        for row in trials.iter_rows(named=True):
            want = _stats_entry(stats, row["metric"], row["perturbation"])
            assert row["count"] == want["count"]
            got = [row["mean"], row["min"], row["max"]]
            assert_allclose(got, [want["mean"], want["min"], want["max"]], rtol=0, atol=1e-9)
            compared += 1
    metrics = set(obs["metric"].unique())
    assert {
        "exact_match",
        "quasi_exact_match",
        "f1_score",
        "rouge_l",
        "bleu_1",
        "bleu_4",
    } <= metrics
    assert "num_output_tokens" in metrics and "inference_runtime" in metrics
    assert compared == 100


def test_every_per_instance_statistic_is_accounted_for(suite):
    _, report = suite
    entries = sum(
        len(e["stats"])
        for run in RUNS
        for e in json.loads((run / "per_instance_stats.json").read_text())
    )
    assert report.format == "helm"
    assert report.rows_read == entries
    assert report.rows_read == report.rows_kept + sum(report.set_aside.values())
    assert set(report.set_aside) == {"helm_bookkeeping", "helm_no_value"}
    assert any("num_references" in n and "helm_bookkeeping" in n for n in report.notes)


def test_models_datasets_items_and_runs(suite):
    obs, _ = suite
    assert sorted(obs["model"].unique()) == [
        "evalstats/parity-x",
        "evalstats/parity-y",
        "simple/model1",
    ]
    # the run expanders (model=, data_augmentation=) are not part of the dataset
    assert sorted(obs["dataset"].unique()) == ["simple1", "simple_mcqa", "simple_short_answer_qa"]
    # --num-train-trials 2 with 5 in-context examples: each trial draws other examples, so
    # the trials are prompt variants (train_trial), not identical runs
    assert sorted(obs["train_trial"].unique()) == [0, 1] and obs["run"].unique().to_list() == [0]
    items = (
        obs.filter(pl.col("dataset") == "simple_mcqa")
        .group_by("model")
        .agg(pl.col("item").n_unique())
    )
    assert items["item"].to_list() == [8, 8, 8]  # --max-eval-instances 8


def test_perturbations_are_prompt_variants_with_evidence(suite):
    obs, report = suite
    qa = obs.filter(pl.col("dataset") == "simple_short_answer_qa")
    assert sorted(qa["perturbation"].unique()) == ["mild_mix", ORIGINAL]
    # a perturbed instance keeps its id: the same item under another wording
    perturbed = set(qa.filter(pl.col("perturbation") == "mild_mix")["item"])
    assert perturbed <= set(qa.filter(pl.col("perturbation") == ORIGINAL)["item"])
    assert qa["variant"].n_unique() == 4  # 2 perturbations x 2 few-shot draws (train trials)
    rules = {r.column: r for r in report.columns}
    assert rules["train_trial"].role == "prompt"
    assert rules["perturbation"].role == "prompt"
    assert "perturbation" in rules["perturbation"].evidence
    assert rules["temperature"].role == "setting" and rules["max_tokens"].role == "setting"
    from evalstats.design import infer_design

    design = infer_design(obs, ingest=report)
    roles = {c.column: c.role for c in design.columns}
    assert roles["perturbation"] == "prompt" and roles["train_trial"] == "prompt"
    assert roles["temperature"] == "fixed"  # one per run folder: held, no dimension (issue 40)


def test_metric_bounds_and_directions(suite):
    _, report = suite
    metrics = {m.name: m for m in report.metrics}
    assert (metrics["exact_match"].low, metrics["exact_match"].high) == (0.0, 1.0)
    assert metrics["exact_match"].higher_is_better
    # schema.json (helm-summarize): lower_is_better true
    assert not metrics["inference_runtime"].higher_is_better
    assert not metrics["num_output_tokens"].higher_is_better
    assert metrics["logprob"].high == 0.0
    assert helm_metric("num_references") == "bookkeeping"
    assert helm_metric("exact_match", {"exact_match": True}) == (0.0, 1.0, False)
    assert helm_metric("unknown_metric") == (None, None, True)


def test_texts_from_the_scenario_state(suite):
    obs, _ = suite
    mcqa = obs.filter(pl.col("model") == "evalstats/parity-x", pl.col("dataset") == "simple_mcqa")
    assert set(mcqa["response"].unique()) <= {"A", "B"}
    assert set(mcqa["gold"].unique()) <= {"Even", "Odd"}
    assert mcqa["input_len"].min() > 0


def test_detection_of_suite_run_folder_and_stats_file():
    run = RUNS[1]
    assert detect_helm(SUITE) and detect_helm(run) and detect_helm(run / "per_instance_stats.json")
    assert not detect_helm(run / "stats.json")
    assert detect_format(SUITE) == "helm"
    obs, report = read(SUITE)  # auto: every JSON of the suite is a HELM file
    assert report.format == "helm"
    one, one_report = read(run / "per_instance_stats.json", format="helm")
    assert one_report.sources == (str(run / "per_instance_stats.json"),)
    assert one.collect()["model"].n_unique() == 1


def test_dataset_name_keeps_scenario_arguments_and_drops_run_expanders():
    name = "mmlu:subject=anatomy,method=multiple_choice_joint,model=openai_gpt2,data_augmentation=canonical"
    assert _dataset(name) == (
        "mmlu:subject=anatomy,method=multiple_choice_joint",
        {"model": "openai_gpt2", "data_augmentation": "canonical"},
    )
    assert _dataset("simple1:model=simple_model1") == ("simple1", {"model": "simple_model1"})


def test_original_instances_of_two_augmentation_runs_are_repeats(tmp_path):
    """Two augmentation runs of one scenario both re-run the original instances."""
    src = next(r for r in RUNS if "simple_short_answer_qa:model=evalstats_parity-x" in r.name)
    other = tmp_path / src.name.replace("robustness", "lower")
    shutil.copytree(src, tmp_path / src.name)
    shutil.copytree(src, other)
    spec = json.loads((other / "run_spec.json").read_text())
    spec["name"] = other.name
    (other / "run_spec.json").write_text(json.dumps(spec))
    stats = json.loads((other / "per_instance_stats.json").read_text())
    stats[0]["stats"][0]["sum_squared"] = 1  # not a byte copy: another run
    (other / "per_instance_stats.json").write_text(json.dumps(stats))
    _, report = read_helm(tmp_path)
    assert report.set_aside["duplicate"] > 0
    assert report.rows_read == report.rows_kept + sum(report.set_aside.values())


@pytest.mark.parametrize("shots", [0, 5])
def test_train_trials_are_runs_without_shots_and_prompt_variants_with_them(tmp_path, shots):
    """Trials without in-context examples repeat the same prompt: runs. With examples each
    trial draws others: prompt variants (train_trial), so stability never calls them identical."""
    src = next(r for r in RUNS if r.name.startswith("simple_mcqa:model=simple_model1"))
    run = tmp_path / src.name
    shutil.copytree(src, run)
    spec = json.loads((run / "run_spec.json").read_text())
    spec["adapter_spec"]["max_train_instances"] = shots
    (run / "run_spec.json").write_text(json.dumps(spec))
    lazy, report = read_helm(tmp_path)
    obs = lazy.collect()
    if shots:
        assert obs["run"].unique().to_list() == [0]
        assert sorted(obs["train_trial"].unique()) == [0, 1]
        assert any("train_trial" in n for n in report.notes)
    else:
        assert sorted(obs["run"].unique()) == [0, 1] and "train_trial" not in obs.columns


def test_broken_json_names_the_file(tmp_path):
    run = tmp_path / RUNS[0].name
    shutil.copytree(RUNS[0], run)
    (run / "per_instance_stats.json").write_text('[{"instance_id": "id1", ')
    with pytest.raises(IngestError, match=r"per_instance_stats\.json.*not valid JSON"):
        read_helm(tmp_path)


def test_folder_without_runs_and_columns_option(tmp_path):
    with pytest.raises(IngestError, match="no HELM run folder"):
        read_helm(tmp_path)
    with pytest.raises(ParameterError, match="`columns` is not supported"):
        read_helm(SUITE, columns={"x": "score"})


def test_report_on_the_suite_compares_models_as_the_data_say(tmp_path):
    """``evalstats report`` on the suite: headlines pass the sanity rules; comparisons are ours."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "report"))
    from headline_sanity import _rows, violations

    from evalstats.cli import main

    out = tmp_path / "report"
    args = ["report", str(SUITE), "--out", str(out), "--quiet", "--figure-format", "png"]
    args += ["--metric", "exact_match", "--option", "nstar.n_resamples=200"]
    args += ["--option", "converge.n_orders=20", "--option", "anova.n_resamples=100"]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(args) == 0
    assert violations(out) == []
    results = json.loads((out / "results.json").read_text())
    analyses = {a["key"]: a for a in results["analyses"]}
    obs, _ = read_helm(SUITE)
    means = {
        (m, d): s
        for m, d, s in obs.filter(pl.col("metric") == "exact_match")
        .group_by("model", "dataset", "item")
        .agg(pl.col("score").mean())
        .group_by("model", "dataset")
        .agg(pl.col("score").mean())
        .collect()
        .iter_rows()
    }
    rows = _rows(analyses["compare"]["tables"]["compare"])
    assert len(rows) == 6  # 3 model pairs on each of the 2 datasets all three models ran
    for row in rows:
        assert row["paired_on"] == "items" and row["n"] == 8
        a, b = means[(row["model_a"], row["dataset"])], means[(row["model_b"], row["dataset"])]
        assert_allclose([row["mean_a"], row["mean_b"], row["difference"]], [a, b, a - b], atol=1e-9)
        assert row["ci_low"] <= row["difference"] <= row["ci_high"]
        if row["reject"]:
            assert row["ci_low"] > 0 or row["ci_high"] < 0
    # the interval of simple_mcqa's mean is HELM's exact_match mean (no perturbation there)
    for row in _rows(analyses["intervals"]["tables"]["intervals"]):
        if row["dataset"] != "simple_mcqa":
            continue
        run = SUITE / f"simple_mcqa:model={row['model'].replace('/', '_')}"
        want = _stats_entry(json.loads((run / "stats.json").read_text()), "exact_match", ORIGINAL)
        assert_allclose(row["mean"], want["mean"], atol=1e-9)
