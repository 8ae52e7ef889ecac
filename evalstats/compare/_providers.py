"""Provider and error audit: error rates, two scoring policies, provider differences, latency."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from evalstats.compare._intervals import mean_interval
from evalstats.compare._paired import paired_difference
from evalstats.design._frames import analysis_input
from evalstats.errors import SchemaError
from evalstats.results import check_choice, check_confidence_level
from evalstats.schema import validate_by, validate_observations

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from evalstats._frames import TableLike
    from evalstats.design import Design

__all__ = ["ProviderAudit", "provider_audit"]

POLICIES = ("errors_as_failures", "errors_excluded")


@dataclass(frozen=True, slots=True)
class ProviderAudit:
    """Result of :func:`provider_audit`: five tidy frames.

    Attributes
    ----------
    errors : polars.DataFrame
        Error rate per group, provider and category (``any`` = all categories) with Wilson
        intervals.
    scores : polars.DataFrame
        Mean score per group, provider and scoring policy, with intervals and ``error_share``.
    differences : polars.DataFrame
        Paired differences between providers on shared items, per policy.
    latency : polars.DataFrame
        Latency mean with interval and quantiles per group and provider (empty without
        ``latency_s``).
    tail_quality : polars.DataFrame
        Share of calls answered correctly within latency ``t`` (empty without ``latency_s``).
    confidence_level : float
    method : str
    seed : int
    """

    errors: pl.DataFrame
    scores: pl.DataFrame
    differences: pl.DataFrame
    latency: pl.DataFrame
    tail_quality: pl.DataFrame
    confidence_level: float
    method: str
    seed: int

    def to_frame(self) -> pl.DataFrame:
        """The ``scores`` frame (the headline table)."""
        return self.scores


def _groups(frame: pl.DataFrame, keys: Sequence[str]) -> dict[tuple, pl.DataFrame]:
    if not keys:
        return {(): frame}
    return frame.partition_by(list(keys), as_dict=True, maintain_order=True)


def provider_audit(
    observations: TableLike,
    *,
    provider: str = "provider",
    method: str = "cluster",
    confidence_level: float = 0.95,
    n_resamples: int = 9999,
    seed: int = 0,
    latency_grid: Sequence[float] | None = None,
    by: Sequence[str] = ("model", "metric"),
    roles: str | Mapping[str, str] | None = None,
    design: Design | str | Path | None = None,
) -> ProviderAudit:
    r"""Audit providers: error rates, scores under two error policies, paired differences.

    Parameters
    ----------
    observations : polars.DataFrame, polars.LazyFrame, pandas.DataFrame or pyarrow.Table
        Item-level observation table with a provider column; ``error`` (null for a clean call)
        and ``latency_s`` are used when present.
    provider : str, default 'provider'
        Column naming the API provider.
    method : {'cluster', 't', 'wilson'}, default 'cluster'
        Interval of the mean score: cluster-robust over items (repeated variants and runs of an
        item are correlated), ``t`` over calls, or Wilson (0/1 scores).
    confidence_level : float, default 0.95
        Confidence level of the intervals.
    n_resamples : int, default 9999
        Random sign flips of the paired provider tests.
    seed : int, default 0
        Seed of the random generator; the same seed gives the same result.
    latency_grid : sequence of float, optional
        Latencies ``t`` at which the tail-to-quality curve is evaluated; default 50 points
        from 0 to the largest latency.
    by : tuple of str, default ('model', 'metric')
        Columns that define the groups (a provider is audited within each group).
    roles : str or mapping, optional
        Column roles for a table not in the canonical layout, as ``--roles`` gives them for a
        file (``{"passage": "cluster"}`` or ``"passage=cluster"``); see
        :func:`evalstats.design.analysis_input`.
    design : Design or path, optional
        A design (:func:`evalstats.infer_design`) or a design file (``design.toml``) to apply,
        as ``--design`` does.

    Returns
    -------
    ProviderAudit
        ``errors``, ``scores``, ``differences``, ``latency``, ``tail_quality`` frames.

    Raises
    ------
    SchemaError
        The provider column, ``item`` or a column of ``by`` is missing.

    Notes
    -----
    With :math:`N` calls, :math:`E` errored calls and :math:`C` correct clean calls (sum of
    clean scores), *errors as failures* scores :math:`C/N` (an errored call scores 0 whatever
    was recorded) and *errors excluded* scores :math:`C/(N-E)`, so
    :math:`\text{failures} = \text{excluded}\cdot(1 - E/N)`: the policies differ exactly by the
    error share. Error rates use Wilson intervals over calls. Provider differences are paired
    on items (item means over variants and runs) with :func:`paired_difference`. The
    tail-to-quality curve is :math:`q(t) = \frac1N\sum_i s_i\,[\ell_i \le t]` with errors
    scored 0.
    Checked against: planted error rates of :func:`evalstats.simulate.observations`
    (``tests/compare/test_providers.py``).

    Examples
    --------
    >>> from evalstats.simulate import observations
    >>> obs = observations(n_models=1, n_items=200, n_variants=5, providers=("a", "b"),
    ...                    error_rates={"a": {"timeout": 0.02}, "b": {"timeout": 0.1}}, seed=0)
    >>> audit = provider_audit(obs)
    >>> audit.errors.filter(category="timeout").select("provider", "rate").rows()
    [('a', 0.016), ('b', 0.107)]
    """
    observations = analysis_input(observations, roles=roles, design=design).table
    check_choice("method", method, ("cluster", "t", "wilson"))
    level = check_confidence_level(confidence_level)
    lf = validate_observations(observations, require_item=True, errored="keep")
    names = lf.collect_schema().names()
    if provider not in names:
        raise SchemaError(
            f"the observation table has no provider column {provider!r} (columns: "
            f"{', '.join(names)}). Pass `provider=` naming it."
        )
    by = validate_by(names, by, table="observation table")
    if provider in by:
        raise SchemaError(f"`by` must not contain the provider column {provider!r}.")
    keys = [*by, provider]
    err = pl.col("error") if "error" in names else pl.lit(None, dtype=pl.String)
    cols = [pl.col(c) for c in dict.fromkeys([*keys, "dataset", "item", "variant", "run", "score"])]
    cols.append(err.alias("error"))
    if "latency_s" in names:
        cols.append(pl.col("latency_s"))
    df = lf.select(cols).collect()
    df = df.with_columns(
        pl.col("error").is_not_null().alias("__err"),
        pl.concat_str(["dataset", "item"], separator="\x1f").alias("__cluster"),
    ).with_columns(
        pl.when("__err").then(0.0).otherwise(pl.col("score")).alias("__fail"),
    )
    key_schema = {k: df.schema[k] for k in keys}

    # error rates --------------------------------------------------------------------------
    categories = sorted(df["error"].drop_nulls().unique().to_list())
    err_rows = []
    for key, g in _groups(df, keys).items():
        n = g.height
        for cat in ["any", *categories]:
            hits = g["__err"] if cat == "any" else (g["error"] == cat).fill_null(False)
            x = hits.cast(pl.Float64).to_numpy()
            mean, _, low, high = mean_interval(x, method="wilson", confidence_level=level)
            err_rows.append((*key, cat, n, int(x.sum()), mean, low, high))
    errors = pl.DataFrame(
        err_rows,
        schema=key_schema
        | {
            "category": pl.String,
            "n_calls": pl.Int64,
            "n_errors": pl.Int64,
            "rate": pl.Float64,
            "ci_low": pl.Float64,
            "ci_high": pl.Float64,
        },
        orient="row",
    ).sort([*keys, "category"])

    # scores under the two policies --------------------------------------------------------
    score_rows = []
    for key, g in _groups(df, keys).items():
        n = g.height
        n_err = int(g["__err"].sum())
        for policy in POLICIES:
            sub = g if policy == "errors_as_failures" else g.filter(~pl.col("__err"))
            x = sub["__fail"].to_numpy()
            clusters = sub["__cluster"].to_numpy()
            mean, se, low, high = mean_interval(
                x, method=method, confidence_level=level, clusters=clusters
            )
            score_rows.append((*key, policy, n, n_err, n_err / n, x.size, mean, se, low, high))
    scores = pl.DataFrame(
        score_rows,
        schema=key_schema
        | {
            "policy": pl.String,
            "n_calls": pl.Int64,
            "n_errors": pl.Int64,
            "error_share": pl.Float64,
            "n": pl.Int64,
            "mean": pl.Float64,
            "se": pl.Float64,
            "ci_low": pl.Float64,
            "ci_high": pl.Float64,
        },
        orient="row",
    ).with_columns(pl.lit(method).alias("method"), pl.lit(level).alias("confidence_level"))
    scores = scores.sort([*keys, "policy"])

    # paired provider differences on shared items ------------------------------------------
    diff_frames = []
    for key, g in _groups(df, list(by)).items():
        for policy in POLICIES:
            sub = g if policy == "errors_as_failures" else g.filter(~pl.col("__err"))
            wide = (
                sub.group_by(["__cluster", provider])
                .agg(pl.col("__fail").mean())
                .pivot(on=provider, index="__cluster", values="__fail", sort_columns=True)
                .sort("__cluster")
            )
            provs = [c for c in wide.columns if c != "__cluster"]
            for pa, pb in combinations(provs, 2):
                pair = wide.select(pa, pb).drop_nulls()
                if pair.height < 2:
                    continue
                res = paired_difference(
                    pair[pa].to_numpy(),
                    pair[pb].to_numpy(),
                    confidence_level=level,
                    n_resamples=n_resamples,
                    seed=seed,
                )
                head = pl.DataFrame(
                    {
                        **{b: [k] for b, k in zip(by, key)},
                        "policy": [policy],
                        "provider_a": [pa],
                        "provider_b": [pb],
                    },
                    schema={b: df.schema[b] for b in by}
                    | {"policy": pl.String, "provider_a": pl.String, "provider_b": pl.String},
                )
                diff_frames.append(pl.concat([head, res.to_frame()], how="horizontal"))
    differences = (
        pl.concat(diff_frames).sort([*by, "policy", "provider_a", "provider_b"])
        if diff_frames
        else pl.DataFrame()
    )

    # latency and tail-to-quality ----------------------------------------------------------
    lat_schema = key_schema | {
        "n": pl.Int64,
        "mean": pl.Float64,
        "ci_low": pl.Float64,
        "ci_high": pl.Float64,
        "median": pl.Float64,
        "p90": pl.Float64,
        "p99": pl.Float64,
    }
    tq_schema = key_schema | {"latency_s": pl.Float64, "quality": pl.Float64}
    lat_rows, tq_rows = [], []
    if "latency_s" in df.columns:
        lat = df.filter(pl.col("latency_s").is_not_null())
        grid = (
            np.asarray(latency_grid, dtype=float)
            if latency_grid is not None
            else np.linspace(0.0, float(lat["latency_s"].max() or 0.0), 50)
        )
        for key, g in _groups(lat, keys).items():
            t = g["latency_s"].to_numpy()
            mean, _, low, high = mean_interval(t, method="t", confidence_level=level)
            q = np.quantile(t, [0.5, 0.9, 0.99])
            lat_rows.append((*key, t.size, mean, low, high, *map(float, q)))
            s = g["__fail"].to_numpy()
            order = np.argsort(t, kind="stable")
            cum = np.concatenate([[0.0], np.cumsum(s[order])])
            within = np.searchsorted(t[order], grid, side="right")
            for tt, k in zip(grid, within):
                tq_rows.append((*key, float(tt), float(cum[k] / t.size)))
    latency = pl.DataFrame(lat_rows, schema=lat_schema, orient="row").sort(keys)
    tail_quality = pl.DataFrame(tq_rows, schema=tq_schema, orient="row").sort([*keys, "latency_s"])
    return ProviderAudit(
        errors=errors,
        scores=scores,
        differences=differences,
        latency=latency,
        tail_quality=tail_quality,
        confidence_level=level,
        method=method,
        seed=seed,
    )
