"""DOVE loader: the three folder layouts, nested rows, quirks, unit scores, bad inputs, CLI.

The fixtures in fixtures/dumps/dove/ are synthetic (no real DOVE data offline) and are made by
fixtures/dumps/dove/make_fixtures.py; expected.json holds the planted counts.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from evalstats.aggregate import to_units
from evalstats.cli import main
from evalstats.errors import IngestError, ParameterError
from evalstats.io import detect_format, read
from evalstats.io.dove import CORRECT_POSITION_ORDERS, path_info, read_dove

LAYOUTS = ["lite", "shots_dir", "n_shots", "nested"]
AUTHORS_KEY = [
    "sample_index",
    "model",
    "dataset",
    "template",
    "separator",
    "enumerator",
    "choices_order",
    "shots",
]


@pytest.fixture
def dove(fixtures) -> Path:
    return fixtures / "dumps" / "dove"


@pytest.fixture
def expected(dove) -> dict:
    return json.loads((dove / "expected.json").read_text())


def flat_pandas(folder: Path) -> pd.DataFrame:
    """Independent reading: pandas/pyarrow, layout parsed here, nested fields flattened here."""
    frames = []
    for f in sorted(folder.rglob("*.parquet")):
        df = pd.read_parquet(f)
        if "prompt_config" in df.columns:
            df = pd.DataFrame(
                {
                    "model": [m["model_info"]["name"] for m in df["model"]],
                    "dataset": [i["sample_identifier"]["dataset_name"] for i in df["instance"]],
                    "sample_index": [i["sample_identifier"]["hf_index"] for i in df["instance"]],
                    "template": [p["format"]["template"] for p in df["prompt_config"]],
                    "separator": [p["format"]["separator"] for p in df["prompt_config"]],
                    "enumerator": [p["format"]["enumerator"] for p in df["prompt_config"]],
                    "choices_order": [
                        p["format"]["choices_order"]["method"] for p in df["prompt_config"]
                    ],
                    "shots": [p["format"]["shots"] for p in df["prompt_config"]],
                    "language": [i["language"] for i in df["instance"]],
                    "score": [e["score"] for e in df["evaluation"]],
                }
            )
        else:
            rel = f.relative_to(folder).parts
            if "model" not in df.columns:
                df["model"] = rel[0]
            if "shots" not in df.columns:
                shot_dir = rel[1] if rel[1].startswith("shots_") else rel[2]
                df["shots"] = int(shot_dir.replace("shots_", "").split("_")[0])
            df["language"] = rel[2] if rel[1].startswith("shots_") else rel[1]
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


def pandas_units(raw: pd.DataFrame, exclude: tuple[str, ...] = ()) -> pd.DataFrame:
    """The authors' recipe: drop -1, drop_duplicates on their key (keep first), mean per unit."""
    df = raw[raw["sample_index"] != -1]
    df = df[~df["choices_order"].isin(exclude)]
    df = df.drop_duplicates(subset=AUTHORS_KEY + ["language"], keep="first")
    keys = [
        "model",
        "dataset",
        "template",
        "separator",
        "enumerator",
        "choices_order",
        "shots",
        "language",
    ]
    return df.groupby(keys, as_index=False).agg(score=("score", "mean"), n_items=("score", "size"))


# --- layouts and accounting --------------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
def test_quirks_are_counted_exactly(dove, expected, layout):
    obs, report = read_dove(dove / layout)
    planted = expected[layout]
    assert report.format == "dove"
    assert len(report.sources) == planted["files"]
    assert report.rows_read == planted["rows"]
    assert dict(report.set_aside) == {
        "duplicate": planted["duplicate"],
        "unknown_item": planted["unknown_item"],
    }
    assert report.rows_read == report.rows_kept + sum(report.set_aside.values())
    assert obs.collect(engine="streaming").height == report.rows_kept


@pytest.mark.parametrize("layout", LAYOUTS)
def test_counts_match_an_independent_pandas_reading(dove, layout):
    raw = flat_pandas(dove / layout)
    _, report = read_dove(dove / layout)
    known = raw[raw["sample_index"] != -1]
    assert report.rows_read == len(raw)
    assert report.set_aside["unknown_item"] == int((raw["sample_index"] == -1).sum())
    assert report.set_aside["duplicate"] == int(known.duplicated(AUTHORS_KEY + ["language"]).sum())


@pytest.mark.parametrize("layout", LAYOUTS)
def test_unit_scores_equal_pandas_groupby_mean(dove, layout):
    obs, _ = read_dove(dove / layout)
    ours = to_units(obs).collect(engine="streaming").to_pandas()
    ref = pandas_units(flat_pandas(dove / layout))
    keys = [
        "model",
        "dataset",
        "template",
        "separator",
        "enumerator",
        "choices_order",
        "shots",
        "language",
    ]
    merged = ref.merge(ours, on=keys, how="outer", suffixes=("_ref", "_ours"), indicator=True)
    assert (merged["_merge"] == "both").all()
    assert_allclose(merged["score_ours"], merged["score_ref"], rtol=0, atol=1e-15)
    np.testing.assert_array_equal(merged["n_items_ours"], merged["n_items_ref"])


def test_model_language_and_shots_come_from_the_path(dove):
    for layout, model, shots in [
        ("shots_dir", "Mistral-7B-Instruct-v0.3", 5),
        ("n_shots", "Llama-3.2-3B-Instruct", 5),
    ]:
        obs, report = read_dove(dove / layout)
        df = obs.collect()
        assert df["model"].unique().to_list() == [model]
        assert df["shots"].unique().to_list() == [shots]
        assert "taken from the path or file name: language, model, shots" in report.notes
    langs = read_dove(dove / "n_shots")[0].collect()["language"].unique().sort().to_list()
    assert langs == ["en", "fr"]


@pytest.mark.parametrize(
    ("path", "info"),
    [
        ("m/en/0_shot/b.parquet", {"model": "m", "language": "en", "shots": 0}),
        ("root/m/shots_5/fr/b.parquet", {"model": "m", "language": "fr", "shots": 5}),
        ("m/en/3_shots/b.parquet", {"model": "m", "language": "en", "shots": 3}),
        ("data/some/b.parquet", {}),
        ("b.parquet", {}),
    ],
)
def test_path_info_reads_the_three_layouts(path, info):
    assert path_info(path) == info


def test_variant_is_derived_from_the_prompt_dimensions(dove):
    df = read_dove(dove / "lite")[0].collect()
    row = df.row(0, named=True)
    sep = row["separator"].replace("\\", "\\\\").replace("\n", "\\n")
    assert row["variant"] == (
        f"template={row['template']}|separator={sep}|enumerator={row['enumerator']}"
        f"|choices_order={row['choices_order']}|shots={row['shots']}|language=en"
    )
    # one variant per distinct factor combination, and no variant key spans two lines
    n_combos = df.select("template", "separator", "enumerator", "choices_order", "shots").n_unique()
    assert df["variant"].n_unique() == n_combos
    assert not df["variant"].str.contains("\n").any()


def test_columns_are_mapped_and_typed(dove):
    df = read_dove(dove / "nested")[0].collect()
    assert df.columns[:7] == ["model", "dataset", "metric", "item", "variant", "run", "score"]
    assert df["metric"].unique().to_list() == ["accuracy"]
    assert df.select("metric_low", "metric_high", "higher_is_better").unique().rows() == [
        (0.0, 1.0, True)
    ]
    assert {"answer", "response", "gold", "input_len", "output_len", "cumulative_logprob"} <= set(
        df.columns
    )
    assert df.schema["item"] == pl.String and df.schema["shots"] == pl.Int64
    assert df.schema["cumulative_logprob"] == pl.Float64
    assert (df["input_len"] > 0).all() and (df["cumulative_logprob"] < 0).all()
    raw = pd.read_parquet(dove / "nested" / "mmlu.global_facts.parquet")
    first = raw.iloc[0]
    assert df["response"][0] == first["output"]["response"]
    assert df["gold"][0] == first["evaluation"]["ground_truth"]
    assert df["input_len"][0] == len(first["instance"]["raw_input"][0]["content"].split())
    # cumulative_logprob is not a factor: units are unchanged by it
    assert "cumulative_logprob" not in to_units(df).collect_schema().names()


def test_exclude_correct_position_sets_those_orders_aside(dove):
    raw = flat_pandas(dove / "lite")
    obs, report = read_dove(dove / "lite", exclude_correct_position=True)
    known = raw[raw["sample_index"] != -1]
    assert report.set_aside["excluded_choices_order"] == int(
        known["choices_order"].isin(CORRECT_POSITION_ORDERS).sum()
    )
    rest = known[~known["choices_order"].isin(CORRECT_POSITION_ORDERS)]
    assert report.set_aside["duplicate"] == int(rest.duplicated(AUTHORS_KEY + ["language"]).sum())
    df = obs.collect()
    assert not df["choices_order"].is_in(list(CORRECT_POSITION_ORDERS)).any()
    ref = pandas_units(raw, exclude=CORRECT_POSITION_ORDERS)
    assert to_units(obs).collect().height == len(ref)


def test_first_of_duplicates_is_kept(tmp_path):
    base = {
        "evaluation_id": ["a", "b", "c"],
        "dataset": ["d"] * 3,
        "model": ["m"] * 3,
        "sample_index": [0, 0, 1],
        "template": ["t"] * 3,
        "separator": [" "] * 3,
        "enumerator": ["capitals"] * 3,
        "choices_order": ["none"] * 3,
        "shots": [0] * 3,
        "score": [1.0, 0.0, 0.0],
    }
    pl.DataFrame(base).write_parquet(tmp_path / "d.parquet")
    obs, report = read_dove(tmp_path / "d.parquet")
    assert obs.select("item", "score").collect().rows() == [("0", 1.0), ("1", 0.0)]
    ex = [e for e in report.examples if e.reason == "duplicate"]
    assert (ex[0].path, ex[0].row) == (str(tmp_path / "d.parquet"), 2)
    assert "language" not in obs.collect_schema().names()  # unknown language: no column


def test_float_sample_index_is_written_as_a_whole_number(tmp_path):
    pl.DataFrame(
        {
            "evaluation_id": ["a", "b"],
            "dataset": ["d", "d"],
            "model": ["m", "m"],
            "sample_index": [3.0, -1.0],
            "template": ["t", "t"],
            "separator": [" ", " "],
            "enumerator": ["roman"] * 2,
            "choices_order": ["none"] * 2,
            "shots": [0, 0],
            "score": [1.0, 1.0],
        }
    ).write_parquet(tmp_path / "d.parquet")
    obs, report = read_dove(tmp_path / "d.parquet")
    assert obs.select("item").collect().to_series().to_list() == ["3"]
    assert dict(report.set_aside) == {"unknown_item": 1}


# --- bad inputs -----------------------------------------------------------------------------


def test_missing_score_column_names_file_and_column(dove):
    path = dove / "bad" / "missing_score.parquet"
    with pytest.raises(
        IngestError,
        match=r"missing_score\.parquet, column 'score': the DOVE file "
        r"has no 'score' column \(columns: evaluation_id, ",
    ) as info:
        read_dove(path)
    assert (info.value.path, info.value.column) == (str(path), "score")


def test_missing_score_field_in_nested_rows(tmp_path, dove):
    df = pl.read_parquet(dove / "nested" / "mmlu.global_facts.parquet")
    df = df.with_columns(pl.col("evaluation").struct.field("ground_truth").alias("evaluation"))
    df.with_columns(
        pl.struct(pl.col("evaluation").alias("ground_truth")).alias("evaluation")
    ).write_parquet(tmp_path / "x.parquet")
    with pytest.raises(
        IngestError,
        match=r"x\.parquet, column 'evaluation\.score': the DOVE file "
        r"has no 'evaluation\.score' column",
    ):
        read_dove(tmp_path / "x.parquet")


def test_truncated_parquet_names_the_file(dove):
    with pytest.raises(
        IngestError,
        match=r"truncated\.parquet: cannot read the Parquet file; it "
        r"may be truncated or not Parquet",
    ):
        read_dove(dove / "bad" / "truncated.parquet")


def test_score_out_of_range_names_file_row_and_column(dove):
    path = dove / "bad" / "out_of_range.parquet"
    with pytest.raises(
        IngestError,
        match=r"out_of_range\.parquet, row 7, column 'score': "
        r"expected a number in \[0, 1\] \(the declared range of metric 'accuracy'\), got '2\.0'",
    ) as info:
        read_dove(path)
    assert (info.value.row, info.value.column) == (7, "score")
    obs, report = read_dove(path, on_invalid="skip")
    assert dict(report.set_aside) == {"score_out_of_range": 1}
    assert report.rows_kept == report.rows_read - 1 == obs.collect().height


def test_bad_file_inside_a_folder_is_named(dove, tmp_path):
    shutil.copytree(dove / "lite", tmp_path / "lite")
    bad = tmp_path / "lite" / "Llama-3.2-1B-Instruct" / "en" / "0_shot" / "zz.parquet"
    shutil.copy(dove / "bad" / "truncated.parquet", bad)
    with pytest.raises(IngestError, match=r"zz\.parquet: cannot read the Parquet file"):
        read_dove(tmp_path / "lite")


def test_missing_sample_index_and_empty_folder(tmp_path):
    pl.DataFrame({"model": ["m"], "score": [1.0]}).write_parquet(tmp_path / "x.parquet")
    with pytest.raises(
        IngestError,
        match=r"x\.parquet, column 'sample_index': the DOVE file has "
        r"no 'sample_index' column",
    ):
        read_dove(tmp_path / "x.parquet")
    (tmp_path / "empty").mkdir()
    with pytest.raises(IngestError, match=r"empty: the folder holds no files ending in \.parquet"):
        read_dove(tmp_path / "empty")


def test_options_are_validated(dove):
    with pytest.raises(ParameterError, match="`columns` is not used by the DOVE loader"):
        read_dove(dove / "nested", columns={"x": "score"})
    with pytest.raises(ParameterError, match="`exclude_correct_position` must be True or False"):
        read_dove(dove / "nested", exclude_correct_position="yes")
    with pytest.raises(ParameterError, match="`on_invalid` must be 'error' or 'skip'"):
        read_dove(dove / "nested", on_invalid="drop")


# --- registry, detection and CLI -------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
def test_detected_as_dove(dove, layout):
    assert detect_format(dove / layout) == "dove"
    assert read(dove / layout).report.format == "dove"


def test_generic_parquet_is_not_dove(tmp_path):
    pl.DataFrame({"model": ["m"], "item": ["1"], "score": [1.0]}).write_parquet(
        tmp_path / "t.parquet"
    )
    assert detect_format(tmp_path / "t.parquet") == "table"


def test_cli_ingest_json_report_adds_up(dove, expected, capsys):
    rc = main(["ingest", str(dove / "lite"), "--format", "dove", "--json"])
    out, err = capsys.readouterr()
    assert rc == 0
    report = json.loads(out)["report"]
    planted = expected["lite"]
    assert report["format"] == "dove"
    assert report["rows_read"] == planted["rows"]
    assert report["set_aside"] == {
        "duplicate": planted["duplicate"],
        "unknown_item": planted["unknown_item"],
    }
    assert report["rows_read"] == report["rows_kept"] + sum(report["set_aside"].values())


def test_cli_bad_dove_file_exits_2(dove, capsys):
    rc = main(["ingest", str(dove / "bad" / "out_of_range.parquet"), "--format", "dove"])
    _, err = capsys.readouterr()
    assert rc == 2
    assert err.startswith("evalstats: error: ")
    assert "out_of_range.parquet, row 7, column 'score'" in err
    assert "Traceback" not in err


def test_kept_rows_keep_file_order_and_values(dove):
    """The table is the raw rows minus the set-aside ones, in file order (finalize's anti-join)."""
    raw = flat_pandas(dove / "lite")
    keep = (raw["sample_index"] != -1) & ~(
        (raw["sample_index"] != -1) & raw.duplicated(AUTHORS_KEY + ["language"])
    )
    df = read_dove(dove / "lite")[0].collect(engine="streaming")
    assert df["item"].to_list() == raw.loc[keep, "sample_index"].astype(str).tolist()
    assert_allclose(df["score"].to_numpy(), raw.loc[keep, "score"].to_numpy(), rtol=0)
    assert_allclose(
        df["cumulative_logprob"].to_numpy(), raw.loc[keep, "cumulative_logprob"].to_numpy(), rtol=0
    )


def test_glob_is_detected_and_read(dove, expected):
    pattern = str(dove / "lite" / "*" / "en" / "0_shot" / "mmlu.*.parquet")
    assert detect_format(pattern) == "dove"
    _, report = read(pattern)
    assert len(report.sources) == 2
    assert report.rows_read == report.rows_kept + sum(report.set_aside.values())


# --- accounting property ----------------------------------------------------------------------

_row = st.fixed_dictionaries(
    {
        "sample_index": st.sampled_from([-1, 0, 1, 2]),
        "template": st.sampled_from(["T1", "T2"]),
        "choices_order": st.sampled_from(["none", "correct_first", "correct_last"]),
        "score": st.sampled_from([0.0, 1.0, 0.25, 2.0, -1.0, None, float("nan")]),
    }
)


@given(rows=st.lists(_row, min_size=1, max_size=25), exclude=st.booleans())
def test_accounting_matches_pandas_for_any_mix_of_quirks_and_bad_scores(rows, exclude):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m" / "en" / "0_shot" / "mmlu.x.parquet"
        path.parent.mkdir(parents=True)
        df = pl.DataFrame(
            rows,
            schema={
                "sample_index": pl.Int64,
                "template": pl.String,
                "choices_order": pl.String,
                "score": pl.Float64,
            },
        )
        df.with_columns(
            pl.lit("mmlu.x").alias("dataset"),
            pl.lit(" ").alias("separator"),
            pl.lit("capitals").alias("enumerator"),
        ).write_parquet(path)
        obs, report = read_dove(
            path, on_invalid="skip", score_scale="unit", exclude_correct_position=exclude
        )
        kept = obs.collect()
    raw = df.to_pandas()
    reason = pd.Series([None] * len(raw), dtype=object)
    s = raw["score"]
    order_out = raw["choices_order"].isin(CORRECT_POSITION_ORDERS) if exclude else False
    # polars tells a missing score (null) from NaN; pandas does not
    null = df["score"].is_null().to_numpy()
    nan = df["score"].is_nan().fill_null(False).to_numpy()
    for name, mask in [
        ("score_out_of_range", (s < 0) | (s > 1)),
        ("nonfinite_score", nan),
        ("missing_score", null),
        ("excluded_choices_order", order_out),
        ("unknown_item", raw["sample_index"] == -1),
    ]:  # reversed precedence: the last assignment wins
        reason[np.asarray(mask, dtype=bool) & np.ones(len(raw), dtype=bool)] = name
    valid = reason.isna()
    dup = valid & raw[valid].duplicated(["sample_index", "template", "choices_order"]).reindex(
        raw.index, fill_value=False
    )
    reason[dup] = "duplicate"
    expected = reason.value_counts().to_dict()
    assert dict(report.set_aside) == expected
    assert report.rows_read == len(rows) == report.rows_kept + sum(report.set_aside.values())
    assert kept.height == report.rows_kept
    assert kept["score"].is_between(0, 1).all()
