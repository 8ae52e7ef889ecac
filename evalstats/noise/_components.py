"""Variance components of item scores over items x prompt variants x runs, per model and pair."""

from __future__ import annotations

import hashlib
import math
import warnings
from collections.abc import Iterator, Sequence
from itertools import combinations
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from evalstats._frames import describe_group
from evalstats._ordered import grouped_in_order
from evalstats.design._frames import analysis_input
from evalstats.errors import DegenerateDataWarning, InsufficientDataError, SchemaError
from evalstats.noise._kernels import COMPONENTS, CellData, Fit, anova_fit, reml_fit
from evalstats.results import check_choice, check_confidence_level, check_positive_int
from evalstats.schema import as_lazy, validate_by, validate_observations, validate_units

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from evalstats._frames import TableLike
    from evalstats.design import Design

__all__ = ["COMPONENT_COLUMNS", "variance_components"]

_METHODS = ("auto", "anova", "reml")

#: Columns of :func:`variance_components` after the group columns.
COMPONENT_COLUMNS: dict[str, pl.DataType] = {
    "model_b": pl.String(),
    "component": pl.String(),
    "variance": pl.Float64(),
    "ci_low": pl.Float64(),
    "ci_high": pl.Float64(),
    "share": pl.Float64(),
    "raw_estimate": pl.Float64(),
    "truncated": pl.Boolean(),
    "identified": pl.Boolean(),
    "df": pl.Float64(),
    "mean": pl.Float64(),
    "n_items": pl.Int64(),
    "n_variants": pl.Int64(),
    "n_runs": pl.Float64(),
    "n_obs": pl.Int64(),
    "n_unpaired": pl.Int64(),
    "balanced": pl.Boolean(),
    "level": pl.String(),
    "method": pl.String(),
    "confidence_level": pl.Float64(),
    "n_resamples": pl.Int64(),
    "seed": pl.Int64(),
}


def _group_rng(seed: int, key: tuple) -> np.random.Generator:
    """Generator seeded by ``seed`` and a stable hash of the group key (order-independent)."""
    text = "\x1f".join(f"{type(v).__name__}:{v}" for v in key).encode()
    digest = hashlib.blake2b(text, digest_size=16).digest()
    words = [int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4)]
    return np.random.default_rng([int(seed), *words])


def _prepare(frame: pl.DataFrame | pl.LazyFrame, by: Sequence[str] | str):
    """The validated table, ``by`` as a tuple, the item column used and the level label."""
    lf = as_lazy(frame)
    names = lf.collect_schema().names()
    if "item" in names:
        lf = validate_observations(lf, require_item=True)
        level = "items"
    else:
        lf = validate_units(lf).with_columns(pl.lit("(all items)").alias("item"))
        level = "units"
    names = lf.collect_schema().names()
    by = validate_by(names, by, table="observation table" if level == "items" else "unit table")
    for col in ("item", "variant"):
        if col in by:
            raise SchemaError(f"`by` cannot contain {col!r}: it is a facet of the decomposition.")
    return lf, by, level


def _cells(lf: pl.LazyFrame, keys: list[str]) -> pl.DataFrame:
    """Cell summaries per (group, item, variant): runs, mean, within-cell SS.

    A cell of one run has a within-cell SS of exactly 0; the SS (an expression polars
    evaluates group by group, most of this table's cost at 1M cells) is computed only when
    some cell has several runs.
    """
    cells = [*keys, "item", "variant"]  # a fixed cell order: results do not depend on row order
    n = pl.len().cast(pl.Float64).alias("_n")
    mean = pl.col("score").mean().alias("_mean")
    out = grouped_in_order(lf, cells, n, mean).collect()
    if out.height and float(out["_n"].max()) > 1.0:
        ss = ((pl.col("score") - pl.col("score").mean()) ** 2).sum().alias("_ss")
        return grouped_in_order(lf, cells, n, mean, ss).collect()
    return out.with_columns(pl.lit(0.0, dtype=pl.Float64).alias("_ss"))


def _to_celldata(g: pl.DataFrame) -> CellData:
    # dense ranks of the labels in their sorted order: numpy.unique's inverse (UTF-8 bytes sort
    # as code points), without sorting a million Python strings
    ic, vc = (
        (g[c].cast(pl.String).rank("dense").cast(pl.Int64) - 1).to_numpy()
        for c in ("item", "variant")
    )
    n = g["_n"].to_numpy().astype(float)
    mean = g["_mean"].to_numpy().astype(float)
    return CellData(
        ic.astype(np.intp),
        vc.astype(np.intp),
        n,
        mean,
        float(g["_ss"].sum()),
        int(ic.max()) + 1,
        int(vc.max()) + 1,
        float(np.sum(n * mean) / np.sum(n)),
    )


def _paired_rows(
    lf: pl.LazyFrame, by: tuple[str, ...]
) -> Iterator[tuple[str, str, pl.LazyFrame, pl.Expr]]:
    """For each pair of models (sorted names, a < b): the difference rows ``a - b``.

    Rows are paired on (the other ``by`` columns, item, variant, run); the count of rows of
    either model without a partner is returned per group.
    """
    models = sorted(lf.select(pl.col("model").unique()).collect()["model"].to_list())
    rest = [b for b in by if b != "model"]
    on = [*rest, "item", "variant", "run"]
    for ma, mb in combinations(models, 2):
        a = lf.filter(pl.col("model") == ma).select(*on, pl.col("score").alias("_a"))
        b = lf.filter(pl.col("model") == mb).select(*on, pl.col("score").alias("_b"))
        joined = a.join(b, on=on, how="full", coalesce=True, nulls_equal=True)
        yield ma, mb, joined, pl.col("_a").is_not_null() & pl.col("_b").is_not_null()


def variance_components(
    obs: TableLike,
    *,
    pairs: bool = False,
    method: str = "auto",
    confidence_level: float = 0.95,
    n_resamples: int = 10000,
    seed: int = 0,
    by: Sequence[str] | str = ("model", "dataset", "metric"),
    roles: str | Mapping[str, str] | None = None,
    design: Design | str | Path | None = None,
) -> pl.DataFrame:
    r"""Variance components of scores over the crossed design items x prompt variants x runs.

    Parameters
    ----------
    obs : polars.DataFrame, polars.LazyFrame, pandas.DataFrame or pyarrow.Table
        Observation table (one row per item, variant and run); see :mod:`evalstats.schema`. A unit
        table (no ``item`` column) is decomposed over variants and runs only: its scores are
        means over a fixed item set (``level == "units"``).
    pairs : bool, default False
        Also decompose the paired difference ``a - b`` of every pair of models (rows with
        ``model == a`` and ``model_b == b``), paired on (item, variant, run). ``by`` must
        contain ``model``.
    method : {'auto', 'anova', 'reml'}, default 'auto'
        ``anova``: expected-mean-squares estimators (balanced designs only); ``reml``: restricted
        maximum likelihood; ``auto`` takes ``anova`` when the group's design is balanced (every
        item under every variant, the same number of runs in every cell) and ``reml`` otherwise.
    confidence_level : float, default 0.95
        Level of the component intervals.
    n_resamples : int, default 10000
        Draws of the generalized pivotal quantities behind the ANOVA intervals.
    seed : int, default 0
        Seed of the random generator; each group draws from a generator seeded by ``seed`` and a
        hash of its key, so the same seed gives the same result whatever else the table holds.
    by : tuple of str, default ('model', 'dataset', 'metric')
        Columns that define the groups (``item`` and ``variant`` cannot be among them).
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
        Four rows per group (``component`` = ``item``, ``variant``, ``item_variant``,
        ``residual``), the group columns first, then the columns of
        :data:`COMPONENT_COLUMNS`: ``variance`` (truncated at 0, and at the largest variance
        the metric's range allows, as the bounds are), ``ci_low, ci_high``,
        ``share`` (of the total of the identified components), ``raw_estimate`` (before
        truncation), ``truncated`` (a negative ANOVA estimate set to 0), ``identified`` (false:
        the design cannot separate it, see Notes; ``variance`` is null), ``df`` (degrees of
        freedom of the mean square, ANOVA), ``mean``, ``n_items, n_variants, n_runs`` (mean runs
        per cell), ``n_obs``, ``n_unpaired`` (pairs: rows of either model without a partner),
        ``balanced``, ``level``, ``method``, ``confidence_level``, ``n_resamples``, ``seed``.
        Sorted by the group columns, ``model_b`` and the component order.

    Raises
    ------
    SchemaError
        A column of ``by`` is missing, ``by`` contains ``item`` or ``variant``, or ``pairs``
        without ``model`` in ``by``.
    ParameterError
        ``method='anova'`` on an unbalanced group, or parameters out of range.
    InsufficientDataError
        The table has no rows.

    See Also
    --------
    predicted_variance : The variance of a mean score under any design, from these components.
    plan : The cheapest design for a target interval width or a detectable difference.

    Notes
    -----
    The model for one group (one model on one dataset, or the difference of two models) is

    .. math:: y_{ivr} = \mu + a_i + b_v + (ab)_{iv} + e_{ivr}

    with independent normal terms of variances :math:`\sigma^2_i` (item), :math:`\sigma^2_v`
    (variant), :math:`\sigma^2_{iv}` (item x variant) and :math:`\sigma^2_e` (run/residual):
    items and prompt variants are random samples from their populations, runs are replicates
    within a cell. Balanced designs (``a`` items, ``b`` variants, ``r`` runs) use the ANOVA
    estimators :math:`\hat\sigma^2_e = MS_e`, :math:`\hat\sigma^2_{iv} = (MS_{iv}-MS_e)/r`,
    :math:`\hat\sigma^2_i = (MS_i - MS_{iv})/(br)`, :math:`\hat\sigma^2_v = (MS_v-MS_{iv})/(ar)`;
    a negative estimate is reported as 0 with ``truncated`` true and its value in
    ``raw_estimate``. Intervals are generalized pivotal quantities (Weerahandi 1993; Burdick,
    Borror & Montgomery 2005), ``n_resamples`` draws. Unbalanced designs use REML, our own
    implementation on cell means (the within-cell part of the likelihood is a chi-square in
    :math:`\sigma^2_e`, the cell means have covariance
    :math:`D + \sigma^2_i Z_iZ_i' + \sigma^2_v Z_vZ_v'`, solved by Sherman-Morrison on the factor
    with more levels and Woodbury on the other, so it scales to thousands of items), with
    intervals from the observed information on the log scale (approximate; at a zero estimate
    the upper bound is one-sided). statsmodels' ``MixedLM`` with variance components fits the
    same model but forms dense ``n x q`` matrices (``q`` = items + variants + cells), which is
    impractical beyond a few hundred items; it is the reference of the tests.

    Identification: with one variant, :math:`\sigma^2_v` is not estimable and
    :math:`\sigma^2_{iv}` is merged into ``item``; with one item (a unit table),
    :math:`\sigma^2_{iv}` is merged into ``variant``; with one run per cell,
    :math:`\sigma^2_{iv}` and :math:`\sigma^2_e` are one term, reported as ``residual``. Merged
    rows have ``identified`` false and a null variance.

    Repeated runs that never differ (a model at temperature 0 that answers every item the same
    way each time) put the residual at 0 exactly: the REML likelihood grows without bound as it
    falls, so it is fixed there and the other components are fitted without it (one factor: its
    variance is the cell means' sample variance, with the chi-square interval). Cell means that
    are exactly additive (``mu + a_i + b_v``, no noise within cells: a deterministic model run
    twice over overlapping documents) have no interaction and no residual; each factor's
    variance is then the sample variance of its least-squares effects. A REML fit that
    reaches no stationary point from any of its starting values warns and reports null
    components.

    Binary (0/1) scores are decomposed on this linear scale: the components still add up to the
    variance of a mean, which is what intervals and plans need, but they are not those of a
    latent logit model, and the residual of 0/1 scores depends on the mean. See
    :func:`logit_components` for a check on the logit scale.

    Checked against: the textbook expected-mean-squares formulas computed independently and
    statsmodels ``MixedLM`` (REML, variance components) in ``tests/test_noise.py``; coverage of
    the intervals on simulated data with planted components (slow test).

    References
    ----------
    .. [1] Searle, Casella & McCulloch, *Variance Components*, Wiley 1992, ch. 4 and 6.
    .. [2] Burdick, Borror & Montgomery, *Design and Analysis of Gauge R&R Studies*, SIAM 2005.

    Examples
    --------
    >>> from evalstats.simulate import observations
    >>> obs = observations(n_models=1, n_items=40, n_variants=6, n_runs=2, seed=0)
    >>> out = variance_components(obs)
    >>> out.select("component", "identified", "method").rows()
    [('item', True, 'anova'), ('variant', True, 'anova'), ('item_variant', True, 'anova'), ('residual', True, 'anova')]
    >>> round(out["share"].sum(), 6)
    1.0
    """
    obs = analysis_input(obs, roles=roles, design=design).table
    check_choice("method", method, _METHODS)
    level_ = check_confidence_level(confidence_level)
    n_resamples = check_positive_int("n_resamples", n_resamples)
    lf, by, level = _prepare(obs, by)
    if pairs and "model" not in by:
        raise SchemaError(f"`pairs=True` needs 'model' in `by`, got {by!r}.")
    if lf.select(pl.len()).collect().item() == 0:
        raise InsufficientDataError("the observation table has no rows.")
    keys = list(by)
    rows: list[dict] = []
    schema_by = {b: lf.collect_schema()[b] for b in by}
    opts = dict(method=method, level=level_, n_resamples=n_resamples, seed=seed)

    from evalstats.compare._intervals import _metric_bounds

    bounds_of = _metric_bounds(lf, keys)

    def cap(key: tuple, pair: bool) -> float:
        """The largest variance a score (a difference, for pairs) on the metric's range has."""
        lo, hi = bounds_of(key)
        span = (hi - lo) * (2 if pair else 1)
        return span * span / 4 if math.isfinite(span) else math.inf

    cells = _cells(lf, keys)
    for key, g in _partitions(cells, keys):
        opts["cap"] = cap(tuple(key), False)
        opts["bounds"] = bounds_of(tuple(key))
        rows += _group_rows(dict(zip(keys, key)), None, g, None, level, opts)
    opts["bounds"] = None  # differences constant at 0 sit inside their range
    if pairs:
        rest = [b for b in keys if b != "model"]
        for ma, mb, joined, both in _paired_rows(lf, by):
            counts = (
                joined.group_by(rest or pl.lit(0)).agg((~both).sum().alias("_unpaired")).collect()
            )
            diff = joined.filter(both).with_columns((pl.col("_a") - pl.col("_b")).alias("score"))
            dcells = _cells(diff, rest)
            unp = {tuple(r[:-1]) if rest else (): r[-1] for r in counts.rows()}
            for key, g in _partitions(dcells, rest):
                group = {"model": ma, **dict(zip(rest, key))}
                group = {b: group[b] for b in keys}
                opts["cap"] = cap(tuple(group.values()), True)
                rows += _group_rows(group, mb, g, int(unp.get(tuple(key), 0)), level, opts)
    schema = schema_by | COMPONENT_COLUMNS
    out = pl.DataFrame(rows, schema=schema, orient="row")
    order = pl.col("component").replace_strict(
        {c: i for i, c in enumerate(COMPONENTS)}, return_dtype=pl.Int64
    )
    return (
        out.with_columns(order.alias("_o"))
        .sort([*keys, "model_b", "_o"], nulls_last=False)
        .drop("_o")
    )


def _capped(x: float, cap: float | None) -> float | None:
    v = _num(x)
    return v if v is None or cap is None else min(v, cap)


def _partitions(cells: pl.DataFrame, keys: list[str]) -> Iterator[tuple[tuple, pl.DataFrame]]:
    if not keys:
        if cells.height:
            yield (), cells
        return
    for key, g in cells.partition_by(keys, as_dict=True, maintain_order=True).items():
        yield tuple(key), g


def _fit(c: CellData, method: str, level: float, n_resamples: int, rng) -> Fit:
    if method == "anova" and not c.balanced:
        from evalstats.errors import ParameterError

        raise ParameterError(
            "`method='anova'` needs a balanced design (every item under every variant, the same "
            f"number of runs in every cell); this group has {c.n.size} of "
            f"{c.n_items * c.n_variants} cells with {int(c.n.min())}-{int(c.n.max())} runs. "
            "Use method='reml' or 'auto'."
        )
    if method == "reml" or (method == "auto" and not c.balanced):
        return reml_fit(c, confidence_level=level)
    return anova_fit(c, confidence_level=level, n_resamples=n_resamples, rng=rng)


def _group_rows(
    group: dict, model_b: str | None, g: pl.DataFrame, n_unpaired: int | None, level: str, opts
) -> list[dict]:
    c = _to_celldata(g)
    ident = c.identified()
    key = (*group.values(), model_b)
    where = describe_group({**group, **({"model_b": model_b} if model_b is not None else {})})
    base = {
        **group,
        "model_b": model_b,
        "mean": c.grand,
        "n_items": c.n_items if level == "items" else None,
        "n_variants": c.n_variants,
        "n_runs": float(c.n.mean()),
        "n_obs": c.n_obs,
        "n_unpaired": n_unpaired,
        "balanced": c.balanced,
        "level": level,
        "confidence_level": opts["level"],
        "seed": int(opts["seed"]),
    }
    if not ident.any():
        warnings.warn(
            f"group {where} has one item, one variant and one run per cell: no component is "
            "identified; returning NaN.",
            DegenerateDataWarning,
            stacklevel=3,
        )
        fit = Fit(*(np.full(4, math.nan),) * 5, method="none")
    elif _constant(c):
        # constant scores: every component is 0 in the sample. REML's likelihood is flat there
        # (no residual to scale it), and its optimiser returned 1/3 of an arbitrary total per
        # component (a GPQA group of all-zero scores read "item 0.333, prompt 0.333, item x
        # prompt 0.333"); at a bound of the metric each is at most _constant_bound
        zero = np.zeros(4)
        # each component over its own units, the other facets at their recorded levels: items,
        # variants, cells (the interaction), runs (the residual)
        units = (c.n_items, c.n_variants, int(c.n.size), int(c.n_obs))
        high = np.array([_constant_bound(c, opts.get("bounds"), opts["level"], n) for n in units])
        anova = c.balanced and opts["method"] != "reml"
        fit = Fit(zero, zero, zero, high, np.full(4, math.nan), "anova" if anova else "reml")
    else:
        fit = _fit(
            c, opts["method"], opts["level"], opts["n_resamples"], _group_rng(opts["seed"], key)
        )
    if not fit.converged:
        warnings.warn(
            f"group {where}: the REML fit of the variance components did not reach a stationary "
            "point from any of its starting values; its components and intervals are null.",
            DegenerateDataWarning,
            stacklevel=3,
        )
        fit = Fit(*(np.full(4, math.nan),) * 5, method="reml", converged=False)
    total = float(np.nansum(fit.estimate))
    if total == 0 and ident.any() and fit.converged:
        top = float(np.nanmax(fit.high)) if np.any(fit.high > 0) else 0.0
        bound = (
            f" in this sample; every score at the metric's bound, so each is at most {top:.3g}"
            if top > 0
            else ""
        )
        warnings.warn(
            f"group {where}: constant scores, all components are 0{bound}.",
            DegenerateDataWarning,
            stacklevel=3,
        )
    rows = []
    for j, comp in enumerate(COMPONENTS):
        ok = bool(ident[j])
        # at most what the metric allows, as the bounds: the sample variance of 100 items half
        # right (ddof 1) is 0.2525, and a row read "0.252 (0.195 to 0.250)"
        v = _capped(fit.estimate[j], opts.get("cap")) if ok else None
        raw = _num(fit.raw[j]) if ok else None
        rows.append(
            {
                **base,
                "component": comp,
                "variance": v,
                # never beyond what the metric allows: a variance of scores on [lo, hi] is at
                # most (hi - lo)^2 / 4 (0.25 for 0/1 scores; an interval reached 3.85)
                "ci_low": _capped(fit.low[j], opts.get("cap")) if ok else None,
                "ci_high": _capped(fit.high[j], opts.get("cap")) if ok else None,
                "share": (v / total) if v is not None and total > 0 else None,
                "raw_estimate": raw,
                "truncated": bool(ok and raw is not None and raw < 0),
                "identified": ok,
                "df": _num(fit.df[j]) if ok else None,
                "method": fit.method,
                "n_resamples": int(opts["n_resamples"]) if fit.method == "anova" else None,
            }
        )
    return rows


def _constant_bound(
    c: CellData, bounds: tuple[float, float] | None, level: float, units: int
) -> float:
    """Upper bound of a component of a group whose scores all sit at one metric bound.

    Twenty items all right say the item variance is small, not 0. For scores on [L, H] with
    mean mu the variance is at most (mu - L)(H - mu) (Bhatia-Davis), and mu is within
    :func:`~evalstats.compare._intervals.at_a_bound` of the bound over the component's
    ``units`` (its facet's levels, independent given the other facets' recorded levels; the
    cells for the interaction, the runs for the residual): the component is at most
    (H - L)^2 m (1 - m), m = 1 - (alpha/2)^(1/units) (m at most 1/2). 0 when the constant is
    inside the range, or the metric has no two finite bounds (nothing bounds it).
    """
    from evalstats.compare._intervals import at_a_bound

    if bounds is None or units < 2:
        return 0.0
    exact = at_a_bound(c.mean, bounds, units, 1.0 - level)
    if exact is None:
        return 0.0
    span = bounds[1] - bounds[0]
    m = min((exact[1] - exact[0]) / span, 0.5)
    return span * span * m * (1.0 - m)


def _constant(c: CellData) -> bool:
    """Whether every score of the group is the same (up to rounding)."""
    scale = max(1.0, abs(c.grand))
    spread = float(np.ptp(c.mean)) if c.mean.size else 0.0
    return c.ss_within <= 1e-18 * scale * c.n_obs and spread <= 1e-12 * scale


def _num(x: float) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)
