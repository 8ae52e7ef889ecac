"""Figures: seaborn/matplotlib plots of analysis results, one function per figure kind.

Plot functions take the result frames of the analysis functions and return a matplotlib
Figure; they compute no statistics and never save or show. matplotlib and seaborn are imported
only when a plot function is first used (``import evalstats`` stays light).
"""

from __future__ import annotations

import importlib
from typing import Any

from evalstats.plots._style import label, model_colors, paper_style

#: Public plot functions and the module that defines each (imported on first use).
_FUNCTIONS: dict[str, str] = {
    # "plot_name": "evalstats.plots.module",
    "plot_anova_effects": "evalstats.plots.attribution",
    "plot_attribution": "evalstats.plots.attribution",
    "plot_interaction_heatmap": "evalstats.plots.attribution",
    "plot_tar_heatmap": "evalstats.plots.stability",
    "plot_correlation_heatmap": "evalstats.plots.stability",
    "plot_run_distribution": "evalstats.plots.stability",
    "plot_stability_distribution": "evalstats.plots.stability",
    "plot_prompt_spread": "evalstats.plots.moments",
    "plot_convergence": "evalstats.plots.moments",
    "plot_convergence_overlay": "evalstats.plots.moments",
    "plot_intervals": "evalstats.plots.compare",
    "plot_differences": "evalstats.plots.compare",
    "plot_score_distribution": "evalstats.plots.compare",
    "plot_critical_difference": "evalstats.plots.compare",
    "plot_provider_audit": "evalstats.plots.compare",
    "plot_provider_comparison": "evalstats.plots.compare",
    "plot_tail_quality": "evalstats.plots.compare",
    "plot_noise_components": "evalstats.plots.noise",
    "plot_plan": "evalstats.plots.noise",
}

__all__ = ["label", "model_colors", "paper_style", *_FUNCTIONS]


def __getattr__(name: str) -> Any:
    if name in _FUNCTIONS:
        return getattr(importlib.import_module(_FUNCTIONS[name]), name)
    raise AttributeError(f"module 'evalstats.plots' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
