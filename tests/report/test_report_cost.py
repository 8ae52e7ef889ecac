"""The report's cost on many models stays linear (issue 45): what was quadratic or per-group.

On 100,000 models ``report`` ran past 300 s: ``rank_intervals`` built a wide table of one column
per model (26 s at 20,000 models, quadratic) before refusing that many pairs; ``intervals``
ran a Python loop per model (statsmodels' Wilson with a normal quantile per call, polars'
``partition_by(as_dict=True)`` with one query per key); ``results.json`` encoded every value
of the design's 100,000 groups with one encoder call each; the HTML page held every row of
every table. The timing itself is in ``benchmarks/bench_report_cost.py``; these tests check
what made it slow is gone, and that the numbers are the same.
"""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from statsmodels.stats.proportion import proportion_confint

from evalstats.compare import _intervals, intervals, rank_intervals
from evalstats.errors import LimitError


def _many(n_models: int, n_items: int = 5, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {
            "model": np.repeat([f"m{i:05d}" for i in range(n_models)], n_items),
            "item": np.tile([str(i) for i in range(n_items)], n_models),
            "score": (rng.random(n_models * n_items) < 0.6).astype(float),
        }
    )


def test_wilson_intervals_of_many_models_are_computed_at_once(monkeypatch):
    """No per-model call of mean_interval for 0/1 single-prompt groups; statsmodels' numbers."""
    calls = []
    real = _intervals.mean_interval
    monkeypatch.setattr(
        _intervals, "mean_interval", lambda *a, **k: calls.append(1) or real(*a, **k)
    )
    frame = _many(2_000)
    out = intervals(frame)
    assert len(calls) == 0
    assert out.height == 2_000 and set(out["method"]) == {"wilson"}
    counts = frame.group_by("model").agg(pl.col("score").sum()).sort("model")
    low, high = proportion_confint(counts["score"].to_numpy(), 5, alpha=0.05, method="wilson")
    low = np.where(counts["score"].to_numpy() == 0, 0.0, low)
    high = np.where(counts["score"].to_numpy() == 5, 1.0, high)
    np.testing.assert_allclose(out["ci_low"].to_numpy(), low, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(out["ci_high"].to_numpy(), high, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(out["mean"].to_numpy(), counts["score"].to_numpy() / 5, rtol=0)


def test_the_grouped_wilson_rows_equal_the_loop_bit_for_bit():
    """The same groups through the loop (method='wilson' is the loop's when forced) and at once."""
    frame = _many(300, n_items=7, seed=2)
    fast = intervals(frame)
    rows, _ = _intervals._wilson_rows(
        pl.DataFrame(), ("model",), "t", 0.95, None, lambda k: (0.0, 1.0)
    )
    assert rows == []
    looped = []
    for key, g in frame.partition_by("model", as_dict=True, maintain_order=True).items():
        m, se, lo, hi = _intervals.mean_interval(g["score"].to_numpy(), method="wilson")
        looped.append((key[0], m, se, lo, hi))
    looped.sort()
    got = fast.select("model", "mean", "se", "ci_low", "ci_high").rows()
    assert got == looped


def test_partitions_match_polars_as_dict_in_order():
    frame = pl.DataFrame(
        {"a": ["x", "y", "x", None, "y"], "b": [1, 1, 1, 2, None], "v": [1, 2, 3, 4, 5]}
    )
    ours = _intervals.partitions(frame, ["a", "b"])
    theirs = frame.partition_by(["a", "b"], as_dict=True, maintain_order=True)
    assert list(ours) == list(theirs)
    for k in theirs:
        assert ours[k].equals(theirs[k])


def test_rank_intervals_refuses_too_many_pairs_before_the_wide_table(monkeypatch):
    from evalstats.compare import _ranks

    def wide(*args, **kwargs):
        raise AssertionError("the wide table was built before the pairs were counted")

    monkeypatch.setattr(_ranks, "paired_matrix", wide)
    with pytest.raises(LimitError, match="ranking models: 1,100 values of 'model'"):
        rank_intervals(_many(1_100, n_items=3))


def test_results_json_writes_each_plain_record_on_one_line():
    from evalstats.report._tables import dumps_document

    doc = {"design": {"groups": [{"model": f"m{i}", "n_items": i} for i in range(3)]}}
    text = dumps_document(doc)
    assert json.loads(text) == doc
    lines = [ln.strip() for ln in text.splitlines()]
    assert '{"model": "m1", "n_items": 1},' in lines
    nested = {"x": [{"a": {"b": 1}}, {"c": [1, 2]}]}
    assert json.loads(dumps_document(nested)) == nested


def test_the_html_page_shows_at_most_its_row_limit(tmp_path, monkeypatch):
    from evalstats.report import _render
    from tests._cli import cli, ok

    monkeypatch.setattr(_render, "_HTML_ROWS", 7)
    data = tmp_path / "d.parquet"
    _many(30).write_parquet(data)
    out = tmp_path / "r"
    code, _, err = cli(
        "report", str(data), "--out", str(out), "--quiet", "--figures", "none",
        "--skip", "compare,ranks",
    )  # fmt: skip
    ok(code, err)
    html = (out / "report.html").read_text()
    assert "First 7 rows shown." in html
    article = html[html.index('id="a-intervals"') :]
    article = article[: article.index("</article>")]
    assert article.count("<td>m000") == 7
    csv = pl.read_csv(out / "tables" / "intervals.csv")
    assert csv.height == 30
