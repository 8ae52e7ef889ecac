"""inspect_ai's analysis frames (samples_df, evals_df) read with evalstats.from_inspect.

The frames are made by inspect_ai itself from logs its own writer wrote
(tests/io/inspect_frames_producer.py, in a subprocess: importing inspect_ai patches zipfile),
and read back here with pandas, as a user holds them. A frame made from a log must give the
observations read_inspect reads from the log.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pandas as pd
import polars as pl
import pytest

import evalstats
from evalstats.errors import IngestError, ParameterError
from evalstats.io.inspect_log import read_inspect

if importlib.util.find_spec("inspect_ai") is None:
    pytest.skip("inspect_ai is not installed (test extra)", allow_module_level=True)

PRODUCER = Path(__file__).with_name("inspect_frames_producer.py")
KEY = ["model", "dataset", "metric", "item", "run"]


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("inspect_frames")
    done = subprocess.run(
        [sys.executable, str(PRODUCER), str(out)], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return out


def frames(made: Path, folder: str) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    return tuple(
        pd.read_parquet(made / "frames" / f"{folder}_{kind}.parquet")
        for kind in ("samples", "evals", "joined")
    )


def same_rows(a: pl.LazyFrame, b: pl.LazyFrame, factors=()) -> bool:
    cols = [*KEY, *factors, "score"]
    return a.collect().select(cols).sort(cols).equals(b.collect().select(cols).sort(cols))


@pytest.mark.parametrize(
    ("folder", "scorer", "n"),
    [("zstd", None, 12), ("dict", None, 4), ("dict", "two_keys.words", 4)],
)
def test_samples_df_of_a_log_gives_what_the_log_gives(made, folder, scorer, n):
    samples, evals, joined = frames(made, folder)
    assert isinstance(samples, pd.DataFrame) and "model" not in samples.columns
    obs, report = evalstats.from_inspect(samples, evals=evals, scorer=scorer)
    logged, _ = read_inspect(made / folder, scorer=scorer)
    assert report.rows_read == report.rows_kept == n
    assert same_rows(obs, logged)
    # the frame made with the eval columns needs no evals_df
    assert same_rows(evalstats.from_inspect(joined, scorer=scorer).observations, logged)


def test_task_arguments_are_factors_and_repeated_logs_are_runs(made):
    """Five logs of one task: template (a prompt), agent_url and timeout (serving settings),
    a chain-of-thought run, and the first configuration again (its epochs are runs 2 and 3)."""
    samples, evals, _ = frames(made, "design")
    obs, report = evalstats.from_inspect(samples, evals=evals)
    logged, _ = read_inspect(made / "design")
    factors = ["agent_url", "cot", "template", "timeout"]
    assert same_rows(obs, logged, factors)
    df = obs.collect()
    again = df.filter(template="plain", agent_url="http://a:8000", cot="false")
    assert sorted(again["run"].unique()) == [0, 1, 2, 3]
    assert any("read as repeated runs" in n for n in report.notes)
    design = evalstats.infer_design(obs, ingest=report)
    assert "template" in design.prompt_factors
    assert {"agent_url", "timeout"} & set(design.left_out + design.settings)


def test_analyses_take_the_observations_of_the_frames(made):
    samples, evals, _ = frames(made, "zstd")
    obs, _ = evalstats.from_inspect(samples, evals=evals)
    out = evalstats.intervals(obs)
    assert out["mean"].to_list() == [pytest.approx(0.5)]


def test_a_samples_frame_without_model_names_what_to_pass(made):
    samples, _, _ = frames(made, "zstd")
    with pytest.raises(IngestError, match=r"pandas DataFrame: .*no column 'model'.*evals_df"):
        evalstats.from_inspect(samples)
    with pytest.raises(ParameterError, match="`scorer` 'nope' is not a scorer"):
        evalstats.from_inspect(samples, evals=frames(made, "zstd")[1], scorer="nope")
