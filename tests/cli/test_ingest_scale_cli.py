"""evalstats ingest: streamed observation output, progress on stderr, engine options."""

from __future__ import annotations

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from evalstats.cli import main
from evalstats.io import read


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".jsonl"])
def test_observations_are_streamed_to_the_file(fixtures, tmp_path, capsys, suffix):
    path = fixtures / "dumps/dove/lite"
    out = tmp_path / f"obs{suffix}"
    assert main(["ingest", str(path), "--level", "observations", "--out", str(out)]) == 0
    want = read(path).observations.collect()
    assert f"wrote {want.height} observations rows" in capsys.readouterr().err
    got = {
        ".parquet": pl.read_parquet,
        ".csv": lambda p: pl.read_csv(p, schema=want.schema),
        ".jsonl": lambda p: pl.read_ndjson(p, schema=want.schema),
    }[suffix](out)
    assert_frame_equal(got, want)


def test_progress_bar_on_request_and_silent_by_default(fixtures, capsys):
    path = str(fixtures / "dumps/dove/lite")
    assert main(["ingest", path, "--progress"]) == 0
    assert "file/s" in capsys.readouterr().err
    assert main(["ingest", path]) == 0  # stderr is not a terminal under pytest
    assert "file/s" not in capsys.readouterr().err
    assert main(["ingest", path, "--progress", "--json"]) == 0
    assert "file/s" in capsys.readouterr().err


def test_engine_options_need_the_unit_level(fixtures, capsys):
    args = ["ingest", str(fixtures / "dumps/dove/lite"), "--level", "observations"]
    assert main([*args, "--engine", "dask"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("evalstats: error: --engine dask and --scheduler build the unit table")
    assert main(["ingest", str(fixtures / "dumps/dove/lite"), "--scheduler", "tcp://h:1"]) == 2
    assert "`--scheduler` is used by engine='dask' only" in capsys.readouterr().err
