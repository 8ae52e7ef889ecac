"""evalstats: decide whether an LLM evaluation claim holds, from recorded prediction dumps.

The public API: loaders return the observation table and an ingest report; ``to_units``
aggregates it; analyses take either table and return tidy polars frames or small result objects.
``import evalstats`` does not import matplotlib or seaborn (see :mod:`evalstats.plots`).
"""

from __future__ import annotations

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
    convergence,
    friedman_nemenyi,
    intervals,
    ppi_difference,
    ppi_mean,
    provider_audit,
    rank_intervals,
    reversal_audit,
    subset_rankings,
)
from evalstats.correlation import correlation_matrix, spearman_matrix
from evalstats.errors import (
    ClusterError,
    DegenerateDataWarning,
    DesignWarning,
    EvalstatsError,
    EvalstatsWarning,
    IngestError,
    InsufficientDataError,
    MetricScaleError,
    MissingDependencyError,
    OutputError,
    ParameterError,
    SchemaError,
)
from evalstats.io import Ingest, IngestReport, read, read_table
from evalstats.io.dove import read_dove
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
from evalstats.stability import (
    format_stability_table,
    stability_table,
    tar_curve,
    unstable_items,
)

__version__ = "0.1.0"

__all__ = [
    "AnovaResult",
    "align_item_sets",
    "attribute",
    "audit_report",
    "AttributionResult",
    "AuditReport",
    "ClusterError",
    "MetricInfo",
    "compare_models",
    "convergence",
    "correlation_matrix",
    "DegenerateDataWarning",
    "DesignWarning",
    "EvalstatsError",
    "EvalstatsWarning",
    "factor_anova",
    "format_stability_table",
    "friedman_nemenyi",
    "Ingest",
    "IngestError",
    "IngestReport",
    "InsufficientDataError",
    "MetricScaleError",
    "interaction_means",
    "intervals",
    "ppi_difference",
    "ppi_mean",
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
