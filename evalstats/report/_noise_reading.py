"""Reading of the variance-component analysis (kept apart so that each module stays short)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from evalstats.report._wording import _listed

if TYPE_CHECKING:
    from evalstats.report._model import AnalysisResult, DataSummary

__all__ = ["noise_reading"]


_COMPONENT_NAMES = {
    "item": "items",
    "variant": "prompt variants",
    "item_variant": "the item × prompt interaction",
    "residual": "run-to-run noise",
    "residual_merged": "the item × prompt interaction and run noise (one run per item and "
    "prompt: not separable)",
}


def _share_span(lo: float, hi: float) -> str:
    """'52.7 %–83.0 %', or one value when the groups agree to the shown digit."""
    a, b = f"{100 * lo:.1f} %", f"{100 * hi:.1f} %"
    return a if a == b else f"{a}–{b}"


def noise_reading(res: AnalysisResult, data: DataSummary) -> str:
    comps = res.tables["components"].filter(pl.col("model_b").is_null())
    by = res.params.get("by", ("model", "dataset", "metric"))
    by = (by,) if isinstance(by, str) else tuple(by)
    keys = [c for c in by if c in comps.columns]  # settings held are groups of their own
    kind = "model-dataset group" if set(keys) <= {"model", "dataset", "metric"} else "group"
    groups = comps.partition_by(keys, maintain_order=True) if keys else [comps]
    # a group says where its variance comes from only with two or more separable components
    # and some variance: constant scores have none to split, and a single separable
    # component holds 100 % by construction (one prompt and one run per item: the items)
    informative, constant, single, failed = [], 0, 0, 0
    at_most = 0.0  # the largest upper bound of a constant group's components (at a metric bound)
    flat: set[tuple] = set()  # constant scores or no components: nothing to plan from
    for g in groups:
        ok = g.filter(pl.col("identified"))
        total = ok["variance"].fill_nan(None).drop_nulls().sum()
        if ok.height and ok["variance"].fill_nan(None).null_count() == ok.height:
            # identified but not estimated: the REML fit did not converge (a warning says so)
            failed += 1
            flat.add(tuple(g.row(0, named=True)[k] for k in keys))
        elif not total > 0:
            constant += 1
            at_most = max(at_most, float(ok["ci_high"].fill_nan(None).drop_nulls().max() or 0.0))
            flat.add(tuple(g.row(0, named=True)[k] for k in keys))
        elif ok.height < 2:
            single += 1
        else:
            informative.append(ok)
    n = len(groups)
    sentences = []
    if informative:
        t = pl.concat(informative)
        top = (
            t.sort("share", descending=True, nulls_last=True)
            .group_by(keys, maintain_order=True)
            .first()
        )
        # with one run per item and prompt the residual holds the item x prompt interaction
        # too (not separable): it is not run-to-run noise alone
        merged = {
            tuple(g.row(0, named=True)[k] for k in keys)
            for g in groups
            if not g.filter(
                (pl.col("component") == "item_variant") & pl.col("identified").fill_null(False)
            ).height
            and g.filter(pl.col("component") == "item_variant").height
        }
        counts: dict[str, int] = {}
        for r in top.iter_rows(named=True):
            name = r["component"]
            if name == "residual" and tuple(r[k] for k in keys) in merged:
                name = "residual_merged"
            counts[name] = counts.get(name, 0) + 1
        main = max(counts, key=lambda k: counts[k])
        where = (
            f"{counts[main]} of {n} {kind}s"
            if top.height == n
            else f"{counts[main]} of the {top.height} {kind}s (of {n}) where "
            "scores vary and two or more components are separable"
        )
        sentences.append(
            f"The largest share of the variance of an item score comes from "
            f"{_COMPONENT_NAMES[main]} in {where} "
            f"({_share_span(top['share'].min(), top['share'].max())} of the total)."
        )
        if t["truncated"].any():
            sentences.append(
                f"{int(t['truncated'].sum())} negative ANOVA estimate(s) were set to 0 "
                "(a component smaller than its noise)."
            )
    elif failed:
        sentences.append(f"No {kind} (of {n}) has fitted components to read.")
    else:
        sentences.append(
            f"No {kind} (of {n}) has scores that vary and two or more separable "
            "components: there is no variance to split."
        )
    if constant:
        bounded = (
            f"; their scores sit at the metric's bound, so the components are not known to be "
            f"0 beyond it: upper bounds up to {at_most:.3g} in the table"
            if at_most > 0
            else ""
        )
        sentences.append(
            f"{constant} of {n} group(s) have constant scores (no variance in the sample{bounded})."
        )
    if failed:
        sentences.append(
            f"In {failed} of {n} group(s) the REML fit of the components reached no stationary "
            "point: no components are reported there."
        )
    if single:
        sentences.append(
            f"In {single} of {n} group(s) only one component is separable; it holds all the "
            "variance by construction, so they are left out of the count."
        )
    absent = (
        comps.group_by("component")
        .agg((~pl.col("identified").fill_null(False)).sum().alias("k"))
        .filter(pl.col("k") > 0)
        .sort("component")
    )
    if absent.height:
        parts = [
            _COMPONENT_NAMES.get(c, c) + ("" if k == n else f" (in {k} of {n} groups)")
            for c, k in absent.iter_rows()
        ]
        sentences.append(
            f"Not separable in this design: {_listed(parts)} (merged into the neighbouring term)."
        )
    text = " ".join(sentences)
    plan = res.tables.get("plan")
    if plan is None:
        return text + (
            " No plan: the metric is not bounded (no declared range, and scores outside [0, 1]),"
            " so there is no scale-free default target width; `evalstats plan --target-ci W` "
            "sets one in its units."
        )
    allrow = plan.filter(pl.col("scope") == "all")
    varied = plan
    if not allrow.height and flat and all(k in plan.columns for k in keys):
        # a group of constant scores plans "1 call" (zero variance): not evidence of anything
        varied = plan.filter(
            ~pl.struct(keys).map_elements(
                lambda r: tuple(r[k] for k in keys) in flat, return_dtype=pl.Boolean
            )
        )
        if not varied.height:
            why = (
                "every group's scores are constant (no variance to plan from)"
                if not failed
                else "no group has both varying scores and fitted components"
            )
            return text + f" No plan: {why}."
    if allrow.height:
        row = allrow.row(0, named=True)
    else:  # the most demanding group where scores vary, named when there are several
        row = varied.sort("calls", descending=True, nulls_last=True).row(0, named=True)
    targets = res.values.get("target_width") or {}
    w = targets.get(row.get("metric"), next(iter(targets.values()), None)) if targets else None
    level = res.params.get("confidence_level", 0.95)
    if row["feasible"]:
        design = (
            f"{row['n_items'] if row['n_items'] is not None else 'the same'} items × "
            f"{row['n_variants']} prompt variants × {row['n_runs']} run(s) "
            f"({row['calls']:,} calls per model)"
        )
        if not allrow.height and varied.height > 1:
            named = ", ".join(f"{k} {row[k]}" for k in keys if row.get(k) not in (None, ""))
            text += (
                f" For a {level:.0%} interval of width {w:g} in each of the {varied.height} "
                f"groups where scores vary, the most demanding ({named}) needs {design}."
            )
        else:
            on = "every model" if allrow.height else "the model"
            text += (
                f" For a {level:.0%} interval of width {w:g} on {on}, the cheapest design is "
                f"{design}."
            )
        pilot = comps["n_items"].drop_nulls().max() if "n_items" in comps.columns else None
        if row["n_items"] is not None and pilot is not None and row["n_items"] > pilot:
            # the plan adds items from the benchmark's population: a dump of a whole benchmark
            # (545 MMLU items planned at 1816) cannot run it as it stands
            text += (
                f" That is more items than the {pilot:,} the dump holds"
                f"{'' if n == 1 else ' in its largest group'}: the width needs a "
                "larger item pool, or a wider interval."
            )
        if flat and not allrow.height:
            text += (
                " Groups with constant scores are left out: no variance to plan from."
                if not failed
                else " Groups with constant scores or without fitted components are left out."
            )
        if row["at_limit"]:
            text += f" It sits at the search limit for {row['at_limit']}."
    else:
        text += f" No design within the search limits reaches an interval of width {w:g}."
    return text


#: Reading of each analysis: ``(result, data summary) -> text``.
