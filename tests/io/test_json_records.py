"""JSON arrays of records and records nested in an object (issue 43, item 1).

Files are written here in the shapes the issue names: an array of records, and a web app's
results file (an object of models, each a list of cases).
"""

from __future__ import annotations

import json

import polars as pl
import pytest

from evalstats.errors import IngestError, ParameterError
from evalstats.io import detect_format, read
from evalstats.io.json_records import detect_json_records, read_json_records


def _cases(model_scores):
    return {
        m: [{"case_id": i, "passed": s} for i, s in enumerate(v)] for m, v in model_scores.items()
    }


def test_an_array_of_records_is_read_as_a_table(tmp_path):
    f = tmp_path / "mmlu.json"
    rows = [
        {"model": m, "item": i, "score": (i + k) % 2} for k, m in enumerate("ab") for i in range(4)
    ]
    f.write_text(json.dumps(rows))
    assert detect_format(f) == "json-records"
    obs, report = read(f)
    df = obs.collect()
    assert report.format == "json-records" and report.sources == (str(f),)
    assert report.rows_read == report.rows_kept == 8
    assert df["dataset"].unique().to_list() == ["mmlu"]
    assert df.group_by("model").agg(pl.col("score").mean()).sort("model").rows() == [
        ("a", 0.5),
        ("b", 0.5),
    ]


def test_an_object_of_models_each_a_list_of_cases_reads_with_records(tmp_path):
    f = tmp_path / "results.json"
    f.write_text(
        json.dumps({"run": "x", "results": _cases({"m1": [1, 0, 1, 1], "m2": [0, 0, 1, 0]})})
    )
    with pytest.raises(IngestError, match=r"2 lists of records.*records='results\.\{key\}'"):
        read_json_records(f)
    obs, report = read_json_records(
        f, records="results.{model}", columns="case_id=item,passed=score"
    )
    means = obs.collect().group_by("model").agg(pl.col("score").mean()).sort("model").rows()
    assert means == [("m1", 0.75), ("m2", 0.25)]
    assert report.rows_read == 8


def test_the_one_list_of_an_object_is_found_with_a_note(tmp_path):
    f = tmp_path / "export.json"
    f.write_text(
        json.dumps({"meta": {"n": 2}, "data": {"rows": [{"model": "a", "id": 1, "correct": True}]}})
    )
    assert detect_json_records(f)
    _, report = read(f)
    assert any("records read from 'data.rows'" in n for n in report.notes)


def test_nested_record_fields_are_flattened_with_dots(tmp_path):
    f = tmp_path / "r.json"
    f.write_text(json.dumps([{"model": "a", "id": 1, "scores": {"acc": 1, "f1": 0.5}}]))
    obs, _ = read_json_records(f, columns="scores.f1=score")
    assert obs.collect()["score"].to_list() == [0.5]


def test_a_bad_path_names_the_keys_found(tmp_path):
    f = tmp_path / "r.json"
    f.write_text(json.dumps({"data": [{"score": 1}]}))
    with pytest.raises(IngestError, match=r"r\.json: records path step 'rows'.*keys: data"):
        read_json_records(f, records="rows")
    with pytest.raises(ParameterError, match="empty step"):
        read_json_records(f, records="data..x")


def test_json_that_holds_no_scored_records_is_not_taken(tmp_path):
    f = tmp_path / "config.json"
    f.write_text(json.dumps({"temperature": 0, "models": [{"name": "a"}]}))
    assert not detect_json_records(f)


def test_a_record_error_names_the_json_file_and_row(tmp_path):
    f = tmp_path / "r.json"
    f.write_text(
        json.dumps([{"model": "a", "id": 1, "score": 1}, {"model": "a", "id": 2, "score": "x"}])
    )
    with pytest.raises(IngestError, match=r"r\.json, row 2, column 'score'"):
        read_json_records(f)


def test_cli_records_reads_a_nested_file_no_detector_takes(tmp_path, capsys):
    from evalstats.cli import main

    f = tmp_path / "app.json"
    f.write_text(json.dumps(_cases({"m1": [1, 1], "m2": [0, 1]})))
    assert main(["ingest", str(f)]) == 2
    assert "--records" in capsys.readouterr().err
    code = main(
        ["ingest", str(f), "--records", "{model}", "--columns", "case_id=item,passed=score"]
    )
    assert code == 0
    assert "ingest (json-records): 1 file, 4 rows read, 4 kept" in capsys.readouterr().err


def test_an_object_of_records_keyed_by_id_with_the_model_beside_it(tmp_path):
    """A web app's file: {"model": ..., "questions": {"1": {...}, "2": {...}}}."""
    for model, marks in (("a", [1, 0, 1]), ("b", [1, 1, 1])):
        doc = {
            "model": model,
            "timestamp": "2025-05-29",
            "questions": {
                str(i + 1): {"answer": "x", "binary_correct": m} for i, m in enumerate(marks)
            },
        }
        (tmp_path / f"bench_{model}.json").write_text(json.dumps(doc))
    obs, report = read(
        tmp_path,
        format="json-records",
        records="questions.{item}",
        columns="binary_correct=score",
        dataset="qa",
    )
    df = obs.collect()
    assert df.group_by("model").agg(pl.col("score").mean()).sort("model").rows() == [
        ("a", 2 / 3),
        ("b", 1.0),
    ]
    assert sorted(df["item"].unique()) == ["1", "2", "3"] and report.rows_read == 6


def test_an_object_keyed_by_file_names_is_kept_whole_not_flattened(tmp_path):
    f = tmp_path / "r.json"
    rec = {"model": "a", "id": 1, "score": 1, "files": {"output.txt": "x", "input.sysml": "y"}}
    f.write_text(json.dumps([rec]))
    obs, report = read_json_records(f)
    cols = obs.collect_schema().names()
    assert "response" not in cols and not any(c.startswith("files.") for c in cols)
