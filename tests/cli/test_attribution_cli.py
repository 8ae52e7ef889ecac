"""The ``anova`` and ``attribute`` subcommands: output, JSON, plots, and user errors."""

from __future__ import annotations

import io
import json

import polars as pl
import pytest

from evalstats.attribution import attribute, factor_anova
from evalstats.cli import main
from evalstats.simulate import observations, unit_table


@pytest.fixture(scope="module")
def units() -> pl.DataFrame:
    return unit_table(
        n_models=1,
        n_items=100,
        n_runs=3,
        instability=1.0,
        prompt_sd=0.0,
        model_accuracy=[0.3],
        item_sd=0.3,
        seed=0,
        factors={
            "a": {0: 0.0, 1: 0.15},
            "b": {0: 0.0, 1: 0.1},
            "c": {"x": 0.0, "y": 0.0, "z": 0.0},
        },
        interactions={("a", "b"): {(1, 1): 0.12}},
    )


@pytest.fixture
def units_csv(tmp_path, units):
    path = tmp_path / "units.csv"
    units.write_csv(path)
    return path


def test_anova_csv_equals_library(units_csv, units, capsys):
    rc = main(
        [
            "anova",
            str(units_csv),
            "--factors",
            "a,b,c",
            "--n-resamples",
            "99",
            "--ss-type",
            "3",
            "--seed",
            "2",
        ]
    )
    out = capsys.readouterr()
    assert rc == 0
    got = pl.read_csv(io.StringIO(out.out))
    want = factor_anova(
        pl.read_csv(units_csv), factors=["a", "b", "c"], n_resamples=99, ss_type=3, seed=2
    ).to_frame()
    assert got["term"].to_list() == want["term"].to_list()
    assert got["pvalue_perm"].to_list() == want["pvalue_perm"].to_list()
    assert "Type III" in out.err


def test_anova_json_records_ss_type_and_defaults(units_csv, capsys):
    rc = main(
        [
            "anova",
            str(units_csv),
            "--factors",
            "a,b",
            "--interactions",
            "1",
            "--n-resamples",
            "49",
            "--json",
        ]
    )
    doc = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert doc["command"] == "anova" and doc["ss_type"] == 2
    assert doc["params"]["interactions"] == 1 and doc["params"]["seed"] == 0
    assert [r["term"] for r in doc["rows"]][-1] == "Residual"
    assert {r["term"] for r in doc["rows"]} == {"a", "b", "Residual"}


def test_anova_block_item_and_plot(tmp_path, capsys):
    obs = observations(
        n_models=1,
        n_items=30,
        prompt_sd=0.0,
        seed=1,
        factors={"a": {0: 0.0, 1: 0.1}, "c": {"x": 0.0, "y": 0.0}},
    )
    path = tmp_path / "obs.csv"
    obs.select("model", "dataset", "item", "variant", "run", "score", "a", "c").write_csv(path)
    png = tmp_path / "anova.png"
    rc = main(
        [
            "anova",
            str(path),
            "--factors",
            "a,c",
            "--block",
            "item",
            "--n-resamples",
            "49",
            "--plot",
            str(png),
        ]
    )
    out = capsys.readouterr()
    assert rc == 0 and png.stat().st_size > 0
    assert "120 rows" in out.err  # item rows, not units
    assert "items: random" in out.err and "sign flips" in out.err
    table = pl.read_csv(io.StringIO(out.out))
    assert set(table.filter(pl.col("term") != "Residual")["error_term"]) == {
        "a:item",
        "c:item",
        "a:c:item",
    }
    rc = main(["anova", str(path), "--factors", "a,c", "--block", "item", "--items", "fixed",
               "--n-resamples", "0", "--json"])  # fmt: skip
    doc = json.loads(capsys.readouterr().out)
    assert rc == 0 and doc["params"]["items"] == "fixed"
    assert {r["error_term"] for r in doc["rows"] if r["term"] != "Residual"} == {"Residual"}


def test_attribute_linear_json_and_plot(units_csv, tmp_path, capsys):
    png = tmp_path / "attr.png"
    rc = main(
        [
            "attribute",
            str(units_csv),
            "--factors",
            "a,b,c",
            "--method",
            "linear",
            "--n-null",
            "19",
            "--json",
            "--plot",
            str(png),
        ]
    )
    doc = json.loads(capsys.readouterr().out)
    assert rc == 0 and png.stat().st_size > 0
    res = attribute(pl.read_csv(units_csv), factors=["a", "b", "c"], method="linear", n_null=19)
    assert [r["factor"] for r in doc["rows"]] == res.to_frame()["factor"].to_list()
    assert doc["cv_r_sq"] == pytest.approx(res.cv_r_sq, rel=1e-12)
    assert len(doc["coefficients"]) == 2 + 2 + 3
    assert doc["params"]["method"] == "linear"


def test_attribute_xgboost_default(units_csv, capsys):
    rc = main(["attribute", str(units_csv), "--factors", "a,b,c", "--n-null", "9"])
    out = capsys.readouterr()
    assert rc == 0
    table = pl.read_csv(io.StringIO(out.out))
    assert table.columns == [
        "factor",
        "n_levels",
        "mean_abs_shap",
        "null_high",
        "above_null",
        "partial_r_sq",
    ]
    assert "xgboost" in out.err and "cross-validated R²" in out.err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["anova", "{csv}", "--factors", "a,zz"], "`--factors` names 'zz'"),
        (["anova", "{csv}", "--factors", "a", "--block", "item"], "no column 'item'"),
        (["attribute", "{csv}", "--factors", "model"], "factor 'model' has a single level"),
    ],
)
def test_user_errors_exit_2_with_one_line(units_csv, capsys, argv, message):
    rc = main([a.format(csv=units_csv) for a in argv])
    err = capsys.readouterr().err
    assert rc == 2
    assert message in err and "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith("evalstats: error: ")


def test_bad_option_values_are_usage_errors(units_csv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["anova", str(units_csv), "--factors", "a", "--ss-type", "4"])
    assert exc.value.code == 2


def test_anova_block_of_several_columns_and_runs_option(tmp_path, capsys):
    path = tmp_path / "u.csv"
    unit_table(
        n_models=2,
        n_datasets=2,
        n_items=40,
        n_runs=2,
        instability=0.5,
        seed=1,
        factors={"a": {0: 0.0, 1: 0.1}, "b": {"p": 0.0, "q": 0.0, "r": 0.0}},
    ).write_csv(path)
    argv = ["anova", str(path), "--factors", "a,b", "--block", "model,dataset", "--json"]
    assert main([*argv, "--n-resamples", "19", "--runs", "replicates"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["params"]["block"] == ["model", "dataset"]
    assert doc["params"]["runs"] == "replicates" and doc["n_obs"] == 2 * 2 * 6 * 2
    assert main([*argv, "--n-resamples", "0"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["params"]["runs"] == "mean" and doc["n_obs"] == 2 * 2 * 6
    assert (
        main(
            [
                "attribute",
                str(path),
                "--factors",
                "a,b",
                "--method",
                "linear",
                "--n-null",
                "0",
                "--runs",
                "replicates",
                "--json",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["params"]["runs"] == "replicates"
