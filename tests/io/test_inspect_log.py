"""Inspect AI logs: real .eval logs (../shared/data), hand-written logs in the documented schema, bad input."""

from __future__ import annotations

import json
import math
import re
import shutil
import zipfile
from pathlib import Path

import polars as pl
import pytest
from numpy.testing import assert_allclose

from evalstats.aggregate import to_units
from evalstats.cli import main
from evalstats.errors import IngestError, ParameterError
from evalstats.io import detect_format, read
from evalstats.io.inspect_log import read_inspect, value_to_float

# The score letters as inspect_ai.scorer defines them (CORRECT, PARTIAL, INCORRECT, NOANSWER).
LETTERS = {"C": 1.0, "P": 0.5, "I": 0.0, "N": 0.0}


@pytest.fixture
def real(shared_data) -> Path:
    """inspect_ai's own test logs (UKGovernmentBEIS/inspect_ai, MIT), read in place from
    ../shared/data/inspect-logs: ``mmlu-summary-choices.eval`` (inspect_ai 0.3.154, one MMLU
    sample scored ``I``) and ``popularity1.eval`` (0.3.58, 10 samples written without scores)."""
    return shared_data / "inspect-logs"


@pytest.fixture
def logs(fixtures) -> Path:
    return fixtures / "dumps" / "inspect"


def independent_units(samples, header, scorer):
    """Mean score per epoch computed straight from the JSON, without the loader."""
    by_run: dict[int, list[float]] = {}
    for s in samples:
        sc = (s.get("scores") or {}).get(scorer.split(".")[0])
        if sc is None:
            continue
        v = sc["value"]
        if isinstance(v, dict):
            v = v[scorer.split(".")[1]]
        if isinstance(v, float) and math.isnan(v):
            continue
        x = LETTERS[v] if v in LETTERS else float(v)
        by_run.setdefault(s["epoch"] - 1, []).append(x)
    return {
        (header["eval"]["model"], header["eval"]["task"], run): sum(v) / len(v)
        for run, v in by_run.items()
    }


def loaded_units(obs):
    # an errored sample leaves one epoch short of an item: each run over its own items
    units = to_units(obs, on_mismatch="keep").collect()
    return {(r["model"], r["dataset"], r["run"]): r["score"] for r in units.iter_rows(named=True)}


# --- real logs ------------------------------------------------------------------------------


def test_real_logs_ingest_report_adds_up(real, capsys):
    rc = main(["ingest", str(real), "--format", "inspect", "--json"])
    out = capsys.readouterr().out
    assert rc == 0
    rep = json.loads(out)["report"]
    assert rep["format"] == "inspect"
    # 1 mmlu sample (scored 'I') + 10 popularity samples written without scores
    assert rep["rows_read"] == 11 and rep["rows_kept"] == 1
    assert rep["set_aside"] == {"unscored": 10}
    assert rep["rows_read"] == rep["rows_kept"] + sum(rep["set_aside"].values())


def test_real_logs_summary_on_stderr_is_auto_detected(real, capsys):
    assert detect_format(real) == "inspect"
    assert main(["ingest", str(real)]) == 0
    err = capsys.readouterr().err
    assert "ingest (inspect): 2 files, 11 rows read, 1 kept, 10 set aside" in err
    assert "set aside 10 x unscored" in err


def test_real_mmlu_log_matches_independent_reading(real):
    path = real / "mmlu-summary-choices.eval"
    with zipfile.ZipFile(path) as z:
        header = json.loads(z.read("header.json"))
        samples = [json.loads(z.read(n)) for n in z.namelist() if n.startswith("samples/")]
    expected = independent_units(samples, header, "choice")
    obs, report = read_inspect(path)
    assert loaded_units(obs) == expected == {("openai/gpt-4o", "inspect_evals/mmlu_0_shot", 0): 0.0}
    row = obs.collect().row(0, named=True)
    assert (row["item"], row["answer"], row["gold"], row["response"]) == (
        "1",
        "C",
        "A",
        "ANSWER: C",
    )
    # the header's own metric agrees with the loaded unit score
    acc = header["results"]["scores"][0]["metrics"]["accuracy"]["value"]
    assert loaded_units(obs)[("openai/gpt-4o", "inspect_evals/mmlu_0_shot", 0)] == acc


def test_log_without_any_score_is_an_error(real):
    with pytest.raises(IngestError, match=r"popularity1\.eval: no sample has a score"):
        read_inspect(real / "popularity1.eval")


# --- hand-written logs in the documented schema --------------------------------------------


@pytest.mark.parametrize("scorer", ["match", "model_graded_qa"])
def test_json_log_epochs_and_scorers_match_independent_computation(logs, scorer):
    path = logs / "synthetic" / "arith_two_scorers.json"
    doc = json.loads(path.read_text())
    obs, report = read_inspect(path, scorer=scorer)
    assert loaded_units(obs) == pytest.approx(independent_units(doc["samples"], doc, scorer))
    expected_aside = {"unscored": 1} if scorer == "model_graded_qa" else {}
    assert dict(report.set_aside) == expected_aside
    assert report.rows_read == 8 == report.rows_kept + report.rows_set_aside
    # the sample that ended in an error is kept without a score, its error classed
    assert sum(report.errors.values()) == 1 == report.errors_unscored


def test_default_scorer_is_the_first_in_the_header_and_the_report_says_so(logs):
    obs, report = read_inspect(logs / "synthetic" / "arith_two_scorers.json")
    assert any(
        "scores from scorer 'match' (also available: 'model_graded_qa')" in n for n in report.notes
    )
    assert any("run = epoch - 1" in n for n in report.notes)
    runs = obs.select("run").unique().sort("run").collect().to_series().to_list()
    assert runs == [0, 1]


def test_columns_route_picks_the_scorer(logs, capsys):
    path = logs / "synthetic" / "arith_two_scorers.json"
    a = read_inspect(path, columns="model_graded_qa=score").observations.collect()
    b = read_inspect(path, scorer="model_graded_qa").observations.collect()
    assert a.equals(b)
    assert main(["ingest", str(path), "--columns", "model_graded_qa=score", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)["report"]
    assert rep["set_aside"] == {"unscored": 1}
    assert rep["errors_unscored"] == 1


def test_eval_archive_with_dictionary_scores(logs):
    path = logs / "synthetic" / "arith_rubric.eval"
    with zipfile.ZipFile(path) as z:
        header = json.loads(z.read("header.json"))
        samples = [json.loads(z.read(n)) for n in z.namelist() if n.startswith("samples/")]
    for scorer in ("rubric.accuracy", "rubric.fluency"):
        obs, _ = read_inspect(path, scorer=scorer)
        assert loaded_units(obs) == pytest.approx(independent_units(samples, header, scorer))
    obs, report = read_inspect(path)
    assert any("'rubric.accuracy' (also available: 'rubric.fluency')" in n for n in report.notes)
    assert obs.select("item").collect().to_series().to_list() == ["q-1", "q-2", "q-3"]


def test_factor_columns_from_task_args_and_generation_config(logs):
    obs, _ = read_inspect(logs / "synthetic" / "arith_two_scorers.json")
    df = obs.collect()
    assert df["variant"].unique().to_list() == ["shots=0|temperature=0.5"]
    assert {"shots", "temperature"} <= set(df.columns)


@pytest.mark.parametrize(
    "value,expected",
    [
        ("C", 1.0),
        ("P", 0.5),
        ("I", 0.0),
        ("N", 0.0),
        (True, 1.0),
        (False, 0.0),
        (0.3, 0.3),
        (2, 2.0),
        ("yes", 1.0),
        ("FALSE", 0.0),
        ("0.25", 0.25),
        ("maybe", None),
        ({"a": 1}, None),
        ("nan", None),
    ],
)
def test_value_to_float_follows_inspect(value, expected):
    assert value_to_float(value) == expected


# --- bad input ------------------------------------------------------------------------------


def write_log(path: Path, samples, scorers=("match",)) -> Path:
    log = {
        "version": 2,
        "status": "success",
        "eval": {
            "task": "t",
            "model": "m",
            "task_args": {},
            "scorers": [{"name": s} for s in scorers],
        },
        "plan": {"config": {}},
        "samples": samples,
    }
    path.write_text(json.dumps(log))
    return path


def test_unparseable_value_names_file_row_and_scorer(tmp_path):
    p = write_log(
        tmp_path / "log.json",
        [
            {"id": 1, "epoch": 1, "scores": {"match": {"value": "C"}}},
            {"id": 2, "epoch": 1, "scores": {"match": {"value": "maybe"}}},
        ],
    )
    with pytest.raises(
        IngestError,
        match=re.escape(
            "log.json, row 2, column 'scores.match.value': expected a number, got 'maybe'"
        ),
    ):
        read_inspect(p)
    obs, report = read_inspect(p, on_invalid="skip")
    assert dict(report.set_aside) == {"unparseable_score": 1} and report.rows_kept == 1


def test_unknown_scorer_lists_the_scorers(logs):
    with pytest.raises(
        IngestError,
        match=r"no scorer 'nope' in the log \(scorers: 'match', "
        r"'model_graded_qa'\)",
    ):
        read_inspect(logs / "synthetic" / "arith_two_scorers.json", scorer="nope")


def test_json_that_is_not_an_inspect_log(tmp_path):
    p = tmp_path / "other.json"
    p.write_text(json.dumps({"results": {}}))
    with pytest.raises(
        IngestError,
        match=r"other\.json: not an Inspect log: expected a JSON "
        r"object with an 'eval' header \(keys: results\)",
    ):
        read_inspect(p)


def test_foreign_json_in_a_folder_is_skipped_with_a_note(tmp_path, logs):
    shutil.copy(logs / "synthetic" / "arith_two_scorers.json", tmp_path)
    (tmp_path / "logs.json").write_text(json.dumps({"a.eval": {}}))
    _, report = read_inspect(tmp_path)
    assert any(
        "skipped 1 .json file(s) that are not Inspect logs: logs.json" in n for n in report.notes
    )


def test_damaged_eval_archive(tmp_path):
    p = tmp_path / "broken.eval"
    p.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(IngestError, match=r"broken\.eval: not a readable \.eval \(zip\) archive"):
        read_inspect(p)


def test_archive_without_header(tmp_path):
    p = tmp_path / "x.eval"
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("samples/1_epoch_1.json", json.dumps({"id": 1, "epoch": 1}))
    with pytest.raises(
        IngestError,
        match=r"x\.eval: not an Inspect \.eval log: the archive has "
        r"no header\.json or _journal/start\.json",
    ):
        read_inspect(p)


def test_unfinished_eval_reads_model_from_the_journal(tmp_path):
    p = tmp_path / "running.eval"
    with zipfile.ZipFile(p, "w") as z:
        z.writestr(
            "_journal/start.json",
            json.dumps(
                {
                    "version": 2,
                    "eval": {"task": "t", "model": "m", "scorers": [{"name": "match"}]},
                    "plan": {},
                }
            ),
        )
        z.writestr(
            "samples/1_epoch_1.json",
            json.dumps({"id": 1, "epoch": 1, "scores": {"match": {"value": "C"}}}),
        )
    obs, report = read_inspect(p)
    assert obs.select("model", "dataset", "score").collect().rows() == [("m", "t", 1.0)]
    assert any("no header.json (the run did not finish)" in n for n in report.notes)


def test_columns_can_only_pick_a_scorer():
    with pytest.raises(
        ParameterError, match=r"`columns` for Inspect logs can only pick the scorer"
    ):
        read_inspect("unused.eval", columns="id=item")


def test_cli_bad_log_exits_2_without_traceback(tmp_path, capsys):
    p = tmp_path / "broken.eval"
    p.write_bytes(b"garbage")
    assert main(["ingest", str(p), "--format", "inspect"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("evalstats: error: ") and "broken.eval" in err
    assert "Traceback" not in err


def test_read_dispatches_to_inspect(logs):
    obs, report = read(logs / "synthetic" / "arith_two_scorers.json")
    assert report.format == "inspect"
    assert obs.collect().height == 8  # 7 scored samples and 1 that ended in an error
    scored = obs.collect().filter(pl.col("score").is_not_null())
    assert scored.height == 7 and obs.collect()["error"].is_not_null().sum() == 1
    assert pl.Series(scored["score"]).is_between(0, 1).all()
    assert_allclose(obs.collect()["score"].mean(), 4 / 7)
