"""Issue 15 at the command line: --variant-factors, vacuous n*, Friedman's dropped blocks, and
user errors that exit 2 with the CLI's spelling of the parameter."""  # noqa: D205

from __future__ import annotations

import io
from pathlib import Path

import polars as pl
import pytest

from evalstats.cli import main

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "fixtures" / "demo" / "demo_observations.parquet"


def test_moments_hold_temperature_and_provider_fixed(capsys):
    assert main(["moments", str(DEMO)]) == 0
    out, err = capsys.readouterr()
    frame = pl.read_csv(io.StringIO(out))
    assert {"temperature", "provider"} <= set(frame.columns)
    assert "settings held fixed: temperature, provider" in err  # the design says so
    assert main(["moments", str(DEMO), "--variant-factors", "all"]) == 0
    frame_all = pl.read_csv(io.StringIO(capsys.readouterr().out))
    assert "temperature" not in frame_all.columns
    # the held groups partition the variants of each model and dataset
    per_group = (
        frame.group_by("model", "dataset").agg(pl.col("n_variants").sum()).sort("model", "dataset")
    )
    assert (
        per_group["n_variants"].to_list()
        == frame_all.sort("model", "dataset")["n_variants"].to_list()
    )


def test_nstar_names_vacuous_groups(sowa_headline, capsys):
    assert main(["nstar", str(sowa_headline), "--moments", "variance", "--n-resamples", "200"]) == 0
    out, err = capsys.readouterr()
    frame = pl.read_csv(io.StringIO(out))
    n_vac = frame.filter(pl.col("vacuous") & (pl.col("moment") == "variance")).height
    assert n_vac > 0
    assert f"vacuous in {n_vac} of " in err


def test_friedman_lists_dropped_blocks(sowa_headline, capsys):
    """State of What Art, 4 BBH tasks, minotaur-15b missing from hyperbaton (tests/conftest.py)."""
    assert main(["friedman", str(sowa_headline)]) == 0
    err = capsys.readouterr().err
    assert "ranks over 3 of 4 blocks" in err
    assert "hyperbaton/accuracy: no minotaur-15b" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["moments", str(DEMO), "--variant-factors", "templat"], "`--variant-factors` names"),
        (["nstar", str(DEMO), "--variant-factors", "templat"], "`--variant-factors` names"),
        (["anova", str(DEMO), "--factors", "templat"], "`--factors` names 'templat'"),
        (["audit", str(DEMO), "--default", "templat=plain"], "`--default` names 'templat'"),
    ],
)
def test_typos_exit_2_with_the_flag_spelled_as_typed(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()[-1]) > 0
