"""One fast run of ``evalstats demo`` shared by the report tests (files, browser, CLI parity)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

#: Small resample counts so the demo report takes seconds; the parity test passes the same
#: parameters to the individual commands (they are recorded in results.json).
FAST_OPTIONS = (
    "nstar.n_resamples=500",
    "converge.n_orders=50",
    "correlation.n_resamples=199",
    "anova.n_resamples=200",
    "attribution.n_null=3",
    "compare.n_resamples=199",
    "ranks.n_resamples=200",
    "providers.n_resamples=199",
)


def fast_args() -> list[str]:
    """``--option`` arguments for :data:`FAST_OPTIONS`."""
    return [a for o in FAST_OPTIONS for a in ("--option", o)]


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory) -> SimpleNamespace:
    """``evalstats demo --quiet`` (PNG, PDF and SVG figures): ``out``, ``code``, ``stdout``, ``stderr``."""
    from evalstats.cli import main

    out = tmp_path_factory.mktemp("demo") / "report"
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(
            ["demo", "--out", str(out), "--quiet", "--figure-format", "png,pdf,svg", *fast_args()]
        )
    return SimpleNamespace(out=out, code=code, stdout=stdout.getvalue(), stderr=stderr.getvalue())


@pytest.fixture(scope="session")
def demo_results(demo_run) -> dict:
    """The demo report's results.json."""
    return json.loads((demo_run.out / "results.json").read_text())


@pytest.fixture
def schema() -> dict:
    """The published JSON Schema of results.json."""
    root = Path(__file__).resolve().parents[2]
    return json.loads((root / "docs" / "report.schema.json").read_text())
