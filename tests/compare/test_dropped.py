"""Analyses that pair or align (compare, audit, ranks) count what they leave out and warn
(issue 17); the item-level comparison follows the one item-set rule of every analysis."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from evalstats.aggregate import item_set_rule
from evalstats.compare import compare_models, rank_intervals, reversal_audit, subset_rankings
from evalstats.errors import DesignWarning, EvalstatsWarning, SchemaError
from evalstats.simulate import observations, unit_table
from tests._cli import cli as _cli


def _two_models(tmp_path: Path) -> Path:
    """Model a scored items 1-14, model b items 7-20: 8 shared, 6 + 6 unpaired."""
    rng = np.random.default_rng(1)
    rows = [("a", str(i), int(rng.integers(0, 2))) for i in range(1, 15)]
    rows += [("b", str(i), int(rng.integers(0, 2))) for i in range(7, 21)]
    path = tmp_path / "cmp.csv"
    pl.DataFrame(rows, schema=["model", "item", "score"], orient="row").write_csv(path)
    return path


def test_compare_counts_and_warns_items_one_model_lacks(tmp_path):
    """The reported case: n=8 where each model has 14 items, said nowhere before."""
    path = _two_models(tmp_path)
    code, out, err = _cli("compare", str(path), "--json")
    assert code == 0, err
    row = json.loads(out)["rows"][0]
    assert (row["n"], row["n_unpaired"]) == (8, 12)
    warn = [ln for ln in err.splitlines() if ln.startswith("evalstats: warning: ")]
    assert len(warn) == 1 and "12 unit(s) are present for only one model" in warn[0]
    assert "DesignWarning" not in err and "Traceback" not in err


def _runs_over_different_items() -> pl.DataFrame:
    obs = observations(n_models=2, n_items=20, n_variants=1, n_runs=3, seed=3)
    # run 2 of m1 never reached items 15-19
    return obs.filter(
        ~((pl.col("model") == "m1") & (pl.col("run") == 2) & (pl.col("item").cast(int) >= 15))
    )


def test_item_level_compare_follows_the_item_set_rule():
    obs = _runs_over_different_items()
    with pytest.raises(SchemaError, match="cover different items.*--on-mismatch"):
        compare_models(obs, method="t", on_mismatch="error")
    with item_set_rule("error"), pytest.raises(SchemaError, match="cover different items"):
        compare_models(obs, method="t")  # a rule set around the call is the rule
    with pytest.warns(EvalstatsWarning) as rec:
        inter = compare_models(obs, method="t", on_mismatch="intersect")
    text = " ".join(str(w.message) for w in rec)
    assert "analysed only the items every run scored" in text
    assert "5 unit(s) are present for only one model" in text
    assert inter.row(0, named=True)["n"] == 15  # m1's items 15-19 dropped by the rule...
    assert inter.row(0, named=True)["n_unpaired"] == 5  # ...and counted when pairing
    with pytest.warns(DesignWarning, match="missing runs are averaged"):
        kept = compare_models(obs, method="t", on_mismatch="keep")
    assert (kept.row(0, named=True)["n"], kept.row(0, named=True)["n_incomplete"]) == (20, 5)


def test_item_level_compare_by_default_pairs_the_runs_each_item_has():
    """Issue 46: the default call stopped on runs over different items; items are the unit.

    Each item's score is the mean of the runs it has (``keep``), the items with fewer runs are
    counted in ``n_incomplete`` and warned about, and the result equals ``on_mismatch='keep'``.
    """
    obs = _runs_over_different_items()
    with pytest.warns(DesignWarning, match="missing runs are averaged over the runs present"):
        default = compare_models(obs, method="t")
    with pytest.warns(DesignWarning):
        kept = compare_models(obs, method="t", on_mismatch="keep")
    assert default.equals(kept)
    assert default.select("n", "n_incomplete").row(0) == (20, 5)
    # configurations paired on variants average over items: there the rule still stops
    with pytest.raises(SchemaError, match="cover different items"):
        compare_models(obs, paired_on="variants")


def test_default_compare_on_a_sparse_grid_with_uneven_runs():
    """200 items x 5 prompts, 40 % of the cells missing, 1-3 runs a cell (issue 46's case)."""
    rng = np.random.default_rng(5)
    runs = rng.integers(1, 4, (200, 5)) * (rng.random((200, 5)) > 0.4)
    ii, pp = np.nonzero(runs)
    rows = []
    for m in ("m0", "m1"):
        for i, p in zip(ii, pp, strict=True):
            for r in range(runs[i, p]):
                rows.append((m, "d", str(i), f"v{p}", r, float(rng.random() < 0.6)))
    obs = pl.DataFrame(
        rows, schema=["model", "dataset", "item", "variant", "run", "score"], orient="row"
    )
    with pytest.warns(DesignWarning, match="counted in `n_incomplete`"):
        out = compare_models(obs)
    row = out.row(0, named=True)
    assert row["method"] == "generalized-design" and row["n"] == len(set(ii.tolist()))
    assert row["n_incomplete"] > 0 and 0 <= row["pvalue"] <= 1


def test_compare_cli_and_python_agree_under_each_item_set_rule(tmp_path):
    path = tmp_path / "runs.csv"
    _runs_over_different_items().write_csv(path)
    code, _, err = _cli("compare", str(path), "--method", "t")
    assert code == 2 and "cover different items" in err
    for rule in ("intersect", "keep"):
        code, out, err = _cli(
            "compare", str(path), "--method", "t", "--on-mismatch", rule, "--json"
        )
        assert code == 0, err
        with pytest.warns(EvalstatsWarning):
            py = compare_models(_runs_over_different_items(), method="t", on_mismatch=rule)
        cli = json.loads(out)["rows"][0]
        assert (cli["n"], cli["n_unpaired"], cli["n_incomplete"]) == tuple(
            py.select("n", "n_unpaired", "n_incomplete").row(0)
        )
        assert cli["difference"] == pytest.approx(py["difference"][0], rel=1e-12)


def test_rank_intervals_count_and_warn_dropped_items():
    obs = observations(n_models=3, n_items=40, n_variants=1, seed=0)
    cut = obs.filter(~((pl.col("model") == "m2") & (pl.col("item").cast(int) < 6)))
    with pytest.warns(DesignWarning, match=r"6 item\(s\) that not every model has"):
        out = rank_intervals(cut, n_resamples=50)
    assert out["n_items"].unique().to_list() == [34]
    assert out["n_items_dropped"].unique().to_list() == [6]
    # the ranks are those of the shared items: dropping them by hand gives the same result
    shared = cut.filter(pl.col("item").cast(int) >= 6)
    expect = rank_intervals(shared, n_resamples=50)
    assert expect["n_items_dropped"].unique().to_list() == [0]
    assert out.drop("n_items_dropped").equals(expect.drop("n_items_dropped"))


def test_audit_counts_and_warns_configurations_and_items_one_model_lacks():
    obs = observations(
        n_models=2,
        n_items=60,
        factors={"template": {"a": 0.0, "b": 0.0, "c": 0.0, "d": 0.0}},
        seed=5,
    )
    cut = obs.filter(
        ~((pl.col("model") == "m1") & (pl.col("template") == "d"))  # one configuration
        & ~((pl.col("model") == "m0") & (pl.col("template") == "a") & (pl.col("item") == "3"))
    )
    with pytest.warns(DesignWarning) as rec:
        res = reversal_audit(cut, default={"template": "a"})
    text = " ".join(str(w.message) for w in rec)
    assert "1 configuration(s) and 1 default-configuration item(s)" in text
    row = res.pairs.row(0, named=True)
    assert (row["n_configs"], row["n_unpaired"], row["n_default_unpaired"]) == (3, 1, 1)
    with pytest.warns(DesignWarning):
        units_res = reversal_audit(
            unit_table(
                n_models=2,
                n_items=60,
                factors={"template": {"a": 0.0, "b": 0.0, "c": 0.0, "d": 0.0}},
                seed=5,
            ).filter(~((pl.col("model") == "m1") & (pl.col("template") == "d"))),
            default={"template": "a"},
        )
    assert units_res.pairs.select("n_unpaired", "n_default_unpaired").row(0) == (1, None)


def test_subset_rankings_count_models_missing_from_a_subset():
    units = unit_table(
        n_models=4,
        n_items=100,
        model_accuracy=(0.5, 0.6, 0.7, 0.8),
        factors={"workload": {"orig": 0.0, "new": -0.1}},
        seed=0,
    )
    cut = units.filter(~((pl.col("model") == "m3") & (pl.col("workload") == "new")))
    with pytest.warns(DesignWarning, match=r"1 model\(s\) present in only one subset"):
        res = subset_rankings(cut, subset="workload")
    assert res.kendall.select("n_models", "n_unpaired").row(0) == (3, 1)


def test_no_warning_when_nothing_is_dropped():
    import warnings

    obs = observations(n_models=3, n_items=30, n_variants=1, seed=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DesignWarning)
        out = rank_intervals(obs, n_resamples=20)
        pairs = compare_models(obs, method="t")
    assert out["n_items_dropped"].unique().to_list() == [0]
    assert pairs["n_unpaired"].unique().to_list() == [0]


def test_compare_follows_the_rule_set_for_every_analysis():
    """The report and the CLI set the rule once (item_set_rule); compare_models follows it."""
    from evalstats.aggregate import item_set_rule

    obs = _runs_over_different_items()
    with item_set_rule("keep"), pytest.warns(DesignWarning, match="missing runs"):
        kept = compare_models(obs, method="t")
    assert kept.row(0, named=True)["n"] == 20
