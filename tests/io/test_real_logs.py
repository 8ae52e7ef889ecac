"""Real logs from public repositories, one test per file family: each ingests, and its mean
equals the producer's own summary where one exists.

Read in place from ../shared/data/real-logs (see SOURCES.md there; skipped without it); the
lm-eval subsets (first records of the large files) are derived at test time by the
``lm_eval_subsets`` fixture of tests/conftest.py.
"""

from __future__ import annotations

import json
import zipfile

import polars as pl
import pytest

from evalstats.cli import main
from evalstats.errors import IngestError
from evalstats.io import detect_format, read
from evalstats.io.lm_eval import read_lm_eval
from tests.conftest import needs_shared_data, shared

REAL = shared("real-logs")
INSPECT = [
    "METR+inspect-action__2025-12-13T23-15-44+00-00_class-eval_XDtHXBaqEHGUBoFoinn2wS.eval",
    "METR+inspect-action__small.eval",
    "vhong-aisi+inspect_demo__2025-07-30T18-42-38+00-00_mmlu_ZYEnfbu3nstBuwzjiAGzuG.eval",
]


@pytest.mark.parametrize("name", INSPECT, ids=[n[:30] for n in INSPECT])
def test_inspect_logs_match_their_header_summary(shared_data, name):
    path = shared_data / "real-logs" / "inspect" / name
    with zipfile.ZipFile(path) as z:
        header = json.loads(z.read("header.json"))
    (score,) = header["results"]["scores"]
    summary = next(iter(score["metrics"].values()))["value"]  # accuracy or mean
    assert detect_format(path) == "inspect"
    obs, report = read(path)
    df = obs.collect()
    assert (
        report.rows_read
        == report.rows_kept
        == df.height
        == header["results"]["total_samples"]  # samples x epochs
    )
    assert df["score"].mean() == pytest.approx(summary)


@needs_shared_data
def test_inspect_epochs_are_runs():
    small = REAL / "inspect" / "METR+inspect-action__small.eval"
    df = read(small).observations.collect()
    assert sorted(df["run"].to_list()) == [0, 1, 2, 3, 4, 5] and df["item"].n_unique() == 1


@needs_shared_data
def test_oaieval_record_log_matches_its_final_report(capsys):
    folder = REAL / "openai-evals"
    assert detect_format(folder) == "openai-evals"
    obs, report = read(folder)
    df = obs.collect().sort("item")
    assert report.format == "openai-evals" and report.rows_read == report.rows_kept == 3
    assert df["score"].mean() == pytest.approx(1 / 3)  # final_report: accuracy 0.3333
    assert any('"accuracy": 0.3333333333333333' in n for n in report.notes)
    assert df["model"].unique().to_list() == ["auto_gpt_completion_fn"]
    assert df["dataset"].unique().to_list() == ["test-match.s1.simple-v0"]
    row = df.row(1, named=True)  # test-match.s1.1
    assert (row["answer"], row["gold"], row["score"]) == (
        "George Washington",
        "George Washington",
        1.0,
    )
    assert df["input_len"].min() > 5
    assert main(["ingest", str(folder)]) == 0


def test_oaieval_several_match_events_per_sample_are_runs(tmp_path):
    spec = {"spec": {"completion_fns": ["gpt-4"], "eval_name": "x.dev.v0"}}
    events = [
        {
            "run_id": "r",
            "event_id": i,
            "sample_id": f"x.dev.{i % 2}",
            "type": "match",
            "data": {"correct": i < 2, "expected": "a", "picked": "a", "sampled": "a"},
        }
        for i in range(4)
    ]
    f = tmp_path / "log.jsonl"
    f.write_text("".join(json.dumps(x) + "\n" for x in [spec, *events]) + "{oops\n")
    with pytest.raises(IngestError, match=r"log.jsonl, row 5: the line is not a JSON object"):
        read(f)
    obs, report = read(f, on_invalid="skip")
    df = obs.collect().sort("item", "run")
    assert df.select("item", "run", "score").rows() == [
        ("x.dev.0", 0, 1.0),
        ("x.dev.0", 1, 0.0),
        ("x.dev.1", 0, 1.0),
        ("x.dev.1", 1, 0.0),
    ]
    assert report.set_aside == {"invalid_json": 1} and report.rows_read == 5


def test_lm_eval_03_write_out_layout(lm_eval_subsets):
    """The first 100 records of two SlurmEvals/llama files (the 0.3 --write_out layout)."""
    folder = lm_eval_subsets / "SlurmEvals"
    assert detect_format(folder) == "lm-eval"
    path = folder / "llama" / "winogrande_write_out_info.json"
    obs, report = read_lm_eval(path)
    df = obs.collect()
    raw = json.loads(path.read_text())
    assert df.height == report.rows_kept == len(raw) == 100
    assert df["score"].sum() == sum(r["acc"] == "True" for r in raw)  # 'True'/'False' strings
    assert df["model"].unique().to_list() == ["llama"] and df["dataset"][0] == "winogrande"
    assert any("0.3 --write_out" in n for n in report.notes)
    # by default the generation task is read for its first per-document metric, the signed
    # bleurt_max, on its own scale; a per-task metric through the CLI picks another
    obs, _ = read_lm_eval(folder)
    gen = obs.collect().filter(pl.col("dataset") == "truthfulqa_gen")
    raw = json.loads((folder / "llama" / "truthfulqa_gen_write_out_info.json").read_text())
    assert gen["metric"].unique().to_list() == ["bleurt_max"]
    assert gen["score"].sum() == pytest.approx(sum(float(r["bleurt_max"]) for r in raw))
    assert gen["score"].min() < 0
    argv = [
        "ingest",
        str(folder),
        "--metric",
        "truthfulqa_gen=bleurt_acc",
        "--level",
        "observations",
    ]
    assert main(argv) == 0


def test_lm_eval_corpus_metric_only_is_refused_in_one_line(lm_eval_subsets, capsys):
    folder = lm_eval_subsets / "african_nlp_benchmarks"
    assert main(["ingest", str(folder)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0]
    assert "metric 'f1' of task 'masakhaner_luo_prompt_2' is corpus-level" in err[0]


def test_lm_eval_full_and_limit_runs_are_kept_apart(lm_eval_subsets):
    """The first 60 documents of the full truthfulqa_gen run and the 20-document --limit run."""
    folder = lm_eval_subsets / "results__truthfulqa"
    obs, report = read_lm_eval(folder, metric="bleu_acc")
    df = obs.collect()
    sets = df.group_by("doc_set").agg(pl.len(), pl.col("run").n_unique().alias("runs"))
    assert sorted(sets.rows()) == [("20 docs", 20, 1), ("60 docs", 60, 1)]
    assert df["variant"].n_unique() == 2 and df["run"].unique().to_list() == [0]
    assert any(n.startswith("warning:") and "cover different documents" in n for n in report.notes)
    # an independent computation of the per-set mean from the JSON lines
    for f in folder.glob("*.jsonl"):
        recs = [json.loads(x) for x in f.read_text().splitlines()]
        expected = sum(float(r["bleu_acc"]) for r in recs) / len(recs)
        got = df.filter(pl.col("doc_set") == f"{len(recs)} docs")["score"].mean()
        assert got == pytest.approx(expected)


def test_git_lfs_pointer_is_named(tmp_path, capsys):
    d = tmp_path / "out" / "org__model"
    d.mkdir(parents=True)
    pointer = d / "samples_boolq_2024-01-01T00-00-00.000000.jsonl"
    pointer.write_text(
        "version https://git-lfs.github.com/spec/v1\n"
        "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
        "size 1254488\n"
    )
    assert main(["ingest", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "Git LFS pointer, not the data (1254488 bytes stored in LFS)" in err[0]
    assert "git lfs pull --include" in err[0] and str(pointer) in err[0]
    table = tmp_path / "t.csv"
    table.write_text(pointer.read_text())
    with pytest.raises(IngestError, match="Git LFS pointer"):
        read(table)
