"""The per-prompt accuracy distribution of sparse item x prompt grids: ours and the naive one."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from evalstats.design._frames import analysis_input
from evalstats.errors import ParameterError
from evalstats.sparse._calibrate import N_WORLDS, WORLD_RESAMPLES, Calibration, estimate_cells
from evalstats.sparse._draws import STATISTICS, accuracy_draws, statistics_of
from evalstats.sparse._fit import fit_cells
from evalstats.sparse._groups import Group, groups_of, key_columns

if TYPE_CHECKING:
    from evalstats._frames import TableLike
    from evalstats.design import Design

__all__ = [
    "DISTRIBUTION_COLUMNS",
    "PROMPT_COLUMNS",
    "sparse_prompt_distribution",
    "sparse_prompt_scores",
    "sparse_unit_table",
]

#: Result columns of :func:`sparse_prompt_distribution` after the group columns.
DISTRIBUTION_COLUMNS: tuple[str, ...] = (
    "quantity",
    "estimate",
    "ci_low",
    "ci_high",
    "naive",
    "n_items",
    "n_variants",
    "n_cells",
    "cells_observed",
    "prompt_sd_logit",
    "confidence_level",
    "n_resamples",
    "seed",
    "method",
)

#: Result columns of :func:`sparse_prompt_scores` after the group columns.
PROMPT_COLUMNS: tuple[str, ...] = (
    "variant",
    "n_items_observed",
    "naive",
    "estimate",
    "ci_low",
    "ci_high",
    "confidence_level",
)

METHOD = "crossed logistic item + prompt effects (Laplace empirical Bayes), posterior draws"


def _method(n_worlds: int) -> str:
    if n_worlds < 3:
        return METHOD
    return f"{METHOD}, calibrated by parametric bootstrap ({n_worlds} simulated grids)"


def _validate(confidence_level: float, n_resamples: int, seed: int, n_worlds: int = 0) -> None:
    if not (isinstance(confidence_level, (int, float)) and 0 < confidence_level < 1):
        hint = " Did you mean 0.95?" if confidence_level == 95 else ""
        raise ParameterError(
            f"`confidence_level` must be in (0, 1), got {confidence_level!r}.{hint}"
        )
    if not isinstance(n_resamples, (int, np.integer)) or n_resamples < 20:
        raise ParameterError(f"`n_resamples` must be an integer >= 20, got {n_resamples!r}.")
    if not isinstance(seed, (int, np.integer)):
        raise ParameterError(f"`seed` must be an integer, got {seed!r}.")
    if not isinstance(n_worlds, (int, np.integer)) or n_worlds < 0 or 0 < n_worlds < 3:
        raise ParameterError(
            f"`n_worlds` must be 0 (no calibration) or an integer >= 3, got {n_worlds!r}."
        )


def _naive(group: Group) -> np.ndarray:
    c = group.cells
    per_cell = c.k / c.n
    return np.bincount(c.prompt, per_cell, c.n_prompts) / np.bincount(
        c.prompt, minlength=c.n_prompts
    )


def _group_rng(seed: int, key: tuple) -> np.random.Generator:
    # one stream per group, from the seed and the group's key: a group's answer does not
    # depend on which other groups the table holds
    words = [int(b) for b in "|".join(map(str, key)).encode()]
    return np.random.default_rng([int(seed), *words])


def _draws(group: Group, n_resamples: int, seed: int):
    from evalstats._threads import single_blas_thread

    c = group.cells
    # small dense factorisations, many times: one BLAS thread (see evalstats/_threads.py)
    with single_blas_thread():
        fit = fit_cells(c)
        rng = _group_rng(seed, group.key)
        return fit, accuracy_draws(c, fit, n_resamples=n_resamples, rng=rng)


def _estimates(group: Group, n_resamples: int, seed: int, n_worlds: int):
    """Fit, posterior draws and calibration of one group (:mod:`evalstats.sparse._calibrate`)."""
    from evalstats._threads import single_blas_thread

    with single_blas_thread():
        return estimate_cells(
            group.cells,
            n_resamples=n_resamples,
            rng=_group_rng(seed, group.key),
            n_worlds=n_worlds,
            world_resamples=WORLD_RESAMPLES,
        )


def sparse_prompt_distribution(
    observations: TableLike,
    *,
    by: Sequence[str] | str = ("model", "dataset", "metric"),
    confidence_level: float = 0.95,
    n_resamples: int = 1000,
    seed: int = 0,
    n_worlds: int = N_WORLDS,
    variant_factors: Sequence[str] | str | None = None,
    max_cells_observed: float = 1.0,
    grid_items: int | None = None,
    roles: str | Mapping[str, str] | None = None,
    design: Design | str | Path | None = None,
) -> pl.DataFrame:
    """Distribution of per-prompt accuracy over the whole item grid, from a sparse grid.

    Parameters
    ----------
    observations : polars.DataFrame, polars.LazyFrame, pandas.DataFrame or pyarrow.Table
        Observation table with ``item`` and ``variant``, scores on [0, 1]; see
        :mod:`evalstats.schema`. Cells may be missing: a variant need not be run on every item.
    by : tuple of str, default ('model', 'dataset', 'metric')
        Group columns; one fit per group.
    confidence_level : float, default 0.95
        Level of the equal-tailed intervals.
    n_resamples : int, default 1000
        Posterior draws.
    seed : int, default 0
        Seed of the draws; the same seed gives the same result.
    n_worlds : int, default 10
        Grids simulated from the fit to calibrate the intervals (parametric bootstrap, Notes);
        each costs one more fit. 0: the posterior draws' percentiles alone.
    variant_factors : sequence of str, str or None, default None
        The factor columns whose combinations are the prompt variants (as in
        :func:`evalstats.moments.prompt_spread`); those with two or more levels, fewer than the
        variants, enter the model as covariates of the prompt effect.
    max_cells_observed : float, default 1.0
        Groups observing a larger share of their item x variant grid are left out (the
        report asks for the groups below 0.8; 1.0 keeps every group).
    grid_items : int or None, default None
        Number of items of the whole grid, when the table holds only the items some variant was
        run on (a 2 % budget on 545 items leaves about 13 % of them unseen). The items never
        observed then enter through the fitted item distribution: the target is every
        variant's accuracy over all ``grid_items`` items. None: the items in the table are
        the grid.
    roles, design : optional
        As in :func:`evalstats.moments.prompt_spread`.

    Returns
    -------
    polars.DataFrame
        One row per group and quantity (``mean``, ``sd``, ``min``, ``q05``, ``q25``,
        ``median``, ``q75``, ``q95``, ``max`` of the per-prompt accuracies), group columns first,
        then :data:`DISTRIBUTION_COLUMNS`: ``estimate`` with ``ci_low``/``ci_high`` (model), and
        ``naive``, the same quantity of the per-prompt means of the observed cells.
        ``n_cells`` and ``cells_observed`` count the observed item x variant cells;
        ``prompt_sd_logit`` is the model's sd of the prompt effects (factor levels and the
        rest) on the logit scale; ``method`` names the model and the interval.

    Raises
    ------
    InsufficientDataError
        A group whose item and prompt effects cannot be told apart (every item under one
        variant *and* every variant on one item), or with a single variant. Fewer than one
        cell per item is fitted: every variant on two or more items, each item under one
        variant, compares the variants through the fitted item distribution (a
        ``DesignWarning`` says so).
    MetricScaleError
        A metric not on [0, 1].

    Notes
    -----
    Model (per group): for the cell of item i and prompt variant p, with k successes in n
    scored outputs, k ~ Binomial(n, pi_ip) and

        logit pi_ip = mu + a_i + sum_f c_f[level_f(p)] + u_p,

    a_i ~ N(0, s_a^2), c_f ~ N(0, s_f^2) for each prompt factor f with 2 to P-1 levels, and
    u_p ~ N(0, s_u^2). The modes are the penalised maximum likelihood (Newton-CG on a sparse
    design matrix); the variances are empirical Bayes (the Laplace-EM fixed point, reached by
    MacKay's update). The target is the finite grid: acc_p = mean over *every* item of the
    group of prompt p's cell score, its observed cells as observed, the rest unknown.
    Intervals and estimates come from approximate posterior draws: effects from normal
    approximations of their marginal posteriors (diagonal of the penalised Hessian with a
    one-step Schur correction for the crossed facet), every unobserved cell predicted, its
    binomial noise added (normal approximation). ``estimate`` is the mean of a quantity over
    the draws (not the quantity of the shrunken per-prompt estimates, whose spread is too
    narrow). The prompt variance is drawn from its marginal posterior given the prompts' data
    (flat prior on the sd, on a grid); the item and factor variances are held at their
    estimates. ``ci_low``/``ci_high`` hold the draws' equal-tailed percentiles and, unless
    ``n_worlds`` is 0, the interval calibrated by parametric bootstrap: at small budgets the
    draws are pulled inward (sd, quantiles, extremes), so ``n_worlds`` grids are simulated from
    the fit on the group's own cells (spreads wider than the draws', item effects up to 1.5
    times the fitted sd), refitted, and the estimator's relation to the worlds' truths is read
    backwards at the group's estimate (:mod:`evalstats.sparse._calibrate`). The interval is the
    hull of both; ``estimate`` stays the draws' mean. On a full grid no world is simulated.

    ``sd`` is the population form (ddof 0), and quantiles interpolate linearly, as
    :func:`evalstats.moments.prompt_spread`'s ``std`` and ``q05``...: on a full grid every
    draw is the data and ``estimate`` equals those, with a zero-width interval.

    ``naive`` takes each variant's mean over the cells it was run on, as if those cells were
    the grid: its spread adds the sampling noise of a few items and its extreme quantiles
    follow the variants run on the fewest items. See docs/methods/sparse.md for the measured
    errors of both and the coverage of the intervals (benchmarks/bench_sparse.py).

    References
    ----------
    .. [1] Polo et al., "Efficient multi-prompt evaluation of LLMs" (PromptEval), NeurIPS 2024.

    Examples
    --------
    >>> from evalstats.sparse import sparse_grid
    >>> obs, truth = sparse_grid(n_items=60, n_variants=30, share=0.2, seed=0)
    >>> out = sparse_prompt_distribution(obs, n_resamples=200, seed=0)
    >>> out.select("quantity").to_series().to_list()[:3]
    ['mean', 'sd', 'min']
    """
    _input = analysis_input(observations, roles=roles, design=design)
    table, variant_factors = _input.table, _input.variant_factors(variant_factors)
    _validate(confidence_level, n_resamples, seed, n_worlds)
    by, groups = groups_of(
        table,
        by=by,
        variant_factors=variant_factors,
        max_cells_observed=_share(max_cells_observed),
    )
    frames = [
        _distribution_frame(by, g, fit, cal, confidence_level)
        for g, fit, _, cal in _fitted(groups, n_resamples, seed, n_worlds, grid_items)
    ]
    return _distribution_table(frames, by, confidence_level, n_resamples, seed, n_worlds)


def _fitted(groups, n_resamples: int, seed: int, n_worlds: int, grid_items: int | None = None):
    for g in groups:
        g = _with_grid_items(g, grid_items)
        yield (g, *_estimates(g, int(n_resamples), int(seed), int(n_worlds)))


def _with_grid_items(g: Group, grid_items: int | None) -> Group:
    """The group with its grid's items all counted: those never observed have no cells."""
    if grid_items is None:
        return g
    if not isinstance(grid_items, (int, np.integer)) or grid_items < g.cells.n_items:
        raise ParameterError(
            f"`grid_items` must be an integer at least the number of items observed in every "
            f"group, got {grid_items!r} for a group with {g.cells.n_items} items observed."
        )
    return dataclasses.replace(g, cells=dataclasses.replace(g.cells, n_items=int(grid_items)))


def _distribution_frame(
    by: Sequence[str], g: Group, fit, cal: Calibration, confidence_level: float
) -> pl.DataFrame:
    """One group's rows of :func:`sparse_prompt_distribution`, from its fit and calibration."""
    n_q = len(STATISTICS)
    est, lo, hi = cal.interval(float(confidence_level))
    c = g.cells
    return pl.DataFrame(
        {
            **key_columns(by, g, n_q),
            "quantity": [name for name, _ in STATISTICS],
            "estimate": est,
            "ci_low": lo,
            "ci_high": hi,
            "naive": statistics_of(_naive(g))[0],
            "n_items": [c.n_items] * n_q,
            "n_variants": [c.n_prompts] * n_q,
            "n_cells": [int(c.item.size)] * n_q,
            "cells_observed": [c.item.size / (c.n_items * c.n_prompts)] * n_q,
            "prompt_sd_logit": [float(np.sqrt(fit.var_prompt + sum(fit.var_factor)))] * n_q,
        }
    )


def _distribution_table(
    frames: list[pl.DataFrame],
    by: Sequence[str],
    confidence_level: float,
    n_resamples: int,
    seed: int,
    n_worlds: int,
) -> pl.DataFrame:
    """The groups' rows in the order and schema of :func:`sparse_prompt_distribution`."""
    if frames:
        out = pl.concat(frames, how="vertical_relaxed")
    else:
        out = (
            pl.DataFrame({**key_columns(by, None, 0), "quantity": pl.Series([], dtype=pl.String)})
            .with_columns(
                pl.lit(None, pl.Float64).alias(c)
                for c in ("estimate", "ci_low", "ci_high", "naive")
            )
            .with_columns(
                pl.lit(None, pl.Int64).alias(c) for c in ("n_items", "n_variants", "n_cells")
            )
            .with_columns(
                pl.lit(None, pl.Float64).alias(c) for c in ("cells_observed", "prompt_sd_logit")
            )
        )
    out = out.with_columns(
        pl.col("n_items", "n_variants", "n_cells").cast(pl.Int64),
        pl.lit(float(confidence_level)).alias("confidence_level"),
        pl.lit(int(n_resamples), pl.Int64).alias("n_resamples"),
        pl.lit(int(seed), pl.Int64).alias("seed"),
        pl.lit(_method(int(n_worlds))).alias("method"),
    ).select(*by, *DISTRIBUTION_COLUMNS)
    order = {name: i for i, (name, _) in enumerate(STATISTICS)}
    return (
        out.with_columns(pl.col("quantity").replace_strict(order).alias("__o"))
        .sort([*by, "__o"])
        .drop("__o")
    )


def sparse_prompt_scores(
    observations: TableLike,
    *,
    by: Sequence[str] | str = ("model", "dataset", "metric"),
    confidence_level: float = 0.95,
    n_resamples: int = 1000,
    seed: int = 0,
    variant_factors: Sequence[str] | str | None = None,
    roles: str | Mapping[str, str] | None = None,
    design: Design | str | Path | None = None,
) -> pl.DataFrame:
    """Each prompt variant's accuracy over the whole item grid, with an interval.

    Same model, parameters and errors as :func:`sparse_prompt_distribution`.

    Returns
    -------
    polars.DataFrame
        One row per group and variant: group columns, then :data:`PROMPT_COLUMNS`.
        ``estimate`` is the mean of the posterior draws (observed cells as observed, the rest
        predicted; shrunk toward the variant's factor levels and the prompt prior the data
        choose, so a broken prompt stays out of the bulk as far as its cells show it),
        ``naive`` the mean of its observed cells, ``ci_low``/``ci_high`` percentiles of the
        same draws. (Until issue 44's fourth round it was the normal prior's mode prediction,
        which put a broken prompt of true accuracy 0.29 at 0.67 with 19 cells, near the top
        of its own interval.)

    Examples
    --------
    >>> from evalstats.sparse import sparse_grid
    >>> obs, truth = sparse_grid(n_items=60, n_variants=30, share=0.2, seed=0)
    >>> sparse_prompt_scores(obs, n_resamples=200).height
    30
    """
    _input = analysis_input(observations, roles=roles, design=design)
    table, variant_factors = _input.table, _input.variant_factors(variant_factors)
    _validate(confidence_level, n_resamples, seed)
    by, groups = groups_of(table, by=by, variant_factors=variant_factors)
    alpha = (1 - float(confidence_level)) / 2
    frames = []
    for g in groups:
        fit, draws = _draws(g, int(n_resamples), int(seed))
        lo, hi = np.quantile(draws, [alpha, 1 - alpha], axis=0)
        frames.append(
            pl.DataFrame(
                {
                    **key_columns(by, g, len(g.variants)),
                    "variant": g.variants,
                    "n_items_observed": np.bincount(
                        g.cells.prompt, minlength=g.cells.n_prompts
                    ).astype(np.int64),
                    "naive": _naive(g),
                    "estimate": draws.mean(axis=0),
                    "ci_low": lo,
                    "ci_high": hi,
                    "confidence_level": float(confidence_level),
                },
            )
        )
    schema = {
        "variant": pl.String,
        "n_items_observed": pl.Int64,
        "naive": pl.Float64,
        "estimate": pl.Float64,
        "ci_low": pl.Float64,
        "ci_high": pl.Float64,
        "confidence_level": pl.Float64,
    }
    return _stacked(frames, by, schema)


def sparse_unit_table(
    observations: TableLike,
    *,
    by: Sequence[str] | str = ("model", "dataset", "metric"),
    n_resamples: int = 1000,
    seed: int = 0,
    variant_factors: Sequence[str] | str | None = None,
    max_cells_observed: float = 1.0,
    roles: str | Mapping[str, str] | None = None,
    design: Design | str | Path | None = None,
) -> pl.DataFrame:
    """A unit table of whole-grid variant scores: one representative posterior draw per group.

    For the analyses that read unit scores (n*, moments) on a sparse grid. The posterior mean
    of each variant is shrunk toward the others, so its spread is too narrow; one draw of
    every variant's accuracy together has the spread the model infers. Of the
    ``n_resamples`` draws, the one whose sd over variants is nearest the mean of the draws' sds
    is taken, so that its sd is :func:`sparse_prompt_distribution`'s ``sd`` estimate (seeded:
    the same seed gives the same table). On a full grid it is the observed unit table.
    Parameters are those of :func:`sparse_prompt_distribution` (``max_cells_observed`` leaves
    out the groups observing more of their grid); with the same ``n_resamples`` and ``seed``
    the draws are the ones its estimates and intervals come from.

    Returns
    -------
    polars.DataFrame
        Unit table: group columns, ``variant``, ``run`` (0), ``score``, ``n_items`` (the
        group's items: the score is over the whole grid).

    Examples
    --------
    >>> from evalstats.sparse import sparse_grid
    >>> obs, truth = sparse_grid(n_items=60, n_variants=30, share=0.2, seed=0)
    >>> sparse_unit_table(obs, n_resamples=100).columns
    ['model', 'dataset', 'metric', 'variant', 'run', 'score', 'n_items']
    """
    _input = analysis_input(observations, roles=roles, design=design)
    table, variant_factors = _input.table, _input.variant_factors(variant_factors)
    _validate(0.95, n_resamples, seed)
    by, groups = groups_of(
        table,
        by=by,
        variant_factors=variant_factors,
        max_cells_observed=_share(max_cells_observed),
    )
    frames = [
        _units_frame(by, g, draws) for g, _, draws, cal in _fitted(groups, n_resamples, seed, 0)
    ]
    return _stacked(frames, by, UNIT_SCHEMA)


#: Columns of :func:`sparse_unit_table` after the group columns.
UNIT_SCHEMA = {"variant": pl.String, "run": pl.Int64, "score": pl.Float64, "n_items": pl.Int64}


def _units_frame(by: Sequence[str], g: Group, draws: np.ndarray) -> pl.DataFrame:
    """One group's rows of :func:`sparse_unit_table`: the draw whose sd is nearest the mean sd."""
    sds = draws.std(axis=1)
    pick = int(np.argmin(np.abs(sds - sds.mean())))
    return pl.DataFrame(
        {
            **key_columns(by, g, len(g.variants)),
            "variant": g.variants,
            "run": 0,
            "score": draws[pick],
            "n_items": g.cells.n_items,
        }
    )


def _share(max_cells_observed: float) -> float:
    if not (isinstance(max_cells_observed, (int, float)) and 0 < max_cells_observed <= 1):
        raise ParameterError(f"`max_cells_observed` must be in (0, 1], got {max_cells_observed!r}.")
    return float(max_cells_observed)


def whole_grid(
    observations: TableLike,
    *,
    variant_factors: Sequence[str] | str | None = None,
    max_cells_observed: float = 1.0,
    confidence_level: float = 0.95,
    n_resamples: int = 1000,
    seed: int = 0,
    n_worlds: int = N_WORLDS,
) -> tuple[pl.DataFrame, pl.DataFrame, list[str]]:
    """:func:`sparse_prompt_distribution` and :func:`sparse_unit_table` from one fit per group.

    For the report. A group the model cannot fit (``InsufficientDataError``) is left out and
    its reason returned, instead of stopping the other groups. Returns the distribution, the
    unit table and the reasons.
    """
    table = analysis_input(observations).table
    _validate(confidence_level, n_resamples, seed, n_worlds)
    refused: list[str] = []
    by, groups = groups_of(
        table,
        by=("model", "dataset", "metric"),
        variant_factors=variant_factors,
        max_cells_observed=_share(max_cells_observed),
        refused=refused,
    )
    dist, units = [], []
    for g, fit, draws, cal in _fitted(groups, n_resamples, seed, n_worlds):
        dist.append(_distribution_frame(by, g, fit, cal, confidence_level))
        units.append(_units_frame(by, g, draws))
    return (
        _distribution_table(dist, by, confidence_level, n_resamples, seed, n_worlds),
        _stacked(units, by, UNIT_SCHEMA),
        refused,
    )


def _stacked(frames: list[pl.DataFrame], by: Sequence[str], schema: dict) -> pl.DataFrame:
    """The groups' frames in one table of ``schema`` (empty, with the group columns, if none)."""
    if not frames:
        return pl.DataFrame(key_columns(by, None, 0)).with_columns(
            pl.Series(c, [], dtype=t) for c, t in schema.items()
        )
    return pl.concat(frames, how="vertical_relaxed").cast(schema).sort([*by, "variant"])  # type: ignore[arg-type]
