"""Issue 14's property tests: the metric convention changes no number on [0, 1] scores, and
scaling a metric by 100 scales what it should and leaves p-values and n* alone.

The reference frames in ``fixtures/reference/metric_invariance/`` were written by the code before
the metric convention (see its PROVENANCE) from the cases in ``cases.py``.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from numpy.testing import assert_allclose

import evalstats
import evalstats.simulate

REF = Path(__file__).resolve().parents[1] / "fixtures" / "reference" / "metric_invariance"


@pytest.fixture(scope="module")
def cases_module():
    spec = importlib.util.spec_from_file_location("cases", REF / "cases.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def current(cases_module):
    return cases_module.cases(evalstats)


def _assert_same(name: str, got: pl.DataFrame, want: pl.DataFrame) -> None:
    assert got.height == want.height, name
    for col in want.columns:
        assert col in got.columns, f"{name}: column {col!r} disappeared"
        a, b = got[col], want[col]
        if b.dtype.is_numeric() and a.dtype.is_numeric():
            x = a.cast(pl.Float64).to_numpy()
            y = b.cast(pl.Float64).to_numpy()
            assert_allclose(x, y, rtol=1e-12, atol=0, equal_nan=True, err_msg=f"{name}.{col}")
        elif isinstance(b.dtype, pl.List) and b.dtype.inner.is_numeric():
            for u, v in zip(a.to_list(), b.to_list()):
                assert_allclose(
                    np.asarray(u, dtype=float),
                    np.asarray(v, dtype=float),
                    rtol=1e-12,
                    equal_nan=True,
                    err_msg=f"{name}.{col}",
                )
        else:
            assert a.to_list() == b.to_list(), f"{name}.{col}"


def test_every_reference_case_is_frozen(current):
    frozen = {p.stem for p in REF.glob("*.parquet")}
    assert frozen == set(current), (
        "cases.py and the frozen references disagree; rerun make_reference.py"
    )


def test_numbers_on_unit_interval_scores_are_unchanged_by_the_metric_convention(current):
    """Every analysis, same numbers as before the change to 1e-12 (new columns allowed)."""
    for name, got in current.items():
        want = pl.read_parquet(REF / f"{name}.parquet")
        _assert_same(name, got, want)
