"""evalstats: decide whether an LLM evaluation claim holds, from recorded prediction dumps.

The public API: loaders return the observation table and an ingest report; ``to_units``
aggregates it; analyses take either table and return tidy polars frames or small result objects.
``import evalstats`` does not import matplotlib or seaborn (see :mod:`evalstats.plots`).
"""

from __future__ import annotations

from evalstats.aggregate import to_units
from evalstats.errors import (
    DegenerateDataWarning,
    EvalstatsError,
    EvalstatsWarning,
    IngestError,
    InsufficientDataError,
    MissingDependencyError,
    ParameterError,
    SchemaError,
)
from evalstats.io import Ingest, IngestReport, read, read_table
from evalstats.schema import validate_observations, validate_units

__version__ = "0.1.0"

__all__ = [
    "DegenerateDataWarning",
    "EvalstatsError",
    "EvalstatsWarning",
    "Ingest",
    "IngestError",
    "IngestReport",
    "InsufficientDataError",
    "MissingDependencyError",
    "ParameterError",
    "SchemaError",
    "__version__",
    "read",
    "read_table",
    "to_units",
    "validate_observations",
    "validate_units",
]
