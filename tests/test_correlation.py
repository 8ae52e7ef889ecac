"""Tests of evalstats.correlation: scipy reference values, permutation p-values, edge cases."""

from __future__ import annotations

import ast
import math

import numpy as np
import polars as pl
import pytest
import scipy.stats as st
from hypothesis import given
from hypothesis import strategies as st_h
from numpy.testing import assert_allclose

from evalstats.correlation import DEFAULT_COLUMNS, correlation_matrix, spearman_matrix
from evalstats.errors import DegenerateDataWarning, ParameterError, SchemaError
from evalstats.stability import stability_table

AUTHOR_COLUMNS = ["tar_a", "tar_r", "spread", "acc_mean", "best_possible", "worst_possible"]


@pytest.fixture
def reference(fixtures):
    base = fixtures / "reference" / "correlation"
    return {
        "sim": pl.read_csv(base / "input_sim.csv"),
        "expected": pl.read_csv(base / "expected.csv"),
    }


def _pct(text: str) -> float:
    return float(text.rstrip("%")) / 100


@pytest.fixture
def authors_table(shared_data) -> pl.DataFrame:
    """One row per task of the authors' strict_json_schema_stability_eval.csv (read in place from
    ../shared/data/llm-stability), as fixtures/reference/correlation/make_reference.py builds it:
    percentages as fractions, ``acc_mean = mean(correct_count_per_run) / num_questions``."""
    ref = pl.read_csv(shared_data / "llm-stability" / "strict_json_schema_stability_eval.csv")
    rows = []
    for r in ref.iter_rows(named=True):
        counts = ast.literal_eval(r["correct_count_per_run"])
        rows.append(
            {
                "model": r["model"],
                "dataset": r["task"],
                "tar_a": _pct(r["TARa"]),
                "tar_r": _pct(r["TARr"]),
                "spread": _pct(r["spread"]),
                "acc_mean": float(np.mean(counts)) / int(r["num_questions"]),
                "best_possible": _pct(r["best_possible_accuracy"]),
                "worst_possible": _pct(r["worst_possible_accuracy"]),
            }
        )
    return pl.DataFrame(rows)


@pytest.mark.parametrize("method", ["spearman", "kendall", "pearson"])
def test_matches_scipy_on_the_authors_stability_table(authors_table, reference, method):
    """fixtures/reference/correlation/: scipy spearmanr/kendalltau/pearsonr and the exact
    permutation_test (7 tasks, 7! = 5040 pairings) on the authors' metrics; see PROVENANCE.
    Same formulas, so agreement is to rounding (rtol 1e-10)."""
    out = correlation_matrix(authors_table, columns=AUTHOR_COLUMNS, method=method)
    exp = reference["expected"].filter(pl.col("input") == "authors", pl.col("method") == method)
    assert out.select("x", "y").rows() == exp.select("x", "y").rows()
    assert_allclose(out["statistic"], exp["statistic"], rtol=1e-10, atol=1e-14)
    assert_allclose(out["pvalue"], exp["pvalue"], rtol=1e-8, atol=1e-14)
    assert_allclose(out["pvalue_perm"], exp["pvalue_perm"], rtol=1e-10)
    assert out["perm_exact"].all()
    assert (out["n"] == 7).all()


@pytest.mark.parametrize("method", ["spearman", "kendall", "pearson"])
def test_monte_carlo_permutation_equals_scipy_with_the_same_seed(reference, method):
    """30 rows with ties: the Monte Carlo permutation p-value equals scipy's
    permutation_test(rng=0, n_resamples=9999) exactly, as the same pairings are drawn."""
    out = correlation_matrix(reference["sim"], method=method, seed=0)
    exp = reference["expected"].filter(pl.col("input") == "sim", pl.col("method") == method)
    assert out.select("x", "y").rows() == exp.select("x", "y").rows()
    assert_allclose(out["statistic"], exp["statistic"], rtol=1e-10, atol=1e-14)
    assert_allclose(out["pvalue"], exp["pvalue"], rtol=1e-8, atol=1e-14)
    assert_allclose(out["pvalue_perm"], exp["pvalue_perm"], rtol=1e-12)
    assert not out["perm_exact"].any()


def test_monte_carlo_pvalue_is_close_to_the_exact_one(rng):
    """n = 8: exact enumeration (8! = 40320) vs 20,000 random pairings; MC SE <= 0.0036."""
    t = pl.DataFrame({"a": rng.random(8), "b": rng.random(8)})
    exact = correlation_matrix(t, columns=["a", "b"], n_resamples=40320)
    mc = correlation_matrix(t, columns=["a", "b"], n_resamples=20_000, seed=5)
    assert exact["perm_exact"][0] and not mc["perm_exact"][0]
    assert abs(exact["pvalue_perm"][0] - mc["pvalue_perm"][0]) < 0.015


def test_same_seed_same_pvalues_and_seed_is_recorded(rng):
    t = pl.DataFrame({"a": rng.random(20), "b": rng.random(20)})
    a = correlation_matrix(t, columns=["a", "b"], seed=3)
    b = correlation_matrix(t, columns=["a", "b"], seed=3)
    assert a.equals(b)
    assert a["seed"][0] == 3 and a["n_resamples"][0] == 9999


def test_one_sided_alternative_matches_scipy(rng):
    x = rng.random(12)
    y = x + rng.normal(0, 0.5, 12)
    out = correlation_matrix(
        pl.DataFrame({"x": x, "y": y}), columns=["x", "y"], alternative="greater"
    )
    assert_allclose(out["pvalue"][0], st.spearmanr(x, y, alternative="greater").pvalue, rtol=1e-12)
    assert (
        out["pvalue_perm"][0]
        < correlation_matrix(pl.DataFrame({"x": x, "y": y}), columns=["x", "y"])["pvalue_perm"][0]
    )


def test_default_columns_and_fixed_output_columns(reference):
    out = correlation_matrix(reference["sim"])
    assert out.columns == [
        "x",
        "y",
        "method",
        "statistic",
        "pvalue",
        "pvalue_perm",
        "perm_exact",
        "n",
        "n_resamples",
        "alternative",
        "seed",
    ]
    assert out.height == math.comb(len(DEFAULT_COLUMNS), 2)
    assert out.row(0)[:2] == ("tar_a", "tar_r")
    assert ((out["pvalue"] >= 0) & (out["pvalue"] <= 1)).all()
    assert ((out["pvalue_perm"] > 0) & (out["pvalue_perm"] <= 1)).all()


def test_spearman_matrix_is_correlation_matrix_with_spearman(reference):
    a = spearman_matrix(reference["sim"], seed=1)
    b = correlation_matrix(reference["sim"], method="spearman", seed=1)
    assert a.equals(b)


def test_nulls_are_dropped_pair_by_pair():
    t = pl.DataFrame(
        {
            "a": [0.1, 0.2, 0.3, 0.4, 0.5, None],
            "b": [0.2, 0.1, 0.4, 0.3, 0.6, 0.7],
            "c": [1.0, float("nan"), 3.0, 2.0, 5.0, 4.0],
        }
    )
    out = correlation_matrix(t, columns=["a", "b", "c"])
    assert out["n"].to_list() == [5, 4, 5]
    assert_allclose(
        out["statistic"][0], st.spearmanr([0.1, 0.2, 0.3, 0.4, 0.5], [0.2, 0.1, 0.4, 0.3, 0.6])[0]
    )


def test_zero_resamples_skips_the_permutation_test(rng):
    t = pl.DataFrame({"a": rng.random(6), "b": rng.random(6)})
    out = correlation_matrix(t, columns=["a", "b"], n_resamples=0)
    assert out["pvalue_perm"].is_null().all() and out["perm_exact"].is_null().all()


def test_constant_column_gives_nan_and_a_warning():
    t = pl.DataFrame({"a": [0.1, 0.2, 0.3, 0.4], "b": [0.5] * 4})
    with pytest.warns(DegenerateDataWarning, match="'a' and 'b': a constant column"):
        out = correlation_matrix(t, columns=["a", "b"])
    assert math.isnan(out["statistic"][0]) and math.isnan(out["pvalue_perm"][0])


def test_all_null_column_warns_about_too_few_rows():
    t = pl.DataFrame({"a": [0.1, 0.2, 0.3], "input_len": [None, None, None]})
    with pytest.warns(DegenerateDataWarning, match="0 complete rows"):
        out = correlation_matrix(t, columns=["a", "input_len"])
    assert out["n"][0] == 0


def test_missing_column_is_a_schema_error():
    with pytest.raises(SchemaError, match="`columns` names 'tar_a', which is not a column"):
        correlation_matrix(pl.DataFrame({"x": [1.0], "y": [2.0]}))


def test_string_column_is_a_schema_error():
    t = pl.DataFrame({"a": [1.0, 2.0, 3.0], "model": ["x", "y", "z"]})
    with pytest.raises(SchemaError, match="column 'model' must be numeric"):
        correlation_matrix(t, columns=["a", "model"])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"method": "rank"}, "`method` must be one of"),
        ({"alternative": "two_sided"}, "`alternative` must be one of"),
        ({"n_resamples": -1}, "`n_resamples` must be a non-negative integer"),
        ({"columns": ["a"]}, "`columns` must name at least two"),
        ({"columns": "a,b"}, "`columns` must name at least two"),
    ],
)
def test_bad_parameters(kwargs, match):
    t = pl.DataFrame({"a": [1.0, 2.0, 3.0], "b": [3.0, 1.0, 2.0]})
    kwargs.setdefault("columns", ["a", "b"])
    with pytest.raises(ParameterError, match=match):
        correlation_matrix(t, **kwargs)


def test_row_order_does_not_change_the_result(reference):
    t = reference["sim"]
    a = correlation_matrix(t, n_resamples=0)
    b = correlation_matrix(t.sample(fraction=1.0, shuffle=True, seed=2), n_resamples=0)
    assert_allclose(a["statistic"], b["statistic"], rtol=1e-12)
    assert_allclose(a["pvalue"], b["pvalue"], rtol=1e-10)


def test_permutation_pvalues_are_calibrated_under_independence():
    """Seeded null check: 200 independent pairs of n = 6, exact p-values; P(p <= 0.1) ~ 0.1."""
    rng = np.random.default_rng(11)
    ps = [
        correlation_matrix(
            pl.DataFrame({"a": rng.random(6), "b": rng.random(6)}), columns=["a", "b"]
        )["pvalue_perm"][0]
        for _ in range(200)
    ]
    rate = np.mean(np.asarray(ps) <= 0.1)
    assert abs(rate - 0.1) < 3.5 * math.sqrt(0.1 * 0.9 / 200)


@given(
    st_h.lists(
        st_h.tuples(
            st_h.integers(0, 20).map(lambda v: v / 20), st_h.integers(0, 20).map(lambda v: v / 20)
        ),
        min_size=3,
        max_size=7,
    ),
    st_h.sampled_from(["spearman", "kendall", "pearson"]),
)
def test_bounds_and_symmetry(pairs, method):
    a = [p[0] for p in pairs]
    b = [p[1] for p in pairs]
    t = pl.DataFrame({"a": a, "b": b})
    if len(set(a)) < 2 or len(set(b)) < 2:
        return  # constant columns: covered by test_constant_column_gives_nan_and_a_warning
    ab = correlation_matrix(t, columns=["a", "b"], method=method)
    ba = correlation_matrix(t, columns=["b", "a"], method=method)
    s, p, pp = ab.select("statistic", "pvalue", "pvalue_perm").row(0)
    assert -1 - 1e-12 <= s <= 1 + 1e-12 and 0 <= p <= 1 and 0 < pp <= 1
    assert_allclose(ba["statistic"][0], s, rtol=1e-12, atol=1e-12)
    assert_allclose(ba["pvalue_perm"][0], pp, rtol=1e-12)  # exact for n <= 7


# --- issue 18, point 3: exact ties ----------------------------------------------------------


def _counts_obs(counts: dict[str, list[int]], n_items: int = 10) -> pl.DataFrame:
    """0/1 item scores with the given number correct per run (items 0..k-1 right)."""
    rows = []
    for g, ks in counts.items():
        for r, k in enumerate(ks):
            for i in range(n_items):
                rows.append(("m" + g, "d" + g, "v", str(i), r, float(i < k)))
    return pl.DataFrame(
        rows, schema=["model", "dataset", "variant", "item", "run", "score"], orient="row"
    )


def test_equal_spreads_are_exact_ties_before_spearman_and_the_permutation_test():
    """Run accuracies k/10 whose spreads are equal fractions: 0.7 - 0.5 == 0.4 - 0.2 == 0.2.

    Built as differences of float means they were 0.19999999999999996 and 0.2: two values,
    ranked apart. The stability table now builds them from counts; correlation_matrix snaps
    what is left of float noise. rho and the exact permutation p equal scipy on the exact
    fractions (Fraction -> float).
    """
    from fractions import Fraction

    counts = {
        "1": [7, 5, 6],
        "2": [4, 2, 3],
        "3": [9, 7, 8],
        "4": [3, 3, 4],
        "5": [6, 9, 8],
        "6": [1, 2, 1],
        "7": [5, 8, 5],
    }
    table = stability_table(_counts_obs(counts))
    exact_spread = {g: float(Fraction(max(k) - min(k), 10)) for g, k in counts.items()}
    exact_mean = {g: float(Fraction(sum(k), 30)) for g, k in counts.items()}
    got = dict(zip(table["model"].str.slice(1), table["spread"]))
    assert got == exact_spread  # bit for bit
    assert table["spread"].n_unique() == len(set(exact_spread.values())) == 3
    assert dict(zip(table["model"].str.slice(1), table["acc_mean"])) == exact_mean
    res = correlation_matrix(table, columns=["spread", "acc_mean"]).row(0, named=True)
    xs = [exact_spread[g] for g in sorted(counts)]
    ys = [exact_mean[g] for g in sorted(counts)]
    ref = st.spearmanr(xs, ys)
    assert res["statistic"] == pytest.approx(ref.statistic, abs=1e-12)
    assert res["pvalue"] == pytest.approx(ref.pvalue, rel=1e-10)
    perm = st.permutation_test(
        (st.rankdata(xs),),
        lambda a: st.pearsonr(a, st.rankdata(ys)).statistic,
        permutation_type="pairings",
    )
    assert res["perm_exact"] is True
    assert res["pvalue_perm"] == pytest.approx(perm.pvalue, rel=1e-12)


def test_last_bit_differences_are_snapped_before_ranking():
    noisy = pl.DataFrame(
        {"a": [0.7 - 0.5, 0.4 - 0.2, 0.1, 0.3, 0.5], "b": [0.5, 0.1, 0.2, 0.3, 0.4]}
    )
    exact = noisy.with_columns(pl.Series("a", [0.2, 0.2, 0.1, 0.3, 0.5]))
    assert noisy["a"].n_unique() == 5
    cols = ["statistic", "pvalue", "pvalue_perm"]
    for method in ("spearman", "kendall"):
        a = correlation_matrix(noisy, columns=["a", "b"], method=method).select(cols)
        b = correlation_matrix(exact, columns=["a", "b"], method=method).select(cols)
        assert a.rows() == b.rows()


@pytest.mark.parametrize("method", ["pearson", "spearman", "kendall"])
def test_pairings_tied_with_the_observed_r_count_as_ties_whichever_column_is_permuted(method):
    # found by hypothesis: r = 0 here, and pairings with r = 0 in exact arithmetic came out as
    # +-1e-17 (scipy's tie tolerance is relative to the observed value, so none at 0): the
    # exact two-sided p-value was 2/3 with one column permuted and 1 with the other
    t = pl.DataFrame({"a": [0.0, 0.0, 0.05], "b": [0.0, 0.1, 0.05]})
    ab = correlation_matrix(t, columns=["a", "b"], method=method)
    ba = correlation_matrix(t, columns=["b", "a"], method=method)
    assert ab["perm_exact"][0] and ba["perm_exact"][0]
    # every one of the 6 pairings has |r| >= |observed| = 0 in exact arithmetic
    assert ab["pvalue_perm"][0] == ba["pvalue_perm"][0] == 1.0
