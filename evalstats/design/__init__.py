"""The design of a dump: the role of every column, the structure of each group, what it supports.

Which column is the model, the item, a cluster of items, a prompt factor, a setting, an
identical run, or text that rides along.

Between ingest and the analyses (DESIGN.md's flow): :func:`infer_design` reads the observation
table and what the loader knew, :func:`apply_design` gives the analyses the table as the design
says (text left out, clusters named, variants built from prompt factors and settings alone).
Users see it (``evalstats design PATH``), correct it once (``--roles`` or an edited
``--design design.toml``), and the report opens with it. Tables in memory (polars, pandas,
pyarrow) get the same rules: :func:`analysis_input`, which every analysis calls. ``docs/design.md`` states every rule
with a real example.
"""

from __future__ import annotations

from evalstats.design._files import read_design_file
from evalstats.design._frames import AnalysisInput, analysis_input
from evalstats.design._infer import (
    apply_design,
    design_and_table,
    infer_design,
    parse_roles,
)
from evalstats.design._model import (
    MIN_ITEMS,
    MIN_NORMALITY_RUNS,
    MIN_NSTAR_VARIANTS,
    MIN_RANK_DATASETS,
    ColumnRole,
    Design,
    Support,
)
from evalstats.design._read import is_canonical, loader_columns, read_frame
from evalstats.design._roles import ROLE_MEANING, USER_ROLES
from evalstats.design._show import headline

__all__ = [
    "MIN_ITEMS",
    "MIN_NORMALITY_RUNS",
    "MIN_NSTAR_VARIANTS",
    "MIN_RANK_DATASETS",
    "ROLE_MEANING",
    "USER_ROLES",
    "AnalysisInput",
    "ColumnRole",
    "Design",
    "Support",
    "analysis_input",
    "apply_design",
    "design_and_table",
    "headline",
    "infer_design",
    "is_canonical",
    "loader_columns",
    "parse_roles",
    "read_design_file",
    "read_frame",
]
