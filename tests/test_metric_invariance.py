"""Issue 14's property tests: the metric convention changes no number on [0, 1] scores, and
scaling a metric by 100 scales what it should and leaves p-values and n* alone.

The reference frames in ``fixtures/reference/metric_invariance/`` were written by the code before
the metric convention (see its PROVENANCE) from the cases in ``cases.py``.
"""

from __future__ import annotations

import importlib.util
import warnings
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


# --- scaling a metric by 100 ---------------------------------------------------------------


@pytest.fixture(scope="module")
def scaled_pair():
    """The same observations as an accuracy on [0, 1] and as a percentage on [0, 100]."""
    from evalstats.schema import MetricInfo, with_metric

    factors = {"template": {"a": 0.0, "b": -0.06, "c": 0.04}, "shots": {0: 0.0, 5: 0.05}}
    obs = evalstats.simulate.observations(
        n_models=3, n_items=60, n_variants=12, n_runs=2, factors=factors, seed=21
    )
    unit = with_metric(obs, MetricInfo("acc", 0, 1))
    pct = with_metric(obs.with_columns(pl.col("score") * 100), MetricInfo("acc_pct", 0, 100))
    return unit, pct


def _close(a, b, *, scale=1.0, rtol=1e-9):
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    assert_allclose(b, a * scale, rtol=rtol, atol=1e-12 * abs(scale), equal_nan=True)


def test_scaling_by_100_scales_moments_and_leaves_shape_statistics(scaled_pair):
    unit, pct = scaled_pair
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a, b = evalstats.prompt_spread(unit), evalstats.prompt_spread(pct)
    for col in ("mean", "std", "min", "q05", "median", "q95", "max", "spread", "max_p", "avg_p"):
        _close(a[col], b[col], scale=100)
    for col in ("variance", "variance_unbiased"):
        _close(a[col], b[col], scale=1e4)
    for col in ("skewness", "kurtosis", "n_variants"):
        _close(a[col], b[col])


def test_scaling_by_100_leaves_nstar_unchanged_with_epsilon_scaled(scaled_pair):
    unit, pct = scaled_pair
    units_a = evalstats.to_units(unit).collect()
    units_b = evalstats.to_units(pct).collect()
    for method in ("pool", "bootstrap", "analytic"):
        kw = {"n_resamples": 300, "method": method, "seed": 5}
        # epsilon in the moment's units: x100 for the mean, x100**2 for the variance
        for moment, eps in (("mean", 0.01), ("variance", 0.0005)):
            scale = 100 if moment == "mean" else 1e4
            a = evalstats.required_sample_size(units_a, epsilon=eps, moments=moment, **kw)
            b = evalstats.required_sample_size(units_b, epsilon=eps * scale, moments=moment, **kw)
            assert a["n_star"].to_list() == b["n_star"].to_list(), (method, moment)
        # a relative epsilon (a share of the declared range) scales both moments by itself
        a = evalstats.required_sample_size(units_a, relative_epsilon=0.01, **kw)
        b = evalstats.required_sample_size(units_b, relative_epsilon=0.01, **kw)
        assert a["n_star"].to_list() == b["n_star"].to_list(), method
        _close(
            a.filter(pl.col("moment") == "mean")["epsilon"],
            b.filter(pl.col("moment") == "mean")["epsilon"],
            scale=100,
        )
    # and the mean's default 0.01 is exactly the relative rule's value on [0, 1]; the
    # variance's default is on the sd scale, 2 x sd x 0.01 (issue 30)
    d = evalstats.required_sample_size(units_a, n_resamples=300, seed=5)
    r = evalstats.required_sample_size(units_a, relative_epsilon=0.01, n_resamples=300, seed=5)
    mean = pl.col("moment") == "mean"
    assert d.filter(mean)["n_star"].to_list() == r.filter(mean)["n_star"].to_list()
    sd = units_a.group_by("model", "dataset", "metric").agg(pl.col("score").std(ddof=0))
    var = d.filter(pl.col("moment") == "variance").join(sd, on=["model", "dataset", "metric"])
    _close(var["epsilon"], 2 * 0.01 * var["score"])
    with pytest.raises(evalstats.MetricScaleError, match="'acc_pct' is not on \\[0, 1\\]"):
        evalstats.required_sample_size(units_b)


def test_scaling_by_100_scales_intervals_and_differences_and_keeps_pvalues(scaled_pair):
    unit, pct = scaled_pair
    for method in ("t", "percentile"):
        a = evalstats.intervals(unit, method=method, n_resamples=500, seed=1)
        b = evalstats.intervals(pct, method=method, n_resamples=500, seed=1)
        for col in ("mean", "ci_low", "ci_high"):
            _close(a[col], b[col], scale=100)
    # BCa's bias correction counts bootstrap means below the observed one; with scores on a
    # grid many tie, and x100 (inexact in binary) breaks ties differently. x128 is exact.
    exact = unit.with_columns(pl.col("score") * 128, pl.lit(128.0).alias("metric_high"))
    a = evalstats.intervals(unit, method="bootstrap", n_resamples=500, seed=1)
    b = evalstats.intervals(exact, method="bootstrap", n_resamples=500, seed=1)
    for col in ("mean", "ci_low", "ci_high"):
        _close(a[col], b[col], scale=128)
    a = evalstats.compare_models(unit, paired_on="variants", n_resamples=999, seed=2)
    b = evalstats.compare_models(pct, paired_on="variants", n_resamples=999, seed=2)
    for col in ("difference", "ci_low", "ci_high"):
        _close(a[col], b[col], scale=100)
    for col in ("pvalue", "pvalue_corrected"):
        _close(a[col], b[col])
    ra = evalstats.rank_intervals(unit, n_resamples=300, seed=3)
    rb = evalstats.rank_intervals(pct, n_resamples=300, seed=3)
    for col in ("rank", "rank_low", "rank_high", "p_best"):
        _close(ra[col], rb[col])
    _close(ra["score"], rb["score"], scale=100)


def test_scaling_by_100_keeps_anova_and_normality_pvalues(scaled_pair):
    unit, pct = scaled_pair
    a = evalstats.factor_anova(unit, factors=["template", "shots"], n_resamples=300, seed=4)
    b = evalstats.factor_anova(pct, factors=["template", "shots"], n_resamples=300, seed=4)
    for col in ("statistic", "pvalue", "eta_sq", "partial_eta_sq"):
        _close(a.table[col], b.table[col], rtol=1e-7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        na = evalstats.run_normality(unit, method="all")
        nb = evalstats.run_normality(pct, method="all")
    for col in ("statistic", "pvalue"):
        _close(na[col], nb[col], rtol=1e-7)
    _close(na["mean"], nb["mean"], scale=100)
    _close(na["sd"], nb["sd"], scale=100)
