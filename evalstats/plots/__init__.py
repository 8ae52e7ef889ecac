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
}

__all__ = ["label", "model_colors", "paper_style", *_FUNCTIONS]


def __getattr__(name: str) -> Any:
    if name in _FUNCTIONS:
        return getattr(importlib.import_module(_FUNCTIONS[name]), name)
    raise AttributeError(f"module 'evalstats.plots' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
