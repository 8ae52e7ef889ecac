"""audit_report in worker processes: the same report as one analysis after the other."""

from __future__ import annotations

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import evalstats
from evalstats.errors import ParameterError
from evalstats.report import audit_report
from evalstats.report._parallel import PARALLEL_MIN_ROWS, resolve_workers
from evalstats.simulate import observations

FAST = {
    "nstar": {"n_resamples": 200},
    "converge": {"n_orders": 20, "batch": 2},
    "correlation": {"n_resamples": 99},
    "anova": {"n_resamples": 99},
    "attribution": {"n_null": 2, "n_folds": 3},
    "compare": {"n_resamples": 99},
    "ranks": {"n_resamples": 100},
    "providers": {"n_resamples": 99},
}


def test_workers_give_the_same_report_as_one_process():
    """Two workers (spawned processes, results arriving in any order, correlation waiting for
    stability) against the sequential run: same analyses, skips, parameters, readings,
    warnings and every table bit for bit."""
    obs = observations(
        n_models=3,
        n_datasets=2,
        n_items=20,
        n_variants=8,
        n_runs=4,
        factors={"shots": {0: 0.0, 5: 0.1}, "cot": {False: 0.0, True: 0.05}},
        instability=0.1,
        seed=1,
    )
    kw = dict(default={"shots": 0, "cot": False}, options=FAST, seed=3)
    one = audit_report(obs, workers=1, **kw)
    two = audit_report(obs, workers=2, **kw)
    assert [a.key for a in two.analyses] == [a.key for a in one.analyses]
    assert "correlation" in [a.key for a in two.analyses]
    assert two.skipped == one.skipped
    for a, b in zip(one.analyses, two.analyses):
        assert (b.params, b.values, b.reading, b.warnings) == (
            a.params,
            a.values,
            a.reading,
            a.warnings,
        ), a.key
        assert list(b.tables) == list(a.tables)
        for name, table in a.tables.items():
            assert_frame_equal(b.tables[name], table, check_exact=True)
    assert two.parameters == one.parameters  # the number of workers is not a parameter


def test_auto_workers_are_one_for_a_small_table():
    assert resolve_workers("auto", PARALLEL_MIN_ROWS - 1) == 1
    assert resolve_workers("auto", PARALLEL_MIN_ROWS) >= 1
    assert resolve_workers(3, 10) == 3


@pytest.mark.parametrize("bad", [0, -1, 1.5, "two", True])
def test_workers_must_be_a_positive_integer_or_auto(bad):
    obs = observations(n_models=2, n_items=10, n_variants=4, seed=0)
    with pytest.raises(ParameterError, match="`workers` must be a positive integer or 'auto'"):
        audit_report(pl.DataFrame(obs), workers=bad)


def test_cli_workers_zero_is_a_usage_error(tmp_path, capsys):
    from evalstats.cli import main

    path = tmp_path / "obs.csv"
    observations(n_models=2, n_items=10, n_variants=4, seed=0).write_csv(path)
    with pytest.raises(SystemExit) as exc:
        main(["report", str(path), "--workers", "0", "--out", str(tmp_path / "r")])
    assert exc.value.code == 2
    assert "--workers: expected a positive integer or 'auto', got '0'" in capsys.readouterr().err


def test_figures_drawn_in_workers_are_the_same_files(tmp_path):
    """Two figure workers against one: the same files, results.json and report.md byte for
    byte, and the same PNG pixels (the report embeds them)."""
    obs = observations(
        n_models=3,
        n_items=20,
        n_variants=6,
        n_runs=3,
        factors={"shots": {0: 0.0, 5: 0.1}},
        instability=0.1,
        seed=2,
    )
    path = tmp_path / "obs.parquet"
    obs.write_parquet(path)
    read, ingest = evalstats.read(path)  # the loader's report rides along, as from the CLI
    rep = audit_report(read, ingest=ingest, options=FAST, seed=1)
    one = rep.write(tmp_path / "one", figure_formats=["png"], workers=1).parent
    two = rep.write(tmp_path / "two", figure_formats=["png"], workers=2).parent

    def files(root):
        return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())

    assert files(one) == files(two)
    assert len([f for f in files(one) if f.startswith("figures/")]) >= 3
    for name in ("results.json", "report.md"):
        assert (one / name).read_bytes() == (two / name).read_bytes(), name
    for f in files(one):
        if f.endswith(".png"):
            assert (one / f).read_bytes() == (two / f).read_bytes(), f


def test_workers_take_the_variant_factors_of_the_call():
    """``variant_factors`` reaches the worker processes: variants that differ only in a
    decoding setting are prompt variants on request ('all'), and two workers then give the same
    moments as one process (by default the report skips moments on them)."""
    obs = observations(
        n_models=2,
        n_items=20,
        n_variants=6,
        factors={"temperature": {0.0: 0.0, 0.7: 0.05}},
        seed=2,
    )
    kw = dict(options=FAST, seed=3, skip=("nstar", "converge", "compare", "ranks"))
    held = audit_report(obs, workers=1, **kw)
    assert "moments" in [s.key for s in held.skipped]
    one = audit_report(obs, workers=1, variant_factors="all", **kw)
    two = audit_report(obs, workers=2, variant_factors="all", **kw)
    m_one, m_two = (r["moments"].tables["moments"] for r in (one, two))
    assert "temperature" not in m_one.columns
    assert_frame_equal(m_two, m_one, check_exact=True)
