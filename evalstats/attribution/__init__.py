"""Configuration attribution: factorial ANOVA with η² and permutation p-values, OLS and xgboost.

Which components of a configuration (language, prompt format, shots, CoT, temperature, ...)
move accuracy, and by how much? :func:`factor_anova` answers with a factorial ANOVA (main
effects and two-way interactions, η², F tests and Freedman–Lane permutation p-values);
:func:`attribute` with a linear model (coefficients per level, partial R²) or xgboost
(mean |SHAP| per factor against a null band from refits on permuted scores).
:func:`interaction_means` gives the cell means behind an interaction heatmap.

Private modules: ``_common`` (results, validation, coding), ``_anova`` (the ANOVA cores and
:func:`factor_anova`), ``_items`` (items as a random factor: the term x item error strata and
their sign-flip permutations), ``_attribute`` (:func:`attribute`). The numeric cores are plain
numpy functions: arrays in, arrays out.
"""

from evalstats.attribution._anova import factor_anova, interaction_means
from evalstats.attribution._attribute import attribute
from evalstats.attribution._common import AnovaResult, AttributionResult

__all__ = [
    "AnovaResult",
    "AttributionResult",
    "attribute",
    "factor_anova",
    "interaction_means",
]
