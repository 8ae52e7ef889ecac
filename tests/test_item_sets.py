"""The one rule for repeated runs over different item sets (evalstats.aggregate.align_item_sets)."""

from __future__ import annotations

import warnings

import polars as pl
import pytest

from evalstats.aggregate import align_item_sets, item_set_rule, to_units
from evalstats.errors import EvalstatsWarning, ParameterError, SchemaError
from evalstats.normality import run_distribution


def _obs() -> pl.DataFrame:
    """Model a: run 0 over items 1-4, run 1 re-ran only items 1-2. Model b: complete runs."""
    rows = [("a", 0, i, float(i % 2)) for i in range(1, 5)]
    rows += [("a", 1, i, 1.0) for i in (1, 2)]
    rows += [("b", r, i, float(i > 2)) for r in (0, 1) for i in range(1, 5)]
    return pl.DataFrame(rows, schema=["model", "run", "item", "score"], orient="row").with_columns(
        pl.lit("d").alias("dataset"), pl.col("item").cast(pl.String)
    )


def test_error_names_the_group_runs_and_flag():
    with pytest.raises(SchemaError) as err:
        align_item_sets(_obs())
    msg = str(err.value)
    assert "the runs of model='a', dataset='d'" in msg and "run 1 has 2 of 4 items" in msg
    assert "--on-mismatch intersect" in msg and "biases TAR upward" in msg
    assert "model='b'" not in msg


def test_intersect_keeps_the_items_every_run_scored_and_warns():
    with pytest.warns(EvalstatsWarning, match="biases TAR upward"):
        out = align_item_sets(_obs(), on_mismatch="intersect").collect()
    a = out.filter(pl.col("model") == "a")
    assert sorted(a["item"].unique()) == ["1", "2"] and a.height == 4
    assert out.filter(pl.col("model") == "b").height == 8  # complete runs untouched


def test_keep_and_complete_data_pass_unchanged():
    obs = _obs()
    assert align_item_sets(obs, on_mismatch="keep").collect().equals(obs)
    complete = obs.filter(pl.col("model") == "b")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert align_item_sets(complete).collect().equals(complete)
    with pytest.raises(ParameterError, match="`on_mismatch` must be one of"):
        align_item_sets(obs, on_mismatch="drop")


def test_to_units_and_analyses_follow_the_rule():
    obs = _obs()
    with pytest.raises(SchemaError, match="cover different items"):
        to_units(obs).collect()
    with pytest.raises(SchemaError, match="cover different items"):
        run_distribution(obs)  # an analysis on unit scores: through to_units
    with item_set_rule("keep"):
        kept = to_units(obs).filter(pl.col("model") == "a").sort("run").collect()
    # independent: each run's mean over its own items
    assert kept["score"].to_list() == [0.5, 1.0] and kept["n_items"].to_list() == [4, 2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inter = to_units(obs, on_mismatch="intersect").filter(pl.col("model") == "a")
    assert inter.sort("run").collect()["score"].to_list() == [0.5, 1.0]
    assert inter.collect()["n_items"].to_list() == [2, 2]


def test_audit_report_applies_one_rule():
    from evalstats.report import audit_report

    obs = _obs()
    with pytest.raises(SchemaError, match="--on-mismatch intersect"):
        audit_report(obs, on_mismatch="error")
    # the default proceeds by a stated rule: each run over its own items for unit scores
    auto = audit_report(obs, skip=("attribution", "anova"))
    assert auto.parameters["on_mismatch"] == "auto"
    assert auto.units.filter(pl.col("model") == "a").sort("run")["n_items"].to_list() == [4, 2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = audit_report(obs, on_mismatch="intersect", skip=("attribution", "anova"))
    assert rep.parameters["on_mismatch"] == "intersect"
    units = rep.units.filter(pl.col("model") == "a")
    assert units["n_items"].to_list() == [2, 2]
