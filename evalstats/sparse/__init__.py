"""Sparse item x prompt grids: a model's whole prompt distribution from part of the grid.

A dump that runs each prompt variant on a fraction of the items (a walk of the prompt space)
gives each variant a mean over different, and few, items. :func:`sparse_prompt_distribution`
fits item and prompt effects (PromptEval's idea, Polo et al. 2024) and estimates the
distribution of per-prompt accuracy over the whole grid (mean, sd, quantiles, worst and best
prompt) with intervals, beside the naive per-variant means of the observed cells.
:func:`sparse_plan` proposes the next cells to run. See docs/methods/sparse.md.
"""

from __future__ import annotations

from evalstats.sparse._estimate import (
    DISTRIBUTION_COLUMNS,
    PROMPT_COLUMNS,
    sparse_prompt_distribution,
    sparse_prompt_scores,
    sparse_unit_table,
)
from evalstats.sparse._plan import PLAN_COLUMNS, sparse_plan
from evalstats.sparse._simulate import (
    PlantedEffects,
    full_grid,
    planted_effects,
    sparse_grid,
    subsample_cells,
)

__all__ = [
    "DISTRIBUTION_COLUMNS",
    "PLAN_COLUMNS",
    "PROMPT_COLUMNS",
    "PlantedEffects",
    "full_grid",
    "planted_effects",
    "sparse_grid",
    "sparse_plan",
    "sparse_prompt_distribution",
    "sparse_prompt_scores",
    "sparse_unit_table",
    "subsample_cells",
]
