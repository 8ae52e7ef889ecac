"""The llm-stability loader: real v3 runs against the authors' counts, the older layout, parsing."""

from __future__ import annotations

import ast
import gzip
import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalstats.errors import IngestError, ParameterError
from evalstats.io import detect_format, read
from evalstats.io.llm_stability import answer_key, parse_answer, read_llm_stability
from evalstats.schema import MetricInfo

V3_COLUMNS = [
    "",
    "model",
    "model_config",
    "task",
    "task_config",
    "rubric",
    "rubric_id",
    "question",
    "modified_questions",
    "gt",
    "prompt",
    "run",
    "response",
    "date",
]


@pytest.fixture(scope="module")
def real(llm_stability_runs) -> tuple[pl.DataFrame, object]:
    """The authors' strict_json_schema runs, read in place from ../shared/data."""
    obs, report = read_llm_stability(llm_stability_runs)
    return obs.collect(), report


@pytest.fixture(scope="module")
def reference(shared_data) -> pl.DataFrame:
    """The authors' evaluate.py output for the same runs (../shared/data/llm-stability)."""
    ref = pl.read_csv(shared_data / "llm-stability/strict_json_schema_stability_eval.csv")
    return ref.with_columns(
        pl.col("correct_count_per_run").map_elements(
            ast.literal_eval, return_dtype=pl.List(pl.Int64)
        )
    )


def _v3_file(path: Path, rows: list[dict], **defaults) -> Path:
    base = {
        "": 0,
        "model": "m",
        "model_config": json.dumps({"temperature": 0.0, "seed": 12, "top_p_k": 1.0}),
        "task": "navigate",
        "task_config": json.dumps({"prompt_type": "v2", "shots": "few"}),
        "rubric": "{}",
        "rubric_id": 0,
        "question": "Do you return? Options: Yes No",
        "modified_questions": "",
        "gt": "Yes",
        "prompt": "[]",
        "run": 0,
        "response": '{"Answer":"Yes"}',
        "date": "2025-03-01",
    }
    base.update(defaults)
    frame = pl.DataFrame([{**base, **r} for r in rows], schema_overrides={"": pl.Int64})
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.select(V3_COLUMNS).write_csv(path)
    return path


# --- the real runs ---------------------------------------------------------------------------


def test_real_runs_per_run_correct_counts_equal_the_authors(real, reference):
    obs, _ = real
    ours = (
        obs.group_by("dataset", "run")
        .agg(pl.col("score").sum().cast(pl.Int64).alias("correct"))
        .sort("dataset", "run")
        .group_by("dataset", maintain_order=True)
        .agg("correct")
    )
    tasks = ours["dataset"].to_list()
    theirs = dict(reference.select("task", "correct_count_per_run").iter_rows())
    assert tasks == sorted(theirs)  # all 7 tasks the authors evaluated
    for task, correct in ours.iter_rows():
        assert correct == theirs[task], task


def test_real_runs_accounting_columns_and_factors(real):
    obs, report = real
    assert report.format == "llm-stability"
    assert report.rows_read == report.rows_kept == obs.height == 7035
    assert report.set_aside == {}
    assert len(report.sources) == 35
    assert obs.columns[:7] == ["model", "dataset", "metric", "item", "variant", "run", "score"]
    assert report.metrics == (MetricInfo("accuracy", 0, 1),)
    for col in ("temperature", "seed", "top_p_k", "prompt_type", "shots", "answer", "response"):
        assert col in obs.columns
    assert obs["variant"].unique().to_list() == [
        "temperature=0.0|seed=12|top_p_k=1.0|prompt_type=v2|shots=few"
    ]
    assert obs.select(pl.col("temperature").unique()).item() == 0.0
    assert obs.select(pl.col("seed").unique()).item() == 12
    assert obs["error"].null_count() == obs.height  # every real response parses
    assert obs["input_len"].min() > 100 and obs["output_len"].max() <= 5
    # the nested answer_schema is not a factor column
    assert "answer_schema" not in obs.columns
    assert any("system" in n for n in report.notes)


def test_real_runs_parsing_decisions(real):
    obs, _ = real
    # JSON answers with and without parentheses are the same option
    pa = obs.filter(pl.col("dataset") == "professional_accounting")
    assert set(pa.filter(pl.col("response") == '{"Answer":"(B)"}')["answer"]) == {"(B)"}
    odd = pa.filter(pl.col("response").str.contains("No gain or loss"))
    assert odd["answer"].to_list() == ["(B)"]
    # ruin_names: free-text golds are never equal to an option letter, as in the authors' code
    rn = obs.filter(pl.col("dataset") == "ruin_names")
    free = rn.filter(pl.col("gold").is_in(["rita, sue and bob poo", "dearth, wind, & fire"]))
    assert free.height == 10 and free["score"].sum() == 0
    # {"Answer":"I"} is read as option (I): wrong, but parsed, so TARa agrees as the authors'
    i_rows = rn.filter(pl.col("response") == '{"Answer":"I"}')
    assert i_rows["answer"].unique().to_list() == ["(I)"] and i_rows["item"].n_unique() == 1


def test_gzipped_csv_reads_like_the_plain_run(llm_stability_runs, tmp_path):
    plain = next(llm_stability_runs.rglob("*navigate-few-0.csv"))
    packed = tmp_path / (plain.name + ".gz")
    with open(plain, "rb") as fin, gzip.open(packed, "wb") as fout:
        shutil.copyfileobj(fin, fout)
    a = read_llm_stability(plain).observations.collect()
    b = read_llm_stability(packed).observations.collect()
    assert a.equals(b) and a.height == 250


def test_detection_of_the_real_runs(llm_stability_runs):
    assert detect_format(llm_stability_runs) == "llm-stability"


def test_detection_and_read_dispatch(fixtures, tmp_path):
    folder = fixtures / "dumps/llm_stability"
    assert detect_format(folder / "older_layout") == "llm-stability"
    generic = tmp_path / "t.csv"
    generic.write_text("model,item,score\na,1,1\n")
    assert detect_format(generic) == "table"
    obs, report = read(folder / "older_layout")
    assert report.format == "llm-stability"


# --- the older layout ------------------------------------------------------------------------


def test_older_layout(fixtures):
    obs, report = read_llm_stability(fixtures / "dumps/llm_stability/older_layout")
    df = obs.collect().sort("dataset", "run", "item")
    assert report.rows_read == report.rows_kept == 24
    assert df["model"].unique().to_list() == ["gpt-3.5-turbo"]
    assert sorted(df["dataset"].unique()) == ["college_mathematics", "navigate"]
    assert sorted(df["run"].unique()) == [0, 1, 2]
    nav = df.filter(pl.col("dataset") == "navigate")
    by_key = {(r["run"], r["item"]): r for r in nav.iter_rows(named=True)}
    assert by_key[(0, "0")]["answer"] == "No" and by_key[(0, "0")]["score"] == 0.0
    assert by_key[(1, "2")]["answer"] == "Yes" and by_key[(1, "2")]["score"] == 1.0
    assert by_key[(1, "3")]["error"] == "unparsed" and by_key[(1, "3")]["score"] == 0.0
    cm = df.filter(pl.col("dataset") == "college_mathematics")
    by_key = {(r["run"], r["item"]): r for r in cm.iter_rows(named=True)}
    assert by_key[(0, "1")]["answer"] == "(B)"
    assert by_key[(0, "2")]["answer"] == "(D)"  # "answer is (D)" decides between (A) and (D)
    assert by_key[(1, "2")]["error"] == "unparsed"  # "Either (A) or (D)."
    assert by_key[(0, "3")]["error"] == "empty" and by_key[(0, "3")]["answer"] is None
    assert by_key[(1, "3")]["answer"] == "(B)" and by_key[(1, "3")]["score"] == 1.0
    notes = "\n".join(report.notes)
    assert "college_mathematics: 1 responses with no answer or several" in notes
    assert "college_mathematics: 1 empty responses kept with score 0" in notes
    assert "navigate: 1 responses with no answer" in notes


def test_older_layout_bad_name(tmp_path):
    (tmp_path / "results.csv").write_text("gt,raw_response\nYes,Yes\n")
    with pytest.raises(
        IngestError, match=r"results.csv: expected a file name <model>_<task>_<run>"
    ):
        read_llm_stability(tmp_path / "results.csv")


def test_older_layout_unknown_task_splits_at_first_underscore(tmp_path):
    (tmp_path / "llama3-8b_date_understanding_3.csv").write_text("gt,raw_response\n(A),(A)\n")
    df = read_llm_stability(tmp_path).observations.collect()
    assert df.row(0, named=True)["model"] == "llama3-8b"
    assert df.row(0, named=True)["dataset"] == "date_understanding"
    assert df.row(0, named=True)["run"] == 3


# --- parsing ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        ('{"Answer": "(B)"}', "(B)"),
        ('{"Answer":"B"}', "(B)"),
        ('{"answer": "b"}', "(B)"),
        ("{'Answer': 'C'}", "(C)"),  # a Python-dict repr
        ('{"Answer":"Yes"}', "Yes"),
        ('{"Answer":"rita, sue and bob poo"}', "rita, sue and bob poo"),
        ('{"Answer": ""}', None),
        ('{"other": "A"}', None),
        ("The answer is (C).", "(C)"),
        ("(A) and (B) are false, so the answer is (B).", "(B)"),
        ("(A) or (B)", None),
        ("B", "(B)"),
        ("D.", "(D)"),
        ("The answer is yes ", "Yes"),
        ("Yes, Yes", "Yes"),
        ("yes or no", None),
        ("I do not know.", None),
        ("So the answer is dearth, wind, & fire.", "dearth, wind, & fire"),
        ("", None),
        (None, None),
    ],
)
def test_parse_answer(response, expected):
    assert parse_answer(response) == expected


def test_answer_key_makes_gold_and_answers_comparable():
    assert answer_key("(B)") == answer_key("B") == answer_key(" b. ") == "(B)"
    assert answer_key("YES") == answer_key("yes!") == "Yes"
    assert answer_key("Rita, Sue and  Bob Poo") == answer_key("rita, sue and bob poo")
    assert answer_key("") is None and answer_key(None) is None


def test_free_text_gold_scored_by_normalised_equality(tmp_path):
    f = _v3_file(
        tmp_path / "r.csv",
        [
            {
                "rubric_id": 0,
                "gt": "rita, sue and bob poo",
                "response": '{"Answer":"Rita, Sue and Bob Poo"}',
            },
            {"rubric_id": 1, "gt": "rita, sue and bob poo", "response": '{"Answer":"A"}'},
        ],
        task="ruin_names",
    )
    df = read_llm_stability(f).observations.collect()
    assert df["score"].to_list() == [1.0, 0.0]


def test_custom_parser_and_lookup_error(tmp_path):
    f = _v3_file(
        tmp_path / "r.csv",
        [
            {"rubric_id": 0, "response": "ANSWER=Yes"},
            {"rubric_id": 1, "response": "ANSWER=Yes;ANSWER=No"},
            {"rubric_id": 2, "response": "nothing"},
        ],
    )

    def parser(text: str) -> str | None:
        found = {p.split("=")[1] for p in text.split(";") if p.startswith("ANSWER=")}
        if len(found) > 1:
            raise LookupError("several answers")
        return found.pop() if found else None

    obs, report = read_llm_stability(f, parser=parser)
    df = obs.collect()
    assert df["answer"].to_list() == ["Yes", None, None]
    assert df["score"].to_list() == [1.0, 0.0, 0.0]
    assert df["error"].to_list() == [None, "unparsed", "unparsed"]
    assert any("navigate: 2 responses with no answer" in n for n in report.notes)
    with pytest.raises(ParameterError, match="`parser` must be a callable"):
        read_llm_stability(f, parser="json")


# --- configs ---------------------------------------------------------------------------------


def test_python_dict_repr_configs_and_mixed_factor_types(tmp_path):
    _v3_file(
        tmp_path / "a/r0.csv",
        [{"rubric_id": 0}],
        model_config="{'temperature': 0.0, 'seed': 12, 'top_p_k': 0.0, 'schema': None}",
        task_config="{'prompt_type': 'v2', 'shots': 0}",
    )
    _v3_file(
        tmp_path / "b/r0.csv",
        [{"rubric_id": 0}],
        model_config="{'temperature': 1.0, 'seed': 12, 'top_p_k': 1.0, 'schema': None}",
        task_config="{'prompt_type': 'v2', 'shots': 'few'}",
    )
    df = read_llm_stability(tmp_path).observations.collect().sort("temperature")
    assert df["shots"].to_list() == ["0", "few"]  # int and str: kept as strings
    assert df["top_p_k"].to_list() == [0.0, 1.0]
    assert "schema" not in df.columns  # null in every config
    assert df["variant"].to_list() == [
        "temperature=0.0|seed=12|top_p_k=0.0|prompt_type=v2|shots=0",
        "temperature=1.0|seed=12|top_p_k=1.0|prompt_type=v2|shots=few",
    ]


def test_configs_differing_only_in_nested_entries_stay_apart(tmp_path):
    for i, enum in enumerate((["Yes", "No"], ["yes", "no"])):
        cfg = {"temperature": 0.0, "answer_schema": {"enum": enum}}
        _v3_file(tmp_path / f"r{i}.csv", [{"rubric_id": 0}], model_config=json.dumps(cfg))
    df = read_llm_stability(tmp_path).observations.collect()
    assert df["variant"].n_unique() == 2
    assert all(
        v.startswith("temperature=0.0|prompt_type=v2|shots=few|config=") for v in df["variant"]
    )


def test_key_clash_with_canonical_column_is_prefixed(tmp_path):
    f = _v3_file(
        tmp_path / "r.csv",
        [{"rubric_id": 0}],
        model_config=json.dumps({"model": "gpt-4o-2024", "seed": 1}),
        task_config=json.dumps({"seed": 2}),
    )
    df = read_llm_stability(f).observations.collect()
    assert df["model_config_model"].item() == "gpt-4o-2024"
    assert df["seed"].item() == 1 and df["task_config_seed"].item() == 2


def test_malformed_config_names_file_row_and_column(tmp_path):
    f = _v3_file(
        tmp_path / "r.csv",
        [{"rubric_id": 0}, {"rubric_id": 1, "task_config": "{'shots': "}],
    )
    with pytest.raises(
        IngestError, match=r"r\.csv, row 2, column 'task_config': expected a JSON object"
    ):
        read_llm_stability(f)


def test_config_is_never_executed(tmp_path):
    f = _v3_file(
        tmp_path / "r.csv", [{"rubric_id": 0, "model_config": "__import__('os').getcwd()"}]
    )
    with pytest.raises(IngestError, match="column 'model_config'"):
        read_llm_stability(f)


# --- bad input -------------------------------------------------------------------------------


def test_not_an_llm_stability_file(tmp_path):
    f = tmp_path / "x.csv"
    f.write_text("model,score\na,1\n")
    with pytest.raises(
        IngestError, match=r"x\.csv: not an llm-stability run file: no column 'model_config'"
    ):
        read_llm_stability(f)


def test_missing_gold_is_an_error_or_counted(tmp_path):
    f = _v3_file(tmp_path / "r.csv", [{"rubric_id": 0}, {"rubric_id": 1, "gt": None}])
    with pytest.raises(IngestError, match=r"r\.csv, row 2, column 'gt': required value is missing"):
        read_llm_stability(f)
    obs, report = read_llm_stability(f, on_invalid="skip")
    assert report.set_aside == {"missing_gold": 1} and obs.collect().height == 1


def test_bad_run_and_duplicates(tmp_path):
    f = _v3_file(tmp_path / "r.csv", [{"rubric_id": 0}, {"rubric_id": 1, "run": "x"}])
    with pytest.raises(IngestError, match=r"row 2, column 'run'"):
        read_llm_stability(f)
    g = _v3_file(tmp_path / "d/r.csv", [{"rubric_id": 0}, {"rubric_id": 0}])
    with pytest.raises(IngestError, match="duplicate of an earlier row"):
        read_llm_stability(g)


def test_empty_folder_and_loader_options(tmp_path):
    with pytest.raises(IngestError, match="the folder holds no files ending in .csv"):
        read_llm_stability(tmp_path)
    f = _v3_file(tmp_path / "r.csv", [{"rubric_id": 0}])
    with pytest.raises(ParameterError, match="`columns` is not supported"):
        read_llm_stability(f, columns="gt=gold")
    with pytest.raises(ParameterError, match="`score_scale` must be 'auto' or 'unit'"):
        read_llm_stability(f, score_scale="percent")


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["Yes", "No", None]),
            st.sampled_from(['{"Answer":"Yes"}', '{"Answer":"No"}', "Yes or No", "", None]),
            st.sampled_from(["0", "1", "x", None]),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_accounting_holds_on_malformed_rows(rows):
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        f = _v3_file(
            Path(d) / "r.csv",
            [
                {"rubric_id": i, "gt": g, "response": r, "run": run}
                for i, (g, r, run) in enumerate(rows)
            ],
        )
        obs, report = read_llm_stability(f, on_invalid="skip")
        df = obs.collect()
        assert report.rows_read == len(rows)
        assert report.rows_read == report.rows_kept + sum(report.set_aside.values())
        assert df.height == report.rows_kept
        assert set(df["score"].to_list()) <= {0.0, 1.0}


# --- real-world folder quirks ----------------------------------------------------------------


def test_identical_configurations_in_two_run_folders_are_two_run_sets(tmp_path):
    for folder in ("prompt_2025-01-01", "prompt_long_2025-01-02"):
        for run in (0, 1):
            rows = [{"rubric_id": i, "run": run} for i in range(3)]
            # run on another day: the files are not byte-for-byte copies (those are set aside)
            _v3_file(tmp_path / folder / f"m-navigate-{run}.csv", rows, date=folder[-10:])
    obs, report = read_llm_stability(tmp_path)
    df = obs.collect()
    assert report.rows_read == report.rows_kept == 12
    assert sorted(df["run_set"].unique()) == ["prompt_2025-01-01", "prompt_long_2025-01-02"]
    assert df["variant"].n_unique() == 2
    assert all(v.endswith("|run_set=" + s) for v, s in df.select("variant", "run_set").rows())
    assert any("several run folders" in n for n in report.notes)


def test_duplicate_message_names_both_files_and_rows(tmp_path):
    _v3_file(tmp_path / "a" / "m-navigate-0.csv", [{"rubric_id": 0}, {"rubric_id": 1}])
    _v3_file(tmp_path / "a" / "m-navigate-1.csv", [{"rubric_id": 1}, {"rubric_id": 0}])
    with pytest.raises(IngestError) as info:
        read_llm_stability(tmp_path)  # both files say run 0
    msg = str(info.value)
    assert "m-navigate-1.csv, row 1" in msg
    assert "duplicate of an earlier row" in msg and "row 2 of " in msg
    assert msg.count("m-navigate-0.csv") == 1 and "\n" not in msg


def test_appledouble_and_hidden_files_are_skipped_and_counted(tmp_path):
    _v3_file(tmp_path / "runs" / "m-navigate-0.csv", [{"rubric_id": 0}])
    (tmp_path / "runs" / "._m-navigate-0.csv").write_bytes(b"\x00\x05\x16\x07\x00\x02\x00\x00Mac")
    (tmp_path / ".cache").mkdir()
    (tmp_path / ".cache" / "x.csv").write_text("junk\n")
    assert detect_format(tmp_path) == "llm-stability"
    obs, report = read_llm_stability(tmp_path)
    assert report.sources == (str(tmp_path / "runs" / "m-navigate-0.csv"),)
    assert any("skipped 2 hidden file(s) (1 macOS AppleDouble" in n for n in report.notes)


def test_row_varying_config_keys_are_left_out_and_named(tmp_path):
    rows = [
        {"rubric_id": i, "model_config": json.dumps({"temperature": 0.0, "round": i % 2})}
        for i in range(4)
    ]
    _v3_file(tmp_path / "m-navigate-0.csv", rows)
    obs, report = read_llm_stability(tmp_path)
    df = obs.collect()
    assert df["variant"].unique().to_list() == ["temperature=0.0|prompt_type=v2|shots=few"]
    assert "round" not in df.columns
    assert any("round (e.g. m-navigate-0.csv)" in n for n in report.notes)
