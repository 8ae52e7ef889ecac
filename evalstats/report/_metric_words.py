"""How figures name a metric: accuracy on [0, 1], else the metric in its own units."""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:
    from evalstats.report._model import ReportContents

__all__ = ["noun", "with_metric"]


def with_metric(t: pl.DataFrame, report: ReportContents) -> pl.DataFrame:
    """``t`` with each metric's range and direction, for the axes to name the metric.

    A metric that is not an accuracy on [0, 1] is named after itself on the axes (a 1-10
    rating is never 'accuracy (0-1)').
    """
    if report.data.percent or "metric" not in t.columns or not report.data.metrics:
        return t
    info = pl.DataFrame(
        {
            "metric": [m.name for m in report.data.metrics],
            "metric_low": [m.low for m in report.data.metrics],
            "metric_high": [m.high for m in report.data.metrics],
            "higher_is_better": [m.higher_is_better for m in report.data.metrics],
        },
        schema={
            "metric": pl.String,
            "metric_low": pl.Float64,
            "metric_high": pl.Float64,
            "higher_is_better": pl.Boolean,
        },
    )
    drop = [c for c in ("metric_low", "metric_high", "higher_is_better") if c in t.columns]
    return t.drop(drop).join(info, on="metric", how="left", maintain_order="left")


def noun(report: ReportContents) -> str:
    """What captions call the scores: accuracy on [0, 1], else score (never a 1-10 rating)."""
    return "accuracy" if report.data.percent else "score"
