"""Claim audit: intervals, paired model differences, rankings, reversals, stopping, providers.

The public names live in private modules and are re-exported here.
"""

from __future__ import annotations

from evalstats.compare._intervals import intervals, mean_interval

__all__ = ["intervals", "mean_interval"]
