"""Issue 17, the remainder: malformed JSON lines, State of What Art model columns given twice,
folders that mix formats. One line naming file and place (exit 2), or a counted reason; never a
traceback, never a file or row dropped without a word."""

from __future__ import annotations

import gzip
from pathlib import Path

import polars as pl
import pytest

from evalstats.errors import IngestError
from evalstats.io import read, read_table
from tests._cli import cli as _cli
from tests._cli import one_line_error as _one_line_error
from tests.conftest import needs_shared_data, shared

ROOT = Path(__file__).resolve().parents[2]


# --- a malformed JSON line in a plain table -------------------------------------------------

GOOD = '{"model": "a", "item": "%d", "score": %d}'


def _jsonl(tmp_path: Path, lines: list[str], name: str = "t.jsonl") -> Path:
    path = tmp_path / name
    data = ("\n".join(lines) + "\n").encode()
    if name.endswith(".gz"):
        data = gzip.compress(data)
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("name", ["t.jsonl", "t.ndjson", "t.jsonl.gz"])
def test_malformed_json_line_names_file_and_line(tmp_path, name):
    lines = [GOOD % (1, 1), '{"model": "a", "item": "2", "score": 0', GOOD % (3, 1)]
    path = _jsonl(tmp_path, lines, name)
    with pytest.raises(IngestError, match=r"row 2: the line is not a JSON object") as err:
        read_table(path)
    assert err.value.path == str(path) and err.value.row == 2
    code, _, e = _cli("ingest", str(path))
    _one_line_error(code, e, str(path), "row 2", "--on-invalid skip")


def test_malformed_json_lines_are_set_aside_and_counted_with_skip(tmp_path):
    lines = [GOOD % (1, 1), "", "[1, 2]", GOOD % (3, 0), "not json", '"a string"', GOOD % (5, 1)]
    path = _jsonl(tmp_path, lines)
    obs, report = read_table(path, on_invalid="skip")
    assert report.rows_read == 7 and report.rows_kept == 3
    assert dict(report.set_aside) == {"bad_json": 3, "blank_line": 1}
    assert [e.row for e in report.examples if e.reason == "bad_json"] == [3, 5, 6]
    assert obs.collect()["item"].to_list() == ["1", "3", "5"]
    assert obs.collect()["score"].to_list() == [1.0, 0.0, 1.0]


def test_malformed_json_line_after_the_inferred_rows_is_found(tmp_path):
    """polars infers the schema from the first rows and fails later without a line number."""
    lines = [GOOD % (i, i % 2) for i in range(12_000)]
    lines[11_500] = lines[11_500][:-2]
    path = _jsonl(tmp_path, lines)
    with pytest.raises(IngestError, match="row 11501"):
        read_table(path)
    _, report = read_table(path, on_invalid="skip")
    assert (report.rows_read, report.rows_kept, dict(report.set_aside)) == (
        12_000,
        11_999,
        {"bad_json": 1},
    )


def test_json_lines_file_with_no_object_is_one_line(tmp_path):
    path = _jsonl(tmp_path, ["nope", "42"])
    code, _, e = _cli("ingest", str(path), "--on-invalid", "skip")
    _one_line_error(code, e, str(path), "no line is a JSON object")


def test_valid_json_lines_read_as_before(tmp_path):
    path = _jsonl(tmp_path, [GOOD % (i, i % 2) for i in range(5)])
    obs, report = read_table(path)
    assert report.rows_kept == 5 and not report.set_aside
    assert obs.collect()["score"].to_list() == [0.0, 1.0, 0.0, 1.0, 0.0]


# --- State of What Art: one model given by two columns --------------------------------------


@pytest.mark.parametrize(
    "header, shown",
    [
        ("paraphrase idx,a_acc,a_acc,b_acc", "'a_acc' and 'a_acc'"),
        ("paraphrase idx,a_acc,b_acc,a _acc", "'a_acc' and 'a _acc'"),
        ('paraphrase idx,a_acc," a_acc",b_acc', "'a_acc' and 'a_acc'"),
    ],
)
def test_state_of_what_art_model_given_twice_is_one_line(tmp_path, header, shown):
    path = tmp_path / "snarks.csv"
    path.write_text(header + "\n1,0.5,0.6,0.3\n2,0.7,0.4,0.2\n")
    with pytest.raises(IngestError, match="both give the accuracy of model 'a'") as err:
        read(path)
    assert err.value.path == str(path) and shown in str(err.value)
    code, _, e = _cli("ingest", str(path))
    _one_line_error(code, e, str(path), "model 'a'", shown)


def test_state_of_what_art_quoted_header_with_comma_keeps_models_apart(tmp_path):
    path = tmp_path / "snarks.csv"
    path.write_text('paraphrase idx,"org,x_acc",x_acc\n1,0.5,0.6\n2,0.7,0.4\n')
    obs, report = read(path, format="state-of-what-art")
    rows = obs.select("model", "variant", "score").collect().sort("model", "variant").rows()
    assert rows == [("org,x", "1", 0.5), ("org,x", "2", 0.7), ("x", "1", 0.6), ("x", "2", 0.4)]
    assert report.rows_read == report.rows_kept == 4


# --- folders that mix formats ----------------------------------------------------------------

DUMPS = ROOT / "fixtures" / "dumps"
LM_EVAL = DUMPS / "lm_eval" / "output"
# real logs and tables, read in place from ../shared/data (tests marked needs_shared_data)
INSPECT = shared("inspect-logs")
OPENAI = shared("real-logs", "openai-evals")
SOWA = shared("state-of-what-art")


def _copy(src: Path, dst: Path) -> None:
    import shutil

    if src.is_dir():
        shutil.copytree(src, dst, dirs_exist_ok=True)
    else:
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src, dst)


def _csv(path: Path, n: int = 6) -> Path:
    path.write_text("model,item,score\n" + "".join(f"x,{i},{i % 2}\n" for i in range(n)))
    return path


def test_lm_eval_folder_with_a_csv_reads_every_file_by_its_own_format(tmp_path):
    """Before: the folder was detected as lm-eval and the CSV's rows were gone without a note."""
    _copy(LM_EVAL, tmp_path)
    _csv(tmp_path / "extra.csv")
    alone = read(LM_EVAL).report
    obs, report = read(tmp_path)
    assert report.format == "mixed"
    assert [(c.format, c.files, c.rows_read, c.rows_kept) for c in report.by_format] == [
        ("lm-eval", len(alone.sources), alone.rows_read, alone.rows_kept),
        ("table", 1, 6, 6),
    ]
    assert report.rows_read == alone.rows_read + 6 == report.rows_kept + report.rows_set_aside
    table = obs.collect()
    assert table.height == report.rows_kept
    assert table.filter(pl.col("model") == "x")["score"].to_list() == [0.0, 1.0] * 3
    assert "table: 1 file, 6 rows read, 6 kept" in report.summary()
    assert report.to_dict()["by_format"][1] == {
        "format": "table",
        "files": 1,
        "rows_read": 6,
        "rows_kept": 6,
    }
    # results_<date>.json files are companions of the lm-eval samples, not unreadable data
    assert not any("match no format" in n for n in report.notes)


@needs_shared_data
def test_mixed_folder_of_three_formats_keeps_every_row_and_units_agree(tmp_path):
    from evalstats.aggregate import read_units, to_units

    _copy(INSPECT / "mmlu-summary-choices.eval", tmp_path / "logs" / "mmlu.eval")
    _copy(OPENAI, tmp_path / "oai")
    _csv(tmp_path / "extra.csv")
    (tmp_path / "README.md").write_text("what these are")
    parts = {
        "inspect": read(tmp_path / "logs").report,
        "openai-evals": read(tmp_path / "oai").report,
        "table": read(tmp_path / "extra.csv").report,
    }
    obs, report = read(tmp_path, on_invalid="skip")
    got = {c.format: (c.files, c.rows_read, c.rows_kept) for c in report.by_format}
    assert got == {k: (len(r.sources), r.rows_read, r.rows_kept) for k, r in parts.items()}
    assert report.rows_read == sum(r.rows_read for r in parts.values())
    assert dict(report.set_aside) == {k: v for r in parts.values() for k, v in r.set_aside.items()}
    assert any(
        n.startswith("not read: 1 file(s) that are not data") and "README.md" in n
        for n in report.notes
    )
    units, ureport = read_units(tmp_path, on_invalid="skip")
    assert ureport.by_format == report.by_format
    expect = to_units(obs, on_mismatch="keep").collect()
    key = ["model", "dataset", "metric", "variant", "run"]
    got_units = units.sort(key).select(*key, "n_items", "score")
    assert got_units.equals(expect.sort(key).select(*key, "n_items", "score"))


@needs_shared_data
def test_item_and_unit_level_formats_join_as_units_and_refuse_as_observations(tmp_path):
    from evalstats.aggregate import read_units

    # the release layout, metadata folder included (not the authors' metric tables beside it)
    for part in ("paraphrases accuracies", "automatic paraphrases"):
        _copy(SOWA / part, tmp_path / "sowa" / part)
    _csv(tmp_path / "extra.csv")
    with pytest.raises(IngestError, match=r"mixes item-level files \(table\) with unit-level"):
        read(tmp_path)
    alone, _ = read_units(tmp_path / "sowa")
    units, report = read_units(tmp_path)
    assert [c.format for c in report.by_format] == ["state-of-what-art", "table"]
    assert units.height == alone.height + 1
    sowa = units.filter(pl.col("metric") == "accuracy").sort("model", "dataset", "variant")
    assert sowa["n_items"].unique().to_list() == [100]
    assert sowa["score"].to_list() == alone.sort("model", "dataset", "variant")["score"].to_list()
    assert any("state-of-what-art companions" in n for n in report.notes)


def test_data_file_no_format_reads_is_set_aside_and_the_folder_read(tmp_path):
    """Issue 43: one odd file no longer stops a folder; it is listed with what would read it."""
    _csv(tmp_path / "a.csv")
    (tmp_path / "config.json").write_text('{"temperature": 0}')
    obs, report = read(tmp_path)
    assert obs.collect().height == report.rows_kept > 0
    (aside,) = report.files_set_aside
    assert aside.path.endswith("config.json") and "matches no format" in aside.reason
    assert "--format" in aside.hint
    code, _, e = _cli("ingest", str(tmp_path))
    assert code == 0 and "config.json: matches no format" in e


def test_a_folder_of_files_no_format_reads_still_stops_and_names_them(tmp_path):
    (tmp_path / "config.json").write_text('{"temperature": 0}')
    (tmp_path / "other.json").write_text('{"top_p": 1}')
    with pytest.raises(IngestError, match="the folder holds no files ending in"):
        read(tmp_path)


def test_explicit_format_notes_the_files_of_other_formats(tmp_path):
    _copy(LM_EVAL, tmp_path)
    _csv(tmp_path / "extra.csv")
    _, report = read(tmp_path, format="lm-eval")
    assert report.format == "lm-eval"
    assert any(
        n.startswith("not read: 1 data file(s) that are not lm-eval files (table: 1): extra.csv")
        for n in report.notes
    )


@needs_shared_data
def test_same_observation_in_two_formats_is_an_error_or_set_aside(tmp_path):
    _copy(OPENAI, tmp_path)
    obs = read(tmp_path).observations.collect()
    copy = obs.select(
        "model", "dataset", "metric", "item", "variant", "run", "score",
        "metric_low", "metric_high", "higher_is_better",
    )  # fmt: skip
    copy.write_csv(tmp_path / "copy.csv")
    with pytest.raises(IngestError, match="appear in files of two formats"):
        read(tmp_path)
    out, report = read(tmp_path, on_invalid="skip")
    assert report.set_aside["duplicate_across_formats"] == obs.height
    assert report.rows_kept == obs.height == out.collect().height
    assert report.rows_read == report.rows_kept + report.rows_set_aside


@needs_shared_data
def test_one_metric_declared_differently_by_two_formats_reads_with_the_widest_range(tmp_path):
    """Issue 43: conflicting declared ranges are a note and the widest range, not a stop."""
    _copy(OPENAI, tmp_path)
    obs = read(tmp_path).observations.collect()
    obs.select("model", "dataset", "metric", "item", "variant", "run", "score").with_columns(
        pl.lit("other").alias("model")
    ).write_csv(tmp_path / "other.csv")
    _, report = read(tmp_path)
    (m,) = report.metrics
    assert (m.name, m.low, m.high) == ("accuracy", None, None)
    assert any(
        "metric 'accuracy'" in n and "openai-evals files" in n and "widest range" in n
        for n in report.notes
    )
    code, _, e = _cli("ingest", str(tmp_path))
    assert code == 0 and "widest range" in e
