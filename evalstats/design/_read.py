"""Reading a table in memory as a table file is read: the canonical test and the roles' split.

:mod:`evalstats.design._frames` (what every analysis reads) and
:func:`evalstats.design.design_and_table` both use these; they sit apart so that neither
imports the other.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import polars as pl

if TYPE_CHECKING:
    from evalstats._frames import TableLike
    from evalstats.io import Ingest

__all__ = ["is_canonical", "loader_columns", "read_frame", "table_roles"]

#: Roles the table loader cannot apply while reading; the design applies them.
_DESIGN_ROLES = ("prompt", "setting", "fixed")


def loader_columns(roles: Mapping[str, str]) -> dict[str, str]:
    """The part of ``roles`` a table loader applies while reading (its ``columns`` mapping)."""
    out = {}
    for col, role in roles.items():
        if role in ("prompt", "setting"):
            out[col] = role
        elif role == "fixed":
            out[col] = "factor"  # kept in the table; the design gives it its role
        elif role in ("text", "metadata"):
            out[col] = "ignore"
        else:
            out[col] = role
    return out


def is_canonical(frame: pl.DataFrame | pl.LazyFrame) -> bool:
    """Whether ``frame`` is in the canonical layout, to be read as it is.

    It has ``model``, ``dataset`` and a numeric ``score``, and no column the table loader would
    read as the item (``doc_id``, ``sample_id``, ...) without an ``item`` column beside it.

    Examples
    --------
    >>> is_canonical(pl.DataFrame({"model": ["m"], "dataset": ["d"], "score": [1.0]}))
    True
    >>> is_canonical(pl.DataFrame({"model": ["m"], "dataset": ["d"], "doc_id": [1],
    ...                            "score": [1.0]}))
    False
    """
    from evalstats.io._columns import ALIASES

    schema = frame.collect_schema()
    names = set(schema.names())
    if not {"model", "dataset", "score"} <= names:
        return False
    if not (schema["score"].is_numeric() or schema["score"] == pl.Boolean):
        return False  # scores as text ("0.5", "n/a"): the loader parses them, naming bad rows
    return "item" in names or not (names & set(ALIASES["item"]))


def table_roles(
    roles: Mapping[str, str], columns: str | Mapping[str, str] | None = None
) -> tuple[dict[str, str], dict[str, str]]:
    """Split ``roles`` into what the table loader applies and what the design applies.

    Returns ``(columns, design_roles)``: the loader's ``columns`` mapping (the roles, then the
    explicit ``columns`` over them) and the prompt and setting roles for
    :func:`~evalstats.design.design_and_table`. The command line reads a table file this way.
    """
    from evalstats.io._columns import parse_mapping

    mapping = {**loader_columns(roles), **parse_mapping(columns)}
    return mapping, {c: r for c, r in roles.items() if r in _DESIGN_ROLES}


def read_frame(
    frame: TableLike, *, roles: Mapping[str, str] | None = None, **options: Any
) -> tuple[Ingest, dict[str, str]]:
    """Read a table in memory as a table file is read with ``--roles``.

    Returns the ingest (:func:`evalstats.io.read_table` with the roles the loader applies)
    and the roles left for the design (prompt and setting).
    """
    from evalstats.io import read

    columns, design_roles = table_roles(dict(roles or {}), options.pop("columns", None))
    return read(frame, format="table", columns=columns or None, **options), design_roles
