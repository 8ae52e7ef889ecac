"""Issue 15 in the report: the intervals, pairs and ranking readings on real-shaped tables.

Regressions for "0 of 756 model pairs differ" (models 59 points apart), "95% CI n/a to n/a" on
one variant and "CI 16.6 % to 129.3 %" on two, and the planted 5-point gap among 30 models.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import polars as pl
import pytest

import evalstats as ev


def _item_means(rng, accuracy, n_items, runs, *, item_sd=1.0):
    """Item means over ``runs`` samples, shared item difficulty (what the pairs are paired on)."""
    accuracy = np.asarray(accuracy, dtype=float)
    logit = np.log(accuracy / (1 - accuracy))
    difficulty = rng.normal(0, item_sd, n_items)
    p = 1 / (1 + np.exp(-(logit[:, None] + difficulty[None, :])))
    y = rng.binomial(runs, p) / runs
    k = len(accuracy)
    return pl.DataFrame(
        {
            "model": np.repeat([f"m{j:02d}" for j in range(k)], n_items),
            "dataset": "code",
            "item": np.tile([str(i) for i in range(n_items)], k),
            "variant": "v",
            "run": 0,
            "score": y.ravel(),
        }
    )


def _report(obs, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ev.audit_report(obs, seed=0, **kw)


@pytest.fixture(scope="module")
def planted():
    """30 models x 800 items (item means over 10 samples); m29 is 5 points above the others."""
    rng = np.random.default_rng(5)
    acc = np.full(30, 0.60)
    acc[29] = 0.65
    return _report(_item_means(rng, acc, 800, 10))


def test_report_names_the_planted_gap_after_holm_and_leads_with_the_ranking(planted):
    reading = planted["compare"].reading
    # the ranking summary comes first: beyond 8 models, groups before the pairs
    assert reading.startswith("On code, 30 models fall into 2 groups; models that share a group")
    assert "compact letter display" in reading
    assert re.search(r"The top group: m29 \(1 model\)", reading)
    assert "29 of 435 model pairs differ at the 0.05 level after Holm correction" in reading
    assert "m29 ahead of" in reading
    assert "paired t test on the item differences" in reading  # the p-value method named
    groups = planted["compare"].tables["groups"]
    assert groups.filter(pl.col("model") == "m29")["letters"].item() == "a"
    assert (groups.filter(pl.col("model") != "m29")["letters"] == "b").all()
    ranks = planted["ranks"].tables["ranks"]
    assert ranks.filter(pl.col("model") == "m29")["rank_high"].item() == 1


def test_models_59_points_apart_are_reported_as_different():
    """Was: "0 of 756 model pairs differ" (9,999 sign flips, Holm over 378 pairs per dataset)."""
    rng = np.random.default_rng(15)
    parts = [
        _item_means(rng, np.linspace(0.20, 0.79, 28), 200, 10, item_sd=0.5).with_columns(
            dataset=pl.lit(d)
        )
        for d in ("cruxeval_i", "cruxeval_o")
    ]
    rep = _report(pl.concat(parts))
    t = rep["compare"].tables["compare"]
    assert t.height == 756 and t["can_reject"].all()
    far = t.filter(pl.col("model_a") == "m00", pl.col("model_b") == "m27")
    assert far["reject"].all() and (far["difference"] < -0.5).all()
    reading = rep["compare"].reading
    n_sig = int(t["reject"].sum())
    assert f"{n_sig} of 756 model pairs differ" in reading and n_sig > 500
    assert "cannot be significant by construction" not in reading
    # with two datasets the count over both leads (no dataset stands for the study); each
    # dataset's ranking summary follows it
    assert reading.startswith(f"{n_sig} of 756 model pairs differ")
    assert "On cruxeval_i, 28 models fall into" in reading
    assert "On cruxeval_o, 28 models fall into" in reading


def test_a_stated_floor_when_the_user_forces_few_permutations():
    rng = np.random.default_rng(3)
    obs = _item_means(rng, np.linspace(0.3, 0.8, 12), 60, 5)
    rep = _report(obs, options={"compare": {"method": "permutation", "n_resamples": 999}})
    reading = rep["compare"].reading
    assert "66 of 66 pairs cannot be significant by construction" in reading
    assert "sign-flip permutation test" in reading


def test_one_variant_reading_has_an_interval_over_items_not_na():
    """Was: "95% CI n/a to n/a" (t over one variant)."""
    rng = np.random.default_rng(1)
    obs = _item_means(rng, [0.3, 0.7], 80, 1)  # one variant, one run: 0/1 scores
    reading = _report(obs)["intervals"].reading
    assert "n/a" not in reading
    assert "Wilson score intervals" in reading and "over items" in reading
    assert "because items are the sampling unit of a benchmark" in reading


def test_table_without_items_and_one_variant_says_why_there_is_no_interval():
    """No items to resample and one variant: no interval, with its reason, never 'n/a to n/a'."""
    units = pl.DataFrame(
        {
            "model": ["a", "b", "c"],
            "dataset": "d",
            "variant": "v",
            "run": 0,
            "score": [0.4, 0.6, 0.7],
        }
    )
    rep = _report(units)
    reading = rep["intervals"].reading
    assert "n/a to n/a" not in reading and "n/a" not in reading
    assert "(no interval)" in reading
    assert (
        "No group has an interval: only 1 variant (an interval over variants needs at least 20) "
        "and no item column" in reading
    )


def test_two_variants_reading_stays_within_bounds():
    """Was: "72.9 % (95% CI 16.6 % to 129.3 %)" (t over two variants)."""
    rng = np.random.default_rng(2)
    a = _item_means(rng, [0.5, 0.9], 100, 5).with_columns(variant=pl.lit("t=0.2"))
    b = a.with_columns(variant=pl.lit("t=0.8"), score=pl.lit(1.0))
    rep = _report(pl.concat([a, b]))
    t = rep["intervals"].tables["intervals"]
    assert (t["ci_low"] >= 0).all() and (t["ci_high"] <= 1).all()
    # two prompt variants cannot estimate the prompt-space spread (issue 46): the interval is
    # about the 2 recorded prompts, and the reading says so
    assert set(t["over"]) == {"items"} and set(t["n_prompts"]) == {2}
    assert "2 prompt variants cannot estimate the prompt-space spread" in rep["intervals"].reading
    pcts = [float(x) for x in re.findall(r"(\d+\.\d) %", rep["intervals"].reading)]
    assert pcts and max(pcts) <= 100.0


def test_some_groups_without_an_interval_are_counted_with_the_reason():
    rng = np.random.default_rng(4)
    rows = []
    for dataset, n_var in (("many", 25), ("few", 3)):
        for m in ("a", "b"):
            for v in range(n_var):
                rows.append((m, dataset, f"p{v}", 0, float(rng.uniform(0.4, 0.8))))
    units = pl.DataFrame(rows, schema=["model", "dataset", "variant", "run", "score"], orient="row")
    reading = _report(units)["intervals"].reading
    assert "n/a" not in reading
    assert "2 of 4 groups have no interval: only 3 variants" in reading
    assert "over variants" in reading and "because the table has no item column" in reading
