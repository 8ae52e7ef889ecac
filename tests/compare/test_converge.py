"""Sequential stopping rule replayed on recorded configurations."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

from evalstats.compare import convergence, stopping_sizes
from evalstats.errors import InsufficientDataError, ParameterError
from evalstats.simulate import unit_table


def _naive(x, order, batch, mean_tol, ci_width):
    from scipy import stats

    prev = None
    for n in range(batch, x.size + 1, batch):
        s = x[order[:n]]
        m = s.mean()
        w = 2 * stats.t.ppf(0.975, n - 1) * s.std(ddof=1) / np.sqrt(n)
        if prev is not None and abs(m - prev) < mean_tol and w < ci_width:
            return n, m
        prev = m
    return x.size, x.mean()


def test_vectorised_rule_matches_a_naive_loop():
    x = np.random.default_rng(1).normal(0.6, 0.05, 120)
    n_stop, stopped, reached = stopping_sizes(
        x, batch=10, mean_tol=0.004, ci_width=0.03, n_orders=30, seed=3
    )
    rng = np.random.default_rng(3)
    orders = np.argsort(rng.random((30, 120)), axis=1)
    for j in range(30):
        n, m = _naive(x, orders[j], 10, 0.004, 0.03)
        assert n_stop[j] == n
        assert_allclose(stopped[j], m, rtol=1e-12)


def test_tighter_rule_stops_later_and_errs_less():
    units = unit_table(n_models=1, n_items=60, n_variants=200, prompt_sd=0.05, seed=0)
    loose = convergence(units, mean_tol=0.01, ci_width=0.1, n_orders=100).row(0, named=True)
    tight = convergence(units, mean_tol=0.002, ci_width=0.03, n_orders=100).row(0, named=True)
    assert tight["n_stop_mean"] > loose["n_stop_mean"]
    assert tight["error_mean"] < loose["error_mean"]
    assert loose["n_available"] == 200 and 0 <= loose["share_reached"] <= 1


def test_unreachable_rule_stops_at_the_end_with_no_error():
    units = unit_table(n_models=1, n_items=20, n_variants=40, seed=0)
    row = convergence(units, ci_width=1e-6, n_orders=20).row(0, named=True)
    assert row["share_reached"] == 0.0 and row["n_stop_median"] == 40
    assert row["error_max"] == pytest.approx(0.0, abs=1e-15)


def test_errors():
    units = unit_table(n_models=1, n_items=20, n_variants=15, seed=0)
    with pytest.raises(InsufficientDataError, match="at least 2 batches"):
        convergence(units)
    with pytest.raises(ParameterError, match="`mean_tol` must be > 0"):
        convergence(units, batch=5, mean_tol=0)
