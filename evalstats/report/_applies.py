"""When each report analysis applies: the report's context and its applicability rules.

Each rule takes the :class:`Context` and returns None when the data supports the analysis, else
the reason, in words, that it is skipped (the report prints it). :data:`Spec` ties a rule to its
runner in :mod:`~evalstats.report._analyses`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import polars as pl

from evalstats.report._model import AnalysisResult, DataSummary


@dataclass(frozen=True, slots=True)
class Context:
    obs: pl.DataFrame
    data: DataSummary
    default: dict[str, Any] | None
    done: dict[str, AnalysisResult]
    #: The factor columns that make the prompt variants (None: the prompt dimensions).
    variant_factors: tuple[str, ...] | str | None = None
    #: The rule for runs over different items (``auto``: unit scores over each run's own
    #: items, the stability table over the items every run scored).
    item_rule: str = "error"
    #: The design the report uses (:class:`evalstats.design.Design`; None in the workers).
    design: Any = None
    #: The report's seed, for what an analysis draws beside its function's own call (the
    #: sparse-grid model's posterior draws of the moments analysis).
    seed: int = 0
    #: Every call, errored calls kept without a score included (None: there are none); the
    #: provider audit reads it, every other analysis ``obs`` (scored rows only).
    calls: pl.DataFrame | None = None


def split_calls(table: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame | None]:
    """``(scored rows, every call or None)``: errored calls without a score apart."""
    if "error" not in table.columns:
        return table, None
    unscored = pl.col("score").is_null() & pl.col("error").is_not_null()
    scored = table.filter(~unscored)
    return scored, (table if scored.height < table.height else None)


#: The analysis of the design (:attr:`evalstats.design.Design.supports`) that decides whether
#: a report analysis has data to stand on.
DESIGN_GATE = {
    "moments": "moments",
    "nstar": "nstar",
    "converge": "moments",
    "stability": "stability",
    "normality": "normality",
    "correlation": "stability",
    "intervals": "intervals",
    "compare": "compare",
    "ranks": "compare",
    "friedman": "friedman",
    "ppi": "intervals",
}


def design_gate(key: str, ctx: Context) -> str | None:
    """Why the design does not support analysis ``key`` (None when it does or is silent)."""
    if ctx.design is None or key not in DESIGN_GATE:
        return None
    support = ctx.design.supports_analysis(DESIGN_GATE[key])
    if support is None or support.supported:
        return None
    return f"the design does not support it: {support.reason}"


def stability_fixed(ctx: Context) -> dict[str, Any]:
    """Under the ``auto`` rule, TAR is over the items every run of a configuration scored."""
    return {"on_mismatch": "intersect"} if ctx.item_rule == "auto" else {}


@dataclass(frozen=True, slots=True)
class Spec:
    key: str
    title: str
    section: str
    function: str  # dotted public name
    command: str | None
    applies: Callable[[Context], str | None]  # None when it applies, else why not
    run: Callable[[Context, dict[str, Any]], tuple[dict, dict, dict]]  # tables, values, objects
    fixed: Callable[[Context], dict[str, Any]] = lambda ctx: {}  # arguments the report sets


# applicability ------------------------------------------------------------------------------


def _need_variants(ctx: Context) -> str | None:
    if ctx.data.n_variants < 2:
        return "each model and dataset has a single prompt variant: there is no spread over prompts"
    from evalstats.factors import decoding_only

    return decoding_only(ctx.obs, variant_factors=ctx.variant_factors)


def _variants_fixed(ctx: Context | None) -> dict[str, Any]:
    """The variant factors, when the user named them (else the analysis's default rule)."""
    vf = getattr(ctx, "variant_factors", None)
    return {} if vf is None else {"variant_factors": vf if isinstance(vf, str) else list(vf)}


def _need_runs(ctx: Context) -> str | None:
    if ctx.data.n_runs < 2:
        return "each configuration was run once: run-to-run stability needs repeated runs"
    if ctx.data.n_items is None:
        return "the input has no item column: stability compares each item's answers over runs"
    return None


#: Fewest configurations (points) for a rank correlation between stability measures: over 3
#: points a Spearman coefficient of 0.87 is no evidence of anything.
MIN_CORRELATION_POINTS = 10


def _need_stability(ctx: Context) -> str | None:
    reason = _need_runs(ctx)
    if reason is None and "stability" not in ctx.done:
        return "it correlates the columns of the stability table, which was skipped"
    if reason is None:
        n = ctx.done["stability"].tables["stability"].height
        if n < MIN_CORRELATION_POINTS:
            return (
                f"only {n} configuration(s) in the stability table: a rank correlation over "
                f"fewer than {MIN_CORRELATION_POINTS} points is no evidence"
            )
    return reason


def _need_factors(ctx: Context) -> str | None:
    if not ctx.data.factors:
        const, partial = ctx.data.constant_factors, ctx.data.incomplete_factors
        notes = []
        if const:  # "version have a single level" on a real MBSE dump
            notes.append(
                f"{', '.join(const)} {'has' if len(const) == 1 else 'have'} a single level"
            )
        if partial:
            verb = "has" if len(partial) == 1 else "have"
            notes.append(f"{', '.join(partial)} {verb} rows without a value")
        tail = f" ({'; '.join(notes)})" if notes else ""
        return f"no complete factor column with two or more levels{tail}; name them with --factors"
    return None


def _need_models(ctx: Context) -> str | None:
    if len(ctx.data.models) < 2:
        return f"only one model ({ctx.data.models[0]}): nothing to compare"
    if ctx.data.n_items is None:
        return "the input has no item column: paired comparisons and rank bootstraps need items"
    return None


def _need_blocks(ctx: Context) -> str | None:
    if len(ctx.data.models) < 2:
        return f"only one model ({ctx.data.models[0]}): nothing to rank"
    if len(ctx.data.datasets) < 2:
        return "a single dataset: the Friedman test ranks models across several datasets"
    return None


def _need_noise(ctx: Context) -> str | None:
    if ctx.data.n_items is None and ctx.data.n_variants < 2:
        return "unit-level input with a single prompt variant: no variance to decompose"
    if ctx.data.n_items is None and ctx.data.n_runs < 2:
        # one score per prompt variant: the only variance is between prompts, so every group
        # would read "100 % from prompt variants", which says nothing about items or runs
        return (
            "unit-level input with one run per prompt variant: the only variance is between "
            "prompts (see the scores over prompt variants); splitting it into item, prompt and "
            "run components needs item-level scores or repeated runs"
        )
    if ctx.data.n_items is not None and ctx.data.n_variants < 2 and ctx.data.n_runs < 2:
        return "one prompt and one run per item: only the item variance is there, see intervals"
    return None


def _need_default(ctx: Context) -> str | None:
    if not ctx.default:
        return "no default configuration given (--default factor=value,...)"
    return None


def _need_providers(ctx: Context) -> str | None:
    if ctx.data.provider is None and not ctx.data.n_errors:
        return "no provider column with two or more providers and no recorded errors"
    if ctx.data.n_items is None:
        return "the input has no item column: provider differences are paired on items"
    return None


def _need_gold(ctx: Context) -> str | None:
    if "gold_score" not in ctx.obs.columns or ctx.data.n_items is None:
        return "no gold_score column: PPI needs human scores on part of the items"
    n_gold = ctx.obs["gold_score"].is_not_null().sum()
    if n_gold == 0 or n_gold == ctx.obs.height:
        return "gold scores cover none or all of the rows: nothing for PPI to correct"
    return None


def _held(ctx: Context | None) -> tuple[str, ...]:
    """The settings the design holds fixed that vary: every group is one value of each."""
    design = getattr(ctx, "design", None)
    return tuple(design.held) if design is not None else ()


def _intervals_fixed(ctx: Context) -> dict[str, Any]:
    """The design's prompt factors, and one interval per setting value (never pooled)."""
    return {"by": ("model", "dataset", "metric", *_held(ctx)), **_variants_fixed(ctx)}


def _ranks_fixed(ctx: Context) -> dict[str, Any]:
    """The design's prompt factors, and ranks within each setting value (never pooled)."""
    return {"by": ("dataset", "metric", *_held(ctx)), **_variants_fixed(ctx)}


def _noise_fixed(ctx: Context) -> dict[str, Any]:
    """Components per setting value: the variants of a group then differ in prompts only."""
    held = _held(ctx)
    return {"by": ("model", "dataset", "metric", *held)} if held else {}


def _compare_fixed(ctx: Context) -> dict[str, Any]:
    """One family for the whole study, the design's prompt factors, settings held apart.

    The headline count of differing pairs then holds study-wide (15 datasets corrected one by
    one have a study-wide false-positive rate near 0.46); settings are not prompts, and each
    value of a setting (a provider, a temperature) is compared on its own.
    """
    return {"family": "global", **_ranks_fixed(ctx)}
