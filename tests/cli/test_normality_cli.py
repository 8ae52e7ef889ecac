"""CLI tests of ``evalstats normality`` and ``evalstats correlate`` (in-process ``main``)."""

from __future__ import annotations

import io
import json

import polars as pl
import pytest

from evalstats.cli import build_parser, main
from evalstats.correlation import correlation_matrix
from evalstats.normality import run_normality
from evalstats.simulate import observations


@pytest.fixture
def obs_path(tmp_path):
    obs = observations(
        n_models=2,
        n_datasets=3,
        n_items=30,
        n_variants=1,
        n_runs=6,
        instability=0.2,
        raw_instability=0.1,
        seed=0,
    )
    path = tmp_path / "obs.parquet"
    obs.write_parquet(path)
    return path


@pytest.fixture
def stability():
    """A hand-built stability table (the columns of stability_table, without text lengths)."""
    accs = [
        [0.5, 0.52, 0.49, 0.55, 0.51],
        [0.7, 0.71, 0.69, 0.74, 0.7],
        [0.3, 0.35, 0.33, 0.31, 0.3],
        [0.9, 0.91, 0.88, 0.9, 0.93],
        [0.6, 0.64, 0.66, 0.61, 0.6],
    ]
    return pl.DataFrame(
        {
            "model": ["a", "a", "b", "b", "c"],
            "dataset": ["t0", "t1", "t0", "t1", "t0"],
            "variant": "default",
            "n_runs": 5,
            "acc_per_run": accs,
            "acc_mean": [sum(a) / 5 for a in accs],
            "spread": [max(a) - min(a) for a in accs],
            "tar_a": [0.8, 0.9, 0.7, 0.95, 0.75],
            "tar_r": [0.7, 0.9, 0.6, 0.93, 0.72],
        },
        schema_overrides={"acc_per_run": pl.List(pl.Float64)},
    )


def _csv(text: str) -> pl.DataFrame:
    return pl.read_csv(io.StringIO(text))


def test_normality_all_methods_csv_on_stdout(obs_path, capsys):
    assert main(["normality", str(obs_path), "--method", "all"]) == 0
    out = capsys.readouterr()
    frame = _csv(out.out)
    assert frame.height == 6 * 4
    assert frame.columns[:8] == [
        "model",
        "dataset",
        "metric",
        "variant",
        "method",
        "statistic",
        "pvalue",
        "n",
    ]
    assert "ingest (table)" in out.err


def test_normality_json_equals_the_library(obs_path, capsys):
    assert main(["normality", str(obs_path), "--json", "--method", "shapiro"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["command"] == "normality" and doc["params"] == {"method": "shapiro"}
    expected = run_normality(pl.read_parquet(obs_path), method="shapiro")
    assert [r["pvalue"] for r in doc["rows"]] == expected["pvalue"].to_list()


def test_normality_by_and_low_power(obs_path, capsys):
    assert main(["normality", str(obs_path), "--by", "model", "--low-power-n", "10"]) == 0
    frame = _csv(capsys.readouterr().out)
    assert frame["model"].to_list() == ["m0", "m1"] and frame["n"].to_list() == [18, 18]
    assert not frame["low_power"].any()


def test_normality_plot_is_written(obs_path, tmp_path, capsys):
    target = tmp_path / "figs" / "dist.png"
    assert main(["normality", str(obs_path), "--plot", str(target)]) == 0
    assert target.stat().st_size > 1000
    assert f"wrote {target}" in capsys.readouterr().err


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".jsonl"])
def test_normality_from_a_stability_table_file(stability, tmp_path, capsys, suffix):
    path = tmp_path / f"stab{suffix}"
    if suffix == ".parquet":
        stability.write_parquet(path)
    elif suffix == ".jsonl":
        stability.write_ndjson(path)
    else:  # as `evalstats stability --out x.csv` writes it: lists as JSON strings
        from evalstats.cli._common import write_table

        write_table(stability, path)
    assert main(["normality", str(path), "--from-stability", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    expected = run_normality(stability)
    assert [r["statistic"] for r in rows] == pytest.approx(
        expected["statistic"].to_list(), rel=1e-12
    )


def test_normality_unreadable_file_exits_2_without_traceback(tmp_path, capsys):
    bad = tmp_path / "stab.txt"
    bad.write_text("x")
    assert main(["normality", str(bad), "--from-stability"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("evalstats: error: ") and "stab.txt" in err and "Traceback" not in err


def test_normality_constant_runs_warn_on_stderr(tmp_path, capsys):
    frame = pl.DataFrame(
        {"model": ["m"], "dataset": ["d"], "variant": ["v"], "acc_per_run": [[0.5] * 5]}
    )
    frame.write_parquet(tmp_path / "s.parquet")
    assert main(["normality", str(tmp_path / "s.parquet"), "--from-stability"]) == 0
    assert "evalstats: warning: " in capsys.readouterr().err


def test_correlate_from_stability_file_equals_the_library(stability, tmp_path, capsys):
    path = tmp_path / "stab.parquet"
    stability.write_parquet(path)
    args = [
        "correlate",
        str(path),
        "--from-stability",
        "--columns",
        "tar_a,tar_r,spread",
        "--method",
        "kendall",
        "--json",
    ]
    assert main(args) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["params"] == {"method": "kendall", "columns": ["tar_a", "tar_r", "spread"]}
    expected = correlation_matrix(stability, columns=["tar_a", "tar_r", "spread"], method="kendall")
    assert [r["pvalue_perm"] for r in doc["rows"]] == expected["pvalue_perm"].to_list()
    assert [(r["x"], r["y"]) for r in doc["rows"]] == expected.select("x", "y").rows()


def test_correlate_builds_the_stability_table_from_a_dump(obs_path, capsys):
    from evalstats.stability import stability_table

    cols = "tar_a,tar_r,spread,acc_mean"
    assert main(["correlate", str(obs_path), "--columns", cols, "--seed", "4"]) == 0
    got = _csv(capsys.readouterr().out)
    expected = correlation_matrix(
        stability_table(pl.read_parquet(obs_path)), columns=cols.split(","), seed=4
    )
    assert got["statistic"].to_list() == pytest.approx(expected["statistic"].to_list(), rel=1e-12)
    assert got["pvalue_perm"].to_list() == expected["pvalue_perm"].to_list()


def test_correlate_passes_stability_options_through(obs_path, monkeypatch, capsys, stability):
    import evalstats.stability

    seen = {}

    def fake(obs, **kwargs):
        seen.update(kwargs)
        return stability

    monkeypatch.setattr(evalstats.stability, "stability_table", fake)
    args = [
        "correlate",
        str(obs_path),
        "--by",
        "model,dataset",
        "--normalize",
        "strip",
        "--columns",
        "tar_a,spread",
        "--n-resamples",
        "0",
    ]
    assert main(args) == 0
    assert seen == {"by": ("model", "dataset"), "normalize": "strip"}
    assert _csv(capsys.readouterr().out)["pvalue_perm"].is_null().all()


def test_correlate_columns_do_not_reach_the_loader_and_roles_do():
    parser = build_parser()
    args = parser.parse_args(["correlate", "x.csv", "--columns", "tar_a,spread"])
    assert args.corr_columns == ("tar_a", "spread") and not hasattr(args, "columns")
    args = parser.parse_args(["correlate", "x.csv", "--roles", "acc=score"])
    assert args.roles == "acc=score"  # the design's roles, which a table's loader applies


def test_correlate_plot_is_written(stability, tmp_path, capsys):
    path = tmp_path / "stab.parquet"
    stability.write_parquet(path)
    target = tmp_path / "corr.pdf"
    args = [
        "correlate",
        str(path),
        "--from-stability",
        "--columns",
        "tar_a,tar_r,spread",
        "--plot",
        str(target),
    ]
    assert main(args) == 0
    assert target.read_bytes()[:4] == b"%PDF"


def test_correlate_unknown_column_exits_2(stability, tmp_path, capsys):
    path = tmp_path / "stab.parquet"
    stability.write_parquet(path)
    assert main(["correlate", str(path), "--from-stability", "--columns", "tar_a,bogus"]) == 2
    err = capsys.readouterr().err
    assert "`--columns` names 'bogus'" in err and "Traceback" not in err


def test_normality_on_the_real_llm_stability_runs(llm_stability_runs, capsys):
    path = llm_stability_runs
    assert main(["normality", str(path), "--method", "all"]) == 0
    frame = _csv(capsys.readouterr().out)
    assert frame.height == 7 * 4
    assert sorted(frame["dataset"].unique().to_list()) == [
        "college_mathematics",
        "high_school_european_history",
        "logical_deduction",
        "navigate",
        "professional_accounting",
        "public_relations",
        "ruin_names",
    ]
    assert (frame["n"] == 5).all()
