"""evalstats: decide whether an LLM evaluation claim holds, from recorded prediction dumps.

The public API: loaders return the observation table and an ingest report; ``to_units``
aggregates it; analyses take either table and return tidy polars frames or small result objects.
``import evalstats`` is light: each public name is imported on first use, so the command line
starts without scipy, statsmodels or matplotlib (see :mod:`evalstats.plots` for the figures).
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalstats.aggregate import UnitIngest, align_item_sets, read_units, to_units
    from evalstats.attribution import (
        AnovaResult,
        AttributionResult,
        attribute,
        factor_anova,
        interaction_means,
    )
    from evalstats.compare import (
        compare_models,
        compare_runs,
        convergence,
        friedman_nemenyi,
        intervals,
        letter_groups,
        ppi_difference,
        ppi_mean,
        provider_audit,
        rank_intervals,
        reversal_audit,
        subset_rankings,
    )
    from evalstats.correlation import correlation_matrix, spearman_matrix
    from evalstats.design import Design, apply_design, infer_design
    from evalstats.errors import (
        ClusterError,
        DegenerateDataWarning,
        DesignWarning,
        EvalstatsError,
        EvalstatsWarning,
        IngestError,
        InsufficientDataError,
        LimitError,
        MetricScaleError,
        MissingDependencyError,
        OutputError,
        ParameterError,
        SchemaError,
    )
    from evalstats.io import Ingest, IngestReport, read, read_table
    from evalstats.io.dove import read_dove
    from evalstats.io.inspect_frames import from_inspect
    from evalstats.io.inspect_log import read_inspect
    from evalstats.io.llm_stability import read_llm_stability
    from evalstats.io.lm_eval import read_lm_eval
    from evalstats.io.openai_evals import read_openai_evals
    from evalstats.io.reliable_eval import read_reliable_eval
    from evalstats.io.state_of_what_art import read_state_of_what_art
    from evalstats.moments import prompt_spread
    from evalstats.noise import variance_components
    from evalstats.normality import run_distribution, run_normality
    from evalstats.report import AuditReport, audit_report
    from evalstats.resampling import (
        reference_model_check,
        required_sample_size,
        sample_size_curve,
        sample_size_uncertainty,
    )
    from evalstats.schema import (
        MetricInfo,
        metric_info,
        validate_observations,
        validate_units,
        with_metric,
    )
    from evalstats.sparse import (
        sparse_plan,
        sparse_prompt_distribution,
        sparse_prompt_scores,
        sparse_unit_table,
    )
    from evalstats.stability import (
        format_stability_table,
        stability_table,
        tar_curve,
        unstable_items,
    )

#: Public name -> the module that defines it. The names are imported on first use (PEP 562),
#: so that ``import evalstats`` and ``evalstats --help`` do not pay for scipy, statsmodels and
#: the rest before an analysis needs them.
_LAZY: dict[str, str] = {
    "align_item_sets": "evalstats.aggregate",
    "AnovaResult": "evalstats.attribution",
    "apply_design": "evalstats.design",
    "attribute": "evalstats.attribution",
    "AttributionResult": "evalstats.attribution",
    "audit_report": "evalstats.report",
    "AuditReport": "evalstats.report",
    "ClusterError": "evalstats.errors",
    "compare_models": "evalstats.compare",
    "compare_runs": "evalstats.compare",
    "convergence": "evalstats.compare",
    "correlation_matrix": "evalstats.correlation",
    "DegenerateDataWarning": "evalstats.errors",
    "Design": "evalstats.design",
    "DesignWarning": "evalstats.errors",
    "EvalstatsError": "evalstats.errors",
    "EvalstatsWarning": "evalstats.errors",
    "factor_anova": "evalstats.attribution",
    "format_stability_table": "evalstats.stability",
    "from_inspect": "evalstats.io.inspect_frames",
    "friedman_nemenyi": "evalstats.compare",
    "infer_design": "evalstats.design",
    "Ingest": "evalstats.io",
    "IngestError": "evalstats.errors",
    "IngestReport": "evalstats.io",
    "InsufficientDataError": "evalstats.errors",
    "interaction_means": "evalstats.attribution",
    "intervals": "evalstats.compare",
    "letter_groups": "evalstats.compare",
    "LimitError": "evalstats.errors",
    "metric_info": "evalstats.schema",
    "MetricInfo": "evalstats.schema",
    "MetricScaleError": "evalstats.errors",
    "MissingDependencyError": "evalstats.errors",
    "OutputError": "evalstats.errors",
    "ParameterError": "evalstats.errors",
    "ppi_difference": "evalstats.compare",
    "ppi_mean": "evalstats.compare",
    "prompt_spread": "evalstats.moments",
    "provider_audit": "evalstats.compare",
    "rank_intervals": "evalstats.compare",
    "read": "evalstats.io",
    "read_dove": "evalstats.io.dove",
    "read_inspect": "evalstats.io.inspect_log",
    "read_llm_stability": "evalstats.io.llm_stability",
    "read_lm_eval": "evalstats.io.lm_eval",
    "read_openai_evals": "evalstats.io.openai_evals",
    "read_reliable_eval": "evalstats.io.reliable_eval",
    "read_state_of_what_art": "evalstats.io.state_of_what_art",
    "read_table": "evalstats.io",
    "read_units": "evalstats.aggregate",
    "reference_model_check": "evalstats.resampling",
    "required_sample_size": "evalstats.resampling",
    "reversal_audit": "evalstats.compare",
    "run_distribution": "evalstats.normality",
    "run_normality": "evalstats.normality",
    "sample_size_curve": "evalstats.resampling",
    "sample_size_uncertainty": "evalstats.resampling",
    "SchemaError": "evalstats.errors",
    "sparse_plan": "evalstats.sparse",
    "sparse_prompt_distribution": "evalstats.sparse",
    "sparse_prompt_scores": "evalstats.sparse",
    "sparse_unit_table": "evalstats.sparse",
    "spearman_matrix": "evalstats.correlation",
    "stability_table": "evalstats.stability",
    "subset_rankings": "evalstats.compare",
    "tar_curve": "evalstats.stability",
    "to_units": "evalstats.aggregate",
    "UnitIngest": "evalstats.aggregate",
    "unstable_items": "evalstats.stability",
    "validate_observations": "evalstats.schema",
    "validate_units": "evalstats.schema",
    "variance_components": "evalstats.noise",
    "with_metric": "evalstats.schema",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        if not name.startswith("_") and importlib.util.find_spec(f"evalstats.{name}") is not None:
            return importlib.import_module(f"evalstats.{name}")  # `evalstats.schema` etc.
        raise AttributeError(f"module 'evalstats' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__version__ = "0.1.0"

__all__ = [
    "AnovaResult",
    "align_item_sets",
    "apply_design",
    "attribute",
    "audit_report",
    "AttributionResult",
    "AuditReport",
    "ClusterError",
    "MetricInfo",
    "compare_models",
    "compare_runs",
    "convergence",
    "correlation_matrix",
    "DegenerateDataWarning",
    "Design",
    "DesignWarning",
    "EvalstatsError",
    "EvalstatsWarning",
    "factor_anova",
    "format_stability_table",
    "friedman_nemenyi",
    "from_inspect",
    "infer_design",
    "Ingest",
    "IngestError",
    "IngestReport",
    "InsufficientDataError",
    "interaction_means",
    "intervals",
    "letter_groups",
    "LimitError",
    "ppi_difference",
    "ppi_mean",
    "MetricScaleError",
    "MissingDependencyError",
    "OutputError",
    "ParameterError",
    "prompt_spread",
    "provider_audit",
    "rank_intervals",
    "read",
    "read_dove",
    "read_inspect",
    "read_llm_stability",
    "read_lm_eval",
    "read_openai_evals",
    "read_reliable_eval",
    "read_state_of_what_art",
    "read_table",
    "read_units",
    "reference_model_check",
    "required_sample_size",
    "reversal_audit",
    "run_distribution",
    "run_normality",
    "sample_size_curve",
    "sample_size_uncertainty",
    "SchemaError",
    "sparse_plan",
    "sparse_prompt_distribution",
    "sparse_prompt_scores",
    "sparse_unit_table",
    "spearman_matrix",
    "stability_table",
    "subset_rankings",
    "tar_curve",
    "metric_info",
    "to_units",
    "UnitIngest",
    "unstable_items",
    "validate_observations",
    "validate_units",
    "variance_components",
    "with_metric",
    "__version__",
]
