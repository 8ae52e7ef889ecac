"""Issue 17, the remainder: malformed JSON lines, State of What Art model columns given twice,
folders that mix formats. One line naming file and place (exit 2), or a counted reason; never a
traceback, never a file or row dropped without a word."""

from __future__ import annotations

import contextlib
import gzip
import io
from pathlib import Path

import pytest

from evalstats.cli import main
from evalstats.errors import IngestError
from evalstats.io import read, read_table

ROOT = Path(__file__).resolve().parents[2]


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def _one_line_error(code: int, err: str, *needles: str) -> str:
    assert code == 2, err
    lines = [ln for ln in err.splitlines() if ln.startswith("evalstats: error: ")]
    assert len(lines) == 1 and "Traceback" not in err, err
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


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
