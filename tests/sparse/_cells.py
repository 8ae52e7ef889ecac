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


def planted_cells(
    n_items: int,
    n_prompts: int,
    share: float,
    seed: int,
    factors: tuple[int, ...] = (),
    *,
    mean: float = 1.5,
    item_sd: float = 1.5,
    prompt_sd: float = 0.58,
    factor_sd: float = 0.3,
) -> CellData:
    """A ``share`` of a planted n_items x n_prompts logistic grid, each cell kept at random:
    logit = mean + a_i + u_p + sum_f c_f[level], a ~ N(0, item_sd^2), u ~ N(0, prompt_sd^2),
    c_f ~ N(0, factor_sd^2) for each factor of ``factors`` levels."""
    rng = np.random.default_rng(seed)
    a = rng.normal(0.0, item_sd, n_items)
    u = rng.normal(0.0, prompt_sd, n_prompts)
    levels = np.zeros((n_prompts, len(factors)), dtype=np.int64)
    for f, n_lev in enumerate(factors):
        levels[:, f] = rng.integers(0, n_lev, n_prompts)
        u = u + rng.normal(0.0, factor_sd, n_lev)[levels[:, f]]
    prompt, item = np.nonzero(rng.random((n_prompts, n_items)) < share)
    y = rng.random(prompt.size) < 1.0 / (1.0 + np.exp(-(mean + a[item] + u[prompt])))
    return CellData(
        item=item.astype(np.int64),
        prompt=prompt.astype(np.int64),
        k=y.astype(float),
        n=np.ones(item.size),
        n_items=n_items,
        n_prompts=n_prompts,
        levels=levels,
    )
