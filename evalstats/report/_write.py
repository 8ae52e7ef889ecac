"""Writing the report folder: figures, tables, results.json, report.md and report.html."""

from __future__ import annotations

import io
import json
import shutil
import tempfile
import warnings
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalstats.errors import EvalstatsError, OutputError, ParameterError
from evalstats.report._model import RenderedFigure, RenderedTable, table_key, table_title
from evalstats.report._staging import MANIFEST, check_output, move_into_place

if TYPE_CHECKING:
    from evalstats.report._figures import FigureSpec
    from evalstats.report._model import ReportContents

__all__ = [
    "FIGURE_FORMATS",
    "RenderedFigure",
    "RenderedTable",
    "MANIFEST",
    "check_figure_formats",
    "check_output",
    "write_report",
]

#: matplotlib's notes about its layout engine, which name no data problem.
_LAYOUT_NOTES = (
    r"(?i).*(constrained_layout|tight_layout|tight layout|layout engine|glyph \d+|"
    r"no artists with labels|creating legend with loc)"
)

#: Figure file formats ``write`` accepts.
FIGURE_FORMATS = ("png", "pdf", "svg")


def check_figure_formats(figure_formats: Sequence[str]) -> tuple[str, ...]:
    """The formats, lower-cased and de-duplicated; ParameterError for an unknown one."""
    formats = tuple(dict.fromkeys(f.strip().lower().lstrip(".") for f in figure_formats))
    bad = [f for f in formats if f not in FIGURE_FORMATS]
    if bad or not formats:
        raise ParameterError(
            f"`figure_formats` must name some of {', '.join(FIGURE_FORMATS)}, got "
            f"{', '.join(map(repr, figure_formats)) or 'none'}."
        )
    return formats


def _draw_figures(
    report: ReportContents,
    out: Path,
    formats: tuple[str, ...],
    *,
    serif: bool,
    progress: bool | str,
) -> tuple[list[RenderedFigure], list[dict[str, str]]]:
    from evalstats.plots._style import require_plotting
    from evalstats.report._figures import figure_specs, report_palette
    from evalstats.report._progress import Progress

    plt, _ = require_plotting()
    palette = report_palette(report)
    specs = figure_specs(report)
    (out / "figures").mkdir(parents=True, exist_ok=True)
    rendered: list[RenderedFigure] = []
    failed: list[dict[str, str]] = []
    with Progress("figures", len(specs), progress) as bar:
        for spec in specs:
            bar.step(spec.key)
            figure = _draw_one(spec, palette, out, formats, serif=serif, plt=plt)
            if isinstance(figure, dict):
                failed.append(figure)
                bar.done("not drawn")
                continue
            rendered.append(replace(figure, number=len(rendered) + 1))
            bar.done()
    return rendered, failed


def _draw_one(
    spec: FigureSpec,
    palette: dict[str, Any],
    out: Path,
    formats: tuple[str, ...],
    *,
    serif: bool,
    plt: Any,
) -> RenderedFigure | dict[str, str]:
    """Draw and save one figure; the reason as a dict when its data cannot be drawn."""
    from evalstats.plots import paper_style

    with paper_style(serif=serif), warnings.catch_warnings():
        # layout notes of matplotlib/seaborn are about drawing, not about the data: a
        # figure that needs one is a bug of its layout, which the figure tests catch
        warnings.filterwarnings("ignore", category=UserWarning, module="matplotlib")
        # the same notes attributed to the line that saves the figure (savefig's layout pass)
        warnings.filterwarnings("ignore", message=_LAYOUT_NOTES, category=UserWarning)
        for category in (DeprecationWarning, FutureWarning, PendingDeprecationWarning):
            warnings.filterwarnings("ignore", category=category, module="seaborn")
        try:
            fig = spec.draw(palette)
        except EvalstatsError as exc:
            return {"key": spec.key, "analysis": spec.analysis, "reason": str(exc)}
        try:
            files = {}
            for fmt in formats:
                path = out / "figures" / f"{spec.key}.{fmt}"
                fig.savefig(path, bbox_inches="tight", metadata=_metadata(fmt))
                files[fmt] = path.relative_to(out).as_posix()
            if "png" in formats:
                png = (out / files["png"]).read_bytes()
            else:
                buf = io.BytesIO()
                fig.savefig(buf, format="png", bbox_inches="tight")
                png = buf.getvalue()
            width, height = fig.get_size_inches()
        finally:
            plt.close(fig)
    return RenderedFigure(
        number=0,
        key=spec.key,
        title=spec.title,
        caption=spec.caption,
        analysis=spec.analysis,
        files=files,
        png=png,
        width_in=float(width),
        height_in=float(height),
    )


def _metadata(fmt: str) -> dict[str, Any]:
    # no creation date: the same report gives the same files
    if fmt == "pdf":
        return {"CreationDate": None, "Creator": "evalstats"}
    if fmt == "svg":
        return {"Date": None, "Creator": "evalstats"}
    return {"Software": "evalstats"}


def _write_tables(report: ReportContents, out: Path) -> list[RenderedTable]:
    from evalstats.report._tables import HIDDEN, display_frame, to_latex, write_csv

    (out / "tables").mkdir(parents=True, exist_ok=True)
    written = []
    for res in report.analyses:
        for name, frame in res.tables.items():
            key = table_key(res.key, name)
            title = table_title(report, res.key, name)
            csv = out / "tables" / f"{key}.csv"
            tex = out / "tables" / f"{key}.tex"
            write_csv(frame, csv)
            shown = display_frame(res.key, name, frame)
            tex.write_text(
                to_latex(shown, caption=title, label=f"tab:{key.replace('_', '-')}"),
                encoding="utf-8",
            )
            written.append(
                RenderedTable(
                    number=0 if (res.key, name) in HIDDEN else len(written) + 1,
                    key=key,
                    analysis=res.key,
                    name=name,
                    title=title,
                    files={"csv": f"tables/{key}.csv", "tex": f"tables/{key}.tex"},
                )
            )
    # number the shown tables consecutively
    n = 0
    numbered = []
    for t in written:
        if t.number:
            n += 1
            t = RenderedTable(n, t.key, t.analysis, t.name, t.title, t.files)
        numbered.append(t)
    return numbered


def results_document(
    report: ReportContents,
    figures: Sequence[RenderedFigure],
    tables: Sequence[RenderedTable],
    failed: Sequence[dict[str, str]],
) -> dict[str, Any]:
    """``results.json``: :meth:`AuditReport.to_dict` plus the files written."""
    from evalstats.report._render import report_document

    doc = report_document(report)
    files = {(t.analysis, t.name): t.files for t in tables}
    for entry in doc["analyses"]:
        for name, table in entry["tables"].items():
            table["files"] = files.get((entry["key"], name), {})
        entry["figures"] = [f.key for f in figures if f.analysis == entry["key"]]
    doc["figures"] = [
        {
            "key": f.key,
            "title": f.title,
            "caption": f.caption,
            "analysis": f.analysis,
            "files": f.files,
        }
        for f in figures
    ]
    doc["figures_skipped"] = list(failed)
    return doc


def write_report(
    report: ReportContents,
    out: Path,
    *,
    figure_formats: Sequence[str] = ("png", "pdf"),
    serif: bool = False,
    progress: bool | str = False,
    force: bool = False,
) -> Path:
    """Write every file of the report into ``out``; return the path of ``report.html``.

    Everything is first written into a hidden staging folder inside ``out`` and moved into place
    at the end, ``report.html`` last: an interrupted run leaves the earlier report as it was (and
    no page that looks complete), and a new report replaces every file of the earlier one.
    """
    from evalstats.report._render import render_html, render_markdown

    formats = check_figure_formats(figure_formats)
    out = Path(out)
    check_output(out, force=force)
    try:
        out.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".evalstats-partial-", dir=out))
    except OSError as exc:
        raise OutputError(f"cannot write the report into {str(out)!r}: {exc.strerror}.") from None
    try:
        figures, failed = _draw_figures(report, staging, formats, serif=serif, progress=progress)
        tables = _write_tables(report, staging)
        doc = results_document(report, figures, tables, failed)
        (staging / "results.json").write_text(
            json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n",
            encoding="utf-8",
        )
        (staging / "report.md").write_text(
            render_markdown(report, figures, tables), encoding="utf-8"
        )
        (staging / "report.html").write_text(
            render_html(report, figures, tables, failed), encoding="utf-8"
        )
        files = sorted(p.relative_to(staging).as_posix() for p in staging.rglob("*") if p.is_file())
        (staging / MANIFEST).write_text(
            json.dumps({"files": [*files, MANIFEST]}, indent=1) + "\n", encoding="utf-8"
        )
        move_into_place(staging, out)
    except OSError as exc:
        raise OutputError(
            f"cannot write the report into {str(out)!r}: {exc.strerror or exc}."
        ) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out / "report.html"
