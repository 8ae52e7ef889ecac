"""Claim audit: intervals, paired model and run differences, rankings, reversals, providers.

The public names live in private modules and are re-exported here.
"""

from __future__ import annotations

from evalstats.compare._audit import (
    ReversalAudit,
    SubsetRankings,
    parse_claim,
    reversal_audit,
    subset_rankings,
)
from evalstats.compare._converge import convergence, stopping_sizes
from evalstats.compare._intervals import (
    MIN_PROMPTS,
    MIN_VARIANTS,
    default_over,
    intervals,
    mean_interval,
)
from evalstats.compare._letters import compact_letters, letter_groups
from evalstats.compare._paired import (
    T_MIN_UNITS,
    PairedDifference,
    compare_models,
    paired_difference,
    paired_matrix,
)
from evalstats.compare._ppi import ppi_difference, ppi_mean
from evalstats.compare._providers import ProviderAudit, provider_audit
from evalstats.compare._ranks import FriedmanResult, friedman_nemenyi, rank_intervals
from evalstats.compare._runs import (
    RUNS_COLUMNS,
    compare_runs,
    equivalence_tests,
    paired_binary_tests,
)

__all__ = [
    "MIN_PROMPTS",
    "MIN_VARIANTS",
    "RUNS_COLUMNS",
    "T_MIN_UNITS",
    "FriedmanResult",
    "PairedDifference",
    "ProviderAudit",
    "ReversalAudit",
    "SubsetRankings",
    "compact_letters",
    "compare_models",
    "compare_runs",
    "convergence",
    "default_over",
    "equivalence_tests",
    "friedman_nemenyi",
    "intervals",
    "letter_groups",
    "mean_interval",
    "paired_binary_tests",
    "paired_difference",
    "paired_matrix",
    "parse_claim",
    "ppi_difference",
    "ppi_mean",
    "provider_audit",
    "rank_intervals",
    "reversal_audit",
    "stopping_sizes",
    "subset_rankings",
]
