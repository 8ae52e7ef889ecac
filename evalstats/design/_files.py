"""Design files: the design written as TOML to edit, and read back as roles."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from evalstats.design._roles import ATTRIBUTE_ROLES, DESIGN_VERSION, USER_ROLES, user_role
from evalstats.errors import ParameterError

__all__ = ["design_roles", "design_toml", "read_design_file"]

_HEADER = """\
# evalstats design: the role of every column of the dump, as evalstats read it.
# Edit a role in [roles] and pass this file back with --design (API: design=...).
# Roles: model dataset metric item cluster variant prompt setting run score answer response
#        gold input_text latency_s error text metadata (see docs/design.md).
# Everything below [roles] is there to read (evidence, counts); it is ignored on reading.
"""


def design_toml(design: Any) -> str:
    """``design`` as the TOML text of a design file (version, roles, then what to read)."""
    import tomli_w

    roles = _file_roles(design)
    doc = {
        "version": DESIGN_VERSION,
        "roles": roles,
        "evidence": {
            c.column: f"{c.role} ({c.source}): {c.evidence}"
            + (f" [read as {c.table_name}]" if c.table_name else "")
            + ("" if c.in_table else " [left out]")
            for c in design.columns
        },
        "supports": {
            s.analysis: ("yes: " if s.supported else "no: ") + s.reason for s in design.supports
        },
        "groups": [
            {k: v for k, v in row.items() if v is not None}
            for row in design.groups.to_dicts()
            if True
        ],
    }
    if design.notes:
        doc["notes"] = list(design.notes)
    return _HEADER + tomli_w.dumps(_plain(doc))


def _file_roles(design: Any) -> dict[str, str]:
    # the roles of source columns, by their source names (what a loader reads back); columns the
    # loader filled in (a dataset from a file name, a derived variant) are not the source's
    return {
        c.column: _user_role(c)
        for c in design.columns
        if c.source != "canonical" and c.role != "metric_info"
    }


def design_roles(design: Any) -> dict[str, str]:
    """The roles a design file of ``design`` gives, as :func:`read_design_file` returns them.

    What reads the same source again into the same table.
    """
    out = {}
    for column, role in _file_roles(design).items():
        if role in ("output", "metric_info"):
            continue
        out[column] = user_role("metadata" if role in ATTRIBUTE_ROLES else role, column)
    return out


def _user_role(c: Any) -> str:
    if c.role == "output":
        # an output read under its canonical name (answer, gold, ...); one no role names
        # (input_len, output_len) is written as 'output', which reading skips
        name = c.table_name or c.column
        return name if name in USER_ROLES else "output"
    if c.role in ATTRIBUTE_ROLES:
        return "metadata"
    return c.role


def _plain(value: object) -> object:
    """TOML has no null and no NaN: drop them (a missing key reads as not known)."""
    import math

    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_plain(v) for v in value if v is not None]
    if isinstance(value, float) and not math.isfinite(value):
        return "nan"
    return value


#: Largest design file read (16 MiB): a role per column of a table of at most
#: ``EVALSTATS_MAX_COLUMNS`` columns is far less.
_MAX_DESIGN_BYTES = 16 * 2**20


def read_design_file(path: str | Path) -> dict[str, str]:
    """The roles of a design file (``[roles]``), checked; the rest of the file is ignored.

    Raises
    ------
    ParameterError
        The file cannot be read, is not TOML, has no ``[roles]`` table, is of a newer
        version, or gives a role that is not a role (named with the file and the column).
    """
    from evalstats.io._files import special_kind

    p = Path(path)
    kind = special_kind(p)
    if kind is not None:  # /dev/zero never ends; a FIFO waits for a writer
        raise ParameterError(
            f"{p}: the design file is {kind}, not a regular file; give the path of a file "
            "written by `evalstats design PATH --out design.toml`."
        )
    try:
        size = p.stat().st_size
    except OSError:
        size = 0
    if size > _MAX_DESIGN_BYTES:
        raise ParameterError(
            f"{p}: the design file is {size:,} bytes, more than the {_MAX_DESIGN_BYTES:,} a "
            "design file may have (it lists one role per column)."
        )
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ParameterError(f"{p}: the design file cannot be read ({exc}).") from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ParameterError(f"{p}: the design file is not valid TOML ({exc}).") from None
    version = doc.get("version", DESIGN_VERSION)
    if not isinstance(version, int) or version > DESIGN_VERSION:
        raise ParameterError(
            f"{p}: design file version {version!r}; this evalstats reads version "
            f"{DESIGN_VERSION} and older."
        )
    roles = doc.get("roles")
    if not isinstance(roles, dict) or not roles:
        raise ParameterError(
            f"{p}: the design file has no [roles] table (write one with "
            "`evalstats design PATH --out design.toml`)."
        )
    out: dict[str, str] = {}
    for column, role in roles.items():
        if not isinstance(role, str):
            raise ParameterError(
                f"{p}, [roles], column {column!r}: expected a role name, got {role!r}."
            )
        if role in ("output", "metric_info"):
            continue  # canonical columns, written for the reader
        if role in ATTRIBUTE_ROLES:
            role = "metadata"
        out[column] = user_role(role, f"{p}, [roles], column {column!r}: the role")
    return out
