"""Paired differences between models: tests, corrections and intervals that agree with them."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from evalstats._ordered import grouped_in_order
from evalstats.compare._intervals import MIN_PROMPTS, _clip, _metric_bounds, scores_over
from evalstats.compare._multiplicity import (
    CORRECTIONS,
    RESAMPLING_CORRECTIONS,
    adjust,
    interval_kind,
    local_levels,
)
from evalstats.compare._pairtests import (
    DesignT,
    GeneralizedDesign,
    make_test,
    mcnemar_mdd,
    resampling_family,
    t_mdd,
)
from evalstats.design._frames import analysis_input
from evalstats.errors import (
    DegenerateDataWarning,
    DesignWarning,
    InsufficientDataError,
    LimitError,
    MetricScaleError,
    ParameterError,
    SchemaError,
)
from evalstats.results import (
    ConfidenceInterval,
    check_alternative,
    check_choice,
    check_confidence_level,
    check_positive_int,
)

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from evalstats._frames import TableLike
    from evalstats.design import Design

__all__ = ["PairedDifference", "compare_models", "paired_difference", "paired_matrix"]

_METHODS = ("auto", "t", "permutation", "mcnemar", "mcnemar-midp", "bootstrap")
_FAMILIES = ("group", "global")

#: ``method='auto'`` takes the paired t test (analytic p-values, no resampling floor) for
#: non-binary paired scores from this many shared units on, and the sign-flip permutation test
#: below it. At n >= 30 the t test's size on exchangeable paired item means stays at or below
#: nominal down to alpha = 5e-4 (measured ratio 0.70-1.00 at n = 30, 50, 100; see
#: docs/methods/compare.md), and it costs one pass over the units for every pair, whatever the
#: number of pairs; a permutation test would need ``m / alpha`` resamples per pair to reach the
#: Bonferroni/Holm level ``alpha / m`` at all, and far more to decide near it reliably. Below 30
#: units the sign-flip test is exact under exchangeability (every sign vector when
#: ``2**n <= n_resamples``).
T_MIN_UNITS = 30

#: Besag-Clifford sequential stopping of permutation p-values: a pair stops drawing sign
#: vectors once this many were at least as extreme as its data. Its p-value is then
#: ``(h + 1)/(l + 1)`` after ``l`` draws, a valid (slightly conservative) version of Besag
#: and Clifford's ``h / l``; with h = 20 its relative Monte Carlo error is about
#: 1/sqrt(20) = 22 %, immaterial for a pair that is so far from significance, and such pairs
#: cost ``l ~ 20/p`` draws instead of all of them.
STOP_AFTER = 20


@dataclass(frozen=True, slots=True)
class PairedDifference:
    """Result of :func:`paired_difference`: mean of ``a - b`` with interval and test."""

    difference: float
    se: float
    confidence_interval: ConfidenceInterval
    statistic: float
    pvalue: float
    method: str
    alternative: str
    n: int
    n_a_only: int | None
    n_b_only: int | None
    correlation: float
    mdd: float
    power: float
    n_resamples: int
    seed: int
    null_distribution: np.ndarray | None = field(repr=False, default=None)

    def to_frame(self) -> pl.DataFrame:
        """One-row frame, so results for many pairs concatenate."""
        return pl.DataFrame(
            [
                {
                    "n": self.n,
                    "difference": self.difference,
                    "se": self.se,
                    "ci_low": self.confidence_interval.low,
                    "ci_high": self.confidence_interval.high,
                    "confidence_level": self.confidence_interval.level,
                    "statistic": self.statistic,
                    "pvalue": self.pvalue,
                    "method": self.method,
                    "alternative": self.alternative,
                    "n_a_only": self.n_a_only,
                    "n_b_only": self.n_b_only,
                    "correlation": self.correlation,
                    "mdd": self.mdd,
                    "power": self.power,
                    "n_resamples": self.n_resamples,
                    "seed": self.seed,
                }
            ],
            schema=_PAIR_SCHEMA,
        )


_PAIR_SCHEMA = {
    "n": pl.Int64,
    "difference": pl.Float64,
    "se": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "confidence_level": pl.Float64,
    "statistic": pl.Float64,
    "pvalue": pl.Float64,
    "method": pl.String,
    "alternative": pl.String,
    "n_a_only": pl.Int64,
    "n_b_only": pl.Int64,
    "correlation": pl.Float64,
    "mdd": pl.Float64,
    "power": pl.Float64,
    "n_resamples": pl.Int64,
    "seed": pl.Int64,
}


#: The groups of the analysis when ``by`` is not given (settings held are added).
_BY = ("dataset", "metric")


def _correlation(a: np.ndarray, b: np.ndarray) -> float:
    if a.size < 2 or np.all(a == a[0]) or np.all(b == b[0]):
        return math.nan
    return float(np.corrcoef(a, b)[0, 1])


def _auto_resamples(n_resamples: int | None, m: int, alpha: float) -> int:
    """9999, or more so that the p-value floor ``1/(B+1)`` is at most ``alpha / (2 m)``."""
    if n_resamples is not None:
        return check_positive_int("n_resamples", n_resamples)
    return max(9999, math.ceil(2 * m / alpha))


def _binary(x: np.ndarray, mask: np.ndarray) -> bool:
    v = x[mask]
    return bool(np.all((v == 0) | (v == 1)))


def _auto_kind(a: np.ndarray, b: np.ndarray, mask: np.ndarray) -> str:
    """``method='auto'`` for one pair: McNemar (0/1), t (>= T_MIN_UNITS units), permutation."""
    if _binary(a, mask) and _binary(b, mask):
        return "mcnemar"
    return "t" if int(mask.sum()) >= T_MIN_UNITS else "permutation"


def _check_method(method: str, correction: str) -> None:
    if correction in RESAMPLING_CORRECTIONS and method not in ("auto", "bootstrap"):
        raise ParameterError(
            f"`correction={correction!r}` resamples the studentized differences of all pairs "
            f"jointly and needs method='bootstrap' (or 'auto'), got {method!r}."
        )


def _min_p(test, j: int) -> float:
    """Smallest p-value pair ``j``'s test can reach (for the below-minimum-size warning)."""
    name = test.name
    if name in ("t", "t-design", "generalized-design"):
        return 0.0
    if name.startswith("mcnemar"):
        k = int(test.n[j])
        tail = 0.5**k * (0.5 if name.endswith("midp") else 1.0)
        return min(1.0, tail * (2 if test.alternative == "two-sided" else 1))
    if name == "permutation":
        # the sign vectors that are extreme whatever the data (the identity; for a two-sided
        # test also its mirror) set the floor, random draws or all 2**n alike
        return float(test.always[j]) / test.total  # the design's floor, stopped early or not
    return 1.0 / (test.n_resamples + 1)


def _resamples_used(test, j: int) -> int | None:
    """Resamples pair ``j`` used (fewer than ``n_resamples`` when a permutation test stopped)."""
    if hasattr(test, "resamples_used"):
        return int(test.resamples_used()[j])
    return test.n_resamples  # the bootstrap draws all; None for t and McNemar


def _mdd(test, j: int, level: float, power: float) -> float:
    if test.name.startswith("mcnemar"):
        return mcnemar_mdd(
            int(test.n[j]),
            int(test.k[j]),
            float(level),
            power,
            test.alternative,
            test.name.endswith("midp"),
        )
    if test.name in ("t-design", "generalized-design"):  # the design's df: its n is df + 1
        df = float(test.df[j])
        if not math.isfinite(df) or df < 1:
            return math.nan
        es = t_mdd(max(2, int(round(df)) + 1), round(float(level), 15), power, test.alternative)
        return es * float(test.sd[j])
    es = t_mdd(int(test.n[j]), round(float(level), 15), power, test.alternative)
    return es * float(test.sd[j])


def _lone_prompt_part(mv) -> bool:
    """Whether a pair's variance has a prompt part that no group floor (``floored``) reached."""
    return bool(mv.prompt_weight) and not mv.pooled and mv.prompt_terms[0] > 0


def _run_family(
    blocks: list[dict],
    *,
    method: str,
    correction: str,
    alternative: str,
    alpha: float,
    power: float,
    n_resamples: int | None,
    seed: int,
    stop_after: int | None = None,
) -> list[dict]:
    """Tests, corrected p-values and intervals for a family of pairs (one or several groups).

    ``blocks``: one dict per group with ``x`` (units x values), ``mask``, ``pairs`` (index
    pairs into the value columns). Returns one dict of per-pair arrays per block.
    """
    m = sum(len(b["pairs"]) for b in blocks)
    b_res = _auto_resamples(n_resamples, m, alpha)
    if stop_after is not None:
        stop_after = check_positive_int("stop_after", stop_after)
    tests = []  # (block index, pair indices, test)
    for bi, blk in enumerate(blocks):
        x, mask, pairs = blk["x"], blk["mask"], blk["pairs"]
        ia = np.array([p[0] for p in pairs])
        ib = np.array([p[1] for p in pairs])
        xa, xb = x[:, ia], x[:, ib]
        pm = mask[:, ia] & mask[:, ib]
        xa, xb = np.where(pm, xa, 0.0), np.where(pm, xb, 0.0)
        design = blk.get("design")
        plain = np.arange(len(pairs))
        if design is not None:
            on_design = np.array([v is not None for v in design], dtype=bool)
            # a pair with a prompt part and no other pairs to floor it with: generalized
            lone = np.array([v is not None and _lone_prompt_part(v[0]) for v in design], dtype=bool)
            for sel, kind in ((on_design & ~lone, DesignT), (lone, GeneralizedDesign)):
                mv = [design[j][0] for j in np.flatnonzero(sel)]
                if not mv:
                    continue
                if kind is GeneralizedDesign:
                    test = GeneralizedDesign(mv, alternative)
                else:
                    test = DesignT(
                        np.array([v.mean for v in mv]),
                        np.array([v.var for v in mv]),
                        np.array([v.df for v in mv]),
                        np.array([v.n_items for v in mv]),
                        alternative,
                    )
                tests.append((bi, np.flatnonzero(sel), test))
            plain = np.flatnonzero(~on_design)  # no prompt in common: the recorded prompts
        if correction in RESAMPLING_CORRECTIONS:
            kinds = np.array(["bootstrap"] * len(pairs))
        elif method == "auto":
            kinds = np.array([_auto_kind(xa[:, j], xb[:, j], pm[:, j]) for j in range(len(pairs))])
        else:
            kinds = np.array([method] * len(pairs))
        kinds = np.where(np.isin(np.arange(len(pairs)), plain), kinds, "")
        for kind in dict.fromkeys(kinds[plain].tolist()):
            cols = np.flatnonzero(kinds == kind)
            if kind.startswith("mcnemar") and not all(
                _binary(xa[:, j], pm[:, j]) and _binary(xb[:, j], pm[:, j]) for j in cols
            ):
                raise ParameterError(
                    f"`method={kind!r}` needs 0/1 paired scores (a binary metric, one variant "
                    "and one run per item); use 't', 'permutation' or 'bootstrap' (any metric)."
                )
            test = make_test(
                kind, xa[:, cols], xb[:, cols], pm[:, cols], alternative, b_res, seed, stop_after
            )
            tests.append((bi, cols, test))
    p = np.concatenate([t.pvalue for _, _, t in tests])
    if correction in RESAMPLING_CORRECTIONS:
        p_adj, bounds = resampling_family([t for _, _, t in tests], alpha, correction)
        levels = np.full(m, np.nan)
    else:
        p_adj = adjust(p, correction)
        levels = local_levels(p, p_adj, alpha, correction)
        bounds = None
    reject = p_adj < alpha
    out = [
        {k: np.full(len(b["pairs"]), np.nan) for k in ("low", "high", "p", "p_adj", "level")}
        | {
            "test": [None] * len(b["pairs"]),
            "col": [0] * len(b["pairs"]),
            "reject": np.zeros(len(b["pairs"]), dtype=bool),
        }
        for b in blocks
    ]
    start = 0
    for ti, (bi, cols, test) in enumerate(tests):
        sl = slice(start, start + cols.size)
        if bounds is not None:
            low, high = bounds[ti]
        else:
            with np.errstate(invalid="ignore", divide="ignore"):
                low, high = test.interval(levels[sl], reject[sl])
        o = out[bi]
        o["low"][cols], o["high"][cols] = low, high
        o["p"][cols], o["p_adj"][cols] = p[sl], p_adj[sl]
        o["level"][cols], o["reject"][cols] = levels[sl], reject[sl]
        for local, j in enumerate(cols):
            o["test"][j], o["col"][j] = test, local
        start += cols.size
    return out


def paired_difference(
    a: np.ndarray,
    b: np.ndarray,
    *,
    method: str = "auto",
    alternative: str = "two-sided",
    confidence_level: float = 0.95,
    power: float = 0.8,
    n_resamples: int = 9999,
    seed: int = 0,
    stop_after: int | None = STOP_AFTER,
) -> PairedDifference:
    r"""Mean paired difference ``a - b`` with a paired test and the interval that inverts it.

    Parameters
    ----------
    a, b : numpy.ndarray
        Paired scores (same unit at the same position).
    method : {'auto', 't', 'permutation', 'mcnemar', 'mcnemar-midp', 'bootstrap'}, default 'auto'
        ``'t'`` paired t test; ``'permutation'`` sign-flip permutation test of the mean;
        ``'mcnemar'`` exact McNemar (binomial on the discordant pairs) and ``'mcnemar-midp'``
        its mid-p version, both for 0/1 scores; ``'bootstrap'`` the studentized bootstrap.
        ``'auto'`` takes exact McNemar for 0/1 scores, the paired t test for other scores
        from :data:`T_MIN_UNITS` (30) units on, and the permutation test below that.
    alternative : {'two-sided', 'less', 'greater'}, default 'two-sided'
        Direction of the test of ``mean(a - b)``; one-sided tests give one-sided intervals.
    confidence_level : float, default 0.95
        Level of the interval; the test level (for ``mdd``) is ``1 - confidence_level``.
    power : float, default 0.8
        Power at which the minimum detectable difference ``mdd`` is computed.
    n_resamples : int, default 9999
        Random sign flips or bootstrap resamples; the permutation test is exact (every sign
        vector) when ``2**n <= n_resamples``.
    seed : int, default 0
        Seed of the random generator; the same seed gives the same result.
    stop_after : int or None, default 20
        Sequential stopping of the random permutation test (Besag and Clifford 1991): stop
        drawing once ``stop_after`` sign vectors were at least as extreme as the data (p-value
        ``(stop_after + 1)/(l + 1)`` after ``l`` draws); ``None`` draws all ``n_resamples``.

    Returns
    -------
    PairedDifference
        ``confidence_interval`` is the set of shifts the test does not reject, so it excludes 0
        exactly when ``pvalue < 1 - confidence_level``.

    Notes
    -----
    With :math:`d_i = a_i - b_i`:

    - ``t``: :math:`\bar d \pm t_{n-1}\, s_d/\sqrt n` (scipy ``ttest_rel``).
    - ``permutation``: statistic :math:`\bar d`; p-value the share of sign vectors (the
      observed one included) with :math:`|\sum s_i d_i| \ge |\sum d_i|`, as
      :func:`scipy.stats.permutation_test` with ``permutation_type='samples'``. The interval
      inverts the same test for every shift :math:`\delta` (signs applied to
      :math:`d_i - \delta`), computed exactly from the sign vectors used.
    - ``mcnemar``: :math:`n_{10} \sim \mathrm{Bin}(n_{10}+n_{01}, 1/2)` (statsmodels
      ``mcnemar(exact=True)``); ``mcnemar-midp`` subtracts half the probability of the observed
      count (Fagerland et al. 2013: size close to nominal where the exact test has 0.01-0.03).
      ``statistic`` is :math:`\min(n_{10}, n_{01})`. The interval is the Clopper-Pearson
      interval (mid-p version for mid-p) of :math:`\pi = n_{10}/k`, mapped to the difference as
      :math:`(k/n)(2\pi - 1)`, conditional on the :math:`k` discordant units.
    - ``bootstrap``: studentized bootstrap; p-value :math:`(1 + \#\{|t^*| \ge |t|\})/(B+1)`.

    With ``stop_after`` = :math:`h`, the random permutation test stops after the :math:`l`-th
    draw once :math:`h` draws were at least as extreme, with p-value :math:`(h+1)/(l+1)`
    (Besag and Clifford 1991; their :math:`h/l` is smaller, so this one is valid too), and
    the interval inverts the same :math:`l + 1` sign vectors.

    Minimum detectable difference: for ``t``, ``permutation`` and ``bootstrap``
    :math:`\delta^* s_d` where :math:`\delta^*` solves the noncentral-t power equation of a
    paired t test (statsmodels ``TTestPower``); for McNemar the difference at which the exact
    (or mid-p) test itself reaches ``power``, conditional on the observed discordant count.
    Checked against: statsmodels ``mcnemar`` and ``TTestPower``, scipy ``ttest_rel`` and
    ``permutation_test`` (``tests/compare/test_paired.py``).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> a = rng.normal(0.7, 0.1, 30)
    >>> b = a - 0.05 + rng.normal(0, 0.05, 30)
    >>> res = paired_difference(a, b, seed=0)  # 30 units: auto is the paired t test
    >>> res.method, round(res.difference, 4), round(res.pvalue, 6)
    ('t', 0.0362, 0.000257)
    >>> res = paired_difference(a, b, method="permutation", seed=0)
    >>> res.method, res.pvalue
    ('permutation', 0.0005)
    >>> ci = res.confidence_interval  # the sign-flip test inverted: excludes 0 as p < 0.05
    >>> bool(ci.low > 0)
    True
    """
    check_choice("method", method, _METHODS)
    check_alternative(alternative)
    level = check_confidence_level(confidence_level)
    if not 0 < power < 1:
        raise ParameterError(f"`power` must be in (0, 1), got {power!r}.")
    n_resamples = check_positive_int("n_resamples", n_resamples)
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ParameterError(
            f"`a` and `b` must be paired 1-d arrays, got shapes {a.shape}, {b.shape}."
        )
    n = a.size
    if n < 2:
        raise InsufficientDataError(f"a paired comparison needs at least 2 shared units, got {n}.")
    mask = np.ones((n, 2), dtype=bool)
    binary = _binary(a, mask[:, 0]) and _binary(b, mask[:, 1])
    if method in ("mcnemar", "mcnemar-midp") and not binary:
        raise MetricScaleError(
            f"`method={method!r}` needs 0/1 scores on both sides (a binary metric); use 't' or "
            "'permutation' (any metric)."
        )
    blk = {"x": np.column_stack([a, b]), "mask": mask, "pairs": [(0, 1)]}
    out = _run_family(
        [blk],
        method=method,
        correction="none",
        alternative=alternative,
        alpha=round(1 - level, 12),
        power=power,
        n_resamples=n_resamples,
        seed=seed,
        stop_after=stop_after,
    )[0]
    test = out["test"][0]
    low, high = float(out["low"][0]), float(out["high"][0])
    if not test.name.startswith("mcnemar") and float(test.sd[0]) == 0:
        warnings.warn(
            "paired differences are constant; the interval is degenerate.",
            DegenerateDataWarning,
            stacklevel=2,
        )
    if test.name.startswith("mcnemar") and int(test.k[0]) == 0:
        warnings.warn(
            "no discordant pairs: the McNemar interval is undefined; NaN.",
            DegenerateDataWarning,
            stacklevel=2,
        )
    mcn = test.name.startswith("mcnemar")
    null = None
    if test.name == "permutation" and n_resamples <= 200_000:
        null = _null_means(test)[: int(test.used[0])]
    return PairedDifference(
        difference=float(test.diff[0]),
        se=float(test.se[0]),
        confidence_interval=ConfidenceInterval(low, high, level),
        statistic=float(test.statistic[0]),
        pvalue=float(out["p"][0]),
        method=test.name,
        alternative=alternative,
        n=n,
        n_a_only=int(test.n10[0]) if mcn else None,
        n_b_only=int(test.n01[0]) if mcn else None,
        correlation=_correlation(a, b),
        mdd=_mdd(test, 0, round(1 - level, 12), power),
        power=float(power),
        n_resamples=int(test.n_resamples or n_resamples),
        seed=seed,
        null_distribution=null,
    )


def _null_means(test) -> np.ndarray:
    """The permutation distribution of the mean difference (sign vectors used, identity first)."""
    out = [(s @ test.d0[:, 0]) / test.n[0] for s in test._signs()]
    return np.concatenate(out)


def paired_matrix(
    frame: pl.DataFrame | pl.LazyFrame, *, paired_on: str, by: Sequence[str], column: str = "model"
) -> dict[tuple, pl.DataFrame]:
    """Wide frames per group of ``by``: one row per paired unit, one column per ``column`` value."""
    return {k: v[0] for k, v in _paired_wide(frame, paired_on, by, column).items()}


#: Most pairs of models one call compares (about 1,000 models in a group). 100,000 models make
#: 5 * 10**9 pairs: the wide table and the pairs were allocated before anything said so
#: (a MemoryError).
MAX_PAIRS = 500_000


def check_pair_count(
    frame: pl.DataFrame | pl.LazyFrame,
    by: Sequence[str],
    column: str = "model",
    *,
    what: str = "comparing models",
) -> None:
    """Raise :class:`LimitError` when a group of ``frame`` has more than :data:`MAX_PAIRS` pairs.

    Counted before anything is pivoted: one pass over the ``by`` and ``column`` columns.
    """
    lf = frame.lazy() if isinstance(frame, pl.DataFrame) else frame
    by = [b for b in by if b in lf.collect_schema().names()]
    k_expr = pl.col(column).n_unique().alias("__k")
    counts = (lf.group_by(by).agg(k_expr) if by else lf.select(k_expr)).collect()
    if counts.height == 0:
        return
    row = counts.sort("__k", descending=True).row(0, named=True)
    k = int(row["__k"])
    pairs = k * (k - 1) // 2
    if pairs > MAX_PAIRS:
        where = ", ".join(f"{b}={row[b]!r}" for b in by)
        raise LimitError(
            f"{what}: {k:,} values of {column!r}{' in ' + where if where else ''} make "
            f"{pairs:,} pairs, more than the {MAX_PAIRS:,} compared at once (about 1,000 "
            f"{column}s); compare a subset of them, e.g. the leaders from `evalstats intervals`."
        )


def _paired_wide(frame, paired_on: str, by: Sequence[str], column: str) -> dict:
    """Per group: (wide scores, wide row counts); one row per unit, one column per value."""
    over = {"items": "items", "variants": "variants"}[paired_on]
    long = scores_over(frame, over, (*by, column), count=True)
    unit = [c for c in long.columns if c not in (*by, column, "score", "n_rows")]
    out = {}
    groups = long.partition_by(list(by), as_dict=True, maintain_order=True) if by else {(): long}
    for key, g in groups.items():
        g = g.with_columns(pl.col(column).cast(pl.String))
        scores = g.pivot(on=column, index=unit, values="score", sort_columns=True).sort(unit)
        counts = g.pivot(on=column, index=unit, values="n_rows", sort_columns=True).sort(unit)
        out[key] = (scores, counts)
    return out


def _design_cells(
    frame, by: Sequence[str], column: str, cluster: str | None, variant_factors
) -> dict:
    """Per group: the (value of ``column``, item, prompt variant) cells with their mean scores.

    Only built when the design needs them: a cluster column (declared, or ``cluster``), or two
    or more prompt variants in a group. Returns ``{}`` otherwise.
    """
    from evalstats.compare._intervals import (
        _prompt_id,
        dense_codes,
        item_columns,
        warn_cluster_candidates,
        with_item_code,
    )
    from evalstats.schema import validate_observations

    lf = validate_observations(frame, require_item=True)
    names = lf.collect_schema().names()
    if cluster is None and "cluster" in names:
        cluster = "cluster"
    elif cluster is None:
        warn_cluster_candidates(lf)
    if cluster is not None and cluster not in names:
        raise SchemaError(f"`cluster` names {cluster!r}, which is not a column of the table.")
    prompt = _prompt_id(lf, (*by, column), variant_factors)
    lead = [*by, column]
    cells = grouped_in_order(  # the same sums in the same order, every run
        lf.with_columns(prompt.alias("__p")),
        [*lead, *item_columns(lead), "__p"],
        pl.col("score").mean().alias("__y"),
        *([pl.col(cluster).first().cast(pl.String).alias("__g")] if cluster else []),
    ).collect()
    cells = with_item_code(cells, lead).with_columns(
        dense_codes(["__item", "__p", *(["__g"] if cluster else [])])
    )
    if not cluster and cells.group_by(list(by)).agg(pl.col("__p").n_unique())["__p"].max() < 2:
        return {}  # one prompt, independent items: the plain paired tests
    groups = cells.partition_by(list(by), as_dict=True, maintain_order=True) if by else {(): cells}
    return {k: (v, cluster is not None) for k, v in groups.items()}


def _pair_designs(cells, models: list[str], pairs, prompt_space: bool) -> list | None:
    """The design's mean difference and variance of each pair (None: the plain tests apply).

    One entry per pair: ``(MeanVariance of the differences, mean_a, mean_b)`` over the (item,
    prompt) cells both models have, or None when they share such cells on fewer than 2 items
    (no prompt in common: the pair gets the plain test over the recorded prompts).
    """
    from evalstats.compare._design_var import design_variance

    if cells is None:
        return None
    table, clustered = cells
    column = [c for c in table.columns if c not in ("__item", "__p", "__y", "__g")][-1]
    if not clustered and (not prompt_space or table["__p"].n_unique() < 2):
        return None
    per = {
        str(k[0]): v.drop(column)
        for k, v in table.partition_by([column], as_dict=True, maintain_order=True).items()
    }
    out = []
    for i, j in pairs:
        a, b = per[models[i]], per[models[j]]
        both = a.join(b.select("__item", "__p", "__y"), on=["__item", "__p"], suffix="_b").sort(
            "__item", "__p"
        )
        if both["__item"].n_unique() < 2:
            out.append(None)
            continue
        d = (both["__y"] - both["__y_b"]).to_numpy()
        mv = design_variance(
            both["__item"].to_numpy(),
            both["__p"].to_numpy(),
            d,
            clusters=both["__g"].to_numpy() if clustered else None,
            prompt_space=prompt_space,
        )
        # each model's mean as the difference's: over items, of the item's shared cells
        means = both.group_by("__item").agg(pl.col("__y").mean(), pl.col("__y_b").mean())
        out.append((mv, float(means["__y"].mean()), float(means["__y_b"].mean())))
    return pool_prompt_part(out)


def pool_prompt_part(designs: list) -> list:
    """Each pair's prompt variance floored at the mean over the group's pairs (``floored``).

    With 5 prompts a pair's own model x prompt variance has 4 df and is near 0 (or below,
    truncated) in a sizeable share of samples where it is not; the pairs of the same group
    estimate the same kind of component, so their mean is a floor that a pair's estimate
    can fall below only by chance. The df stays the pair's own (see
    :meth:`MeanVariance.floored`), which keeps the test valid when one model is more
    prompt-sensitive than the others (the pooled estimate alone is not).
    """
    own = [d[0].prompt_sigma2 for d in designs if d is not None]
    own = [v for v in own if math.isfinite(v)]
    if len(own) < 2:
        return designs
    floor = float(np.mean(own))
    return [None if d is None else (d[0].floored(floor), *d[1:]) for d in designs]


def _shown(names: list[str], k: int = 3) -> str:
    """The first ``k`` names, '; '-joined, with ' ...' when there are more."""
    return "; ".join(names[:k]) + (" ..." if len(names) > k else "")


def _nothing_left(skipped: list[str], empty: str) -> str:
    """The error when every group was skipped: its one reason, or the first three."""
    if len(skipped) == 1:
        return f"{skipped[0]}."
    if not skipped:
        return f"{empty}."
    more = f"; and {len(skipped) - 3} more" if len(skipped) > 3 else ""
    return f"no group is left: {'; '.join(skipped[:3])}{more}."


def _warn_skipped(skipped: list[str], what: str, rest: str) -> None:
    """One DesignWarning naming the groups left out (the first three) and what went on."""
    if not skipped:
        return
    more = f"; and {len(skipped) - 3} more" if len(skipped) > 3 else ""
    warnings.warn(f"{what} ({'; '.join(skipped[:3])}{more}); {rest}.", DesignWarning, stacklevel=3)


def _in(by: Sequence[str], blk: dict) -> str:
    """' in dataset='d'' for a block's group (empty without groups)."""
    where = ", ".join(f"{b}={k!r}" for b, k in zip(by, blk["key"]))
    return f" in {where}" if where else ""


def _item_set_rule(
    frame: pl.DataFrame | pl.LazyFrame, on_mismatch: str | None, paired_on: str = "variants"
) -> pl.LazyFrame:
    """The item-set rule at the boundary: runs of one configuration over different items.

    Given (``on_mismatch``, or a rule set by :func:`evalstats.aggregate.item_set_rule`), that
    rule. Not given, items paired on items keep every run (``'keep'``): the item is the unit,
    each (item, prompt) cell is the mean of the runs it has, and the units averaged over fewer
    runs are counted in ``n_incomplete`` with a warning, so a run that skipped items changes
    no other item's score. Configurations paired (``paired_on='variants'``) average over
    items, where runs over different items would mix items with runs: the boundary rule.
    """
    from contextvars import copy_context

    from evalstats.aggregate import _ITEM_SET_RULE, align_item_sets  # the one boundary rule

    if on_mismatch is not None:
        rule = on_mismatch
    elif _ITEM_SET_RULE in copy_context() or paired_on != "items":
        rule = _ITEM_SET_RULE.get()
    else:
        rule = "keep"
    return align_item_sets(frame, on_mismatch=rule)  # type: ignore[arg-type]


def compare_models(
    frame: TableLike,
    *,
    paired_on: str = "items",
    correction: str = "holm",
    family: str = "group",
    method: str = "auto",
    alternative: str = "two-sided",
    confidence_level: float = 0.95,
    power: float = 0.8,
    n_resamples: int | None = None,
    seed: int = 0,
    by: Sequence[str] | None = None,
    column: str = "model",
    on_mismatch: str | None = None,
    stop_after: int | None = STOP_AFTER,
    over: str = "auto",
    cluster: str | None = None,
    variant_factors: Sequence[str] | str | None = None,
    roles: str | Mapping[str, str] | None = None,
    design: Design | str | Path | None = None,
) -> pl.DataFrame:
    r"""Every pair of models: paired difference, test, corrected p-value and a matching interval.

    Parameters
    ----------
    frame : polars.DataFrame, polars.LazyFrame, pandas.DataFrame or pyarrow.Table
        Observation table (``paired_on='items'``) or unit table; see :mod:`evalstats.schema`.
    paired_on : {'items', 'variants'}, default 'items'
        The paired unit: item scores (mean over variants and runs) or configuration scores
        (mean over items and runs). Only units that both models have are used; the others are
        counted in ``n_unpaired``.
    correction : {'holm', 'bonferroni', 'sidak', 'hochberg', 'bh', 'maxt', 'romano-wolf', 'none'}, default 'holm'
        Multiple-comparison correction over the family. ``holm``, ``bonferroni``, ``sidak``,
        ``hochberg`` (step-up) and ``bh`` (false discovery rate) are statsmodels
        ``multipletests``; ``maxt`` (single step) and ``romano-wolf`` (step-down) use the
        joint bootstrap distribution of the studentized differences of all pairs, which
        gains power when pairs are correlated (they imply ``method='bootstrap'``).
    family : {'group', 'global'}, default 'group'
        The pairs corrected together: those of one group of ``by`` (one dataset), or all
        pairs of all groups.
    method : {'auto', 't', 'permutation', 'mcnemar', 'mcnemar-midp', 'bootstrap'}, default 'auto'
        Test of each pair (see :func:`paired_difference`). ``auto`` picks per pair: exact
        McNemar for 0/1 paired scores (single-run, single-variant items), the paired t test for
        other scores when the pair shares at least 30 units (:data:`T_MIN_UNITS`), and the
        sign-flip permutation test (exact under exchangeability) below that. McNemar and t give
        exact or analytic p-values with no resampling floor, so a family of hundreds of pairs
        can reach its corrected level; the ``method`` column says which test each pair got.
        With the prompt-space design (``over='auto'``, 2 or more prompt variants) a pair gets
        ``t-design`` on the (item, prompt) cells both models have; a pair that shares no
        prompt variant on 2 or more items gets the plain test of its item means over each
        model's own recorded prompts, named with ``-recorded`` (``'permutation-recorded'``,
        ``'mcnemar-recorded'``, ``'t-recorded'``), and a :class:`DesignWarning` names it.
    alternative : {'two-sided', 'less', 'greater'}, default 'two-sided'
        Direction, for ``model_a - model_b``.
    confidence_level : float, default 0.95
        Family level: ``alpha = 1 - confidence_level`` is the level of the corrected test,
        and the intervals are built to agree with it (see Notes).
    power : float, default 0.8
        Power of the minimum detectable difference ``mdd``.
    n_resamples : int, optional
        Sign flips or bootstrap resamples, shared by all pairs of a group. Default: 9999, or
        more for large families, so that the smallest p-value ``1/(B+1)`` is at most
        ``alpha/(2m)`` for ``m`` pairs (otherwise a Bonferroni/Holm family could never reject).
    seed : int, default 0
        Seed of the random generator; the same seed gives the same result.
    by : tuple of str, optional
        Columns that define the groups; models are compared within each group. Default:
        ``('dataset', 'metric')`` and every setting held fixed that varies (each provider,
        temperature or document set compared on its own; see :mod:`evalstats.factors`).
        Given explicitly, exactly these groups.
    column : str, default 'model'
        The column whose values are compared: ``'model'``, or any factor column (a prompt
        template, a provider) to compare its levels, paired on the same units. Columns not in
        ``by`` are averaged within each unit.
    on_mismatch : {'error', 'intersect', 'keep'}, optional
        Repeated runs of a configuration that cover different items: the one item-set rule of
        every analysis (:func:`evalstats.aggregate.align_item_sets`, CLI ``--on-mismatch``),
        applied before items are paired. Default: the rule set by
        :func:`evalstats.aggregate.item_set_rule` when one is set; outside one, ``'keep'``
        for ``paired_on='items'`` (each item's cells average the runs they have; units with
        fewer runs are counted in ``n_incomplete`` and warned about) and ``'error'`` for
        ``paired_on='variants'``, as for :func:`evalstats.aggregate.to_units`.
    stop_after : int or None, default 20
        Sequential stopping of random permutation tests (Besag and Clifford 1991): a pair
        stops drawing sign vectors once ``stop_after`` were at least as extreme as its data,
        so pairs far from significance cost a few hundred draws instead of ``n_resamples``
        (``resamples_used`` says how many). ``None`` draws them all.
    over : {'auto', 'recorded-prompts', 'prompt-space'}, default 'auto'
        The target of the design's test: ``'auto'`` is the mean over the prompt space in
        groups with :data:`~evalstats.compare.MIN_PROMPTS` (3) or more prompt variants, and
        the recorded prompts in groups with 2 (2 variants cannot estimate the prompt-space
        spread; a :class:`DesignWarning` says so); ``'recorded-prompts'`` conditions on the
        prompts that were run; ``'prompt-space'`` asks for the prompt space from 2 variants on.
    cluster : str, optional
        Column naming the cluster of each item (default: the ``cluster`` column when the
        table has one); the design's test is then cluster-robust (CR2, Bell-McCaffrey df).
    roles : str or mapping, optional
        Column roles for a table not in the canonical layout, as ``--roles`` gives them for a
        file (``{"passage": "cluster"}`` or ``"passage=cluster"``); see
        :func:`evalstats.design.analysis_input`.
    design : Design or path, optional
        A design (:func:`evalstats.infer_design`) or a design file (``design.toml``) to apply,
        as ``--design`` does.

    Returns
    -------
    polars.DataFrame
        One row per group and pair (``model_a < model_b``, values of ``column``, named in
        ``compared``) with ``paired_on, n, n_unpaired, n_incomplete, mean_a, mean_b, difference,
        se, ci_low, ci_high, confidence_level, ci_level, interval, statistic, pvalue,
        pvalue_corrected, reject, correction, family, family_size, at_floor, min_pvalue,
        can_reject, method,
        alternative, n_a_only, n_b_only, correlation, mdd, power, n_resamples, resamples_used,
        seed`` (``resamples_used``: the draws each pair used, fewer than ``n_resamples`` when
        a permutation test stopped early; null for tests that do not resample).

    Raises
    ------
    ParameterError
        Unknown option, a level outside (0, 1), McNemar on non-binary scores, a resampling
        correction with a non-bootstrap method.
    SchemaError
        The item-set rule is ``'error'`` (given, set, or the default with
        ``paired_on='variants'``) and the runs of a configuration cover different items.
    InsufficientDataError
        No group has two models that share two units. A group with a single model, or a pair
        that shares fewer than two units, is left out with a :class:`DesignWarning` and the
        others are compared.

    Warns
    -----
    DesignWarning
        Units that only one model of a pair has (``n_unpaired``), units averaged over fewer
        rows (runs, variants) than the model's other units (``n_incomplete``: missing runs are
        averaged over the runs present, never imputed), pairs whose test cannot reach a
        p-value below ``alpha`` at their sample size, and pairs that share no prompt variant
        (compared over their recorded prompts, where the prompt and the model are confounded).

    See Also
    --------
    paired_difference : The test on two arrays.

    Notes
    -----
    **Intervals agree with decisions.** ``reject`` is ``pvalue_corrected < alpha``. Each
    correction decides pair :math:`j` by comparing its own p-value with a level
    :math:`\alpha_j`, and the pair's interval is its own test inverted at :math:`\alpha_j`
    (``ci_level`` :math:`= 1-\alpha_j`), so the interval excludes 0 exactly when ``reject``.
    ``interval`` says what the intervals guarantee:

    - ``marginal`` (``none``): each interval covers with ``confidence_level``.
    - ``simultaneous`` (``bonferroni`` :math:`\alpha/m`, ``sidak``
      :math:`1-(1-\alpha)^{1/m}`, ``maxt``: the :math:`1-\alpha` quantile of the bootstrap
      maximum of :math:`|t^*|`): all intervals cover together with ``confidence_level``.
    - ``step-down`` (``holm``, ``romano-wolf``): the level of the step at which the pair was
      decided (Holm :math:`\alpha/(m-r+1)` for the :math:`r`-th smallest p-value; accepted
      pairs share the level of the first accepted step). The intervals of accepted pairs hold
      0; as for any step-down procedure they are decision-compatible rather than jointly
      covering (Strassburger and Bretz 2008).
    - ``step-up`` (``hochberg``): rejected pairs at :math:`\alpha/(m-R+1)`, accepted ones at
      their own step.
    - ``fcr`` (``bh``): level :math:`1 - R\alpha/m` with :math:`R` rejections, the false
      coverage-statement rate intervals of Benjamini and Yekutieli (2005).

    ``at_floor`` marks p-values at the smallest value the resampling test can give (raise
    ``n_resamples``, or use ``method='t'`` / McNemar, whose p-values have no floor).
    ``min_pvalue`` is the smallest p-value the pair's test can give at all (0 for ``t``;
    :math:`2 \cdot 2^{-k}` for exact McNemar with :math:`k` discordant units; the share of sign
    vectors that are extreme whatever the data for the permutation test; :math:`1/(B+1)` for
    the bootstrap) and ``can_reject`` whether it is below the pair's decision level: a pair
    with ``can_reject`` False cannot be significant by construction, whatever the data, and a
    :class:`~evalstats.errors.DesignWarning` says how many there are.
    ``n_a_only``/``n_b_only`` are McNemar's discordant counts. ``mdd`` is the minimum
    detectable difference of the test used at the pair's level (see
    :func:`paired_difference`); ``correlation`` is the Pearson correlation of the two
    models' paired scores.
    Checked against: statsmodels ``multipletests``, scipy ``ttest_rel``/``permutation_test``,
    a direct Romano-Wolf implementation (``tests/compare/test_paired.py``,
    ``tests/compare/test_multiplicity.py``).

    References
    ----------
    .. [1] J. P. Romano and M. Wolf, "Efficient computation of adjusted p-values for
       resampling-based stepdown multiple testing", Statistics & Probability Letters 113 (2016).
    .. [2] Y. Benjamini and D. Yekutieli, "False discovery rate-adjusted multiple confidence
       intervals for selected parameters", JASA 100 (2005).
    .. [3] J. Besag and P. Clifford, "Sequential Monte Carlo p-values", Biometrika 78 (1991).

    Examples
    --------
    >>> from evalstats.simulate import observations
    >>> obs = observations(n_models=3, n_items=60, n_variants=1, seed=0)
    >>> out = compare_models(obs)
    >>> out.select("model_a", "model_b", "method", "n", "interval").rows()
    [('m0', 'm1', 'mcnemar', 60, 'step-down'), ('m0', 'm2', 'mcnemar', 60, 'step-down'), ('m1', 'm2', 'mcnemar', 60, 'step-down')]
    """
    _input = analysis_input(frame, roles=roles, design=design)
    given_factors = variant_factors
    frame, variant_factors = _input.table, _input.variant_factors(variant_factors)
    check_choice("paired_on", paired_on, ("items", "variants"))
    check_choice("correction", correction, tuple(CORRECTIONS))
    check_choice("family", family, _FAMILIES)
    check_choice("method", method, _METHODS)
    _check_method(method, correction)
    check_alternative(alternative)
    level = check_confidence_level(confidence_level)
    if not 0 < power < 1:
        raise ParameterError(f"`power` must be in (0, 1), got {power!r}.")
    alpha = round(1 - level, 12)  # 1 - 0.95 is 0.050000000000000044: p = 0.05 must not reject
    default_by = by is None
    by = _BY if by is None else ((by,) if isinstance(by, str) else tuple(by))
    if column in by:
        raise ParameterError(f"`column` {column!r} is also in `by`; compare it or group by it.")
    if default_by:
        by = _input.held_by(by, given_factors, also=(column,))
    frame = _item_set_rule(frame, on_mismatch, paired_on)
    check_pair_count(frame, by, column)
    wide = _paired_wide(frame, paired_on, by, column)
    check_choice("over", over, ("auto", "recorded-prompts", "prompt-space"))
    cells = (
        _design_cells(frame, by, column, cluster, variant_factors)
        if paired_on == "items" and method in ("auto", "t")
        else {}
    )
    blocks = []
    two_prompts: list[str] = []  # groups with 2 prompt variants: the recorded prompts
    skipped: list[str] = []  # groups and pairs with nothing to compare, and why
    for key, (w, cnt) in wide.items():
        unit = [c for c in ("dataset", "item", "variant") if c in w.columns and c not in by]
        models = [c for c in w.columns if c not in unit]
        where = ", ".join(f"{b}={k!r}" for b, k in zip(by, key))
        if len(models) < 2:
            # a dataset with one model leaves the others' comparisons as they are
            skipped.append(
                f"comparing models needs at least 2 models{' in ' + where if where else ''}; "
                f"got {models}"
            )
            continue
        x = w.select(models).to_numpy().astype(float)
        c = cnt.select(models).to_numpy().astype(float)
        mask = ~np.isnan(x)
        x = np.where(mask, x, 0.0)
        full = np.nanmax(np.where(mask, c, np.nan), axis=0)
        incomplete = mask & (c < full)
        pairs = []
        for i, j in combinations(range(len(models)), 2):
            shared = int(np.sum(mask[:, i] & mask[:, j]))
            if shared < 2:
                skipped.append(
                    f"{models[i]!r} and {models[j]!r} share {shared} unit(s)"
                    f"{' in ' + where if where else ''}; a paired comparison needs at least 2"
                )
            else:
                pairs.append((i, j))
        if not pairs:
            continue
        space = over == "prompt-space"
        if over == "auto" and key in cells:
            n_p = cells[key][0]["__p"].n_unique()
            space = n_p >= MIN_PROMPTS
            if n_p == 2:
                two_prompts.append(where or "all")
        design = (  # a resampling correction bootstraps the item means: no design's test
            None
            if correction in RESAMPLING_CORRECTIONS
            else _pair_designs(cells.get(key), models, pairs, space)
        )
        blocks.append(
            {
                "key": key,
                "models": models,
                "x": x,
                "mask": mask,
                "pairs": pairs,
                "inc": incomplete,
                "design": design,
            }
        )
    if not blocks:
        raise InsufficientDataError(_nothing_left(skipped, "no models to compare"))
    _warn_skipped(
        skipped,
        "comparisons skipped where there is nothing to compare",
        "the other groups and pairs are compared",
    )
    families = [blocks] if family == "global" else [[b] for b in blocks]
    bounds = _metric_bounds(frame, by)
    rows = []
    n_unpaired_total = n_incomplete_total = 0
    low_power = []
    recorded: list[str] = []
    for fam in families:
        results = _run_family(
            fam,
            method=method,
            correction=correction,
            alternative=alternative,
            alpha=alpha,
            power=power,
            n_resamples=n_resamples,
            seed=seed,
            stop_after=stop_after,
        )
        m = sum(len(b["pairs"]) for b in fam)
        for blk, res in zip(fam, results, strict=True):
            x, mask, inc = blk["x"], blk["mask"], blk["inc"]
            lo_b, hi_b = bounds(blk["key"])
            span = hi_b - lo_b  # a difference of two means on [lo, hi] lies in [-span, span]
            for pi, (i, j) in enumerate(blk["pairs"]):
                test, col = res["test"][pi], res["col"][pi]
                pm = mask[:, i] & mask[:, j]
                a, b = x[pm, i], x[pm, j]
                n_unpaired = int(np.sum(mask[:, i] ^ mask[:, j]))
                n_incomplete = int(np.sum(pm & (inc[:, i] | inc[:, j])))
                n_unpaired_total += n_unpaired
                n_incomplete_total += n_incomplete
                lv = res["level"][pi]
                mdd_level = alpha if math.isnan(lv) else lv
                min_p = _min_p(test, col)
                can_reject = min_p < mdd_level
                if not can_reject:
                    low_power.append(f"{blk['models'][i]} vs {blk['models'][j]}")
                mcn = test.name.startswith("mcnemar")
                shared = None if blk["design"] is None else blk["design"][pi]
                name = test.name
                if blk["design"] is not None and shared is None:
                    name += "-recorded"  # the pair shares no prompt: over its recorded prompts
                    recorded.append(f"{blk['models'][i]} vs {blk['models'][j]}{_in(by, blk)}")
                mean_a, mean_b = (a.mean(), b.mean()) if shared is None else shared[1:]
                rows.append(
                    {
                        **dict(zip(by, blk["key"])),
                        "model_a": blk["models"][i],
                        "model_b": blk["models"][j],
                        "compared": column,
                        "paired_on": paired_on,
                        "n": int(pm.sum()) if shared is None else shared[0].n_items,
                        "n_unpaired": n_unpaired,
                        "n_incomplete": n_incomplete,
                        "mean_a": float(mean_a),
                        "mean_b": float(mean_b),
                        "difference": float(test.diff[col]),
                        "se": float(test.se[col]),
                        "ci_low": _clip(float(res["low"][pi]), -span, span),
                        "ci_high": _clip(float(res["high"][pi]), -span, span),
                        "confidence_level": level,
                        "ci_level": None if math.isnan(lv) else float(1 - lv),
                        "interval": interval_kind(correction),
                        "statistic": float(test.statistic[col]),
                        "pvalue": float(res["p"][pi]),
                        "pvalue_corrected": float(res["p_adj"][pi]),
                        "reject": bool(res["reject"][pi]),
                        "correction": correction,
                        "family": family,
                        "family_size": m,
                        "at_floor": bool(test.at_floor()[col]),
                        "min_pvalue": float(min_p),
                        "can_reject": bool(can_reject),
                        "method": name,
                        "alternative": alternative,
                        "n_a_only": int(test.n10[col]) if mcn else None,
                        "n_b_only": int(test.n01[col]) if mcn else None,
                        "correlation": _correlation(a, b),
                        "mdd": _mdd(test, col, mdd_level, power),
                        "power": float(power),
                        "n_resamples": test.n_resamples,
                        "resamples_used": _resamples_used(test, col),
                        "seed": seed,
                    }
                )
    if n_unpaired_total:
        warnings.warn(
            f"{n_unpaired_total} unit(s) are present for only one model of a pair and are left "
            "out of that pair (counted in `n_unpaired`).",
            DesignWarning,
            stacklevel=2,
        )
    if n_incomplete_total:
        warnings.warn(
            f"{n_incomplete_total} paired unit(s) average fewer rows (runs, variants) than the "
            "model's other units: missing runs are averaged over the runs present, not imputed "
            "(counted in `n_incomplete`).",
            DesignWarning,
            stacklevel=2,
        )
    if two_prompts:
        warnings.warn(
            f"{len(two_prompts)} group(s) have 2 prompt variants ({_shown(two_prompts)}): "
            "2 variants cannot "
            "estimate the prompt-space spread, so the pairs are compared over the 2 recorded "
            "prompts (over='prompt-space' asks for the prompt-space test, on about 1 df).",
            DesignWarning,
            stacklevel=2,
        )
    if recorded:
        warnings.warn(
            f"{len(recorded)} pair(s) share no prompt variant on 2 or more items "
            f"({_shown(recorded)}): "
            "each is compared over the two models' own recorded prompts, where a prompt effect "
            "cannot be told from the model's (`method` ends in '-recorded').",
            DesignWarning,
            stacklevel=2,
        )
    if low_power:
        shown = ", ".join(low_power[:5]) + (" ..." if len(low_power) > 5 else "")
        warnings.warn(
            f"{len(low_power)} of {len(rows)} pair(s) cannot be significant by construction: "
            f"the smallest p-value their test can give is not below the pair's level ({shown}; "
            "`can_reject` is False, `min_pvalue` gives the floor). Add units, or resamples for "
            "a permutation or bootstrap test, or use method='t'.",
            DesignWarning,
            stacklevel=2,
        )
    out = pl.DataFrame(rows, schema_overrides=_COMPARE_SCHEMA).select([*by, *_COMPARE_SCHEMA])
    return out.sort([*by, "model_a", "model_b"])


_COMPARE_SCHEMA = {
    "model_a": pl.String,
    "model_b": pl.String,
    "compared": pl.String,
    "paired_on": pl.String,
    "n": pl.Int64,
    "n_unpaired": pl.Int64,
    "n_incomplete": pl.Int64,
    "mean_a": pl.Float64,
    "mean_b": pl.Float64,
    "difference": pl.Float64,
    "se": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "confidence_level": pl.Float64,
    "ci_level": pl.Float64,
    "interval": pl.String,
    "statistic": pl.Float64,
    "pvalue": pl.Float64,
    "pvalue_corrected": pl.Float64,
    "reject": pl.Boolean,
    "correction": pl.String,
    "family": pl.String,
    "family_size": pl.Int64,
    "at_floor": pl.Boolean,
    "min_pvalue": pl.Float64,
    "can_reject": pl.Boolean,
    "method": pl.String,
    "alternative": pl.String,
    "n_a_only": pl.Int64,
    "n_b_only": pl.Int64,
    "correlation": pl.Float64,
    "mdd": pl.Float64,
    "power": pl.Float64,
    "n_resamples": pl.Int64,
    "resamples_used": pl.Int64,
    "seed": pl.Int64,
}
