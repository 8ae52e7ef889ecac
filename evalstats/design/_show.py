"""The design as text: what ``evalstats design`` prints on a terminal and the report opens with."""

from __future__ import annotations

import textwrap
from typing import Any

import polars as pl

from evalstats._text import plural

__all__ = ["headline", "summary"]

_SHOWN_GROUPS = 12


def _wrap(text: str, width: int, indent: int) -> list[str]:
    return textwrap.wrap(
        text,
        width=max(width, indent + 20),
        initial_indent=" " * indent,
        subsequent_indent=" " * indent,
    ) or [" " * indent]


def headline(design: Any) -> str:
    """One sentence: the design's facets and structure (the report's first line on the design)."""
    g = design.groups
    if not g.height:
        return "no rows"
    parts = [
        plural(g["model"].n_unique(), "model"),
        plural(g["dataset"].n_unique(), "dataset"),
    ]
    if g["n_items"].null_count() < g.height:
        lo, hi = g["n_items"].min(), g["n_items"].max()
        parts.append(
            f"{lo if lo == hi else f'{lo} to {hi}'} item{'s' if hi != 1 else ''} per group"
        )
    if design.cluster:
        lo, hi = g["n_clusters"].min(), g["n_clusters"].max()
        parts.append(f"in {lo if lo == hi else f'{lo} to {hi}'} cluster{'s' if hi != 1 else ''}")
    lo, hi = g["n_variants"].min(), g["n_variants"].max()
    parts.append(f"{lo if lo == hi else f'{lo} to {hi}'} prompt variant{'s' if hi != 1 else ''}")
    lo, hi = g["runs_min"].min(), g["runs_max"].max()
    parts.append(f"{lo if lo == hi else f'{lo} to {hi}'} run{'s' if hi != 1 else ''} each")
    structures = g["structure"].value_counts(sort=True)
    shape = ", ".join(f"{r['structure']} ({r['count']})" for r in structures.iter_rows(named=True))
    text = "; ".join(parts) + f"; groups: {shape}"
    vary = design.varying_prompt_factors
    if vary:
        text += f"; prompt factors: {', '.join(vary)}"
    varying = [s for s in design.settings if s in g.columns]
    if varying:
        text += f"; settings held fixed: {', '.join(varying)}"
    return text


def summary(design: Any, width: int = 100) -> str:
    """The design as a readable multi-line text: columns, groups, what is supported."""
    from evalstats._text import for_terminal

    lines = ["design: " + for_terminal(headline(design)), "", "columns"]
    name_w = min(28, max([len(c.column) for c in design.columns] + [6]))
    for c in design.columns:
        name = for_terminal(c.column)
        name = name if len(name) <= name_w else name[: name_w - 1] + "…"
        where = "" if c.in_table else " [left out]"
        head = f"  {name:<{name_w}}  {c.role:<14} "
        rest = f"{for_terminal(c.evidence)} ({c.source}){where}"
        wrapped = _wrap(rest, width - len(head), 0)
        lines.append(head + wrapped[0])
        lines += [" " * len(head) + w for w in wrapped[1:]]
    g = design.groups
    lines += ["", f"groups ({g.height})"]
    keys = [c for c in g.columns if c in ("model", "dataset", "metric") or c in design.settings]
    for row in g.head(_SHOWN_GROUPS).iter_rows(named=True):
        label = " / ".join(for_terminal(str(row[k])) for k in keys)
        items = "" if row["n_items"] is None else f"{plural(row['n_items'], 'item')}, "
        clusters = (
            "" if row.get("n_clusters") is None else f"{plural(row['n_clusters'], 'cluster')}, "
        )
        runs = (
            f"{row['runs_min']}"
            if row["runs_min"] == row["runs_max"]
            else f"{row['runs_min']}-{row['runs_max']}"
        )
        cells = (
            ""
            if row["cells_observed"] is None or row["structure"] in ("single", "crossed")
            else f", {row['cells_observed']:.0%} of cells"
        )
        mism = "" if row["runs_cover_same_items"] in (True, None) else ", runs over different items"
        lines += _wrap(
            f"{label}: {items}{clusters}{plural(row['n_variants'], 'variant')} x {runs} "
            f"run{'s' if row['runs_max'] != 1 else ''}, "
            f"{row['structure']}{cells}{mism}",
            width,
            2,
        )
    if g.height > _SHOWN_GROUPS:
        lines.append(f"  ... {g.height - _SHOWN_GROUPS} more (--json lists every group)")
    lines += ["", "analyses"]
    for s in design.supports:
        mark = "yes" if s.supported else "no "
        lines += _wrap(f"{mark} {s.analysis}: {s.reason}", width, 2)
    if design.notes:
        from evalstats._text import summarise_notes

        lines += ["", "notes"]
        shown, left = summarise_notes(design.notes)
        for n in shown:
            lines += _wrap(n, width, 2)
        if left:
            lines.append(f"  ({left} more notes in all: --json lists every one)")
    return "\n".join(lines)


def groups_frame(design: Any) -> pl.DataFrame:
    """The groups table (for CSV output of ``evalstats design``)."""
    return design.groups
