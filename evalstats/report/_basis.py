"""What a reading rests on: the groups with enough items, and the factors it inferred.

A headline is drawn only where its evidence carries it (issue 41): a spread over prompts over
groups whose every prompt has MIN_RANGE_ITEMS items, and a reading over prompt variants names
the prompt factors the design took from their values alone, with the flag that corrects them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import polars as pl

from evalstats.design._model import MIN_RANGE_ITEMS
from evalstats.report._wording import _listed

if TYPE_CHECKING:
    from evalstats.report._model import AnalysisResult, DataSummary

__all__ = ["MIN_RANGE_ITEMS", "few_items", "inferred_caveat", "with_caveat"]


def inferred_caveat(data: DataSummary) -> str:
    """The sentence a reading that rests on inferred prompt factors ends with ("" when none)."""
    cols = data.inferred
    if not cols:
        return ""
    flag = ",".join(f"{c}=metadata" for c in cols)
    return (
        f" The prompt variants rest on {_listed(list(cols))}, taken as prompt "
        f"dimension{'s' if len(cols) > 1 else ''} from {'their' if len(cols) > 1 else 'its'} "
        f"values alone (several values for the same item); if "
        f"{'they are' if len(cols) > 1 else 'it is'} not, --roles {flag}."
    )


def few_items(table: pl.DataFrame, data: DataSummary | None) -> pl.Expr:
    """Rows of groups whose prompts were scored on fewer than MIN_RANGE_ITEMS items."""
    if data is None or not data.variant_items or not {"model", "dataset"} <= set(table.columns):
        return pl.lit(False)
    few = [(m, d) for m, d, n in data.variant_items if n < MIN_RANGE_ITEMS]
    if not few:
        return pl.lit(False)
    key = pl.concat_str(
        [pl.col("model").cast(pl.String), pl.col("dataset").cast(pl.String)], separator="\x1f"
    )
    return key.is_in([f"{m}\x1f{d}" for m, d in few]).fill_null(False)


def with_caveat(
    reading: Callable[[AnalysisResult, DataSummary], str],
) -> Callable[[AnalysisResult, DataSummary], str]:
    """``reading`` followed by :func:`inferred_caveat` (a reading over prompt variants)."""

    def read(res: AnalysisResult, data: DataSummary) -> str:
        return reading(res, data) + inferred_caveat(data)

    return read
