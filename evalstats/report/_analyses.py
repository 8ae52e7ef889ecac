"""The analysis registry: which analyses the report runs, when each applies, how each is called.

:data:`ANALYSES` lists every analysis in report order with its applicability rule (from
:mod:`~evalstats.report._applies`: None when the data supports it, else the reason it is skipped)
and its runner, which calls the public analysis functions and returns their result tables. :func:`run_analysis` calls one runner,
records its parameters and warnings, and attaches its reading (:mod:`~evalstats.report._readings`).
This module computes no statistic of its own.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import polars as pl

from evalstats.errors import (
    EvalstatsError,
    InsufficientDataError,
    LimitError,
    MetricScaleError,
    ParameterError,
    SchemaError,
)
from evalstats.report._applies import (
    Context,
    Spec,
    _compare_fixed,
    _intervals_fixed,
    _need_blocks,
    _need_default,
    _need_factors,
    _need_gold,
    _need_models,
    _need_noise,
    _need_providers,
    _need_runs,
    _need_stability,
    _need_variants,
    _noise_fixed,
    _ranks_fixed,
    _variants_fixed,
    stability_fixed,
)
from evalstats.report._commands import _names_an_option, option_spelling
from evalstats.report._failed import failed_reason
from evalstats.report._model import (
    AnalysisResult,
    bound,
    keyword_names,
    resolve,
)
from evalstats.report._readings import READINGS, method_name
from evalstats.report._wording import scale

__all__ = [
    "ANALYSES",
    "NOISE_TARGET_SHARE",
    "SPECS",
    "Context",
    "Spec",
    "check_options",
    "run_analysis",
]


# runners ------------------------------------------------------------------------------------


def _run_moments(ctx: Context, p: dict) -> tuple[dict, dict, dict]:
    from evalstats.moments import prompt_spread
    from evalstats.report._sparse import moments_with_whole_grid

    return moments_with_whole_grid(ctx, p, prompt_spread(ctx.obs, **p))


def _run_nstar(ctx: Context, p: dict) -> tuple[dict, dict, dict]:
    from evalstats.report._sparse import nstar_tables

    tables = nstar_tables(ctx, p)
    # a group with one prompt variant has no spread over prompts: its "n* = 1 of 1" and "the
    # variance is within ε of 0" (a real llm-stability group) say nothing; it is left out
    nstar = tables["nstar"]
    keys = list(nstar.columns[: nstar.columns.index("moment")])
    single = nstar.filter(pl.col("n_available") < 2).select(keys).unique(maintain_order=True)
    if not single.height or single.height == nstar.select(keys).unique().height:
        return tables, {}, {}
    kept = {
        k: t.join(single, on=[c for c in keys if c in t.columns], how="anti", nulls_equal=True)
        for k, t in tables.items()
    }
    return kept, {"single_variant_groups": single.height}, {}


def _nstar_fixed(ctx: Context) -> dict[str, Any]:
    """n* about unseen prompt variants (bootstrap); the pool n* is only about the recorded ones."""
    return {"method": "bootstrap", **_variants_fixed(ctx)}


def _run_converge(ctx: Context, p: dict) -> tuple[dict, dict, dict]:
    from evalstats.report._sparse import converge_table

    return {"converge": converge_table(ctx, p)}, {}, {}


def _run_stability(ctx: Context, p: dict) -> tuple[dict, dict, dict]:
    from evalstats.stability import stability_table

    return {"stability": stability_table(ctx.obs, **p)}, {}, {}


def _run_normality(ctx: Context, p: dict) -> tuple[dict, dict, dict]:
    from evalstats.normality import run_distribution, run_normality

    table = run_normality(ctx.obs, **p)
    if table.height and table["pvalue"].fill_nan(None).is_null().all():
        runs = ", ".join(str(n) for n in sorted(set(table["n"].to_list())))
        tests = ", ".join(method_name(m) for m in sorted(set(table["method"].to_list())))
        raise InsufficientDataError(
            f"the {tests} test could not be computed in any group ({runs} runs per group are "
            "too few)"
        )
    dist = run_distribution(ctx.obs, **({"by": p["by"]} if "by" in p else {}))
    return {"normality": table}, {}, {"distribution": dist}


def _run_correlation(ctx: Context, p: dict) -> tuple[dict, dict, dict]:
    from evalstats.correlation import correlation_matrix

    table = ctx.done["stability"].tables["stability"]
    return {"correlation": correlation_matrix(table, **p)}, {}, {}


def _run_anova(ctx: Context, p: dict) -> tuple[dict, dict, dict]:
    from evalstats.attribution import factor_anova, interaction_means

    res = factor_anova(ctx.obs, **p)
    tables = {"anova": res.to_frame()}
    term = res.strongest_interaction()
    if term is not None:
        tables["interaction"] = interaction_means(ctx.obs, term=term)
    values = {
        "ss_type": res.ss_type,
        "method": res.method,
        "n_obs": res.n_obs,
        "strongest_interaction": term,
        "aliased": dict(res.aliased),
        "min_pvalue_perm": res.min_pvalue_perm,
    }
    return tables, values, {"anova": res}


def _run_attribution(ctx: Context, p: dict) -> tuple[dict, dict, dict]:
    from evalstats.attribution import attribute

    res = attribute(ctx.obs, **p)
    if not res.cv_r_sq > 0:  # NaN (constant scores) or no better than the mean out of fold
        raise InsufficientDataError(
            f"the {res.method} model's cross-validated R² is {res.cv_r_sq:.2f} (≤ 0): the factors "
            "predict held-out scores no better than their mean; its importances would rank noise"
        )
    tables = {"attribution": res.to_frame()}
    if res.coefficients.height:
        tables["coefficients"] = res.coefficients
    values = {
        "cv_r_sq": res.cv_r_sq,
        "n_folds": res.n_folds,
        "n_obs": res.n_obs,
        "score_scale": res.score_scale,
        "aliased": dict(res.aliased),
    }
    return tables, values, {"attribution": res}


def _run_intervals(ctx: Context, p: dict) -> tuple[dict, dict, dict]:
    from evalstats.compare import default_over, intervals

    values = {}
    if p.get("over", "auto") == "auto":
        values["over_reason"] = default_over(ctx.obs)[1]
    return {"intervals": intervals(ctx.obs, **p)}, values, {}


def _run_compare(ctx: Context, p: dict) -> tuple[dict, dict, dict]:
    from evalstats.compare import compare_models, letter_groups

    pairs = compare_models(ctx.obs, **p)
    tables = {"compare": pairs}
    if p.get("family") == "global" and pairs.height:
        by = [c for c in p.get("by", ("dataset", "metric")) if c in pairs.columns]
        if by and pairs.select(by).n_unique() > 1:
            # beside the study-wide family: each dataset corrected on its own
            tables["compare_per_dataset"] = compare_models(ctx.obs, **{**p, "family": "group"})
    if pairs.height and p.get("column", "model") == "model":
        # groups of models the pairs' decisions cannot tell apart, per metric's direction
        by = p.get("by", ("dataset", "metric"))
        parts = (
            pairs.partition_by("metric", as_dict=True, maintain_order=True)
            if "metric" in pairs.columns
            else {(None,): pairs}
        )
        groups = [
            letter_groups(part, by=by, higher_is_better=ctx.data.higher_is_better(key[0]))
            for key, part in parts.items()
        ]
        tables["groups"] = pl.concat(groups)
    return tables, {}, {}


def _run_ppi(ctx: Context, p: dict) -> tuple[dict, dict, dict]:
    from evalstats.compare import ppi_mean

    return {"ppi": ppi_mean(ctx.obs, **p)}, {}, {}


def _run_ranks(ctx: Context, p: dict) -> tuple[dict, dict, dict]:
    from evalstats.compare import rank_intervals

    pairs = _holm_pairs(ctx, p)
    return (
        {"ranks": rank_intervals(ctx.obs, **p, **({"pairs": pairs} if pairs is not None else {}))},
        {},
        {},
    )


def _holm_pairs(ctx: Context, p: dict) -> pl.DataFrame | None:
    """The report's per-dataset comparison when the rank sets can follow it as it is.

    The rank sets of ``method='paired'`` follow Holm-corrected paired tests within each
    group; the report's comparison has them (``compare_per_dataset``, or ``compare`` itself
    with one group), on the same table and prompt factors. Reusing them saves running every
    test twice (24 s of CPU on a 30-model, 20-dataset table). Any other option (a method, a
    level, a correction set with --option) and the ranks run their own tests.
    """
    done = ctx.done.get("compare")
    if done is None or p.get("method", "paired") != "paired":
        return None
    if any(k in p for k in ("cluster", "over", "roles", "design")):
        return None
    by = tuple(p.get("by", ("dataset", "metric")))
    table = done.tables.get("compare_per_dataset", done.tables.get("compare"))
    level = p.get("confidence_level", 0.95)
    params = done.params
    if (
        table is None
        or params.get("correction", "holm") != "holm"
        or params.get("confidence_level", 0.95) != level
        or params.get("paired_on", "items") != "items"
        or params.get("column", "model") != "model"
        or params.get("over", "auto") != "auto"
        or params.get("cluster") is not None
        or tuple(params.get("by", ("dataset", "metric"))) != by  # the same groups
        or params.get("variant_factors") != p.get("variant_factors")
    ):
        return None
    groups = table.select([c for c in by if c in table.columns]).n_unique()
    if "compare_per_dataset" not in done.tables and groups > 1 and params.get("family") != "group":
        return None
    return table


def _run_friedman(ctx: Context, p: dict) -> tuple[dict, dict, dict]:
    from evalstats.compare import friedman_nemenyi

    res = friedman_nemenyi(ctx.obs, **p)
    values = {
        "statistic": res.statistic,
        "pvalue": res.pvalue,
        "n_blocks": res.n_blocks,
        "n_models": res.n_models,
        "critical_difference": res.critical_difference,
        "dropped_blocks": res.dropped_blocks.to_dicts(),
    }
    return {"friedman": res.to_frame()}, values, {"friedman": res}


#: Interval width the report plans for, as a share of the metric's range (0.05 for accuracy in
#: [0, 1]): the full width of the 95 % interval of each model's mean.
NOISE_TARGET_SHARE = 0.05


def _run_noise(ctx: Context, p: dict) -> tuple[dict, dict, dict]:
    from evalstats.noise import plan, variance_components
    from evalstats.schema import metric_info, unit_interval_metrics

    comps = variance_components(ctx.obs, **p)
    level = p.get("confidence_level", 0.95)
    plans, targets, objects = [], {}, {}
    by_metric = "metric" in comps.columns
    # the range every analysis uses: declared, or [0, 1] for an undeclared metric whose scores
    # all lie there (as the ingest note and the axes say)
    on_unit = unit_interval_metrics(ctx.obs)
    for name, info in metric_info(ctx.obs).items():
        span = info.range if info.range is not None else (1.0 if on_unit.get(name) else None)
        if span is None:  # unbounded: no scale-free default target
            continue
        target = NOISE_TARGET_SHARE * span
        sub = comps.filter(pl.col("metric") == name) if by_metric else comps
        if sub.height == 0:
            continue
        res = plan(ctx.obs, target_width=target, components=sub, confidence_level=level)
        plans.append(res.best)
        targets[name] = target
        objects.setdefault("plan", res)
    values = {
        "target_width": targets,
        "target_share_of_range": NOISE_TARGET_SHARE,
        "cost": "run=1 (model calls)",
    }
    tables = {"components": comps}
    if plans:
        tables["plan"] = pl.concat(plans, how="diagonal_relaxed")
    return tables, values, objects


def _run_audit(ctx: Context, p: dict) -> tuple[dict, dict, dict]:
    from evalstats.compare import reversal_audit

    res = reversal_audit(ctx.obs, **p)
    tables = {"pairs": res.pairs, "models": res.models}
    return tables, {"n_reversals": res.n_reversals}, {"audit": res}


def _run_providers(ctx: Context, p: dict) -> tuple[dict, dict, dict]:
    from evalstats.compare import provider_audit

    # every call, the errored ones without a score included (the other analyses: scored rows)
    res = provider_audit(ctx.obs if ctx.calls is None else ctx.calls, **p)
    tables = {  # the first is what `evalstats providers` writes by default
        "versus": res.versus,
        "policies": res.policies,
        "errors": res.errors,
        "scores": res.scores,
        "differences": res.differences,
    }
    if res.settings.height:
        tables["settings"] = res.settings
    if res.latency.height:
        tables["latency"] = res.latency
        tables["tail_quality"] = res.tail_quality
    return tables, {}, {"providers": res}


def _anova_fixed(ctx: Context) -> dict[str, Any]:
    """Factors, and models and datasets as nuisance blocks when there are several of them.

    Pooling models and datasets would put their differences into the residual and let their
    interactions with the factors pass for factor effects; blocking compares configurations
    within each (model, dataset) and permutes only there.
    """
    block = tuple(
        col
        for col, levels in (("model", ctx.data.models), ("dataset", ctx.data.datasets))
        if len(levels) > 1
    )
    fixed: dict[str, Any] = {"factors": list(ctx.data.factors)}
    if block:
        fixed["block"] = block[0] if len(block) == 1 else block
    return fixed


def _provider_fixed(ctx: Context) -> dict[str, Any]:
    if ctx.data.provider is not None:
        return {}
    # errors but no provider column: compare the levels of the design's first setting that
    # varies (a judge's configurations, a quantization, a temperature), within each model
    held = [c for c in (getattr(ctx.design, "held", None) or ()) if c in ctx.obs.columns]
    if held:
        return {"provider": held[0]}
    # no setting either: audit the error rates and policies per model
    return {"provider": "model", "by": ()}


#: Every analysis of the report, in report order.
ANALYSES: tuple[Spec, ...] = (
    Spec(
        "moments",
        "Scores over prompt variants",
        "prompts",
        "evalstats.prompt_spread",
        "moments",
        _need_variants,
        _run_moments,
        _variants_fixed,
    ),
    Spec(
        "nstar",
        "Variants needed for a stable estimate (n*)",
        "prompts",
        "evalstats.required_sample_size",
        "nstar",
        _need_variants,
        _run_nstar,
        _nstar_fixed,
    ),
    Spec(
        "converge",
        "Sequential stopping rule",
        "prompts",
        "evalstats.convergence",
        "converge",
        _need_variants,
        _run_converge,
    ),
    Spec(
        "stability",
        "Agreement over repeated runs (TARa@N, TARr@N)",
        "stability",
        "evalstats.stability_table",
        "stability",
        _need_runs,
        _run_stability,
        stability_fixed,
    ),
    Spec(
        "normality",
        "Normality of run accuracies",
        "stability",
        "evalstats.run_normality",
        "normality",
        _need_runs,
        _run_normality,
    ),
    Spec(
        "correlation",
        "Correlations between stability measures",
        "stability",
        "evalstats.correlation_matrix",
        "correlate",
        _need_stability,
        _run_correlation,
    ),
    Spec(
        "anova",
        "Factorial ANOVA",
        "factors",
        "evalstats.factor_anova",
        "anova",
        _need_factors,
        _run_anova,
        _anova_fixed,
    ),
    Spec(
        "attribution",
        "Factor importance (SHAP)",
        "factors",
        "evalstats.attribute",
        "attribute",
        _need_factors,
        _run_attribution,
        _anova_fixed,  # the same blocks: importances within each model and dataset
    ),
    Spec(
        "intervals",
        "Mean score with confidence interval",
        "models",
        "evalstats.intervals",
        "intervals",
        lambda ctx: None,
        _run_intervals,
        _intervals_fixed,  # the design's prompt factors; each setting value on its own
    ),
    Spec(
        "compare",
        "Paired model differences",
        "models",
        "evalstats.compare_models",
        "compare",
        _need_models,
        _run_compare,
        _compare_fixed,
    ),
    Spec(
        "ppi",
        "Judge scores corrected with gold labels (PPI++)",
        "models",
        "evalstats.ppi_mean",
        "ppi",
        _need_gold,
        _run_ppi,
        _variants_fixed,  # the design's prompt factors: settings are not prompts
    ),
    Spec(
        "ranks",
        "Rank uncertainty",
        "models",
        "evalstats.rank_intervals",
        None,
        _need_models,
        _run_ranks,
        _ranks_fixed,  # the design's prompt factors; each setting value on its own
    ),
    Spec(
        "friedman",
        "Ranks across datasets (Friedman, Nemenyi)",
        "models",
        "evalstats.friedman_nemenyi",
        None,
        _need_blocks,
        _run_friedman,
    ),
    Spec(
        "noise",
        "Variance components and the next design",
        "noise",
        "evalstats.variance_components",
        "noise",
        _need_noise,
        _run_noise,
        _noise_fixed,  # each setting value on its own: a provider is not a prompt variant
    ),
    Spec(
        "audit",
        "Conclusion-reversal audit",
        "default",
        "evalstats.reversal_audit",
        "audit",
        _need_default,
        _run_audit,
        lambda ctx: {"default": dict(ctx.default or {})},
    ),
    Spec(
        "providers",
        "Provider and error audit",
        "providers",
        "evalstats.provider_audit",
        "providers",
        _need_providers,
        _run_providers,
        _provider_fixed,
    ),
)

SPECS = {s.key: s for s in ANALYSES}


def check_options(options: Mapping[str, Mapping[str, Any]] | None) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for key, params in (options or {}).items():
        if key not in SPECS:
            raise ParameterError(
                f"`options` names the analysis {key!r}; the analyses are {', '.join(SPECS)}."
            )
        names = keyword_names(resolve(SPECS[key].function))
        for name in params:
            if name not in names:
                raise ParameterError(
                    f"`options` sets {key}.{name}, which {SPECS[key].function} does not take "
                    f"(parameters: {', '.join(names)})."
                )
        out[key] = dict(params)
    return out


def run_analysis(
    spec: Spec, ctx: Context, options: dict[str, Any], seed: int
) -> tuple[AnalysisResult | None, str | None]:
    function = resolve(spec.function)
    names = keyword_names(function)
    params = {**spec.fixed(ctx)}
    if "seed" in names:
        params["seed"] = seed
    params.update(options)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            tables, values, objects = spec.run(replace(ctx, seed=seed), params)
        except InsufficientDataError as exc:
            return None, option_spelling(str(exc), spec.key, names)
        except LimitError as exc:  # 100,000 models: the other analyses still run
            return None, f"too large: {option_spelling(str(exc), spec.key, names)}"
        except MetricScaleError as exc:  # a method for [0, 1] or 0/1 scores, or mixed metrics
            return (
                None,
                f"does not apply to these metrics: {option_spelling(str(exc), spec.key, names)}",
            )
        except SchemaError as exc:  # e.g. runs covering different items
            if _names_an_option(str(exc), options):  # the user's typo: an error, not a skip
                raise ParameterError(
                    f"--option {spec.key}: {option_spelling(str(exc), spec.key, names)}"
                ) from None
            return None, f"could not run: {option_spelling(str(exc), spec.key, names)}"
        except ParameterError:
            raise  # the user's --option: an error of the command, not of this analysis
        except EvalstatsError as exc:  # bad data this analysis cannot use: the others go on
            return None, f"could not run: {option_spelling(str(exc), spec.key, names)}"
        except Exception as exc:  # an evalstats bug: reported, and the other analyses go on
            return None, failed_reason(exc)
    messages = tuple(dict.fromkeys(str(w.message) for w in caught))
    result = AnalysisResult(
        key=spec.key,
        title=spec.title,
        section=spec.section,
        function=spec.function,
        command=spec.command,
        params=bound(function, params),
        tables=tables,
        values=values,
        reading="",
        warnings=messages,
        objects=objects,
    )
    try:
        with scale(ctx.data.percent):
            reading = READINGS[spec.key](result, ctx.data)
    except Exception as exc:  # a bug in the reading: reported like one in the analysis
        return None, failed_reason(exc)
    return replace(result, reading=reading), None
