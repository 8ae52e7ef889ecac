"""One colour per model in every figure of a report, the best models highlighted.

The ranking (mean unit score over datasets, in each metric's direction) decides which models
keep distinct colours when there are more than :data:`~evalstats.plots._style.TOP_K`; it reads
only the units and the data summary, so every figure of a report, drawn in any process, gets the
same palette.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

if TYPE_CHECKING:
    from evalstats.report._model import ReportContents

__all__ = ["GREY_NOTE", "ranked_models", "report_palette", "top_k"]


def ranked_models(report: ReportContents) -> list[str]:
    """The models from best to worst by mean unit score over datasets (ties by name).

    The order decides which models the figures highlight when there are many; "best" follows
    each metric's direction (``higher_is_better``, default higher).
    """
    units = report.units
    if units.height == 0 or "score" not in units.columns:
        return list(report.data.models)
    score = pl.col("score")
    if "higher_is_better" in units.columns:
        score = pl.when(pl.col("higher_is_better").fill_null(True)).then(score).otherwise(-score)
    means = (
        units.group_by("model", "dataset")
        .agg(score.mean().alias("s"))
        .group_by("model")
        .agg(pl.col("s").mean())
        .sort(["s", "model"], descending=[True, False], nulls_last=True)
    )
    return means["model"].to_list()


def report_palette(report: ReportContents) -> dict[str, Any]:
    """One colour per model for every figure of the report.

    Beyond ``TOP_K`` models only the best ``TOP_K`` keep their colours; the rest are grey.
    """
    from evalstats.plots import model_colors
    from evalstats.plots._style import TOP_K, highlight_palette

    if not report.data.models:
        return {}
    ranked = ranked_models(report)
    if len(ranked) <= TOP_K:
        return model_colors(report.data.models)
    # the highlighted models get the distinct colour-blind-safe colours, in rank order
    from evalstats.plots._style import colorblind

    # (the palette's grey, its 8th colour, is left for the others)
    colours = [c for i, c in enumerate(colorblind(10)) if i != 7]
    distinct = dict(zip(ranked, colours[:TOP_K]))
    return highlight_palette(distinct | {m: None for m in ranked[TOP_K:]}, ranked)


GREY_NOTE = (
    " With many models, the best (by mean score) keep their colours and the others are grey."
)


def top_k() -> int:
    from evalstats.plots._style import TOP_K

    return TOP_K
