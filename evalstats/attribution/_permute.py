"""Freedman–Lane permutation F statistics on group sums, with Besag–Clifford stopping.

Numpy only: arrays in, arrays out; :func:`evalstats.attribution.factor_anova` calls it.

Every row of a factorial design belongs to a *group*, one (block, configuration cell) pair, and
the rows of the full model's orthonormal basis ``Q_X`` are equal within a group (the factor
columns are constant there, and projecting out block means keeps them so). So for a residual
vector ``e`` permuted within blocks, ``Q_X' P e = Σ_g q_g S_g`` with ``S_g`` the sum of the
permuted residuals that land in group ``g``. With the rows of each block ordered by group,
``S_g`` is a difference of two entries of the cumulative sum of the permuted block: the cost of
a permutation is one pass over its rows per term plus a ``groups x p`` product, instead of the
``n x p x (p + 1)`` product of the dense formulation, and no sort is needed to permute within
blocks (blocks of equal size are shuffled together, one row each).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evalstats._heartbeat import beat

#: Budget of float64 cells of one chunk of permuted residuals (about 32 MB).
CHUNK_CELLS = 4_000_000

#: Permutations in the first chunk; later chunks double (up to the memory budget), so a term
#: that stops early costs little and a long run has few chunks.
FIRST_CHUNK = 256


@dataclass(frozen=True)
class _SizeClass:
    """The blocks of one size ``m`` that hold two or more groups, stacked."""

    rows: np.ndarray  # (n_blocks, m): positions into the group-ordered rows
    starts: np.ndarray  # (n_blocks, c_max): first position of each group in its block
    ends: np.ndarray  # (n_blocks, c_max): one past its last position (start == end: padding)
    q: np.ndarray  # (n_blocks, c_max, p): the row of Q_X of each group (0 for padding)


@dataclass(frozen=True)
class Layout:
    """Rows ordered by (block, group), the blocks with two or more groups grouped by size.

    ``order`` sorts the original rows. Rows of blocks with a single group (``single``, original
    positions, and their rows ``q_single`` of Q_X) contribute the same to every permutation.
    """

    order: np.ndarray
    classes: tuple[_SizeClass, ...]
    single: np.ndarray
    q_single: np.ndarray
    n_groups: int


def layout(q_x: np.ndarray, blocks: np.ndarray | None, groups: np.ndarray) -> Layout:
    """The permutation layout of a design.

    Parameters
    ----------
    q_x : numpy.ndarray
        ``(n, p)`` orthonormal basis of the full model (nuisance projected out).
    blocks : numpy.ndarray or None
        Integer block code of each row (None: one block).
    groups : numpy.ndarray
        Integer code of each row's configuration cell; rows of one block and one cell must have
        equal rows of ``q_x``.
    """
    n, p = q_x.shape
    blocks = np.zeros(n, dtype=np.int64) if blocks is None else np.asarray(blocks, np.int64)
    groups = np.asarray(groups, dtype=np.int64)
    order = np.lexsort((np.arange(n), groups, blocks))  # stable within a group
    b_sorted, g_sorted = blocks[order], groups[order]
    new_block = np.r_[True, b_sorted[1:] != b_sorted[:-1]]
    new_group = new_block | np.r_[True, g_sorted[1:] != g_sorted[:-1]]
    block_start = np.flatnonzero(new_block)
    block_end = np.r_[block_start[1:], n]
    group_start = np.flatnonzero(new_group)
    group_block = np.searchsorted(block_start, group_start, side="right") - 1
    n_groups_of = np.bincount(group_block, minlength=block_start.size)
    sizes = block_end - block_start
    live = n_groups_of > 1
    classes = []
    for m in np.unique(sizes[live]):
        which = np.flatnonzero(live & (sizes == m))
        c_max = int(n_groups_of[which].max())
        starts = np.zeros((which.size, c_max), dtype=np.int64)
        ends = np.zeros((which.size, c_max), dtype=np.int64)
        q = np.zeros((which.size, c_max, p))
        first = np.searchsorted(group_block, which)  # first group of each block
        for j, blk in enumerate(which):
            gs = group_start[first[j] : first[j] + n_groups_of[blk]]
            local = gs - block_start[blk]
            c = gs.size
            starts[j, :c] = local
            ends[j, :c] = np.r_[local[1:], m]
            q[j, :c] = q_x[order[gs]]
        rows = block_start[which][:, None] + np.arange(m)[None, :]
        classes.append(_SizeClass(rows=rows, starts=starts, ends=ends, q=q))
    in_single = np.repeat(~live, sizes)  # sorted positions
    single = np.sort(order[in_single])
    return Layout(
        order=order,
        classes=tuple(classes),
        single=single,
        q_single=q_x[single],
        n_groups=int(group_start.size),
    )


def permuted_projections(
    lay: Layout, e: np.ndarray, rng: np.random.Generator, n_perm: int
) -> tuple[np.ndarray, list[np.ndarray]]:
    """``Q_X' P e_T`` of every term for ``n_perm`` within-block permutations ``P``.

    ``e`` is ``(n, k)`` in the original row order (one residual column per term). Returns the
    ``(n_perm, k, p)`` projections and, with ``k > 1``, per size class the local permutations
    drawn (shape ``(n_perm, n_blocks, m)``: row ``j`` of block ``i`` receives the residual of
    its row ``idx[:, i, j]``). With one term the residuals themselves are shuffled (the same
    draws shuffle an index array identically).
    """
    k = e.shape[1]
    p = lay.q_single.shape[1]
    fixed = lay.q_single.T @ e[lay.single] if lay.single.size else np.zeros((p, k))
    out = np.broadcast_to(fixed.T, (n_perm, k, p)).copy()
    es = e[lay.order]
    drawn = []
    for c in lay.classes:
        nb, m = c.rows.shape
        singletons = c.starts.shape[1] == m  # every row its own group: sums are the rows
        if k == 1:  # shuffle the residuals themselves: no index array to gather through
            vals = rng.permuted(np.broadcast_to(es[c.rows, 0], (n_perm, nb, m)), axis=2)
            vals = vals[..., None]
        else:
            idx = rng.permuted(np.broadcast_to(np.arange(m), (n_perm, nb, m)), axis=2)
            drawn.append(idx)
            # whole rows of the residual matrix, k contiguous values each
            flat = (c.rows[:, :1] + idx).reshape(-1)
            vals = es[flat].reshape(n_perm, nb, m, k)
        if singletons:
            s = vals
        else:
            cs = np.zeros((n_perm, nb, m + 1, k))
            np.cumsum(vals, axis=2, out=cs[:, :, 1:, :])
            bi = np.arange(nb)[:, None]
            s = cs[:, bi, c.ends, :] - cs[:, bi, c.starts, :]  # (n_perm, nb, c_max, k)
        del vals
        # Σ over blocks and groups of S_g q_g: one (p x groups) @ (groups x k) per permutation
        qt = np.ascontiguousarray(c.q.reshape(-1, p).T)
        out += np.matmul(qt, s.reshape(n_perm, -1, k)).transpose(0, 2, 1)
    return out, drawn


@dataclass(frozen=True)
class PermutationOutcome:
    """Permutation F statistics of every term and where each term's sequence stopped.

    ``null`` is ``(k, L)`` (L the permutations drawn; NaN for a term without degrees of
    freedom and after a term's stopping point), ``observed`` the F on the permutation path,
    ``hits`` the permuted F at or above it, ``used`` each term's permutations, ``stopped``
    whether the term reached its exceedance limit before ``n_resamples``.
    """

    null: np.ndarray
    observed: np.ndarray
    hits: np.ndarray
    used: np.ndarray
    stopped: np.ndarray


def exceeds(null: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """Permuted statistics at or above the observed one, up to rounding (relative 1e-9)."""
    with np.errstate(invalid="ignore"):
        return null >= (observed * (1 - 1e-9))[:, None]


def sequential_pvalue(hits: int, used: int, stopped: bool, n_resamples: int) -> float:
    """Besag–Clifford p-value: ``h / L`` when stopped at the h-th exceedance after ``L``
    permutations, else ``(1 + hits) / (1 + n_resamples)``.
    """  # noqa: D205
    if stopped:
        return hits / used
    return (1 + hits) / (1 + n_resamples)


def settle_chunk(
    f: np.ndarray,
    observed: np.ndarray,
    alive: np.ndarray,
    hits: np.ndarray,
    used: np.ndarray,
    done: int,
    limit: int | None,
) -> np.ndarray:
    """Count one chunk of permuted statistics ``f`` (terms x draws) into the running tallies.

    For each term still drawing (``alive``): its exceedances are added to ``hits`` and its
    draws to ``used``; a term whose ``limit``-th exceedance falls in this chunk stops there
    (``hits = limit``, ``used`` up to that draw, the rest of its row set to NaN, ``alive``
    false). Everything is updated in place; returns which terms stopped in this chunk.
    """
    hit = exceeds(f, observed)
    reached, at = stop_points(hit, hits, limit)
    stopped_now = np.zeros(len(alive), dtype=bool)
    for i in np.flatnonzero(alive):
        if reached[i]:
            f[i, at[i] :] = np.nan
            hits[i] = limit
            used[i] = done + at[i]
            alive[i] = False
            stopped_now[i] = True
        else:
            hits[i] += int(hit[i].sum())
            used[i] = done + f.shape[1]
    return stopped_now


def stop_points(
    hit: np.ndarray, before: np.ndarray, limit: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """For each term (row of ``hit``, one chunk), whether and where its ``limit``-th hit falls.

    ``before`` counts each term's hits in the earlier chunks. Returns ``(reached, at)``:
    ``at`` is the 1-based position in the chunk of the ``limit``-th hit (0 where not reached).
    """
    k = hit.shape[0]
    if limit is None:
        return np.zeros(k, dtype=bool), np.zeros(k, dtype=np.int64)
    running = before[:, None] + np.cumsum(hit, axis=1)
    reached = running[:, -1] >= limit if hit.shape[1] else np.zeros(k, dtype=bool)
    at = np.where(reached, np.argmax(running >= limit, axis=1) + 1, 0)
    return reached, at


def freedman_lane(
    resid: np.ndarray,
    q_x: np.ndarray,
    terms: list[dict],
    df_res: int,
    lay: Layout,
    n_resamples: int,
    seed: int,
    max_exceedances: int | None,
) -> PermutationOutcome:
    """Freedman–Lane permutation F of every term, sharing the permutations, stopping early.

    For term T with reduced-model residual ``e_T = r + Q_X a_T`` (``r`` the full model's
    residual) and ``Q_T = Q_X B_T`` the basis of what T adds, the F of the permuted response
    ``ŷ_R + P e_T`` is ``(|B_T' v|² / df_T) / ((|e_T|² − |v|²) / df_res)`` with
    ``v = Q_X' P e_T`` (:func:`permuted_projections`). Permutations come in chunks (the first
    ``FIRST_CHUNK``, then doubling up to the memory budget); a term stops at its
    ``max_exceedances``-th permuted F at or above the observed F (Besag and Clifford, 1991),
    and the loop ends when every term has stopped or ``n_resamples`` permutations are drawn.
    """
    k = len(terms)
    live = [i for i, t in enumerate(terms) if t["df"] > 0]
    observed = np.full(k, np.nan)
    hits = np.zeros(k, dtype=np.int64)
    used = np.zeros(k, dtype=np.int64)
    stopped = np.zeros(k, dtype=bool)
    if not live or n_resamples == 0:
        return PermutationOutcome(np.full((k, 0), np.nan), observed, hits, used, stopped)
    e = np.column_stack([resid + q_x @ terms[i]["a"] for i in live])  # (n, k_live)
    ee = np.einsum("nk,nk->k", e, e)
    bs = [terms[i]["b"] for i in live]
    dfs = np.array([terms[i]["df"] for i in live], dtype=float)

    def f_stats(v: np.ndarray) -> np.ndarray:  # v: (P, k_live, p) -> (P, k_live)
        fitted = np.einsum("bkp,bkp->bk", v, v)
        ss = np.column_stack(
            [np.einsum("bd,bd->b", v[:, j, :] @ b, v[:, j, :] @ b) for j, b in enumerate(bs)]
        )
        rss = np.maximum(ee[None, :] - fitted, 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            return (ss / dfs) / (rss / df_res)

    obs_live = f_stats((q_x.T @ e).T[None, :, :])[0]
    observed[live] = obs_live
    rng = np.random.default_rng(seed)
    cap = max(1, CHUNK_CELLS // max(q_x.shape[0] * len(live), 1))
    chunks: list[np.ndarray] = []
    done = 0
    size = FIRST_CHUNK
    alive = np.ones(len(live), dtype=bool)
    h_live = np.zeros(len(live), dtype=np.int64)
    used_live = np.zeros(len(live), dtype=np.int64)
    while done < n_resamples and alive.any():
        b = min(size, cap, n_resamples - done)
        v, _ = permuted_projections(lay, e, rng, b)
        f = f_stats(v).T  # (k_live, b)
        f[~alive] = np.nan  # terms stopped in an earlier chunk
        settle_chunk(f, obs_live, alive, h_live, used_live, done, max_exceedances)
        chunks.append(f)
        done += b
        size *= 2
        beat(done, n_resamples, "permutations")
    null_live = np.concatenate(chunks, axis=1)
    null = np.full((k, null_live.shape[1]), np.nan)
    null[live] = null_live
    hits[live] = h_live
    used[live] = used_live
    stopped[live] = ~alive
    return PermutationOutcome(null, observed, hits, used, stopped)


def global_permutations(lay: Layout, drawn: list[np.ndarray]) -> np.ndarray:
    """The permutations behind ``drawn`` (from :func:`permuted_projections` with two or more
    terms) as ``(n_perm, n)`` indices into the original rows: row ``i`` of the permuted
    residual vector is ``e[idx[:, i]]``. For tests and checks.
    """  # noqa: D205
    n = lay.order.size
    n_perm = drawn[0].shape[0] if drawn else 0
    out = np.broadcast_to(np.arange(n), (n_perm, n)).copy()
    for c, idx in zip(lay.classes, drawn):
        target = lay.order[c.rows]  # (nb, m) original rows
        source = np.take_along_axis(
            np.broadcast_to(target, idx.shape), idx.astype(np.int64), axis=2
        )
        out[:, target.ravel()] = source.reshape(n_perm, -1)
    return out
