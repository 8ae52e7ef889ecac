"""Every Eval Ever records: the published examples (read in place from ../shared/data), records
written by Every Eval Ever's own converters (fixtures/dumps/every_eval_ever/, PROVENANCE), and
``evalstats export``'s records, validated against the published schemas with jsonschema.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from numpy.testing import assert_allclose
from polars.testing import assert_frame_equal

from evalstats.cli import main
from evalstats.errors import IngestError
from evalstats.io import detect_format, read
from evalstats.io.every_eval_ever import (
    detect_every_eval_ever,
    read_every_eval_ever,
    write_every_eval_ever,
)
from evalstats.simulate import demo_observations, observations

ROOT = Path(__file__).resolve().parents[2]
CONVERTED = ROOT / "fixtures" / "dumps" / "every_eval_ever" / "converted"
HELM = ROOT / "fixtures" / "dumps" / "helm" / "benchmark_output" / "runs" / "evalstats-v1"
LM_EVAL = ROOT / "fixtures" / "dumps" / "lm_eval" / "output"
KEY = ["model", "dataset", "metric", "variant", "run", "item"]


@pytest.fixture(scope="module")
def validators(shared_data):
    jsonschema = pytest.importorskip("jsonschema")
    root = shared_data / "every-eval-ever" / "schemas"
    agg = json.loads((root / "eval.schema.json").read_text())
    inst = json.loads((root / "instance_level_eval.schema.json").read_text())
    return jsonschema.Draft7Validator(agg), jsonschema.Draft7Validator(inst)


def _errors(folder: Path, validators) -> list[str]:
    agg, inst = validators
    out = []
    for f in sorted(folder.rglob("*")):
        if f.suffix == ".json":
            out += [f"{f.name}: {e.message}" for e in agg.iter_errors(json.loads(f.read_text()))]
        elif f.suffix == ".jsonl":
            for i, line in enumerate(f.read_text().splitlines()):
                out += [f"{f.name}:{i}: {e.message}" for e in inst.iter_errors(json.loads(line))]
    return out


def _dataset(result: dict) -> str:
    """The dataset evalstats names a result by: its name, prefixed by its data when they
    differ (an Inspect scorer's ``accuracy`` over ``inspect_evals/pubmedqa``)."""
    name, data = result["evaluation_name"], result.get("source_data", {}).get("dataset_name")
    return f"{data}/{name}" if data and data.lower() not in name.lower() else name


def _aggregates(folder: Path) -> dict[tuple[str, str, str], float]:
    """``(model, evaluation_name, metric_id) -> score_details.score`` of records with samples."""
    out = {}
    for f in folder.rglob("*.json"):
        if not f.with_name(f.stem + "_samples.jsonl").exists():
            continue
        doc = json.loads(f.read_text())
        for r in doc["evaluation_results"]:
            key = (doc["model_info"]["id"], _dataset(r), r["metric_config"]["metric_id"])
            out[key] = r["score_details"]["score"]
    return out


def _means(obs: pl.LazyFrame) -> dict[tuple[str, str, str], float]:
    rows = obs.group_by("model", "dataset", "metric").agg(pl.col("score").mean()).collect()
    return {(m, d, k): s for m, d, k, s in rows.iter_rows()}


def test_converter_records_validate_against_the_published_schemas(validators):
    assert _errors(CONVERTED, validators) == []


def test_converted_records_ingest_and_equal_their_aggregates_where_whole():
    """Per-model means equal the producer's aggregate scores, except where the log was trimmed.

    Every Eval Ever's test logs keep all samples of arc_qwen (3), arc_sonnet (5), pubmedqa (2)
    and math_perturbed_full (10); cyse2 and intercode_ctf keep 1 sample of many.
    """
    obs, report = read(CONVERTED)
    assert report.format == "every-eval-ever"
    assert report.rows_read == report.rows_kept + sum(report.set_aside.values())
    # the header-only Inspect log and the lm-eval task without samples: aggregate records only
    assert report.set_aside == {"aggregate_only": 2}
    aggregates, means = _aggregates(CONVERTED), _means(obs)
    assert set(aggregates) == set(means)
    whole = {k: v for k, v in aggregates.items() if "cyse2" not in k[1] and "intercode" not in k[1]}
    assert len(whole) == 4
    for key, agg in whole.items():
        assert_allclose(means[key], agg, rtol=0, atol=1e-9, err_msg=str(key))
    assert (
        "producer summary: 4 of 7 aggregate score(s) equal the mean of their samples (1e-09)"
        in (report.notes)
    )
    differ = [n for n in report.notes if n.startswith("warning:") and "differs" in n]
    assert len(differ) == 3 and all("cyse2" in n or "intercode" in n for n in differ)


@pytest.mark.parametrize(
    ("original", "converted"),
    [
        ("inspect/evaleval+every_eval_ever__tests__data__inspect__data_arc_qwen.json", "arc_qwen"),
        (
            "inspect/evaleval+every_eval_ever__tests__data__inspect__data_arc_sonnet.json",
            "arc_sonnet",
        ),
        (
            "inspect/evaleval+every_eval_ever__tests__data__inspect__data_pubmedqa_gpt4o_mini.json",
            "pubmedqa",
        ),
        ("lm-eval/evaleval+every_eval_ever__tests__data__lm_eval", "lm_eval"),
    ],
)
def test_converted_records_equal_our_reading_of_the_original_logs(shared_data, original, converted):
    """The converter's samples hold the scores our Inspect and lm-eval loaders read from the logs.

    The model is not compared: the converter rewrites it (Ollama's ``qwen2.5:0.5b`` as
    ``qwen2.5-0.5b``; ``claude-sonnet-4-0`` as the dated ``claude-sonnet-4-20250514``).
    """
    theirs = next(p for p in CONVERTED.rglob("*") if p.is_dir() and converted in p.name)
    mine, _ = read(shared_data / "real-logs-2" / original)
    eee, _ = read(theirs)
    cols = ["item", "run", "score"]
    a = mine.select(cols).collect().sort(cols)
    b = eee.select(cols).collect().sort(cols)
    assert_frame_equal(a, b)


def test_shared_examples_ingest_with_every_record_counted(shared_data):
    examples = shared_data / "every-eval-ever" / "examples"
    assert detect_format(examples) == "every-eval-ever"
    obs, report = read(examples)
    assert report.rows_read == report.rows_kept + sum(report.set_aside.values())
    # one sample line; the aggregate-only record's 6 results and the datastore index line
    assert (report.rows_read, report.rows_kept) == (8, 1)
    assert report.set_aside == {"aggregate_only": 6, "index_entry": 1}
    row = obs.collect().row(0, named=True)
    assert (row["model"], row["dataset"], row["item"], row["score"]) == (
        "demo-org/demo-model",
        "demo-source.demo_bench",
        "demo_0001",
        1.0,
    )
    assert (row["answer"], row["gold"], row["response"]) == ("4", "4", "The answer is 4.")
    # the demo aggregate (0.75) is not the mean of its single sample: the report says so
    assert any("0.75 differs from the mean 1 of 1 sample" in n for n in report.notes)


def test_an_aggregate_only_record_gives_its_scores_as_unit_rows(shared_data):
    f = shared_data / "every-eval-ever" / "examples" / "98ea850e-7019-4728-a558-8b1819ec47c2.json"
    obs, report = read(f)
    doc = json.loads(f.read_text())
    want = {_dataset(r): r["score_details"]["score"] for r in doc["evaluation_results"]}
    got = dict(obs.select("dataset", "score").collect().iter_rows())
    assert got == want and report.rows_kept == 6
    assert "item" not in obs.collect_schema()


def test_a_datastore_index_alone_is_refused(shared_data):
    f = shared_data / "every-eval-ever" / "examples" / "community_aggregate.jsonl"
    assert detect_every_eval_ever(f)
    with pytest.raises(IngestError, match="datastore index of 1 aggregate record"):
        read(f)


@pytest.mark.parametrize("source", ["helm", "lm-eval", "simulated"])
def test_export_validates_and_round_trips_unchanged(source, tmp_path, validators, capsys):
    out = tmp_path / "eee"
    if source == "simulated":
        original = demo_observations().filter(pl.col("model").is_in(["m0", "m1"])).head(4000)
        f = tmp_path / "obs.parquet"
        original.write_parquet(f)
        path = f
    else:
        path = HELM if source == "helm" else LM_EVAL
    code = main(["export", str(path), str(out), "--format", "every-eval-ever"])
    assert code == 0, capsys.readouterr().err
    assert _errors(out, validators) == []
    before, _ = read(path)
    after, report = read(out)
    assert report.format == "every-eval-ever"
    before, after = before.collect(), after.collect()
    assert after.columns == before.columns
    assert_frame_equal(before.sort(KEY), after.sort(KEY))
    assert any(n.startswith("producer summary:") and "(1e-09)" in n for n in report.notes)
    assert not any("differs" in n for n in report.notes)


def test_export_of_a_hand_built_table_without_metric(tmp_path):
    obs = observations(n_models=2, n_items=3, n_variants=2, n_runs=2, seed=0)
    paths = write_every_eval_ever(obs, tmp_path)
    assert len(paths) == 4
    back, _ = read_every_eval_ever(tmp_path)
    back = back.collect()
    assert set(back["metric"]) == {"score"}
    key = ["model", "dataset", "variant", "run", "item"]
    assert_frame_equal(obs.sort(key), back.select(obs.columns).sort(key))


def test_multi_turn_and_agentic_samples_take_the_last_assistant_turn(tmp_path):
    base = {
        "schema_version": "0.3.0",
        "evaluation_id": "e",
        "model_id": "org/m",
        "evaluation_name": "agent_bench",
        "input": {"raw": "fix the bug", "reference": ["done"]},
        "answer_attribution": [],
        "output": None,
    }
    lines = [
        {
            **base,
            "sample_id": "s1",
            "interaction_type": kind,
            "messages": [
                {"turn_idx": 0, "role": "user", "content": "fix the bug"},
                {"turn_idx": 1, "role": "assistant", "content": f"{kind} done"},
            ],
            "evaluation": {"score": score, "is_correct": score == 1, "num_turns": 2},
            "metadata": {"epoch": str(epoch)},
        }
        for kind, score, epoch in [("multi_turn", 1.0, 1), ("agentic", 0.0, 2)]
    ]
    f = tmp_path / "0a1b2c3d-0000-4000-8000-000000000000_samples.jsonl"
    f.write_text("".join(json.dumps(x) + "\n" for x in lines))
    obs, report = read(f)
    rows = obs.select("item", "run", "score", "response", "gold").collect().rows()
    assert rows == [
        ("s1", 0, 1.0, "multi_turn done", "done"),
        ("s1", 1, 0.0, "agentic done", "done"),
    ]
    assert any("score" == m.name for m in report.metrics)


def test_a_line_that_is_not_json_names_the_file_and_row(tmp_path):
    f = tmp_path / "0a1b2c3d-0000-4000-8000-000000000000_samples.jsonl"
    good = {
        "evaluation_id": "e",
        "model_id": "m",
        "evaluation_name": "d",
        "sample_id": "1",
        "interaction_type": "single_turn",
        "evaluation": {"score": 1, "is_correct": True},
    }
    f.write_text(json.dumps(good) + "\n{not json\n")
    with pytest.raises(IngestError, match=r"row 2.*not valid JSON"):
        read_every_eval_ever(f)
    obs, report = read_every_eval_ever(f, on_invalid="skip")
    assert (report.rows_read, report.rows_kept, dict(report.set_aside)) == (
        2,
        1,
        {"invalid_json": 1},
    )


def test_json_nested_too_deeply_is_one_line(tmp_path):
    """A RecursionError escaped format detection and loading (issue 28's class, new loaders)."""
    from evalstats.errors import IngestError
    from evalstats.io import read

    deep = "[" * 100_000 + "]" * 100_000
    agg = tmp_path / "agg" / "x.json"
    agg.parent.mkdir()
    agg.write_text('{"schema_version": "0.2", "evaluation_results": ' + deep + "}")
    with pytest.raises(IngestError, match="nested too deeply"):
        read(agg, format="every-eval-ever")
    samples = tmp_path / "s" / "x_samples.jsonl"
    samples.parent.mkdir()
    samples.write_text('{"evaluation_id": "e", "sample_id": "1", "x": ' + deep + "}\n")
    with pytest.raises(IngestError):  # not valid here, and never a RecursionError
        read(samples, format="every-eval-ever")
