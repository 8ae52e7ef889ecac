"""Writing the report folder: figures, tables, results.json, report.md and report.html."""

from __future__ import annotations

import io
import json
import shutil
import tempfile
import warnings
from collections.abc import Iterator, Sequence
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
    workers: int = 1,
) -> tuple[list[RenderedFigure], list[dict[str, str]]]:
    from evalstats.plots._style import require_plotting
    from evalstats.report._figures import figure_specs, report_palette
    from evalstats.report._progress import Progress

    specs = figure_specs(report)
    (out / "figures").mkdir(parents=True, exist_ok=True)
    drawn: dict[int, RenderedFigure | dict[str, str]] = {}
    shipped = _for_workers(report) if workers > 1 and len(specs) > 1 else None
    with Progress("figures", len(specs), progress) as bar:
        if shipped is not None:
            for i, figure, seconds in _draw_in_workers(shipped, out, formats, serif, workers):
                drawn[i] = figure
                bar.finished(
                    specs[i].key, seconds, "not drawn" if isinstance(figure, dict) else None
                )
        else:
            plt, _ = require_plotting()
            palette = report_palette(report)
            for i, spec in enumerate(specs):
                bar.step(spec.key)
                drawn[i] = _draw_one(spec, palette, out, formats, serif=serif, plt=plt)
                bar.done("not drawn" if isinstance(drawn[i], dict) else None)
    rendered: list[RenderedFigure] = []
    failed: list[dict[str, str]] = []
    for i in range(len(specs)):  # numbered in report order, whatever order they were drawn in
        figure = drawn[i]
        if isinstance(figure, dict):
            failed.append(figure)
        else:
            rendered.append(replace(figure, number=len(rendered) + 1))
    return rendered, failed


def _for_workers(report: ReportContents) -> ReportContents | None:
    """What the figure workers need, if it can be sent to them (else None: draw here).

    The figures read the analyses, the data summary and the units, not the loader's report
    (which may hold objects that cannot be pickled).
    """
    import pickle

    slim = replace(report, ingest=None)
    try:
        pickle.dumps(slim)
    except Exception:  # noqa: BLE001 - any object a result holds that cannot be sent
        return None
    return slim


_FIGURE_WORKER: dict[str, Any] = {}


def _figure_worker_init(
    report: ReportContents, out: Path, formats: tuple[str, ...], serif: bool
) -> None:
    from evalstats._reproducible import reproducible
    from evalstats.plots._style import require_plotting
    from evalstats.report._figures import figure_specs, report_palette

    with reproducible():
        specs = figure_specs(report)
        palette = report_palette(report)
    plt, _ = require_plotting()
    _FIGURE_WORKER.update(specs=specs, palette=palette, plt=plt, out=out)
    _FIGURE_WORKER.update(formats=formats, serif=serif)


def _figure_worker(i: int) -> tuple[int, RenderedFigure | dict[str, str], float]:
    import time

    from evalstats._reproducible import reproducible

    w = _FIGURE_WORKER
    start = time.perf_counter()
    with reproducible():
        figure = _draw_one(
            w["specs"][i], w["palette"], w["out"], w["formats"], serif=w["serif"], plt=w["plt"]
        )
    return i, figure, time.perf_counter() - start


def _draw_in_workers(
    report: ReportContents, out: Path, formats: tuple[str, ...], serif: bool, workers: int
) -> Iterator[tuple[int, RenderedFigure | dict[str, str], float]]:
    """Draw the figures in ``workers`` spawned processes; yield them as they are done.

    Each worker builds the figure specs from the same report (so the same figures, in the same
    order, with the same palette) and draws the ones it is given into ``out``.
    """
    import concurrent.futures as cf
    import multiprocessing as mp

    from evalstats.report._figures import figure_specs

    n = len(figure_specs(report))
    with cf.ProcessPoolExecutor(
        max_workers=min(workers, n),
        mp_context=mp.get_context("spawn"),
        initializer=_figure_worker_init,
        initargs=(report, out, formats, serif),
    ) as pool:
        futures = [pool.submit(_figure_worker, i) for i in range(n)]
        for fut in cf.as_completed(futures):
            yield fut.result()


def _laid_out(fig: Any, plt: Any) -> Any:
    """Lay ``fig`` out once and return its tight bounding box (inches, padded as savefig pads).

    ``savefig(bbox_inches="tight")`` draws the figure twice per file (once to measure it, once
    to render it) and runs the layout engine each time. Measured once here, every format is
    cut to the same box and the layout is kept as it is (layout engine off): one layout pass
    and one render per file instead of two and two.
    """
    fig.draw_without_rendering()
    bbox = fig.get_tightbbox(fig.canvas.get_renderer())
    fig.set_layout_engine("none")
    return bbox.padded(plt.rcParams["savefig.pad_inches"])


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
            bbox = _laid_out(fig, plt)
            files = {}
            for fmt in formats:
                path = out / "figures" / f"{spec.key}.{fmt}"
                fig.savefig(path, bbox_inches=bbox, metadata=_metadata(fmt))
                files[fmt] = path.relative_to(out).as_posix()
            if "png" in formats:
                png = (out / files["png"]).read_bytes()
            else:
                buf = io.BytesIO()
                fig.savefig(buf, format="png", bbox_inches=bbox)
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
    from evalstats.report._tables import (
        HIDDEN,
        TEX_MAX_ROWS,
        display_frame,
        to_latex,
        write_csv,
    )

    (out / "tables").mkdir(parents=True, exist_ok=True)
    written = []
    for res in report.analyses:
        for name, frame in res.tables.items():
            key = table_key(res.key, name)
            title = table_title(report, res.key, name)
            csv = out / "tables" / f"{key}.csv"
            tex = out / "tables" / f"{key}.tex"
            write_csv(frame, csv)
            files = {"csv": f"tables/{key}.csv"}
            shown = display_frame(res.key, name, frame)
            if shown.height <= TEX_MAX_ROWS:
                tex.write_text(
                    to_latex(shown, caption=title, label=f"tab:{key.replace('_', '-')}"),
                    encoding="utf-8",
                )
                files["tex"] = f"tables/{key}.tex"
            written.append(
                RenderedTable(
                    number=0 if (res.key, name) in HIDDEN else len(written) + 1,
                    key=key,
                    analysis=res.key,
                    name=name,
                    title=title,
                    files=files,
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
    workers: int = 1,
) -> Path:
    """Write every file of the report into ``out``; return the path of ``report.html``.

    Everything is first written into a hidden staging folder inside ``out`` and moved into place
    at the end, ``report.html`` last: an interrupted run leaves the earlier report as it was (and
    no page that looks complete), and a new report replaces every file of the earlier one.
    """
    from evalstats.report._render import render_html, render_markdown
    from evalstats.report._tables import dumps_document

    formats = check_figure_formats(figure_formats)
    out = Path(out)
    check_output(out, force=force)
    try:
        out.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".evalstats-partial-", dir=out))
    except OSError as exc:
        raise OutputError(f"cannot write the report into {str(out)!r}: {exc.strerror}.") from None
    try:
        figures, failed = _draw_figures(
            report, staging, formats, serif=serif, progress=progress, workers=workers
        )
        tables = _write_tables(report, staging)
        doc = results_document(report, figures, tables, failed)
        (staging / "results.json").write_text(dumps_document(doc), encoding="utf-8")
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
