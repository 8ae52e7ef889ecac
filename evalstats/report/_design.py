"""The report's design section: the design it used, first on the page (HTML and Markdown)."""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from evalstats._text import for_markdown as md
from evalstats.report._model import ReportContents

__all__ = ["design_rule", "html_design", "md_design"]


def design_rule(report: ReportContents) -> str | None:
    """The sentence on runs over different items, when some group has them."""
    design = report.design
    if design is None or not design.groups.height:
        return None
    differ = design.groups.filter(~pl.col("runs_cover_same_items").fill_null(True))
    if not differ.height:
        return None
    rule = report.parameters.get("on_mismatch", "auto")
    how = {
        "auto": "each run's mean is over its own items; the stability table (TAR) is over the "
        "items every run of a configuration scored",
        "keep": "every analysis uses each run over its own items",
        "intersect": "every analysis uses only the items every run scored (this biases TAR upward)",
    }.get(rule, rule)
    return (
        f"The runs of {differ.height} of {design.groups.height} groups cover different items. "
        f"Rule used (on_mismatch={rule!r}): {how}."
    )


def _design_columns(report: ReportContents) -> pl.DataFrame:
    rows = [
        {
            "column": c.column,
            "role": c.role,
            "read as": c.table_name or ("(left out)" if not c.in_table else ""),
            "evidence": c.evidence,
            "decided by": c.source,
        }
        for c in report.design.columns
        if c.source != "canonical" or c.role in ("variant", "run", "dataset")
    ]
    return pl.DataFrame(rows, schema=["column", "role", "read as", "evidence", "decided by"])


def _design_groups(report: ReportContents) -> pl.DataFrame:
    g = report.design.groups
    keys = [
        c for c in g.columns if c in ("model", "dataset", "metric") or c in report.design.settings
    ]
    return g.select(
        *keys,
        "n_items",
        *(["n_clusters"] if report.design.cluster else []),
        "n_variants",
        "runs_min",
        "runs_max",
        "structure",
        "cells_observed",
    )


def html_design(
    report: ReportContents, _e: Callable[[object], str], _html_table: Callable[[pl.DataFrame], str]
) -> str:
    """The HTML design section (empty without a design); escaping and tables as the page's."""
    from evalstats.design import headline

    design = report.design
    if design is None:
        return ""
    parts = [
        '<section id="design"><h2>Design</h2>',
        f"<p>{_e(headline(design))}.</p>",
    ]
    rule = design_rule(report)
    if rule:
        parts.append(f'<p class="note">{_e(rule)}</p>')
    supported = [s for s in design.supports if s.supported]
    unsupported = [s for s in design.supports if not s.supported]
    if unsupported:
        items = "".join(f"<li><b>{_e(s.analysis)}</b>: {_e(s.reason)}</li>" for s in unsupported)
        parts.append(
            f"<p>No headline is drawn where the design does not support it:</p><ul>{items}</ul>"
        )
    if supported:
        items = "".join(f"<li><b>{_e(s.analysis)}</b>: {_e(s.reason)}</li>" for s in supported)
        parts.append(
            f"<details><summary>What the design supports</summary><ul>{items}</ul></details>"
        )
    parts.append(
        "<details><summary>The role of every column</summary>"
        + _html_table(_design_columns(report))
        + "<p>Correct a role with <code>--roles COLUMN=ROLE</code>, or write the design with "
        "<code>evalstats design PATH --out design.toml</code>, edit it and pass "
        "<code>--design design.toml</code>.</p></details>"
    )
    groups = _design_groups(report)
    parts.append(
        f"<details><summary>Groups ({groups.height})</summary>"
        + _html_table(groups.head(50))
        + ("<p>First 50 groups; results.json lists all.</p>" if groups.height > 50 else "")
        + "</details>"
    )
    if design.notes:
        parts.append("<ul>" + "".join(f"<li>{_e(n)}</li>" for n in design.notes) + "</ul>")
    parts.append("</section>")
    return "".join(parts)


def md_design(report: ReportContents, _md_table: Callable[..., str]) -> list[str]:
    """The Markdown design section (no lines without a design)."""
    from evalstats.design import headline

    design = report.design
    if design is None:
        return []
    out = ["", "## Design", "", md(headline(design)) + "."]
    rule = design_rule(report)
    if rule:
        out += ["", md(rule)]
    unsupported = [s for s in design.supports if not s.supported]
    if unsupported:
        out += ["", "No headline is drawn where the design does not support it:", ""]
        out += [f"- **{md(s.analysis)}**: {md(s.reason)}" for s in unsupported]
    out += ["", _md_table(_design_columns(report), limit=60)]
    out += [f"- {md(n)}" for n in design.notes]
    return out
