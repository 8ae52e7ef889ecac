"""``evalstats noise`` and ``evalstats plan``: output, options and errors."""

from __future__ import annotations

import io
import json

import polars as pl

from evalstats.cli import main
from evalstats.noise import plan, variance_components
from evalstats.simulate import crossed_scores


def _dump(tmp_path):
    obs = crossed_scores(n_models=2, n_items=30, n_variants=4, n_runs=2, seed=0)
    path = tmp_path / "obs.parquet"
    obs.write_parquet(path)
    return obs, str(path)


def test_noise_json_equals_the_library(tmp_path, capsys):
    obs, path = _dump(tmp_path)
    assert main(["noise", path, "--pairs", "--seed", "3", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    expected = variance_components(obs, pairs=True, seed=3)
    got = pl.DataFrame(doc["rows"], schema=expected.schema)
    assert (
        got.select("model", "model_b", "component").rows()
        == expected.select("model", "model_b", "component").rows()
    )
    assert got["variance"].to_list() == expected["variance"].to_list()


def test_noise_check_and_plot(tmp_path, capsys):
    _, path = _dump(tmp_path)
    fig = tmp_path / "noise.png"
    assert main(["noise", path, "--check", "--plot", str(fig)]) == 0
    out = pl.read_csv(io.StringIO(capsys.readouterr().out))
    assert set(out["over"]) == {"items", "variants"}
    assert fig.stat().st_size > 0


def test_plan_cost_and_alternatives(tmp_path, capsys):
    obs, path = _dump(tmp_path)
    argv = ["plan", path, "--target-ci", "0.05", "--cost", "item=1,variant=0,run=1", "--json"]
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    best = plan(obs, target_width=0.05, cost="item=1,variant=0,run=1").best
    assert [r["cost"] for r in doc["rows"]] == best["cost"].to_list()
    assert main(["plan", path, "--detect", "0.05", "--alternatives"]) == 0
    alts = pl.read_csv(io.StringIO(capsys.readouterr().out))
    assert alts["model_b"].unique().to_list() == ["m1"]


def test_plan_bad_cost_is_one_line_and_exit_2(tmp_path, capsys):
    _, path = _dump(tmp_path)
    assert main(["plan", path, "--target-ci", "0.05", "--cost", "items=1"]) == 2
    err = capsys.readouterr().err
    assert "evalstats: error: `--cost` key must be one of" in err
    assert "Traceback" not in err
