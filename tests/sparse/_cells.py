"""Helpers of the sparse-estimator tests: a subsample of a planted grid as the fit's cells."""

from __future__ import annotations

import numpy as np
import polars as pl

from evalstats.sparse import subsample_cells
from evalstats.sparse._fit import CellData


def subsample_as_cells(grid: pl.DataFrame, share: float, seed: int) -> tuple[CellData, np.ndarray]:
    """The cells of a ``share`` subsample of ``grid`` (no factors) and every variant's truth."""
    obs = subsample_cells(grid, share=share, seed=seed)
    items = {v: j for j, v in enumerate(sorted(grid["item"].unique()))}
    prompts = {v: j for j, v in enumerate(sorted(grid["variant"].unique()))}
    cells = CellData(
        item=np.array([items[v] for v in obs["item"]], dtype=np.int64),
        prompt=np.array([prompts[v] for v in obs["variant"]], dtype=np.int64),
        k=obs["score"].to_numpy().astype(float),
        n=np.ones(obs.height),
        n_items=len(items),
        n_prompts=len(prompts),
        levels=np.zeros((len(prompts), 0), dtype=np.int64),
    )
    truth = grid.group_by("variant").agg(pl.col("score").mean()).sort("variant")["score"]
    return cells, truth.to_numpy()
