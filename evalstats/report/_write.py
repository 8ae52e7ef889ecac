"""Writing the report folder: figures, tables, results.json, report.md and report.html."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalstats.errors import EvalstatsError, OutputError, ParameterError

if TYPE_CHECKING:
    from evalstats.report._core import AuditReport

__all__ = [
    "FIGURE_FORMATS",
    "RenderedFigure",
    "RenderedTable",
    "MANIFEST",
    "check_figure_formats",
    "check_output",
    "write_report",
]

#: Figure file formats ``write`` accepts.
FIGURE_FORMATS = ("png", "pdf", "svg")

#: File in a report folder listing the files the report wrote (so the next report into the same
#: folder replaces exactly those, and leaves anything else there alone).
MANIFEST = ".evalstats-report.json"


@dataclass(frozen=True, slots=True)
class RenderedFigure:
    """A figure as written: its spec fields, files, and the PNG the HTML page embeds."""

    number: int
    key: str
    title: str
    caption: str
    analysis: str
    files: dict[str, str]
    png: bytes = field(repr=False)
    width_in: float
    height_in: float


@dataclass(frozen=True, slots=True)
class RenderedTable:
    """A table as written: which analysis, its name, number and files."""

    number: int
    key: str
    analysis: str
    name: str
    title: str
    files: dict[str, str]


def table_key(analysis: str, name: str) -> str:
    """File stem of a table: the analysis key, plus the table name when they differ."""
    return analysis if name == analysis else f"{analysis}_{name}"


def table_title(report: AuditReport, analysis: str, name: str) -> str:
    """Caption of a table."""
    res = report[analysis]
    if name == analysis or len(res.tables) == 1:
        return res.title
    return f"{res.title}: {name.replace('_', ' ')}"


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
    report: AuditReport,
    out: Path,
    formats: tuple[str, ...],
    *,
    serif: bool,
    progress: bool,
) -> tuple[list[RenderedFigure], list[dict[str, str]]]:
    from tqdm.auto import tqdm

    from evalstats.plots import model_colors, paper_style
    from evalstats.plots._style import require_plotting
    from evalstats.report._figures import figure_specs

    plt, _ = require_plotting()
    palette = model_colors(report.data.models) if report.data.models else {}
    specs = figure_specs(report)
    (out / "figures").mkdir(parents=True, exist_ok=True)
    rendered: list[RenderedFigure] = []
    failed: list[dict[str, str]] = []
    bar = tqdm(specs, desc="figures", unit="figure", file=sys.stderr, disable=not progress)
    for spec in bar:
        bar.set_description_str(f"figures: {spec.key}")
        with paper_style(serif=serif):
            try:
                fig = spec.draw(palette)
            except EvalstatsError as exc:
                failed.append({"key": spec.key, "analysis": spec.analysis, "reason": str(exc)})
                continue
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
        rendered.append(
            RenderedFigure(
                number=len(rendered) + 1,
                key=spec.key,
                title=spec.title,
                caption=spec.caption,
                analysis=spec.analysis,
                files=files,
                png=png,
                width_in=float(width),
                height_in=float(height),
            )
        )
    return rendered, failed


def _metadata(fmt: str) -> dict[str, Any]:
    # no creation date: the same report gives the same files
    if fmt == "pdf":
        return {"CreationDate": None, "Creator": "evalstats"}
    if fmt == "svg":
        return {"Date": None, "Creator": "evalstats"}
    return {"Software": "evalstats"}


def _write_tables(report: AuditReport, out: Path) -> list[RenderedTable]:
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
    report: AuditReport,
    figures: Sequence[RenderedFigure],
    tables: Sequence[RenderedTable],
    failed: Sequence[dict[str, str]],
) -> dict[str, Any]:
    """``results.json``: :meth:`AuditReport.to_dict` plus the files written."""
    doc = report.to_dict()
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


def check_output(out: Path, *, force: bool = False) -> None:
    """Check, before any work, that a report can be written into the folder ``out``.

    ``out`` may be missing (it is created), empty, or hold an earlier evalstats report (its
    files are replaced). A folder with other files is refused unless ``force`` (the report's
    files are then written among them, replacing files of the same name only).

    Raises
    ------
    OutputError
        ``out`` is a file, a folder with other files (without ``force``), or not writable.
    """
    if out.exists() and not out.is_dir():
        raise OutputError(f"`out` {str(out)!r} is a file; name a folder for the report.")
    if out.is_dir() and not force and not (out / MANIFEST).is_file():
        try:
            others = any(out.iterdir())
        except OSError as exc:
            raise OutputError(f"cannot read the folder {str(out)!r}: {exc.strerror}.") from None
        if others:
            raise OutputError(
                f"`out` {str(out)!r} holds other files and no evalstats report; name a new or "
                "empty folder, or pass --force to write the report among them (files of the "
                "same name are replaced, nothing else is removed)."
            )
    existing = out
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not os.access(existing, os.W_OK | os.X_OK):
        raise OutputError(
            f"cannot write the report into {str(out)!r}: {str(existing)!r} is read-only."
        )


def _previous_files(out: Path) -> list[Path]:
    """Files the earlier report in ``out`` wrote (from its manifest), each inside ``out``."""
    try:
        listed = json.loads((out / MANIFEST).read_text(encoding="utf-8")).get("files", [])
    except (OSError, ValueError, AttributeError):
        return []
    root = out.resolve()
    files = []
    for name in listed if isinstance(listed, list) else []:
        if not isinstance(name, str):
            continue
        path = (out / name).resolve()
        # never follow a (tampered) manifest out of the folder
        if path.is_relative_to(root) and path != root and path.is_file():
            files.append(path)
    return files


def _move_into_place(staging: Path, out: Path) -> None:
    """Replace the earlier report in ``out`` by the staged one; ``report.html`` comes last."""
    staged = sorted(p.relative_to(staging) for p in staging.rglob("*") if p.is_file())
    old = _previous_files(out)
    # the old page goes first, so no report.html ever points at a mix of old and new files
    for path in sorted(old, key=lambda p: p.name != "report.html"):
        path.unlink(missing_ok=True)
    for sub in ("figures", "tables"):
        with contextlib.suppress(OSError):
            (out / sub).rmdir()  # only when the old report left it empty
    for rel in sorted(staged, key=lambda p: p.as_posix() == "report.html"):
        target = out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(staging / rel, target)
    shutil.rmtree(staging, ignore_errors=True)


def write_report(
    report: AuditReport,
    out: Path,
    *,
    figure_formats: Sequence[str] = ("png", "pdf"),
    serif: bool = False,
    progress: bool = False,
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
        _move_into_place(staging, out)
    except OSError as exc:
        raise OutputError(
            f"cannot write the report into {str(out)!r}: {exc.strerror or exc}."
        ) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out / "report.html"
