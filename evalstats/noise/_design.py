"""The variance of a mean score under a design, from the components; the check against resampling."""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

import numpy as np
import polars as pl

from evalstats.errors import ParameterError, SchemaError
from evalstats.noise._kernels import COMPONENTS
from evalstats.results import check_confidence_level

__all__ = ["OVER", "design_variance", "group_columns", "predicted_variance", "resampling_check"]

#: Facets an interval can generalise over (runs are always a source of noise).
OVER: tuple[str, ...] = ("items", "variants")

_META = {
    "model_b",
    "component",
    "variance",
    "ci_low",
    "ci_high",
    "share",
    "raw_estimate",
    "truncated",
    "identified",
    "df",
    "mean",
    "n_items",
    "n_variants",
    "n_runs",
    "n_obs",
    "n_unpaired",
    "balanced",
    "level",
    "method",
    "confidence_level",
    "n_resamples",
    "seed",
}


def group_columns(components: pl.DataFrame) -> list[str]:
    """The group columns of a :func:`variance_components` frame (those before ``model_b``)."""
    names = components.columns
    if "component" not in names or "model_b" not in names:
        raise SchemaError(
            "expected the frame returned by variance_components (columns 'component', "
            f"'model_b', ...), got columns: {', '.join(names)}."
        )
    return names[: names.index("model_b")]


def check_over(over: Sequence[str] | str) -> tuple[str, ...]:
    """``over`` as a tuple of facets among ``items`` and ``variants``."""
    if isinstance(over, str):
        over = tuple(o.strip() for o in over.split(",") if o.strip())
    over = tuple(over)
    for o in over:
        if o not in OVER:
            raise ParameterError(f"`over` must name facets among 'items', 'variants', got {o!r}.")
    return over


def wide(components: pl.DataFrame) -> pl.DataFrame:
    """One row per group: the four variances (null when not identified) and the pilot design."""
    keys = [*group_columns(components), "model_b"]
    first = components.group_by(keys, maintain_order=True).agg(
        pl.col("n_items", "n_variants", "n_runs", "level", "mean", "method").first()
    )
    var = components.pivot(on="component", index=keys, values="variance")
    for c in COMPONENTS:
        if c not in var.columns:
            var = var.with_columns(pl.lit(None, dtype=pl.Float64).alias(c))
    return first.join(var, on=keys, how="left", nulls_equal=True, maintain_order="left")


def design_variance(
    s: np.ndarray,
    n_items: np.ndarray | float,
    n_variants: np.ndarray | float,
    n_runs: np.ndarray | float,
    *,
    over: tuple[str, ...],
    replicated: np.ndarray | bool = True,
) -> np.ndarray:
    """Variance of the mean over a crossed design, from component variances ``s`` (..., 4).

    ``s`` holds item, variant, item_variant, residual with NaN for a term the pilot could not
    separate. A merged term is divided only by the sizes it certainly averages over (see
    :func:`predicted_variance`): ``replicated`` false (the pilot had one run per cell) means the
    residual holds the item x variant interaction and is not divided by the runs. Broadcasts
    over the design arrays.
    """
    s = np.asarray(s, dtype=float)
    si, sv, siv, se = (s[..., k] for k in range(4))
    ni = np.asarray(n_items, dtype=float)
    nv = np.asarray(n_variants, dtype=float)
    nr = np.asarray(n_runs, dtype=float)
    reps = np.asarray(replicated, dtype=bool)
    out = np.zeros(np.broadcast_shapes(si.shape, ni.shape, nv.shape, nr.shape))
    if "items" in over:
        out = out + np.nan_to_num(si) / ni
    if "variants" in over:
        out = out + np.nan_to_num(sv) / nv
    out = out + np.nan_to_num(siv) / (ni * nv)
    # residual: averaged over runs only when the interaction was separated from it
    out = out + np.nan_to_num(se) / np.where(reps, ni * nv * nr, ni * nv)
    return out


def predicted_variance(
    components: pl.DataFrame,
    *,
    n_items: int | None = None,
    n_variants: int | None = None,
    n_runs: int | None = None,
    over: Sequence[str] | str = OVER,
    confidence_level: float = 0.95,
) -> pl.DataFrame:
    r"""Variance of a mean score (or paired difference) under a design, from the components.

    Parameters
    ----------
    components : polars.DataFrame
        The frame returned by :func:`variance_components`.
    n_items, n_variants, n_runs : int, optional
        The design: items, prompt variants (every item under every variant) and runs per cell.
        Each defaults to the group's pilot size.
    over : sequence of {'items', 'variants'}, default ('items', 'variants')
        The facets the interval generalises over: ``('items', 'variants')`` treats both as
        samples from larger populations; ``('items',)`` keeps the variants fixed (what the item
        bootstrap measures); ``('variants',)`` keeps the items fixed (what ReliableEval's n*
        measures); ``()`` leaves only run-to-run noise.
    confidence_level : float, default 0.95
        Level of the normal interval whose width is reported.

    Returns
    -------
    polars.DataFrame
        One row per group (and pair): group columns, ``model_b``, ``level``, ``n_items,
        n_variants, n_runs`` (the design), ``over`` (comma-joined), ``variance``, ``se``,
        ``width`` (``2 z se``), ``confidence_level``.

    Notes
    -----
    .. math:: \operatorname{Var}(\bar y) = \frac{\sigma^2_i}{n_i} + \frac{\sigma^2_v}{n_v}
              + \frac{\sigma^2_{iv}}{n_i n_v} + \frac{\sigma^2_e}{n_i n_v n_r}

    with the main effect of a facet left out when the interval does not generalise over it.
    Terms the pilot could not separate are conservative: with one run per cell the residual
    holds the interaction too and is divided by ``n_i n_v`` only; with one variant the item
    term holds the interaction. On a unit table the components are those of unit scores (means
    over a fixed item set), ``n_items`` is 1 in the formula.

    Examples
    --------
    >>> from evalstats.simulate import crossed_scores
    >>> from evalstats.noise import variance_components
    >>> comps = variance_components(crossed_scores(n_items=100, n_variants=8, seed=0))
    >>> out = predicted_variance(comps, n_items=400)
    >>> out.select("n_items", "n_variants", "n_runs").row(0)
    (400, 8, 3)
    """
    level = check_confidence_level(confidence_level)
    over = check_over(over)
    w = wide(components)
    keys = [*group_columns(components), "model_b"]
    s = w.select(COMPONENTS).to_numpy().astype(float)
    units = (w["level"] == "units").to_numpy()
    pi = np.where(units, 1.0, w["n_items"].fill_null(1).to_numpy().astype(float))
    ni = pi if n_items is None else np.where(units, 1.0, float(n_items))
    nv = w["n_variants"].to_numpy().astype(float) if n_variants is None else float(n_variants)
    nr = np.round(w["n_runs"].to_numpy()) if n_runs is None else float(n_runs)
    reps = w["n_runs"].to_numpy() > 1
    var = design_variance(s, ni, nv, nr, over=over, replicated=reps)
    z = NormalDist().inv_cdf(0.5 + level / 2)
    se = np.sqrt(var)
    out = w.select(keys + ["level"]).with_columns(
        pl.Series(
            "n_items",
            [None if u else int(x) for u, x in zip(units, np.broadcast_to(ni, var.shape))],
            dtype=pl.Int64,
        ),
        pl.Series("n_variants", np.broadcast_to(nv, var.shape).astype(np.int64)),
        pl.Series("n_runs", np.broadcast_to(nr, var.shape).astype(np.int64)),
        pl.lit(",".join(over)).alias("over"),
        pl.Series("variance", var),
        pl.Series("se", se),
        pl.Series("width", 2 * z * se),
        pl.lit(level).alias("confidence_level"),
    )
    return out


def resampling_check(
    obs: pl.DataFrame | pl.LazyFrame,
    *,
    components: pl.DataFrame | None = None,
    n_resamples: int = 4000,
    seed: int = 0,
    by: Sequence[str] | str = ("model", "dataset", "metric"),
) -> pl.DataFrame:
    r"""The standard error of the mean from the components against the resampling answers.

    Over items (variants fixed): the item bootstrap of :func:`evalstats.compare.intervals`
    (``over='items'``, percentile bootstrap; its ``se``). Over variants (items fixed):
    ReliableEval's Delta(n) curve of :func:`evalstats.resampling.sample_size_curve`
    (``method='bootstrap'``) at ``n = N`` variants, whose mean ``E|Delta(N)|`` is
    ``se * sqrt(2/pi)`` for a normal mean. Both resample the observed units with replacement,
    so they estimate ``se * sqrt((N - 1)/N)``; that is ``se_expected``.

    Parameters
    ----------
    obs : polars.DataFrame or polars.LazyFrame
        Observation table (or a unit table: then only the variant check applies).
    components : polars.DataFrame, optional
        :func:`variance_components` of ``obs`` with the same ``by``; computed when omitted.
    n_resamples : int, default 4000
        Resamples of each resampling method.
    seed : int, default 0
        Seed of both resampling methods.
    by : tuple of str, default ('model', 'dataset', 'metric')
        Columns that define the groups.

    Returns
    -------
    polars.DataFrame
        One row per group and facet: group columns, ``over`` (``items`` or ``variants``),
        ``n`` (units resampled), ``se_predicted`` (from the components), ``se_expected``
        (``se_predicted * sqrt((n-1)/n)``), ``se_resampling``, ``mc_se`` (Monte Carlo standard
        error of ``se_resampling``), ``z`` (``(se_resampling - se_expected) / mc_se``),
        ``resampling`` (the method), ``n_resamples``, ``seed``. Facets with one unit are left out.

    Notes
    -----
    On a balanced design with no truncated component the two answers agree up to Monte Carlo
    error by construction: :math:`\hat\sigma^2_i + \hat\sigma^2_{iv}/b + \hat\sigma^2_e/(br)`
    is :math:`MS_i/(br)`, the sample variance of the item means, which the item bootstrap
    resamples; the same holds for variants. A truncated component makes the prediction larger
    (conservative). The Monte Carlo error is ``se sqrt(1/(2(B-1)))`` for the bootstrap
    standard deviation and ``se sqrt((pi/2 - 1)/B)`` for the mean absolute deviation.
    """
    from evalstats.compare import intervals
    from evalstats.noise._components import variance_components
    from evalstats.resampling import sample_size_curve

    by = (by,) if isinstance(by, str) else tuple(by)
    if components is None:
        components = variance_components(obs, by=by, seed=seed)
    comps = components.filter(pl.col("model_b").is_null())
    keys = list(by)
    rows = []
    items_level = comps["level"].first() == "items"
    for facet in ("items", "variants"):
        if facet == "items" and not items_level:
            continue
        pred = predicted_variance(comps, over=(facet,)).select(*keys, "n_items", "n_variants", "se")
        ncol = "n_items" if facet == "items" else "n_variants"
        pred = pred.filter(pl.col(ncol) > 1)
        if pred.height == 0:
            continue
        if facet == "items":
            res = intervals(
                obs, over="items", method="percentile", n_resamples=n_resamples, seed=seed, by=by
            ).select(*keys, pl.col("se").alias("se_resampling"))
            label = "item bootstrap (compare.intervals)"
            mc = 1.0 / math.sqrt(2.0 * (n_resamples - 1))
        else:
            # the components decompose over every variant (decoding settings included), so the
            # curve they are checked against must not hold decoding settings fixed
            curve = sample_size_curve(
                obs,
                moments="mean",
                method="bootstrap",
                n_resamples=n_resamples,
                seed=seed,
                by=by,
                variant_factors="all",
            )
            last = curve.filter(pl.col("n") == pl.col("n").max().over(keys))
            res = last.select(
                *keys, (pl.col("delta_mean") * math.sqrt(math.pi / 2)).alias("se_resampling")
            )
            label = "n* Delta(N), bootstrap (resampling.sample_size_curve)"
            mc = math.sqrt((math.pi / 2 - 1) / n_resamples)
        j = pred.join(res, on=keys, how="inner")
        n = j[ncol].cast(pl.Float64)
        se_exp = j["se"] * ((n - 1) / n).sqrt()
        rows.append(
            j.select(
                *keys,
                pl.lit(facet).alias("over"),
                pl.col(ncol).cast(pl.Int64).alias("n"),
                pl.col("se").alias("se_predicted"),
                se_exp.alias("se_expected"),
                pl.col("se_resampling"),
                (se_exp * mc).alias("mc_se"),
                ((pl.col("se_resampling") - se_exp) / (se_exp * mc)).alias("z"),
                pl.lit(label).alias("resampling"),
                pl.lit(int(n_resamples)).alias("n_resamples"),
                pl.lit(int(seed)).alias("seed"),
            )
        )
    if not rows:
        schema = {k: components.schema[k] for k in keys}
        return pl.DataFrame(schema=schema | _CHECK_SCHEMA)
    return pl.concat(rows).sort([*keys, "over"])


_CHECK_SCHEMA = {
    "over": pl.String,
    "n": pl.Int64,
    "se_predicted": pl.Float64,
    "se_expected": pl.Float64,
    "se_resampling": pl.Float64,
    "mc_se": pl.Float64,
    "z": pl.Float64,
    "resampling": pl.String,
    "n_resamples": pl.Int64,
    "seed": pl.Int64,
}
