"""The report as one self-contained HTML page and as Markdown.

Standard library only (``html.escape`` and f-strings): no template engine, no script, no
network resource; figures are embedded as base64 PNG.
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import polars as pl

from evalstats._text import for_markdown as md
from evalstats._text import plural
from evalstats.report._commands import command_line
from evalstats.report._design import html_design, md_design
from evalstats.report._glance import alerts, headline, loader_notes
from evalstats.report._model import SCHEMA_VERSION, SECTIONS
from evalstats.report._tables import (
    HIDDEN,
    TEX_MAX_ROWS,
    display_frame,
    format_value,
    round_floats,
    table_to_dict,
    to_jsonable,
)

if TYPE_CHECKING:
    from evalstats.report._model import (
        AnalysisResult,
        RenderedFigure,
        RenderedTable,
        ReportContents,
    )

__all__ = ["render_html", "render_markdown"]

#: Screen pixels per figure inch in the HTML page (figures keep their relative sizes).
_PX_PER_INCH = 118

#: Warnings shown in full under an analysis; the rest fold into a list.
_WARNINGS_SHOWN = 2

#: Rows of a table shown in Markdown (the CSV holds all of them).
_MD_ROWS = 30
#: Most rows of one table the HTML page shows (all of them are in the table's CSV).
_HTML_ROWS = 5_000

_CSS = """
:root {
  --ink: #1d2329; --muted: #5b6670; --line: #dde2e6; --soft: #f5f7f8;
  --accent: #0173b2; --warn: #9a5b00; --warn-bg: #fff6e5;
}
* { box-sizing: border-box; }
html { font-size: 15px; }
body {
  margin: 0; color: var(--ink); background: #fff; line-height: 1.5;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
}
header.top { border-bottom: 1px solid var(--line); background: var(--soft); }
header.top .inner, .layout, footer .inner { max-width: 78rem; margin: 0 auto; padding: 0 1.5rem; }
header.top .inner { padding-top: 1.4rem; padding-bottom: 1.1rem; }
header.top h1 { margin: 0; font-size: 1.6rem; font-weight: 650; letter-spacing: -0.01em; }
header.top p { margin: 0.3rem 0 0; color: var(--muted); }
.layout { display: grid; grid-template-columns: 14rem minmax(0, 1fr); gap: 2.5rem; }
nav.toc { position: sticky; top: 0; align-self: start; padding: 1.4rem 0; font-size: 0.9rem; }
nav.toc ol { list-style: none; margin: 0; padding: 0; }
nav.toc li { margin: 0.15rem 0; }
nav.toc li li { padding-left: 0.9rem; font-size: 0.85rem; }
nav.toc a { color: var(--muted); text-decoration: none; }
nav.toc a:hover { color: var(--accent); }
main { padding: 0.6rem 0 3rem; min-width: 0; }
section { margin-top: 1.6rem; }
h2 { font-size: 1.3rem; margin: 2rem 0 0.6rem; padding-bottom: 0.3rem;
     border-bottom: 2px solid var(--ink); }
h3 { font-size: 1.08rem; margin: 1.8rem 0 0.4rem; }
article { margin-bottom: 1.2rem; }
p.reading { margin: 0.3rem 0 0.8rem; max-width: 50rem; }
p.note, .muted { color: var(--muted); font-size: 0.9rem; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(8.5rem, 1fr));
         gap: 0.6rem; margin: 0.8rem 0 1rem; }
.card { border: 1px solid var(--line); border-radius: 6px; padding: 0.55rem 0.75rem; }
.card .v { font-size: 1.35rem; font-weight: 650; font-variant-numeric: tabular-nums; }
.card .k { color: var(--muted); font-size: 0.8rem; }
ul.findings { padding-left: 1.1rem; max-width: 52rem; }
ul.findings li { margin: 0.35rem 0; }
figure { margin: 1rem 0 1.4rem; }
figure img { display: block; max-width: 100%; height: auto; }
figcaption { font-size: 0.88rem; color: var(--muted); max-width: 46rem; margin-top: 0.4rem; }
figcaption b, .tcap b { color: var(--ink); }
.tcap { font-size: 0.88rem; color: var(--muted); margin: 1rem 0 0.3rem; }
.table-wrap { overflow: auto; max-height: 24rem; border: 1px solid var(--line);
              border-radius: 4px; margin-bottom: 0.4rem; }
table { border-collapse: collapse; font-size: 0.82rem; width: max-content; min-width: 100%; }
th, td { padding: 0.28rem 0.6rem; text-align: left; vertical-align: top;
         border-bottom: 1px solid var(--line); }
th { position: sticky; top: 0; background: var(--soft); font-weight: 600; z-index: 1; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tbody tr:nth-child(even) td { background: #fafbfc; }
td.wrap { max-width: 22rem; overflow-wrap: anywhere; }
details { margin: 0.4rem 0 1rem; font-size: 0.88rem; }
summary { cursor: pointer; color: var(--muted); }
dl.params { display: grid; grid-template-columns: max-content 1fr; gap: 0.1rem 1rem;
            margin: 0.5rem 0; }
dl.params dt { color: var(--muted); }
dl.params dd { margin: 0; font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
               font-size: 0.82rem; overflow-wrap: anywhere; }
code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
            font-size: 0.82rem; }
pre { background: var(--soft); padding: 0.6rem 0.8rem; border-radius: 4px; overflow-x: auto; }
.warn, .alert { background: var(--warn-bg); color: var(--warn); border-radius: 4px;
        padding: 0.4rem 0.7rem; font-size: 0.85rem; margin: 0.4rem 0; }
details.warn summary { color: var(--warn); }
details.warn ul { margin: 0.3rem 0 0; padding-left: 1.2rem; }
.skip td:first-child { white-space: nowrap; }
footer { border-top: 1px solid var(--line); color: var(--muted); font-size: 0.85rem; }
footer .inner { padding-top: 1rem; padding-bottom: 1.5rem; }
@media (max-width: 60rem) {
  .layout { grid-template-columns: 1fr; }
  nav.toc { position: static; padding-bottom: 0; }
}
@media print {
  nav.toc { display: none; }
  .layout { display: block; }
  .table-wrap { max-height: none; overflow: visible; }
}
"""


def errored_calls(ing: Any) -> str:
    """One sentence: the errored calls kept, by class, and how many carry no score."""
    n = sum(ing.errors.values())
    classes = ", ".join(f"{v:,} {k.replace('_', ' ')}" for k, v in ing.errors.items())
    return (
        f"Kept {n:,} errored call{'s' if n != 1 else ''} ({classes}); {ing.errors_unscored:,} "
        "without a score: the provider audit counts them, the other analyses read scored rows "
        "only."
    )


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _source_name(report: ReportContents) -> str:
    path = report.source.get("path")
    if not path:
        return "observation table"
    return str(path).replace("\\", "/").rsplit("/", 1)[-1]


def _param_text(value: Any) -> str:
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, default=str, ensure_ascii=False)
    return str(value)


# ---------------------------------------------------------------------------------------------
# HTML
# ---------------------------------------------------------------------------------------------


def _html_table(frame: pl.DataFrame) -> str:
    numeric = [t.is_numeric() and t != pl.Boolean for t in frame.schema.values()]
    head = "".join(
        f'<th class="num">{_e(c)}</th>' if n else f"<th>{_e(c)}</th>"
        for c, n in zip(frame.columns, numeric)
    )
    rows = []
    for row in frame.iter_rows():
        cells = []
        for c, v, n in zip(frame.columns, row, numeric):
            text = _e(format_value(c, v))
            if n:
                cells.append(f'<td class="num">{text}</td>')
            elif isinstance(v, str) and len(v) > 30:
                cells.append(f'<td class="wrap">{text.replace("|", "|<wbr>")}</td>')
            else:
                cells.append(f"<td>{text}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return (
        f'<div class="table-wrap"><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def _html_figure(fig: RenderedFigure) -> str:
    data = base64.b64encode(fig.png).decode("ascii")
    width = round(fig.width_in * _PX_PER_INCH)
    other = ", ".join(f"<code>{_e(path)}</code>" for fmt, path in fig.files.items() if fmt != "png")
    files = f" Files: {other}." if other else ""
    return (
        f'<figure id="fig-{_e(fig.key)}">'
        f'<img src="data:image/png;base64,{data}" alt="{_e(fig.title)}" '
        f'style="width: {width}px">'
        f"<figcaption><b>Figure {fig.number}. {_e(fig.title)}.</b> {_e(fig.caption)}"
        f"{files}</figcaption></figure>"
    )


def _html_params(res: AnalysisResult, report: ReportContents) -> str:
    items = [f"<dt>function</dt><dd>{_e(res.function)}</dd>"]
    items += [f"<dt>{_e(k)}</dt><dd>{_e(_param_text(v))}</dd>" for k, v in res.params.items()]
    items += [
        f"<dt>{_e(k)}</dt><dd>{_e(_param_text(v))}</dd>"
        for k, v in res.values.items()
        if k not in ("score_scale",)
    ]
    cmd = command_line(res, report.source)
    command = f"<p>Same table from the command line:</p><pre>{_e(cmd)}</pre>" if cmd else ""
    return (
        f'<details><summary>Parameters and reproduction</summary><dl class="params">'
        f"{''.join(items)}</dl>{command}</details>"
    )


def _html_analysis(
    res: AnalysisResult,
    report: ReportContents,
    figures: Sequence[RenderedFigure],
    tables: Sequence[RenderedTable],
) -> str:
    parts = [f'<article id="a-{_e(res.key)}"><h3>{_e(res.title)}</h3>']
    parts.append(f'<p class="reading">{_e(res.reading)}</p>')
    for w in res.warnings[:_WARNINGS_SHOWN]:
        parts.append(f'<div class="warn">Warning: {_e(w)}</div>')
    rest = res.warnings[_WARNINGS_SHOWN:]
    if rest:
        items = "".join(f"<li>{_e(w)}</li>" for w in rest[:100])
        more = f"<li>… {len(rest) - 100} more in results.json</li>" if len(rest) > 100 else ""
        parts.append(
            f'<details class="warn"><summary>{len(rest)} more warning'
            f"{'s' if len(rest) > 1 else ''}</summary><ul>{items}{more}</ul></details>"
        )
    parts += [_html_figure(f) for f in figures if f.analysis == res.key]
    for t in tables:
        if t.analysis != res.key or (t.analysis, t.name) in HIDDEN:
            continue
        frame = res.tables[t.name]
        shown = display_frame(res.key, t.name, frame)
        parts.append(
            f'<p class="tcap"><b>Table {t.number}. {_e(t.title)}.</b> '
            f"{plural(frame.height, 'row')}; full precision and all "
            f"{plural(frame.width, 'column')} in <code>{_e(t.files['csv'])}</code>"
            + (
                f" (LaTeX: <code>{_e(t.files['tex'])}</code>).</p>"
                if "tex" in t.files
                else f" (no LaTeX table: over {TEX_MAX_ROWS} rows).</p>"
            )
        )
        if shown.height > _HTML_ROWS:  # a page of 100,000 rows is not read, and took minutes
            parts.append(f'<p class="note">First {_HTML_ROWS:,} rows shown.</p>')
        parts.append(_html_table(shown.head(_HTML_ROWS)))
    hidden = [t for t in tables if t.analysis == res.key and (t.analysis, t.name) in HIDDEN]
    for t in hidden:
        parts.append(
            f'<p class="note">The {_e(t.name.replace("_", " "))} table '
            f"({res.tables[t.name].height} rows) is drawn above and written to "
            f"<code>{_e(t.files['csv'])}</code>.</p>"
        )
    parts.append(_html_params(res, report))
    parts.append("</article>")
    return "".join(parts)


def _html_overview(report: ReportContents) -> str:
    d = report.data
    cards = [
        ("models", len(d.models)),
        ("datasets", len(d.datasets)),
        ("items", d.n_items if d.n_items is not None else "–"),
        ("prompt variants", _prompt_variants(report)),
        ("runs", d.n_runs),
        ("factors", len(d.factors)),
        ("rows", f"{d.n_rows:,}"),
        ("errors", f"{d.n_errors:,}" if d.n_errors is not None else "–"),
    ]
    card_html = "".join(
        f'<div class="card"><div class="v">{_e(v)}</div><div class="k">{_e(k)}</div></div>'
        for k, v in cards
    )
    findings = "".join(
        f'<li><a href="#a-{_e(a.key)}">{_e(title)}</a>: {_e(text)}</li>'
        for a in report.analyses
        for title, text in [headline(a, d.datasets)]
    )
    skipped = (
        f' <a href="#skipped">{len(report.skipped)} skipped</a> for lack of data.'
        if report.skipped
        else " None was skipped."
    )
    return (
        '<section id="overview"><h2>At a glance</h2>'
        + "".join(f'<p class="alert"><b>Warning:</b> {_e(a)}</p>' for a in alerts(report))
        + f'<div class="cards">{card_html}</div>'
        f"<p>{plural(len(report.analyses), 'analysis', 'analyses')} ran on what the data "
        f"holds.{skipped}</p>"
        f'<ul class="findings">{findings}</ul></section>'
    )


def _prompt_variants(report: ReportContents) -> int:
    """Most prompt variants of a group: the design's count (settings held apart), else the data's."""
    design = report.design
    if design is not None and design.groups.height:
        return int(design.groups["n_variants"].max())
    return report.data.n_variants


def _html_data(report: ReportContents) -> str:
    d = report.data
    rows = [
        ("source", report.source.get("path") or "observation table passed in"),
        ("format", report.source.get("format") or "–"),
        ("models", ", ".join(d.models)),
        ("datasets", ", ".join(d.datasets)),
        ("factors analysed", ", ".join(d.factors) or "none"),
    ]
    if d.constant_factors:
        rows.append(("constant factors (not analysed)", ", ".join(d.constant_factors)))
    if d.incomplete_factors:
        rows.append(("factors with missing values (not analysed)", ", ".join(d.incomplete_factors)))
    rows.append(("provider column", d.provider or "none"))
    ing = report.ingest
    parts = ['<section id="data"><h2>Data</h2><dl class="params">']
    parts += [f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in rows]
    parts.append("</dl>")
    if ing is not None:
        parts.append(
            f"<h3>Ingest report</h3><p>{ing.rows_read:,} row{'s' if ing.rows_read != 1 else ''} "
            f"read from {plural(len(ing.sources), 'file')}, {ing.rows_kept:,} kept, "
            f"{ing.rows_set_aside:,} set aside (read = kept + set aside).</p>"
        )
        if ing.errors:
            parts.append(f"<p>{_e(errored_calls(ing))}</p>")
        if ing.set_aside:
            frame = pl.DataFrame(
                {"reason": list(ing.set_aside), "rows": list(ing.set_aside.values())}
            )
            parts.append(_html_table(frame))
        if ing.examples:
            items = "".join(f"<li><code>{_e(e.describe())}</code></li>" for e in ing.examples)
            parts.append(f"<p>Examples of rows set aside:</p><ul>{items}</ul>")
        if ing.notes:
            items = "".join(f"<li>{_e(n)}</li>" for n in loader_notes(report))
            parts.append(f"<p>Notes from the loader:</p><ul>{items}</ul>")
        sources = "".join(f"<li><code>{_e(s)}</code></li>" for s in ing.sources[:20])
        more = f"<li>… {len(ing.sources) - 20} more</li>" if len(ing.sources) > 20 else ""
        parts.append(f"<details><summary>Files read</summary><ul>{sources}{more}</ul></details>")
    else:
        parts.append(
            '<p class="note">The observation table was passed in directly; no ingest report.</p>'
        )
    parts.append("</section>")
    return "".join(parts)


def _html_skipped(report: ReportContents, failed: Sequence[dict[str, str]]) -> str:
    if not report.skipped and not failed:
        return ""
    rows = "".join(
        f"<tr><td>{_e(s.title)}</td><td>{_e(SECTIONS[s.section])}</td><td>{_e(s.reason)}</td></tr>"
        for s in report.skipped
    )
    rows += "".join(
        f"<tr><td>figure {_e(f['key'])}</td><td>{_e(f['analysis'])}</td>"
        f"<td>{_e(f['reason'])}</td></tr>"
        for f in failed
    )
    return (
        '<section id="skipped"><h2>Skipped</h2><p>Analyses the data does not support, and '
        'why.</p><div class="table-wrap skip"><table><thead><tr><th>analysis</th>'
        f"<th>section</th><th>reason</th></tr></thead><tbody>{rows}</tbody></table></div>"
        "</section>"
    )


def _html_reproduce(report: ReportContents) -> str:
    p = report.parameters
    rows = [
        ("seed", p["seed"]),
        ("factors", ", ".join(p["factors"]) or "none"),
        ("default", _param_text(p["default"]) if p["default"] else "none"),
        ("options", _param_text(p["options"]) if p["options"] else "library defaults"),
    ]
    if p.get("skip"):
        rows.append(("skipped on request", ", ".join(p["skip"])))
    env = report.environment
    rows.append(("python", f"{env['python']} ({env['implementation']}, {env['platform']})"))
    rows += [(f"{k}", v or "not installed") for k, v in env["packages"].items()]
    items = "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in rows)
    return (
        '<section id="reproduce"><h2>Parameters and versions</h2><p>Every stochastic step '
        "uses the seed below; the same data, parameters and versions give the same "
        "<code>results.json</code>. Each analysis lists its full parameters under "
        '"Parameters and reproduction".</p>'
        f'<dl class="params">{items}</dl></section>'
    )


def _html_toc(report: ReportContents, failed: Sequence[dict[str, str]]) -> str:
    items = ['<li><a href="#overview">At a glance</a></li>', '<li><a href="#data">Data</a></li>']
    if report.design is not None:
        items.insert(0, '<li><a href="#design">Design</a></li>')
    for key, title in SECTIONS.items():
        sub = [a for a in report.analyses if a.section == key]
        if not sub:
            continue
        inner = "".join(f'<li><a href="#a-{_e(a.key)}">{_e(a.title)}</a></li>' for a in sub)
        items.append(f'<li><a href="#s-{key}">{_e(title)}</a><ol>{inner}</ol></li>')
    if report.skipped or failed:
        items.append('<li><a href="#skipped">Skipped</a></li>')
    items.append('<li><a href="#reproduce">Parameters and versions</a></li>')
    return f'<nav class="toc" aria-label="Contents"><ol>{"".join(items)}</ol></nav>'


def render_html(
    report: ReportContents,
    figures: Sequence[RenderedFigure],
    tables: Sequence[RenderedTable],
    failed: Sequence[dict[str, str]] = (),
) -> str:
    """The self-contained HTML page."""
    version = report.environment["packages"].get("evalstats") or ""
    name = _source_name(report)
    body = [html_design(report, _e, _html_table), _html_overview(report), _html_data(report)]
    for key, title in SECTIONS.items():
        sub = [a for a in report.analyses if a.section == key]
        if not sub:
            continue
        body.append(f'<section id="s-{key}"><h2>{_e(title)}</h2>')
        body += [_html_analysis(a, report, figures, tables) for a in sub]
        body.append("</section>")
    body.append(_html_skipped(report, failed))
    body.append(_html_reproduce(report))
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f'<meta name="generator" content="evalstats {_e(version)}">\n'
        f"<title>Audit report: {_e(name)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
        f'<header class="top"><div class="inner"><h1>Audit report: {_e(name)}</h1>'
        f"<p>{plural(len(report.data.models), 'model')} · "
        f"{plural(len(report.data.datasets), 'dataset')} · "
        f"{report.data.n_rows:,} scored outputs · seed {report.parameters['seed']} · "
        f"evalstats {_e(version)}</p></div></header>\n"
        f'<div class="layout">{_html_toc(report, failed)}<main>{"".join(body)}</main></div>\n'
        '<footer><div class="inner">Generated offline by evalstats; every number comes from '
        "the public analysis function named with it. Figures are embedded; the page loads "
        "nothing from the network.</div></footer>\n</body>\n</html>\n"
    )


# ---------------------------------------------------------------------------------------------
# Markdown
# ---------------------------------------------------------------------------------------------


def _md_table(frame: pl.DataFrame, limit: int = _MD_ROWS) -> str:
    numeric = [t.is_numeric() and t != pl.Boolean for t in frame.schema.values()]
    lines = [
        "| " + " | ".join(md(c) for c in frame.columns) + " |",
        "| " + " | ".join("---:" if n else "---" for n in numeric) + " |",
    ]
    for row in frame.head(limit).iter_rows():
        lines.append(
            "| " + " | ".join(md(format_value(c, v)) for c, v in zip(frame.columns, row)) + " |"
        )
    return "\n".join(lines)


def render_markdown(
    report: ReportContents, figures: Sequence[RenderedFigure], tables: Sequence[RenderedTable]
) -> str:
    """The report as Markdown; figures are linked (``figures/...``), not embedded."""
    d = report.data
    name = _source_name(report)
    out = [
        f"# Audit report: {md(name)}",
        "",
        f"{plural(len(d.models), 'model')} ({md(', '.join(d.models))}), "
        f"{plural(len(d.datasets), 'dataset')}, "
        f"{d.n_items if d.n_items is not None else 'no'} item{'s' if d.n_items != 1 else ''}, "
        f"up to {plural(_prompt_variants(report), 'prompt variant')} "
        f"and {plural(d.n_runs, 'run')} per configuration, {d.n_rows:,} scored outputs. Seed "
        f"{report.parameters['seed']}; evalstats "
        f"{report.environment['packages'].get('evalstats')}.",
    ]
    out += [line for a in alerts(report) for line in ("", f"> **Warning:** {md(a)}")]
    out += md_design(report, _md_table)
    out += ["", "## At a glance", ""]
    out += [
        f"- **{md(title)}**: {md(text)}"
        for a in report.analyses
        for title, text in [headline(a, d.datasets)]
    ]
    if report.ingest is not None:
        ing = report.ingest
        out += [
            "",
            "## Data",
            "",
            f"Ingest ({md(ing.format)}): {ing.rows_read:,} rows read, {ing.rows_kept:,} kept, "
            f"{ing.rows_set_aside:,} set aside.",
        ]
        if ing.errors:
            out.append(f"- {md(errored_calls(ing))}")
        out += [f"- set aside {n} × {md(reason)}" for reason, n in ing.set_aside.items()]
        out += [f"- note: {md(n)}" for n in loader_notes(report)]
    for key, title in SECTIONS.items():
        sub = [a for a in report.analyses if a.section == key]
        if not sub:
            continue
        out += ["", f"## {md(title)}"]
        for res in sub:
            out += ["", f"### {md(res.title)}", "", md(res.reading)]
            out += [f"\n> Warning: {md(w)}" for w in res.warnings[:_WARNINGS_SHOWN]]
            if len(res.warnings) > _WARNINGS_SHOWN:
                out.append(f"\n> … {len(res.warnings) - _WARNINGS_SHOWN} more (results.json).")
            for f in figures:
                if f.analysis == res.key:
                    path = f.files.get("png") or next(iter(f.files.values()))
                    out += [
                        "",
                        f"![Figure {f.number}. {md(f.title)}]({path})",
                        "",
                        f"*Figure {f.number}. {md(f.title)}.* {md(f.caption)}",
                    ]
            for t in tables:
                if t.analysis != res.key or (t.analysis, t.name) in HIDDEN:
                    continue
                frame = res.tables[t.name]
                shown = display_frame(res.key, t.name, frame)
                more = (
                    f" First {_MD_ROWS} of {frame.height} rows." if frame.height > _MD_ROWS else ""
                )
                out += [
                    "",
                    f"*Table {t.number}. {md(t.title)}.*{more} Full table: `{t.files['csv']}`.",
                    "",
                    _md_table(shown),
                ]
            params = ", ".join(f"{k}={_param_text(v)}" for k, v in res.params.items())
            out += ["", f"<sub>{md(res.function)}({md(params)})</sub>"]
    if report.skipped:
        out += ["", "## Skipped", ""]
        out += [f"- **{md(s.title)}**: {md(s.reason)}" for s in report.skipped]
    env = report.environment
    out += [
        "",
        "## Parameters and versions",
        "",
        f"- seed: {report.parameters['seed']}",
        f"- factors: {md(', '.join(report.parameters['factors'])) or 'none'}",
        f"- default: {md(_param_text(report.parameters['default']))}",
        f"- options: {md(_param_text(report.parameters['options']))}",
        f"- python {env['python']} ({env['platform']})",
    ]
    out += [f"- {k} {v}" for k, v in env["packages"].items()]
    return "\n".join(out) + "\n"


def report_document(report: ReportContents) -> dict[str, Any]:
    """The ``results.json`` document of ``report``, without the files the writer adds."""
    return {
        "report": "evalstats audit report",
        "schema_version": SCHEMA_VERSION,
        "evalstats_version": report.environment["packages"].get("evalstats"),
        "source": to_jsonable(report.source),
        "ingest": report.ingest.to_dict() if report.ingest is not None else None,
        "design": to_jsonable(report.design.to_dict()) if report.design is not None else None,
        "data": report.data.to_dict(),
        "parameters": to_jsonable(report.parameters),
        "environment": to_jsonable(report.environment),
        "sections": [
            {
                "key": key,
                "title": title,
                "analyses": [a.key for a in report.analyses if a.section == key],
            }
            for key, title in SECTIONS.items()
        ],
        "analyses": [
            {
                "key": a.key,
                "title": a.title,
                "section": a.section,
                "function": a.function,
                "command": a.command,
                "command_line": command_line(a, report.source),
                "params": to_jsonable(a.params),
                "values": round_floats(to_jsonable(a.values)),
                "reading": a.reading,
                "warnings": list(a.warnings),
                "tables": {name: table_to_dict(t) for name, t in a.tables.items()},
            }
            for a in report.analyses
        ],
        "skipped": [s.to_dict() for s in report.skipped],
    }
