"""Readings of the model analyses: intervals, paired comparisons and ranks (issue 15).

Kept apart from :mod:`evalstats.report._readings` so each module stays short. Each reading
states the unit, the method and why it was picked, and with many models leads the pairs with the
ranking summary (groups of models the pairwise tests cannot tell apart).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING

import polars as pl

from evalstats.report._wording import (
    _LIST_MAX,
    _ahead,
    _join,
    _listed,
    _ok,
    _on,
    _pct,
    _points,
    _pts,
    _score_word,
    _several,
    method_name,
)

if TYPE_CHECKING:
    from evalstats.report._model import AnalysisResult, DataSummary

__all__ = ["RANKING_SUMMARY_MODELS", "compare_reading", "intervals_reading", "ranks_reading"]

#: What each interval method is, in words (the intervals reading names the one used).
_INTERVAL_METHODS = {
    "wilson": "Wilson score intervals (the scores are 0/1; with the design's effective sample "
    "size where items cluster or prompts vary)",
    "logit": "t intervals on the logit scale, which stay inside the metric's bounds",
    "t": "t intervals (the metric has no bounds)",
    "lognormal": "log-normal (Cox) intervals of the mean (the metric has no bounds and its "
    "scores are strongly right-skewed and positive)",
    "bootstrap-t": "studentized bootstrap intervals (the metric has no bounds and its scores "
    "are strongly right-skewed)",
    "bca": "BCa bootstrap intervals",
    "percentile": "percentile bootstrap intervals",
    "cluster": "cluster-robust (CR1) intervals",
}

#: Why the default unit was picked, in words (``over='auto'``).
_OVER_REASONS = {
    "items+prompts": (
        "items are the sampling unit of a benchmark and the prompt variants a sample of the "
        "prompt space: the interval is about the mean over prompts not yet evaluated too (the "
        "ReliableEval view), so the prompt-to-prompt variance counts, on Satterthwaite degrees "
        "of freedom; `over='recorded-prompts'` gives the interval about the recorded prompts"
    ),
    "clusters": (
        "items share clusters (the design's cluster column), so the interval is cluster-robust "
        "(CR2, Bell-McCaffrey degrees of freedom): items of one cluster are not independent"
    ),
    "clusters+prompts": (
        "items share clusters and the prompt variants are a sample of the prompt space: the "
        "interval is cluster-robust (CR2, Bell-McCaffrey df) and carries the prompt-to-prompt "
        "variance (Satterthwaite df)"
    ),
    "items": (
        "items are the sampling unit of a benchmark, and each item's variants and runs are "
        "averaged into one score first, so the rows of one item count once"
    ),
    "variants": (
        "the table has no item column, so the interval is over variants, each the mean over "
        "its items; groups with fewer than 20 variants get none"
    ),
}


def _ci(row: dict, level: str, *, short: bool = False) -> str:
    """'(95% CI 61.2 % to 66.4 %)', or '(no interval)' when there is none (reason said once)."""
    if not (_ok(row.get("ci_low")) and _ok(row.get("ci_high"))):
        return "(no interval)"
    head = "" if short else f"{level} CI "
    return f"({head}{_pct(row['ci_low'])} to {_pct(row['ci_high'])})"


def _groups_noun(keys: list[str], key_count: int, t: pl.DataFrame) -> str:
    """'3 datasets', or '6 groups (dataset, temperature) of 3 datasets' when groups are more."""
    one_metric = "metric" not in t.columns or t["metric"].n_unique() == 1
    named = [k for k in keys if not (k == "metric" and one_metric)]
    if named == ["dataset"]:
        return "both datasets" if key_count == 2 else f"all {key_count} datasets"
    n_ds = t["dataset"].n_unique() if "dataset" in t.columns else 0
    of = f" of {n_ds} dataset{'s' if n_ds != 1 else ''}" if n_ds else ""
    return f"all {key_count} groups ({', '.join(named)}){of}"


def _kind(keys: list[str]) -> str:
    """What a group is called in a count: 'datasets', or 'groups' when other keys split them."""
    return "datasets" if [k for k in keys if k != "metric"] == ["dataset"] else "groups"


def _label(keys: list[str], key: tuple, t: pl.DataFrame) -> str:
    """'d0' or 'd0, temperature 0.7' for a group key ('On d0, ' without its frame)."""
    return _on(keys, key, t).removeprefix("On ").removesuffix(", ")


def _leaders(
    groups: dict, keys: list[str], t: pl.DataFrame, value: str, best: Callable
) -> tuple[str, list[tuple[str, dict, int]]]:
    """The groups' noun and, per group with a value, (label, best row, number of models)."""
    out = []
    for key, g in groups.items():
        g = g.filter(pl.col(value).is_not_null() & pl.col(value).is_not_nan())
        if g.height:
            out.append((_label(keys, key, t), best(g), g["model"].n_unique()))
    return _groups_noun(keys, len(groups), t), out


def _intervals_summary(
    groups: dict, keys: list[str], t: pl.DataFrame, data: DataSummary
) -> str | None:
    """One sentence over every group: who leads where, and the range of the leaders' means.

    The per-group sentences follow it; with several datasets none of them stands for all.
    """

    def top(g: pl.DataFrame) -> dict:
        metric = g["metric"][0] if "metric" in g.columns else None
        return g.sort("mean", descending=data.higher_is_better(metric)).row(0, named=True)

    noun, rows = _leaders(groups, keys, t, "mean", top)
    if len(rows) < 2:
        return None
    alone = sum(n == 1 for *_, n in rows)
    if alone and alone < len(rows):
        # a group with one model has no "highest": it is not counted among the leaders (a real
        # Inspect dump read "claude on 1 and gpt-4o-mini on 1" where gpt-4o-mini ran alone)
        rows = [r for r in rows if r[2] > 1]
        if len(rows) < 2:
            return None
        noun = f"the {len(rows)} {_kind(keys)} with two or more models"
    lo = min(rows, key=lambda r: r[1]["mean"])
    hi = max(rows, key=lambda r: r[1]["mean"])
    one_scale = "metric" not in t.columns or t["metric"].n_unique() == 1
    span = f"{_pct(lo[1]['mean'])} on {lo[0]} to {_pct(hi[1]['mean'])} on {hi[0]}"
    if _pct(lo[1]["mean"]) == _pct(hi[1]["mean"]):  # "from 100.0 % on a to 100.0 % on a"
        span = f"{_pct(hi[1]['mean'])} on each"
    if not one_scale:  # means of several metrics are not one range
        span = ""
    if all(n == 1 for *_, n in rows):
        models = sorted({r["model"] for _, r, _ in rows})
        who = f"{models[0]} scores" if len(models) == 1 else f"the {len(models)} models score"
        if span:
            tied = span.endswith(" on each")  # "from 0.0 % on a to 0.0 % on a" before
            return f"Across {noun}, {who} {'' if tied else 'from '}{span}."
        n_metrics = t["metric"].n_unique()
        return (
            f"Across {noun}, each has one model ({_listed(models)}), on {n_metrics} different "
            "metrics: the means are not on one scale, so each group's is given below."
        )
    word = "highest" if all(data.higher_is_better(r.get("metric")) for _, r, _ in rows) else "best"
    counts = Counter(r["model"] for _, r, _ in rows)
    if len(counts) == 1:
        tail = f" ({span})" if span else ""
        return f"{next(iter(counts))} has the {word} mean {_score_word()} on {noun}{tail}."
    parts = [f"{m} on {c}" for m, c in counts.most_common()]
    tail = (
        ""
        if not span
        else f" (the leading mean {'is ' if span.endswith(' on each') else 'from '}{span})"
    )
    return (
        f"Across {noun}, the model with the {word} mean {_score_word()} differs: "
        f"{_listed(parts)}{tail}."
    )


def intervals_reading(res: AnalysisResult, data: DataSummary) -> str:
    t = res.tables["intervals"]
    p = res.params
    level = f"{p['confidence_level']:.0%}"
    keys = [c for c in p["by"] if c != "model" and c in t.columns]
    groups = t.partition_by(keys, as_dict=True, maintain_order=True) if keys else {(): t}
    sentences = []
    if len(groups) > 1 and (summary := _intervals_summary(groups, keys, t, data)):
        sentences.append(summary)
    for key, g in list(groups.items())[:_LIST_MAX]:
        metric = g["metric"][0] if "metric" in g.columns else None
        hib = data.higher_is_better(metric)
        s = g.sort("mean", descending=hib)
        top = s.row(0, named=True)
        where = _on(keys, key, t)
        if g.height == 1:
            sentences.append(f"{where}{top['model']} scores {_pct(top['mean'])} {_ci(top, level)}.")
            continue
        low = s.row(-1, named=True)
        if hib:
            head = f"has the highest mean {_score_word()}"
            tail = "the lowest"
        else:  # lower is better: the best model has the lowest mean
            head = f"has the best mean {_score_word()} (the lowest: lower is better)"
            tail = "the worst (highest)"
        sentences.append(
            f"{where}{top['model']} {head}, {_pct(top['mean'])} {_ci(top, level)}, and "
            f"{low['model']} {tail}, {_pct(low['mean'])} {_ci(low, level, short=True)}."
        )
    if len(groups) > _LIST_MAX:
        sentences.append(f"({len(groups) - _LIST_MAX} more groups in the table.)")
    overs = t["over"].unique(maintain_order=True).to_list() if "over" in t.columns else []
    over = overs[0] if overs else p["over"]
    if len(overs) > 1:  # groups with one prompt and groups with several
        over = next((o for o in overs if "prompts" in o), overs[0])
    missing = (
        t.filter(pl.col("ci_low").is_nan() | pl.col("ci_low").is_null())
        if "ci_low" in t.columns
        else t.head(0)
    )
    note = missing["note"].drop_nulls()[0] if "note" in t.columns and missing.height else None
    reason = note or "too few units or constant scores"
    if t.height and missing.height == t.height:
        sentences.append(f"No group has an interval: {reason}.")
        return " ".join(sentences)
    on = [c for c in p["by"] if c in t.columns]
    ok = t.join(missing.select(on), on=on, how="anti") if on else t
    methods = ok["method"].unique(maintain_order=True).to_list() if "method" in ok.columns else []
    named = _join([_INTERVAL_METHODS.get(m, m) for m in methods]) or p["method"]
    unit = f"over {over.replace('+', ' and ')}" + _typical_counts(ok, over)
    if res.values.get("over_reason") or p.get("over") == "auto":
        why = _OVER_REASONS.get(over, res.values.get("over_reason", ""))
        sentences.append(f"Intervals: {named}, {unit}, because {why}.")
    else:
        sentences.append(f"Intervals: {named}, {unit} (as asked).")
    caveats = ok["note"].drop_nulls() if "note" in ok.columns else ok.head(0)
    if caveats.len():  # 2 prompt variants: the recorded prompts, and why
        sentences.append(f"In {caveats.len()} of {t.height} groups {caveats[0]}.")
    if missing.height:
        sentences.append(f"{missing.height} of {t.height} groups have no interval: {reason}.")
    return " ".join(sentences)


def _typical_counts(t: pl.DataFrame, over: str) -> str:
    """' (typically 30 items in 6 clusters and 4 prompts per model)', or ''."""

    def median(col: str) -> int | None:
        if col not in t.columns or not t.height or t[col].drop_nulls().is_empty():
            return None
        return int(t[col].drop_nulls().median())

    n = median("n")
    if not n:
        return ""
    if not over.startswith(("items", "clusters")):
        return f" (typically {n} per model)"
    parts = [f"{n} {'item' if n == 1 else 'items'}"]
    if over.startswith("clusters") and (k := median("n_clusters")):
        parts[0] += f" in {k} {'cluster' if k == 1 else 'clusters'}"
    if "prompts" in over and (k := median("n_prompts")):
        parts.append(f"{k} {'prompt' if k == 1 else 'prompts'}")
    return f" (typically {' and '.join(parts)} per model)"


#: Beyond this many models in a group the pairs reading leads with the ranking summary.
RANKING_SUMMARY_MODELS = 8

#: The test behind each pair's p-value, in words.
_TESTS = {
    "t": "a paired t test on the {unit} differences (analytic, no resampling floor; the "
    "default from 30 shared {units})",
    "mcnemar": "an exact McNemar test (0/1 scores; exact, no resampling floor)",
    "mcnemar-midp": "a mid-p McNemar test (0/1 scores)",
    "permutation": "a sign-flip permutation test (up to {b:,} sign vectors, stopping once 20 "
    "are as extreme; the default below 30 shared {units})",
    "bootstrap": "a studentized bootstrap test ({b:,} resamples)",
    "t-design": "a t test with the design's variance (items in clusters cluster-robust; with "
    "several prompt variants the model x prompt interaction counts, so the claim is about the "
    "prompt space; Satterthwaite df)",
    "generalized-design": "a generalized test with the design's variance (a pair alone in "
    "its group: its model x prompt variance, estimated on few df, integrated over its "
    "uncertainty; the claim is about the prompt space)",
}


def _tests_named(t: pl.DataFrame, paired_on: str) -> str:
    """'Each pair's p-value is from a paired t test on the item differences (...)'."""
    parts = []
    unit = paired_on[:-1] if paired_on.endswith("s") else paired_on
    for m, g in t.group_by("method", maintain_order=True):
        b = g["n_resamples"].max() if "n_resamples" in g.columns else None
        name = m[0].removesuffix("-recorded")
        text = _TESTS.get(name, name).format(unit=unit, units=paired_on, b=int(b or 0))
        if name != m[0]:
            text += " over each model's own recorded prompts (the pair shares no prompt variant)"
        parts.append(text if g.height == t.height else f"{text} for {g.height} pairs")
    return f"Each pair's p-value is from {_join(parts)}."


def _ranking_summary(groups: pl.DataFrame, by: list[str]) -> list[str]:
    """'On d, 28 models fall into 6 groups; models that share a group cannot be told apart'."""
    keys = [c for c in by if c in groups.columns]
    parts = groups.partition_by(keys, as_dict=True, maintain_order=True) if keys else {(): groups}
    out = []
    for key, g in list(parts.items())[:_LIST_MAX]:
        if g.height <= RANKING_SUMMARY_MODELS:
            continue
        where = _on(keys, key, groups)
        top = g.filter(pl.col("letters").str.contains("a"))["model"].to_list()
        n_groups = int(g["n_groups"][0])
        overlap = bool((g["letters"].str.len_chars() > 1).any())
        if n_groups == g.height and not overlap:
            text = f"{where}all {g.height} models differ from each other (every pair is "
            out.append(text[0].upper() + text[1:] + "significant; table `groups`).")
            continue
        kind = "overlapping groups" if overlap else ("groups" if n_groups != 1 else "group")
        out.append(
            f"{where or 'Ranking summary: '}{g.height} models fall into {n_groups} {kind}; "
            "models that share a group "
            "cannot be told apart by the pairwise tests (compact letter display: models sharing "
            f"a letter do not differ; table `groups`). The top group: {_listed(top)} "
            f"({len(top)} model{'s' if len(top) != 1 else ''})."
        )
    return out


def compare_reading(res: AnalysisResult, data: DataSummary) -> str:
    t = res.tables["compare"]
    p = res.params
    alpha = 1 - p["confidence_level"]
    pcol = "pvalue_corrected" if p["correction"] != "none" else "pvalue"
    sig = t.filter(pl.col(pcol) < alpha).sort(pl.col("difference").abs(), descending=True)
    ds = "dataset" in t.columns and _several(t["dataset"].to_list())
    corr = f"after {method_name(p['correction'])} correction " if p["correction"] != "none" else ""
    lead = []
    if "groups" in res.tables:
        lead = _ranking_summary(res.tables["groups"], list(p.get("by", ("dataset", "metric"))))
    gkeys = [c for c in p.get("by", ("dataset", "metric")) if c in t.columns]
    # a ranking summary may lead the reading of one group; with several it follows the count
    first = not gkeys or t.select(gkeys).n_unique() <= 1
    text = (" ".join(lead) + " ") if lead and first else ""
    text += f"{sig.height} of {t.height} model pairs differ at the {alpha:g} level {corr}"
    text += f"(paired on {p['paired_on']}"
    if p["correction"] != "none":
        text += (
            f"; one family of all {t.height} pairs of the study"
            if p.get("family") == "global"
            else "; each dataset a family of its own"
        )
    text += ")"
    # settings held fixed that split the pairs (a temperature): each listed pair names its level
    held = [c for c in gkeys if c not in ("dataset", "metric") and _several(t[c].to_list())]
    if sig.height:
        items = []
        for r in sig.iter_rows(named=True):
            where = f" on {r['dataset']}" if ds else ""
            levels = [f"{c} {r[c]}" for c in held if r.get(c) is not None]
            where += f" ({', '.join(levels)})" if levels else ""
            diff, lo, hi = r["difference"], r["ci_low"], r["ci_high"]
            if not data.higher_is_better(r.get("metric")):  # ahead = a lower error
                diff, lo, hi = -diff, -hi, -lo
                where += f" ({r.get('metric') or 'lower is better'}: lower is better)"
            items.append(_ahead(r["model_a"], r["model_b"], diff, lo, hi, where))
        text += f": {_listed(items)}"
    text += "."
    if lead and not first:
        text += " " + " ".join(lead)
    per = res.tables.get("compare_per_dataset")
    if per is not None and per.height:
        k = per.filter(pl.col(pcol) < alpha).height
        text += (
            f" Corrected within each dataset instead (a family per dataset, whose study-wide "
            f"false-positive rate grows with the number of datasets), {k} pairs would differ."
        )
    if "method" in t.columns and t.height:
        text += " " + _tests_named(t, p["paired_on"])
    if "interval" in t.columns and t.height:
        kind = t["interval"][0]
        text += (
            f" The intervals are {kind} ({method_name(p['correction'])}), so an interval "
            "excludes 0 exactly when its pair differs."
            if kind != "marginal"
            else " The intervals are unadjusted (no correction)."
        )
    if "can_reject" in t.columns:
        blocked = t.filter(~pl.col("can_reject"))
        if blocked.height:
            text += (
                f" {blocked.height} of {t.height} pairs cannot be significant by construction: "
                f"their test's smallest p-value ({blocked['min_pvalue'].min():.2g} or more) is "
                "not below their level after the correction; add items, or resamples for a "
                "resampling test."
            )
    rest = t.height - sig.height
    if rest and "mdd" in t.columns:
        worst = t.filter(~(pl.col(pcol) < alpha)).sort("mdd", descending=True).row(0, named=True)
        text += (
            f" The other {rest} pair{'s' if rest > 1 else ''} could not be told apart; with these "
            f"items the smallest difference detectable with power {p['power']:.0%} is up to "
            f"{_pts(worst['mdd'])}{_points()}."
        )
    return text


def ranks_reading(res: AnalysisResult, data: DataSummary) -> str:
    t = res.tables["ranks"]
    keys = [c for c in res.params["by"] if c in t.columns]
    groups = t.partition_by(keys, as_dict=True, maintain_order=True) if keys else {(): t}
    level = f"{res.params['confidence_level']:.0%}"
    sentences = []
    if len(groups) > 1:
        noun, rows = _leaders(
            groups,
            keys,
            t,
            "p_best",
            lambda g: g.sort("p_best", descending=True).row(0, named=True),
        )
        counts = Counter(r["model"] for _, r, _ in rows)
        open_ = sum(1 for g in groups.values() if g.filter(pl.col("rank_low") == 1).height > 1)
        p_lo = min(r["p_best"] for _, r, _ in rows) if rows else None
        p_hi = max(r["p_best"] for _, r, _ in rows) if rows else None
        if rows:
            share = f"{p_lo:.0%}" if p_lo == p_hi else f"{p_lo:.0%} to {p_hi:.0%}"
            who = (
                f"{next(iter(counts))} is the likeliest best model on {noun}"
                if len(counts) == 1
                else f"Across {noun}, the likeliest best model differs: "
                + _listed(f"{m} on {c}" for m, c in counts.most_common())
            )
            many = "none" if open_ == 0 else "all" if open_ == len(groups) else f"{open_}"
            sentences.append(
                f"{who} (best in {share} of bootstrap resamples); on {many} of them more than "
                "one model can rank first."
            )
    for key, g in list(groups.items())[:_LIST_MAX]:
        best = g.sort("p_best", descending=True).row(0, named=True)
        where = _on(keys, key, t)
        ties = g.filter(pl.col("rank_low") == 1).height
        sentences.append(
            f"{where}{best['model']} is best in {best['p_best']:.0%} of bootstrap resamples "
            f"({level} rank set {best['rank_low']}–{best['rank_high']}); "
            f"{ties} model{'s' if ties != 1 else ''} can rank first."
        )
    if len(groups) > _LIST_MAX:
        sentences.append(f"({len(groups) - _LIST_MAX} more groups in the table.)")
    paired = "method" in t.columns and t.height and t["method"][0] == "paired"
    if "n_prompts" in t.columns and t["n_prompts"].drop_nulls().len():
        sentences.append(
            "The ranks are of the means over the prompt space: "
            + (
                "the paired tests count the model x prompt interaction and P(best) resamples "
                "items and prompt variants together (a two-way bootstrap)"
                if paired
                else "items and prompt variants are resampled together (a two-way bootstrap)"
            )
            + ", so a model that leads only on the recorded prompts does not lead for sure."
        )
    if "n_clusters" in t.columns and t["n_clusters"].drop_nulls().len():
        sentences.append("Items of one cluster are resampled together.")
    method = t["method"][0] if "method" in t.columns and t.height else "bootstrap"
    if method == "paired":
        sentences.append(
            "The rank sets follow the paired tests (Holm over the pairs of each dataset, the "
            "per-dataset comparison table): two models' sets are apart exactly when their paired "
            "difference is significant, and the sets hold for all models of a group together."
        )
    elif method == "simultaneous":
        sentences.append(
            "The rank sets hold for all models of a group together (simultaneous sets from "
            "max-t intervals of every pairwise difference, Mogstad et al. 2024)."
        )
    elif method == "marginal":
        sentences.append("Each rank set holds on its own (marginal sets, Mogstad et al. 2024).")
    return " ".join(sentences)
