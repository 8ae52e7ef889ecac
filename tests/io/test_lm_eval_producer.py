"""lm-eval outputs written by the harness itself (fixtures/dumps/lm_eval/producer/, see its
PROVENANCE.md): every per-task mean equals the harness's own results file."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from evalstats.cli import main
from evalstats.io import detect_format
from evalstats.io.lm_eval import read_lm_eval

OUT = Path(__file__).resolve().parents[2] / "fixtures/dumps/lm_eval/producer/output"
RESULTS = sorted(OUT.rglob("results_*.json"))


def _expected() -> list[tuple[str, str, str, float, int]]:
    """(date, task, metric, value, n docs) from the harness's results files."""
    rows = []
    for f in RESULTS:
        date = f.stem.split("_", 1)[1]
        doc = json.loads(f.read_text())
        for task, res in doc["results"].items():
            n = doc["n-samples"][task]["effective"]
            for key, value in res.items():
                metric, _, filt = key.partition(",")
                if filt == "none" and metric in ("acc", "acc_norm", "exact_match"):
                    rows.append((date, task, metric, value, n))
    return rows


@pytest.mark.parametrize("metric", ["acc", "acc_norm"])
def test_every_task_mean_equals_the_harness_results(metric):
    assert detect_format(OUT) == "lm-eval"
    obs, report = read_lm_eval(OUT, metric={"toy_mc": metric, "toy_gen": "exact_match"})
    df = obs.collect()
    assert report.rows_read == report.rows_kept == 2 * (8 + 6) + 3 + 3
    assert df["model"].unique().to_list() == ["toy/dummy-lm"]
    checked = 0
    for date, task, m, value, n in _expected():
        if task == "toy_mc" and m != metric:
            continue
        files = [p for p in report.sources if p.endswith(f"samples_{task}_{date}.jsonl")]
        assert len(files) == 1
        runs = sorted(p for p in report.sources if f"samples_{task}_" in p)
        sub = df.filter((pl.col("dataset") == task) & (pl.col("doc_set") == f"{n} docs"))
        full_runs = [p for p in runs if p != files[0]] if n == 3 else []
        run = 0 if n == 3 else sorted(r for r in runs if r not in full_runs).index(files[0])
        got = sub.filter(pl.col("run") == run)["score"]
        assert got.len() == n and got.mean() == pytest.approx(value), (task, m, date)
        checked += 1
    assert checked == 6


def test_default_metric_skips_the_corpus_level_bleu(capsys):
    assert main(["ingest", str(OUT), "--level", "observations"]) == 0
    err = capsys.readouterr().err
    assert "toy_gen: score = metric 'exact_match', the first per-document metric" in err
    assert "corpus-level, not item scores: 'bleu'" in err
    assert "cover different documents (8 docs in 2 file(s), 3 docs in 1 file(s))" in err
    assert main(["ingest", str(OUT), "--metric", "toy_gen=bleu"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "metric 'bleu' of task 'toy_gen' is corpus-level" in err[0]
    assert "--metric toy_gen=<name>" in err[0]


def _records(task: str, date: str) -> list[dict]:
    f = next(OUT.rglob(f"samples_{task}_{date}.jsonl"))
    return [json.loads(x) for x in f.read_text().splitlines()]


def test_older_layouts_read_like_the_current_one(tmp_path):
    """The same harness records written as 0.4.0-0.4.2 and mid-2024 harnesses wrote them."""
    date = RESULTS[0].stem.split("_", 1)[1]
    results = json.loads(RESULTS[0].read_text())
    current = read_lm_eval(OUT / "toy__dummy-lm" / f"samples_toy_mc_{date}.jsonl")
    want = current.observations.collect().select("item", "score").sort("item")
    recs = _records("toy_mc", date)
    # 0.4.0-0.4.2: <model_args with / and = as __>_<task>.jsonl holding json.dumps(indent=2)
    old = tmp_path / "v040"
    old.mkdir()
    (old / "results.json").write_text(json.dumps(results, indent=2))
    (old / "pretrained__toy__dummy-lm_toy_mc.jsonl").write_text(json.dumps(recs, indent=2))
    obs, report = read_lm_eval(old)
    got = obs.collect()
    assert got.select("item", "score").sort("item").equals(want)
    assert got["dataset"].unique().to_list() == ["toy_mc"]
    assert any("0.4.0-0.4.2" in n for n in report.notes)
    # without a results file the model comes from the file name's model_args
    (old / "results.json").unlink()
    assert read_lm_eval(old).observations.collect()["model"][0] == "toy/dummy-lm"
    # mid 2024: samples_<task>.json (a JSON array) next to a results file
    mid = tmp_path / "mid2024"
    mid.mkdir()
    (mid / f"results_{date}.json").write_text(json.dumps(results))
    (mid / f"samples_toy_mc_{date}.json").write_text(json.dumps(recs, indent=2))
    assert detect_format(mid) == "lm-eval"
    obs, _ = read_lm_eval(mid)
    assert obs.collect().select("item", "score").sort("item").equals(want)
    assert obs.collect()["model"][0] == "toy/dummy-lm"
