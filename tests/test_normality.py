"""Tests of evalstats.normality: reference values, hand formulas, null calibration, edge cases."""

from __future__ import annotations

import ast
import csv
import json
import math

import numpy as np
import polars as pl
import pytest
import scipy.stats as st
from numpy.testing import assert_allclose

from evalstats.errors import DegenerateDataWarning, ParameterError, SchemaError
from evalstats.normality import run_distribution, run_normality
from evalstats.simulate import observations, unit_table
from tests.conftest import needs_shared_data


def _stability_frame(groups: dict[str, list[float]]) -> pl.DataFrame:
    """A hand-built stability-table slice: one row per group with ``acc_per_run``."""
    return pl.DataFrame(
        {
            "model": [g.split("|")[0] for g in groups],
            "dataset": [g.split("|")[1] for g in groups],
            "variant": ["default"] * len(groups),
            "n_runs": [len(v) for v in groups.values()],
            "acc_per_run": list(groups.values()),
        },
        schema_overrides={"acc_per_run": pl.List(pl.Float64)},
    )


def _units_from(groups: dict[str, list[float]]) -> pl.DataFrame:
    rows = []
    for g, vals in groups.items():
        m, d = g.split("|")
        rows += [(m, d, "default", r, v, 100) for r, v in enumerate(vals)]
    return pl.DataFrame(
        rows, schema=["model", "dataset", "variant", "run", "score", "n_items"], orient="row"
    )


def _authors_groups(shared_data) -> dict[str, list[float]]:
    """The per-run accuracies ``correct_count_per_run / num_questions`` of the authors'
    strict_json_schema_stability_eval.csv (read in place from ../shared/data/llm-stability), as
    fixtures/reference/normality/make_reference.py computes them."""
    path = shared_data / "llm-stability" / "strict_json_schema_stability_eval.csv"
    with open(path, newline="") as f:
        return {
            f"{r['model']}|{r['task']}": [
                c / int(r["num_questions"]) for c in ast.literal_eval(r["correct_count_per_run"])
            ]
            for r in csv.DictReader(f)
        }


@pytest.fixture(params=[pytest.param("authors", marks=needs_shared_data), "sim"])
def reference(request, fixtures):
    """(groups, expected rows) of one input: the authors' run accuracies or seeded samples."""
    base = fixtures / "reference" / "normality"
    if request.param == "authors":
        groups = _authors_groups(request.getfixturevalue("shared_data"))
    else:
        with open(base / "input_sim.csv", newline="") as f:
            groups = {r["group"]: json.loads(r["values"]) for r in csv.DictReader(f)}
    expected = pl.read_csv(base / "expected.csv").filter(pl.col("group").is_in(list(groups)))
    assert expected.height == 4 * len(groups)  # every group of the input has its 4 tests
    return groups, expected


def _compare(out: pl.DataFrame, expected: pl.DataFrame) -> None:
    got = out.with_columns(group=pl.concat_str("model", pl.lit("|"), "dataset"))
    joined = expected.join(got, on=["group", "method"], how="left", suffix="_got")
    assert joined.height == expected.height == out.height
    assert_allclose(joined["statistic_got"], joined["statistic"], rtol=1e-12)
    assert_allclose(joined["pvalue_got"], joined["pvalue"], rtol=1e-12)
    assert (joined["n_got"] == joined["n"]).all()


def test_run_normality_matches_scipy_statsmodels_reference(reference):
    """fixtures/reference/normality/: statsmodels lilliefors/normal_ad, scipy shapiro/kstest.

    Inputs are the authors' five run accuracies per llm-stability task (derived at test time
    from ../shared/data) or the seeded samples of input_sim.csv; see PROVENANCE. Same libraries,
    so agreement is to rounding (rtol 1e-12).
    """
    groups, expected = reference
    out = run_normality(_stability_frame(groups), method="all")
    _compare(out, expected)


def test_unit_table_input_gives_the_same_as_stability_input(reference):
    groups, expected = reference
    out = run_normality(_units_from(groups), method="all")
    _compare(out, expected)


def test_statistics_match_textbook_formulas(rng):
    """KS D, Anderson-Darling A^2 written out by hand, independent of the libraries."""
    x = np.sort(rng.normal(0.7, 0.03, 25))
    n = x.size
    f = st.norm.cdf((x - x.mean()) / x.std(ddof=1))
    i = np.arange(1, n + 1)
    d = max(np.max(i / n - f), np.max(f - (i - 1) / n))
    a2 = -n - np.mean((2 * i - 1) * (np.log(f) + np.log1p(-f[::-1])))
    out = run_normality(_stability_frame({"m|d": x.tolist()}), method="all")
    stat = dict(zip(out["method"], out["statistic"]))
    assert_allclose(stat["lilliefors"], d, rtol=1e-12)
    assert_allclose(stat["ks_uncorrected"], d, rtol=1e-12)
    assert_allclose(stat["anderson"], a2, rtol=1e-10)


def test_shapiro_wilk_reproduces_the_1965_paper_example():
    """Shapiro & Wilk (1965), weights of 11 men: W = 0.79 (reported to 2 decimals)."""
    weights = [148, 154, 158, 160, 161, 162, 166, 170, 182, 195, 236]
    out = run_normality(_stability_frame({"m|d": [w / 1000 for w in weights]}), method="shapiro")
    assert abs(out["statistic"][0] - 0.79) < 0.005
    assert out["pvalue"][0] < 0.01


def test_lilliefors_pvalue_at_published_critical_value():
    """Lilliefors (1967) Table 1: for n = 20 the 5% critical value of D is 0.190.

    Build a sample whose D is just above it by bisection on a scale factor of one point.
    """
    base = st.norm.ppf((np.arange(1, 21) - 0.5) / 20)

    def dstat(k: float) -> float:
        x = base.copy()
        x[-1] *= k
        return run_normality(_stability_frame({"m|d": x.tolist()}))["statistic"][0]

    lo, hi = 1.0, 20.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if dstat(mid) < 0.190 else (lo, mid)
    x = base.copy()
    x[-1] *= hi
    p = run_normality(_stability_frame({"m|d": x.tolist()}))["pvalue"][0]
    assert 0.04 < p < 0.06  # table interpolation, and Lilliefors' own table is Monte Carlo


def _null_rejection(n: int, n_groups: int, seed: int, methods) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    vals = rng.normal(0.7, 0.02, size=(n_groups, n))
    frame = pl.DataFrame(
        {
            "model": [f"g{i:06d}" for i in range(n_groups)],
            "dataset": "d",
            "variant": "v",
            "acc_per_run": vals.tolist(),
        }
    )
    out = run_normality(frame, method=methods)
    return dict(
        out.group_by("method").agg((pl.col("pvalue") < 0.05).mean().alias("rate")).iter_rows()
    )


def test_lilliefors_rejects_at_alpha_and_plain_ks_does_not_under_normal_data():
    """Seeded null simulation (short): 800 normal samples of n = 20 at alpha = 0.05."""
    rate = _null_rejection(20, 800, seed=1, methods=["lilliefors", "ks"])
    se = math.sqrt(0.05 * 0.95 / 800)  # 0.0077
    assert abs(rate["lilliefors"] - 0.05) < 3.5 * se
    assert rate["ks_uncorrected"] < 0.01  # conservative: almost never rejects


@pytest.mark.slow
@pytest.mark.parametrize("n", [5, 10, 20, 50])
def test_null_rejection_rates_full(n):
    """Full version: 20,000 samples per n; Lilliefors, Shapiro-Wilk and Anderson-Darling hold
    their level within 4 Monte Carlo SEs (0.006); the plain KS rejects under 1%."""
    rate = _null_rejection(n, 20_000, seed=n, methods="all")
    se = math.sqrt(0.05 * 0.95 / 20_000)
    for m in ("lilliefors", "shapiro", "anderson"):
        assert abs(rate[m] - 0.05) < 4 * se, (m, rate[m])
    assert rate["ks_uncorrected"] < 0.01


def test_lilliefors_has_power_against_a_skewed_distribution():
    rng = np.random.default_rng(3)
    x = 0.5 + 0.02 * rng.exponential(size=200)
    out = run_normality(_stability_frame({"m|d": x.tolist()}), method=["lilliefors", "ks"])
    p = dict(zip(out["method"], out["pvalue"]))
    assert p["lilliefors"] < 0.01
    assert p["ks_uncorrected"] > p["lilliefors"]


def test_standard_normal_test_rejects_any_accuracies():
    """The paper's mistake: kstest(acc, 'norm') compares with N(0, 1), so it rejects even
    perfectly normal accuracies, while the Lilliefors test does not."""
    x = st.norm.ppf((np.arange(1, 31) - 0.5) / 30, loc=0.7, scale=0.02)
    assert st.kstest(x, "norm").pvalue < 1e-10
    assert run_normality(_stability_frame({"m|d": x.tolist()}))["pvalue"][0] > 0.5


def test_output_columns_and_order_are_fixed():
    groups = {"b|d1": [0.1, 0.2, 0.3, 0.5, 0.4], "a|d2": [0.5, 0.52, 0.49, 0.51, 0.55, 0.6]}
    one = run_normality(_stability_frame(groups))
    every = run_normality(_stability_frame(groups), method="all")
    assert (
        one.columns
        == every.columns
        == [
            "model",
            "dataset",
            "metric",
            "variant",
            "method",
            "statistic",
            "pvalue",
            "n",
            "mean",
            "sd",
            "low_power",
            "uncorrected",
        ]
    )
    assert one["model"].to_list() == ["a", "b"]
    assert every["method"].to_list()[:4] == ["lilliefors", "shapiro", "anderson", "ks_uncorrected"]
    assert every.filter(pl.col("uncorrected"))["method"].unique().to_list() == ["ks_uncorrected"]
    assert every["low_power"].all()
    assert not run_normality(_stability_frame(groups), low_power_n=5)["low_power"].any()
    assert_allclose(one["mean"], [np.mean(groups["a|d2"]), np.mean(groups["b|d1"])])
    assert_allclose(one["sd"], [np.std(groups["a|d2"], ddof=1), np.std(groups["b|d1"], ddof=1)])


def test_result_does_not_depend_on_row_order():
    units = unit_table(n_models=2, n_items=50, n_variants=2, n_runs=8, instability=0.3, seed=4)
    a = run_normality(units, method="all")
    b = run_normality(units.sample(fraction=1.0, shuffle=True, seed=1), method="all")
    assert a.equals(b)


def test_observation_table_is_aggregated_first():
    obs = observations(n_models=1, n_items=40, n_variants=1, n_runs=6, instability=0.4, seed=2)
    from_obs = run_normality(obs, method="shapiro")
    from_units = run_normality(
        unit_table(n_models=1, n_items=40, n_variants=1, n_runs=6, instability=0.4, seed=2),
        method="shapiro",
    )
    assert from_obs.equals(from_units)
    assert from_obs["n"][0] == 6


def test_by_coarser_grouping_pools_runs():
    units = unit_table(n_models=2, n_items=30, n_variants=3, n_runs=4, instability=0.3, seed=0)
    out = run_normality(units, by=("model",), method="shapiro")
    assert out.columns[0] == "model"
    assert out["n"].to_list() == [12, 12]


def test_constant_runs_give_nan_and_a_warning():
    with pytest.warns(DegenerateDataWarning, match="all 5 run values are equal"):
        out = run_normality(_stability_frame({"m|d": [0.5] * 5}), method="all")
    assert out["statistic"].is_nan().all() and out["pvalue"].is_nan().all()


def test_too_few_runs_for_lilliefors_warns_but_shapiro_runs():
    frame = _stability_frame({"m|d": [0.5, 0.6, 0.8]})
    with pytest.warns(DegenerateDataWarning, match="lilliefors test needs at least 4"):
        out = run_normality(frame, method=["lilliefors", "shapiro"])
    assert math.isnan(out["pvalue"][0])
    assert 0 <= out["pvalue"][1] <= 1


def test_bad_method_is_a_parameter_error():
    with pytest.raises(ParameterError, match="`method` must be 'all' or one of"):
        run_normality(_stability_frame({"m|d": [0.1, 0.2, 0.3, 0.4]}), method="jarque")


def test_missing_by_column_is_a_schema_error():
    with pytest.raises(SchemaError, match="`by` names 'task'"):
        run_normality(_stability_frame({"m|d": [0.1, 0.2, 0.3, 0.4]}), by=("model", "task"))


def test_acc_per_run_must_be_a_list():
    frame = pl.DataFrame({"model": ["m"], "dataset": ["d"], "variant": ["v"], "acc_per_run": [0.5]})
    with pytest.raises(SchemaError, match="'acc_per_run'.*must be a list"):
        run_normality(frame)


def test_run_distribution_matches_numpy(rng):
    vals = rng.normal(0.6, 0.03, 50)
    out = run_distribution(_stability_frame({"m|d": vals.tolist()}))
    row = out.row(0, named=True)
    assert row["n"] == 50 and row["values"] == vals.tolist()
    assert_allclose(
        [
            row["mean"],
            row["median"],
            row["sd"],
            row["min"],
            row["max"],
            row["q_low"],
            row["q_high"],
        ],
        [
            vals.mean(),
            np.median(vals),
            vals.std(ddof=1),
            vals.min(),
            vals.max(),
            *np.quantile(vals, [0.05, 0.95]),
        ],
        rtol=1e-12,
    )
    assert (row["q_low_level"], row["q_high_level"]) == (0.05, 0.95)


def test_run_distribution_rejects_bad_quantiles():
    with pytest.raises(ParameterError, match="`quantiles` must be two increasing levels"):
        run_distribution(_stability_frame({"m|d": [0.1, 0.2]}), quantiles=(0.95, 0.05))


def test_real_llm_stability_runs_reproduce_the_reference(fixtures, llm_stability_runs):
    """End to end on the authors' real runs (../shared/data/llm-stability, 7 tasks x 5 runs):
    loader -> stability_table -> run_normality equals the scipy/statsmodels values computed from
    the authors' own per-run counts (fixtures/reference/normality/expected.csv). rtol 1e-9: the
    accuracies are means of 0/1 scores here and count / n there (last-bit differences)."""
    from evalstats.io import read
    from evalstats.stability import stability_table

    obs, _ = read(llm_stability_runs)
    out = run_normality(stability_table(obs), method="all")
    assert out.height == 7 * 4 and (out["n"] == 5).all() and out["low_power"].all()
    got = out.with_columns(group=pl.concat_str("model", pl.lit("|"), "dataset"))
    expected = pl.read_csv(fixtures / "reference" / "normality" / "expected.csv")
    joined = got.join(expected, on=["group", "method"], how="inner", suffix="_ref")
    assert joined.height == out.height
    assert_allclose(joined["statistic"], joined["statistic_ref"], rtol=1e-9)
    assert_allclose(joined["pvalue"], joined["pvalue_ref"], rtol=1e-9)


def test_anderson_darling_is_finite_and_equals_scipy_when_most_values_are_tied_at_zero():
    """A² on the log scale as scipy.stats.anderson: 100 runs at accuracy 0 and one at 0.02.

    Evaluating Φ first rounds Φ(w) to 1 for the lone far value, and log(1 - 1) made A² inf
    (statsmodels' ``normal_ad``); scipy's logcdf/logsf path gives a finite value.
    """
    values = [0.0] * 100 + [0.02]
    out = run_normality(_stability_frame({"m|d": values}), method="anderson")
    a2 = st.anderson(np.array(values), dist="norm", method="interpolate").statistic
    got = out["statistic"].item()
    assert math.isfinite(got)
    assert_allclose(got, a2, rtol=1e-12)
    assert out["pvalue"].item() == 0.0  # adjusted A² > 13: p below 5e-31


def test_anderson_darling_equals_scipy_on_ordinary_samples(rng):
    for n in (5, 20, 60):
        x = rng.normal(0.6, 0.02, n)
        out = run_normality(_stability_frame({"m|d": x.tolist()}), method="anderson")
        a2 = st.anderson(x, dist="norm", method="interpolate").statistic
        assert_allclose(out["statistic"].item(), a2, rtol=1e-12)
