"""The Design object: the role of every column, the structure of each group, what it supports."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from evalstats.design._roles import (
    DESIGN_VERSION,
    LEFT_OUT_ROLES,
    ROLE_MEANING,
    ROLE_ORDER,
    USER_ROLES,
)

__all__ = [
    "DESIGN_VERSION",
    "MIN_ITEMS",
    "MIN_RANGE_ITEMS",
    "MIN_NSTAR_VARIANTS",
    "MIN_NORMALITY_RUNS",
    "MIN_RANK_DATASETS",
    "ROLE_MEANING",
    "ROLE_ORDER",
    "USER_ROLES",
    "ColumnRole",
    "Design",
    "Support",
]

#: Fewest prompt variants of a group for an n* headline: with fewer, Delta(n) is read off a
#: handful of subset sizes and the smallest n with a small deviation is nearly always N itself.
MIN_NSTAR_VARIANTS = 5

#: Fewest repeated runs for a normality test of run accuracies (KS or Shapiro on 2 or 3 values
#: cannot reject anything: no headline is drawn from it).
MIN_NORMALITY_RUNS = 4

#: Fewest items of a group for an interval or a paired test to be a headline (an interval over
#: one item is its score).
MIN_ITEMS = 2

#: Fewest items behind each score of a headline range: a prompt's score in a spread over
#: prompts, the items every run scored in a run-to-run change. A 0/1 score over one item moves
#: by 100 points between prompts whatever the prompts do; over 10 items a single flip is 10.
MIN_RANGE_ITEMS = 10

#: Fewest datasets for a Friedman ranking across datasets.
MIN_RANK_DATASETS = 3


@dataclass(frozen=True, slots=True)
class ColumnRole:
    """The role of one column, and why.

    Attributes
    ----------
    column : str
        The column's name in the source (or in the observation table).
    role : str
        One of ``model, dataset, metric, item, cluster, variant, prompt, setting, run, score,
        output, metric_info, item_attribute, model_attribute, outcome, measurement, text,
        metadata``.
    evidence : str
        Why (``"free text: 2,878 distinct values in 2,880 rows"``).
    source : str
        Who decided: ``explicit`` (the user's ``--roles`` or design file), ``loader`` (what the
        format knows: a task config, a file's identity), ``name`` or ``values`` (the rules of
        :mod:`evalstats._column_rules`), ``canonical`` (a column of the observation table).
    n_values : int or None
        Distinct values, when counted.
    in_table : bool
        Whether the column is in the observation table the analyses read (text and metadata
        are not).
    table_name : str or None
        Its name in the observation table when that differs (``question_id`` is read as
        ``item``).
    """

    column: str
    role: str
    evidence: str
    source: str
    n_values: int | None = None
    in_table: bool = True
    table_name: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary."""
        return {
            "column": self.column,
            "role": self.role,
            "evidence": self.evidence,
            "source": self.source,
            "n_values": self.n_values,
            "in_table": self.in_table,
            "table_name": self.table_name,
        }


@dataclass(frozen=True, slots=True)
class Support:
    """Whether the design supports an analysis, and why (not).

    Attributes
    ----------
    analysis : str
        The report's key of the analysis (``moments``, ``nstar``, ``stability``, ...).
    supported : bool
        Whether any group supports it.
    reason : str
        What supports it (counts), or why not.
    groups : int
        Groups that support it.
    """

    analysis: str
    supported: bool
    reason: str
    groups: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary."""
        return {
            "analysis": self.analysis,
            "supported": self.supported,
            "reason": self.reason,
            "groups": self.groups,
        }


@dataclass(frozen=True, slots=True)
class Design:
    """The design of a dump: what every column is, the structure of each group, what it supports.

    Built by :func:`evalstats.design.infer_design` from the observation table and what the
    loader knew; shown by ``evalstats design``; corrected with ``--roles`` or an edited design
    file (``--design design.toml``); applied to the table by
    :func:`evalstats.design.apply_design`. Every analysis of the report takes its prompt
    factors, settings, runs and clusters from it.

    Attributes
    ----------
    columns : tuple of ColumnRole
        Every column of the source, canonical ones included, with its role and evidence.
    groups : polars.DataFrame
        One row per model x dataset x metric x held settings: ``n_items``, ``n_clusters``,
        ``n_variants``, ``runs_min``, ``runs_max`` (runs per variant), ``variants_per_item_min``,
        ``variants_per_item_max``, ``cells_observed`` (share of the item x variant grid
        observed), ``structure`` (``single``, ``crossed``, ``nested`` or ``sparse``),
        ``balanced`` and ``runs_cover_same_items``.
    supports : tuple of Support
        Each analysis of the report: supported or not, and why.
    roles : Mapping[str, str]
        The explicit roles the user gave (``--roles``, a design file), applied first.
    notes : tuple of str
        Decisions worth knowing (a copied file set aside, runs over different items).
    """

    columns: tuple[ColumnRole, ...]
    groups: pl.DataFrame = field(repr=False)
    supports: tuple[Support, ...] = ()
    roles: Mapping[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    # --- views ---------------------------------------------------------------------------

    def role(self, column: str) -> str | None:
        """The role of ``column`` (None when the design does not know the column)."""
        for c in self.columns:
            if c.column == column:
                return c.role
        return None

    def _with(self, role: str) -> tuple[str, ...]:
        return tuple(c.column for c in self.columns if c.role == role and c.in_table)

    @property
    def prompt_factors(self) -> tuple[str, ...]:
        """Factor columns that define the prompt variants."""
        return self._with("prompt")

    @property
    def varying_prompt_factors(self) -> tuple[str, ...]:
        """Prompt factors that take two or more values in the table."""
        return tuple(
            c.column
            for c in self.columns
            if c.role == "prompt" and c.in_table and (c.n_values is None or c.n_values > 1)
        )

    @property
    def settings(self) -> tuple[str, ...]:
        """Factor columns held fixed and analysed per value (decoding and serving settings)."""
        return self._with("setting")

    @property
    def held(self) -> tuple[str, ...]:
        """Settings that take two or more values: held fixed, one group per combination."""
        return tuple(s for s in self.settings if s in self.groups.columns)

    @property
    def cluster(self) -> str | None:
        """The column of item clusters in the observation table (``cluster``), or None."""
        return "cluster" if any(c.role == "cluster" and c.in_table for c in self.columns) else None

    @property
    def left_out(self) -> tuple[str, ...]:
        """Columns no analysis reads (text, metadata, attributes, outcomes, measurements)."""
        return tuple(c.column for c in self.columns if c.role in LEFT_OUT_ROLES)

    def structure(self) -> dict[str, int]:
        """Counts of models, datasets, metrics, items, variants and runs.

        The fingerprint a design file records (:func:`evalstats.design._files.structure_of`).
        """
        from evalstats.design._files import structure_of

        return structure_of(self)

    def supports_analysis(self, key: str) -> Support | None:
        """The :class:`Support` of the report analysis ``key`` (None when not judged)."""
        return next((s for s in self.supports if s.analysis == key), None)

    # --- output ------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary (``evalstats design --json``)."""
        return {
            "version": DESIGN_VERSION,
            "roles": {c.column: c.role for c in self.columns},
            "columns": [c.to_dict() for c in self.columns],
            "prompt_factors": list(self.prompt_factors),
            "settings": list(self.settings),
            "cluster": self.cluster,
            "structure": self.structure(),
            "groups": _jsonable_rows(self.groups),
            "supports": [s.to_dict() for s in self.supports],
            "explicit_roles": dict(self.roles),
            "notes": list(self.notes),
        }

    def to_json(self) -> str:
        """The design as a JSON string."""
        return json.dumps(self.to_dict(), indent=2)

    def to_toml(self) -> str:
        """The design as a TOML file to edit and pass back with ``--design``.

        ``[roles]`` is what is read back: one ``column = "role"`` line per column. The rest
        (evidence, groups, what is supported) is there to read and is ignored on reading.
        """
        from evalstats.design._files import design_toml

        return design_toml(self)

    def summary(self, width: int = 100) -> str:
        """A readable multi-line account (``evalstats design`` on a terminal)."""
        from evalstats.design._show import summary

        return summary(self, width=width)

    def __str__(self) -> str:
        return self.summary()


def _jsonable_rows(frame: pl.DataFrame) -> list[dict[str, Any]]:
    import math

    out = []
    for row in frame.to_dicts():
        out.append(
            {
                k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                for k, v in row.items()
            }
        )
    return out
