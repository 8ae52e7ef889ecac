"""Tables in memory (polars, pandas, pyarrow) in every public function (issue 29, part 3).

A table whose columns are not named as the observation table's goes through the same column
rules and design as a CSV file of the same rows, with the same roles= and design=: the results
must equal the command line's on the file.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import evalstats
from evalstats.cli import main
from evalstats.design import analysis_input
from evalstats.errors import IngestError, ParameterError, SchemaError


def user_rows(seed: int = 0) -> pl.DataFrame:
    """A results table as users keep it: their own column names, the question text, timings
    and a request timeout beside the score (3 models x 4 prompts x 40 items)."""
    rng = np.random.default_rng(seed)
    rows = []
    for m in range(3):
        for p in range(4):
            for i in range(40):
                rows.append(
                    {
                        "model_name": f"model-{m}",
                        "task": "quiz",
                        "question_id": f"q{i:02d}",
                        "prompt_id": f"p{p}",
                        "question": f"Question {i}: which option fits topic {i * 13 % 97}?",
                        "correct": int(rng.random() < 0.45 + 0.1 * m + 0.02 * p),
                        "latency_ms": float(rng.gamma(2.0, 300.0)),
                        "request_timeout": [30, 60][(i + p) % 2],
                    }
                )
    return pl.DataFrame(rows)


@pytest.fixture(scope="module")
def dump(tmp_path_factory):
    path = tmp_path_factory.mktemp("frames") / "quiz.csv"
    user_rows().write_csv(path)
    return path


KINDS = {
    "polars": lambda p: pl.read_csv(p),
    "lazy": lambda p: pl.scan_csv(p),
    "pandas": lambda p: pd.read_csv(p),
    "pyarrow": lambda p: pa.Table.from_pandas(pd.read_csv(p)),
}


def cli_rows(capsys, *argv) -> list[dict]:
    capsys.readouterr()
    assert main([*argv, "--json"]) == 0
    return rounded(json.loads(capsys.readouterr().out)["rows"])


def plain(frame: pl.DataFrame) -> list[dict]:
    """The rows as --json writes them (NaN as null), floats to 12 significant digits (the
    file and the frame reach the engine in different chunks: sums differ in the last bit)."""

    def value(v):
        if isinstance(v, float):
            return None if math.isnan(v) else float(f"{v:.12g}")
        return v

    return [{k: value(v) for k, v in r.items()} for r in frame.to_dicts()]


def rounded(rows: list[dict]) -> list[dict]:
    return [
        {k: float(f"{v:.12g}") if isinstance(v, float) else v for k, v in r.items()} for r in rows
    ]


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_table_in_memory_gives_what_its_file_gives(dump, kind, capsys):
    frame = KINDS[kind](dump)
    assert plain(evalstats.intervals(frame)) == cli_rows(capsys, "intervals", str(dump))
    assert plain(evalstats.prompt_spread(frame)) == cli_rows(capsys, "moments", str(dump))
    pairs = evalstats.compare_models(frame)
    assert plain(pairs) == cli_rows(capsys, "compare", str(dump))
    assert pairs["n"].to_list() == [40, 40, 40]  # question_id is the item, prompts averaged


def test_roles_and_design_work_as_on_the_command_line(dump, tmp_path, capsys):
    df = pd.read_csv(dump)
    # held fixed, the timeout splits the variants' items: the design calls the groups sparse,
    # and moments would model them by default (issue 44); the observed cells are compared here
    cli = cli_rows(
        capsys, "moments", str(dump), "--roles", "request_timeout=setting", "--no-sparse"
    )
    by_roles = evalstats.prompt_spread(df, roles="request_timeout=setting")
    assert plain(by_roles) == cli
    assert set(by_roles["request_timeout"].to_list()) == {30, 60}  # held fixed: a group each
    design = evalstats.infer_design(df, roles={"request_timeout": "setting"})
    assert design.settings == ("request_timeout",) and "latency_ms" in design.left_out
    assert plain(evalstats.prompt_spread(df, design=design)) == cli
    out = tmp_path / "design.toml"
    assert main(["design", str(dump), "--roles", "request_timeout=setting", "--out", str(out)]) == 0
    assert plain(evalstats.prompt_spread(df, design=out)) == cli


def test_read_table_and_read_take_a_frame_and_count_its_rows(dump):
    df = pd.read_csv(dump)
    obs, report = evalstats.read_table(df)
    assert report.rows_read == report.rows_kept == len(df) == 480
    cols = obs.collect_schema().names()
    assert {"model", "dataset", "item", "variant", "score"} <= set(cols)
    assert "question" not in cols  # text: read as input_len, never a factor
    from_file = evalstats.read_table(dump).observations.collect()
    assert obs.collect().drop("dataset").equals(from_file.drop("dataset"))
    assert evalstats.read(pl.from_pandas(df)).report.rows_kept == 480
    with pytest.raises(ParameterError, match="read as a table"):
        evalstats.read(df, format="lm-eval")


def test_a_table_without_a_dataset_column_is_data(dump):
    df = pd.read_csv(dump).drop(columns="task")
    assert evalstats.intervals(df)["dataset"].unique().to_list() == ["data"]


def test_a_canonical_polars_frame_is_read_as_it_is():
    from evalstats.simulate import observations

    obs = observations(n_models=2, n_items=20, n_variants=2, seed=0)
    assert analysis_input(obs).table is obs and analysis_input(obs).design is None
    expected = evalstats.intervals(obs)
    assert evalstats.intervals(obs.to_pandas()).equals(expected)
    assert evalstats.intervals(obs.to_arrow()).equals(expected)
    assert evalstats.to_units(obs.to_pandas()).collect().equals(evalstats.to_units(obs).collect())


def test_audit_report_takes_a_pandas_frame(dump):
    rep = evalstats.audit_report(pd.read_csv(dump), skip=["nstar", "converge", "noise"])
    assert {"moments", "intervals", "compare"} <= {a.key for a in rep.analyses}


def test_wrong_inputs_get_a_clear_error(dump):
    df = pd.read_csv(dump)
    with pytest.raises(SchemaError, match=r"got str\. 'quiz\.csv' looks like a path.*read\(path\)"):
        evalstats.intervals("quiz.csv")
    with pytest.raises(SchemaError, match="A pandas Series is one column"):
        evalstats.intervals(df["correct"])
    with pytest.raises(SchemaError, match="got list"):
        evalstats.compare_models([1, 2, 3])
    with pytest.raises(SchemaError, match="'nope', which is not a column"):
        evalstats.intervals(df, roles="nope=setting")
    with pytest.raises(ParameterError, match="give `roles` or `design`, not both"):
        evalstats.intervals(df, roles="task=dataset", design=evalstats.infer_design(df))
    bad = df.astype({"correct": object})
    bad.loc[2, "correct"] = "n/a"
    with pytest.raises(IngestError, match=r"pandas DataFrame, row 3, column 'correct'"):
        evalstats.intervals(bad)
    mixed = pd.DataFrame({"model": ["a", "b"], "dataset": "d", "score": [1.0, "x"]})
    with pytest.raises(IngestError, match=r"row 2, column 'score': expected a number, got 'x'"):
        evalstats.intervals(mixed)  # a column mixing numbers and text is read as text, as a CSV


def test_results_are_polars_and_one_call_from_pandas(dump):
    out = evalstats.intervals(pd.read_csv(dump))
    assert isinstance(out, pl.DataFrame)
    assert isinstance(out.to_pandas(), pd.DataFrame)


def test_functions_of_result_tables_take_pandas_too():
    from evalstats.simulate import observations

    obs = observations(n_models=3, n_items=30, n_variants=1, n_runs=2, seed=0)
    pairs = evalstats.compare_models(obs)
    assert evalstats.letter_groups(pairs.to_pandas()).equals(evalstats.letter_groups(pairs))
    table = evalstats.stability_table(obs)
    text = evalstats.format_stability_table(table)
    assert evalstats.format_stability_table(table.to_pandas()) == text
