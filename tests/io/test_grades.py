"""Letter grades, call statuses and repeated calls read by the table loader (issue 42).

The layout is that of a judge's published calls (one JSON record per call, no run index, an
Inspect grade letter or a status, the API's text): every expected number is counted here from
the records written, not by the library.
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout

import polars as pl
import pytest

from evalstats.cli import main
from evalstats.errors import IngestError
from evalstats.io import read, read_table

MSG_400 = "Error code: 400 - {'message': '`temperature` is deprecated for this model.'}"
MSG_429 = "Error code: 429 - rate limit exceeded, retry later"


def _records() -> list[dict]:
    """3 configurations x 10 items x 5 calls; 'broken' fails (400s and 429s), 'partial' has P."""
    out = []
    for label, model in (("steady", "m1"), ("partial", "m1"), ("broken", "m2")):
        for item in range(10):
            for call in range(5):
                rec = {"item": item, "label": label, "model": model, "temperature": 0}
                if label == "broken" and call < 3:
                    rec["grade"] = "ERROR"
                    rec["raw"] = MSG_400 if call < 2 else MSG_429
                else:
                    grade = "C" if (item * call + item) % 3 == 0 else "I"
                    if label == "partial" and call == 4:
                        grade = "P"
                    rec["grade"] = grade
                    rec["raw"] = f"Reasoning about item {item}, call {call}: GRADE: {grade}"
                out.append(rec)
    return out


@pytest.fixture
def judge(tmp_path):
    recs = _records()
    path = tmp_path / "judge.json"
    path.write_text(json.dumps(recs))
    return path, recs


def test_grade_letters_are_scores_and_statuses_are_classed_errors(judge):
    path, recs = judge
    obs, report = read(path, columns={"label": "setting"})
    got = obs.collect()
    assert report.rows_read == report.rows_kept == len(recs)
    assert any("holds grade letters" in n for n in report.notes)
    want = {"C": 1.0, "I": 0.0, "P": 0.5}
    scores = [want.get(r["grade"]) for r in recs]
    assert got["score"].to_list() == scores  # file order kept
    assert got["metric_low"].unique().to_list() == [0.0]
    assert got["metric_high"].unique().to_list() == [1.0]
    n400 = sum(r["grade"] == "ERROR" and "400" in r["raw"] for r in recs)
    n429 = sum(r["grade"] == "ERROR" and "429" in r["raw"] for r in recs)
    assert report.errors == {"not_found": n400, "rate_limit": n429}
    assert report.errors_unscored == n400 + n429


def test_repeated_calls_without_a_run_index_are_numbered_as_runs(judge):
    path, recs = judge
    obs, report = read(path, columns={"label": "setting"})
    got = obs.collect()
    assert any("numbered as runs" in n for n in report.notes)
    assert sorted(got["run"].unique().to_list()) == [0, 1, 2, 3, 4]
    cells = got.group_by("model", "variant", "item").agg(pl.col("run").sort())
    assert all(r == [0, 1, 2, 3, 4] for r in cells["run"].to_list())


def test_exact_copies_stay_duplicates(tmp_path):
    rows = [{"model": "m", "item": i, "grade": "C", "raw": f"text {i}"} for i in range(3)]
    path = tmp_path / "copies.json"
    path.write_text(json.dumps(rows + rows))
    with pytest.raises(IngestError, match="duplicate"):
        read(path)
    obs, report = read(path, on_invalid="skip")
    assert report.set_aside.get("duplicate") == 3
    assert not any("numbered as runs" in n for n in report.notes)


def test_some_repeated_cells_are_duplicates_not_runs(tmp_path):
    path = tmp_path / "t.csv"
    pl.DataFrame(
        {"model": ["m"] * 5, "item": ["a", "b", "c", "d", "a"], "score": [1, 0, 1, 1, 0]}
    ).write_csv(path)
    obs, report = read_table(path, on_invalid="skip")
    assert report.set_aside.get("duplicate") == 1
    assert not any("numbered as runs" in n for n in report.notes)
    assert obs.collect()["run"].unique().to_list() == [0]


def test_answer_letters_are_not_grades(tmp_path):
    path = tmp_path / "mc.csv"
    pl.DataFrame({"model": ["m"] * 4, "item": list("abcd"), "choice": list("ACIB")}).write_csv(path)
    with pytest.raises(IngestError, match="no column gives 'score'"):
        read_table(path)


def test_providers_cli_compares_the_named_column_as_is(judge):
    """`--compare label`: a column a documented alias would read as the reference is compared."""
    path, recs = judge
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["providers", str(path), "--compare", "label", "--json", "--n-resamples", "99"])
    assert code == 0, err.getvalue()
    policies = {r["label"]: r for r in json.loads(out.getvalue())["policies"]}
    assert set(policies) == {"steady", "partial", "broken"}
    for label, got in policies.items():
        mine = [r for r in recs if r["label"] == label]
        n = len(mine)
        e = sum(r["grade"] == "ERROR" for r in mine)
        c = sum({"C": 1.0, "P": 0.5}.get(r["grade"], 0.0) for r in mine)
        assert (got["n_calls"], got["n_errors"]) == (n, e)
        assert got["as_failures"] == pytest.approx(c / n, rel=1e-12)
        assert got["excluded"] == pytest.approx(c / (n - e), rel=1e-12)
        # grades lie in [0, 1]: so do the intervals of their means (a t interval may not)
        for col in ("as_failures", "excluded"):
            assert 0.0 <= got[f"{col}_ci_low"] <= got[col] <= got[f"{col}_ci_high"] <= 1.0


def test_aliases_match_names_as_people_write_them(tmp_path):
    """`Model Name`, `Problem ID`, `Score`, `Error`: the columns of a published CSV."""
    path = tmp_path / "t.csv"
    pl.DataFrame(
        {
            "Model Name": ["m", "m", "m"],
            "Problem ID": [1, 2, 3],
            "Score": [1, 0, 0],
            "Error": [None, None, "Error: 503 Connection reset"],
        }
    ).write_csv(path)
    obs, report = read_table(path)
    got = obs.select("model", "item", "score", "error").collect().rows()
    assert got == [("m", "1", 1.0, None), ("m", "2", 0.0, None), ("m", "3", 0.0, "server_error")]


def test_providers_cli_names_a_compared_column_that_is_not_there(judge):
    """A typo in `--compare`: the audit's error (the column and the columns there), exit 2."""
    path, _ = judge
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["providers", str(path), "--compare", "lable"])
    assert code == 2
    msg = err.getvalue()
    assert "'lable'" in msg and "label" in msg and "Traceback" not in msg
    assert "evalstats-json-records" not in msg  # no temporary file named


def test_a_mapped_column_missing_from_json_records_names_the_file(judge):
    from evalstats.errors import SchemaError

    path, _ = judge
    with pytest.raises(SchemaError, match=f"{path}: `columns` maps 'nosuch'") as exc:
        read(path, columns={"nosuch": "setting"})
    assert "evalstats-json-records" not in str(exc.value)
