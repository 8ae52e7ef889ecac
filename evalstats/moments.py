"""Distribution of a model's score over prompt variants: moments, quantiles, MaxP/AvgP/CPS, PSS.

ReliableEval (Lior et al.) treats the score of a model over meaning-preserving prompt
perturbations as a random variable and summarises it by its moments; State of What Art
(Mizrahi et al.) adds MaxP, AvgP and CPS; ProSA (Zhuo et al.) adds the item-level PSS.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING

import polars as pl

from evalstats._frames import describe_group
from evalstats._kernels import CONSTANT_RTOL, mls_interval, two_way_mean_squares
from evalstats._ordered import grouped_in_order
from evalstats.design._frames import analysis_input
from evalstats.errors import DegenerateDataWarning, ParameterError
from evalstats.factors import hold_fixed
from evalstats.schema import (
    as_lazy,
    metric_info,
    unit_interval_metrics,
    validate_by,
    validate_observations,
    validate_units,
)

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from evalstats._frames import TableLike
    from evalstats.design import Design

__all__ = ["SPREAD_COLUMNS", "prompt_spread", "variant_scores"]

#: Result columns of :func:`prompt_spread` after the group columns, in order.
SPREAD_COLUMNS: tuple[str, ...] = (
    "n_variants",
    "mean",
    "variance",
    "variance_unbiased",
    "std",
    "skewness",
    "kurtosis",
    "min",
    "q05",
    "q25",
    "median",
    "q75",
    "q95",
    "max",
    "spread",
    "max_p",
    "avg_p",
    "cps",
    "pss",
    "noise_variance",
    "prompt_variance",
    "prompt_variance_low",
    "prompt_variance_high",
    "confidence_level",
)


def variant_scores(
    units: pl.DataFrame | pl.LazyFrame, *, by: Sequence[str] | str = ("model", "dataset", "metric")
) -> pl.DataFrame:
    """One score per (group, variant): the unit score, averaged over runs when there are several.

    Parameters
    ----------
    units : polars.DataFrame or polars.LazyFrame
        Unit table (or an observation table, which is aggregated first).
    by : tuple of str, default ('model', 'dataset', 'metric')
        Group columns.

    Returns
    -------
    polars.DataFrame
        Columns ``*by, variant, score, n_items, n_runs`` sorted by group and variant;
        ``n_items`` is the total over runs (null when unknown).

    Notes
    -----
    When every run's score times its ``n_items`` is a whole number (scores are counts of
    correct items, as for 0/1 item scores), ``score`` is the total count over the total
    ``n_items``, so equal fractions are equal floats and rank-based methods see exact ties;
    otherwise it is the mean of the run scores (the same value up to rounding when the runs
    have equal ``n_items``).

    Examples
    --------
    >>> from evalstats.simulate import unit_table
    >>> variant_scores(unit_table(n_models=1, n_variants=3, n_runs=2, seed=0)).height
    3
    """
    lf = validate_units(units)
    by = validate_by(lf.collect_schema().names(), by)
    keys = [*by, "variant"]
    # counts where the data are counts: a unit score times n_items is its number of correct
    # items (sum of item scores); the variant score is then sum(counts) / sum(n_items), so equal
    # fractions are equal floats (the mean of 0.1 and 0.2 is 0.15000000000000002, 3/20 is 0.15)
    count = pl.col("score") * pl.col("n_items")
    is_count = (count - count.round()).abs() <= 1e-9 * pl.col("n_items")
    exact = pl.col("n_items").is_not_null().all() & is_count.all()
    return (
        lf.group_by(keys)
        .agg(
            pl.when(exact)
            .then(count.round().sum() / pl.col("n_items").sum())
            .otherwise(pl.col("score").mean())
            .alias("score"),
            pl.when(pl.col("n_items").is_null().any())
            .then(None)
            .otherwise(pl.col("n_items").sum())
            .cast(pl.Int64)
            .alias("n_items"),
            pl.len().cast(pl.Int64).alias("n_runs"),
        )
        .sort(keys)
        .collect()
    )


def _pss(observations: pl.LazyFrame, by: tuple[str, ...]) -> pl.LazyFrame:
    """ProSA's PSS per group: mean over items of the mean pairwise |difference| over variants.

    The sum of pairwise differences of an item's k cell scores is that of their sorted values
    weighted by ``2r - k - 1``; when every cell score is 0 or 1 (one run of a 0/1 metric per
    cell: DOVE's shape) it is ``ones * (k - ones)``, the same number (integers, exact in
    floating point) without sorting every item's scores one group at a time (29 CPU seconds
    of a 20M-row report).
    """
    # built once: both the counts and (scores not 0/1) the sorted sums read it
    per_cell = (
        observations.group_by([*by, "item", "variant"]).agg(pl.col("score").mean()).collect().lazy()
    )
    k = pl.len()
    counts = (
        per_cell.group_by([*by, "item"])
        .agg(
            k.alias("__k"),
            (pl.col("score") == 1.0).sum().cast(pl.Float64).alias("__ones"),
            ((pl.col("score") == 0.0) | (pl.col("score") == 1.0))
            .fill_null(False)
            .all()
            .alias("__binary"),
        )
        .collect()
    )
    if counts.height and bool(counts["__binary"].all()):
        ones = pl.col("__ones")
        sums = counts.lazy().with_columns((ones * (pl.col("__k") - ones)).alias("__s"))
    else:
        rank = pl.int_range(1, k + 1)
        sums = per_cell.group_by([*by, "item"]).agg(
            k.alias("__k"), (pl.col("score").sort() * (2 * rank - k - 1)).sum().alias("__s")
        )
    per_item = sums.filter(pl.col("__k") >= 2).with_columns(
        (pl.col("__s") / (pl.col("__k") * (pl.col("__k") - 1) / 2)).alias("__d")
    )
    # sorted, and in that order within groups: the mean adds the same floats in the same order
    # on every call (hash grouping alone reorders them, which moves the last bit)
    return (
        per_item.sort([*by, "item"])
        .group_by(list(by), maintain_order=True)
        .agg(pl.col("__d").mean().alias("pss"))
    )


_NOISE_SCHEMA = {
    "noise_variance": pl.Float64,
    "prompt_variance": pl.Float64,
    "prompt_variance_low": pl.Float64,
    "prompt_variance_high": pl.Float64,
}


def _noise(
    observations: pl.LazyFrame, by: tuple[str, ...], confidence_level: float
) -> pl.DataFrame:
    """Per group: noise and prompt variance from the item x variant table, with an interval.

    Runs of one (item, variant) cell are averaged; items scored under every variant of the
    group form the complete two-way table. noise = MS_iv / I, prompt = (MS_v − MS_iv) / I.
    """
    cells = grouped_in_order(
        observations, [*by, "item", "variant"], pl.col("score").mean()
    ).collect()
    rows = []
    groups = cells.group_by(list(by), maintain_order=True) if by else [((), cells)]
    for key, g in groups:
        key = key if isinstance(key, tuple) else (key,)
        n_var = g["variant"].n_unique()
        complete = g.filter(pl.len().over("item") == n_var)
        n_items = complete["item"].n_unique()
        out = dict.fromkeys(_NOISE_SCHEMA)
        if n_var >= 2 and n_items >= 2:
            y = complete["score"].to_numpy().reshape(n_items, n_var)  # sorted: item, variant
            ms_v, ms_iv, df_v, df_iv = two_way_mean_squares(y)
            lo, hi = mls_interval(ms_v / n_items, df_v, ms_iv / n_items, df_iv, confidence_level)
            out = {
                "noise_variance": ms_iv / n_items,
                "prompt_variance": (ms_v - ms_iv) / n_items,
                "prompt_variance_low": lo,
                "prompt_variance_high": hi,
            }
        rows.append({**dict(zip(by, key)), **out})
    schema = {b: cells.schema[b] for b in by} | _NOISE_SCHEMA
    return pl.DataFrame(rows, schema=schema, orient="row")


def _by_metric_scale(out: pl.DataFrame, units: pl.LazyFrame, by: tuple[str, ...]) -> pl.DataFrame:
    """Direction and [0, 1]-only columns per metric.

    MaxP is the best variant; CPS and PSS only for metrics on [0, 1] (CPS only where higher is
    better).
    """
    infos = metric_info(units)
    unit = unit_interval_metrics(units)
    names = list(infos)
    meta = pl.DataFrame(
        {
            "metric": names,
            "__hib": [infos[n].higher_is_better for n in names],
            "__unit": [unit[n] for n in names],
        },
        schema={"metric": pl.String, "__hib": pl.Boolean, "__unit": pl.Boolean},
    )
    if "metric" in by:
        out = out.join(meta, on="metric", how="left")
    elif len(names) == 1:
        out = out.with_columns(
            pl.lit(meta["__hib"][0]).alias("__hib"), pl.lit(meta["__unit"][0]).alias("__unit")
        )
    else:  # several metrics pooled by the caller's `by`: no direction, no [0, 1] method
        out = out.with_columns(
            pl.lit(None, pl.Boolean).alias("__hib"), pl.lit(False).alias("__unit")
        )
    null = pl.lit(None, dtype=pl.Float64)
    return out.with_columns(
        pl.when(pl.col("__hib").not_()).then(pl.col("min")).otherwise(pl.col("max")).alias("max_p"),
        pl.when(pl.col("__unit") & pl.col("__hib"))
        .then(pl.col("cps"))
        .otherwise(null)
        .alias("cps"),
        *[
            pl.when(pl.col("__unit")).then(pl.col(c)).otherwise(null).alias(c)
            # PSS compares 0/1 item outcomes; the noise and prompt variances come from the
            # variant x item table and hold on any scale
            for c in ("pss",)
        ],
    ).drop("__hib", "__unit")


#: Columns set to 0 when a group's variant scores are constant up to rounding.
_ZEROED = ("variance", "variance_unbiased", "std")
#: Columns undefined (NaN) then.
_UNDEFINED = ("skewness", "kurtosis")


def prompt_spread(
    units: TableLike,
    *,
    by: Sequence[str] | str = ("model", "dataset", "metric"),
    confidence_level: float = 0.95,
    variant_factors: Sequence[str] | str | None = None,
    roles: str | Mapping[str, str] | None = None,
    design: Design | str | Path | None = None,
) -> pl.DataFrame:
    """Moments, quantiles and prompt-sensitivity scores of unit scores over prompt variants.

    Parameters
    ----------
    units : polars.DataFrame, polars.LazyFrame, pandas.DataFrame or pyarrow.Table
        Unit table, one row per (model, dataset, variant, run); see :mod:`evalstats.schema`.
        An observation table (with ``item``) is aggregated first and also gives ``pss``.
    by : tuple of str, default ('model', 'dataset', 'metric')
        Group columns; one result row per group.
    confidence_level : float, default 0.95
        Level of the interval on ``prompt_variance``.
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
        The group columns (``by``, then any held factor), then :data:`SPREAD_COLUMNS`, sorted by
        the group columns.

    Raises
    ------
    SchemaError
        If a column named in ``by`` is missing, or the table is invalid.

    Warns
    -----
    DegenerateDataWarning
        When a group has fewer than two variants (its variance-based columns are NaN).

    See Also
    --------
    evalstats.resampling.sample_size_curve : How many variants the mean needs.

    Notes
    -----
    With ``x_1..x_N`` the unit scores of the ``N`` variants of a group (averaged over runs when a
    variant has several):

    - ``mean`` = mu_1 = sum(x)/N; ``variance`` = mu_2 = sum((x - mu_1)^2)/N (ReliableEval's
      population form, Eq. 3); ``variance_unbiased`` divides by N - 1; ``std`` = sqrt(mu_2);
    - ``skewness`` and ``kurtosis`` (excess) are the biased sample forms, as
      ``scipy.stats.skew`` / ``scipy.stats.kurtosis`` with defaults;
    - quantiles use linear interpolation (numpy's default);
    - ``max_p`` = the best variant's score (the max; the min for a lower-is-better metric),
      ``avg_p`` = mean and ``cps`` = MaxP * (1 - (MaxP - AvgP)) (Mizrahi et al., 2024), which is
      defined for accuracies: null for a metric not on [0, 1] or where lower is better;
    - ``pss`` (ProSA, Zhuo et al., 2024) = mean over items of the mean over variant pairs of
      ``|y(item, v) - y(item, v')|``, for correctness scores: null for unit-level input and for
      a metric not on [0, 1];
    - ``noise_variance``, ``prompt_variance`` (item-level input only, else null): variants
      of one dataset share its items, so two variant scores do not differ by the item
      sampling variance x(1 - x)/n_items but by the variant x item interaction. With y_iv the
      score of item i under variant v (runs averaged), on the I items scored under every
      variant, MS_v = I Σ_v (ȳ.v − ȳ..)²/(V − 1) and MS_iv the interaction mean square with
      (I − 1)(V − 1) df: ``noise_variance`` = MS_iv / I (what the variant scores would vary
      by with no prompt effect) and ``prompt_variance`` = (MS_v − MS_iv) / I, the unbiased
      (ANOVA) estimate of the variance of the variants' effects. It is not truncated at 0, so
      it stays unbiased; a negative value means the variants differ less than noise alone
      predicts. For 0/1 scores with no item x prompt interaction, E[MS_iv] is the mean
      per-item binomial variance, so ``noise_variance`` is Σ_i p_i(1 − p_i)/I² (the issue
      18 estimator) without the bias of plugging in p̂_i. ``prompt_variance_low`` and
      ``prompt_variance_high`` are the modified large-sample interval for a difference of
      mean squares (Graybill and Wang, 1980; Burdick and Graybill, 1992), close to nominal
      coverage when the prompt variance is 0 and when it is not (tests/test_moments.py,
      simulation). Like the estimate, the bounds are not clipped at 0 (clipping them for
      display raises the coverage of a true 0 to about 1 - (1 - level)/2).

    Every column except ``n_variants``, ``skewness``, ``kurtosis`` and ``cps`` is in the
    metric's units (``variance``, ``noise_variance``, ``prompt_variance`` in squared units):
    scaling a metric by ``c`` scales them by ``c`` (``c**2``).

    Checked against: the authors' published ``bbh {AvgP,MaxP,CPS} (no filtering).csv`` for all
    15 BBH tasks and 11 models to 1e-9 (``metric results/`` of the release in
    ../shared/data/state-of-what-art/, read in place by tests/test_moments.py); skewness and
    kurtosis against scipy.stats in tests/test_moments.py.

    References
    ----------
    .. [1] Lior et al., "A Recipe for Stochastic LLM Evaluation via Method of Moments"
       (ReliableEval).
    .. [2] Mizrahi et al., "State of What Art? A Call for Multi-Prompt LLM Evaluation", TACL 2024.
    .. [3] Zhuo et al., "ProSA: Assessing and Understanding the Prompt Sensitivity of LLMs",
       EMNLP 2024 Findings.

    Examples
    --------
    >>> from evalstats.simulate import observations
    >>> obs = observations(n_models=2, n_items=40, n_variants=8, seed=0)
    >>> out = prompt_spread(obs)
    >>> out.select("model", "n_variants", "max_p").rows()
    [('m0', 8, 0.55), ('m1', 8, 0.825)]
    >>> round(out["cps"][0], 6), round(out["pss"][0], 4)
    (0.510469, 0.4491)
    """
    _input = analysis_input(units, roles=roles, design=design)
    units, variant_factors = _input.table, _input.variant_factors(variant_factors)
    if not (isinstance(confidence_level, (int, float)) and 0 < confidence_level < 1):
        raise ParameterError(f"`confidence_level` must be in (0, 1), got {confidence_level!r}.")
    lf = as_lazy(units)
    names = lf.collect_schema().names()
    by = validate_by(names, by, table="unit table" if "item" not in names else "observation table")
    by = (*by, *hold_fixed(lf, variant_factors=variant_factors, by=by))
    pss = None
    noise = None
    if "item" in names:
        obs = validate_observations(lf)
        pss = _pss(obs, by)
        noise = _noise(obs, by, float(confidence_level))
    scores = variant_scores(lf, by=by)
    x = pl.col("score")
    nan = float("nan")
    out = scores.group_by(list(by)).agg(
        pl.len().cast(pl.Int64).alias("n_variants"),
        x.mean().alias("mean"),
        x.var(ddof=0).alias("variance"),
        x.var(ddof=1).fill_null(nan).alias("variance_unbiased"),
        x.std(ddof=0).alias("std"),
        x.skew(bias=True).fill_null(nan).alias("skewness"),
        x.kurtosis(fisher=True, bias=True).fill_null(nan).alias("kurtosis"),
        x.min().alias("min"),
        x.quantile(0.05, interpolation="linear").alias("q05"),
        x.quantile(0.25, interpolation="linear").alias("q25"),
        x.quantile(0.5, interpolation="linear").alias("median"),
        x.quantile(0.75, interpolation="linear").alias("q75"),
        x.quantile(0.95, interpolation="linear").alias("q95"),
        x.max().alias("max"),
    )
    # variant scores equal up to rounding (a spread of 1e-16): the variance is 0, not noise, and
    # skewness and kurtosis (ratios of noise to noise) are undefined; same rule as is_constant
    scale = pl.max_horizontal(pl.col("max").abs(), pl.col("min").abs())
    scale = pl.when(scale > 0).then(scale).otherwise(1.0)
    constant = (pl.col("n_variants") > 1) & (pl.col("max") - pl.col("min") <= CONSTANT_RTOL * scale)
    out = out.with_columns(
        *(pl.when(constant).then(0.0).otherwise(pl.col(c)).alias(c) for c in _ZEROED),
        *(pl.when(constant).then(nan).otherwise(pl.col(c)).alias(c) for c in _UNDEFINED),
        pl.when(constant).then(pl.col("min")).otherwise(pl.col("max")).alias("max"),
    )
    flat = out.filter(constant).sort(list(by))
    if flat.height:
        first = describe_group(flat.select(*by).row(0, named=True))
        warnings.warn(
            f"{flat.height} group(s) have variant scores equal up to rounding (first: {first}); "
            "their variance is 0 and their skewness and kurtosis are NaN.",
            DegenerateDataWarning,
            stacklevel=2,
        )
    out = out.with_columns(
        (pl.col("max") - pl.col("min")).alias("spread"),
        pl.col("max").alias("max_p"),
        pl.col("mean").alias("avg_p"),
        (pl.col("max") * (1 - (pl.col("max") - pl.col("mean")))).alias("cps"),
        pl.lit(float(confidence_level)).alias("confidence_level"),
    )
    if noise is not None:
        out = out.join(noise, on=list(by), how="left")
    else:
        out = out.with_columns(pl.lit(None, dtype=t).alias(c) for c, t in _NOISE_SCHEMA.items())
    if pss is not None:
        out = out.join(pss.collect(), on=list(by), how="left")
    else:
        out = out.with_columns(pl.lit(None, dtype=pl.Float64).alias("pss"))
    out = _by_metric_scale(out, validate_units(lf, check_values=False), by)
    out = out.select(*by, *SPREAD_COLUMNS).sort(list(by))
    small = out.filter(pl.col("n_variants") < 2)
    if small.height:
        first = describe_group(small.select(*by).row(0, named=True))
        warnings.warn(
            f"{small.height} group(s) have a single variant (first: {first}); their variance, "
            "skewness and kurtosis are NaN.",
            DegenerateDataWarning,
            stacklevel=2,
        )
    return out
