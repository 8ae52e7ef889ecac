"""Writing a report as its analyses finish: tables at once, figures in workers, the pages last.

:class:`ReportWriter` stages every file in a hidden folder inside the report folder. Each
finished analysis (:meth:`ReportWriter.add`) has its tables written at once and its figures
drawn, in worker processes when there are several cores (so figures are drawn while the longer
analyses still run); :meth:`ReportWriter.finish` numbers the figures and tables in report order,
writes ``results.json``, ``report.md`` and ``report.html``, and moves everything into place,
``report.html`` last. An interrupted run leaves the earlier report as it was and no page that
looks complete. ``evalstats report`` writes through it as the analyses run;
:func:`write_report` (:meth:`evalstats.AuditReport.write`) feeds it a finished report.

Every figure is the same call on the same data wherever it is drawn, so the files do not depend
on the number of workers or the order in which analyses and figures finish.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from evalstats.errors import OutputError
from evalstats.report._model import ReportContents
from evalstats.report._staging import (
    check_output,
    make_staging,
    move_into_place,
    remove_leftovers,
)
from evalstats.report._write import (
    check_figure_formats,
    draw_one,
    number_tables,
    results_document,
    write_tables_of,
)

if TYPE_CHECKING:
    import concurrent.futures as cf

    import polars as pl

    from evalstats.report._model import (
        AnalysisResult,
        DataSummary,
        RenderedFigure,
        RenderedTable,
    )

__all__ = ["ReportWriter", "write_report"]


def _one(result: AnalysisResult, data: DataSummary, units: pl.DataFrame) -> ReportContents:
    """A report holding one analysis: what its figure specs read."""
    return ReportContents((result,), (), data, None, {}, {}, {}, units)


# --- figure workers --------------------------------------------------------------------------

#: Added niceness of the figure workers (lower scheduling priority than the analyses).
FIGURE_NICENESS = 10

_WORKER: dict[str, Any] = {}


def _worker_init(
    data: DataSummary,
    units: pl.DataFrame,
    out: Path,
    formats: tuple[str, ...],
    serif: bool,
    parent: dict[str, Any] | None = None,
) -> None:
    import os

    from evalstats._procs import adopt
    from evalstats.plots._style import require_plotting

    adopt(parent)
    # figures yield the cores to the analyses still running (the report waits for the last
    # analysis, and for its figures after it); they take the idle time in between
    try:
        os.nice(FIGURE_NICENESS)
    except (AttributeError, OSError):  # pragma: no cover - not on a POSIX system
        pass

    plt, _ = require_plotting()
    _WORKER.update(data=data, units=units, out=out, formats=formats, serif=serif, plt=plt)


def _palette(data: DataSummary, units: pl.DataFrame) -> dict[str, Any]:
    """One colour per model; it reads only the data summary and the units, never an analysis."""
    from evalstats.report._palette import report_palette

    return report_palette(ReportContents((), (), data, None, {}, {}, {}, units))


def _worker_draw(result: AnalysisResult, index: int) -> tuple[str, Any, float]:
    """Draw figure ``index`` of ``result`` into the staging folder; its key, figure, seconds."""
    from evalstats._reproducible import reproducible
    from evalstats.report._figures import figure_specs

    w = _WORKER
    start = time.perf_counter()
    with reproducible():
        if "palette" not in w:
            w["palette"] = _palette(w["data"], w["units"])
        spec = figure_specs(_one(result, w["data"], w["units"]))[index]
        figure = draw_one(
            spec, w["palette"], w["out"], w["formats"], serif=w["serif"], plt=w["plt"]
        )
    return spec.key, figure, time.perf_counter() - start


def _picklable(*objects: Any) -> bool:
    import pickle

    try:
        pickle.dumps(objects)
    except Exception:  # noqa: BLE001 - any object a result holds that cannot be sent
        return False
    return True


# --- the writer ------------------------------------------------------------------------------


class ReportWriter:
    """Write a report into ``out`` as its analyses finish; :meth:`finish` ends it.

    Use it as a context manager: leaving the ``with`` block without :meth:`finish` (an error,
    an interrupt) stops the figure workers and removes the staging folder, leaving ``out`` as
    it was.

    Parameters
    ----------
    out : Path
        The report folder (see :func:`~evalstats.report._staging.check_output`).
    figure_formats, serif, progress, force
        As for :meth:`evalstats.AuditReport.write`.
    workers : int, default 1
        Processes that draw the figures; 1 draws them here, one after the other.
    """

    def __init__(
        self,
        out: Path,
        *,
        figure_formats: Sequence[str] = ("png", "pdf"),
        serif: bool = False,
        progress: bool | str = False,
        force: bool = False,
        workers: int = 1,
    ) -> None:
        self.formats = check_figure_formats(figure_formats)
        self.out = Path(out)
        check_output(self.out, force=force)
        self.serif = serif
        self.progress = progress
        self.workers = workers
        self.staging: Path | None = None
        self._tables: dict[str, list[RenderedTable]] = {}
        self._drawn: dict[str, Any] = {}  # figure key -> RenderedFigure or the reason dict
        self._futures: list[cf.Future] = []
        self._pool: cf.ProcessPoolExecutor | None = None
        self._bar: Any = None
        self._lock = threading.Lock()
        self._plotting: tuple[Any, dict[str, Any]] | None = None

    # context ----------------------------------------------------------------------------------

    def __enter__(self) -> ReportWriter:
        try:
            self.out.mkdir(parents=True, exist_ok=True)
            remove_leftovers(self.out)  # staging folders of runs killed before
            self.staging = make_staging(self.out)
            (self.staging / "figures").mkdir()
        except OSError as exc:
            if self.staging is not None:
                shutil.rmtree(self.staging, ignore_errors=True)
                self.staging = None
            raise OutputError(
                f"cannot write the report into {str(self.out)!r}: {exc.strerror}."
            ) from None
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._pool is not None:
            if exc_type is None:
                self._pool.shutdown(wait=True, cancel_futures=True)
            else:  # an error or Ctrl-C: the figures still drawing are not waited for
                from evalstats._procs import stop_pool

                stop_pool(self._pool)
            self._pool = None
        if self._bar is not None:
            self._bar.__exit__(exc_type, exc, tb)
            self._bar = None
        if self.staging is not None:
            shutil.rmtree(self.staging, ignore_errors=True)
            self.staging = None

    @property
    def _stage(self) -> Path:
        if self.staging is None:
            raise RuntimeError("ReportWriter is used outside its `with` block")
        return self.staging

    # per analysis -----------------------------------------------------------------------------

    def add(self, result: AnalysisResult, report: ReportContents) -> None:
        """Write the tables of ``result`` now and draw (or start drawing) its figures.

        ``report``: the report so far (its data summary and units are what figures read
        besides the analysis); :func:`evalstats.audit_report` passes both to ``on_result``.
        """
        from evalstats.report._figures import figure_specs

        data, units = report.data, report.units
        with self._writing():
            self._tables[result.key] = write_tables_of(result, self._stage)
        specs = figure_specs(_one(result, data, units)) if self.formats else []
        if not specs:
            return
        self._progress().grow(len(specs))
        if self.workers > 1 and _picklable(result, data, units):
            from evalstats._procs import deferred_signals

            with deferred_signals():  # no worker half-started by a Ctrl-C
                pool = self._start_pool(data, units)
                for i in range(len(specs)):
                    future = pool.submit(_worker_draw, result, i)
                    future.add_done_callback(self._collect)
                    self._futures.append(future)
            return
        plt, palette = self._here(data, units)
        for spec in specs:
            start = time.perf_counter()
            with self._writing():
                figure = draw_one(
                    spec, palette, self._stage, self.formats, serif=self.serif, plt=plt
                )
            self._record(spec.key, figure, time.perf_counter() - start)

    def _writing(self) -> AbstractContextManager[None]:
        """A failure to write into the staging folder (a full disk) as one OutputError."""
        from evalstats._output import writing

        return writing(self.out, what="cannot write the report into")

    def _here(self, data: DataSummary, units: pl.DataFrame) -> tuple[Any, dict[str, Any]]:
        """Matplotlib and the palette for drawing in this process (made once)."""
        if self._plotting is None:
            from evalstats.plots._style import require_plotting

            plt, _ = require_plotting()
            self._plotting = (plt, _palette(data, units))
        return self._plotting

    def _start_pool(self, data: DataSummary, units: pl.DataFrame) -> cf.ProcessPoolExecutor:
        if self._pool is None:
            import concurrent.futures as cf

            from evalstats._procs import parent_state, worker_context

            # forked from the server that has matplotlib imported, never from this process
            # (polars' thread pool does not survive a fork)
            self._pool = cf.ProcessPoolExecutor(
                max_workers=self.workers,
                mp_context=worker_context(figures=True),
                initializer=_worker_init,
                initargs=(data, units, self._stage, self.formats, self.serif, parent_state()),
            )
        return self._pool

    def _collect(self, future: cf.Future) -> None:
        if future.cancelled() or future.exception() is not None:
            return  # raised by finish
        key, figure, seconds = future.result()
        self._record(key, figure, seconds)

    def _record(self, key: str, figure: Any, seconds: float) -> None:
        with self._lock:
            if key in self._drawn:  # collected by finish before its callback ran
                return
            self._drawn[key] = figure
            self._progress().finished(
                key, seconds, "not drawn" if isinstance(figure, dict) else None
            )

    def _progress(self) -> Any:
        if self._bar is None:
            from evalstats.report._progress import Progress

            self._bar = Progress("figures", 0, self.progress).__enter__()
        return self._bar

    # the end ----------------------------------------------------------------------------------

    def finish(self, report: ReportContents) -> Path:
        """Wait for the figures, write the pages and move the report into place.

        ``report`` holds every analysis added (the same results). Returns the path of
        ``report.html``.
        """
        import concurrent.futures as cf

        from evalstats.report._figures import figure_specs
        from evalstats.report._render import render_html, render_markdown
        from evalstats.report._tables import dumps_document

        for res in report.analyses:  # analyses the caller did not add as they finished
            if res.key not in self._tables:
                self.add(res, report)
        with self._writing():
            for future in cf.as_completed(self._futures):
                self._record(*future.result())  # a worker's error is raised here
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None
        figures: list[RenderedFigure] = []
        failed: list[dict[str, str]] = []
        for spec in figure_specs(report) if self.formats else []:  # numbered in report order
            figure = self._drawn[spec.key]
            if isinstance(figure, dict):
                failed.append(figure)
            else:
                figures.append(replace(figure, number=len(figures) + 1))
        tables = number_tables([t for res in report.analyses for t in self._tables[res.key]])
        stage = self._stage
        with self._writing():
            doc = results_document(report, figures, tables, failed)
            (stage / "results.json").write_text(dumps_document(doc), encoding="utf-8")
            (stage / "report.md").write_text(
                render_markdown(report, figures, tables), encoding="utf-8"
            )
            (stage / "report.html").write_text(
                render_html(report, figures, tables, failed), encoding="utf-8"
            )
            move_into_place(stage, self.out)
        return self.out / "report.html"


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
    """Write every file of a finished report into ``out``; return the path of ``report.html``.

    Everything is first written into a hidden staging folder inside ``out`` and moved into place
    at the end, ``report.html`` last: an interrupted run leaves the earlier report as it was (and
    no page that looks complete), and a new report replaces every file of the earlier one.
    """
    with ReportWriter(
        Path(out),
        figure_formats=figure_formats,
        serif=serif,
        progress=progress,
        force=force,
        workers=workers,
    ) as writer:
        return writer.finish(report)
