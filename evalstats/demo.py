"""The bundled demo: simulated data with planted effects, run through the full audit report."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from evalstats.report import AuditReport

__all__ = ["DEMO_DEFAULT", "DEMO_FILE", "demo_path", "demo_report", "run_demo"]

#: Where the demo data lives in a source checkout.
DEMO_FILE = (
    Path(__file__).resolve().parent.parent / "fixtures" / "demo" / "demo_observations.parquet"
)

#: The demo's default configuration (it flatters ``m1``; see
#: :data:`evalstats.simulate.DEMO_TRUTH`), audited by the report.
DEMO_DEFAULT: dict[str, Any] = {"template": "plain", "shots": 0, "cot": False}


def demo_path(cache_dir: Path | None = None) -> Path:
    """Path of the demo observation file.

    In a source checkout this is ``fixtures/demo/demo_observations.parquet``. An installed
    package without the fixtures regenerates the same file (same seed, same bytes of data) from
    :func:`evalstats.simulate.demo_observations` into ``cache_dir``.
    """
    if DEMO_FILE.exists():
        return DEMO_FILE
    from evalstats.simulate import demo_observations

    cache_dir = Path(cache_dir or Path.cwd() / "evalstats-demo")
    cache_dir.mkdir(parents=True, exist_ok=True)
    path = cache_dir / "demo_observations.parquet"
    if not path.exists():
        demo_observations().write_parquet(path)
    return path


def run_demo(
    out: Path,
    *,
    seed: int = 0,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    skip: Sequence[str] = (),
    figure_formats: Sequence[str] = ("png", "pdf"),
    serif: bool = False,
    progress: bool = False,
    stream: TextIO | None = None,
) -> Path:
    """Run the audit report on the demo data into the folder ``out``; return ``report.html``.

    Parameters
    ----------
    out : Path
        Output folder (created if needed).
    seed, options, skip, progress
        As in :func:`evalstats.report.audit_report`.
    figure_formats, serif
        As in :meth:`evalstats.report.AuditReport.write`.
    stream : file, optional
        Where the ingest summary goes (default: stderr); None keeps it.

    Returns
    -------
    pathlib.Path
        ``out / "report.html"``.
    """
    return demo_report(
        out,
        seed=seed,
        options=options,
        skip=skip,
        figure_formats=figure_formats,
        serif=serif,
        progress=progress,
        stream=stream,
    )[1]


def demo_report(
    out: Path,
    *,
    seed: int = 0,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    skip: Sequence[str] = (),
    figure_formats: Sequence[str] = ("png", "pdf"),
    serif: bool = False,
    progress: bool = False,
    stream: TextIO | None = None,
) -> tuple[AuditReport, Path]:
    """:func:`run_demo`, returning the report object too (``evalstats demo --json``).

    Returns
    -------
    tuple
        ``(report, out / "report.html")``.
    """
    from evalstats.io import read_table
    from evalstats.report import audit_report

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = demo_path(out)
    obs, ingest = read_table(path)
    if stream is not None:
        print(ingest.summary(), file=stream)
    report = audit_report(
        obs,
        ingest=ingest,
        source={"path": str(path), "format": ingest.format},
        default=DEMO_DEFAULT,
        seed=seed,
        options=options,
        skip=skip,
        progress=progress,
    )
    # force: the folder may hold the cached demo data next to the report
    html = report.write(
        out, figure_formats=figure_formats, serif=serif, progress=progress, force=True
    )
    return report, html
