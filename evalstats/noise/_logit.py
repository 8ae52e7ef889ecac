"""A logit-scale check of the variance components of 0/1 scores (crossed logistic mixed model)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np
import polars as pl

from evalstats.errors import InsufficientDataError, MetricScaleError, ParameterError
from evalstats.noise._components import _prepare, variance_components

__all__ = ["logit_components"]

#: Variance of the standard logistic distribution: the residual of a logit model.
LOGISTIC_VARIANCE = math.pi**2 / 3


def logit_components(
    obs: pl.DataFrame | pl.LazyFrame,
    *,
    by: Sequence[str] | str = ("model", "dataset", "metric"),
) -> pl.DataFrame:
    r"""Item and prompt-variant variance of 0/1 scores on the logit scale, next to the linear one.

    Fits, per group, the crossed logistic mixed model
    :math:`\operatorname{logit} P(y_{ivr} = 1) = \mu + a_i + b_v` with
    :math:`a_i \sim N(0, \tau^2_i)`, :math:`b_v \sim N(0, \tau^2_v)` by statsmodels'
    ``BinomialBayesMixedGLM`` (variational Bayes, ``fit_vb``), and puts its shares next to the
    linear-scale shares of :func:`variance_components`. The check is whether the two scales
    tell the same story (which source dominates, the item:variant ratio); the linear scale is
    the one that adds up to the variance of a mean score.

    Parameters
    ----------
    obs : polars.DataFrame or polars.LazyFrame
        Observation table with 0/1 scores and an ``item`` column.
    by : tuple of str, default ('model', 'dataset', 'metric')
        Columns that define the groups.

    Returns
    -------
    polars.DataFrame
        Three rows per group (``component`` = ``item``, ``variant``, ``rest``): ``variance_logit``
        (posterior mean of the variance; ``rest`` is the logistic :math:`\pi^2/3`), ``sd_log_sd``
        (posterior sd of the log standard deviation), ``share_logit``, ``share_linear`` (the
        linear-scale share, ``rest`` = item x variant + residual), ``n_obs``.

    Raises
    ------
    ParameterError
        Scores that are not all 0 or 1.
    SchemaError
        No ``item`` column.

    Notes
    -----
    The interaction and run noise are not separate terms here: on the logit scale they sit in
    the Bernoulli residual (fixing :math:`\pi^2/3` as the "rest"), which keeps the fit to a few
    seconds per group (a term per item x variant cell makes it minutes). Variational Bayes
    slightly understates posterior spread; the point of the check is the ordering of the
    shares, not their intervals. Fixed-scale comparisons (latent-scale shares) follow Nakagawa
    & Schielzeth (2010).

    References
    ----------
    .. [1] Nakagawa & Schielzeth, "Repeatability for Gaussian and non-Gaussian data", Biological
       Reviews 85 (2010).

    Examples
    --------
    >>> from evalstats.simulate import observations
    >>> obs = observations(n_models=1, n_items=60, n_variants=6, prompt_sd=0.05, seed=0)
    >>> out = logit_components(obs)  # doctest: +SKIP
    """
    from statsmodels.genmod.bayes_mixed_glm import BinomialBayesMixedGLM

    lf, by, level = _prepare(obs, by)
    if level != "items":
        raise ParameterError("the logit-scale check needs item-level 0/1 scores.")
    df = lf.select(*dict.fromkeys([*by, "item", "variant", "score"])).collect()
    if df.height == 0:
        raise InsufficientDataError("the observation table has no rows.")
    bad = df.filter(~pl.col("score").is_in([0.0, 1.0]))
    if bad.height:
        where = f" (metric {bad['metric'][0]!r})" if "metric" in bad.columns else ""
        raise MetricScaleError(
            f"the logit-scale check needs 0/1 scores; got {bad['score'][0]!r}{where}. Use "
            "variance_components on the linear scale for graded scores."
        )
    linear = variance_components(df, by=by)
    rows = []
    keys = list(by)
    for key, g in df.partition_by(keys, as_dict=True, maintain_order=True).items():
        group = dict(zip(keys, key))
        lin = linear.filter(*(pl.col(k).eq_missing(v) for k, v in group.items()))
        lin_share = {r["component"]: r["share"] or 0.0 for r in lin.iter_rows(named=True)}
        lin_rest = lin_share.get("item_variant", 0.0) + lin_share.get("residual", 0.0)
        vc = {}
        if g["item"].n_unique() > 1:
            vc["item"] = "0 + C(item)"
        if g["variant"].n_unique() > 1:
            vc["variant"] = "0 + C(variant)"
        var = {"item": math.nan, "variant": math.nan}
        sds = {"item": math.nan, "variant": math.nan}
        if vc and 0 < g["score"].mean() < 1:
            model = BinomialBayesMixedGLM.from_formula("score ~ 1", vc, g.to_pandas())
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fit = model.fit_vb()
            for name, m, s in zip(model.vcp_names, fit.vcp_mean, fit.vcp_sd):
                var[name] = float(np.exp(2 * m))
                sds[name] = float(s)
        total = np.nansum([var["item"], var["variant"]]) + LOGISTIC_VARIANCE
        for comp, v, sd_, ls in (
            ("item", var["item"], sds["item"], lin_share.get("item")),
            ("variant", var["variant"], sds["variant"], lin_share.get("variant")),
            ("rest", LOGISTIC_VARIANCE, None, lin_rest),
        ):
            rows.append(
                {
                    **group,
                    "component": comp,
                    "variance_logit": None if math.isnan(v) else v,
                    "sd_log_sd": None if sd_ is None or math.isnan(sd_) else sd_,
                    "share_logit": None if math.isnan(v) else v / total,
                    "share_linear": ls,
                    "n_obs": g.height,
                }
            )
    schema = {k: df.schema[k] for k in keys} | {
        "component": pl.String,
        "variance_logit": pl.Float64,
        "sd_log_sd": pl.Float64,
        "share_logit": pl.Float64,
        "share_linear": pl.Float64,
        "n_obs": pl.Int64,
    }
    return pl.DataFrame(rows, schema=schema, orient="row").sort(keys, maintain_order=True)
