"""Seeded full item x prompt grids with planted effects, and sparse subsamples of them."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import polars as pl

from evalstats.errors import ParameterError

__all__ = [
    "PROMPT_EFFECTS",
    "PlantedEffects",
    "full_grid",
    "planted_effects",
    "sparse_grid",
    "subsample_cells",
]

SCHEMES = ("uniform", "walk")
#: Families of planted prompt effects (:func:`full_grid`'s ``prompt_effects``).
PROMPT_EFFECTS = ("normal", "heavy", "broken")


@dataclass(frozen=True)
class PlantedEffects:
    """The effects :func:`full_grid` plants (logit scale), for oracle comparisons.

    ``item`` (a_i), ``prompt`` (u_p, the broken shift included), ``factor`` (one array of
    level effects per factor, in ``factor_names`` order), ``levels`` (variants x factors level
    codes), ``broken`` (the shifted variant's index, or -1).
    """

    item: np.ndarray
    prompt: np.ndarray
    factor: list[np.ndarray]
    factor_names: list[str]
    levels: np.ndarray
    broken: int

    @property
    def prompt_effect(self) -> np.ndarray:
        """b_p = u_p + sum_f c_f[level_f(p)]."""
        b = self.prompt.copy()
        for f, c in enumerate(self.factor):
            b = b + c[self.levels[:, f]]
        return b


def _draw_effects(
    rng: np.random.Generator,
    *,
    n_items: int,
    n_variants: int,
    item_sd: float,
    prompt_sd: float,
    factors: Mapping[str, int] | None,
    factor_sd: float,
    prompt_effects: str,
    broken_shift: float,
) -> PlantedEffects:
    factors = {"template": 3, "separator": 5} if factors is None else dict(factors)
    a = rng.normal(0.0, item_sd, n_items)
    if prompt_effects == "heavy":
        u = prompt_sd * rng.standard_t(3, n_variants) / np.sqrt(3.0)
    else:
        u = rng.normal(0.0, prompt_sd, n_variants)
    broken = -1
    if prompt_effects == "broken":
        broken = int(rng.integers(0, n_variants))
        u[broken] += broken_shift
    levels, effects = [], []
    for k in factors.values():
        levels.append(rng.integers(0, k, n_variants))
        effects.append(rng.normal(0.0, factor_sd, k))
    lev = np.stack(levels, axis=1) if levels else np.zeros((n_variants, 0), dtype=np.int64)
    return PlantedEffects(a, u, effects, list(factors), lev, broken)


def planted_effects(**grid_options: object) -> PlantedEffects:
    """The effects :func:`full_grid` plants with the same arguments (same seed, same draws).

    ``grid_options`` are :func:`full_grid`'s keyword arguments, its defaults filling the rest.

    Examples
    --------
    >>> e = planted_effects(n_items=5, n_variants=4, prompt_effects="broken", seed=0)
    >>> e.item.shape, e.prompt_effect.shape, 0 <= e.broken < 4
    ((5,), (4,), True)
    """
    bound = inspect.signature(full_grid).bind(**grid_options)
    bound.apply_defaults()
    opts = bound.arguments
    if opts["prompt_effects"] not in PROMPT_EFFECTS:
        raise ParameterError(
            f"`prompt_effects` must be one of {PROMPT_EFFECTS}, got {opts['prompt_effects']!r}."
        )
    return _draw_effects(
        np.random.default_rng(opts["seed"]),
        **{k: opts[k] for k in inspect.signature(_draw_effects).parameters if k != "rng"},
    )


def full_grid(
    *,
    n_items: int = 400,
    n_variants: int = 200,
    mean_logit: float = 0.5,
    item_sd: float = 1.5,
    prompt_sd: float = 0.4,
    factors: Mapping[str, int] | None = None,
    factor_sd: float = 0.3,
    interaction_sd: float = 0.0,
    prompt_effects: str = "normal",
    broken_shift: float = -3.0,
    model: str = "m0",
    dataset: str = "d0",
    seed: int = 0,
) -> pl.DataFrame:
    """Every item under every prompt variant, 0/1 scores from a planted logistic model.

    logit P(correct) = mean_logit + a_i + sum_f c_f[level] + u_p (+ e_ip), with a_i ~ N(0,
    item_sd^2), c_f ~ N(0, factor_sd^2), u_p ~ N(0, prompt_sd^2) and, when ``interaction_sd``
    > 0, an item x prompt interaction e_ip ~ N(0, interaction_sd^2) the estimator does not
    model. ``factors`` maps factor names to numbers of levels (default: ``template`` with 3,
    ``separator`` with 5); each variant draws its levels at random.

    ``prompt_effects`` is the family of u_p: ``'normal'``; ``'heavy'``, Student t with 3
    degrees of freedom scaled to sd ``prompt_sd`` (a long tail on both sides); ``'broken'``,
    normal with one variant (drawn at random) shifted by ``broken_shift`` on the logit scale (a
    prompt the model misreads).

    Returns
    -------
    polars.DataFrame
        Observation table: ``model, dataset, item, variant``, one column per factor,
        ``run`` (0) and ``score``.

    Examples
    --------
    >>> full_grid(n_items=5, n_variants=4, seed=0).height
    20
    """
    if prompt_effects not in PROMPT_EFFECTS:
        raise ParameterError(
            f"`prompt_effects` must be one of {PROMPT_EFFECTS}, got {prompt_effects!r}."
        )
    rng = np.random.default_rng(seed)
    effects = _draw_effects(
        rng,
        n_items=n_items,
        n_variants=n_variants,
        item_sd=item_sd,
        prompt_sd=prompt_sd,
        factors=factors,
        factor_sd=factor_sd,
        prompt_effects=prompt_effects,
        broken_shift=broken_shift,
    )
    levels = {
        name: [f"{name}{j}" for j in lev]
        for name, lev in zip(effects.factor_names, effects.levels.T)
    }
    b = effects.prompt_effect
    eta = mean_logit + effects.item[None, :] + b[:, None]
    if interaction_sd > 0:
        eta = eta + rng.normal(0.0, interaction_sd, eta.shape)
    y = (rng.random(eta.shape) < 1.0 / (1.0 + np.exp(-eta))).astype(float)
    width = len(str(n_variants - 1))
    variants = [f"p{j:0{width}d}" for j in range(n_variants)]
    iw = len(str(n_items - 1))
    return pl.DataFrame(
        {
            "model": model,
            "dataset": dataset,
            "item": np.tile([f"i{i:0{iw}d}" for i in range(n_items)], n_variants),
            "variant": np.repeat(variants, n_items),
            **{name: np.repeat(v, n_items) for name, v in levels.items()},
            "run": 0,
            "score": y.ravel(),
        }
    )


def subsample_cells(
    grid: pl.DataFrame, *, share: float, scheme: str = "uniform", seed: int = 0
) -> pl.DataFrame:
    """The rows of a share of the item x variant cells of each group of ``grid``.

    ``scheme='uniform'``: each cell kept with probability ``share``; ``'walk'``: each item run
    under ``round(share x variants)`` variants drawn at random (at least one), as a harness
    that walks the prompt space item by item.
    """
    if not 0 < share <= 1:
        raise ParameterError(f"`share` must be in (0, 1], got {share!r}.")
    if scheme not in SCHEMES:
        raise ParameterError(f"`scheme` must be one of {SCHEMES}, got {scheme!r}.")
    rng = np.random.default_rng(seed)
    keys = ["model", "dataset"]
    cells = grid.select(*keys, "item", "variant").unique(maintain_order=True)
    if scheme == "uniform":
        keep = cells.filter(pl.Series(rng.random(cells.height) < share))
    else:
        n_var = cells.group_by(keys).agg(pl.col("variant").n_unique().alias("__v"))
        cells = cells.join(n_var, on=keys).with_columns(pl.Series("__r", rng.random(cells.height)))
        k = (pl.col("__v") * share).round().clip(1, None)
        keep = cells.filter(pl.col("__r").rank("ordinal").over([*keys, "item"]) <= k).drop(
            "__v", "__r"
        )
    return grid.join(keep, on=[*keys, "item", "variant"], how="semi", maintain_order="left")


def sparse_grid(
    *,
    share: float = 0.05,
    scheme: str = "uniform",
    seed: int = 0,
    **grid_options: object,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A subsample of :func:`full_grid` and the truth: every variant's full-grid accuracy.

    Returns
    -------
    (observations, truth)
        ``truth`` has ``model, dataset, variant, accuracy`` (mean over every item).

    Examples
    --------
    >>> obs, truth = sparse_grid(n_items=50, n_variants=20, share=0.1, seed=0)
    >>> truth.height, obs.height < 50 * 20
    (20, True)
    """
    grid = full_grid(seed=seed, **grid_options)  # type: ignore[arg-type]
    truth = (
        grid.group_by("model", "dataset", "variant")
        .agg(pl.col("score").mean().alias("accuracy"))
        .sort("model", "dataset", "variant")
    )
    return subsample_cells(grid, share=share, scheme=scheme, seed=seed + 1), truth
