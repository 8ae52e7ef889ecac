"""Tables in memory as the analyses read them: the same column rules and design as a file.

Every public analysis takes a polars, pandas or pyarrow table (:mod:`evalstats._frames`) and,
like the command line for a file, the keywords ``roles=`` and ``design=``.
:func:`analysis_input` is the one place that decides what the analysis then reads:

- a table already in the canonical layout (columns ``model``, ``dataset`` and a numeric
  ``score``, and ``item`` when it has an item column at all), with no ``roles`` or
  ``design``, is read as it is, as before (the observation or unit table of
  :mod:`evalstats.schema`);
- any other table (columns named ``model_name``, ``doc_id``, ``correct``, ... or a missing
  dataset), and any table given ``roles`` or ``design``, is read as a table file is read by
  ``evalstats <command> file.csv --roles ...``: :func:`evalstats.io.read_table` with the
  roles it applies while reading (aliases, text left out, the variant built from the prompt
  factors), then :func:`evalstats.design.design_and_table` with the prompt and setting roles;
- ``design=`` a :class:`~evalstats.design.Design` applies that design
  (:func:`evalstats.design.apply_design`) to the table read with its roles; a design file
  (``design.toml``) gives its ``[roles]``, as ``--design`` does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import polars as pl

from evalstats._frames import TableLike, to_polars
from evalstats.design._read import is_canonical, read_frame
from evalstats.errors import ParameterError

if TYPE_CHECKING:
    from evalstats.design._model import Design

__all__ = ["AnalysisInput", "analysis_input"]


class AnalysisInput(NamedTuple):
    """The table an analysis reads, and the design applied to it (None: read as it is)."""

    table: pl.DataFrame | pl.LazyFrame
    design: Design | None

    def held_by(
        self, by: Sequence[str], given: Any, *, also: Sequence[str] = ()
    ) -> tuple[str, ...]:
        """``by`` and the settings held fixed that vary: groups never pool two settings.

        A provider, a quantization, a server build, a temperature or a ``--limit`` document
        set is analysed per value (issue 41): the design's held settings when it was applied,
        else the settings :func:`evalstats.factors.held_factors` finds (by name, or every
        factor outside ``given`` when variant factors are named). ``also`` names columns that
        are neither held nor grouped (the compared column of a paired comparison).
        """
        from evalstats.factors import held_factors

        if given == "all":
            return tuple(by)
        skip = (*by, *also)
        if self.design is not None and given is None:
            held = [s for s in self.design.held if s not in skip]
        else:
            vf = given
            if vf is None and self.design is not None:
                vf = self.variant_factors(None)
            held = list(held_factors(self.table, variant_factors=vf, by=skip))
        names = self.table.collect_schema().names()
        held = [h for h in held if h in names]
        if held:
            # a setting splits a group only where it varies within one: a column with one
            # value per model and dataset (a run's configuration) is not held
            keys = list(dict.fromkeys(k for k in ("model", *by, *also) if k in names))
            lf = self.table.lazy()
            per = lf.group_by(keys).agg(pl.col(h).n_unique() for h in held) if keys else lf
            top = per.select(pl.col(h).max() if keys else pl.col(h).n_unique() for h in held)
            held = [h for h, k in zip(held, top.collect().row(0)) if k > 1]
        return (*by, *held)

    def variant_factors(self, given: Any) -> Any:
        """``given``, or the design's prompt factors when it holds settings fixed.

        The command line passes the design's prompt factors to the prompt analyses (moments,
        n*) in the same case (``evalstats.cli._common.params_from``).
        """
        if given is not None or self.design is None:
            return given
        d = self.design
        return list(d.prompt_factors) if (d.held or d.roles) else None


def _roles_of(roles: Any, design: Any) -> tuple[dict[str, str], Design | None]:
    """The roles to read the table with, and the Design to apply (None: infer one)."""
    from evalstats.design._files import design_roles, read_design_file
    from evalstats.design._infer import parse_roles
    from evalstats.design._model import Design

    if design is not None and roles:
        raise ParameterError("give `roles` or `design`, not both: a design holds its roles.")
    if design is None:
        return parse_roles(roles), None
    if isinstance(design, Design):
        return design_roles(design), design
    if isinstance(design, (str, Path)):
        return read_design_file(design), None
    raise ParameterError(
        f"`design` must be a Design (evalstats.infer_design) or the path of a design file "
        f"(evalstats design PATH --out design.toml), got {type(design).__name__}."
    )


def _warn_structure(path: str | Path, design: Design) -> None:
    """Warn when the design file ``path`` was written from a dump of another structure."""
    import warnings

    from evalstats.design._files import structure_note
    from evalstats.errors import DesignWarning

    note = structure_note(path, design)
    if note is not None:
        warnings.warn(note, DesignWarning, stacklevel=4)


def analysis_input(
    frame: TableLike,
    *,
    roles: str | Mapping[str, str] | None = None,
    design: Design | str | Path | None = None,
) -> AnalysisInput:
    """The table an analysis reads from ``frame``, with the design applied (module docstring).

    Parameters
    ----------
    frame : polars, pandas or pyarrow table
        The observation or unit table, in any layout.
    roles : str or mapping, optional
        Explicit column roles, as ``--roles``: ``{"passage": "cluster", "acc": "score"}`` or
        ``"passage=cluster,acc=score"``.
    design : Design or path, optional
        A design to apply (:func:`evalstats.infer_design`), or a design file whose ``[roles]``
        are used (as ``--design``).

    Returns
    -------
    AnalysisInput
        ``(table, design)``; the design is None for a canonical table read as it is.

    Raises
    ------
    ParameterError
        Both ``roles`` and ``design``, or ``design`` of the wrong type.
    SchemaError
        ``frame`` is not a table, or a role names a column it does not have.
    IngestError
        A row is invalid (named with the table, row and column, as for a file).

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"model_name": ["a", "a", "b", "b"], "doc_id": [1, 2, 1, 2],
    ...                    "correct": [1, 0, 1, 1]})
    >>> table, design = analysis_input(df)
    >>> table.select("model", "dataset", "item", "score").collect().rows()
    [('a', 'data', '1', 1.0), ('a', 'data', '2', 0.0), ('b', 'data', '1', 1.0), ('b', 'data', '2', 1.0)]
    >>> design.role("model_name"), design.role("doc_id")
    ('model', 'item')
    """
    from evalstats.design._infer import apply_design, design_and_table

    given, chosen = _roles_of(roles, design)
    table = to_polars(frame, what="the observation or unit table")
    canonical = is_canonical(table)
    if chosen is None:
        if not given and canonical:
            return AnalysisInput(table, None)
        # the frame as given, so that messages name it ("pandas DataFrame, row 3")
        built, applied = design_and_table(table if canonical else frame, roles=given)
        if isinstance(design, (str, Path)):
            _warn_structure(design, built)
        return AnalysisInput(applied, built)
    if not canonical:
        table = read_frame(frame, roles=given)[0].observations
    return AnalysisInput(apply_design(table, chosen), chosen)
