"""Exception and warning classes.

Every error evalstats raises on purpose derives from :class:`EvalstatsError` and from the
built-in that callers would naturally catch (``ValueError``, ``ImportError``). The command line
catches :class:`EvalstatsError`, prints one line and exits with status 2.
"""

from __future__ import annotations

__all__ = [
    "ClusterError",
    "DegenerateDataWarning",
    "DesignWarning",
    "EvalstatsError",
    "EvalstatsWarning",
    "IngestError",
    "InsufficientDataError",
    "LimitError",
    "MetricScaleError",
    "MissingDependencyError",
    "OutputError",
    "ParameterError",
    "SchemaError",
]


class EvalstatsError(Exception):
    """Base class of all errors raised on purpose by evalstats."""


class SchemaError(EvalstatsError, ValueError):
    """A table lacks a required column, or a column has the wrong type."""


class ParameterError(EvalstatsError, ValueError):
    """An argument is out of its domain (a level of 95, a negative epsilon, an unknown method)."""


class MetricScaleError(ParameterError):
    """A method does not apply to the metric(s) of the table.

    Wilson intervals, exact McNemar tests and ReliableEval's default epsilon of 0.01 are made
    for accuracies; on a BLEU score, a count or an error they do not apply. Analyses that pool
    every row (ANOVA, attribution) do not apply to a table mixing metrics. The message names
    the metric and says what to use instead; the audit report lists the analysis as skipped.
    """


class InsufficientDataError(EvalstatsError, ValueError):
    """The data are too few for the requested analysis (one variant, one run, no shared items)."""


class LimitError(EvalstatsError, ValueError):
    """An input beyond a documented limit: too many model pairs to compare at once, and the like.

    The message names the limit and what to do instead (compare fewer models at a time).
    """


class MissingDependencyError(EvalstatsError, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""


class ClusterError(EvalstatsError, ConnectionError):
    """A compute cluster (a Dask scheduler) cannot be reached or used."""


class OutputError(EvalstatsError, OSError):
    """An output (a report folder, a table file) cannot be written where it was asked."""


class IngestError(EvalstatsError, ValueError):
    """A source file cannot be read into the observation table.

    Parameters
    ----------
    message : str
        What is wrong, what was expected and what was found.
    path : str, optional
        The file, when known.
    row : int, optional
        The 1-based data row (header not counted), when known.
    column : str, optional
        The source column, when known.

    Notes
    -----
    ``str(err)`` starts with the location, as in
    ``"dump.csv, row 12, column 'score': expected a number in [0, 1], got '87.5'."``.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        row: int | None = None,
        column: str | None = None,
    ) -> None:
        self.path = path
        self.row = row
        self.column = column
        self.reason = message
        where = []
        if path is not None:
            where.append(str(path))
        if row is not None:
            where.append(f"row {row}")
        if column is not None:
            where.append(f"column {column!r}")
        super().__init__(f"{', '.join(where)}: {message}" if where else message)


class EvalstatsWarning(UserWarning):
    """Base class of evalstats warnings."""


class DegenerateDataWarning(EvalstatsWarning):
    """Data are degenerate for the statistic (constant scores, a single variant); NaN returned."""


class DesignWarning(EvalstatsWarning):
    """The design is not what the method assumes; the result counts or names what happened.

    Unpaired units, missing runs, a sample below a method's documented minimum size.
    """
