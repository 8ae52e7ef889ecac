"""Identical input gives bit-identical group means inside ``reproducible()`` (polars' engine)."""

from __future__ import annotations

import numpy as np
import polars as pl

from evalstats._reproducible import reproducible


def _means(lf: pl.LazyFrame) -> np.ndarray:
    keys = ["model", "dataset", "variant"]
    return lf.group_by(keys).agg(pl.col("score").mean()).sort(keys).collect()["score"].to_numpy()


def test_group_means_are_bit_identical_from_call_to_call():
    rng = np.random.default_rng(0)
    n = 40_000
    frame = pl.DataFrame(
        {
            "model": rng.integers(0, 30, n).astype(str),
            "dataset": rng.integers(0, 5, n).astype(str),
            "variant": rng.integers(0, 8, n).astype(str),
            "score": rng.random(n),
        }
    )
    with reproducible():
        first = _means(frame.lazy())
        for _ in range(20):
            assert np.array_equal(_means(frame.lazy()), first)
        # the in-memory engine sums each group in row order: the eager result, bit for bit
        eager = frame.group_by(["model", "dataset", "variant"]).agg(pl.col("score").mean())
        eager = eager.sort(["model", "dataset", "variant"])["score"].to_numpy()
        assert np.array_equal(first, eager)
    assert pl.Config.state(if_set=True).get("engine_affinity") is None  # restored
