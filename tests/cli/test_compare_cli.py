"""CLI: intervals, compare, audit, converge, providers (in-process main([...]))."""

from __future__ import annotations

import io
import json

import polars as pl
import pytest

from evalstats.cli import main
from evalstats.simulate import observations


@pytest.fixture(scope="module")
def dump(tmp_path_factory):
    obs = observations(
        n_models=3,
        n_items=40,
        n_variants=8,
        providers=("a", "b"),
        factors={
            "template": {"plain": 0.0, "qa": 0.02},
            "shots": {0: 0.0, 5: 0.05},
            "cot": {False: 0.0, True: 0.0},
        },
        error_rates={"b": {"timeout": 0.05}},
        latency=True,
        seed=0,
    )
    path = tmp_path_factory.mktemp("dump") / "obs.parquet"
    obs.write_parquet(path)
    return str(path)


def _csv(text: str) -> pl.DataFrame:
    return pl.read_csv(io.StringIO(text))


def test_intervals_csv_on_stdout(dump, capsys):
    assert main(["intervals", dump, "--method", "wilson", "--over", "items"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("evalstats: error:") or "evalstats: error:" in err
    assert "Traceback" not in err
    assert main(["intervals", dump, "--over", "items", "--confidence-level", "0.9"]) == 0
    out = _csv(capsys.readouterr().out)
    # one interval per model and provider: the two providers are never pooled (issue 41)
    assert out.height == 6 and set(out["provider"]) == {"a", "b"}
    assert (out["confidence_level"] == 0.9).all() and (out["n"] == 40).all()


def test_compare_json_carries_params(dump, capsys):
    assert main(["compare", dump, "--correction", "bh", "--n-resamples", "199", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["command"] == "compare" and doc["params"]["correction"] == "bh"
    assert len(doc["rows"]) == 6 and doc["rows"][0]["correction"] == "bh"  # 3 pairs x 2 providers


def test_audit_reports_reversals_and_writes_out(dump, capsys, tmp_path):
    out = tmp_path / "pairs.csv"
    rc = main(
        [
            "audit",
            dump,
            "--default",
            "template=plain,shots=0,cot=false",
            "--claim",
            "m2>m0",
            "--out",
            str(out),
        ]
    )
    assert rc == 0
    assert "conclusion reversal(s)" in capsys.readouterr().err
    pairs = pl.read_csv(out)
    assert pairs.height == 3
    assert pairs.filter(pl.col("claim") == "m2>m0")["claim_status"].item() == "supported"


def test_audit_bad_default_is_a_one_line_error(dump, capsys):
    assert main(["audit", dump, "--default", "template"]) == 2
    err = capsys.readouterr().err
    assert "evalstats: error: `--default` expects factor=value" in err and "Traceback" not in err
    assert main(["audit", dump, "--default", "prompt=x"]) == 2
    assert "`--default` names 'prompt'" in capsys.readouterr().err


def test_converge_and_providers(dump, capsys):
    assert main(["converge", dump, "--batch", "4", "--n-orders", "20"]) == 0
    conv = _csv(capsys.readouterr().out)
    assert conv.height == 3 and (conv["n_available"] == 16).all()
    assert main(["providers", dump, "--table", "errors", "--n-resamples", "99", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {"scores", "differences", "latency", "tail_quality"} <= set(doc)
    timeouts = [r for r in doc["rows"] if r["category"] == "timeout" and r["provider"] == "b"]
    assert len(timeouts) == 3 and all(0 < r["rate"] < 0.15 for r in timeouts)


def test_audit_subset_rankings_table(dump, capsys):
    rc = main(
        ["audit", dump, "--default", "template=plain", "--subset", "shots", "--table", "kendall"]
    )
    assert rc == 0
    out = _csv(capsys.readouterr().out)
    assert out.columns[:3] == ["metric", "subset_a", "subset_b"] and out.height == 1
    assert main(["audit", dump, "--default", "template=plain", "--table", "ranks"]) == 2
    assert "needs `--subset FACTOR`" in capsys.readouterr().err


def _items_csv(tmp_path, *, prompt_as_model: bool) -> str:
    """3 models x 2 prompts x 30 items, 0/1 scores; optionally the prompt column named 'prompt'."""
    obs = observations(n_models=3, n_items=30, n_variants=2, seed=4)
    if prompt_as_model:
        obs = obs.rename({"variant": "prompt"})
    path = tmp_path / "items.csv"
    obs.select(
        "model", "dataset", "item", "prompt" if prompt_as_model else "variant", "run", "score"
    ).write_csv(path)
    return str(path)


def test_friedman_with_items_as_blocks_matches_scipy(tmp_path, capsys):
    """Issue 20: blocks = items (raised a SchemaError before)."""
    from numpy.testing import assert_allclose
    from scipy import stats

    path = _items_csv(tmp_path, prompt_as_model=False)
    assert main(["friedman", path, "--blocks", "dataset,item"]) == 0
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    out = _csv(captured.out)
    obs = pl.read_csv(path)
    wide = (
        obs.group_by("item", "model")
        .agg(pl.col("score").mean())
        .pivot(on="model", index="item", values="score", sort_columns=True)
    )
    ref = stats.friedmanchisquare(*wide.drop("item").to_numpy().T)
    assert_allclose(out["statistic"][0], ref.statistic, rtol=1e-12)
    assert_allclose(out["pvalue"][0], ref.pvalue, rtol=1e-12)
    assert out["n_blocks"][0] == 30 and "f_pvalue" in out.columns


def test_compare_with_a_factor_as_the_model(tmp_path, capsys):
    """`--columns prompt=model,model=factor` crashed with a polars DuplicateError; now the
    prompts are compared (the model column kept as factor 'model_factor', which the design
    takes as prompt variants: `--over recorded-prompts` conditions on them, giving scipy's
    paired t on item means)."""
    from numpy.testing import assert_allclose
    from scipy import stats

    path = _items_csv(tmp_path, prompt_as_model=True)
    rc = main(
        [
            "compare",
            path,
            "--columns",
            "prompt=model,model=factor",
            "--method",
            "t",
            "--over",
            "recorded-prompts",
        ]
    )
    captured = capsys.readouterr()
    assert rc == 0 and "Traceback" not in captured.err
    assert "kept as factor 'model_factor'" in captured.err
    out = _csv(captured.out)
    assert out.select("model_a", "model_b").rows() == [("v00", "v01")]
    obs = pl.read_csv(path)
    wide = (
        obs.group_by("item", "prompt")
        .agg(pl.col("score").mean())
        .pivot(on="prompt", index="item", values="score", sort_columns=True)
    )
    ref = stats.ttest_rel(wide["v00"], wide["v01"])
    assert_allclose(out["pvalue"][0], ref.pvalue, rtol=1e-10)
    # the same through --compare on the untouched file
    path2 = _items_csv(tmp_path, prompt_as_model=False)
    assert main(["compare", path2, "--compare", "variant", "--method", "t"]) == 0
    out2 = _csv(capsys.readouterr().out)
    assert_allclose(out2["pvalue"][0], ref.pvalue, rtol=1e-10)
    # model=factor alone leaves no model column: one clean line, exit 2
    assert main(["compare", path, "--columns", "model=factor"]) == 2
    err = capsys.readouterr().err
    assert "no column gives 'model'" in err and "Traceback" not in err


def test_ppi_cli_means_and_pairs(tmp_path, capsys):
    from evalstats.simulate import judged_observations

    path = tmp_path / "judged.csv"
    judged_observations(n_models=2, n_items=200, n_labelled=60, seed=2).write_csv(path)
    assert main(["ppi", str(path)]) == 0
    out = _csv(capsys.readouterr().out)
    assert out.height == 2 and (out["n_labelled"] == 60).all() and (out["method"] == "ppi++").all()
    assert main(["ppi", str(path), "--pairs", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["params"]["pairs"] is True and len(doc["rows"]) == 1
