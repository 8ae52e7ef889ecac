"""Grouped aggregations in a fixed order and dense codes: the same values as the plain forms."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from evalstats._ordered import dense_inverse, grouped_in_order
from evalstats._reproducible import reproducible
from evalstats.compare._intervals import _HUGE, stable_mean, stable_means


def _rows(n: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {
            "m": rng.integers(0, 4, n).astype(str),
            "i": rng.integers(0, n // 3, n).astype(str),
            "v": rng.integers(0, 3, n),
            # magnitudes from 1e-6 to 1e6: a sum in another order differs in the last bits
            "score": rng.random(n) * 10.0 ** rng.integers(-6, 7, n),
            "k": rng.integers(0, 1000, n),
        }
    ).with_columns(pl.when(pl.col("k") % 17 == 0).then(None).otherwise(pl.col("m")).alias("m"))


@pytest.mark.parametrize("seed", [0, 1])
def test_grouped_in_order_equals_group_by_then_sort_bit_for_bit(seed):
    lf = _rows(60_000, seed).lazy()
    keys = ["m", "i", "v"]
    col = pl.col("score")
    aggs = [
        col.mean().alias("mean"),
        col.sum().alias("sum"),
        ((col - col.mean()) ** 2).sum().alias("ss"),
        col.first().alias("first"),
        pl.col("k").last().alias("last"),
        pl.len().alias("n"),
    ]
    with reproducible():
        for nulls_last in (False, True):
            want = lf.group_by(keys).agg(aggs).sort(keys, nulls_last=nulls_last).collect()
            got = grouped_in_order(lf, keys, *aggs, nulls_last=nulls_last).collect()
            assert got.equals(want)  # same rows, same order, same bits (nulls included)
    assert grouped_in_order(lf, [], pl.len()).collect().item() == 60_000


@pytest.mark.parametrize(
    "x",
    [
        np.array([5, 2, 5, 9, 0, 0]),
        np.random.default_rng(0).integers(0, 50, 1000),
        np.random.default_rng(1).integers(0, 10**9, 1000),  # a sparse range: numpy.unique
        np.array([-3, 4, -3, 7]),  # negative: numpy.unique
        np.array([3], dtype=np.uint8),
        np.array(["b", "a", "b", "c"]),
        np.array([0.5, -1.0, 0.5]),
    ],
)
def test_dense_inverse_is_numpy_uniques_inverse(x):
    values, inverse = np.unique(x, return_inverse=True)
    n, codes = dense_inverse(x)
    assert n == values.size
    np.testing.assert_array_equal(codes, inverse)


def test_dense_inverse_of_nothing():
    n, codes = dense_inverse(np.array([], dtype=np.int64))
    assert n == 0 and codes.size == 0


@pytest.mark.parametrize("huge", [False, True])
def test_stable_means_equal_the_one_expression(huge):
    frame = _rows(20_000, 3)
    if huge:  # scores near the float limit in one group: the scaled mean, for every group
        frame = frame.with_columns(
            pl.when(pl.col("k") == 5).then(1.5e308).otherwise(pl.col("score")).alias("score")
        )
        assert frame["score"].max() > _HUGE
    lf = frame.lazy()
    keys = ["m", "i"]
    with reproducible():
        want = grouped_in_order(lf, keys, stable_mean().alias("y"), pl.len().alias("n")).collect()
        got = stable_means(lf, keys, "y", pl.len().alias("n"))
    assert got.equals(want)
    assert np.isfinite(got["y"].to_numpy()).all()


def test_noise_cells_of_one_run_have_zero_ss_and_several_runs_the_sum_of_squares():
    from evalstats.noise._components import _cells

    one = pl.LazyFrame(
        {"model": ["a"] * 4, "item": ["1", "1", "2", "2"], "variant": ["x", "y"] * 2}
    ).with_columns(score=pl.Series([0.25, 0.5, 1.0, 0.0]))
    c = _cells(one, ["model"])
    assert c["_ss"].to_list() == [0.0] * 4 and c["_n"].to_list() == [1.0] * 4
    two = pl.concat([one.collect(), one.collect().with_columns(pl.col("score") + 0.5)]).lazy()
    c = _cells(two, ["model"])
    np.testing.assert_allclose(c["_ss"].to_numpy(), [0.125] * 4)  # two runs 0.5 apart
    assert c["_mean"].to_list() == [0.5, 0.75, 1.25, 0.25]


@pytest.mark.parametrize("scores", ["binary", "fractional", "binary-with-runs"])
def test_pss_equals_mean_pairwise_difference(scores):
    """PSS (ProSA): the 0/1 count formula and the sorted-weights formula, against a direct sum."""
    from itertools import combinations

    from evalstats.moments import _pss

    rng = np.random.default_rng(7)
    n_items, n_variants, runs = 30, 6, 2 if scores == "binary-with-runs" else 1
    rows = [
        (m, i, v, r)
        for m in ("a", "b")
        for i in range(n_items)
        for v in range(n_variants)
        for r in range(runs)
    ]
    y = rng.integers(0, 2, len(rows)).astype(float)
    if scores == "fractional":
        y = rng.random(len(rows)).round(3)
    obs = pl.DataFrame(
        {
            "model": [r[0] for r in rows],
            "item": [str(r[1]) for r in rows],
            "variant": [str(r[2]) for r in rows],
            "score": y,
        }
    )
    got = dict(_pss(obs.lazy(), ("model",)).collect().iter_rows())
    cells = obs.group_by("model", "item", "variant").agg(pl.col("score").mean())
    for m in ("a", "b"):
        per_item = []
        for _, g in cells.filter(pl.col("model") == m).group_by("item"):
            x = g["score"].to_list()
            per_item.append(np.mean([abs(p - q) for p, q in combinations(x, 2)]))
        assert got[m] == pytest.approx(np.mean(per_item), rel=1e-12)


def test_metric_rows_with_constant_and_varying_declarations():
    from evalstats.schema import MetricInfo, metric_info

    base = pl.DataFrame({"model": ["a"] * 4, "score": [0.5, 1.0, 2.0, 3.0]})
    one = base.with_columns(
        pl.Series("metric", ["acc", "acc", "pass", "pass"]),
        pl.lit(0.0).alias("metric_low"),
        pl.lit(1.0).alias("metric_high"),
        pl.lit(True).alias("higher_is_better"),
    )
    assert metric_info(one) == {
        "acc": MetricInfo("acc", 0.0, 1.0, True),
        "pass": MetricInfo("pass", 0.0, 1.0, True),
    }
    two = one.with_columns(pl.Series("metric_high", [1.0, 1.0, 3.0, 3.0]))
    assert metric_info(two)["pass"] == MetricInfo("pass", 0.0, 3.0, True)
    bad = one.with_columns(pl.Series("metric_high", [1.0, 2.0, 3.0, 3.0]))
    with pytest.raises(Exception, match="declared twice"):
        metric_info(bad)


def test_grouped_in_order_with_keys_of_one_value():
    """Keys with one value (a dataset, a metric, all null) are set back with their value and type."""
    lf = (
        _rows(50_000, 4)
        .with_columns(
            pl.lit("mmlu").alias("dataset"),
            pl.lit(None, dtype=pl.Float64).alias("low"),
            pl.lit("acc").cast(pl.Categorical).alias("metric"),
        )
        .lazy()
    )
    col = pl.col("score")
    for keys in (["dataset", "m", "metric", "i", "low"], ["dataset", "metric"], ["dataset"]):
        with reproducible():
            want = lf.group_by(keys).agg(col.mean(), pl.len()).sort(keys).collect()
            got = grouped_in_order(lf, keys, col.mean(), pl.len()).collect()
        assert got.equals(want), keys
    empty = grouped_in_order(lf.head(0), ["dataset", "m"], col.mean()).collect()
    assert empty.height == 0 and empty.columns == ["dataset", "m", "score"]
