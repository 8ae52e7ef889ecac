"""Issue 41: headlines drawn only where their evidence carries them, with their basis said.

A spread over prompts needs every prompt scored on MIN_RANGE_ITEMS items or more (over one
item a 0/1 score moves by 100 points between any two prompts); a run-to-run change needs the
runs to share that many items, and when runs cover different items the reading says so first.
"""

from __future__ import annotations

import numpy as np
import polars as pl

import evalstats
from evalstats.design._model import MIN_RANGE_ITEMS

ONLY = ["nstar", "converge", "anova", "attribution", "compare", "ranks", "intervals", "noise"]


def _reading(obs: pl.DataFrame, key: str) -> str:
    rep = evalstats.audit_report(obs, progress=False, skip=ONLY, seed=0)
    return next(a.reading for a in rep.analyses if a.key == key)


def test_a_spread_over_one_item_per_prompt_is_no_headline():
    rng = np.random.default_rng(0)
    rows = [
        {"model": m, "dataset": d, "item": f"i{i}", "template": f"t{t}", "score": float(s)}
        for m in ("a", "b")
        for d, n in (("big", 40), ("tiny", 1))
        for i in range(n)
        for t, s in zip(range(3), rng.random(3) < 0.5)
    ]
    reading = _reading(pl.DataFrame(rows), "moments")
    assert "on tiny" not in reading.split(" left out")[0]
    assert f"2 groups whose prompts were scored on fewer than {MIN_RANGE_ITEMS} items" in reading
    only_tiny = pl.DataFrame([r for r in rows if r["dataset"] == "tiny"])
    assert "no spread to report" in _reading(only_tiny, "moments")


def test_runs_over_different_items_are_said_first_and_few_shared_items_draw_no_range():
    rng = np.random.default_rng(1)
    rows = []
    for m in ("a", "b"):
        for run, items in ((0, range(0, 27)), (1, range(22, 66))):  # 5 items shared
            rows += [
                {"model": m, "dataset": "d", "item": f"i{i}", "run": run,
                 "score": float(rng.random() < 0.6)}
                for i in items
            ]  # fmt: skip
    reading = _reading(pl.DataFrame(rows), "stability")
    assert reading.startswith("The runs of 2 groups cover different items")
    assert "changed between runs by up to" not in reading
    assert f"share fewer than {MIN_RANGE_ITEMS} items" in reading


def test_a_stability_headline_states_its_items():
    rng = np.random.default_rng(2)
    rows = [
        {"model": m, "dataset": "d", "item": f"i{i}", "run": r, "score": float(rng.random() < 0.6)}
        for m in ("a", "b")
        for r in range(3)
        for i in range(30)
    ]
    reading = _reading(pl.DataFrame(rows), "stability")
    assert reading.startswith("Over 3 identical runs of each of 2 configurations, 30 items,")


def test_a_1_to_10_rating_is_never_called_accuracy_nor_hinted_as_percent(tmp_path):
    """Issue 41: a judge's 1-10 rating was 'accuracy (0-1)' with notes suggesting --rescale."""
    from evalstats.cli import main

    rng = np.random.default_rng(3)
    rows = [
        {"model": m, "dataset": "mt", "item": f"q{i}", "score": float(rng.integers(1, 11))}
        for m in ("a", "b", "c")
        for i in range(60)
    ]
    path = tmp_path / "rating.csv"
    pl.DataFrame(rows).write_csv(path)
    obs, report = evalstats.read(path)
    assert not any("rescale" in n or "percent" in n for n in report.notes)
    out = tmp_path / "rep"
    assert main(["report", str(path), "--out", str(out), "--quiet", "--figures", "none"]) == 0
    md = (out / "report.md").read_text()
    assert "accuracy" not in md.lower() and "--rescale" not in md


def test_percentages_still_get_the_rescale_hint(tmp_path):
    rows = [
        {"model": m, "dataset": "d", "variant": f"v{v}", "score": 40.0 + 7.5 * v + (m == "b")}
        for m in ("a", "b")
        for v in range(6)
    ]
    path = tmp_path / "pct.csv"
    pl.DataFrame(rows).write_csv(path)
    _, report = evalstats.read(path)
    assert any("--rescale 100" in n for n in report.notes)
