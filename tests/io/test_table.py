"""Generic table loader: formats, column roles, score parsing, and the bad-input matrix."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalstats.aggregate import to_units
from evalstats.errors import IngestError, ParameterError, SchemaError
from evalstats.io import read, read_table
from evalstats.schema import MetricInfo, with_metric
from evalstats.simulate import observations


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


GOOD = "model,doc_id,prompt,run,correct\nA,1,p1,0,1\nA,2,p1,0,0\nA,1,p2,0,1\nA,2,p2,0,1\n"


# --- formats -------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".parquet", ".jsonl", ".jsonl.gz"])
def test_every_format_gives_the_same_table(tmp_path, suffix):
    df = pl.read_csv(GOOD.encode())
    path = tmp_path / f"mmlu{suffix}"
    if suffix == ".csv":
        df.write_csv(path)
    elif suffix == ".tsv":
        df.write_csv(path, separator="\t")
    elif suffix == ".parquet":
        df.write_parquet(path)
    elif suffix == ".jsonl":
        df.write_ndjson(path)
    else:
        with gzip.open(path, "wb") as fh:
            fh.write(df.write_ndjson().encode())
    obs, report = read_table(path)
    out = obs.collect().sort("variant", "item")
    assert out["dataset"].unique().to_list() == ["mmlu"]
    assert out.select("item", "variant", "score").rows() == [
        ("1", "p1", 1.0),
        ("2", "p1", 0.0),
        ("1", "p2", 1.0),
        ("2", "p2", 1.0),
    ]
    assert (report.rows_read, report.rows_kept) == (4, 4)


def test_folder_and_glob_read_every_file(tmp_path):
    write(tmp_path / "a" / "x.csv", GOOD)
    write(tmp_path / "a" / "sub" / "y.csv", GOOD.replace("A,", "B,"))
    obs, report = read_table(tmp_path / "a")
    assert report.rows_read == 8 and len(report.sources) == 2
    assert sorted(obs.collect()["model"].unique().to_list()) == ["A", "B"]
    _, report2 = read_table(str(tmp_path / "a" / "**" / "*.csv"))
    assert report2.rows_read == 8


def test_explicit_mapping_wins_over_aliases(tmp_path):
    p = write(tmp_path / "t.csv", "model,qid,tmpl,acc,correct\nA,1,t,1,0\nA,2,t,0,1\n")
    obs, _ = read_table(p, columns="qid=item,tmpl=variant,correct=score,acc=ignore")
    out = obs.collect()
    assert out.select("item", "variant", "score").rows() == [("1", "t", 0.0), ("2", "t", 1.0)]
    assert "acc" not in out.columns


def test_unrecognised_columns_become_factors_that_define_the_variant(tmp_path):
    p = write(tmp_path / "t.csv", "model,item,shots,cot,score\nA,1,0,yes,1\nA,1,5,yes,0\n")
    obs, report = read_table(p)
    out = obs.collect()
    assert out["variant"].to_list() == ["shots=0|cot=yes", "shots=5|cot=yes"]
    assert {"shots", "cot"} <= set(out.columns)
    assert any("variant derived" in n for n in report.notes)


def test_unit_level_rows_keep_n_items(tmp_path):
    p = write(tmp_path / "u.csv", "model,prompt,accuracy,n_items\nA,p1,0.5,100\nA,p2,0.7,100\n")
    units = to_units(read_table(p).observations).collect()
    assert units.select("variant", "score", "n_items").rows() == [
        ("p1", 0.5, 100),
        ("p2", 0.7, 100),
    ]


def test_booleans_and_true_false_strings_become_0_1(tmp_path):
    p = write(tmp_path / "b.csv", "model,item,score\nA,1,True\nA,2,false\nA,3,TRUE\n")
    assert read_table(p).observations.collect()["score"].to_list() == [1.0, 0.0, 1.0]
    q = tmp_path / "b.parquet"
    pl.DataFrame({"model": ["A", "A"], "item": ["1", "2"], "score": [True, False]}).write_parquet(q)
    assert read_table(q).observations.collect()["score"].to_list() == [1.0, 0.0]


def test_input_and_output_lengths_are_derived_from_text(tmp_path):
    p = write(
        tmp_path / "t.jsonl",
        json.dumps(
            {
                "model": "A",
                "item": 1,
                "score": 1,
                "question": "what is two plus two",
                "response": "four, I think",
            }
        )
        + "\n",
    )
    out = read_table(p).observations.collect()
    assert out.select("input_len", "output_len").row(0) == (5, 3)
    assert "question" not in out.columns


# --- percent scales ------------------------------------------------------------------------


def test_percent_looking_scores_are_kept_with_a_hint_and_rescaled_only_when_asked(tmp_path):
    p = write(tmp_path / "pct.csv", "model,prompt,accuracy\nA,p1,87.5\nA,p2,62\nA,p3,0\n")
    obs, report = read_table(p)
    assert obs.collect()["score"].to_list() == [87.5, 62.0, 0.0]  # a hint, not a decision
    assert any("[0, 100]" in n and "pct.csv" in n and "--rescale 100" in n for n in report.notes)
    for scale in ("percent", 100, 100.0):
        obs, report = read_table(p, score_scale=scale)
        assert obs.collect()["score"].to_list() == pytest.approx([0.875, 0.62, 0.0], rel=1e-15)
        assert any("divided by 100" in n for n in report.notes)
        assert not any("--rescale 100" in n for n in report.notes)
    # any divisor: a 0-10 judge rating read on [0, 1]
    obs, _ = read_table(p, score_scale=10)
    assert obs.collect()["score"].to_list() == pytest.approx([8.75, 6.2, 0.0], rel=1e-15)
    with pytest.raises(ParameterError, match="`score_scale` must be .* positive number"):
        read_table(p, score_scale=-1)


def test_percent_strings_are_divided_by_100(tmp_path):
    p = write(tmp_path / "pct.csv", "model,prompt,accuracy\nA,p1,86.4%\nA,p2,50%\n")
    assert read_table(p).observations.collect()["score"].to_list() == pytest.approx([0.864, 0.5])


def test_percentages_against_a_declared_0_1_range_are_an_error_with_a_hint(tmp_path):
    p = write(tmp_path / "pct.csv", "model,prompt,accuracy\nA,p1,87.5\nA,p2,62\n")
    with pytest.raises(
        IngestError,
        match=r"pct\.csv, row 1, column 'accuracy': expected a number in \[0, 1\] \(the declared "
        r"range of metric 'accuracy'\), got '87\.5'.*--rescale 100",
    ):
        read(p, format="table", metric_range=(0, 1))
    # the range is the metric's, after the rescaling
    obs, report = read(p, format="table", metric_range=(0, 1), score_scale="percent")
    assert report.metrics == (MetricInfo("accuracy", 0, 1),)
    assert obs.collect()["score"].to_list() == pytest.approx([0.875, 0.62], rel=1e-15)


def test_a_single_stray_value_is_kept_on_its_scale(tmp_path):
    p = write(tmp_path / "s.csv", "model,item,score\nA,1,1\nA,2,0\nA,3,1\nA,4,7\n")
    obs, report = read_table(p)
    assert obs.collect()["score"].to_list() == [1.0, 0.0, 1.0, 7.0]
    assert not any("[0, 100]" in n for n in report.notes)  # mostly 0/1: no percent hint


def test_non_finite_scores_are_set_aside_and_counted_never_averaged(tmp_path):
    p = write(tmp_path / "m.csv", "model,item,mae\nA,1,0.5\nA,2,NaN\nA,3,inf\nA,4,-inf\nA,5,1.5\n")
    obs, report = read_table(p, columns="mae=score")  # on_invalid='error' and still no error
    assert obs.collect()["score"].to_list() == [0.5, 1.5]
    assert dict(report.set_aside) == {"nonfinite_score": 3}
    assert report.rows_read == 5 == report.rows_kept + report.rows_set_aside
    units = to_units(obs).collect()
    assert units["score"].to_list() == [1.0]


def test_declared_bounds_make_out_of_range_scores_invalid(tmp_path):
    text = "model,item,score\nA,1,-0.5\nA,2,1\nA,3,1.5\n"
    p = write(tmp_path / "m.csv", text)
    assert read_table(p).report.rows_kept == 3  # undeclared: any finite number
    with pytest.raises(IngestError, match=r"row 1, column 'score': expected a number in \[0, 1\]"):
        read(p, format="table", metric_range=(0, 1))
    obs, report = read(p, format="table", metric_range=(0, 1), on_invalid="skip")
    assert dict(report.set_aside) == {"score_out_of_range": 2}
    obs, report = read(p, format="table", metric_range=(-1, None))  # unbounded above
    assert report.rows_kept == 3
    assert report.metrics == (MetricInfo("score", -1, None),)


def test_metric_name_from_column_option_or_metric_column(tmp_path):
    p = write(tmp_path / "a.csv", "model,item,passed\nA,1,3\nA,2,0\n")
    obs, report = read_table(p, columns="passed=score")
    assert obs.collect()["metric"].unique().to_list() == ["passed"]
    obs, report = read_table(p, columns="passed=score", metric="tests_passed")
    assert [m.name for m in report.metrics] == ["tests_passed"]
    long = write(
        tmp_path / "long.csv",
        "model,item,metric,score,higher_is_better\nA,1,acc,1,true\nA,1,latency,2.5,false\n"
        "A,2,acc,0,true\nA,2,latency,1.5,false\n",
    )
    obs, report = read_table(long)  # two metrics of one item are not duplicates
    assert report.rows_kept == 4 and not report.set_aside
    assert [m.describe() for m in report.metrics] == [
        "acc: unbounded, higher is better",
        "latency: unbounded, lower is better",
    ]
    units = to_units(obs).collect()
    assert units.select("metric", "score", "higher_is_better").rows() == [
        ("acc", 0.5, True),
        ("latency", 2.0, False),
    ]
    with pytest.raises(ParameterError, match="`metric` names the metric of a table without"):
        read_table(long, metric="x")


# --- the bad-input matrix: every case names file, row and column where they exist ----------------

BAD_CASES = {
    "missing_score_column": ("model,item,prompt\nA,1,p\n", r"m\.csv: no column gives 'score'"),
    "missing_model_column": ("item,prompt,score\n1,p,1\n", r"m\.csv: no column gives 'model'"),
    "non_numeric_score": (
        "model,item,score\nA,1,1\nA,2,high\n",
        r"m\.csv, row 2, column 'score': expected a number, got 'high'",
    ),
    "empty_score": (
        "model,item,score\nA,1,\nA,2,1\n",
        r"m\.csv, row 1, column 'score': .*missing value",
    ),
    "missing_model_value": (
        "model,item,score\nA,1,1\n,2,1\n",
        r"row 2, column 'model': required value is missing",
    ),
    "missing_item_value": (
        "model,item,score\nA,,1\n",
        r"row 1, column 'item': required value is missing",
    ),
    "duplicate_rows": (
        "model,item,score\nA,1,1\nA,1,1\n",
        r"row 2: duplicate of an earlier row with the same "
        r"\(model, dataset, metric, variant, run, item\)",
    ),
    "bad_run_value": (
        "model,item,run,score\nA,1,x,1\n",
        r"row 1, column 'run': expected a non-negative whole number",
    ),
    "header_only": ("model,item,score\n", None),
}


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_bad_input_matrix(tmp_path, case):
    text, pattern = BAD_CASES[case]
    p = write(tmp_path / "m.csv", text)
    if pattern is None:  # a header and no rows reads as an empty table, and says so
        obs, report = read_table(p)
        assert report.rows_read == 0 and obs.collect().height == 0
        return
    with pytest.raises(IngestError, match=pattern):
        read_table(p)


def test_empty_file_names_the_file(tmp_path):
    p = write(tmp_path / "empty.csv", "")
    with pytest.raises(IngestError, match=r"empty\.csv: the file is empty \(0 bytes\)"):
        read_table(p)


def test_truncated_parquet_names_the_file(tmp_path):
    good = tmp_path / "good.parquet"
    observations(n_models=1, n_items=50, n_variants=2, seed=0).write_parquet(good)
    data = good.read_bytes()
    bad = write(tmp_path / "cut.parquet", data[: len(data) // 2])
    with pytest.raises(
        IngestError, match=r"cut\.parquet: cannot read the Parquet file; it may be truncated"
    ):
        read_table(bad)


def test_non_utf8_bytes_name_the_file_and_row(tmp_path):
    p = write(tmp_path / "latin.csv", b"model,item,score\nA,1,1\nA\xe9,2,1\n")
    with pytest.raises(
        IngestError, match=r"latin\.csv, row 2: the file is not valid UTF-8 text \(byte 0xe9"
    ):
        read_table(p)


def test_missing_path_and_empty_glob(tmp_path):
    with pytest.raises(IngestError, match=r"nope\.csv: no such file or folder"):
        read_table(tmp_path / "nope.csv")
    with pytest.raises(IngestError, match=r"the pattern matches no file"):
        read_table(str(tmp_path / "*.parquet"))
    (tmp_path / "empty_dir").mkdir()
    with pytest.raises(IngestError, match=r"empty_dir: the folder holds no files"):
        read_table(tmp_path / "empty_dir")


def test_unknown_file_type(tmp_path):
    p = write(tmp_path / "x.xlsx", "not really")
    with pytest.raises(IngestError, match=r"x\.xlsx: unknown file type"):
        read_table(p)


def test_mapping_names_a_missing_column(tmp_path):
    p = write(tmp_path / "t.csv", GOOD)
    with pytest.raises(
        SchemaError, match=r"`columns` maps 'prompt_id', which is not a column of the file"
    ):
        read_table(p, columns={"prompt_id": "variant"})
    with pytest.raises(
        ParameterError, match=r"`columns` maps 'prompt' to 'prompty', which is not a role"
    ):
        read_table(p, columns="prompt=prompty")
    with pytest.raises(ParameterError, match=r"not of the form source=role"):
        read_table(p, columns="prompt")


def test_unknown_format_and_options():
    with pytest.raises(ParameterError, match=r"`format` must be 'auto' or one of .*got 'excel'"):
        read("x.csv", format="excel")
    with pytest.raises(ParameterError, match=r"`on_invalid` must be 'error' or 'skip', got 'drop'"):
        read_table(Path(__file__), on_invalid="drop")


def test_wrong_type_in_a_hand_built_table_is_a_schema_error():
    from evalstats.schema import validate_observations

    bad = pl.DataFrame({"model": ["a"], "dataset": ["d"], "item": ["1"], "score": ["1"]})
    with pytest.raises(
        SchemaError, match=r"column 'score' of the observation table must be Float64, got String"
    ):
        validate_observations(bad)
    pct = pl.DataFrame({"model": ["a"], "dataset": ["d"], "item": ["1"], "score": [87.0]})
    validate_observations(pct)  # any finite number on an undeclared metric
    with pytest.raises(
        SchemaError,
        match=r"row 1, column 'score': expected a number in the declared range \[0, 1\] of "
        r"metric 'acc', got 87.0",
    ):
        validate_observations(with_metric(pct, MetricInfo("acc", 0, 1)))
    nan = pct.with_columns(pl.lit(float("nan")).alias("score"))
    with pytest.raises(
        SchemaError, match=r"row 1, column 'score': expected a finite number, got nan"
    ):
        validate_observations(nan)


def test_skip_sets_invalid_rows_aside_and_counts_them(tmp_path):
    p = write(
        tmp_path / "m.csv", "model,item,score\nA,1,1\nA,1,1\nA,2,high\nA,3,1.5\n,4,1\nA,5,0\n"
    )
    obs, report = read(p, format="table", metric_range=(0, 1), on_invalid="skip")
    assert obs.collect()["item"].to_list() == ["1", "5"]
    assert dict(report.set_aside) == {
        "duplicate": 1,
        "missing_model": 1,
        "score_out_of_range": 1,
        "unparseable_score": 1,
    }
    assert report.rows_read == report.rows_kept + report.rows_set_aside == 6
    ex = {e.reason: e for e in report.examples}
    assert (
        ex["unparseable_score"].row,
        ex["unparseable_score"].column,
        ex["unparseable_score"].detail,
    ) == (3, "score", "high")
    assert "row 2" in report.summary() and "duplicate" in report.summary()


# --- accounting under arbitrary malformed input (hypothesis) ---------------------------------

cell = st.one_of(
    st.sampled_from(["0", "1", "0.5", "1.5", "-1", "87", "", "NaN", "x", "True", "false", "12%"]),
)


@given(
    rows=st.lists(
        st.tuples(
            st.sampled_from(["A", "B", ""]),
            st.sampled_from(["1", "2", "3", ""]),
            st.sampled_from(["p", "q"]),
            cell,
        ),
        min_size=1,
        max_size=25,
    )
)
def test_accounting_identity_holds_on_malformed_input(tmp_path_factory, rows):
    d = tmp_path_factory.mktemp("h")
    text = "model,item,prompt,score\n" + "".join(",".join(r) + "\n" for r in rows)
    p = write(d / "h.csv", text)
    try:
        obs, report = read_table(p, on_invalid="skip")
    except IngestError as exc:  # only a file-level failure may raise under skip
        assert re.search(r"h\.csv", str(exc))
        return
    kept = obs.collect()
    assert report.rows_read == len(rows)
    assert report.rows_read == report.rows_kept + sum(report.set_aside.values())
    assert kept.height == report.rows_kept
    assert kept["score"].is_finite().all()
    assert kept.select("model", "dataset", "variant", "run", "item").is_duplicated().sum() == 0


def test_loaded_unit_scores_equal_an_independent_computation(tmp_path):
    obs = observations(n_models=2, n_items=30, n_variants=3, n_runs=2, instability=0.2, seed=4)
    p = tmp_path / "sim.parquet"
    obs.write_parquet(p)
    units = to_units(read_table(p, dataset="d0").observations).collect()
    expected = {}
    for r in obs.iter_rows(named=True):
        expected.setdefault((r["model"], r["variant"], r["run"]), []).append(r["score"])
    got = {(r["model"], r["variant"], r["run"]): r["score"] for r in units.iter_rows(named=True)}
    assert got.keys() == expected.keys()
    for k, v in expected.items():
        assert got[k] == pytest.approx(np.mean(v), abs=1e-12)


def test_a_table_evalstats_wrote_reads_back_with_its_variant_labels(tmp_path):
    """The variant of the demo table is the key of its factor columns: it is not appended to
    itself on reading (labels were written twice: 'template=a|...|template=a|...')."""
    from evalstats.simulate import demo_observations

    obs = demo_observations().head(500)
    path = tmp_path / "demo.parquet"
    obs.write_parquet(path)
    back, report = read_table(path)
    assert back.collect()["variant"].to_list() == obs["variant"].to_list()
    assert not any(n.startswith("variant = ") for n in report.notes)
