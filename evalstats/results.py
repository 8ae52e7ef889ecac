"""Shared result types and argument checks: ``ConfidenceInterval`` and small helpers.

Every analysis module may import from here (it depends only on :mod:`evalstats.errors`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from evalstats.errors import ParameterError

__all__ = [
    "ConfidenceInterval",
    "check_alternative",
    "check_choice",
    "check_confidence_level",
    "check_positive_int",
    "to_float",
]


@dataclass(frozen=True, slots=True)
class ConfidenceInterval:
    """A confidence interval ``[low, high]`` at confidence ``level``.

    Examples
    --------
    >>> ci = ConfidenceInterval(0.25, 0.75, 0.95)
    >>> ci
    ConfidenceInterval(low=0.25, high=0.75, level=0.95)
    >>> ci.contains(0.5), ci.width
    (True, 0.5)
    """

    low: float
    high: float
    level: float

    @property
    def width(self) -> float:
        """``high - low``."""
        return self.high - self.low

    def contains(self, value: float) -> bool:
        """Whether ``low <= value <= high``."""
        return bool(self.low <= value <= self.high)

    def to_frame(self) -> pl.DataFrame:
        """One-row frame with ``ci_low``, ``ci_high``, ``confidence_level``."""
        return pl.DataFrame(
            {"ci_low": [self.low], "ci_high": [self.high], "confidence_level": [self.level]},
            schema={"ci_low": pl.Float64, "ci_high": pl.Float64, "confidence_level": pl.Float64},
        )


def to_float(value: Any) -> float:
    """``value`` as a plain Python float (NaN for None)."""
    if value is None:
        return math.nan
    return float(value)


def check_confidence_level(confidence_level: float) -> float:
    """Return ``confidence_level`` as a float; raise ParameterError unless it is in (0, 1).

    Examples
    --------
    >>> check_confidence_level(95)
    Traceback (most recent call last):
    ...
    evalstats.errors.ParameterError: `confidence_level` must be in (0, 1), got 95. Did you mean 0.95?
    """
    try:
        level = float(confidence_level)
    except (TypeError, ValueError):
        raise ParameterError(
            f"`confidence_level` must be a number in (0, 1), got {confidence_level!r}."
        ) from None
    if not 0 < level < 1:
        hint = f" Did you mean {level / 100:g}?" if 1 < level < 100 else ""
        raise ParameterError(
            f"`confidence_level` must be in (0, 1), got {confidence_level!r}.{hint}"
        )
    return level


def check_choice(name: str, value: Any, choices: Sequence[str]) -> str:
    """Return ``value`` if it is one of ``choices``; raise ParameterError naming them otherwise."""
    if value not in choices:
        listed = ", ".join(repr(c) for c in choices)
        raise ParameterError(f"`{name}` must be one of {listed}, got {value!r}.")
    return value


def check_alternative(alternative: str) -> str:
    """Check a scipy-style ``alternative``."""
    return check_choice("alternative", alternative, ("two-sided", "less", "greater"))


def check_positive_int(name: str, value: Any, *, minimum: int = 1) -> int:
    """Return ``value`` as an int; raise ParameterError unless it is an integer >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int | float) or int(value) != value:
        raise ParameterError(f"`{name}` must be an integer >= {minimum}, got {value!r}.")
    if value < minimum:
        raise ParameterError(f"`{name}` must be an integer >= {minimum}, got {value!r}.")
    return int(value)
