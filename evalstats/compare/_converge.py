"""Sequential stopping rule replayed on recorded configurations (evaluatology)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import polars as pl
from scipy import stats

from evalstats.compare._intervals import scores_over
from evalstats.design._frames import analysis_input
from evalstats.errors import InsufficientDataError, MetricScaleError, ParameterError
from evalstats.results import check_confidence_level, check_positive_int
from evalstats.schema import unit_interval_metrics, validate_units

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from evalstats._frames import TableLike
    from evalstats.design import Design

__all__ = ["convergence", "stopping_sizes"]


def stopping_sizes(
    x: np.ndarray,
    *,
    batch: int = 10,
    mean_tol: float = 0.002,
    ci_width: float = 0.06,
    n_orders: int = 200,
    confidence_level: float = 0.95,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Replay the stopping rule on ``n_orders`` random orders of ``x``.

    Returns
    -------
    tuple of numpy.ndarray
        ``(n_stop, stopped_mean, reached)``, one entry per order; an order that never meets
        the rule stops at ``len(x)`` with ``reached`` False.

    Examples
    --------
    >>> x = np.random.default_rng(0).normal(0.6, 0.02, 200)
    >>> n_stop, _, reached = stopping_sizes(x, n_orders=5)
    >>> n_stop.tolist(), bool(reached.all())
    ([30, 20, 40, 20, 20], True)
    """
    x = np.asarray(x, dtype=float)
    n = x.size
    rng = np.random.default_rng(seed)
    perms = np.argsort(rng.random((n_orders, n)), axis=1)
    xs = x[perms]
    checks = np.arange(batch, n + 1, batch)
    csum = np.cumsum(xs, axis=1)[:, checks - 1]
    csq = np.cumsum(xs**2, axis=1)[:, checks - 1]
    k = checks.astype(float)
    means = csum / k
    var = np.where(k > 1, (csq - k * means**2) / np.maximum(k - 1, 1), np.inf)
    var = np.maximum(var, 0.0)
    tq = stats.t.ppf(1 - (1 - confidence_level) / 2, np.maximum(k - 1, 1))
    width = 2 * tq * np.sqrt(var / k)
    width[:, k < 2] = np.inf
    moved = np.full_like(means, np.inf)
    moved[:, 1:] = np.abs(np.diff(means, axis=1))
    ok = (moved < mean_tol) & (width < ci_width)
    reached = ok.any(axis=1)
    first = np.argmax(ok, axis=1)
    n_stop = np.where(reached, checks[first], n)
    stopped = np.where(reached, means[np.arange(n_orders), first], x.mean())
    return n_stop.astype(np.int64), stopped, reached


def convergence(
    units: TableLike,
    *,
    batch: int = 10,
    mean_tol: float | None = None,
    ci_width: float | None = None,
    n_orders: int = 200,
    confidence_level: float = 0.95,
    seed: int = 0,
    by: Sequence[str] = ("model", "dataset", "metric"),
    roles: str | Mapping[str, str] | None = None,
    design: Design | str | Path | None = None,
) -> pl.DataFrame:
    r"""Distribution of the stopping size and of the stopped estimate's error.

    Parameters
    ----------
    units : polars.DataFrame, polars.LazyFrame, pandas.DataFrame or pyarrow.Table
        Unit table (or observation table); configuration scores are averaged over runs.
    batch : int, default 10
        Configurations added per step.
    mean_tol : float, optional
        Stop only when the running mean moved less than this since the previous batch, in the
        metric's units. Default 0.002 (0.2 accuracy points) for a metric on [0, 1]; required
        for any other metric.
    ci_width : float, optional
        Stop only when the t interval of the running mean is narrower than this, in the
        metric's units. Default 0.06 for a metric on [0, 1]; required for any other metric.
    n_orders : int, default 200
        Random orders of the recorded configurations replayed.
    confidence_level : float, default 0.95
        Level of the running interval.
    seed : int, default 0
        Seed of the random generator; the same seed gives the same result.
    by : tuple of str, default ('model', 'dataset', 'metric')
        Columns that define the groups.
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
        One row per group with ``n_available, share_reached, n_stop_mean, n_stop_median,
        n_stop_q05, n_stop_q95, full_mean, error_mean, error_median, error_q95, error_max``
        (``error`` = \|stopped mean - full-data mean\|) and the rule's parameters.

    Raises
    ------
    ParameterError
        Non-positive ``batch``, ``mean_tol`` or ``ci_width``.
    InsufficientDataError
        Fewer than ``2 * batch`` configurations in a group.

    Notes
    -----
    The rule (evaluatology): evaluate configurations in random order in batches of
    ``batch``; after batch :math:`j` (:math:`n_j = j\cdot batch`) stop when
    :math:`|\bar x_{n_j} - \bar x_{n_{j-1}}| < \text{mean\_tol}` and
    :math:`2 t_{n_j-1} s_{n_j}/\sqrt{n_j} < \text{ci\_width}`. Replaying it over random orders
    of the recorded configurations shows how early it stops and how far the stopped mean is
    from the mean of all recorded configurations (which is the reference, not the truth).
    An order that never meets the rule counts as stopping at ``n_available``.

    Examples
    --------
    >>> from evalstats.simulate import unit_table
    >>> units = unit_table(n_models=1, n_items=100, n_variants=120, seed=0)
    >>> convergence(units, n_orders=50).select("n_available", "share_reached").rows()
    [(120, 1.0)]
    """
    units = analysis_input(units, roles=roles, design=design).table
    batch = check_positive_int("batch", batch)
    n_orders = check_positive_int("n_orders", n_orders)
    level = check_confidence_level(confidence_level)
    if mean_tol is None or ci_width is None:
        off = [m for m, ok in unit_interval_metrics(validate_units(units)).items() if not ok]
        if off:
            raise MetricScaleError(
                f"the default `mean_tol` (0.002) and `ci_width` (0.06) are accuracy units, and "
                f"metric {off[0]!r} is not on [0, 1]: give both in its units (CLI: --mean-tol, "
                "--ci-width)."
            )
        mean_tol = 0.002 if mean_tol is None else mean_tol
        ci_width = 0.06 if ci_width is None else ci_width
    for name, v in (("mean_tol", mean_tol), ("ci_width", ci_width)):
        if not v > 0:
            raise ParameterError(f"`{name}` must be > 0, got {v!r}.")
    by = (by,) if isinstance(by, str) else tuple(by)
    data = scores_over(units, "variants", by)
    rows = []
    groups = data.partition_by(list(by), as_dict=True, maintain_order=True) if by else {(): data}
    for key, g in groups.items():
        x = g["score"].to_numpy()
        if x.size < 2 * batch:
            where = ", ".join(f"{b}={k!r}" for b, k in zip(by, key))
            raise InsufficientDataError(
                f"the stopping rule needs at least 2 batches ({2 * batch} configurations); "
                f"{where or 'the table'} has {x.size}. Lower `batch`."
            )
        n_stop, stopped, reached = stopping_sizes(
            x,
            batch=batch,
            mean_tol=mean_tol,
            ci_width=ci_width,
            n_orders=n_orders,
            confidence_level=level,
            seed=seed,
        )
        full = float(x.mean())
        err = np.abs(stopped - full)
        rows.append(
            (
                *key,
                int(x.size),
                float(reached.mean()),
                float(n_stop.mean()),
                float(np.median(n_stop)),
                float(np.quantile(n_stop, 0.05)),
                float(np.quantile(n_stop, 0.95)),
                full,
                float(err.mean()),
                float(np.median(err)),
                float(np.quantile(err, 0.95)),
                float(err.max()),
            )
        )
    schema = {b: data.schema[b] for b in by} | {
        "n_available": pl.Int64,
        "share_reached": pl.Float64,
        "n_stop_mean": pl.Float64,
        "n_stop_median": pl.Float64,
        "n_stop_q05": pl.Float64,
        "n_stop_q95": pl.Float64,
        "full_mean": pl.Float64,
        "error_mean": pl.Float64,
        "error_median": pl.Float64,
        "error_q95": pl.Float64,
        "error_max": pl.Float64,
    }
    out = pl.DataFrame(rows, schema=schema, orient="row").with_columns(
        pl.lit(batch, dtype=pl.Int64).alias("batch"),
        pl.lit(float(mean_tol)).alias("mean_tol"),
        pl.lit(float(ci_width)).alias("ci_width"),
        pl.lit(level).alias("confidence_level"),
        pl.lit(n_orders, dtype=pl.Int64).alias("n_orders"),
        pl.lit(seed, dtype=pl.Int64).alias("seed"),
    )
    return out.sort(list(by))
