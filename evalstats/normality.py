"""Normality of run accuracies: Lilliefors, Shapiro-Wilk, Anderson-Darling and plain KS tests.

A configuration run N times gives N run accuracies. :func:`run_normality` asks whether those N
numbers look like a sample from *some* normal distribution (mean and sd estimated from them);
:func:`run_distribution` summarises them (mean, median, quantiles) for the histogram of
:func:`evalstats.plots.plot_run_distribution`.

Both accept a unit table (the ``score`` of each run of a group), an observation table (aggregated
to units first) or a stability table (its ``acc_per_run`` list, one value per run).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from evalstats._kernels import is_constant
from evalstats.design._frames import analysis_input
from evalstats.errors import DegenerateDataWarning, ParameterError, SchemaError
from evalstats.schema import DEFAULT_METRIC, as_lazy, validate_by, validate_units

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from evalstats._frames import TableLike
    from evalstats.design import Design

__all__ = ["METHODS", "run_distribution", "run_normality"]

#: Test names accepted by ``method`` (``"all"`` runs every one), in output order.
METHODS: tuple[str, ...] = ("lilliefors", "shapiro", "anderson", "ks")

#: Label written in the ``method`` column for each test.
_LABELS = {
    "lilliefors": "lilliefors",
    "shapiro": "shapiro",
    "anderson": "anderson",
    "ks": "ks_uncorrected",
}

#: Fewest values each test accepts (below it the row is NaN with a DegenerateDataWarning).
_MIN_N = {"lilliefors": 4, "shapiro": 3, "anderson": 3, "ks": 2}

_DEFAULT_BY = ("model", "dataset", "metric", "variant")


def _stability_table(data: object) -> bool:
    """Whether ``data`` is a stability table (run accuracies as lists), not scores to read."""
    return "acc_per_run" in as_lazy(data).collect_schema().names()


def _values_frame(
    data: pl.DataFrame | pl.LazyFrame, by: Sequence[str] | str
) -> tuple[pl.DataFrame, tuple[str, ...]]:
    """Long frame ``(*by, __value)`` of run accuracies, from a stability or a unit table."""
    lf = as_lazy(data)
    names = lf.collect_schema().names()
    if "acc_per_run" in names:
        if "metric" not in names:  # a stability table of an older version: one metric
            lf = lf.with_columns(pl.lit(DEFAULT_METRIC, dtype=pl.String).alias("metric"))
        by = validate_by(names, by, table="stability table")
        dtype = lf.collect_schema()["acc_per_run"]
        if not isinstance(dtype, (pl.List, pl.Array)):
            raise SchemaError(
                f"column 'acc_per_run' of the stability table must be a list of floats, got {dtype}."
            )
        long = (
            lf.select(*by, pl.col("acc_per_run").alias("__value"))
            .explode("__value")
            .with_columns(pl.col("__value").cast(pl.Float64))
        )
    else:
        units = validate_units(lf)
        by = validate_by(units.collect_schema().names(), by)
        long = (
            units.select(*by, pl.col("run"), pl.col("score").alias("__value"))
            .sort([*by, "run"], nulls_last=True)
            .drop("run")
        )
    frame = long.collect()
    return frame, by


def _groups(frame: pl.DataFrame, by: tuple[str, ...]) -> list[tuple[tuple, np.ndarray]]:
    """``[(key, values)]`` sorted by key; null or NaN values are dropped."""
    if not by:
        return [((), _clean(frame["__value"]))]
    agg = (
        frame.group_by(list(by), maintain_order=True)
        .agg(pl.col("__value"))
        .sort(list(by), nulls_last=True)
    )
    return [(tuple(r[: len(by)]), _clean(r[-1])) for r in agg.iter_rows()]


def _clean(values: object) -> np.ndarray:
    x = np.asarray(values.to_list() if hasattr(values, "to_list") else values, dtype=float)
    return x[np.isfinite(x)]


def _test(x: np.ndarray, method: str) -> tuple[float, float]:
    """``(statistic, pvalue)`` of one normality test on ``x`` (numpy in, floats out)."""
    import scipy.stats as st

    if method == "lilliefors":
        from statsmodels.stats.diagnostic import lilliefors

        stat, p = lilliefors(x, dist="norm", pvalmethod="table")
    elif method == "shapiro":
        stat, p = st.shapiro(x)
    elif method == "anderson":
        stat = _anderson_a2(x)
        p = _anderson_pvalue(stat, x.size)
    else:  # plain KS against N(mean, sd) with both estimated from x: conservative
        res = st.kstest(x, "norm", args=(float(np.mean(x)), float(np.std(x, ddof=1))))
        stat, p = res.statistic, res.pvalue
    return float(stat), float(p)


def _anderson_a2(x: np.ndarray) -> float:
    """Anderson-Darling A² against the fitted normal, on the log scale as ``scipy.stats.anderson``.

    A² = -n - Σ (2i - 1)/n [log Φ(w_(i)) + log(1 - Φ(w_(n+1-i)))] with w = (x - x̄)/s (ddof 1).
    ``log Φ`` and ``log(1 - Φ)`` come from ``norm.logcdf`` / ``norm.logsf``, so a value far out
    in a tail (most values tied at 0 and a few far away) gives a large finite A², never the
    ``log(0) = -inf`` of evaluating Φ first.
    """
    import scipy.stats as st

    y = np.sort(x)
    n = y.size
    s = float(np.std(y, ddof=1))
    if not s > 0:
        return float("nan")
    w = (y - float(np.mean(y))) / s
    i = np.arange(1, n + 1)
    total = np.sum((2 * i - 1.0) / n * (st.norm.logcdf(w) + st.norm.logsf(w[::-1])))
    return float(-n - total)


def _anderson_pvalue(a2: float, n: int) -> float:
    """D'Agostino and Stephens' p-value of A² for estimated mean and sd (as statsmodels)."""
    if not np.isfinite(a2):
        return float("nan")
    a = a2 * (1 + 0.75 / n + 2.25 / n**2)
    if a < 0.2:
        p = 1 - np.exp(-13.436 + 101.14 * a - 223.73 * a**2)
    elif a < 0.34:
        p = 1 - np.exp(-8.318 + 42.796 * a - 59.938 * a**2)
    elif a < 0.6:
        p = np.exp(0.9177 - 4.279 * a - 1.38 * a**2)
    elif a <= 13:
        p = np.exp(1.2937 - 5.709 * a + 0.0186 * a**2)
    else:
        p = 0.0  # below 4.95e-31
    return float(p)


def _validate_method(method: str | Sequence[str]) -> list[str]:
    if isinstance(method, str):
        method = list(METHODS) if method == "all" else [method]
    out = []
    for m in method:
        m = "ks" if m == "ks_uncorrected" else m
        if m not in METHODS:
            raise ParameterError(
                f"`method` must be 'all' or one of {', '.join(map(repr, METHODS))}, got {m!r}."
            )
        if m not in out:
            out.append(m)
    return out


def run_normality(
    data: TableLike,
    *,
    by: Sequence[str] | str = _DEFAULT_BY,
    method: str | Sequence[str] = "lilliefors",
    low_power_n: int = 20,
    roles: str | Mapping[str, str] | None = None,
    design: Design | str | Path | None = None,
) -> pl.DataFrame:
    r"""Test whether the run accuracies of each group look normally distributed.

    Parameters
    ----------
    data : polars.DataFrame, polars.LazyFrame, pandas.DataFrame or pyarrow.Table
        A unit table (one row per (model, dataset, variant, run); the values are the ``score``
        of each run), an observation table (aggregated to units first), or a stability table
        with an ``acc_per_run`` list column (one accuracy per run).
    by : tuple of str, default ('model', 'dataset', 'metric', 'variant')
        Columns that define a group; one test per group and method.
    method : {'lilliefors', 'shapiro', 'anderson', 'ks', 'all'} or sequence, default 'lilliefors'
        The test(s): Lilliefors-corrected Kolmogorov-Smirnov, Shapiro-Wilk, Anderson-Darling,
        or the plain one-sample KS against a normal with the sample's mean and sd (written
        ``ks_uncorrected`` in the output because it ignores that the parameters were estimated).
    low_power_n : int, default 20
        Groups with fewer values than this get ``low_power = True``.
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
        One row per group and method, sorted by the group keys then ``method`` in the order
        above, with the ``by`` columns and ``method``, ``statistic``, ``pvalue``, ``n``,
        ``mean``, ``sd`` (ddof=1), ``low_power`` and ``uncorrected`` (True for the plain KS).

    Raises
    ------
    SchemaError
        If a column in ``by`` is missing, or the table is neither a unit nor a stability table.
    ParameterError
        If ``method`` or ``low_power_n`` is invalid.

    Warns
    -----
    DegenerateDataWarning
        For a group whose values are constant or fewer than the test needs (4 for Lilliefors,
        3 for Shapiro-Wilk and Anderson-Darling, 2 for KS); its statistic and p-value are NaN.

    See Also
    --------
    run_distribution : Mean, median and quantiles of the same values.

    Notes
    -----
    Each test compares the N values with the normal distribution whose mean and standard
    deviation (ddof=1) are estimated from the same N values:

    - ``lilliefors``: :math:`D = \sup_x |F_N(x) - \Phi((x - \bar x)/s)|`, with the p-value from
      Lilliefors' null distribution for estimated parameters (statsmodels
      ``lilliefors(x, pvalmethod='table')``, which reports p-values within [0.001, 0.99]).
    - ``shapiro``: Shapiro-Wilk W (``scipy.stats.shapiro``).
    - ``anderson``: Anderson-Darling :math:`A^2`, computed on the log scale (``norm.logcdf`` and
      ``norm.logsf``) as ``scipy.stats.anderson`` does, so it stays finite when most values are
      tied and a few lie far out (Φ evaluated first rounds to 1 there and its log to -inf), with
      the D'Agostino-Stephens p-value for estimated parameters (the formula of statsmodels
      ``normal_ad``).
    - ``ks`` (``ks_uncorrected``): the same D as Lilliefors, but its p-value is taken from the
      Kolmogorov distribution for a *fully specified* normal (``scipy.stats.kstest``). Because
      the normal was fitted to the data, D is systematically small and this p-value is far too
      large: the test almost never rejects (it is conservative). It is reported to show that.

    Testing raw accuracies against the *standard* normal N(0, 1), as the llm-stability paper
    did, is wrong: accuracies lie in [0, 1] around their mean with a tiny sd, so any sample of
    them is far from N(0, 1) and the test "rejects normality" whatever their shape. With N = 5
    runs every test here has little power (``low_power``): a large p-value is no evidence of
    normality. See docs/methods/stability.md.

    Checked against: scipy 1.17 / statsmodels 0.15 values on the authors' run accuracies and
    simulated samples, fixtures/reference/normality/ (see its PROVENANCE).

    References
    ----------
    .. [1] Lilliefors, H. W. (1967). On the Kolmogorov-Smirnov test for normality with mean and
       variance unknown. JASA 62(318), 399-402.
    .. [2] Atil, B. et al. (2024). LLM Stability: A detailed analysis with some surprises.

    Examples
    --------
    >>> from evalstats.simulate import unit_table
    >>> units = unit_table(n_models=1, n_items=200, n_variants=1, n_runs=30,
    ...                    instability=0.3, seed=1)
    >>> res = run_normality(units, method="all")
    >>> res.select("method", "n", "low_power").rows()
    [('lilliefors', 30, False), ('shapiro', 30, False), ('anderson', 30, False), ('ks_uncorrected', 30, False)]
    >>> [round(p, 4) for p in res["pvalue"]]
    [0.3855, 0.202, 0.2513, 0.7742]
    """
    if roles or design is not None or not _stability_table(data):
        data = analysis_input(data, roles=roles, design=design).table
    methods = _validate_method(method)
    if (
        isinstance(low_power_n, bool)
        or not isinstance(low_power_n, (int, np.integer))
        or low_power_n < 0
    ):
        raise ParameterError(f"`low_power_n` must be a non-negative integer, got {low_power_n!r}.")
    frame, by = _values_frame(data, by)
    rows = []
    for key, x in _groups(frame, by):
        n = int(x.size)
        mean = float(np.mean(x)) if n else float("nan")
        sd = float(np.std(x, ddof=1)) if n > 1 else float("nan")
        # equal accuracies computed as different float sums have an sd of 1e-16, on which
        # every test "rejects" (Lilliefors D = 0.83): constant within a relative tolerance
        constant = n > 1 and is_constant(x)
        if constant:
            sd = 0.0
        for m in methods:
            where = ", ".join(f"{b}={k!r}" for b, k in zip(by, key)) or "the table"
            if n < _MIN_N[m]:
                warnings.warn(
                    f"{where}: {n} run values, but the {m} test needs at least {_MIN_N[m]}; "
                    "statistic and p-value are NaN.",
                    DegenerateDataWarning,
                    stacklevel=2,
                )
                stat = p = float("nan")
            elif constant:
                warnings.warn(
                    f"{where}: all {n} run values are equal up to rounding ({mean!r}); "
                    "normality tests are "
                    "undefined, statistic and p-value are NaN.",
                    DegenerateDataWarning,
                    stacklevel=2,
                )
                stat = p = float("nan")
            else:
                stat, p = _test(x, m)
            rows.append((*key, _LABELS[m], stat, p, n, mean, sd, n < low_power_n, m == "ks"))
    schema = {b: frame.schema[b] for b in by}
    schema.update(
        method=pl.String,
        statistic=pl.Float64,
        pvalue=pl.Float64,
        n=pl.Int64,
        mean=pl.Float64,
        sd=pl.Float64,
        low_power=pl.Boolean,
        uncorrected=pl.Boolean,
    )
    return pl.DataFrame(rows, schema=schema, orient="row")


def run_distribution(
    data: TableLike,
    *,
    by: Sequence[str] | str = _DEFAULT_BY,
    quantiles: tuple[float, float] = (0.05, 0.95),
    roles: str | Mapping[str, str] | None = None,
    design: Design | str | Path | None = None,
) -> pl.DataFrame:
    """Summarise the distribution of run accuracies of each group (the paper's Figure 2).

    Parameters
    ----------
    data : polars.DataFrame, polars.LazyFrame, pandas.DataFrame or pyarrow.Table
        A unit table, an observation table or a stability table, as for :func:`run_normality`.
    by : tuple of str, default ('model', 'dataset', 'metric', 'variant')
        Columns that define a group.
    quantiles : tuple of two floats, default (0.05, 0.95)
        Lower and upper quantile levels, each in [0, 1].
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
        One row per group, sorted by the group keys, with the ``by`` columns and ``n``,
        ``values`` (list of run accuracies, in run order), ``mean``, ``median``, ``sd`` (ddof=1),
        ``min``, ``max``, ``q_low``, ``q_high`` (the quantiles) and ``q_low_level``,
        ``q_high_level`` (their levels).

    Raises
    ------
    SchemaError
        If a column in ``by`` is missing.
    ParameterError
        If ``quantiles`` is not two increasing levels in [0, 1].

    See Also
    --------
    run_normality : Normality tests on the same values.

    Notes
    -----
    Quantiles use linear interpolation between order statistics (``numpy.quantile``'s default,
    Hyndman-Fan type 7, as R's ``quantile``). Null or NaN accuracies are dropped.

    Checked against: ``numpy.mean``, ``numpy.median`` and ``numpy.quantile`` in
    tests/test_normality.py.

    Examples
    --------
    >>> from evalstats.simulate import unit_table
    >>> units = unit_table(n_models=1, n_items=200, n_variants=1, n_runs=30,
    ...                    instability=0.3, seed=1)
    >>> d = run_distribution(units)
    >>> d.select("n", "mean", "median", "q_low", "q_high").rows()
    [(30, 0.5673333333333332, 0.565, 0.54225, 0.59)]
    """
    if roles or design is not None or not _stability_table(data):
        data = analysis_input(data, roles=roles, design=design).table
    q = tuple(quantiles)
    if len(q) != 2 or not all(0 <= v <= 1 for v in q) or not q[0] < q[1]:
        raise ParameterError(
            f"`quantiles` must be two increasing levels in [0, 1], got {quantiles!r}."
        )
    frame, by = _values_frame(data, by)
    rows = []
    nan = float("nan")
    for key, x in _groups(frame, by):
        n = int(x.size)
        if n == 0:
            warnings.warn(
                f"{', '.join(f'{b}={k!r}' for b, k in zip(by, key))}: no run values.",
                DegenerateDataWarning,
                stacklevel=2,
            )
            stats = [nan] * 7
        else:
            lo, hi = np.quantile(x, q)
            stats = [
                float(np.mean(x)),
                float(np.median(x)),
                float(np.std(x, ddof=1)) if n > 1 else nan,
                float(np.min(x)),
                float(np.max(x)),
                float(lo),
                float(hi),
            ]
        rows.append((*key, n, x.tolist(), *stats, float(q[0]), float(q[1])))
    schema = {b: frame.schema[b] for b in by}
    schema.update(n=pl.Int64, values=pl.List(pl.Float64))
    for c in (
        "mean",
        "median",
        "sd",
        "min",
        "max",
        "q_low",
        "q_high",
        "q_low_level",
        "q_high_level",
    ):
        schema[c] = pl.Float64
    return pl.DataFrame(rows, schema=schema, orient="row")
