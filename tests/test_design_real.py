"""The design read from real dumps (issue 26), in place in ../shared/data.

- the lm-eval GPQA folder whose dated "runs" change prompt, gold and filter
  (real-logs-2/lm-eval/allenlee-37+KT-lm-evaluation-harness__gpqa_2024-11-21);
- every llm-stability experiment that can be built from the shared archives: TARa >= TARr;
- a copied llm-stability run file;
- the State of What Art release folder with files the loader does not need;
- Every Eval Ever's test logs (real-logs-2/inspect, real-logs-2/lm-eval/evaleval+...).
"""

from __future__ import annotations

import shutil

import polars as pl
import pytest

from evalstats.cli import main
from evalstats.design import design_and_table
from evalstats.io import detect_format, read
from evalstats.stability import stability_table, tar_curve

GPQA = ("real-logs-2", "lm-eval", "allenlee-37+KT-lm-evaluation-harness__gpqa_2024-11-21")


@pytest.fixture(scope="module")
def gpqa(shared_data):
    ingest = read(shared_data.joinpath(*GPQA), on_invalid="skip")
    design, table = design_and_table(ingest.observations, ingest=ingest.report)
    return ingest.report, design, table.collect()


def test_lm_eval_files_with_other_prompts_are_variants_not_runs(gpqa):
    report, design, df = gpqa
    # five dated files per subset; the task config (filter, doc_to_target) and the gold string
    # change between them: 4 configurations, only two files share one (read as runs 0-1)
    rule = next(c for c in design.columns if c.column == "task_config")
    assert rule.role == "prompt" and rule.source == "loader"
    assert "doc_to_target" in rule.evidence and "filter_list" in rule.evidence
    assert "gold (target)" in rule.evidence
    diamond = df.filter(pl.col("dataset") == "leaderboard_gpqa_diamond")
    assert diamond["task_config"].n_unique() == 4
    runs = diamond.group_by("variant").agg(pl.col("run").n_unique().alias("n"))
    assert sorted(runs["n"].to_list()) == [1, 1, 1, 2]
    assert any("are 4 configurations" in n for n in report.notes)
    # a full and a partial document set are a setting, not a prompt or a run
    assert design.role("doc_set") == "setting"


def test_gpqa_stability_is_over_identical_runs_only(gpqa):
    _, _, df = gpqa
    table = stability_table(df, on_mismatch="intersect")
    repeated = table.filter(pl.col("n_runs") >= 2)
    assert repeated.height == 2  # diamond and extended: the one configuration run twice
    assert (repeated["tar_a"] >= repeated["tar_r"]).all()
    assert set(repeated["n_runs"]) == {2}


def test_gpqa_design_command_says_what_is_supported(shared_data, capsys):
    assert main(["design", str(shared_data.joinpath(*GPQA)), "--on-invalid", "skip"]) == 0
    out = capsys.readouterr().out
    assert "prompt factors: task_config" in out.splitlines()[0]
    assert "settings held fixed: doc_set" in out.splitlines()[0]
    assert "yes stability: 2 of 4 groups have identical repeated runs" in out


def _experiments(llm_stability_runs, fine_tuned_data):
    return {
        "strict_json_schema": llm_stability_runs,
        "fine_tuned": fine_tuned_data / "runs",
        "cross_trained": fine_tuned_data / "cross_trained",
    }


@pytest.mark.parametrize("name", ["strict_json_schema", "fine_tuned", "cross_trained"])
def test_tar_a_is_at_least_tar_r_on_every_llm_stability_experiment(
    name, llm_stability_runs, fine_tuned_data
):
    path = _experiments(llm_stability_runs, fine_tuned_data)[name]
    obs = read(path).observations.collect()
    for convention in ("disagree", "agree"):
        table = stability_table(obs, all_unparsed=convention)
        assert table.height > 0
        assert (table["tar_a"] >= table["tar_r"]).all(), (name, convention)
    curve = tar_curve(obs)
    assert (curve["tar_a"] >= curve["tar_r"] - 1e-12).all(), name


def test_a_copied_run_file_is_a_duplicate_not_a_run(llm_stability_runs, tmp_path):
    task = next(p for p in sorted(llm_stability_runs.iterdir()) if any(p.glob("*.csv")))
    folder = tmp_path / task.name
    shutil.copytree(task, folder)
    before = stability_table(read(folder).observations.collect())
    first = sorted(folder.glob("*.csv"))[0]
    shutil.copyfile(first, folder / "copy_of_a_run.csv")
    obs, report = read(folder)
    n_rows = pl.read_csv(first, infer_schema=False).height
    assert report.set_aside == {"duplicate_file": n_rows}
    assert any("copy_of_a_run.csv is a byte-for-byte copy of" in n for n in report.notes)
    after = stability_table(obs.collect())
    assert after["n_runs"].to_list() == before["n_runs"].to_list()
    assert after["tar_r"].to_list() == before["tar_r"].to_list()


def test_the_state_of_what_art_release_folder_auto_detects(shared_data, tmp_path):
    release = tmp_path / "data"
    release.mkdir()
    for name in ("paraphrases accuracies", "automatic paraphrases", "metric results"):
        (release / name).symlink_to(shared_data / "state-of-what-art" / name)
    extra = release / "aggregated results (jsons)" / "BBH"
    extra.mkdir(parents=True)
    (extra / "snarks.json").write_text('{"paraphrases": {"1": {"template": "Q: {x}"}}}')
    assert detect_format(release) == "state-of-what-art"
    obs, report = read(release)
    assert report.format == "state-of-what-art" and report.rows_kept == 28765
    assert any("not needed and not read: aggregated results (jsons)/ (1 file)" in n
               for n in report.notes)  # fmt: skip


EEE_INSPECT = ("real-logs-2", "inspect")
EEE_LM_EVAL = ("real-logs-2", "lm-eval", "evaleval+every_eval_ever__tests__data__lm_eval")


def test_every_eval_ever_test_logs_read_as_what_they_are(shared_data):
    """Every Eval Ever's own test logs (6 Inspect logs, one lm-eval run): five models that each
    ran one task once. Answers, responses and targets are outputs, not prompt factors; the
    decoding settings recorded in one model's log only are that model's attributes; nothing is a variant or a run; Inspect's letter
    grades (C/I) are on [0, 1]; the log without samples is counted in a note."""
    ingest = read(shared_data.joinpath(*EEE_INSPECT))
    design, table = design_and_table(ingest.observations, ingest=ingest.report)
    df = table.collect()
    assert ingest.report.rows_read == ingest.report.rows_kept == df.height == 12
    assert df["model"].n_unique() == 5
    assert {design.role(c) for c in ("answer", "response", "gold")} == {"output"}
    # set in one model's log only: an attribute of that model, not a dimension of the design
    assert design.role("temperature") == design.role("max_tokens") == "model_attribute"
    assert not design.prompt_factors
    per = df.group_by("model", "dataset").agg(pl.col("variant").n_unique(), pl.col("run").max())
    assert (per["variant"] == 1).all() and (per["run"] == 0).all()
    metrics = {m.name: m for m in ingest.report.metrics}
    assert (metrics["choice"].low, metrics["choice"].high) == (0.0, 1.0)
    assert (metrics["vul_exploit_scorer"].low, metrics["vul_exploit_scorer"].high) == (None, None)
    assert any("holds no samples" in n for n in ingest.report.notes)
    lm = read(shared_data.joinpath(*EEE_LM_EVAL))
    design, table = design_and_table(lm.observations, ingest=lm.report)
    df = table.collect()
    assert df.height == 10 and df["variant"].n_unique() == 1 and df["run"].n_unique() == 1
    assert design.role("response") == "output"
