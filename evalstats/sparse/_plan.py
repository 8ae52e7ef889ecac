"""Which (prompt variant, item) cells to run next on a sparse grid, for one quantity's interval."""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import polars as pl
from scipy.special import expit

from evalstats.design._frames import analysis_input
from evalstats.errors import ParameterError
from evalstats.sparse._draws import STATISTICS, point_accuracy
from evalstats.sparse._estimate import _draws, _validate
from evalstats.sparse._groups import groups_of, key_columns

if TYPE_CHECKING:
    from evalstats._frames import TableLike
    from evalstats.design import Design

__all__ = ["PLAN_COLUMNS", "sparse_plan"]

#: Result columns of :func:`sparse_plan` after the group columns (then the prompt factors).
PLAN_COLUMNS: tuple[str, ...] = ("rank", "variant", "item", "quantity", "variance_reduction")

_QUANTITIES = tuple(name for name, _ in STATISTICS)


def _weights(draws: np.ndarray, acc: np.ndarray, quantity: str) -> np.ndarray:
    """|d quantity / d acc_p| per variant, averaged over the posterior draws."""
    r, p = draws.shape
    if quantity == "mean":
        return np.full(p, 1.0 / p)
    if quantity == "sd":
        sd = acc.std()
        return np.abs(acc - acc.mean()) / (p * sd) if sd > 0 else np.full(p, 1.0 / p)
    q = dict(STATISTICS)[quantity]
    h = float(q) * (p - 1)
    lo, frac = int(np.floor(h)), h - np.floor(h)
    order = np.argsort(draws, axis=1, kind="stable")
    w = np.zeros(p)
    np.add.at(w, order[:, lo], 1.0 - frac)
    if frac > 0:
        np.add.at(w, order[:, lo + 1], frac)
    return w / r


def _plan_group(g, fit, draws, quantity: str, k: int) -> list[tuple[int, int, float]]:
    c = g.cells
    acc = point_accuracy(c, fit)
    f = _weights(draws, acc, quantity)
    b = fit.prompt_effect(c.levels)
    pi = expit(fit.mu + fit.a[None, :] + b[:, None])  # variants x items
    info = pi * (1 - pi)
    observed = np.zeros_like(pi, dtype=bool)
    observed[c.prompt, c.item] = True
    # how acc_p moves with b_p: the unobserved cells' slopes
    slope = np.where(observed, 0.0, info).sum(axis=1) / c.n_items
    per_item = np.bincount(c.item, minlength=c.n_items)
    # each variant's candidates: unobserved items, most informative first, then least seen
    cand = [
        [int(i) for i in np.lexsort((per_item, -info[p])) if not observed[p, i]]
        for p in range(c.n_prompts)
    ]
    v = fit.u_var.copy()

    def gain(p: int, i: int) -> float:
        return float((f[p] * slope[p]) ** 2 * (v[p] - 1.0 / (1.0 / v[p] + info[p, i])))

    heap = [(-gain(p, cand[p][0]), p, 0) for p in range(c.n_prompts) if cand[p] and f[p] > 0]
    heapq.heapify(heap)
    out = []
    while heap and len(out) < k:
        neg, p, j = heapq.heappop(heap)
        i = cand[p][j]
        out.append((p, i, -neg))
        v[p] = 1.0 / (1.0 / v[p] + info[p, i])
        if j + 1 < len(cand[p]):
            heapq.heappush(heap, (-gain(p, cand[p][j + 1]), p, j + 1))
    return out


def sparse_plan(
    observations: TableLike,
    *,
    k: int = 100,
    quantity: str = "q05",
    by: Sequence[str] | str = ("model", "dataset", "metric"),
    n_resamples: int = 400,
    seed: int = 0,
    variant_factors: Sequence[str] | str | None = None,
    roles: str | Mapping[str, str] | None = None,
    design: Design | str | Path | None = None,
) -> pl.DataFrame:
    """The next ``k`` (variant, item) cells per group that most narrow one quantity's interval.

    Parameters
    ----------
    observations : table
        The sparse observation table, as for :func:`sparse_prompt_distribution`.
    k : int, default 100
        Cells to propose per group.
    quantity : str, default 'q05'
        The quantity whose interval to narrow: ``mean``, ``sd``, ``min``, ``q05``, ``q25``,
        ``median``, ``q75``, ``q95`` or ``max``.
    by, n_resamples, seed, variant_factors, roles, design
        As in :func:`sparse_prompt_distribution`.

    Returns
    -------
    polars.DataFrame
        Per group, ``k`` rows in the order to run them: group columns, :data:`PLAN_COLUMNS`,
        then the variant's prompt factors (so a harness can rebuild the prompt).
        ``variance_reduction`` is the approximate drop of the quantity's posterior variance.

    Notes
    -----
    Greedy on a linearised posterior: the quantity moves with variant p's accuracy by f_p
    (1/P for the mean; for a quantile, the posterior probability that p is the order statistic
    at that quantile, with its interpolation weight; (acc_p - mean)/(P sd) for the sd), and
    acc_p moves with the prompt effect b_p by s_p = mean over unobserved items of
    pi_ip(1 - pi_ip). One more cell (p, i) adds information pi_ip(1 - pi_ip) to b_p, so the
    quantity's variance drops by about (f_p s_p)^2 (v_p - 1/(1/v_p + pi_ip(1 - pi_ip))). Cells are
    taken one at a time, each time updating v_p; within a variant the most informative items
    (pi near 1/2) come first, then the least-seen ones.

    Examples
    --------
    >>> from evalstats.sparse import sparse_grid
    >>> obs, _ = sparse_grid(n_items=60, n_variants=30, share=0.2, seed=0)
    >>> sparse_plan(obs, k=5, n_resamples=100).select("rank", "quantity").rows()[:2]
    [(1, 'q05'), (2, 'q05')]
    """
    if quantity not in _QUANTITIES:
        raise ParameterError(
            f"`quantity` must be one of {', '.join(_QUANTITIES)}, got {quantity!r}."
        )
    if not isinstance(k, (int, np.integer)) or k < 1:
        raise ParameterError(f"`k` must be a positive integer, got {k!r}.")
    _validate(0.95, n_resamples, seed)
    _input = analysis_input(observations, roles=roles, design=design)
    table, variant_factors = _input.table, _input.variant_factors(variant_factors)
    by, groups = groups_of(table, by=by, variant_factors=variant_factors)
    frames = []
    factors: list[str] = []
    for g in groups:
        fit, draws = _draws(g, int(n_resamples), int(seed))
        picks = _plan_group(g, fit, draws, quantity, int(k))
        frame = pl.DataFrame(
            {
                **key_columns(by, g, len(picks)),
                "rank": np.arange(1, len(picks) + 1, dtype=np.int64),
                "variant": [g.variants[p] for p, _, _ in picks],
                "item": [g.items[i] for _, i, _ in picks],
                "quantity": quantity,
                "variance_reduction": [x for _, _, x in picks],
            },
            schema_overrides={"variant": pl.String, "item": pl.String},
        )
        fv = g.factor_values
        frame = frame.join(fv, on="variant", how="left", maintain_order="left")
        factors += [f for f in fv.columns if f != "variant" and f not in factors]
        frames.append(frame)
    if not frames:
        schema = {
            "rank": pl.Int64,
            "variant": pl.String,
            "item": pl.String,
            "quantity": pl.String,
            "variance_reduction": pl.Float64,
        }
        return pl.DataFrame(key_columns(by, None, 0)).with_columns(
            pl.Series(c, [], dtype=t) for c, t in schema.items()
        )
    out = pl.concat(frames, how="diagonal_relaxed")
    return out.select(*by, *PLAN_COLUMNS, *factors).sort([*by, "rank"])
