"""Design files: the design written as TOML to edit, and read back as roles."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalstats.design._roles import ATTRIBUTE_ROLES, DESIGN_VERSION, USER_ROLES, user_role
from evalstats.errors import ParameterError

__all__ = [
    "design_roles",
    "design_toml",
    "read_design_file",
    "read_design_structure",
    "structure_differences",
    "structure_note",
    "structure_of",
]

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
        # what the design was read from, compared when the file is applied to a dump
        "structure": structure_of(design),
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


#: The counts of a design's structure, in the order they are written and compared.
STRUCTURE_KEYS = (
    "models",
    "datasets",
    "metrics",
    "groups",
    "items_min",
    "items_max",
    "clusters_max",
    "variants_min",
    "variants_max",
    "runs_max",
)


def structure_of(design: Any) -> dict[str, int]:
    """The structural fingerprint of ``design``: counts of models, items, variants per role.

    Written into a design file (``[structure]``) and compared when the file is applied to a
    dump (:func:`structure_differences`): the same columns in a dump of another shape (other
    models, fewer items, prompt variants where there were none) apply the same roles to other
    rows, and the user is told.

    Examples
    --------
    >>> from evalstats.design import infer_design
    >>> from evalstats.simulate import observations
    >>> structure_of(infer_design(observations(n_models=2, n_items=5, n_variants=3, seed=0)))
    {'models': 2, 'datasets': 1, 'metrics': 1, 'groups': 2, 'items_min': 5, 'items_max': 5, 'variants_min': 3, 'variants_max': 3, 'runs_max': 1}
    """
    g = design.groups
    out: dict[str, int] = {}
    for key, col in (("models", "model"), ("datasets", "dataset"), ("metrics", "metric")):
        if col in g.columns:
            out[key] = int(g[col].n_unique())
    out["groups"] = int(g.height)
    for key, col, how in (
        ("items_min", "n_items", "min"),
        ("items_max", "n_items", "max"),
        ("clusters_max", "n_clusters", "max"),
        ("variants_min", "n_variants", "min"),
        ("variants_max", "n_variants", "max"),
        ("runs_max", "runs_max", "max"),
    ):
        if col in g.columns and g.height and g[col].null_count() < g.height:
            out[key] = int(getattr(g[col], how)())
    return out


def read_design_structure(path: str | Path) -> dict[str, int] | None:
    """The ``[structure]`` of a design file (None when it has none, as files of before)."""
    try:
        doc = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None  # read_design_file has said why
    found = doc.get("structure")
    if not isinstance(found, dict):
        return None
    return {
        k: v
        for k, v in found.items()
        if k in STRUCTURE_KEYS and isinstance(v, int) and not isinstance(v, bool)
    }


def structure_differences(written: Mapping[str, int], now: Mapping[str, int]) -> list[str]:
    """``'models 3 (the file: 2)'`` for each count that differs between two structures.

    >>> structure_differences({"models": 2, "items_max": 10}, {"models": 3, "items_max": 10})
    ['models 3 (the file: 2)']
    """
    out = []
    for key in STRUCTURE_KEYS:
        if key in written or key in now:
            a, b = written.get(key), now.get(key)
            if a != b:
                out.append(
                    f"{key.replace('_', ' ')} {'none' if b is None else b} (the file: "
                    f"{'none' if a is None else a})"
                )
    return out


def structure_note(path: str | Path, design: Any) -> str | None:
    """A note when the design file ``path`` was written from a dump of another structure.

    None when the structures agree, or the file records none (written before version 0.x of
    the fingerprint, or by hand).
    """
    written = read_design_structure(path)
    if not written:
        return None
    diffs = structure_differences(written, structure_of(design))
    if not diffs:
        return None
    return (
        f"the design file {Path(path).name} was written from a dump of another structure: "
        f"{'; '.join(diffs)}. Its roles are applied to this dump as written; check them "
        "(evalstats design PATH --design FILE) or write the file again from this dump."
    )


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
