"""Items as a random factor: each within-item term is tested against its term x item stratum.

Items are a sample of the items that could have been asked, so a factor's effect must be
judged against how much that effect varies from item to item (the factor x item interaction),
not against the pooled within-item residual. This is the univariate repeated-measures ANOVA
(items are the subjects, configuration cells the within-subject conditions), and the mixed
model with random item intercepts and random item slopes for each term when the design is
balanced. For a two-level factor its F is the square of the paired t over items.

Numpy only: arrays in, arrays out; :func:`evalstats.attribution.factor_anova` calls it.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import polars as pl

from evalstats._heartbeat import beat
from evalstats.attribution._common import _BLOCK
from evalstats.attribution._permute import PermutationOutcome, settle_chunk
from evalstats.errors import DegenerateDataWarning, InsufficientDataError

#: Budget of float64 cells of one block of sign flips.
_FLIP_CELLS = 2_000_000


def item_cells(data: pl.DataFrame, factors: list[str]) -> tuple[pl.DataFrame, int, int, int]:
    """One row per (item block, configuration cell): the mean score, complete items only.

    ``data`` has the factor columns, ``__block`` (the item, or the joined block levels) and
    ``score``. Rows of one item that share a cell (several variants or runs with the same
    factor levels) are averaged: that mean is the item's response in the cell. Items that lack
    a cell present elsewhere are left out (with a warning naming how many), because the strata
    need every item in every cell. Returns the rows sorted by item then cell (every item's rows
    in the same cell order), the number of items, of cells, and of items left out.
    """
    cells = data.group_by([_BLOCK, *factors]).agg(pl.col("score").mean())
    n_cells = cells.select(factors).unique().height
    per_item = cells.group_by(_BLOCK).agg(pl.len().alias("__n"))
    complete = per_item.filter(pl.col("__n") == n_cells)[_BLOCK]
    dropped = per_item.height - complete.len()
    if dropped:
        warnings.warn(
            f"{dropped} of {per_item.height} items lack some of the {n_cells} configuration "
            "cells and are left out of the item-random analysis (every item must be observed "
            "in every cell); use items='fixed' to keep them.",
            DegenerateDataWarning,
            stacklevel=3,
        )
    if complete.len() < 2:
        raise InsufficientDataError(
            f"{complete.len()} item(s) are observed in all {n_cells} configuration cells; the "
            "item-random analysis needs at least two."
        )
    out = cells.filter(pl.col(_BLOCK).is_in(complete.implode())).sort([_BLOCK, *factors])
    return out, complete.len(), n_cells, dropped


def term_scores(y: np.ndarray, core: dict[str, Any], n_items: int) -> list[np.ndarray]:
    """Per term, the item scores ``z_s = Q_T' y_s`` (shape ``(n_items, df_T)``).

    ``Q_T`` is the orthonormal basis, within one item's cells, of what the term adds to its
    reduced model (Type I, II or III). On the balanced item x cell rows the full-data basis of
    the term is that cell basis repeated over items and divided by sqrt(n_items).
    """
    n_cells = y.size // n_items
    ys = y.reshape(n_items, n_cells)
    out = []
    for t in core["terms"]:
        if t["df"] == 0:
            out.append(np.zeros((n_items, 0)))
            continue
        q = (core["q_x"] @ t["b"]).reshape(n_items, n_cells, t["df"])
        q_cell = q[0] * np.sqrt(n_items)
        if not np.allclose(q * np.sqrt(n_items), q_cell[None], atol=1e-8):  # pragma: no cover
            raise AssertionError("the term basis differs between items of a balanced design")
        out.append(ys @ q_cell)
    return out


def stratum_f(z: np.ndarray) -> tuple[float, float, float, int]:
    """``(F, SS_T, SS_error, df_error)`` of one term from its item scores ``z``.

    SS_T = S |z̄|², SS_error = Σ_s |z_s − z̄|² (the term x item sum of squares) with
    df_error = df_T (S − 1); F = (SS_T / df_T) / (SS_error / df_error).
    """
    s, d = z.shape
    zbar = z.mean(axis=0)
    ss = float(s * zbar @ zbar)
    ss_err = float(np.sum((z - zbar) ** 2))
    df_err = d * (s - 1)
    f = (ss / d) / (ss_err / df_err) if ss_err > 0 else float("nan")
    return f, ss, ss_err, df_err


def sign_flip_f(
    zs: list[np.ndarray], n_resamples: int, seed: int, max_exceedances: int | None = None
) -> PermutationOutcome:
    """Sign-flip null distribution of every term's stratum F, and the observed F.

    Under H0 (no fixed effect of the term) with items exchangeable and z_s symmetric about 0,
    flipping the sign of a whole item vector z_s leaves its distribution unchanged (Winkler et
    al., 2014: independent and symmetric errors): the Freedman–Lane scheme inside the stratum,
    whose model has only the mean. |z_s| is unchanged, so with s the signs
    SS_error* = Σ|z|² − S |z̄*|². All terms share the same flips; a term stops at its
    ``max_exceedances``-th flipped F at or above the observed F (Besag–Clifford), checked
    after each chunk of flips, and the loop ends when every term has stopped.
    """
    k = len(zs)
    observed = np.full(k, np.nan)
    hits = np.zeros(k, dtype=np.int64)
    used = np.zeros(k, dtype=np.int64)
    stopped = np.zeros(k, dtype=bool)
    live = [i for i, z in enumerate(zs) if z.shape[1] > 0]
    if not live or n_resamples == 0:
        return PermutationOutcome(np.full((k, 0), np.nan), observed, hits, used, stopped)
    n_items = zs[live[0]].shape[0]
    total = [float(np.sum(zs[i] ** 2)) for i in range(k)]
    for i in live:
        observed[i] = stratum_f(zs[i])[0]
    rng = np.random.default_rng(seed)
    chunk = max(1, _FLIP_CELLS // max(n_items, 1))
    alive = np.zeros(k, dtype=bool)
    alive[live] = True
    chunks = []
    done = 0
    while done < n_resamples and alive.any():
        b = min(chunk, n_resamples - done)
        signs = rng.choice(np.array([-1.0, 1.0]), size=(b, n_items))
        f = np.full((k, b), np.nan)
        for i in np.flatnonzero(alive):
            z = zs[i]
            d = z.shape[1]
            zbar = signs @ z / n_items  # b, d
            ss = n_items * np.einsum("bd,bd->b", zbar, zbar)
            ss_err = np.maximum(total[i] - ss, 0.0)
            with np.errstate(divide="ignore", invalid="ignore"):
                f[i] = (ss / d) / (ss_err / (d * (n_items - 1)))
        stopped |= settle_chunk(f, observed, alive, hits, used, done, max_exceedances)
        chunks.append(f)
        done += b
        beat(done, n_resamples, "sign flips")
    return PermutationOutcome(np.concatenate(chunks, axis=1), observed, hits, used, stopped)
