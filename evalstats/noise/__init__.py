"""Where the noise comes from: variance components over items x prompt variants x runs.

:func:`variance_components` splits the variance of item scores (per model, and per pair of models
paired on items) into item, variant, item x variant and run/residual components;
:func:`predicted_variance` turns them into the variance of a mean score under any design, and
:func:`plan` into the cheapest design that reaches a target interval width or detects a given
difference. The public names live in private modules and are re-exported here.
"""

from __future__ import annotations

from evalstats.noise._components import COMPONENT_COLUMNS, variance_components
from evalstats.noise._design import predicted_variance, resampling_check
from evalstats.noise._logit import logit_components
from evalstats.noise._plan import PlanResult, parse_cost, plan

__all__ = [
    "COMPONENT_COLUMNS",
    "PlanResult",
    "logit_components",
    "parse_cost",
    "plan",
    "predicted_variance",
    "resampling_check",
    "variance_components",
]
