"""Writing the report folder: figures, tables, results.json, report.md and report.html."""

from __future__ import annotations

import io
import json
import shutil
import tempfile
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalstats.errors import EvalstatsError, OutputError, ParameterError
from evalstats.report._model import RenderedFigure, RenderedTable, table_key, table_title
from evalstats.report._staging import MANIFEST, check_output, move_into_place

if TYPE_CHECKING:
    from evalstats.report._figures import FigureSpec
    from evalstats.report._model import AnalysisResult, ReportContents

__all__ = [
    "FIGURE_FORMATS",
    "RenderedFigure",
    "RenderedTable",
    "MANIFEST",
    "ReportWriter",
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


def _write_tables_of(report: ReportContents, key: str, out: Path) -> None:
    """Write the CSV and LaTeX files of the analysis ``key``."""
    from evalstats.report._tables import display_frame, to_latex, write_csv

    (out / "tables").mkdir(parents=True, exist_ok=True)
    res = report[key]
    for name, frame in res.tables.items():
        stem = table_key(res.key, name)
        title = table_title(report, res.key, name)
        write_csv(frame, out / "tables" / f"{stem}.csv")
        shown = display_frame(res.key, name, frame)
        (out / "tables" / f"{stem}.tex").write_text(
            to_latex(shown, caption=title, label=f"tab:{stem.replace('_', '-')}"),
            encoding="utf-8",
        )


def _table_entries(report: ReportContents) -> list[RenderedTable]:
    """The tables of ``report`` as written, the shown ones numbered consecutively."""
    from evalstats.report._tables import HIDDEN

    entries = []
    n = 0
    for res in report.analyses:
        for name in res.tables:
            stem = table_key(res.key, name)
            shown = (res.key, name) not in HIDDEN
            n += shown
            entries.append(
                RenderedTable(
                    number=n if shown else 0,
                    key=stem,
                    analysis=res.key,
                    name=name,
                    title=table_title(report, res.key, name),
                    files={"csv": f"tables/{stem}.csv", "tex": f"tables/{stem}.tex"},
                )
            )
    return entries


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


class ReportWriter:
    """Write a report into a staging folder as its analyses finish; :meth:`finish` ends it.

    Each finished analysis (:meth:`add`) has its tables and figures written at once, into a
    hidden staging folder inside ``out``; :meth:`finish` writes ``results.json``,
    ``report.md`` and ``report.html`` and moves everything into place, ``report.html`` last.
    A run interrupted before that leaves the earlier report in ``out`` as it was and no page
    that looks complete; the staging folder is removed when the ``with`` block ends.

    Parameters
    ----------
    out : Path
        The report folder (see :func:`~evalstats.report._staging.check_output`).
    figure_formats, serif, progress, force
        As for :meth:`evalstats.AuditReport.write`.
    """

    def __init__(
        self,
        out: Path,
        *,
        figure_formats: Sequence[str] = ("png", "pdf"),
        serif: bool = False,
        progress: bool | str = False,
        force: bool = False,
    ) -> None:
        self.formats = check_figure_formats(figure_formats)
        self.out = Path(out)
        check_output(self.out, force=force)
        self.serif = serif
        self.progress = progress
        self.staging: Path | None = None
        self._figures: dict[str, RenderedFigure] = {}
        self._failed: dict[str, dict[str, str]] = {}
        self._palette: dict[str, Any] | None = None
        self._tables: set[str] = set()

    def __enter__(self) -> ReportWriter:
        try:
            self.out.mkdir(parents=True, exist_ok=True)
            self.staging = Path(tempfile.mkdtemp(prefix=".evalstats-partial-", dir=self.out))
        except OSError as exc:
            raise OutputError(
                f"cannot write the report into {str(self.out)!r}: {exc.strerror}."
            ) from None
        return self

    def __exit__(self, *exc: object) -> None:
        if self.staging is not None:
            shutil.rmtree(self.staging, ignore_errors=True)

    def add(self, result: AnalysisResult, report: ReportContents) -> None:
        """Write the tables and figures of ``result`` (``report``: the analyses so far)."""
        with self._writing():
            _write_tables_of(report, result.key, self._stage)
            self._tables.add(result.key)
            # on a terminal a second bar under the analyses' one; in a log a line per figure
            self._draw(report, analysis=result.key, progress=self.progress)

    def finish(self, report: ReportContents) -> Path:
        """Write what is left, the pages last, and move the report into place."""
        from evalstats.report._figures import figure_specs
        from evalstats.report._render import render_html, render_markdown

        stage = self._stage
        with self._writing():
            for res in report.analyses:
                if res.key not in self._tables:
                    _write_tables_of(report, res.key, stage)
            self._draw(report, analysis=None, progress=self.progress)
            order = [s.key for s in figure_specs(report)]
            drawn = [self._figures[k] for k in order if k in self._figures]
            figures = [replace(f, number=i + 1) for i, f in enumerate(drawn)]
            failed = [self._failed[k] for k in order if k in self._failed]
            tables = _table_entries(report)
            doc = results_document(report, figures, tables, failed)
            (stage / "results.json").write_text(
                json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n",
                encoding="utf-8",
            )
            (stage / "report.md").write_text(
                render_markdown(report, figures, tables), encoding="utf-8"
            )
            (stage / "report.html").write_text(
                render_html(report, figures, tables, failed), encoding="utf-8"
            )
            files = sorted(p.relative_to(stage).as_posix() for p in stage.rglob("*") if p.is_file())
            (stage / MANIFEST).write_text(
                json.dumps({"files": [*files, MANIFEST]}, indent=1) + "\n", encoding="utf-8"
            )
            move_into_place(stage, self.out)
        return self.out / "report.html"

    @property
    def _stage(self) -> Path:
        if self.staging is None:
            raise RuntimeError("ReportWriter is used outside its `with` block.")
        return self.staging

    @contextmanager
    def _writing(self) -> Iterator[None]:
        try:
            yield
        except OSError as exc:
            raise OutputError(
                f"cannot write the report into {str(self.out)!r}: {exc.strerror or exc}."
            ) from None

    def _draw(self, report: ReportContents, *, analysis: str | None, progress: bool | str) -> None:
        """Draw the figures of ``analysis`` (None: every one not drawn yet)."""
        from evalstats.plots._style import require_plotting
        from evalstats.report._figures import figure_specs, report_palette
        from evalstats.report._progress import Progress

        specs = [
            s
            for s in figure_specs(report)
            if (s.analysis == analysis if analysis is not None else True)
            and s.key not in self._figures
            and s.key not in self._failed
        ]
        if not specs:
            return
        plt, _ = require_plotting()
        if self._palette is None:  # one colour per model in every figure, fixed by the data
            self._palette = report_palette(report)
        (self._stage / "figures").mkdir(parents=True, exist_ok=True)
        with Progress("figures", len(specs), progress, summary=analysis is None) as bar:
            for spec in specs:
                bar.step(spec.key)
                figure = _draw_one(
                    spec, self._palette, self._stage, self.formats, serif=self.serif, plt=plt
                )
                if isinstance(figure, dict):
                    self._failed[spec.key] = figure
                    bar.done("not drawn")
                else:
                    self._figures[spec.key] = figure
                    bar.done()


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
    with ReportWriter(
        out, figure_formats=figure_formats, serif=serif, progress=progress, force=force
    ) as writer:
        return writer.finish(report)
