from __future__ import annotations

import csv
import json
import shutil

import polars as pl
import pytest

from evalstats.aggregate import to_units
from evalstats.cli import main
from evalstats.errors import IngestError
from evalstats.io import detect_format, read
from evalstats.io.state_of_what_art import detect_state_of_what_art, read_state_of_what_art

ACC = "paraphrases accuracies/BBH"


@pytest.fixture
def sowa(shared_data):
    """The State of What Art release folder, read in place from ../shared/data (CDLA-Permissive-2.0):
    all 15 BBH tasks, 11 models, and the paraphrase metadata of every task."""
    return shared_data / "state-of-what-art"


def _independent_units(folder):
    """Unit scores straight from the CSV text with the csv module: {(task, model, idx): score}."""
    out = {}
    for f in sorted(folder.glob("*.csv")):
        with open(f, newline="") as fh:
            for row in csv.DictReader(fh):
                for col, val in row.items():
                    if col.endswith("_acc"):
                        out[(f.stem, col[: -len("_acc")], row["paraphrase idx"])] = float(val)
    return out


def test_reads_the_release_folder_with_accounting_and_same_unit_scores(sowa):
    obs, report = read_state_of_what_art(sowa)
    df = obs.collect()
    expected = _independent_units(sowa / ACC)
    assert report.rows_read == report.rows_kept + report.rows_set_aside
    assert report.rows_read == len(expected) == df.height == 28765
    assert report.format == "state-of-what-art" and len(report.sources) == 15
    got = {(r["dataset"], r["model"], r["variant"]): r["score"] for r in df.iter_rows(named=True)}
    assert got == expected
    assert set(df["n_items"]) == {100} and set(df["run"]) == {0}
    units = to_units(obs).collect()
    assert units.height == df.height  # already unit level


def test_metadata_is_joined_as_factor_columns(sowa, tmp_path):
    df = read_state_of_what_art(sowa)[0].collect()
    assert {"method", "correct"} <= set(df.columns)
    snarks = df.filter(pl.col("dataset") == "snarks")
    assert snarks["method"].null_count() == 0
    assert set(snarks["method"]) == {"default", "rephrase", "meta_desc", "meta_cot"}
    meta = pl.read_csv(sowa / "automatic paraphrases/BBH/snarks.csv")
    first = meta.filter(pl.col("prompt idx") == 2).row(0, named=True)
    row = snarks.filter(pl.col("variant") == "2").row(0, named=True)
    assert row["method"] == first["method"] and row["correct"] == bool(first["correct"])
    # a task without a metadata file keeps null factors, and the report says so
    release = tmp_path / "release"
    (release / ACC).mkdir(parents=True)
    (release / "automatic paraphrases/BBH").mkdir(parents=True)
    for task in ("snarks", "hyperbaton"):
        shutil.copy(sowa / ACC / f"{task}.csv", release / ACC / f"{task}.csv")
    shutil.copy(
        sowa / "automatic paraphrases/BBH/snarks.csv", release / "automatic paraphrases/BBH"
    )
    obs, report = read_state_of_what_art(release)
    part = obs.collect()
    assert part.filter(pl.col("dataset") == "snarks")["method"].null_count() == 0
    hyperbaton = part.filter(pl.col("dataset") == "hyperbaton")
    assert hyperbaton.height > 0 and hyperbaton["method"].null_count() == hyperbaton.height
    assert any("hyperbaton.csv: no paraphrase metadata found" in n for n in report.notes)


def test_uncertain_correct_mark_is_null_and_reported(sowa):
    obs, report = read_state_of_what_art(sowa)
    lds = obs.filter(pl.col("dataset") == "logical_deduction_seven_objects").collect()
    assert lds["correct"].null_count() == 11  # one paraphrase marked '0?', 11 models
    assert any("'0?'" in n for n in report.notes)


def test_metadata_false_and_single_file(sowa):
    f = sowa / ACC / "navigate.csv"
    obs, report = read_state_of_what_art(f, metadata=False)
    df = obs.collect()
    assert "method" not in df.columns and set(df["dataset"]) == {"navigate"}
    assert report.rows_read == 170 * 11


def test_explicit_metadata_folder(tmp_path, sowa):
    shutil.copy(sowa / ACC / "snarks.csv", tmp_path / "snarks.csv")
    obs, _ = read_state_of_what_art(
        tmp_path / "snarks.csv", metadata=sowa / "automatic paraphrases"
    )
    assert obs.collect()["method"].null_count() == 0


def test_detection_and_read_dispatch(sowa):
    assert detect_format(sowa) == "state-of-what-art"
    assert detect_format(sowa / ACC / "snarks.csv") == "state-of-what-art"
    assert not detect_state_of_what_art(sowa / "automatic paraphrases/BBH/snarks.csv")
    assert read(sowa / ACC / "snarks.csv").report.rows_read == 162 * 11


def test_missing_cell_is_an_error_naming_file_row_and_column(tmp_path):
    f = tmp_path / "task.csv"
    f.write_text("paraphrase idx,a_acc,b_acc\n1,0.5,0.6\n2,,0.4\n")
    with pytest.raises(IngestError, match=r"task.csv, row 2, column 'a_acc': expected a number"):
        read_state_of_what_art(f)
    obs, report = read_state_of_what_art(f, on_invalid="skip")
    assert report.set_aside == {"missing_score": 1}
    assert report.rows_read == 4 and obs.collect().height == 3


def test_non_numeric_cell_names_row_and_column(tmp_path):
    f = tmp_path / "task.csv"
    f.write_text("paraphrase idx,a_acc,b_acc\n1,0.5,0.6\n2,0.7,n/a\n")
    with pytest.raises(IngestError, match=r"task.csv, row 2, column 'b_acc': .*got 'n/a'"):
        read_state_of_what_art(f)
    assert read_state_of_what_art(f, on_invalid="skip").report.set_aside == {"unparseable_score": 1}


def test_percent_scale_is_refused_with_a_hint_and_converted_when_asked(tmp_path):
    f = tmp_path / "task.csv"
    f.write_text("paraphrase idx,a_acc\n1,50\n2,61\n3,70\n")
    with pytest.raises(IngestError, match=r"row 1.*got '50'.*look like percentages.*--rescale 100"):
        read_state_of_what_art(f)
    obs, report = read_state_of_what_art(f, score_scale="percent")
    assert obs.collect()["score"].to_list() == pytest.approx([0.5, 0.61, 0.7])
    assert any("divided by 100" in n for n in report.notes)


def test_not_an_accuracy_file(tmp_path):
    f = tmp_path / "other.csv"
    f.write_text("prompt idx,method\n1,default\n")
    with pytest.raises(IngestError, match="first column must be 'paraphrase idx'"):
        read_state_of_what_art(f)


def test_cli_ingest_report_adds_up(sowa, capsys):
    code = main(["ingest", str(sowa / ACC / "snarks.csv"), "--json"])
    assert code == 0
    report = json.loads(capsys.readouterr().out)["report"]
    assert report["format"] == "state-of-what-art"
    assert report["rows_read"] == report["rows_kept"] + sum(report["set_aside"].values()) == 1782
