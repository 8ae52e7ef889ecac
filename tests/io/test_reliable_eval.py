"""Reliable-Eval scores and predictions: fixtures in the reference code's shapes, quirks, bad input."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from evalstats.aggregate import to_units
from evalstats.cli import main
from evalstats.errors import IngestError, ParameterError
from evalstats.io import detect_format, read
from evalstats.io.reliable_eval import parse_template, read_reliable_eval

#: Models whose scores the reference analysis divides by 100 (analyze_100_resamplings.py).
PERCENT_MODELS = {"Llama-3-8B", "Llama-3.2-3B"}


@pytest.fixture
def root(fixtures) -> Path:
    return fixtures / "dumps" / "reliable_eval"


def loaded_units(obs):
    units = to_units(obs).collect()
    return {(r["model"], r["variant"]): r["score"] for r in units.iter_rows(named=True)}


# --- scores file ----------------------------------------------------------------------------


def test_scores_ingest_report_adds_up(root, capsys):
    path = root / "results" / "gpqa_results.json"
    assert detect_format(path) == "reliable-eval"
    assert main(["ingest", str(path), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)["report"]
    assert rep["format"] == "reliable-eval"
    # 3 models x (3 templates + 1 placeCorrectChoice template)
    assert rep["rows_read"] == 12 and rep["rows_kept"] == 9
    assert rep["set_aside"] == {"place_correct_choice": 3}
    assert rep["rows_read"] == rep["rows_kept"] + sum(rep["set_aside"].values())
    assert any("model 'Llama-3-8B' has scores on a 0-100 scale" in n for n in rep["notes"])


def test_scores_match_the_reference_analysis(root):
    """What analyze_100_resamplings.py feeds its convergence analysis: placeCorrectChoice
    templates dropped, Llama-3-8B / Llama-3.2-3B divided by 100."""
    path = root / "results" / "gpqa_results.json"
    raw = json.loads(path.read_text())
    expected = {
        (model, t): (v / 100 if model in PERCENT_MODELS else v)
        for model, per in raw.items()
        for t, v in per.items()
        if "placeCorrectChoice" not in t
    }
    obs, report = read_reliable_eval(path)
    assert loaded_units(obs) == pytest.approx(expected, rel=0, abs=0)
    df = obs.collect()
    assert "item" not in df.columns and set(df["dataset"]) == {"gpqa"}
    assert set(df["enumerator"]) == {"capitals", "numbers", "lowercase"}


def test_score_scale_unit_turns_percent_scores_into_an_error(root):
    with pytest.raises(
        IngestError,
        match=r"gpqa_results\.json, row 9, column 'score': expected a "
        r"number in \[0, 1\] \(the declared range of metric 'accuracy'\), got '28\.28.*"
        r"look like percentages",
    ):
        read_reliable_eval(root / "results" / "gpqa_results.json", score_scale="unit")


def test_score_scale_percent_divides_every_model(tmp_path):
    p = tmp_path / "x_results.json"
    p.write_text(json.dumps({"A": {"t1": 50, "t2": 25}}))
    obs, report = read_reliable_eval(p, score_scale="percent")
    assert sorted(obs.collect()["score"].to_list()) == [0.25, 0.5]


def test_parse_template_keys():
    key = (
        "MultipleChoiceTemplatesStructuredWithTopic.enumerator_lowercase_choicesSeparator_"
        "semicolon_shuffleChoices_alphabeticalSortReverse"
    )
    assert parse_template(key) == {
        "template": "MultipleChoiceTemplatesStructuredWithTopic",
        "enumerator": "lowercase",
        "separator": "semicolon",
        "choices_order": "alphabeticalSortReverse",
    }
    assert parse_template("my_prompt") == dict.fromkeys(
        ("template", "enumerator", "separator", "choices_order")
    )


# --- predictions ----------------------------------------------------------------------------


def independent_prediction_units(data: dict, preds: dict[str, dict]):
    """Correct when the completion's first line is the reference option (the fixture's completions
    are an option, verbatim, possibly followed by an explanation line)."""
    out = {}
    for model, per in preds.items():
        for t, comps in per.items():
            flags = [
                c.strip().splitlines()[0] == data[t]["references"][i][0]
                for i, c in enumerate(comps)
                if c is not None
            ]
            out[(model, t)] = sum(flags) / len(flags)
    return out


def test_per_model_predictions_match_independent_scoring(root, capsys):
    gpqa = root / "data" / "gpqa"
    data = json.loads((gpqa / "3_resamplings.json").read_text())
    preds = {
        p.stem.removesuffix("_predictions"): json.loads(p.read_text())
        for p in (gpqa / "predictions").glob("*_predictions.json")
    }
    assert main(["ingest", str(gpqa), "--on-invalid", "skip", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)["report"]
    n_preds = sum(len(c) for per in preds.values() for c in per.values())
    assert rep["rows_read"] == n_preds == 22
    assert rep["set_aside"] == {"missing_prediction": 1} and rep["rows_kept"] == 21
    obs, _ = read_reliable_eval(gpqa, on_invalid="skip")
    assert loaded_units(obs) == pytest.approx(independent_prediction_units(data, preds))


def test_combined_file_gives_the_same_table_as_per_model_files(root):
    a, ra = read_reliable_eval(root / "predictions" / "gpqa_combined.json", on_invalid="skip")
    b, rb = read_reliable_eval(root / "data" / "gpqa", on_invalid="skip")
    cols = ["model", "dataset", "item", "variant", "score", "answer", "gold", "response"]
    sort = ["model", "variant", "item"]
    assert a.select(cols).sort(sort).collect().equals(b.select(cols).sort(sort).collect())
    assert (ra.rows_read, ra.rows_kept) == (rb.rows_read, rb.rows_kept)


def test_prediction_rows_and_notes(root):
    obs, report = read_reliable_eval(root / "predictions" / "gpqa_combined.json", on_invalid="skip")
    row = obs.filter(item="1").collect().row(0, named=True)
    assert row["response"].endswith("Because it follows from the rules.")
    assert row["answer"] == row["gold"] or row["score"] == 0.0
    assert any("2 of 4 examples predicted" in n for n in report.notes)
    assert any("closest option" in n for n in report.notes)


def test_explicit_data_file(root, tmp_path):
    p = shutil.copy(root / "data" / "gpqa" / "predictions" / "GPT-4o_predictions.json", tmp_path)
    with pytest.raises(
        IngestError,
        match=r"per-model predictions need the resampled data file "
        r"for the gold answers; none was found\. Pass data=<file>",
    ):
        read_reliable_eval(p)
    obs, report = read_reliable_eval(
        p, data=root / "data" / "gpqa" / "3_resamplings.json", dataset="gpqa"
    )
    assert report.rows_kept == 12 and set(obs.collect()["model"]) == {"GPT-4o"}


# --- bad input ------------------------------------------------------------------------------


def test_null_completion_is_invalid_by_default(root):
    with pytest.raises(
        IngestError,
        match=r"gpqa_combined\.json, row 19, column 'response': the "
        r"completion is null \(a failed call\)",
    ):
        read_reliable_eval(root / "predictions" / "gpqa_combined.json")


def test_template_missing_from_the_data_file(root, tmp_path):
    data = root / "data" / "gpqa" / "3_resamplings.json"
    p = tmp_path / "X_predictions.json"
    p.write_text(json.dumps({"not.a.template": ["A. 6.0 eV"]}))
    with pytest.raises(
        IngestError,
        match=r"row 1, column 'template key': the template is not in "
        r"the data file",
    ):
        read_reliable_eval(p, data=data)


def test_more_predictions_than_examples(root, tmp_path):
    data_path = root / "data" / "gpqa" / "3_resamplings.json"
    key = next(iter(json.loads(data_path.read_text())))
    p = tmp_path / "X_predictions.json"
    p.write_text(json.dumps({key: ["A"] * 5}))
    with pytest.raises(
        IngestError,
        match=r"row 5, column 'example index': more predictions than "
        r"examples",
    ):
        read_reliable_eval(p, data=data_path)
    _, report = read_reliable_eval(p, data=data_path, on_invalid="skip")
    assert dict(report.set_aside) == {"unknown_item": 1} and report.rows_kept == 4


def test_unparseable_score(tmp_path):
    p = tmp_path / "gpqa_results.json"
    p.write_text(json.dumps({"A": {"t1": 0.5, "t2": "n/a"}}))
    with pytest.raises(
        IngestError,
        match=re.escape("gpqa_results.json, row 2, column 'score': expected a number, got 'n/a'"),
    ):
        read_reliable_eval(p)


def test_json_of_another_shape(tmp_path):
    p = tmp_path / "x.json"
    p.write_text(json.dumps({"a": 1}))
    with pytest.raises(
        IngestError,
        match=r"x\.json: not a Reliable-Eval file: expected .* \(top "
        r"level: an object whose first entry 'a' is a int\)",
    ):
        read_reliable_eval(p)


def test_invalid_json(tmp_path):
    p = tmp_path / "x.json"
    p.write_text('{"A": {"t": 0.5}')
    with pytest.raises(IngestError, match=r"x\.json: not valid JSON"):
        read_reliable_eval(p)


def test_scores_and_predictions_cannot_be_mixed(root):
    with pytest.raises(IngestError, match=r"the input mixes unit-level scores files"):
        read_reliable_eval(
            [root / "results" / "gpqa_results.json", root / "predictions" / "gpqa_combined.json"]
        )


def test_columns_are_not_used():
    with pytest.raises(ParameterError, match=r"`columns` is not used by the reliable-eval format"):
        read_reliable_eval("unused.json", columns="a=score")


def test_cli_bad_file_exits_2_without_traceback(tmp_path, capsys):
    p = tmp_path / "x.json"
    p.write_text("[1, 2]")
    assert main(["ingest", str(p), "--format", "reliable-eval"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("evalstats: error: ") and "not a Reliable-Eval file" in err
    assert "Traceback" not in err


def test_read_dispatches(root):
    _, report = read(root / "results" / "gpqa_results.json")
    assert report.format == "reliable-eval"
