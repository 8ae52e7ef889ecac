"""Plain-language readings of each analysis: a few sentences quoting its result tables.

A reading picks rows (the largest, the smallest, those below a level) and quotes their values;
it computes no statistic. Accuracies (every metric on [0, 1]) are quoted in percent and
differences in accuracy points; other metrics in their own units. "Best", "highest" and "ahead"
follow each metric's direction.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

import polars as pl

from evalstats.report._basis import MIN_RANGE_ITEMS, few_items, inferred_caveat, with_caveat
from evalstats.report._model_readings import compare_reading, intervals_reading, ranks_reading
from evalstats.report._noise_reading import noise_reading
from evalstats.report._provider_reading import providers_reading
from evalstats.report._wording import (
    _LIST_MAX,
    _counts,
    _held,
    _join,
    _listed,
    _nstar_moment,
    _nstar_short,
    _nstar_span,
    _ok,
    _p,
    _pct,
    _points,
    _pts,
    _score_word,
    _several,
    _variant_text,
    _where,
    method_name,
)

if TYPE_CHECKING:
    from evalstats.report._model import AnalysisResult, DataSummary

__all__ = ["READINGS", "method_name"]

# ---------------------------------------------------------------------------------------------


def _moments(res: AnalysisResult, data: DataSummary) -> str:
    return _moments_text(res, data) + inferred_caveat(data)


def _moments_text(res: AnalysisResult, data: DataSummary) -> str:
    from evalstats.report._sparse import MODELLED, SCORES_COLUMN

    table = res.tables["moments"]
    sparse = res.tables.get("sparse_distribution")
    if SCORES_COLUMN in table.columns and sparse is not None:
        observed = table.filter(pl.col(SCORES_COLUMN) != MODELLED)
        if not observed.height:
            # every group is sparse: the observed range is mostly the noise of each variant's
            # few items, so the headline is the model's whole-grid estimate
            return _sparse(sparse, lead=True)
        return _spread(observed, data) + " " + _sparse(sparse)
    return _spread(table, data)


def _spread(table: pl.DataFrame, data: DataSummary | None = None) -> str:
    """The range of scores over prompts, where it is widest and narrowest, and its reading.

    Only groups whose every prompt was scored on MIN_RANGE_ITEMS items or more enter the
    range: over one item a 0/1 score moves by 100 points between any two prompts.
    """
    few = table.filter(few_items(table, data) & (pl.col("n_variants") >= 2)).height
    table = table.filter(~few_items(table, data))
    t = table.filter(pl.col("spread").is_not_nan() & (pl.col("n_variants") >= 2))
    single = table.filter(pl.col("n_variants") < 2).height
    few_text = (
        f" {few} group{'s' if few != 1 else ''} whose prompts were scored on fewer than "
        f"{MIN_RANGE_ITEMS} items {'are' if few != 1 else 'is'} left out (over a few items the "
        "range is mostly their noise)."
        if few
        else ""
    )
    if t.height == 0:
        return "No group has two or more variants with a score; no spread to report." + few_text
    s = t.sort("spread", descending=True)
    wide, narrow = s.row(0, named=True), s.row(-1, named=True)
    n_var = _counts(t["n_variants"].to_list())
    extra = _held(t)
    text = (
        f"Across {n_var} prompt variants per group, {_score_word()} moves by up to "
        f"{_pts(wide['spread'])}{_points()} between the best and the worst prompt "
        f"({_where(wide, extra=extra)}: {_pct(wide['min'])} to {_pct(wide['max'])})"
    )
    if t.height > 1:
        text += (
            f"; the narrowest range is {_pts(narrow['spread'])}{_points()} "
            f"({_where(narrow, extra=extra)})"
        )
    text += "."
    if single:
        text += (
            f" {single} group{'s have' if single != 1 else ' has'} a single prompt variant and "
            "no spread (left out here)."
        )
    text += few_text
    held = _held(table)
    if held:
        text += (
            f" The variants are prompt variants only: {_listed(held)} "
            f"{'is a setting' if len(held) == 1 else 'are settings'}, not a prompt dimension, "
            "so each value is analysed on its own (a group column; --roles or "
            "--variant-factors changes this)."
        )
    if "prompt_variance_low" in t.columns and t["prompt_variance_low"].is_not_null().any():
        known = t.filter(pl.col("prompt_variance_low").is_not_null())
        k = known.filter(pl.col("prompt_variance_low") > 0).height
        level = t["confidence_level"][0] if "confidence_level" in t.columns else 0.95
        text += (
            f" In {k} of {known.height} groups the prompts differ by more than the variant x "
            f"item noise explains (the {level:.0%} interval of prompt_variance lies above 0)."
        )
    return text


def _sparse(t: pl.DataFrame, lead: bool = False) -> str:
    """Which groups observe part of their grid, and the whole-grid spread the model estimates."""
    per_group = t.filter(pl.col("quantity") == "sd")
    share = per_group["cells_observed"]
    lo, hi = share.min(), share.max()
    span = f"{lo:.0%}" if lo == hi else f"{lo:.0%} to {hi:.0%}"
    g = per_group.sort("cells_observed").row(0, named=True)
    where = ", ".join(str(g[k]) for k in ("model", "dataset") if k in g)
    level = g["confidence_level"]
    n = per_group.height
    model = "the sparse-grid model (item + prompt effects; docs/methods/sparse.md)"
    estimate = (
        f"an sd over prompts of {_pts(g['estimate'])}{_points()} ({level:.0%} interval "
        f"{_pts(g['ci_low'])} to {_pts(g['ci_high'])}) in {where}, against "
        f"{_pts(g['naive'])}{_points()} from the observed cells alone"
    )
    rows = (
        "moments table, the prompt-spread figure and n* use the model's whole-grid score of "
        "each variant (one posterior draw; its mean, sd and quantiles in the table are the "
        "model's estimates, and table sparse_distribution has their intervals and the observed "
        "('naive') values beside them)"
    )
    if lead:
        extremes = t.filter(pl.col("quantity").is_in(["min", "max"]))
        span_est = extremes.group_by(
            [c for c in ("model", "dataset", "metric") if c in t.columns]
        ).agg(
            (pl.col("estimate").max() - pl.col("estimate").min()).alias("__model"),
            (pl.col("naive").max() - pl.col("naive").min()).alias("__naive"),
        )
        widest = span_est.sort("__naive", descending=True).row(0, named=True)
        return (
            f"Over the whole item x prompt grid, {model} estimates {estimate}: "
            f"{'all ' + str(n) + ' groups observe' if n > 1 else 'the group observes'} only "
            f"{span} of the grid, so each variant's observed score is over its own few items. "
            f"The observed cells put the best and the worst prompt up to "
            f"{_pts(widest['__naive'])}{_points()} apart; the model, {_pts(widest['__model'])}"
            f"{_points()} over the whole grid. The {rows}."
        )
    return (
        f"{n} group{'s' if n != 1 else ''} observe{'' if n != 1 else 's'} only {span} of the "
        f"item x prompt grid (left out of the ranges above): for them the {rows}. Over the "
        "whole grid "
        f"{model} estimates {estimate}."
    )


def _nstar(res: AnalysisResult, data: DataSummary) -> str:
    t = res.tables["nstar"]
    moment = "overall" if "overall" in t["moment"].to_list() else t["moment"][0]
    rows = t.filter(pl.col("moment") == moment)
    p = res.params
    what = "the mean and the variance" if moment == "overall" else f"the {moment}"
    unseen = "population" in t.columns and rows["population"].eq("unseen").all()
    whom = (
        "for prompt variants not yet evaluated (the recorded ones taken as a sample of the "
        "perturbation space)"
        if unseen
        else "for the recorded prompt variants only (not for unseen ones)"
    )
    eps = t.filter(pl.col("moment") == "mean")["epsilon"] if "epsilon" in t.columns else None
    if p.get("epsilon") is not None:
        within = f"ε = {p['epsilon']:g}"
    elif eps is not None and eps.len() and eps.n_unique() == 1 and eps[0] is not None:
        rule = t["epsilon_rule"][0] if "epsilon_rule" in t.columns else ""
        # "default 0.01 (metric 'accuracy' on [0, 1])" reads "the default for metric ..."
        default = re.fullmatch(r"default \S+ \((.*)\)", rule)
        within = f"ε = {eps[0]:.4g} ({f'the default for {default[1]}' if default else rule})"
    else:
        within = "the ε of each group's epsilon_rule"
    moments = [m for m in ("mean", "variance") if m in t["moment"].to_list()]
    # the headline: counts per moment in one sentence (the groups are listed after it)
    short = [_nstar_short(t.filter(pl.col("moment") == m), m) for m in moments]
    text = f"Within {within} with probability {1 - p['delta'] / 2:.0%}, " + "; ".join(short) + "."
    head = f" To estimate {what} of {_score_word()} over prompts {whom}, "
    # per moment: a vacuous n* (the moment itself within ε of 0) is named apart and kept out of
    # the range, so that "between 1 and 29 variants" cannot stand for "the variance is small"
    parts = [_nstar_moment(t.filter(pl.col("moment") == m), m) for m in moments]
    text += head + "; ".join(parts) + "."
    recorded = res.tables.get("recorded_variants")
    if recorded is not None:
        rec = recorded.filter(pl.col("moment") == moments[0])
        rspan = _nstar_span(rec)
        text += (
            " For the recorded variants alone (pool: resampling this set of prompts, a claim "
            f"that can fall short on new prompts), the {moments[0]} needs "
            + (f"{rspan}." if rspan else "more variants than were recorded too.")
        )
    held = _held(t)
    if held:
        text += f" Each value of {_listed(held)} is analysed on its own (not a prompt variant)."
    single = res.values.get("single_variant_groups")
    if single:
        text += (
            f" {single} group{'s' if single > 1 else ''} with a single prompt variant "
            f"{'are' if single > 1 else 'is'} left out: n* needs two or more."
        )
    return text


def _converge(res: AnalysisResult, data: DataSummary) -> str:
    t = res.tables["converge"]
    p = res.params
    lo, hi = t["share_reached"].min(), t["share_reached"].max()
    share = f"{lo:.0%}" if lo == hi else f"{lo:.0%} to {hi:.0%}"
    worst = t.sort("error_max", descending=True, nulls_last=True).row(0, named=True)
    # the tolerances applied (the defaults are resolved per metric by the analysis)
    tol = worst.get("mean_tol", p["mean_tol"])
    width = worst.get("ci_width", p["ci_width"])
    return (
        f"Replaying the sequential stopping rule (batches of {p['batch']} variants; stop when the "
        f"mean moves less than {_pts(tol)}{_points()} and the {p['confidence_level']:.0%} "
        f"interval is narrower than {_pts(width)}{_points()}) over {p['n_orders']} random "
        f"orders, the rule stopped early in {share} of orders; otherwise every recorded variant "
        f"was needed. The stopped mean was at most {_pts(worst['error_max'])}{_points()} from the "
        f"mean of all variants ({_where(worst)})."
    ) + _sparse_note(t)


def _sparse_note(t: pl.DataFrame) -> str:
    """A sentence on the groups replayed over the sparse-grid model's scores ('' when none)."""
    from evalstats.report._sparse import MODELLED, SCORES_COLUMN

    if SCORES_COLUMN not in t.columns:
        return ""
    k = t.filter(pl.col(SCORES_COLUMN) == MODELLED).height
    if not k:
        return ""
    return (
        f" In the {k} group{'s' if k > 1 else ''} observing only part of the item x prompt grid, "
        "the replay runs over the sparse-grid model's whole-grid variant scores, as n* does "
        "(docs/methods/sparse.md), not over means of a few items each."
    )


def _stability(res: AnalysisResult, data: DataSummary) -> str:
    everything = res.tables["stability"]
    # a configuration run once has no run-to-run change to report: it is left out of the
    # sentence (and counted), not quoted as "changed by up to 0.0 points"
    t = everything.filter(pl.col("n_runs") >= 2)
    single = everything.height - t.height
    lead = (
        f"The runs of {data.runs_differ} group{'s' if data.runs_differ != 1 else ''} cover "
        "different items: run-to-run change and agreement are over the items every run scored. "
        if data.runs_differ
        else ""
    )
    few = t.filter(pl.col("n_items") < MIN_RANGE_ITEMS).height if "n_items" in t.columns else 0
    if few:
        t = t.filter(pl.col("n_items") >= MIN_RANGE_ITEMS)
    few_text = (
        f" {few} configuration{'s' if few != 1 else ''} whose runs share fewer than "
        f"{MIN_RANGE_ITEMS} items {'are' if few != 1 else 'is'} left out (too few to say how "
        "much runs differ)."
        if few
        else ""
    )
    if t.height == 0:
        if few:
            return (lead + few_text.strip()).strip()
        return "Every configuration was run once: there is no run-to-run change to report."
    runs = _counts(t["n_runs"].to_list())
    worst = t.sort("spread", descending=True, nulls_last=True).row(0, named=True)
    keys = [c for c in ("model", "dataset", "variant") if c in t.columns]
    unit = "one configuration" if t.height == 1 else f"each of {t.height} configurations"
    items = f", {_counts(t['n_items'].to_list())} items" if "n_items" in t.columns else ""
    text = lead + (
        f"Over {runs} identical runs of {unit}{items}, {_score_word()} changed between runs by "
        f"up to {_pts(worst['spread'])}{_points()} ({_where(worst, keys[:2])}"
    )
    if "variant" in keys and data.n_variants > 1:
        text += f", variant {_variant_text(worst['variant'])}"
    text += ")."
    for col, what in (("tar_a", "parsed answers (TARa@N)"), ("tar_r", "raw responses (TARr@N)")):
        vals = t[col].drop_nulls().drop_nans()
        if vals.len():
            lo, hi = _pct(vals.min()), _pct(vals.max())
            span = f"is {lo}" if lo == hi else f"ranges from {lo} to {hi}"
            text += (
                f" The share of items with the same {what.split(' (')[0]} in every run, "
                f"{what.split(' (')[1][:-1]}, {span}."
            )
    if single:
        text += (
            f" {single} configuration{'s were' if single > 1 else ' was'} run once and "
            f"{'are' if single > 1 else 'is'} left out of these ranges."
        )
    return text + few_text


def _normality(res: AnalysisResult, data: DataSummary) -> str:
    t = res.tables["normality"]
    method = _listed([method_name(m) for m in sorted(set(t["method"].to_list()))])
    tested = t.filter(pl.col("pvalue").is_not_null() & pl.col("pvalue").is_not_nan())
    constant = t.filter((pl.col("sd") == 0.0) & (pl.col("n") > 1))
    low = t.filter(pl.col("low_power")).height
    alpha = 0.05
    if tested.height == 0:
        text = (
            f"The {method} test could not be computed in any of the {t.height} groups: "
            f"{_counts(t['n'].to_list())} runs per group are too few."
        )
    else:
        k = tested.filter(pl.col("pvalue") < alpha).height
        text = (
            f"The {method} test rejects normality of the run accuracies at the 5 % level in {k} "
            f"of {tested.height} groups."
        )
    if constant.height:
        keys = t.columns[: t.columns.index("method")]  # the group columns come first
        groups = constant.unique(subset=keys, maintain_order=True)
        text += (
            f" In {groups.height} group{'s' if groups.height > 1 else ''} every run has the same "
            f"{_score_word()} (constant up to rounding: "
            f"{_listed(_where(r) for r in groups.iter_rows(named=True))}); no test applies there."
        )
    if low:
        text += (
            f" {low} of {t.height} groups have fewer than {res.params['low_power_n']} runs, too "
            "few for the test to detect a departure from normality: absence of rejection is not "
            "evidence of normality."
        )
    return text


def _correlation(res: AnalysisResult, data: DataSummary) -> str:
    t = res.tables["correlation"]
    pcol = "pvalue_perm" if t["pvalue_perm"].is_not_null().any() else "pvalue"
    ok = t.filter(pl.col("statistic").is_not_nan() & pl.col("statistic").is_not_null())
    undefined = t.height - ok.height
    method = t["method"][0] if t.height else res.params["method"]
    sym = {"spearman": "ρ", "kendall": "τ", "pearson": "r"}.get(method, "r")
    sig = ok.filter(pl.col(pcol) <= 0.05).sort(pl.col("statistic").abs(), descending=True)
    n = ok["n"].max() if ok.height else 0
    if sig.height:
        pairs = [
            f"{r['x']}–{r['y']} ({sym} = {r['statistic']:.2f})" for r in sig.iter_rows(named=True)
        ]
        text = (
            f"Across {n} configurations, the {method_name(method)} correlations with "
            f"{'permutation ' if pcol == 'pvalue_perm' else ''}p ≤ 0.05 are {_listed(pairs)}."
        )
    else:
        text = f"No {method_name(method)} correlation reaches p ≤ 0.05 across {n} configurations."
    if undefined:
        text += (
            f" {undefined} pair{'s are' if undefined > 1 else ' is'} undefined because a column "
            "is constant or missing."
        )
    return text


def _anova(res: AnalysisResult, data: DataSummary) -> str:
    t = res.tables["anova"].filter(pl.col("term") != "Residual")
    if t.height and t["eta_sq"].fill_nan(None).is_null().all():
        return (
            "The unit scores do not vary: there is no variance for any term to explain "
            "(every η² is undefined)."
        )
    # a term is named for what it explains only when that rounds to something (η² >= 0.0005)
    top = (
        t.filter(
            pl.col("eta_sq").is_not_null()
            & pl.col("eta_sq").is_not_nan()
            & (pl.col("eta_sq") >= 0.0005)
        )
        .sort("eta_sq", descending=True)
        .head(3)
    )
    named = [f"{r['term']} (η² = {r['eta_sq']:.3f})" for r in top.iter_rows(named=True)]
    pcol = "pvalue_perm" if t["pvalue_perm"].is_not_null().any() else "pvalue"
    sig = t.filter(pl.col(pcol) < 0.05)
    if named:
        share = float(top["eta_sq"].sum())
        many = len(named) > 1
        lead = (
            f"The largest term{'s' if many else ''} by share of the variance of unit scores "
            f"{'are' if many else 'is'} {_join(named)}, explaining {100 * share:.1f} % of it"
            f"{' together' if many else ''}. "
        )
    else:
        lead = (
            "No term explains a visible share of the variance of unit scores (every η² < 0.0005). "
        )
    text = (
        f"{lead}{sig.height} of {t.height} term{'s' if t.height != 1 else ''} "
        f"{'have' if t.height != 1 else 'has'} "
        f"{'a permutation ' if pcol == 'pvalue_perm' else 'an F-test '}p < 0.05"
    )
    if sig.height:
        text += f": {_listed(sig['term'].to_list())}"
    floor = res.values.get("min_pvalue_perm")
    if pcol == "pvalue_perm" and floor is not None and floor >= 0.05:
        # 4 models x 2 arena positions: 16 arrangements; "0 of 1 term has p < 0.05" read as no
        # effect where the test could not have found one (η² 0.85, F-test p 0.027)
        first = t.sort("eta_sq", descending=True, nulls_last=True).row(0, named=True)
        ftest = (
            f"; the F-test p of {first['term']} is {first['pvalue']:.3g}"
            if first["pvalue"] is not None and math.isfinite(first["pvalue"])
            else ""
        )
        text += (
            f", but none could: with {round(1 / floor):,} distinct permutations in this design "
            f"no permutation p falls below {floor:.3g}, whatever the effect{ftest}"
        )
    text += "."
    block = res.params.get("block")
    if block:
        cols = [block] if isinstance(block, str) else list(block)
        text += (
            f" Configurations are compared within each {' × '.join(cols)} (a nuisance block; "
            "permutations stay inside it)."
        )
    elif len(data.models) > 1 or len(data.datasets) > 1:
        text += (
            " Scores are pooled over models and datasets, so their differences stay in the "
            "residual."
        )
    aliased = res.values.get("aliased") or {}
    if aliased:
        text += f" Left out as aliased: {'; '.join(aliased.values())}."
    if res.values.get("runs", res.params.get("runs", "mean")) == "mean" and data.n_runs > 1:
        text += (
            " Repeated runs are averaged per configuration first (the configuration is the unit)."
        )
    return text


def _attribution(res: AnalysisResult, data: DataSummary) -> str:
    t = res.tables["attribution"]
    v = res.values
    above = t.filter(pl.col("above_null").fill_null(False))
    below = t.filter(~pl.col("above_null").fill_null(False))
    block = res.params.get("block")
    within = ""
    if block:
        cols = [block] if isinstance(block, str) else list(block)
        within = f" within each {' × '.join(cols)} (their differences removed first)"
    text = (
        f"The {res.params['method']} model explains {v['cv_r_sq']:.0%} of the variance of unit "
        f"scores{within} out of fold (cross-validated R² over {v['n_folds']} folds)."
    )
    if t["null_high"].is_not_null().any():
        if above.height:
            items = [
                f"{r['factor']} ({_pts(r['mean_abs_shap'])}{_points()})"
                for r in above.iter_rows(named=True)
            ]
            text += f" Factors above their null band (mean |SHAP|): {_listed(items)}."
        if below.height:
            text += (
                f" Within the null band, so indistinguishable from no effect: "
                f"{_listed(below['factor'].to_list())}."
            )
    aliased = v.get("aliased") or {}
    if aliased:
        text += f" Left out as aliased: {'; '.join(aliased.values())}."
    return text


def _ppi(res: AnalysisResult, data: DataSummary) -> str:
    t = res.tables["ppi"]
    level = f"{res.params['confidence_level']:.0%}"
    parts = []
    for r in t.head(_LIST_MAX).iter_rows(named=True):
        parts.append(
            f"{r['model']}: {_pts(r['estimate'])} ({level} interval {_pts(r['ci_low'])}–"
            f"{_pts(r['ci_high'])}; judge alone {_pts(r['judge_mean'])}, judge bias "
            f"{_pts(r['judge_bias'], sign=True)}{_points()} on {r['n_labelled']} gold-labelled items)"
        )
    return (
        "Scores corrected for the judge's bias with the gold-labelled items (PPI++): "
        + "; ".join(parts)
        + "."
    )


def _friedman(res: AnalysisResult, data: DataSummary) -> str:
    v = res.values
    ranks = res.tables["friedman"].sort("mean_rank")
    order = [f"{r['model']} ({r['mean_rank']:.2f})" for r in ranks.iter_rows(named=True)]
    alpha = 1 - res.params["confidence_level"]
    verdict = "differ" if _ok(v["pvalue"]) and v["pvalue"] < alpha else "do not differ"
    dropped = v.get("dropped_blocks") or []
    total = v["n_blocks"] + len(dropped)
    over = f"{v['n_blocks']} of {total}" if dropped else f"{v['n_blocks']}"
    blocks = [b for b in res.params.get("blocks", ["dataset"]) if b != "dataset"]
    # blocks of dataset x metric (several metrics): say so, and name a dropped block by both
    noun = "datasets" if not blocks else f"blocks (dataset x {' x '.join(blocks)})"
    if dropped:  # the headline names what it leaves out
        names = _listed(
            str(d["dataset"])
            + (f" ({', '.join(str(d[b]) for b in blocks if b in d)})" if blocks else "")
            for d in dropped
        )
        over += f" {noun} ({names} left out)"
    else:
        over += f" {noun}"
    text = (
        f"Mean ranks over {over}: {_listed(order)}. By the Friedman test the "
        f"models' ranks {verdict} at the {alpha:g} level ({_p(v['pvalue'])}); mean ranks closer "
        f"than the critical difference {v['critical_difference']:.2f} are not distinguishable."
    )
    if dropped:
        gone = [f"{d['dataset']} (no score for {d['missing']})" for d in dropped]
        text += (
            f" Left out because some models have no score there: {_join(gone)}; the ranks are "
            "over the datasets every model has."
        )
    if v["n_blocks"] < 5:
        text += f" With {v['n_blocks']} datasets the test has little power."
    return text


def _audit(res: AnalysisResult, data: DataSummary) -> str:
    pairs, models = res.tables["pairs"], res.tables["models"]
    default = ", ".join(f"{k}={v}" for k, v in res.params["default"].items())
    n = res.values["n_reversals"]
    ds = "dataset" in pairs.columns and _several(pairs["dataset"].to_list())
    if n:
        rev = pairs.filter(pl.col("reversal"))
        items = [
            f"{r['model_a']} − {r['model_b']}{' on ' + str(r['dataset']) if ds else ''} "
            f"({_pts(r['default_difference'], sign=True)}{_points()} at the default, "
            f"{_pts(r['difference'], sign=True)} over configurations)"
            for r in rev.iter_rows(named=True)
        ]
        text = (
            f"At the default configuration ({default}), {n} model pair"
            f"{'s reverse' if n > 1 else ' reverses'} the ordering that holds over all "
            f"configurations: {_listed(items)}."
        )
    else:
        text = (
            f"At the default configuration ({default}) no model pair reverses the ordering that "
            f"holds over all {pairs['n_configs'].max() if pairs.height else 'recorded'} "
            "configurations."
        )
    out = models.filter(pl.col("outside_interval").fill_null(False))
    if out.height:
        mds = "dataset" in models.columns and _several(models["dataset"].to_list())
        items = [
            f"{r['model']}{' on ' + str(r['dataset']) if mds else ''} ({_pct(r['default_score'])} "
            f"vs {_pct(r['mean'])}, percentile {r['percentile']:.0f})"
            for r in out.iter_rows(named=True)
        ]
        text += (
            " The default score lies outside the interval of the mean over configurations for "
            f"{_listed(items)}: a single-configuration result would misstate these models."
        )
    shifted = pairs.filter(pl.col("default_outside").fill_null(False))
    if shifted.height and not n:
        text += (
            f" For {shifted.height} of {pairs.height} pairs the default difference lies outside "
            "the interval over configurations, though the ordering holds."
        )
    return text


READINGS: dict[str, Callable[[AnalysisResult, DataSummary], str]] = {
    "moments": _moments,
    "nstar": with_caveat(_nstar),
    "converge": with_caveat(_converge),
    "stability": _stability,
    "normality": _normality,
    "correlation": _correlation,
    "anova": with_caveat(_anova),
    "attribution": with_caveat(_attribution),
    "intervals": intervals_reading,
    "compare": compare_reading,
    "ppi": _ppi,
    "ranks": ranks_reading,
    "friedman": _friedman,
    "noise": with_caveat(noise_reading),
    "audit": _audit,
    "providers": providers_reading,
}
