"""Multiple-comparison corrections and the per-pair levels that make intervals agree with them.

Every correction here decides pair ``j`` by comparing its unadjusted p-value with a local level
``alpha_j``; the interval of pair ``j`` is the same test inverted at ``alpha_j``, so it excludes
the null value exactly when the corrected p-value is below ``alpha``.

Which library computes what: ``bonferroni``, ``sidak``, ``holm``, ``hochberg`` and ``bh`` are
statsmodels ``multipletests``' formulas, written out here in numpy (``multipletests`` calls
``gc.collect()`` on every call, 0.3 s on a loaded process, and importing statsmodels imports
pandas); they are checked equal to ``multipletests`` in ``tests/compare/test_multiplicity.py``.
``maxt`` and ``romano-wolf`` are computed from a joint bootstrap
(:func:`evalstats.compare._pairtests.resampling_family`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["CORRECTIONS", "RESAMPLING_CORRECTIONS", "adjust", "interval_kind", "local_levels"]

#: correction name -> statsmodels ``multipletests`` method (None: computed here)
CORRECTIONS = {
    "holm": "holm",
    "bonferroni": "bonferroni",
    "sidak": "sidak",
    "hochberg": "simes-hochberg",
    "bh": "fdr_bh",
    "romano-wolf": None,
    "maxt": None,
    "none": None,
}
RESAMPLING_CORRECTIONS = ("romano-wolf", "maxt")

#: what the interval of each correction guarantees (the output's ``interval`` column)
_KIND = {
    "none": "marginal",
    "bonferroni": "simultaneous",
    "sidak": "simultaneous",
    "maxt": "simultaneous",
    "holm": "step-down",
    "romano-wolf": "step-down",
    "hochberg": "step-up",
    "bh": "fcr",
}


def interval_kind(correction: str) -> str:
    """``marginal``, ``simultaneous``, ``step-down``, ``step-up`` or ``fcr``."""
    return _KIND[correction]


def adjust(p: np.ndarray, correction: str) -> np.ndarray:
    """Corrected p-values of a family (statsmodels ``multipletests``' formulas; NaN kept)."""
    p = np.asarray(p, dtype=float)
    out = p.copy()
    ok = ~np.isnan(p)
    m = int(ok.sum())
    if CORRECTIONS[correction] is None or m == 0:
        return out
    pv = p[ok]
    if correction == "bonferroni":
        adj = pv * m
    elif correction == "sidak":
        with np.errstate(divide="ignore"):  # p = 1: log1p(-1) = -inf, adjusted p = 1
            adj = -np.expm1(m * np.log1p(-np.minimum(pv, 1.0)))
    else:
        order = np.argsort(pv, kind="stable")
        ps = pv[order]
        i = np.arange(m)
        if correction == "holm":
            adj_sorted = np.maximum.accumulate((m - i) * ps)
        elif correction == "hochberg":
            adj_sorted = np.minimum.accumulate(((m - i) * ps)[::-1])[::-1]
        else:  # bh
            adj_sorted = np.minimum.accumulate((ps * m / (i + 1))[::-1])[::-1]
        adj = np.empty(m)
        adj[order] = adj_sorted
    out[ok] = np.minimum(adj, 1.0)
    return out


def local_levels(p: np.ndarray, p_adj: np.ndarray, alpha: float, correction: str) -> np.ndarray:
    """Level ``alpha_j`` at which pair ``j``'s own test decides it under ``correction``.

    For single-step corrections this is one level for the whole family (Bonferroni ``alpha/m``,
    Sidak ``1-(1-alpha)^(1/m)``); for Holm the level of the step at which the pair was decided
    (``alpha/(m-r+1)`` for the ``r``-th smallest p-value, and the level of the first accepted
    step for every accepted pair); for Hochberg ``alpha/(m-R+1)`` for the ``R`` rejected pairs
    and ``alpha/(m-r+1)`` for accepted ones; for BH the FCR level ``R alpha/m`` (Benjamini and
    Yekutieli 2005; ``alpha/m`` when nothing is rejected). In each case
    ``p_adj_j < alpha`` if and only if ``p_j < alpha_j``.
    """
    p = np.asarray(p, dtype=float)
    m = int(np.sum(~np.isnan(p)))
    out = np.full(p.size, np.nan)
    if m == 0:
        return out
    ok = np.flatnonzero(~np.isnan(p))
    pv, rej = p[ok], p_adj[ok] < alpha
    if correction == "none":
        lv = np.full(m, alpha)
    elif correction == "bonferroni":
        lv = np.full(m, alpha / m)
    elif correction == "sidak":
        lv = np.full(m, -np.expm1(np.log1p(-alpha) / m))
    elif correction == "bh":
        r = int(rej.sum())
        lv = np.full(m, max(r, 1) * alpha / m)
    elif correction in ("holm", "hochberg"):
        order = np.argsort(pv, kind="stable")
        ranks = np.empty(m, dtype=int)
        ranks[order] = np.arange(1, m + 1)
        step = alpha / (m - ranks + 1)
        if correction == "holm":
            accepted = ranks[~rej]
            first = int(accepted.min()) if accepted.size else m + 1
            lv = np.where(rej, step, alpha / (m - first + 1) if first <= m else np.nan)
        else:
            r = int(rej.sum())
            lv = np.where(rej, alpha / (m - r + 1), step)
    else:  # resampling corrections: the caller has its own critical values
        raise ValueError(correction)
    out[ok] = lv
    return out
