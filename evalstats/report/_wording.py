"""Numbers and names in words for the readings: percentages, points, p-values, lists.

The wording helpers of :mod:`evalstats.report._readings`, kept apart so each module stays
short. Accuracies (every metric on [0, 1]) are quoted in percent and differences in accuracy
points; other metrics in their own units (:func:`scale` sets which for a block).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import polars as pl

__all__ = ["method_name", "scale"]

#: At most this many items are listed in one sentence ("a, b, c and 4 more").
_LIST_MAX = 4


def _ok(v: Any) -> bool:
    return v is not None and not (isinstance(v, float) and math.isnan(v))


#: Whether scores are quoted as percentages (every metric on [0, 1]) or in metric units.
_PERCENT: ContextVar[bool] = ContextVar("evalstats_reading_percent", default=True)


@contextmanager
def scale(percent: bool) -> Iterator[None]:
    """Quote scores in percent (accuracies) or in the metrics' own units inside the block."""
    token = _PERCENT.set(percent)
    try:
        yield
    finally:
        _PERCENT.reset(token)


def _pct(x: float | None) -> str:
    """Accuracy as a percentage: 0.6115 -> '61.2 %' (another metric: '41.2' in its units)."""
    if not _ok(x):
        return "n/a"
    return f"{100 * x:.1f} %" if _PERCENT.get() else f"{x:.4g}"


def _pts(x: float | None, *, sign: bool = False) -> str:
    """A difference in accuracy points: 0.0797 -> '8.0' (another metric: in its units)."""
    if not _ok(x):
        return "n/a"
    if not _PERCENT.get():
        return f"{x:+.4g}" if sign else f"{x:.4g}"
    return f"{100 * x:+.1f}" if sign else f"{100 * x:.1f}"


def _points() -> str:
    """' points' after a difference of accuracies (percentage points), else nothing.

    A difference in a metric's own units (BLEU, a log-likelihood) is not in points.
    """
    return " points" if _PERCENT.get() else ""


def _score_word() -> str:
    return "accuracy" if _PERCENT.get() else "score"


def _num(x: float | None, digits: int = 3) -> str:
    if not _ok(x):
        return "n/a"
    if x != 0 and abs(x) < 10 ** (-digits):
        return f"{x:.1e}"
    return f"{x:.{digits}f}"


def _p(x: float | None) -> str:
    if not _ok(x):
        return "p n/a"
    return "p < 0.001" if x < 0.001 else f"p = {x:.3f}"


def _join(items: Sequence[str], *, more: int = 0) -> str:
    items = list(items)
    if more:
        items = [*items, f"{more} more"]
    if not items:
        return ""
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + " and " + items[-1]


def _listed(items: Iterable[str]) -> str:
    items = list(items)
    return _join(items[:_LIST_MAX], more=max(len(items) - _LIST_MAX, 0))


def _where(
    row: dict[str, Any], keys: Sequence[str] = ("model", "dataset"), extra: Sequence[str] = ()
) -> str:
    """'m0 on d0' for a group; ``extra`` columns (settings held fixed) follow in parentheses,
    so that groups that differ only in them are told apart ('m0 on d0 (temperature 0.7)').
    """  # noqa: D205
    parts = [str(row[k]) for k in keys if k in row and row[k] is not None]
    text = ", ".join(parts)
    if len(parts) == 2 and keys[:2] == ("model", "dataset"):
        text = f"{parts[0]} on {parts[1]}"
    held = [f"{k} {row[k]}" for k in extra if k in row and row[k] is not None]
    return f"{text} ({', '.join(held)})" if held else text


def _variant_text(variant: Any) -> str:
    """A variant key as a reader needs it: each ``|``-separated part once.

    A table whose variant column already spells its factor settings gets the factor columns
    appended to its variant key (so rows that differ in them never merge); in a sentence the
    settings are named once ('template=mcq|shots=5', not 'template=mcq|shots=5|template=mcq|
    shots=5'). Parts are compared without case ('cot=False' and 'cot=false' are one).
    """
    parts = str(variant).split("|")
    seen: set[str] = set()
    kept = []
    for part in parts:
        if part.lower() not in seen:
            seen.add(part.lower())
            kept.append(part)
    return "|".join(kept)


def _counts(values: Iterable[Any]) -> str:
    """Distinct counts as words: '4', '2 and 5', '2, 3 and 5', or a range '136 to 189'."""
    distinct = sorted(set(v for v in values if v is not None))
    if len(distinct) > 3:
        return f"{distinct[0]} to {distinct[-1]}"
    return _join([str(v) for v in distinct])


def _setting(column: str, value: Any) -> str:
    """A held setting's value in a sentence: 'temperature 0.7', 'provider_a' (not doubled)."""
    text = str(value)
    return text if column.lower() in text.lower() else f"{column} {text}"


def _on(keys: Sequence[str], key: Sequence[Any], table: pl.DataFrame) -> str:
    """'On d0, ' for a group key; the metric is named only when the table has several."""
    one_metric = "metric" in table.columns and table["metric"].n_unique() == 1
    parts = [
        (f"metric {v}" if c == "metric" else str(v) if c == "dataset" else _setting(c, v))
        for c, v in zip(keys, key)
        if not (c == "metric" and one_metric) and v is not None
    ]
    return f"On {', '.join(parts)}, " if parts else ""


#: Display names of test and coefficient methods.
_METHODS = {
    "lilliefors": "Lilliefors",
    "shapiro": "Shapiro–Wilk",
    "anderson": "Anderson–Darling",
    "ks": "Kolmogorov–Smirnov",
    "spearman": "Spearman",
    "kendall": "Kendall",
    "pearson": "Pearson",
    "holm": "Holm",
    "bh": "Benjamini–Hochberg",
    "bonferroni": "Bonferroni",
    "sidak": "Šidák",
    "hochberg": "Hochberg",
    "maxt": "max-t",
    "romano-wolf": "Romano–Wolf",
}


def method_name(name: str) -> str:
    """Display name of a test or coefficient method (``shapiro`` -> ``Shapiro–Wilk``)."""
    return _METHODS.get(name, name)


def _ahead(a: str, b: str, diff: float, low: float, high: float, where: str = "") -> str:
    """'b ahead of a on d by 8.0 points [5.7, 10.2]' for diff = a - b < 0 (and vice versa)."""
    if diff < 0:
        a, b, diff, low, high = b, a, -diff, -high, -low
    return f"{a} ahead of {b}{where} by {_pts(diff)}{_points()} [{_pts(low)}, {_pts(high)}]"


def _several(values: Iterable[Any]) -> bool:
    return len(set(values)) > 1


def _alpha(params: dict[str, Any]) -> float:
    level = params.get("confidence_level", 0.95)
    return 1.0 - float(level) if _ok(level) else 0.05


def _held(table: pl.DataFrame) -> list[str]:
    """Factor columns held fixed as group columns (decoding or serving settings)."""
    from evalstats.moments import SPREAD_COLUMNS
    from evalstats.report._sparse import SCORES_COLUMN
    from evalstats.resampling import CURVE_COLUMNS, NSTAR_COLUMNS

    known = {
        "model",
        "dataset",
        "metric",
        SCORES_COLUMN,
        *SPREAD_COLUMNS,
        *NSTAR_COLUMNS,
        *CURVE_COLUMNS,
    }
    return [c for c in table.columns if c not in known]


def _nstar_span(rows: pl.DataFrame) -> str | None:
    if "vacuous" in rows.columns:  # a vacuous n* says nothing: not part of the span
        rows = rows.filter(~pl.col("vacuous"))
    reached = rows.filter(pl.col("reached"))
    if not reached.height:
        return None
    lo, hi = reached["n_star"].min(), reached["n_star"].max()
    avail = _counts(reached["n_available"].to_list())
    span = f"{lo}" if lo == hi else f"between {lo} and {hi}"
    return f"{span} variants (n*, of {avail} available)"


def _nstar_short(rows: pl.DataFrame, moment: str) -> str:
    """One moment's n* in a clause of counts: 'the mean needs 11 to 12 variants in 3 of 24
    groups and is not reached in 21 (...)'; the groups are listed by :func:`_nstar_moment`.
    """  # noqa: D205
    n = rows.height
    vac = rows.filter(pl.col("vacuous")) if "vacuous" in rows.columns else rows.clear()
    info = rows.filter(~pl.col("vacuous")) if "vacuous" in rows.columns else rows
    reached = info.filter(pl.col("reached"))
    missed = info.height - reached.height
    bits = []
    if reached.height:
        lo, hi = reached["n_star"].min(), reached["n_star"].max()
        k = f"{lo}" if lo == hi else f"{lo} to {hi}"
        avail = _counts(reached["n_available"].to_list())
        bits.append(f"needs {k} of {avail} variants in {reached.height} of {n} groups")
    if missed:
        avail = _counts(info.filter(~pl.col("reached"))["n_available"].to_list())
        bits.append(
            f"is not reached in {missed} of {n} groups (their {avail} variants are too few)"
        )
    if vac.height:
        bits.append(
            f"is vacuous in {vac.height} of {n} groups (the {moment} itself is within ε of 0)"
        )
    return f"the {moment} " + _join(bits)


def _nstar_moment(rows: pl.DataFrame, moment: str) -> str:
    """One moment's n*: its range over informative groups, groups not reached, vacuous groups."""
    vac = rows.filter(pl.col("vacuous")) if "vacuous" in rows.columns else rows.clear()
    info = rows.filter(~pl.col("vacuous")) if "vacuous" in rows.columns else rows
    missed = info.filter(~pl.col("reached"))
    span = _nstar_span(info)
    bits = []
    if span is not None:
        bits.append(f"the {moment} needs {span}")
    if missed.height:
        where = _listed(_where(r, extra=_held(rows)) for r in missed.iter_rows(named=True))
        bits.append(
            f"{'' if bits else f'for the {moment} '}the available variants are not enough for "
            f"{where} (n* not reached: evaluate more prompts before trusting it)"
        )
    if vac.height:
        where = _listed(_where(r, extra=_held(rows)) for r in vac.iter_rows(named=True))
        bits.append(
            f"{'' if bits else f'for the {moment} '}n* is vacuous in {vac.height} of "
            f"{rows.height} groups ({where}): the {moment} over prompts is itself within ε of 0 "
            "there, so a single variant already meets the tolerance and n* says nothing about "
            "how many prompts are needed"
        )
    return "; ".join(bits)
