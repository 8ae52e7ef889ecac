"""Vectorised paired tests for many pairs at once, each invertible into an interval at any level.

numpy/scipy only (no polars). A family of pairs shares one matrix of units (rows) so that one
sign matrix (permutation) or one matrix of resampling counts (bootstrap) serves every pair.
Each test object gives unadjusted p-values and ``interval(levels, reject)``: the set of shifts
``delta`` its own test does not reject at the pair's level ``alpha_j``, so the interval
excludes 0 exactly when ``p_j < alpha_j``. ``reject`` (the family decision) settles the
floating-point ties at the boundary of the discrete tests in favour of the decision.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from functools import lru_cache

import numpy as np
from scipy import optimize, stats

__all__ = [
    "Bootstrap",
    "DesignT",
    "GeneralizedDesign",
    "McNemar",
    "SignFlip",
    "TTest",
    "make_test",
]

#: values of one memory chunk (rows x columns) of the resampling matrices
_CHUNK_VALUES = 4_000_000
#: rows of the first chunk of random sign vectors (later chunks double up to the memory cap)
_FIRST_CHUNK = 1024


def _ceil_count(alpha: np.ndarray, total: int) -> np.ndarray:
    """Smallest integer ``k`` with ``k >= alpha * total`` (``k/total < alpha`` iff ``k < k_j``)."""
    return np.ceil(np.asarray(alpha) * total - 1e-9).astype(np.int64)


class _Base:
    """Shared per-pair summaries: ``n``, ``diff`` (mean of a-b), ``sd`` of the differences."""

    name = ""

    def __init__(self, d: np.ndarray, mask: np.ndarray, alternative: str) -> None:
        self.alternative = alternative
        self.mask = mask
        self.d0 = np.where(mask, d, 0.0)
        self.n = mask.sum(axis=0).astype(np.int64)
        with np.errstate(invalid="ignore", divide="ignore"):
            self.diff = self.d0.sum(axis=0) / self.n
            dev = np.where(mask, d - self.diff, 0.0)
            self.sd = np.sqrt((dev**2).sum(axis=0) / (self.n - 1))
            self.se = self.sd / np.sqrt(self.n)

    @property
    def n_resamples(self) -> int | None:
        return None

    def at_floor(self) -> np.ndarray:
        """Whether each p-value is the smallest the test can give (resampling tests only)."""
        return np.zeros(self.n.size, dtype=bool)


class TTest(_Base):
    """Paired t test on the differences; interval ``diff +- t_{n-1} se``."""

    name = "t"

    def __init__(self, d: np.ndarray, mask: np.ndarray, alternative: str) -> None:
        super().__init__(d, mask, alternative)
        with np.errstate(invalid="ignore", divide="ignore"):
            self.statistic = self.diff / self.se
        df = self.n - 1
        t = self.statistic
        if alternative == "two-sided":
            p = 2 * stats.t.sf(np.abs(t), df)
        elif alternative == "greater":
            p = stats.t.sf(t, df)
        else:
            p = stats.t.cdf(t, df)
        self.pvalue = np.minimum(p, 1.0)

    def interval(self, levels: np.ndarray, reject: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        df = self.n - 1
        tail = levels / 2 if self.alternative == "two-sided" else levels
        q = stats.t.isf(tail, df)
        low, high = self.diff - q * self.se, self.diff + q * self.se
        return _sided(low, high, self.alternative)


class DesignT:
    r"""The paired t test with the design's variance (clustered items, prompts as a facet).

    Built from precomputed per-pair ``diff``, ``var`` and ``df``
    (:func:`evalstats.compare._design_var.design_variance` of the paired cell differences):
    :math:`t = \bar d / \sqrt V` on Satterthwaite (or Bell-McCaffrey) df; the interval at a
    pair's level inverts it.
    """

    name = "t-design"

    def __init__(
        self, diff: np.ndarray, var: np.ndarray, df: np.ndarray, n: np.ndarray, alternative: str
    ) -> None:
        self.alternative = alternative
        self.diff = np.asarray(diff, dtype=float)
        self.se = np.sqrt(np.asarray(var, dtype=float))
        self.df = np.asarray(df, dtype=float)
        self.n = np.asarray(n, dtype=np.int64)
        # the SD of an item difference the SE corresponds to (for the mdd)
        self.sd = self.se * np.sqrt(self.df + 1)
        with np.errstate(invalid="ignore", divide="ignore"):
            self.statistic = self.diff / self.se
        t = self.statistic
        if alternative == "two-sided":
            p = 2 * stats.t.sf(np.abs(t), self.df)
        elif alternative == "greater":
            p = stats.t.sf(t, self.df)
        else:
            p = stats.t.cdf(t, self.df)
        self.pvalue = np.minimum(p, 1.0)

    @property
    def n_resamples(self) -> int | None:
        return None

    def at_floor(self) -> np.ndarray:
        return np.zeros(self.n.size, dtype=bool)

    def interval(self, levels: np.ndarray, reject: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        tail = levels / 2 if self.alternative == "two-sided" else levels
        q = stats.t.isf(tail, self.df)
        return _sided(self.diff - q * self.se, self.diff + q * self.se, self.alternative)


class GeneralizedDesign(DesignT):
    r"""The design's paired test by a generalized p-value, for a pair with nothing to pool.

    A pair alone in its group (two models) has its model x prompt variance on P - 1 df (4 with
    5 prompts) and no other pairs to floor it with; the plug-in Satterthwaite t is then liberal
    in the far tail (1.7x alpha at 0.0005, docs/methods/compare.md). The generalized p-value
    integrates over the variance's pivot (:func:`~evalstats.compare._design_var.
    generalized_variances`): the mean over the draws of :math:`2P(Z > |ar d|/\sqrt{V^*})`;
    the interval at a pair's level inverts it. ``se`` and ``df`` stay the plug-in ones
    (reported, and the mdd's approximation).
    """

    name = "generalized-design"

    def __init__(self, designs: list, alternative: str) -> None:
        from evalstats.compare._design_var import generalized_pvalue, generalized_variances

        super().__init__(
            np.array([v.mean for v in designs]),
            np.array([v.var for v in designs]),
            np.array([v.df for v in designs]),
            np.array([v.n_items for v in designs]),
            alternative,
        )
        self._draws = [generalized_variances(v) for v in designs]
        self.pvalue = np.array(
            [
                generalized_pvalue(float(d), w, alternative)
                for d, w in zip(self.diff, self._draws, strict=True)
            ]
        )

    def interval(self, levels: np.ndarray, reject: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        from evalstats.compare._design_var import generalized_interval

        tail = levels / 2 if self.alternative == "two-sided" else levels
        h = np.array(
            [generalized_interval(w, float(t)) for w, t in zip(self._draws, tail, strict=True)]
        )
        return _sided(self.diff - h, self.diff + h, self.alternative)


def _sided(low: np.ndarray, high: np.ndarray, alternative: str) -> tuple[np.ndarray, np.ndarray]:
    if alternative == "greater":
        high = np.full_like(high, np.inf)
    elif alternative == "less":
        low = np.full_like(low, -np.inf)
    return low, high


class SignFlip(_Base):
    """Sign-flip permutation test of the mean difference, one sign matrix for every pair.

    With ``T`` sign vectors (the identity included) the p-value is ``#{extreme}/T``. A sign
    vector ``s`` is extreme at shift ``delta`` when ``|sum s_i (d_i - delta)| >=
    |sum (d_i - delta)|``; that set of ``delta`` is an interval ``[l_s, u_s]`` (the roots of a
    quadratic with negative leading coefficient) which always holds the observed mean, so the
    interval ``{delta : p(delta) >= alpha_j}`` is ``[k-th smallest l, k-th largest u]`` with
    ``k = ceil(alpha_j T)``. Sums are rounded to 2**-40 of their scale so that values equal up
    to floating-point noise count as ties (scipy does the same with a relative tolerance).
    """

    name = "permutation"

    def __init__(
        self,
        d: np.ndarray,
        mask: np.ndarray,
        alternative: str,
        n_resamples: int,
        seed: int,
        stop_after: int | None = None,
    ) -> None:
        super().__init__(d, mask, alternative)
        n_units = d.shape[0]
        self.exact = n_units <= 30 and 2**n_units <= n_resamples
        self.total = 2**n_units if self.exact else n_resamples + 1
        self._n_random = n_resamples
        self.seed = seed
        # Besag-Clifford: a pair stops drawing once `stop_after` random sign vectors were at
        # least as extreme as the data (never for the exact test)
        self.stop_after = None if self.exact else stop_after
        self.scale = np.abs(self.d0).sum(axis=0)
        self.scale = np.where(self.scale > 0, self.scale, 1.0)
        self.unit = self.scale * 2.0**-40
        self.m_sum = self._round(self.d0.sum(axis=0))
        self.statistic = self.diff
        self._cache: list[np.ndarray] | None = None
        self._sums: list | None = None
        p = self.n.size
        count = np.zeros(p, dtype=np.int64)
        always = np.zeros(p, dtype=np.int64)
        #: sign vectors each pair used, the identity included (its p-value's denominator)
        used = np.full(p, self.total, dtype=np.int64)
        active = np.ones(p, dtype=bool)
        # the per-sign sums are small (T x pairs): keep them for the interval pass when they fit
        keep = self.total * p <= 4 * _CHUNK_VALUES
        sums = []
        row0 = 0
        for a, c, cols in self._chunks(from_cache=False, active=active):
            ext = self._extreme_at_zero(a, cols)
            alw = self._always(c, cols)
            rows = a.shape[0]
            if self.stop_after is not None:
                random = ext.copy()
                if row0 == 0:
                    random[0] = False  # the identity is not a random draw
                seen = count[cols] - (1 if row0 > 0 else 0)  # random extremes so far
                cum = seen[None, :] + np.cumsum(random, axis=0)
                hit = cum >= self.stop_after
                stops = hit.any(axis=0)
                first = np.argmax(hit, axis=0)
                upto = np.where(stops, first + 1, rows)  # rows of this chunk each pair uses
                within = np.arange(rows)[:, None] < upto[None, :]
                count[cols] += (ext & within).sum(axis=0)
                always[cols] += (alw & within).sum(axis=0)
                used[cols[stops]] = row0 + upto[stops]
                active[cols[stops]] = False
            else:
                count[cols] += ext.sum(axis=0)
                always[cols] += alw.sum(axis=0)
            if keep:
                a_full = np.full((rows, p), np.nan)
                c_full = np.full((rows, p), np.nan)
                a_full[:, cols] = a
                c_full[:, cols] = c
                sums.append((a_full, c_full))
            row0 += rows
            if not active.any():
                break
        self._sums = sums if keep else None
        self.count, self.always, self.used = count, always, used
        self.pvalue = count / used

    @property
    def n_resamples(self) -> int:
        return self.total - 1 if not self.exact else self.total

    def resamples_used(self) -> np.ndarray:
        """Per pair: random sign vectors drawn (all ``2**n`` for the exact test)."""
        return self.used if self.exact else self.used - 1

    def _round(self, x: np.ndarray, cols: np.ndarray | None = None) -> np.ndarray:
        unit = self.unit if cols is None else self.unit[cols]
        return np.rint(x / unit)

    def _bits(self) -> Iterator[np.ndarray]:
        """Sign vectors as 0/1 bits (1 = flipped), in chunks of rows; the identity first."""
        if self._cache is not None:
            yield from self._cache
            return
        n_units = self.d0.shape[0]
        rows = max(1, _CHUNK_VALUES // max(n_units, self.n.size, 1))
        # random draws come in chunks that start small and double, so that pairs which stop
        # early (sequential stopping) are not computed over a large first chunk
        size = min(rows, _FIRST_CHUNK)
        keep = self.total * n_units <= 8 * _CHUNK_VALUES  # at most 32 MB of bits kept
        cache = []
        if self.exact:
            codes = np.arange(self.total, dtype=np.int64)
            for start in range(0, self.total, rows):
                c = codes[start : start + rows, None]
                chunk = ((c >> np.arange(n_units)) & 1).astype(np.uint8)  # code 0: identity
                cache.append(chunk)
                yield chunk
        else:
            rng = np.random.default_rng(self.seed)
            first = np.zeros((1, n_units), dtype=np.uint8)
            cache.append(first)
            yield first
            done = 0
            n_bytes = (n_units + 7) // 8
            while done < self._n_random:
                b = min(size, self._n_random - done)
                size = min(rows, 2 * size)
                packed = rng.integers(0, 256, size=(b, n_bytes), dtype=np.uint8)
                chunk = np.unpackbits(packed, axis=1, count=n_units)
                cache.append(chunk)
                yield chunk
                done += b
        if keep:  # reached only when every chunk was drawn
            self._cache = cache

    def _signs(self) -> Iterator[np.ndarray]:
        for bits in self._bits():
            yield 1.0 - 2.0 * bits

    def _chunks(
        self, from_cache: bool = True, active: np.ndarray | None = None
    ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Per chunk of sign vectors: rounded ``sum s_i d_i`` and ``sum s_i`` over pairs.

        Yields ``(a, c, cols)``: the sums for the pairs ``cols``, those of ``active`` (read
        at every chunk, so a caller can drop pairs as it goes), or every pair.
        """
        if from_cache and getattr(self, "_sums", None) is not None:
            every = np.arange(self.n.size)
            for a, c in self._sums:
                yield a, c, every
            return
        n_units = self.d0.shape[0]
        for bits in self._bits():
            cols = np.arange(self.n.size) if active is None else np.flatnonzero(active)
            d0 = self.d0[:, cols]
            n = self.n[cols]
            bf = bits.astype(np.float64)
            a = d0.sum(axis=0) - 2.0 * (bf @ d0)
            if (n == n_units).all():
                c = np.broadcast_to((n_units - 2.0 * bf.sum(axis=1))[:, None], a.shape)
            else:
                c = n - 2.0 * (bf @ self.mask[:, cols].astype(float))
            yield self._round(a, cols), c, cols

    def _extreme_at_zero(self, a: np.ndarray, cols: np.ndarray) -> np.ndarray:
        m = self.m_sum[cols]
        if self.alternative == "two-sided":
            return np.abs(a) >= np.abs(m)
        if self.alternative == "greater":
            return a >= m
        return a <= m

    def _always(self, c: np.ndarray, cols: np.ndarray) -> np.ndarray:
        n = self.n[cols]
        if self.alternative == "two-sided":
            return np.abs(c) == n
        return c == n

    def at_floor(self) -> np.ndarray:
        return self.count <= self.always

    def _bounds(
        self, a: np.ndarray, c: np.ndarray, cols: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Per sign vector, the interval of shifts (mean scale) at which it is extreme."""
        m, n, unit = self.m_sum[cols], self.n[cols], self.unit[cols]
        with np.errstate(invalid="ignore", divide="ignore"):
            if self.alternative == "two-sided":
                r1 = (a - m) / (c - n) * unit
                r2 = (a + m) / (c + n) * unit
                low, high = np.minimum(r1, r2), np.maximum(r1, r2)
                always = np.abs(c) == n
            else:
                r = (m - a) / (n - c) * unit
                always = c == n
                if self.alternative == "greater":
                    low, high = r, np.full_like(r, np.inf)
                else:
                    low, high = np.full_like(r, -np.inf), r
        low = np.where(always, -np.inf, low)
        high = np.where(always, np.inf, high)
        return low, high

    def interval(self, levels: np.ndarray, reject: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        k = _ceil_count(levels, self.used)
        # the family decision settles ties of alpha_j * T at the boundary
        k = np.where(reject & (self.count >= k), self.count + 1, k)
        k = np.where(~reject & (self.count < k), self.count, k)
        k = np.clip(k, 1, self.used)
        kmax = int(k.max())
        p = self.n.size
        lows = np.full((0, p), np.inf)
        highs = np.full((0, p), -np.inf)
        row0 = 0
        last = int(self.used.max())
        for a, c, _ in self._chunks():
            if row0 >= last:
                break
            rows = a.shape[0]
            # a pair that stopped early inverts only the sign vectors it used
            live = np.flatnonzero(self.used > row0)
            lo = np.full((rows, p), np.inf)
            hi = np.full((rows, p), -np.inf)
            lo_l, hi_l = self._bounds(a[:, live], np.asarray(c)[:, live], live)
            beyond = (row0 + np.arange(rows))[:, None] >= self.used[None, live]
            lo[:, live] = np.where(beyond, np.inf, lo_l)
            hi[:, live] = np.where(beyond, -np.inf, hi_l)
            row0 += rows
            lows = _keep_smallest(np.vstack([lows, lo]), kmax)
            highs = -_keep_smallest(np.vstack([-highs, -hi]), kmax)
        cols = np.arange(p)
        low = np.sort(lows, axis=0)[k - 1, cols]
        high = -np.sort(-highs, axis=0)[k - 1, cols]
        # bounds are on the 2**-40 grid of the rounded sums; the observed mean is inside
        return low, high


def _keep_smallest(x: np.ndarray, k: int) -> np.ndarray:
    if x.shape[0] <= k:
        return x
    return np.partition(x, k - 1, axis=0)[:k]


class Bootstrap(_Base):
    """Studentized bootstrap of the mean differences, units resampled jointly for every pair.

    ``t*_j = (mean*_j - diff_j) / se*_j`` in each resample; the p-value of pair ``j`` is
    ``(1 + #{g*_j >= g_j}) / (B + 1)`` with ``g = |t|`` (two-sided) or ``+-t`` (one-sided), and
    its interval ``diff_j +- c se_j`` with ``c`` the ``(k-1)``-th largest ``g*_j``,
    ``k = ceil(alpha_j (B + 1))``. ``maxt`` and ``romano-wolf`` replace ``g*_j`` by the maximum
    over the pairs still in play, which is how they use the dependence between pairs.
    """

    name = "bootstrap"

    def __init__(
        self, d: np.ndarray, mask: np.ndarray, alternative: str, n_resamples: int, seed: int
    ) -> None:
        super().__init__(d, mask, alternative)
        self.b = n_resamples
        self.seed = seed
        with np.errstate(invalid="ignore", divide="ignore"):
            t = self.diff / self.se
        t = np.where((self.se == 0) & (self.diff == 0), 0.0, t)
        self.statistic = t
        self.null = self._sign(self._tstar())
        self.obs = self._sign(t)
        self.pvalue = (1 + (self.null >= self.obs).sum(axis=0)) / (self.b + 1)

    @property
    def n_resamples(self) -> int:
        return self.b

    def _sign(self, t: np.ndarray) -> np.ndarray:
        if self.alternative == "two-sided":
            return np.abs(t)
        return t if self.alternative == "greater" else -t

    def _tstar(self) -> np.ndarray:
        n_units, p = self.d0.shape
        rng = np.random.default_rng(self.seed)
        out = np.empty((self.b, p))
        rows = max(1, _CHUNK_VALUES // max(n_units, 1))
        m = self.mask.astype(float)
        full = bool(self.mask.all())
        d2 = self.d0**2
        for start in range(0, self.b, rows):
            b = min(rows, self.b - start)
            idx = rng.integers(0, n_units, size=(b, n_units))
            flat = (np.arange(b)[:, None] * n_units + idx).ravel()
            w = np.bincount(flat, minlength=b * n_units).reshape(b, n_units).astype(float)
            s1, s2 = w @ self.d0, w @ d2
            nn = np.full_like(s1, n_units) if full else w @ m
            with np.errstate(invalid="ignore", divide="ignore"):
                mean = s1 / nn
                var = np.maximum(s2 - nn * mean**2, 0.0) / (nn - 1)
                se = np.sqrt(var / nn)
                t = (mean - self.diff) / se
            # a resample without spread: t* is 0 when it reproduces the mean, else unbounded
            t = np.where(se > 0, t, np.where(np.isclose(mean, self.diff), 0.0, np.inf))
            out[start : start + b] = np.where(np.isnan(t), 0.0, t)
        return out

    def at_floor(self) -> np.ndarray:
        return self.pvalue <= 1 / (self.b + 1)

    def critical(self, null: np.ndarray, levels: np.ndarray, count: np.ndarray, reject):
        """``(k-1)``-th largest of each column of ``null``; ``inf`` when ``k - 1 < 1``."""
        k = _ceil_count(levels, self.b + 1)
        k = np.where(reject & (count >= k - 1), count + 2, k)
        k = np.where(~reject & (count < k - 1), count + 1, k)
        srt = -np.sort(-null, axis=0)
        idx = np.clip(k - 2, 0, self.b - 1)
        c = srt[idx, np.arange(null.shape[1])]
        return np.where(k - 1 >= 1, c, np.inf)

    def interval_at(self, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        low, high = self.diff - c * self.se, self.diff + c * self.se
        return _sided(low, high, self.alternative)

    def interval(self, levels: np.ndarray, reject: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        count = (self.null >= self.obs).sum(axis=0)
        return self.interval_at(self.critical(self.null, levels, count, reject))


def resampling_family(
    tests: list[Bootstrap], alpha: float, correction: str
) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
    """Max-t (single step) or Romano-Wolf (step-down) over the pairs of several bootstrap tests.

    Returns the adjusted p-values (concatenated in the order of ``tests``) and each test's
    interval bounds. Tests of different groups are independent resamples; their columns are
    put side by side, so the maximum runs over the whole family.
    """
    null = np.hstack([t.null for t in tests])
    obs = np.concatenate([t.obs for t in tests])
    b = null.shape[0]
    m = obs.size
    k = int(_ceil_count(np.array([alpha]), b + 1)[0])

    def crit(mx: np.ndarray) -> float:
        if k - 1 < 1:
            return math.inf
        return float(-np.partition(-mx, k - 2)[k - 2])

    if correction == "maxt":
        mx = null.max(axis=1)
        p_adj = (1 + (mx[:, None] >= obs[None, :]).sum(axis=0)) / (b + 1)
        c = np.full(m, crit(mx))
    else:
        order = np.argsort(-obs, kind="stable")
        # max over the pairs ranked r..m, for every r (reverse cumulative maximum)
        tail = np.maximum.accumulate(null[:, order][:, ::-1], axis=1)[:, ::-1]
        raw = (1 + (tail >= obs[order][None, :]).sum(axis=0)) / (b + 1)
        adj_sorted = np.maximum.accumulate(raw)
        p_adj = np.empty(m)
        p_adj[order] = adj_sorted
        rejected = adj_sorted < alpha
        first = int(np.argmin(rejected)) if not rejected.all() else m
        c_sorted = np.empty(m)
        for r in range(m):
            stage = r if r < first else first
            c_sorted[r] = crit(tail[:, stage]) if stage < m else math.inf
        c = np.empty(m)
        c[order] = c_sorted
    bounds = []
    start = 0
    for t in tests:
        p = t.n.size
        bounds.append(t.interval_at(c[start : start + p]))
        start += p
    return p_adj, bounds


class McNemar(_Base):
    """Exact (or mid-p) McNemar test on the discordant pairs, inverted through Clopper-Pearson.

    Conditional on the ``k = n10 + n01`` discordant units, ``n10 ~ Bin(k, pi)`` and the
    difference is ``(k/n)(2 pi - 1)``; the interval maps the Clopper-Pearson interval of ``pi``
    (its mid-p version for ``midp``) at the pair's level, which excludes ``pi = 1/2`` exactly when
    the test rejects. That bound decides the test and is kept on the side of 0. The far bound
    treats ``k/n`` as fixed, so it collapses onto the estimate when every disagreement points
    one way (``[31.6, 42.7]`` for a difference of 42.7 points): there the interval takes the
    farther of it and Tango's score bound (:func:`tango_bounds`, unconditional), so it is never
    degenerate and still excludes 0 exactly when the test rejects.
    """

    def __init__(self, a: np.ndarray, b: np.ndarray, mask: np.ndarray, alternative: str, midp):
        super().__init__(a - b, mask, alternative)
        self.midp = bool(midp)
        self.name = "mcnemar-midp" if midp else "mcnemar"
        self.n10 = np.sum(mask & (a == 1) & (b == 0), axis=0).astype(np.int64)
        self.n01 = np.sum(mask & (a == 0) & (b == 1), axis=0).astype(np.int64)
        self.k = self.n10 + self.n01
        self.statistic = np.minimum(self.n10, self.n01).astype(float)
        self.pvalue = np.array(
            [
                _binom_p(int(x), int(k), alternative, self.midp)
                for x, k in zip(self.n10, self.k, strict=True)
            ]
        )

    def interval(self, levels: np.ndarray, reject: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        low = np.full(self.n.size, np.nan)
        high = np.full(self.n.size, np.nan)
        for j, (x, k, lv) in enumerate(zip(self.n10, self.k, levels, strict=True)):
            if k == 0:
                # no discordant pair (two models right, or wrong, on the same items): the
                # conditional interval is undefined; Tango's unconditional score interval is
                # centred on 0 and narrows with the items (±0.16 over 20 items at 95 %)
                if self.n[j] > 0:
                    low[j], high[j] = tango_bounds(
                        0, 0, int(self.n[j]), float(lv), self.alternative
                    )
                continue
            lo, hi = _pi_interval(int(x), int(k), float(lv), self.alternative, self.midp)
            scale = k / self.n[j]
            low[j], high[j] = scale * (2 * lo - 1), scale * (2 * hi - 1)
            t_lo, t_hi = tango_bounds(
                int(x), int(k - x), int(self.n[j]), float(lv), self.alternative
            )
            d = (2 * x - k) / self.n[j]
            if d > 0:  # the far bound is the upper one; the lower decides the test
                high[j] = max(high[j], t_hi)
            elif d < 0:
                low[j] = min(low[j], t_lo)
            else:
                low[j], high[j] = min(low[j], t_lo), max(high[j], t_hi)
        return _sided(low, high, self.alternative)


def tango_bounds(
    n10: int, n01: int, n: int, alpha: float, alternative: str = "two-sided"
) -> tuple[float, float]:
    r"""Tango's score interval of the paired difference :math:`(n_{10} - n_{01})/n` of 0/1 scores.

    The set of :math:`\delta` whose score statistic (variance estimated under
    :math:`\Delta = \delta`, Tango 1998) is within the normal quantile: unconditional on the
    number of discordant pairs, so not degenerate when all of them point one way. ``alpha`` is
    the two-sided level (one tail each side), or the one-sided level with ``alternative``.
    """
    if n <= 0:
        return math.nan, math.nan
    z = stats.norm.isf(alpha / 2 if alternative == "two-sided" else alpha)

    def score(d0: float) -> float:  # decreasing in d0
        b, c = float(n01), float(n10)  # Tango's Delta = (c - b)/n is our (n10 - n01)/n
        big_b = b * (1 - d0) + c * (1 + d0) - 2 * n * d0
        p = (big_b + math.sqrt(max(big_b**2 + 8 * n * b * d0 * (1 - d0), 0.0))) / (4 * n)
        var = max((2 * p + d0 - d0 * d0) / n, 1e-300)
        return ((c - b) / n - d0) / math.sqrt(var)

    eps = 1e-12
    est = (n10 - n01) / n
    lo = (
        -1.0
        if est <= -1 + eps or score(-1 + eps) <= z
        else optimize.brentq(lambda d: score(d) - z, -1 + eps, min(est, 1 - eps), xtol=1e-13)
    )
    hi = (
        1.0
        if est >= 1 - eps or score(1 - eps) >= -z
        else optimize.brentq(lambda d: score(d) + z, max(est, -1 + eps), 1 - eps, xtol=1e-13)
    )
    return float(lo), float(hi)


def _binom_p(x: int, k: int, alternative: str, midp: bool) -> float:
    if k == 0:
        return 1.0
    half = 0.5 * stats.binom.pmf(x, k, 0.5) if midp else 0.0
    upper = stats.binom.sf(x - 1, k, 0.5) - half  # P(X >= x) (- half the point mass)
    lower = stats.binom.cdf(x, k, 0.5) - half  # P(X <= x)
    if alternative == "greater":
        return float(min(upper, 1.0))
    if alternative == "less":
        return float(min(lower, 1.0))
    return float(min(1.0, 2 * min(upper, lower)))


def _pi_interval(x: int, k: int, alpha: float, alternative: str, midp: bool):
    tail = alpha / 2 if alternative == "two-sided" else alpha

    def upper_tail(pi: float) -> float:  # P_pi(X >= x) (mid-p: minus half P(X = x)); increases
        return float(
            stats.binom.sf(x - 1, k, pi) - (0.5 * stats.binom.pmf(x, k, pi) if midp else 0)
        )

    def lower_tail(pi: float) -> float:  # P_pi(X <= x) (mid-p version); decreases in pi
        return float(stats.binom.cdf(x, k, pi) - (0.5 * stats.binom.pmf(x, k, pi) if midp else 0))

    if x == 0:
        lo = 0.0
    elif not midp:
        lo = float(stats.beta.ppf(tail, x, k - x + 1))
    else:
        lo = optimize.brentq(lambda p: upper_tail(p) - tail, 1e-15, 1 - 1e-15, xtol=1e-14)
    if x == k:
        hi = 1.0
    elif not midp:
        hi = float(stats.beta.isf(tail, x + 1, k - x))
    else:
        hi = optimize.brentq(lambda p: lower_tail(p) - tail, 1e-15, 1 - 1e-15, xtol=1e-14)
    if alternative == "greater":
        hi = 1.0
    elif alternative == "less":
        lo = 0.0
    return lo, hi


def make_test(method, x_a, x_b, mask, alternative, n_resamples, seed, stop_after=None):
    """The test object of ``method`` for paired columns ``x_a``, ``x_b`` (units x pairs)."""
    if method in ("mcnemar", "mcnemar-midp"):
        return McNemar(x_a, x_b, mask, alternative, midp=method == "mcnemar-midp")
    d = x_a - x_b
    if method == "t":
        return TTest(d, mask, alternative)
    if method == "permutation":
        return SignFlip(d, mask, alternative, n_resamples, seed, stop_after)
    return Bootstrap(d, mask, alternative, n_resamples, seed)


# --- minimum detectable differences -------------------------------------------------------


@lru_cache(maxsize=1024)
def t_mdd(n: int, alpha: float, power: float, alternative: str) -> float:
    """Effect size (in SDs of the difference) a paired t test at ``alpha`` detects with ``power``.

    Solves the noncentral-t power equation (both tails for a two-sided test), as statsmodels'
    ``TTestPower.solve_power`` does (checked against it in the tests), without importing it.
    """
    if n < 2 or not 0 < alpha < 1:
        return math.nan
    df = n - 1
    two = alternative == "two-sided"
    crit = float(stats.t.isf(alpha / 2 if two else alpha, df))

    def pw(es: float) -> float:
        nc = es * math.sqrt(n)
        out = float(stats.nct.sf(crit, df, nc))
        if two:
            out += float(stats.nct.cdf(-crit, df, nc))
        if math.isnan(out):  # scipy's nct fails far in the tail: its normal limit is exact there
            out = float(stats.norm.sf(crit - nc) + (stats.norm.cdf(-crit - nc) if two else 0))
        return out - power

    hi = 8.0 / math.sqrt(n)
    while pw(hi) < 0:
        hi *= 2
        if hi > 1e6:
            return math.nan
    return float(optimize.brentq(pw, 0.0, hi, xtol=1e-14, rtol=1e-14))


@lru_cache(maxsize=4096)
def mcnemar_mdd(n: int, k: int, alpha: float, power: float, alternative: str, midp: bool) -> float:
    """Smallest ``|difference|`` the McNemar test used detects with ``power``, given ``k`` discordant.

    Conditional on the observed number of discordant units: the rejection region of the test at
    ``alpha`` over ``x = n10 = 0..k`` is fixed, and ``pi`` is raised from 1/2 until
    ``P_pi(reject) = power``; the difference is ``(k/n)(2 pi - 1)``. NaN when even ``pi = 1``
    does not reach ``power`` (too few discordant units).
    """
    if k == 0 or n == 0:
        return math.nan
    xs = np.arange(k + 1)
    alt = "greater" if alternative == "less" else alternative  # by symmetry
    reject = np.array([_binom_p(int(x), k, alt, midp) < alpha for x in xs])
    if not reject.any():
        return math.nan

    def pw(pi: float) -> float:
        return float(np.sum(stats.binom.pmf(xs, k, pi)[reject]))

    if pw(1.0) < power:
        return math.nan
    if pw(0.5) >= power:
        return 0.0
    pi = optimize.brentq(lambda p: pw(p) - power, 0.5, 1.0, xtol=1e-12)
    return float(k / n * (2 * pi - 1))
