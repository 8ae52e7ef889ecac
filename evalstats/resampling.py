"""ReliableEval's resampling recipe: Delta(n), CI_delta, n*, its uncertainty and the proxy check.

For a group (one model on one dataset) with unit scores ``x_1..x_N`` over ``N`` prompt variants,
``Delta_i(n)`` is the distribution of ``|mu_i(S') - mu_i(S_D)|`` over subsets ``S'`` of size
``n`` (Lior et al., ReliableEval). ``n*`` is the smallest ``n`` from which on the CI_delta
upper bound stays within ``epsilon``. ``method='pool'`` makes that a claim about the recorded
variants; ``'bootstrap'`` and ``'analytic'`` about unseen variants of the same perturbation
space.
"""

from __future__ import annotations

import hashlib
import math
import threading
import warnings
from collections import OrderedDict
from collections.abc import Sequence
from statistics import NormalDist
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from evalstats._frames import describe_group
from evalstats._kernels import first_reached, last_crossing, subset_deviations
from evalstats._threads import parallel_map
from evalstats.design._frames import analysis_input
from evalstats.errors import (
    DegenerateDataWarning,
    InsufficientDataError,
    MetricScaleError,
    ParameterError,
    SchemaError,
)
from evalstats.factors import hold_fixed
from evalstats.moments import variant_scores
from evalstats.schema import MetricInfo, as_lazy, metric_info, validate_by, validate_units

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from evalstats._frames import TableLike
    from evalstats.design import Design

__all__ = [
    "CURVE_COLUMNS",
    "NSTAR_COLUMNS",
    "PROXY_COLUMNS",
    "UNCERTAINTY_COLUMNS",
    "reference_model_check",
    "required_sample_size",
    "sample_size_curve",
    "sample_size_uncertainty",
]

_METHODS = ("pool", "bootstrap", "analytic")
_MOMENTS = ("mean", "variance")

#: Columns of :func:`sample_size_curve` after the group columns.
CURVE_COLUMNS = ("moment", "n", "delta_mean", "ci_low", "ci_high", "exhaustive")
#: Columns of :func:`required_sample_size` after the group columns.
NSTAR_COLUMNS = (
    "moment",
    "n_star",
    "n_available",
    "reached",
    "population",
    "vacuous",
    "epsilon",
    "delta",
    "method",
    "seed",
    "epsilon_rule",
)

#: What an n* of each method is a claim about (the ``population`` column).
POPULATION = {"pool": "recorded", "bootstrap": "unseen", "analytic": "unseen"}
#: Columns of :func:`sample_size_uncertainty` after the group columns.
UNCERTAINTY_COLUMNS = (
    "moment",
    "n_star",
    "n_star_median",
    "ci_low",
    "ci_high",
    "share_reached",
    "vacuous",
    "confidence_level",
    "n_available",
    "n_bootstrap",
    "epsilon",
    "delta",
    "method",
    "seed",
    "epsilon_rule",
)
#: Columns of :func:`reference_model_check` after the group columns.
PROXY_COLUMNS = (
    "moment",
    "n_star",
    "reference_model",
    "reference_n_star",
    "proxy_sufficient",
    "ci_high_at_reference",
    "within_epsilon_at_reference",
    "vacuous",
    "epsilon",
    "delta",
    "method",
    "seed",
    "epsilon_rule",
)


# --- validation ----------------------------------------------------------------------------------


def _default_method(method: str | None, compat: str | None) -> str:
    """``method`` as given, else bootstrap (pool when reproducing the reference script)."""
    if method is not None:
        return method
    return "pool" if compat is not None else "bootstrap"


def _validate(
    *,
    moments: Sequence[str] | str,
    delta: float,
    n_resamples: int,
    method: str,
    compat: str | None,
    epsilon: float | None = None,
    population_size: int | None = None,
) -> tuple[str, ...]:
    if isinstance(moments, str):
        moments = tuple(m.strip() for m in moments.split(",") if m.strip())
    moments = tuple(moments)
    if not moments:
        raise ParameterError("`moments` must name at least one of 'mean', 'variance'.")
    for m in moments:
        if m not in _MOMENTS:
            raise ParameterError(f"`moments` must be among 'mean', 'variance', got {m!r}.")
    if len(set(moments)) != len(moments):
        raise ParameterError(f"`moments` repeats a moment: {moments!r}.")
    if not (isinstance(delta, (int, float)) and 0 < delta < 1):
        hint = " Did you mean 0.1?" if isinstance(delta, (int, float)) and 1 <= delta < 100 else ""
        raise ParameterError(f"`delta` must be in (0, 1), got {delta!r}.{hint}")
    if epsilon is not None and not (
        isinstance(epsilon, (int, float)) and epsilon > 0 and math.isfinite(epsilon)
    ):
        raise ParameterError(f"`epsilon` must be a positive number, got {epsilon!r}.")
    if not isinstance(n_resamples, (int, np.integer)) or n_resamples < 1:
        raise ParameterError(f"`n_resamples` must be a positive integer, got {n_resamples!r}.")
    if method not in _METHODS:
        raise ParameterError(
            f"`method` must be one of {', '.join(map(repr, _METHODS))}, got {method!r}."
        )
    if compat not in (None, "reliable-eval"):
        raise ParameterError(f"`compat` must be None or 'reliable-eval', got {compat!r}.")
    if compat is not None and method != "pool":
        raise ParameterError(
            f"`compat='reliable-eval'` reproduces the reference script, which uses pool subsets; "
            f"it cannot be combined with method={method!r}."
        )
    if population_size is not None and (
        not isinstance(population_size, (int, np.integer)) or population_size < 1
    ):
        raise ParameterError(
            f"`population_size` must be a positive integer, got {population_size!r}."
        )
    return moments


def _groups(
    units: pl.DataFrame | pl.LazyFrame,
    by: Sequence[str] | str,
    variant_factors: Sequence[str] | str | None = None,
) -> tuple[tuple[str, ...], list[tuple[tuple, np.ndarray]], dict]:
    lf = as_lazy(units)
    by = validate_by(lf.collect_schema().names(), by)
    by = (*by, *hold_fixed(lf, variant_factors=variant_factors, by=by))
    scores = variant_scores(lf, by=by)
    if scores.height == 0:
        raise InsufficientDataError("the unit table has no rows.")
    out = []
    for key, frame in scores.group_by(list(by), maintain_order=True):
        out.append((tuple(key), frame["score"].to_numpy().astype(float)))
    return by, out, {b: scores.schema[b] for b in by}


#: ReliableEval's epsilon, for metrics on [0, 1].
DEFAULT_EPSILON = 0.01


class _Metrics:
    """Each group's metric (name, bounds, direction, observed range), for epsilon's rule."""

    def __init__(self, units: pl.DataFrame | pl.LazyFrame, by: tuple[str, ...]) -> None:
        lf = validate_units(units, check_values=False)
        self.info = metric_info(lf)
        seen = lf.group_by("metric").agg(
            pl.col("score").min().alias("lo"), pl.col("score").max().alias("hi")
        )
        self.observed = {r[0]: (r[1], r[2]) for r in seen.collect().iter_rows()}
        self.position = by.index("metric") if "metric" in by else None
        if self.position is None and len(self.info) > 1:
            raise MetricScaleError(
                f"the table holds {len(self.info)} metrics ({', '.join(map(repr, self.info))}) "
                "and `by` has no 'metric': epsilon and n* are per metric. Add 'metric' to `by`."
            )

    def of(self, key: tuple) -> MetricInfo:
        name = key[self.position] if self.position is not None else next(iter(self.info))
        return self.info[name]

    def on_unit_interval(self, info: MetricInfo) -> bool:
        """Declared within [0, 1], or undeclared with every score in [0, 1]."""
        if info.low is not None or info.high is not None:
            return info.unit_interval
        lo, hi = self.observed.get(info.name, (None, None))
        return lo is not None and hi is not None and lo >= 0.0 and hi <= 1.0


def _validate_epsilon(
    epsilon: float | None, relative_epsilon: float | None, relative_to: str
) -> None:
    if epsilon is not None and relative_epsilon is not None:
        raise ParameterError("give either `epsilon` or `relative_epsilon`, not both.")
    if relative_epsilon is not None and not (
        isinstance(relative_epsilon, (int, float))
        and not isinstance(relative_epsilon, bool)
        and 0 < relative_epsilon < 1
    ):
        raise ParameterError(
            f"`relative_epsilon` must be a share in (0, 1), got {relative_epsilon!r}."
        )
    if relative_to not in ("range", "sd"):
        raise ParameterError(f"`relative_to` must be 'range' or 'sd', got {relative_to!r}.")


def _epsilons(
    x: np.ndarray,
    metrics: _Metrics,
    moments: tuple[str, ...],
    epsilon: float | None,
    relative_epsilon: float | None,
    relative_to: str,
    compat: str | None = None,
    *,
    key: tuple = (),
    by: Sequence[str] = (),
) -> tuple[dict[str, float], str]:
    """Epsilon of each moment in the metric's units, and the rule that gave it.

    ``key`` is the group's values of ``by``: its metric, and its name in the warning of an
    undefined relative epsilon.
    The mean's epsilon is in metric units and the variance's in squared metric units, so a
    relative epsilon ``r`` is ``r * s`` for the mean and ``r * s**2`` for the variance, with
    ``s`` the metric's range or the group's across-variant standard deviation: on [0, 1]
    (``s = 1``) that is ReliableEval's one epsilon for both moments.

    The default on [0, 1] keeps ReliableEval's 0.01 for the mean, but puts the variance's
    tolerance on the standard-deviation scale: ``2 * sd * 0.01`` (``sd`` the group's
    across-variant standard deviation, population form as the variance), the change of the
    variance that moves the sd by about 0.01 (delta method: dVar = 2 sd dsd). The paper's
    0.01 on the variance itself exceeds most variances of per-prompt accuracy (an sd of 0.1
    has a variance of 0.01), so its n* was 1 and said nothing (vacuous in 157 of 325 State of
    What Art groups). ``compat='reliable-eval'`` and a given ``epsilon`` keep one epsilon for
    both moments, as the paper defines it.
    """
    info = metrics.of(key)
    if epsilon is not None:
        return dict.fromkeys(moments, float(epsilon)), f"given: {float(epsilon):g}"
    if relative_epsilon is None:
        if metrics.on_unit_interval(info):
            eps = dict.fromkeys(moments, DEFAULT_EPSILON)
            rule = f"default {DEFAULT_EPSILON:g} (metric {info.name!r} on [0, 1])"
            if compat is None and "variance" in moments:
                sd = float(np.std(x)) if x.size else math.nan
                eps["variance"] = 2.0 * sd * DEFAULT_EPSILON if math.isfinite(sd) else math.nan
                rule = (
                    f"default {DEFAULT_EPSILON:g} (metric {info.name!r} on [0, 1]; for the "
                    f"variance on the sd scale: 2 x sd x {DEFAULT_EPSILON:g})"
                )
            return eps, rule
        raise MetricScaleError(
            f"metric {info.name!r} is not on [0, 1] ({info.describe()}), and the default "
            f"epsilon {DEFAULT_EPSILON:g} is meant for [0, 1] metrics: give `epsilon` in its "
            "units, or `relative_epsilon`, a share of its range or (relative_to='sd') of the "
            "across-variant standard deviation (CLI: --epsilon, --relative-epsilon, "
            "--relative-to)."
        )
    r = float(relative_epsilon)
    if relative_to == "range":
        if info.range is None:
            raise MetricScaleError(
                f"metric {info.name!r} has no declared range ({info.describe()}), so "
                "`relative_epsilon` cannot be a share of it: pass relative_to='sd' "
                "(CLI: --relative-to sd) or declare the range (metric_range, --metric-range)."
            )
        s, what = info.range, f"the range {info.range:g} of metric {info.name!r}"
    else:
        s = float(np.std(x, ddof=1)) if x.size > 1 else math.nan
        what = f"the across-variant sd {s:.6g}"
        if not (math.isfinite(s) and s > 0):
            where = describe_group(dict(zip(by, key))) + ": " if by else ""
            warnings.warn(
                f"{where}the across-variant standard deviation is {s!r}, so a relative epsilon "
                "is undefined; n* is not reached.",
                DegenerateDataWarning,
                stacklevel=3,
            )
    eps = {m: r * (s if m == "mean" else s * s) for m in moments}
    return eps, f"relative: {r:g} x {what} (squared for the variance)"


def _group_seed(seed: int, key: tuple, by: Sequence[str] = ()) -> np.random.Generator:
    """The generator of one group: ``seed`` and a stable hash of the group's key values.

    Seeding by the key (not by the group's position) keeps a group's result the same whatever
    other groups the table holds, and across processes (no Python ``hash`` randomisation).
    The ``metric`` value does not enter the hash: the metrics of one model and dataset draw the
    same variant subsets (common random numbers), and a table's results do not depend on what
    its metric is called.
    """
    key = tuple(v for b, v in zip(by, key) if b != "metric") if by else key
    text = "\x1f".join(f"{type(v).__name__}:{v}" for v in key).encode()
    digest = hashlib.blake2b(text, digest_size=16).digest()
    words = [int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4)]
    return np.random.default_rng([int(seed), *words])


# --- the curve -----------------------------------------------------------------------------------


def _analytic_curve(
    x: np.ndarray, moments: tuple[str, ...], delta: float, population_size: int | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Normal approximation of |Delta(n)|: (mean, low, high), each of shape (moments, N)."""
    N = x.size
    n = np.arange(1, N + 1, dtype=float)
    fpc = (
        np.ones(N)
        if population_size is None
        else np.clip((population_size - n) / max(population_size - 1, 1), 0.0, None)
    )
    z_hi = NormalDist().inv_cdf(1 - delta / 4)  # 1 - delta/2 quantile of |Z|
    z_lo = NormalDist().inv_cdf(0.5 + delta / 4)  # delta/2 quantile of |Z|
    mean = np.empty((len(moments), N))
    low = np.empty_like(mean)
    high = np.empty_like(mean)
    for j, m in enumerate(moments):
        sd = _analytic_sd(x, m)
        s_n = sd / np.sqrt(n) * np.sqrt(fpc)
        mean[j] = s_n * math.sqrt(2 / math.pi)
        low[j] = s_n * z_lo
        high[j] = s_n * z_hi
    return mean, low, high


def _analytic_sd(x: np.ndarray, moment: str) -> float:
    if x.size < 2:
        return float("nan")
    if moment == "mean":
        return float(np.std(x, ddof=1))
    xc = x - x.mean()
    mu2 = float(np.mean(xc**2))
    mu4 = float(np.mean(xc**4))
    return math.sqrt(max(mu4 - mu2 * mu2, 0.0))  # delta-method sd of the sample variance * sqrt(n)


#: The last curves computed, by their inputs: :func:`required_sample_size` and
#: :func:`sample_size_curve` with the same data, parameters and seed draw the same subsets
#: (each group's generator is seeded by ``seed`` and its key), so a report that asks for both
#: computes each group's curve once. Bounded; results are the same with or without it.
_CURVES: OrderedDict[tuple, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = OrderedDict()
_CURVES_MAX = 4096
_CURVES_LOCK = threading.Lock()


def _curve_arrays(
    x: np.ndarray,
    *,
    moments: tuple[str, ...],
    delta: float,
    n_resamples: int,
    method: str,
    compat: str | None,
    population_size: int | None,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    if method == "analytic":
        mean, low, high = _analytic_curve(x, moments, delta, population_size)
        return mean, low, high, np.zeros(x.size, dtype=bool)
    key = (
        np.ascontiguousarray(x, dtype=float).tobytes(),
        moments,
        float(delta),
        int(n_resamples),
        method,
        compat,
        population_size,
        repr(rng.bit_generator.state),  # the generator as it is before drawing
    )
    with _CURVES_LOCK:
        hit = _CURVES.get(key)
        if hit is not None:
            _CURVES.move_to_end(key)
            return hit
    res = subset_deviations(
        x,
        moments=moments,
        n_resamples=n_resamples,
        replace=(method == "bootstrap"),
        delta=delta,
        compat=compat,
        rng=rng,
    )
    out = (res.mean, res.low, res.high, res.exhaustive)
    for a in out:
        a.flags.writeable = False  # shared between calls
    with _CURVES_LOCK:
        _CURVES[key] = out
        if len(_CURVES) > _CURVES_MAX:
            _CURVES.popitem(last=False)
    return out


def _group_curves(
    groups: Sequence[tuple[tuple, np.ndarray]],
    by: tuple[str, ...],
    seed: int,
    **kw: Any,
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """:func:`_curve_arrays` of every group, on the usable cores (threads).

    Each group draws from its own generator (``seed`` and its key), so the curves are the same
    on any number of threads.
    """
    work = sum(x.size for _, x in groups) * (1 if kw["method"] == "analytic" else kw["n_resamples"])

    def one(group: tuple[tuple, np.ndarray]) -> tuple[np.ndarray, ...]:
        key, x = group
        return _curve_arrays(x, rng=_group_seed(seed, key, by), **kw)

    return parallel_map(one, groups, work=work)


def sample_size_curve(
    units: TableLike,
    *,
    moments: Sequence[str] | str = ("mean", "variance"),
    delta: float = 0.1,
    n_resamples: int = 5000,
    method: str | None = None,
    compat: str | None = None,
    population_size: int | None = None,
    seed: int = 0,
    by: Sequence[str] | str = ("model", "dataset", "metric"),
    variant_factors: Sequence[str] | str | None = None,
    roles: str | Mapping[str, str] | None = None,
    design: Design | str | Path | None = None,
) -> pl.DataFrame:
    """ReliableEval's Delta(n) curve: how far a moment over ``n`` variants is from its full value.

    Parameters
    ----------
    units : polars.DataFrame, polars.LazyFrame, pandas.DataFrame or pyarrow.Table
        Unit table, one row per (model, dataset, variant, run); see :mod:`evalstats.schema`.
        Runs of one variant are averaged first.
    moments : sequence of str, default ('mean', 'variance')
        Moments ``mu_i`` to follow: ``mean`` (mu_1) and ``variance`` (mu_2, population form).
    delta : float, default 0.1
        CI_delta(Delta(n)) is the ``delta/2`` and ``1 - delta/2`` percentiles (ReliableEval's
        delta).
    n_resamples : int, default 5000
        Subsets per size ``n`` when they are not enumerated (pool: enumerated when
        ``C(N, n) <= n_resamples``).
    method : {'bootstrap', 'pool', 'analytic'}, optional
        Default ``'bootstrap'`` (``'pool'`` with ``compat='reliable-eval'``). ``bootstrap``
        (a claim about prompt variants not yet evaluated, as n* is read): the N variants are a sample of a larger perturbation space; samples of size n
        drawn with replacement, deviation from the pool value. ``pool``: the paper's
        definition, subsets of the N observed variants without replacement and the reference is
        the pool (Delta(N) = 0): a claim about the recorded variants only; read as a claim about
        fresh prompts its failure rate is about twice the promised delta/2 (measured in
        docs/methods/moments.md). ``analytic``: normal approximation (see Notes).
    compat : {None, 'reliable-eval'}, default None
        ``'reliable-eval'`` reproduces the published reference script: only ``n <= 2`` enumerated,
        integer-truncated percentiles (and, in :func:`required_sample_size`, a strict ``<``).
    population_size : int, optional
        Size of the perturbation space for the analytic finite-population correction; None
        treats it as infinite.
    seed : int, default 0
        Seed of the random subsets; each group draws from a generator seeded by ``seed`` and a hash of its
        key, so a group's result does not depend on the other groups in the table.
    by : tuple of str, default ('model', 'dataset', 'metric')
        Group columns.
    variant_factors : sequence of str, str or None, default None
        The factor columns whose combinations are the prompt variants. None: the prompt
        dimensions (every factor column except decoding settings such as ``temperature`` and
        serving settings such as ``provider``); ``'all'``: every factor column. Factor columns
        that vary and are not variant factors are held fixed: they are added to the group
        columns (see :mod:`evalstats.factors`).
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
        Group columns (``by``, then any held factor), then ``moment, n, delta_mean, ci_low, ci_high, exhaustive``: one row per
        group, moment and ``n = 1..N``, sorted by group, moment and n.

    Raises
    ------
    ParameterError
        For an unknown moment or method, ``delta`` outside (0, 1), or ``n_resamples < 1``.
    SchemaError
        If a column named in ``by`` is missing.

    See Also
    --------
    required_sample_size : n* read from this curve.

    Notes
    -----
    ``delta_mean`` is the mean of ``|mu_i(S') - mu_i(S_D)|`` over the subsets (Lior et al.,
    Eq. 4-5), ``ci_low``/``ci_high`` its ``delta/2`` and ``1 - delta/2`` percentiles, taken as
    order statistics (the smallest deviation with at least that share of subsets at or below
    it; numpy's ``inverted_cdf``). With few distinct subsets (``C(N, n)`` of them enumerated)
    interpolating would fall between two deviations, below the true quantile: with N = 12 and
    n = 11, one subset in 12 (8.3 %, more than delta/2) can miss by more than a bound read
    between the 11th and 12th deviation. ``compat='reliable-eval'`` interpolates as the
    reference script. Random subsets of all sizes come from the prefixes of ``n_resamples``
    random permutations (cost O(n_resamples * N)). Pool mode is optimistic for n close to N:
    the subsets share most variants with the reference (a finite-population effect), so it
    understates the error against a fresh set of variants; ``bootstrap`` does not.

    ``analytic``: with S the sample sd of the N scores and ``f = (P - n)/(P - 1)`` the
    finite-population factor for a perturbation space of size ``P = population_size`` (1 when
    None), ``sd_n = S * sqrt(f / n)``; ``delta_mean = sd_n * sqrt(2/pi)`` (mean of a half-normal),
    ``ci_low = sd_n * z_{1/2 + delta/4}`` and ``ci_high = sd_n * z_{1 - delta/4}``, the
    ``delta/2`` and ``1 - delta/2`` quantiles of ``|Delta(n)|`` under the normal approximation
    (``P(|Z| > z_{1 - delta/4}) = delta/2``), so that ``ci_high`` bounds the same quantile as
    the subset methods. For the variance the sd of
    ``sqrt(n) * mu_2`` is ``sqrt(mu_4 - mu_2^2)`` (delta method).

    Checked against: a loop implementation of the paper's algorithm in tests/test_resampling.py
    (exact when enumerated) and the Reliable-Eval reference script's choices in
    fixtures/reference/reliable_eval/.

    References
    ----------
    .. [1] Lior et al., "A Recipe for Stochastic LLM Evaluation via Method of Moments"
       (ReliableEval); reference code github.com/SLAB-NLP/Reliable-Eval,
       scripts/post_process/analyze_100_resamplings.py.

    Examples
    --------
    >>> from evalstats.simulate import unit_table
    >>> units = unit_table(n_models=1, n_items=50, n_variants=6, seed=0)
    >>> curve = sample_size_curve(units, moments="mean", method="pool")
    >>> curve.select("n", "exhaustive").rows()[:2]
    [(1, True), (2, True)]
    >>> curve.filter(pl.col("n") == 6)["delta_mean"].item()  # pool: Delta(N) = 0
    0.0
    """
    method = _default_method(method, compat)
    _input = analysis_input(units, roles=roles, design=design)
    units, variant_factors = _input.table, _input.variant_factors(variant_factors)
    moments = _validate(
        moments=moments,
        delta=delta,
        n_resamples=n_resamples,
        method=method,
        compat=compat,
        population_size=population_size,
    )
    by, groups, keys = _groups(units, by, variant_factors)
    rows: list[dict] = []
    curves = _group_curves(
        groups,
        by,
        seed,
        moments=moments,
        delta=delta,
        n_resamples=n_resamples,
        method=method,
        compat=compat,
        population_size=population_size,
    )
    for (key, x), (mean, low, high, exh) in zip(groups, curves):
        N = x.size
        for j, m in enumerate(moments):
            for n in range(1, N + 1):
                rows.append(
                    {
                        **dict(zip(by, key)),
                        "moment": m,
                        "n": n,
                        "delta_mean": float(mean[j, n - 1]),
                        "ci_low": float(low[j, n - 1]),
                        "ci_high": float(high[j, n - 1]),
                        "exhaustive": bool(exh[n - 1]),
                    }
                )
    schema = keys | {
        "moment": pl.String,
        "n": pl.Int64,
        "delta_mean": pl.Float64,
        "ci_low": pl.Float64,
        "ci_high": pl.Float64,
        "exhaustive": pl.Boolean,
    }
    return pl.DataFrame(rows, schema=schema, orient="row").sort([*by, "moment", "n"])


# --- n* ------------------------------------------------------------------------------------------


def _analytic_nstar(
    x: np.ndarray, moment: str, epsilon: float, delta: float, population_size: int | None
) -> int | None:
    N = x.size
    sd = _analytic_sd(x, moment)
    if not math.isfinite(sd) or not (math.isfinite(epsilon) and epsilon > 0):
        return None
    z = NormalDist().inv_cdf(1 - delta / 4)  # P(|Z| > z) = delta/2, as the other methods
    n0 = (z * sd / epsilon) ** 2
    n = n0 if population_size is None else n0 / (1 + (n0 - 1) / population_size)
    n_star = max(1, math.ceil(n - 1e-9))
    return n_star if n_star <= N else None


def _nstar_one(
    x: np.ndarray,
    *,
    moments: tuple[str, ...],
    epsilon: dict[str, float],
    delta: float,
    n_resamples: int,
    method: str,
    compat: str | None,
    population_size: int | None,
    rng: np.random.Generator,
    curve: tuple[np.ndarray, ...] | None = None,
) -> tuple[dict[str, int | None], np.ndarray]:
    """n* per moment plus ``overall``; also the curve's ci_high (moments x N).

    ``curve``: the group's :func:`_curve_arrays` when already computed (with ``rng``).
    """
    if curve is None:
        curve = _curve_arrays(
            x,
            moments=moments,
            delta=delta,
            n_resamples=n_resamples,
            method=method,
            compat=compat,
            population_size=population_size,
            rng=rng,
        )
    high = curve[2]
    out: dict[str, int | None] = {}
    for j, m in enumerate(moments):
        eps = epsilon[m]
        if method == "analytic":
            out[m] = _analytic_nstar(x, m, eps, delta, population_size)
        elif not (math.isfinite(eps) and eps > 0):
            out[m] = None
        elif compat == "reliable-eval":
            out[m] = first_reached(high[j], eps, strict=True)
        else:
            n_star = last_crossing(high[j], eps)
            # pool: Delta(N) = 0 by construction, so n = N alone qualifying says nothing
            if method == "pool" and n_star == x.size:
                n_star = None
            out[m] = n_star
    vals = list(out.values())
    out["overall"] = None if any(v is None for v in vals) else max(vals)  # type: ignore[type-var]
    return out, high


def required_sample_size(
    units: TableLike,
    *,
    epsilon: float | None = None,
    delta: float = 0.1,
    moments: Sequence[str] | str = ("mean", "variance"),
    n_resamples: int = 5000,
    method: str | None = None,
    compat: str | None = None,
    population_size: int | None = None,
    seed: int = 0,
    by: Sequence[str] | str = ("model", "dataset", "metric"),
    relative_epsilon: float | None = None,
    relative_to: str = "range",
    variant_factors: Sequence[str] | str | None = None,
    roles: str | Mapping[str, str] | None = None,
    design: Design | str | Path | None = None,
) -> pl.DataFrame:
    """ReliableEval's n*: the fewest prompt variants whose moments are within ``epsilon``.

    Parameters
    ----------
    units : polars.DataFrame, polars.LazyFrame, pandas.DataFrame or pyarrow.Table
        Unit table, one row per (model, dataset, variant, run); see :mod:`evalstats.schema`.
    epsilon : float, optional
        Tolerated absolute error of each moment (ReliableEval's epsilon), in the metric's units
        (squared units for the variance); a given value applies to every moment, as in the
        paper. Default: 0.01 for a metric on [0, 1] (declared so, or undeclared with every
        score in [0, 1]), with the variance's tolerance on the sd scale, ``2 * sd * 0.01``
        (``sd`` the group's across-variant standard deviation; the paper's 0.01 on the
        variance itself is vacuous on accuracies, see docs/methods/moments.md); for any
        other metric give ``epsilon`` or ``relative_epsilon``.
    delta : float, default 0.1
        CI_delta uses the ``delta/2`` and ``1 - delta/2`` percentiles of Delta(n).
    moments, n_resamples, method, compat, population_size, seed, by, variant_factors
        As in :func:`sample_size_curve`.
    relative_epsilon : float, optional
        Epsilon as a share ``r`` in (0, 1) of a scale ``s`` of the metric: ``r * s`` for the
        mean, ``r * s**2`` for the variance. Exclusive with ``epsilon``.
    relative_to : {'range', 'sd'}, default 'range'
        ``s`` for ``relative_epsilon``: the metric's declared range (``high - low``), or each
        group's across-variant standard deviation.
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
        Group columns, then ``moment, n_star, n_available, reached, population, vacuous,
        epsilon, delta, method, seed, epsilon_rule``; one row per group and moment plus a row
        ``moment == "overall"`` (the max over the moments; its ``epsilon`` is null when the
        moments' differ). ``n_star`` is null and ``reached`` false when no ``n <= N``
        qualifies (in pool mode also when only ``n = N`` does). ``population`` says what the
        claim is about: ``'recorded'`` (pool: subsets of the N recorded variants) or
        ``'unseen'`` (bootstrap, analytic: fresh variants from the perturbation space the N
        were drawn from). ``vacuous`` is true when the moment itself (over all N variants) is
        within its ``epsilon`` of 0, so that any estimate near 0 meets the tolerance and n*
        says little (``overall``: any moment vacuous). ``epsilon`` is the moment's epsilon in
        metric units and ``epsilon_rule`` says where it came from.

    Raises
    ------
    ParameterError
        For parameters out of their domain, or no ``epsilon`` for a metric not on [0, 1].
    SchemaError
        If a column named in ``by`` is missing.

    See Also
    --------
    sample_size_curve : The Delta(n) curve that ``n_star`` is read from.
    sample_size_uncertainty : Bootstrap distribution of n*.
    reference_model_check : The paper's Step 3 (a reference model's n* as a proxy).

    Notes
    -----
    ``n*_i = min{n : CI_delta(Delta_i(m)).high <= epsilon for every m >= n}`` (the bound stays
    below epsilon from n* on; the first crossing would stop where a moment that is small at
    n = 1 dips under epsilon before rising above it again) and ``n* = max_i n*_i``. Since the
    upper bound is the ``1 - delta/2`` quantile, n* claims ``P(|Delta(n*)| > epsilon) <=
    delta/2`` for each method.

    Pool mode: Delta(N) = 0 by construction, so an n* equal to N (only the full set
    qualifies) is reported as not reached. Its claim is about the N recorded variants: a
    random n*-subset of them is within epsilon of their mean. It says nothing about prompts
    that were not recorded; for those use ``method='bootstrap'`` (which treats the N
    variants as a sample of the perturbation space) or ``'analytic'``. In a super-population
    simulation (tests/test_resampling.py) pool n* falls short on fresh variants far more
    often than delta while the bootstrap and analytic n* hold.

    With ``compat='reliable-eval'`` n* is the first crossing with a strict comparison
    (``high < epsilon``) as in the reference script, which also only reports the mean's n*
    and fails (IndexError) when no n qualifies; here that case is a null ``n_star`` with
    ``reached = False``. ``analytic``: ``n0 = (z_{1-delta/4} S / epsilon)^2``, corrected to
    ``n0 / (1 + (n0 - 1)/P)`` when ``population_size = P`` is given, rounded up.

    Checked against: fixtures/reference/reliable_eval/ (loop re-implementation of the reference
    script's choices) and a super-population simulation (tests/test_resampling.py).

    Examples
    --------
    >>> from evalstats.simulate import unit_table
    >>> units = unit_table(n_models=2, n_items=100, n_variants=30, prompt_sd=0.03, seed=0)
    >>> out = required_sample_size(units, epsilon=0.01, moments="mean", n_resamples=2000)
    >>> out.select("model", "moment", "n_star", "reached").rows()  # fresh prompts: 30 are too few
    [('m0', 'mean', None, False), ('m0', 'overall', None, False), ('m1', 'mean', None, False), ('m1', 'overall', None, False)]
    >>> pool = required_sample_size(units, epsilon=0.01, moments="mean", n_resamples=2000,
    ...                             method="pool")  # a subset of the 30 recorded prompts
    >>> pool.select("model", "moment", "n_star", "reached").rows()
    [('m0', 'mean', 25, True), ('m0', 'overall', 25, True), ('m1', 'mean', 26, True), ('m1', 'overall', 26, True)]
    """
    method = _default_method(method, compat)
    _input = analysis_input(units, roles=roles, design=design)
    units, variant_factors = _input.table, _input.variant_factors(variant_factors)
    moments = _validate(
        moments=moments,
        delta=delta,
        n_resamples=n_resamples,
        method=method,
        compat=compat,
        epsilon=epsilon,
        population_size=population_size,
    )
    _validate_epsilon(epsilon, relative_epsilon, relative_to)
    by, groups, keys = _groups(units, by, variant_factors)
    metrics = _Metrics(units, by)
    rows = []
    curves = _group_curves(
        groups,
        by,
        seed,
        moments=moments,
        delta=delta,
        n_resamples=n_resamples,
        method=method,
        compat=compat,
        population_size=population_size,
    )
    for (key, x), curve in zip(groups, curves):
        eps, rule = _epsilons(
            x, metrics, moments, epsilon, relative_epsilon, relative_to, compat, key=key, by=by
        )
        ns, _ = _nstar_one(
            x,
            moments=moments,
            epsilon=eps,
            delta=delta,
            n_resamples=n_resamples,
            method=method,
            compat=compat,
            population_size=population_size,
            rng=_group_seed(seed, key, by),
            curve=curve,
        )
        vacuous = _vacuity(x, eps, moments)
        for m, v in ns.items():
            rows.append(
                {
                    **dict(zip(by, key)),
                    "moment": m,
                    "n_star": v,
                    "n_available": x.size,
                    "reached": v is not None,
                    "population": POPULATION[method],
                    "vacuous": vacuous[m],
                    "epsilon": _epsilon_of(eps, m),
                    "delta": float(delta),
                    "method": _method_label(method, compat),
                    "seed": int(seed),
                    "epsilon_rule": rule,
                }
            )
    return _nstar_frame(rows, by, keys)


def _vacuity(x: np.ndarray, eps: dict[str, float], moments: Sequence[str]) -> dict[str, bool]:
    """Per moment (and ``overall``): the moment over all N variants is within its epsilon of 0.

    Then any estimate near 0 meets the tolerance: for the variance, one variant (variance 0)
    is already within epsilon, so an n* of 1 says nothing about how many prompts are needed.
    """
    out = {m: bool(math.isfinite(eps[m]) and abs(_moment_value(x, m)) <= eps[m]) for m in moments}
    out["overall"] = any(out.values())
    return out


def _moment_value(x: np.ndarray, moment: str) -> float:
    """The moment over all N variants (mean, or population variance as Delta uses)."""
    return float(np.mean(x)) if moment == "mean" else float(np.var(x))


def _epsilon_of(eps: dict[str, float], moment: str) -> float | None:
    """A moment's epsilon; for ``overall``, the common one (None when the moments differ)."""
    if moment in eps:
        return float(eps[moment])
    values = set(eps.values())
    return float(values.pop()) if len(values) == 1 else None


def _method_label(method: str, compat: str | None) -> str:
    return f"{method}+{compat}" if compat else method


def _nstar_frame(rows: list[dict], by: tuple[str, ...], keys: dict) -> pl.DataFrame:
    schema = keys | {
        "moment": pl.String,
        "n_star": pl.Int64,
        "n_available": pl.Int64,
        "reached": pl.Boolean,
        "population": pl.String,
        "vacuous": pl.Boolean,
        "epsilon": pl.Float64,
        "delta": pl.Float64,
        "method": pl.String,
        "seed": pl.Int64,
        "epsilon_rule": pl.String,
    }
    return pl.DataFrame(rows, schema=schema, orient="row").sort([*by, "moment"])


# --- uncertainty of n* ---------------------------------------------------------------------------


def sample_size_uncertainty(
    units: TableLike,
    *,
    epsilon: float | None = None,
    delta: float = 0.1,
    moments: Sequence[str] | str = ("mean", "variance"),
    n_bootstrap: int = 200,
    confidence_level: float = 0.9,
    n_resamples: int = 1000,
    method: str | None = None,
    compat: str | None = None,
    population_size: int | None = None,
    seed: int = 0,
    by: Sequence[str] | str = ("model", "dataset", "metric"),
    relative_epsilon: float | None = None,
    relative_to: str = "range",
    variant_factors: Sequence[str] | str | None = None,
    roles: str | Mapping[str, str] | None = None,
    design: Design | str | Path | None = None,
) -> pl.DataFrame:
    """Bootstrap distribution of n*: resample the N variants with replacement and recompute n*.

    Parameters
    ----------
    units : polars.DataFrame, polars.LazyFrame, pandas.DataFrame or pyarrow.Table
        Unit table; see :mod:`evalstats.schema`.
    epsilon, delta, moments, method, compat, population_size, by, relative_epsilon, relative_to
        As in :func:`required_sample_size` (and ``variant_factors`` as in
        :func:`sample_size_curve`) (a relative epsilon's sd is the data's, not each
        replicate's).
    n_bootstrap : int, default 200
        Bootstrap replicates of the variant set.
    confidence_level : float, default 0.9
        Level of the percentile interval of n*.
    n_resamples : int, default 1000
        Subsets per size inside each replicate.
    seed : int, default 0
        Seed; each group's generator is seeded by ``seed`` and a hash of its key.
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
        Group columns, then ``moment, n_star`` (on the data), ``n_star_median, ci_low,
        ci_high`` (over replicates), ``share_reached``, ``confidence_level, n_available,
        n_bootstrap, epsilon, delta, method, seed, epsilon_rule``.

    Notes
    -----
    A replicate in which n* is not reached counts as ``+inf``; a median or bound that falls on
    such replicates is null (not reached).

    Examples
    --------
    >>> from evalstats.simulate import unit_table
    >>> units = unit_table(n_models=1, n_items=100, n_variants=20, prompt_sd=0.02, seed=0)
    >>> out = sample_size_uncertainty(units, epsilon=0.02, moments="mean", n_bootstrap=20,
    ...                               n_resamples=300, method="pool")
    >>> out.select("moment", "n_star", "n_star_median", "ci_low", "ci_high").rows()[0]
    ('mean', 11, 11.0, 6.0, 13.0)
    """
    method = _default_method(method, compat)
    _input = analysis_input(units, roles=roles, design=design)
    units, variant_factors = _input.table, _input.variant_factors(variant_factors)
    moments = _validate(
        moments=moments,
        delta=delta,
        n_resamples=n_resamples,
        method=method,
        compat=compat,
        epsilon=epsilon,
        population_size=population_size,
    )
    if not 0 < confidence_level < 1:
        raise ParameterError(f"`confidence_level` must be in (0, 1), got {confidence_level!r}.")
    if not isinstance(n_bootstrap, (int, np.integer)) or n_bootstrap < 1:
        raise ParameterError(f"`n_bootstrap` must be a positive integer, got {n_bootstrap!r}.")
    _validate_epsilon(epsilon, relative_epsilon, relative_to)
    by, groups, keys = _groups(units, by, variant_factors)
    metrics = _Metrics(units, by)
    rows = []
    a = (1 - confidence_level) / 2
    for key, x in groups:
        rng = _group_seed(seed, key, by)
        eps, rule = _epsilons(
            x, metrics, moments, epsilon, relative_epsilon, relative_to, compat, key=key, by=by
        )
        kw = dict(
            moments=moments,
            epsilon=eps,
            delta=delta,
            n_resamples=n_resamples,
            method=method,
            compat=compat,
            population_size=population_size,
        )
        point, _ = _nstar_one(x, rng=rng, **kw)
        vacuous = _vacuity(x, eps, moments)
        reps: dict[str, list[float]] = {m: [] for m in point}
        for _ in range(n_bootstrap):
            xb = x[rng.integers(0, x.size, size=x.size)]
            nb, _ = _nstar_one(xb, rng=rng, **kw)
            for m, v in nb.items():
                reps[m].append(math.inf if v is None else float(v))
        for m, vals in reps.items():
            arr = np.asarray(vals)
            qs = np.quantile(arr, [0.5, a, 1 - a], method="inverted_cdf")
            med, lo, hi = (float(q) if math.isfinite(q) else None for q in qs)
            rows.append(
                {
                    **dict(zip(by, key)),
                    "moment": m,
                    "n_star": point[m],
                    "n_star_median": med,
                    "ci_low": lo,
                    "ci_high": hi,
                    "share_reached": float(np.isfinite(arr).mean()),
                    "vacuous": vacuous[m],
                    "confidence_level": float(confidence_level),
                    "n_available": x.size,
                    "n_bootstrap": int(n_bootstrap),
                    "epsilon": _epsilon_of(eps, m),
                    "delta": float(delta),
                    "method": _method_label(method, compat),
                    "seed": int(seed),
                    "epsilon_rule": rule,
                }
            )
    schema = keys | {
        "moment": pl.String,
        "n_star": pl.Int64,
        "n_star_median": pl.Float64,
        "ci_low": pl.Float64,
        "ci_high": pl.Float64,
        "share_reached": pl.Float64,
        "vacuous": pl.Boolean,
        "confidence_level": pl.Float64,
        "n_available": pl.Int64,
        "n_bootstrap": pl.Int64,
        "epsilon": pl.Float64,
        "delta": pl.Float64,
        "method": pl.String,
        "seed": pl.Int64,
        "epsilon_rule": pl.String,
    }
    return pl.DataFrame(rows, schema=schema, orient="row").sort([*by, "moment"])


# --- reference-model proxy (Step 3) --------------------------------------------------------------


def reference_model_check(
    units: TableLike,
    *,
    reference_model: str,
    epsilon: float | None = None,
    delta: float = 0.1,
    moments: Sequence[str] | str = ("mean", "variance"),
    n_resamples: int = 5000,
    method: str | None = None,
    compat: str | None = None,
    population_size: int | None = None,
    seed: int = 0,
    by: Sequence[str] | str = ("model", "dataset", "metric"),
    relative_epsilon: float | None = None,
    relative_to: str = "range",
    variant_factors: Sequence[str] | str | None = None,
    roles: str | Mapping[str, str] | None = None,
    design: Design | str | Path | None = None,
) -> pl.DataFrame:
    """ReliableEval's Step 3: check whether a reference model's n* suffices for the others.

    Parameters
    ----------
    units : polars.DataFrame, polars.LazyFrame, pandas.DataFrame or pyarrow.Table
        Unit table; see :mod:`evalstats.schema`. ``by`` must contain ``model``.
    reference_model : str
        The proxy model whose n* would be used for all models.
    epsilon, delta, moments, n_resamples, method, compat, population_size, seed, by
        As in :func:`required_sample_size`.
    relative_epsilon, relative_to, variant_factors
        As in :func:`required_sample_size`.
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
        Group columns, then ``moment, n_star`` (the model's own), ``reference_model,
        reference_n_star``, ``proxy_sufficient`` (reference n* >= own n*; false when the model's
        n* is not reached, null when the reference's is not), ``ci_high_at_reference`` (the
        model's CI upper bound at the reference n*), ``within_epsilon_at_reference``,
        ``vacuous`` (the model's own moment within epsilon of 0; see
        :func:`required_sample_size`), ``epsilon, delta, method, seed, epsilon_rule``.

    Raises
    ------
    SchemaError
        If ``by`` lacks ``model`` or the reference model is absent from a group.

    Examples
    --------
    >>> from evalstats.simulate import unit_table
    >>> units = unit_table(n_models=2, n_items=100, n_variants=20, prompt_sd=0.03, seed=0)
    >>> out = reference_model_check(units, reference_model="m0", epsilon=0.02,
    ...                             moments="mean", n_resamples=500, method="pool")
    >>> cols = ("model", "moment", "n_star", "reference_n_star", "proxy_sufficient")
    >>> out.filter(pl.col("moment") == "mean").select(cols).rows()
    [('m0', 'mean', 13, 13, True), ('m1', 'mean', 14, 13, False)]
    """
    method = _default_method(method, compat)
    _input = analysis_input(units, roles=roles, design=design)
    units, variant_factors = _input.table, _input.variant_factors(variant_factors)
    moments = _validate(
        moments=moments,
        delta=delta,
        n_resamples=n_resamples,
        method=method,
        compat=compat,
        epsilon=epsilon,
        population_size=population_size,
    )
    _validate_epsilon(epsilon, relative_epsilon, relative_to)
    by, groups, keys = _groups(units, by, variant_factors)
    if "model" not in by:
        raise SchemaError(f"`by` must contain 'model' for the reference-model check, got {by!r}.")
    metrics = _Metrics(units, by)
    mi = by.index("model")
    results = {}
    for key, x in groups:
        eps, rule = _epsilons(
            x, metrics, moments, epsilon, relative_epsilon, relative_to, compat, key=key, by=by
        )
        ns, high = _nstar_one(
            x,
            moments=moments,
            epsilon=eps,
            delta=delta,
            n_resamples=n_resamples,
            method=method,
            compat=compat,
            population_size=population_size,
            rng=_group_seed(seed, key, by),
        )
        results[key] = (ns, high, x.size, eps, rule, _vacuity(x, eps, moments))
    models = {k[mi] for k in results}
    if reference_model not in models:
        raise SchemaError(
            f"`reference_model` {reference_model!r} is not a model of the unit table "
            f"(models: {', '.join(sorted(map(str, models)))})."
        )
    rows = []
    for key, (ns, high, N, eps, rule, vacuous) in results.items():
        rest = key[:mi] + key[mi + 1 :]
        ref_key = key[:mi] + (reference_model,) + key[mi + 1 :]
        if ref_key not in results:
            raise SchemaError(
                f"the reference model {reference_model!r} has no units for "
                f"{dict(zip([b for b in by if b != 'model'], rest))!r}."
            )
        ref_ns = results[ref_key][0]
        for j, m in enumerate([*moments, "overall"]):
            own, ref = ns[m], ref_ns[m]
            strict = compat == "reliable-eval"
            within = None
            if ref is None:
                sufficient, at_ref = None, None
            else:
                sufficient = own is not None and ref >= own
                if ref <= N:
                    cols = range(len(moments)) if m == "overall" else [j]
                    highs = [float(high[k, ref - 1]) for k in cols]
                    at_ref = max(highs)
                    within = all(
                        (h < eps[moments[k]]) if strict else (h <= eps[moments[k]])
                        for h, k in zip(highs, cols)
                    )
                else:
                    at_ref = None
            rows.append(
                {
                    **dict(zip(by, key)),
                    "moment": m,
                    "n_star": own,
                    "reference_model": reference_model,
                    "reference_n_star": ref,
                    "proxy_sufficient": sufficient,
                    "ci_high_at_reference": at_ref,
                    "within_epsilon_at_reference": within,
                    "vacuous": vacuous[m],
                    "epsilon": _epsilon_of(eps, m),
                    "delta": float(delta),
                    "method": _method_label(method, compat),
                    "seed": int(seed),
                    "epsilon_rule": rule,
                }
            )
    schema = keys | {
        "moment": pl.String,
        "n_star": pl.Int64,
        "reference_model": pl.String,
        "reference_n_star": pl.Int64,
        "proxy_sufficient": pl.Boolean,
        "ci_high_at_reference": pl.Float64,
        "within_epsilon_at_reference": pl.Boolean,
        "vacuous": pl.Boolean,
        "epsilon": pl.Float64,
        "delta": pl.Float64,
        "method": pl.String,
        "seed": pl.Int64,
        "epsilon_rule": pl.String,
    }
    return pl.DataFrame(rows, schema=schema, orient="row").sort([*by, "moment"])
