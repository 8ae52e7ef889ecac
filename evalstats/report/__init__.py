"""The audit report: every analysis the data supports, with figures, tables and readings.

:func:`audit_report` decides from the columns present which analyses apply, runs them through
the public analysis functions and returns an :class:`AuditReport`; :meth:`AuditReport.write`
draws the figures (:mod:`evalstats.plots`) and writes ``report.html`` (self-contained),
``report.md``, ``results.json`` (schema: ``docs/report.schema.json``), ``figures/`` and
``tables/``. Computing the report does not import matplotlib; writing it does.
"""

from __future__ import annotations

from evalstats.report._core import (
    ANALYSES,
    SCHEMA_VERSION,
    SECTIONS,
    AnalysisResult,
    AuditReport,
    DataSummary,
    Skipped,
    audit_report,
)
from evalstats.report._write import FIGURE_FORMATS

__all__ = [
    "ANALYSES",
    "FIGURE_FORMATS",
    "SCHEMA_VERSION",
    "SECTIONS",
    "AnalysisResult",
    "AuditReport",
    "DataSummary",
    "Skipped",
    "audit_report",
]
