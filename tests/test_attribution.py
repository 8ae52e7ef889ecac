"""Tests of evalstats.attribution: factor_anova, attribute, interaction_means."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from numpy.testing import assert_allclose

from evalstats.attribution import (
    _permute,
    attribute,
    factor_anova,
    interaction_means,
)
from evalstats.errors import (
    DegenerateDataWarning,
    InsufficientDataError,
    ParameterError,
    SchemaError,
)
from evalstats.simulate import observations, unit_table

# planted truth: population eta^2 order a > b > a:b > (c, d, their interactions) = 0
PLANTED = {
    "factors": {
        "a": {0: 0.0, 1: 0.15},
        "b": {0: 0.0, 1: 0.10},
        "c": {"x": 0.0, "y": 0.0, "z": 0.0},
        "d": {False: 0.0, True: 0.0},
    },
    "interactions": {("a", "b"): {(1, 1): 0.12}},
}
NULL = {"a": {0: 0.0, 1: 0.0}, "b": {0: 0.0, 1: 0.0}, "c": {"x": 0.0, "y": 0.0, "z": 0.0}}


def _planted_units(seed: int = 0, keep: float = 0.8) -> pl.DataFrame:
    units = unit_table(
        n_models=1, n_items=200, n_runs=3, instability=1.0, prompt_sd=0.0, seed=seed, **PLANTED
    )
    rng = np.random.default_rng(seed)
    return units.filter(pl.Series(rng.random(units.height) < keep))  # unbalanced


# ---------------------------------------------------------------------------------------------
# reference values


@pytest.mark.parametrize("ss_type", [1, 2, 3])
def test_factor_anova_matches_statsmodels_anova_lm(fixtures, ss_type):
    """statsmodels anova_lm(typ=ss_type) (Type III with C(f, Sum)) on an unbalanced design with
    missing three-way cells, fixtures/reference/anova/; see its PROVENANCE. Tolerance 1e-8: both
    are exact least squares, differing only by rounding."""
    ref = fixtures / "reference" / "anova"
    units = pl.read_csv(ref / "input.csv")
    expected = pl.read_csv(ref / f"expected_type{ss_type}.csv")
    res = factor_anova(
        units, runs="replicates", factors=["a", "b", "c"], ss_type=ss_type, n_resamples=0
    )
    got = res.to_frame()
    assert res.ss_type == ss_type
    assert units.select("a", "b", "c").unique().height < 24  # missing cells
    joined = expected.join(got, on="term", how="left", suffix="_got")
    assert joined.height == got.height == 7
    assert_allclose(joined["df_got"], joined["df"], rtol=0)
    assert_allclose(joined["sum_sq_got"], joined["sum_sq"], rtol=1e-8)
    terms = joined.filter(pl.col("term") != "Residual")
    assert_allclose(terms["statistic_got"], terms["statistic"], rtol=1e-8)
    assert_allclose(terms["pvalue_got"], terms["pvalue"], rtol=1e-8)


def test_factor_anova_block_matches_statsmodels_with_block_term():
    """Block as a nuisance fixed effect: SS and F equal anova_lm of score ~ C(item) + (a+b)**2
    (Type II), computed here with statsmodels; rounding tolerance."""
    smf = pytest.importorskip("statsmodels.formula.api")
    from statsmodels.stats.anova import anova_lm

    obs = observations(
        n_models=1,
        n_items=15,
        n_runs=2,
        instability=0.5,
        seed=3,
        factors={"a": {0: 0.0, 1: 0.1}, "b": {"p": 0.0, "q": 0.0, "r": 0.05}},
    )
    res = factor_anova(
        obs, runs="replicates", factors=["a", "b"], block="item", items="fixed", n_resamples=0
    )
    fit = smf.ols("score ~ C(item) + (C(a) + C(b))**2", data=obs.to_pandas()).fit()
    table = anova_lm(fit, typ=2)
    got = {r["term"]: r for r in res.to_frame().iter_rows(named=True)}
    for name, key in (("C(a)", "a"), ("C(b)", "b"), ("C(a):C(b)", "a:b")):
        assert_allclose(got[key]["sum_sq"], table.loc[name, "sum_sq"], rtol=1e-8)
        assert_allclose(got[key]["statistic"], table.loc[name, "F"], rtol=1e-8)
    assert_allclose(got["Residual"]["sum_sq"], fit.ssr, rtol=1e-8)
    assert got["Residual"]["df"] == int(fit.df_resid)


def test_runs_mean_equals_statsmodels_on_configuration_means(fixtures):
    """runs='mean' (the default) is anova_lm on the run-averaged configuration scores, averaged
    here independently with polars and fitted with statsmodels (Type II); rounding tolerance."""
    smf = pytest.importorskip("statsmodels.formula.api")
    from statsmodels.stats.anova import anova_lm

    units = pl.read_csv(fixtures / "reference" / "anova" / "input.csv")
    means = units.group_by("model", "dataset", "variant", "a", "b", "c").agg(pl.col("score").mean())
    assert means.height < units.height  # the fixture repeats runs
    res = factor_anova(units, factors=["a", "b", "c"], interactions=1, n_resamples=0)
    assert res.runs == "mean" and res.n_obs == means.height
    fit = smf.ols("score ~ C(a) + C(b) + C(c)", data=means.to_pandas()).fit()
    table = anova_lm(fit, typ=2)
    got = {r["term"]: r for r in res.to_frame().iter_rows(named=True)}
    for f in ("a", "b", "c"):
        assert_allclose(got[f]["sum_sq"], table.loc[f"C({f})", "sum_sq"], rtol=1e-8)
        assert_allclose(got[f]["statistic"], table.loc[f"C({f})", "F"], rtol=1e-8)
        assert_allclose(got[f]["pvalue"], table.loc[f"C({f})", "PR(>F)"], rtol=1e-8)
    assert got["Residual"]["df"] == int(fit.df_resid)


def test_runs_as_replicates_are_anticonservative_under_pseudo_replication():
    """Null factors, a random prompt effect per configuration and near-identical runs (the
    usual LLM case): averaging runs keeps the F test at about alpha, counting runs as rows
    rejects most null terms. 40 seeded simulations x 6 terms; bounds are 3.5 binomial SEs."""
    counts = {"mean": [0, 0], "replicates": [0, 0]}
    for s in range(40):
        units = unit_table(
            n_models=1,
            n_items=100,
            n_runs=3,
            instability=0.05,
            prompt_sd=0.05,
            factors=NULL,
            seed=500 + s,
        )
        for runs, c in counts.items():
            tab = factor_anova(units, factors=["a", "b", "c"], runs=runs, n_resamples=0)
            p = tab.to_frame().filter(pl.col("term") != "Residual")["pvalue"].to_numpy()
            c[0] += int(np.sum(p < 0.05))
            c[1] += p.size
    rate = {k: hits / n for k, (hits, n) in counts.items()}
    se = np.sqrt(0.05 * 0.95 / counts["mean"][1])
    assert rate["mean"] <= 0.05 + 3.5 * se
    assert rate["replicates"] > 0.3


def test_block_of_several_columns_is_their_joint_levels():
    """block=("model", "dataset") equals anova_lm with a C(model):C(dataset) block term."""
    smf = pytest.importorskip("statsmodels.formula.api")
    from statsmodels.stats.anova import anova_lm

    units = unit_table(
        n_models=2,
        n_datasets=2,
        n_items=60,
        n_runs=2,
        instability=0.5,
        seed=5,
        factors={"a": {0: 0.0, 1: 0.1}, "b": {"p": 0.0, "q": 0.0, "r": 0.05}},
    )
    res = factor_anova(units, factors=["a", "b"], block=("model", "dataset"), n_resamples=99)
    assert res.block == ("model", "dataset")
    means = units.group_by("model", "dataset", "variant", "a", "b").agg(pl.col("score").mean())
    fit = smf.ols("score ~ C(model):C(dataset) + C(a) + C(b)", data=means.to_pandas()).fit()
    table = anova_lm(fit, typ=2)
    got = {r["term"]: r for r in res.to_frame().iter_rows(named=True)}
    res1 = factor_anova(
        units, factors=["a", "b"], block=("model", "dataset"), interactions=1, n_resamples=0
    )
    got1 = {r["term"]: r for r in res1.to_frame().iter_rows(named=True)}
    for f in ("a", "b"):
        assert_allclose(got1[f]["sum_sq"], table.loc[f"C({f})", "sum_sq"], rtol=1e-8)
        assert_allclose(got1[f]["statistic"], table.loc[f"C({f})", "F"], rtol=1e-8)
    assert got["a"]["pvalue_perm"] is not None
    with pytest.raises(ParameterError, match="`block` must be a column name"):
        factor_anova(units, factors=["a"], block=[])
    with pytest.raises(ParameterError, match="`runs` must be 'mean' or 'replicates'"):
        factor_anova(units, factors=["a"], runs="median")


def test_missing_two_way_cell_reduces_df_to_the_rank():
    units = _planted_units(seed=1, keep=1.0)
    units = units.filter(~((pl.col("a") == 1) & (pl.col("c") == "z")))  # empty a:c cell
    tab = factor_anova(units, runs="replicates", factors=["a", "b", "c"], n_resamples=0).to_frame()
    row = tab.filter(pl.col("term") == "a:c").row(0, named=True)
    assert row["df"] == 1  # 2 columns, rank 1
    # SS(a:c) is the drop in RSS when the term is removed from the full model
    y = units["score"].to_numpy()
    codes = {f: units[f].to_numpy() for f in "abc"}

    def rss(with_ac: bool) -> float:
        cols = [np.ones(y.size)]
        for f in "abc":
            for lv in np.unique(codes[f])[1:]:
                cols.append((codes[f] == lv).astype(float))
        for f, g in (("a", "b"), ("a", "c"), ("b", "c")):
            if (f, g) == ("a", "c") and not with_ac:
                continue
            for lf in np.unique(codes[f])[1:]:
                for lg in np.unique(codes[g])[1:]:
                    cols.append(((codes[f] == lf) & (codes[g] == lg)).astype(float))
        x = np.column_stack(cols)
        r = y - x @ np.linalg.lstsq(x, y, rcond=None)[0]
        return float(r @ r)

    assert_allclose(row["sum_sq"], rss(False) - rss(True), rtol=1e-8)


# ---------------------------------------------------------------------------------------------
# structure and properties


def test_factor_anova_columns_order_and_eta_sums_to_one_under_type1():
    units = _planted_units()
    res = factor_anova(
        units, runs="replicates", factors=["a", "b", "c", "d"], ss_type=1, n_resamples=99
    )
    tab = res.to_frame()
    assert tab.columns == [
        "term",
        "df",
        "sum_sq",
        "mean_sq",
        "statistic",
        "pvalue",
        "pvalue_perm",
        "eta_sq",
        "partial_eta_sq",
        "error_term",
        "df_error",
        "mean_sq_error",
    ]
    assert tab["term"][-1] == "Residual"
    body = tab.head(-1)
    assert set(body["error_term"]) == {"Residual"}
    assert (body["df_error"] == tab["df"][-1]).all()
    eta = tab["eta_sq"].to_list()[:-1]
    assert eta == sorted(eta, reverse=True)
    total = tab["sum_sq"].sum()
    sst = float(((units["score"] - units["score"].mean()) ** 2).sum())
    assert_allclose(total, sst, rtol=1e-10)
    assert_allclose(tab["eta_sq"][:-1].sum() + tab["sum_sq"][-1] / sst, 1.0, rtol=1e-10)
    assert res.null_distribution.shape == (10, 99)
    assert set(res.terms) == set(tab["term"][:-1])


def test_pvalue_perm_formula_and_bounds():
    units = _planted_units()
    res = factor_anova(
        units,
        runs="replicates",
        factors=["a", "b", "c"],
        n_resamples=199,
        seed=4,
        max_exceedances=None,
    )
    assert res.null_distribution.shape == (6, 199) and res.n_permutations == (199,) * 6
    tab = res.to_frame().filter(pl.col("term") != "Residual")
    for row in tab.iter_rows(named=True):
        i = res.terms.index(row["term"])
        hits = np.sum(res.null_distribution[i] >= row["statistic"] * (1 - 1e-9))
        assert_allclose(row["pvalue_perm"], (1 + hits) / 200, rtol=1e-12)
        assert 1 / 200 <= row["pvalue_perm"] <= 1


def test_besag_clifford_pvalue_is_h_over_permutations_at_the_hth_exceedance():
    """A term stops at its 10th exceedance: p = 10 / L, L the permutations it drew; terms
    that never reach 10 keep (1 + hits) / (1 + B). The permutations are those of the full
    run (same seed), cut at each term's stopping point."""
    units = _planted_units()
    kw = dict(runs="replicates", factors=["a", "b", "c"], n_resamples=999, seed=4)
    full = factor_anova(units, max_exceedances=None, **kw)
    seq = factor_anova(units, max_exceedances=10, **kw)
    ft, st = full.to_frame(), seq.to_frame()
    assert_allclose(st["statistic"].drop_nulls(), ft["statistic"].drop_nulls(), rtol=1e-12)
    stopped = 0
    for name in full.terms:
        i = full.terms.index(name)
        obs = ft.filter(pl.col("term") == name)["statistic"][0]
        hit = np.flatnonzero(full.null_distribution[i] >= obs * (1 - 1e-9))
        p = st.filter(pl.col("term") == name)["pvalue_perm"][0]
        used = seq.n_permutations[i]
        if hit.size >= 10:
            stopped += 1
            assert used == hit[9] + 1
            assert_allclose(p, 10 / used, rtol=1e-12)
            assert np.isnan(seq.null_distribution[i, used:]).all()
        else:
            assert used == 999
            assert_allclose(p, (1 + hit.size) / 1000, rtol=1e-12)
        assert_allclose(
            seq.null_distribution[i, :used], full.null_distribution[i, :used], rtol=1e-10
        )
    assert stopped >= 2  # c and its interactions are null: they stop early


def test_factor_anova_is_reproducible_and_row_order_invariant():
    units = _planted_units()
    a = factor_anova(
        units, runs="replicates", factors=["a", "b", "c"], n_resamples=99, seed=7
    ).to_frame()
    b = factor_anova(
        units, runs="replicates", factors=["a", "b", "c"], n_resamples=99, seed=7
    ).to_frame()
    assert a.equals(b)
    shuffled = units.sample(fraction=1.0, shuffle=True, seed=1)
    c = factor_anova(shuffled, runs="replicates", factors=["a", "b", "c"], n_resamples=0).to_frame()
    d = factor_anova(units, runs="replicates", factors=["a", "b", "c"], n_resamples=0).to_frame()
    assert c["term"].to_list() == d["term"].to_list()
    assert_allclose(c["sum_sq"], d["sum_sq"], rtol=1e-10)


def _group_design(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Blocks of unequal sizes (one with a single cell, one of a single row), 3 cells."""
    rng = np.random.default_rng(seed)
    blocks = np.repeat(np.arange(5), [7, 5, 1, 7, 4])
    cells = rng.integers(0, 3, blocks.size)
    cells[7:12] = 2  # block 1: a single cell
    d = np.eye(5)[blocks]
    x = np.eye(3)[cells][:, 1:]
    u, sv, _ = np.linalg.svd(x - d @ np.linalg.pinv(d) @ x, full_matrices=False)
    return blocks, cells, u[:, sv > 1e-9]  # rows equal within a block and a cell


def test_block_permutations_stay_within_blocks():
    blocks, cells, q = _group_design()
    lay = _permute.layout(q, blocks, cells)
    e = np.random.default_rng(1).normal(size=(blocks.size, 2))
    _, drawn = _permute.permuted_projections(lay, e, np.random.default_rng(0), 50)
    idx = _permute.global_permutations(lay, drawn)
    assert (blocks[idx] == blocks[None, :]).all()
    assert all(sorted(row) == list(range(blocks.size)) for row in idx)
    # every arrangement of a 5-row block with 3 distinct cells appears in 50 draws
    assert len({tuple(row[12:19]) for row in idx}) > 10


def test_group_sum_projections_equal_dense_products():
    """Q_X' P e from group sums equals the dense product with the same permutations."""
    blocks, cells, q = _group_design()
    lay = _permute.layout(q, blocks, cells)
    e = np.random.default_rng(1).normal(size=(blocks.size, 3))
    v, drawn = _permute.permuted_projections(lay, e, np.random.default_rng(0), 20)
    idx = _permute.global_permutations(lay, drawn)
    dense = np.stack([(q.T @ e[row]).T for row in idx])
    assert_allclose(v, dense, rtol=1e-12, atol=1e-12)
    # one term: the residuals themselves are shuffled, with the same draws
    v1, _ = _permute.permuted_projections(lay, e[:, :1], np.random.default_rng(0), 20)
    assert_allclose(v1[:, 0, :], dense[:, 0, :], rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------------------------
# planted effects and calibration


def test_planted_terms_found_and_eta_ranking_matches_truth():
    units = _planted_units(seed=0)
    tab = factor_anova(
        units, runs="replicates", factors=["a", "b", "c", "d"], n_resamples=999, seed=0
    ).to_frame()
    terms = tab["term"].to_list()
    assert terms[:3] == ["a", "b", "a:b"]
    p = dict(zip(terms, tab["pvalue_perm"]))
    assert all(p[t] < 0.01 for t in ("a", "b", "a:b"))


def test_planted_effects_with_item_blocks():
    obs = observations(
        n_models=1,
        n_items=40,
        n_runs=1,
        prompt_sd=0.0,
        seed=2,
        factors={"a": {0: 0.0, 1: 0.15}, "c": {"x": 0.0, "y": 0.0, "z": 0.0}},
    )
    tab = factor_anova(
        obs, runs="replicates", factors=["a", "c"], block="item", n_resamples=199, seed=0
    ).to_frame()
    p = dict(zip(tab["term"], tab["pvalue_perm"]))
    assert tab["term"][0] == "a"
    assert p["a"] < 0.01


def _null_rejection_rate(
    n_sims: int, n_resamples: int, max_exceedances: int | None = 100, alpha: float = 0.05
) -> float:
    rejections, tests = 0, 0
    for s in range(n_sims):
        units = unit_table(
            n_models=1,
            n_items=30,
            n_runs=3,
            instability=1.0,
            prompt_sd=0.0,
            factors=NULL,
            seed=1000 + s,
        )
        tab = factor_anova(
            units,
            runs="replicates",
            factors=["a", "b", "c"],
            n_resamples=n_resamples,
            seed=s,
            max_exceedances=max_exceedances,
        )
        p = tab.to_frame().filter(pl.col("term") != "Residual")["pvalue_perm"].to_numpy()
        rejections += int(np.sum(p <= alpha))
        tests += p.size
    return rejections / tests


def test_null_rejection_rate_is_about_alpha_short():
    rate = _null_rejection_rate(n_sims=25, n_resamples=199)  # 150 tests
    assert 0.005 <= rate <= 0.12  # binomial(150, 0.05): +-3.9 sd


@pytest.mark.slow
def test_null_rejection_rate_is_about_alpha_full():
    rate = _null_rejection_rate(n_sims=300, n_resamples=999)  # 1800 tests, sd 0.0051
    assert abs(rate - 0.05) <= 0.016


def test_besag_clifford_keeps_type_one_error_short():
    """With an aggressive limit (5 exceedances) most null terms stop within ~10-50
    permutations; P(p <= 0.05) must stay at 0.05 (Besag and Clifford's p is exact)."""
    rate = _null_rejection_rate(n_sims=25, n_resamples=999, max_exceedances=5)  # 150 tests
    assert 0.005 <= rate <= 0.12


@pytest.mark.slow
def test_besag_clifford_keeps_type_one_error_full():
    rate = _null_rejection_rate(n_sims=300, n_resamples=999, max_exceedances=5)  # 1800 tests
    assert abs(rate - 0.05) <= 0.016
    rate = _null_rejection_rate(n_sims=300, n_resamples=999, max_exceedances=5, alpha=0.2)
    assert abs(rate - 0.2) <= 0.03  # sd 0.0094


def test_besag_clifford_pvalues_agree_with_full_permutation():
    """On a null and a weak term, the stopped p-value (100 exceedances) is within Monte Carlo
    error of the full 9,999-permutation p-value: relative sd of h/L is about 1/sqrt(h)."""
    units = unit_table(
        n_models=1,
        n_items=30,
        n_runs=2,
        instability=1.0,
        prompt_sd=0.0,
        factors={"a": {0: 0.0, 1: 0.0}, "b": {0: 0.0, 1: 0.0, 2: 0.0}},
        seed=3,
    )
    kw = dict(runs="replicates", factors=["a", "b"], interactions=1, n_resamples=9999, seed=1)
    full = factor_anova(units, max_exceedances=None, **kw).to_frame()
    seq = factor_anova(units, max_exceedances=100, **kw)
    for name in ("a", "b"):
        pf = full.filter(pl.col("term") == name)["pvalue_perm"][0]
        ps = seq.to_frame().filter(pl.col("term") == name)["pvalue_perm"][0]
        assert abs(ps - pf) <= 4 * pf * np.sqrt((1 - pf) / 100) + 2e-3
        assert seq.n_permutations[seq.terms.index(name)] < 9999 or pf < 0.011


# ---------------------------------------------------------------------------------------------
# errors


def test_factor_anova_errors_name_the_problem():
    units = _planted_units()
    with pytest.raises(SchemaError, match="`factors` names 'shots'"):
        factor_anova(units, factors=["a", "shots"])
    with pytest.raises(ParameterError, match="`ss_type` must be one of 1, 2, 3, got 4"):
        factor_anova(units, factors=["a"], ss_type=4)
    with pytest.raises(ParameterError, match="`interactions`"):
        factor_anova(units, factors=["a"], interactions=3)
    with pytest.raises(ParameterError, match="`n_resamples`"):
        factor_anova(units, factors=["a"], n_resamples=-1)
    with pytest.raises(InsufficientDataError, match="factor 'a' has a single level"):
        factor_anova(units.filter(pl.col("a") == 0), factors=["a", "b"])
    with pytest.raises(SchemaError, match="column 'c': a factor value is null"):
        factor_anova(
            units.with_columns(
                pl.when(pl.col("run") == 1).then(None).otherwise(pl.col("c")).alias("c")
            ),
            factors=["c"],
        )
    with pytest.raises(SchemaError, match="no column 'item'"):
        factor_anova(units, factors=["a"], block="item")


def test_exact_fit_warns_and_returns_nan():
    units = unit_table(
        n_models=1,
        n_items=20,
        n_runs=2,
        seed=0,
        factors={"a": {0: 0.0, 1: 0.1}, "b": {0: 0.0, 1: 0.0}},
    )
    with pytest.warns(DegenerateDataWarning, match="exactly"):
        tab = factor_anova(units, runs="replicates", factors=["a", "b"], n_resamples=9).to_frame()
    assert tab.filter(pl.col("term") == "a")["statistic"].is_nan().all()


# ---------------------------------------------------------------------------------------------
# interaction_means and attribute


def test_interaction_means_are_cell_means():
    units = _planted_units()
    cells = interaction_means(units, term="a:b")
    assert cells.columns == ["term", "level_a", "level_b", "score", "n"]
    want = units.filter((pl.col("a") == 1) & (pl.col("b") == 0))["score"].mean()
    got = cells.filter((pl.col("level_a") == "1") & (pl.col("level_b") == "0"))["score"][0]
    assert_allclose(got, want, rtol=1e-12)
    assert cells["n"].sum() == units.height


def test_linear_attribution_matches_statsmodels_ols():
    """Coefficients and 95% intervals equal statsmodels OLS with treatment coding."""
    smf = pytest.importorskip("statsmodels.formula.api")
    units = _planted_units()
    res = attribute(units, runs="replicates", factors=["a", "b", "c"], method="linear", n_null=0)
    fit = smf.ols("score ~ C(a) + C(b) + C(c)", data=units.to_pandas()).fit()
    coef = res.coefficients.filter(~pl.col("reference"))
    names = ["C(a)[T.1]", "C(b)[T.1]", "C(c)[T.y]", "C(c)[T.z]"]
    assert_allclose(coef["estimate"], fit.params[names], rtol=1e-8)
    ci = fit.conf_int(0.05).loc[names]
    assert_allclose(coef["ci_low"], ci[0], rtol=1e-8)
    assert_allclose(coef["ci_high"], ci[1], rtol=1e-8)
    assert_allclose(coef["pvalue"], fit.pvalues[names], rtol=1e-6)
    # partial R^2 of c: (RSS without c - RSS) / RSS without c
    red = smf.ols("score ~ C(a) + C(b)", data=units.to_pandas()).fit()
    pr2 = res.to_frame().filter(pl.col("factor") == "c")["partial_r_sq"][0]
    assert_allclose(pr2, (red.ssr - fit.ssr) / red.ssr, rtol=1e-8)


def test_linear_planted_factors_above_null_band():
    units = _planted_units()
    res = attribute(
        units, runs="replicates", factors=["a", "b", "c", "d"], method="linear", n_null=49, seed=0
    )
    tab = {r["factor"]: r for r in res.to_frame().iter_rows(named=True)}
    assert tab["a"]["above_null"] and tab["b"]["above_null"]
    assert not tab["c"]["above_null"] and not tab["d"]["above_null"]
    assert res.cv_r_sq > 0.5


def test_xgboost_planted_factors_above_null_band_and_null_inside():
    units = _planted_units()
    res = attribute(
        units, runs="replicates", factors=["a", "b", "c", "d"], method="xgboost", n_null=19, seed=0
    )
    assert res.method == "xgboost"
    assert res.null_distribution.shape == (19, 4)
    tab = {r["factor"]: r for r in res.to_frame().iter_rows(named=True)}
    for f in ("a", "b"):
        assert tab[f]["mean_abs_shap"] > tab[f]["null_high"]
    for f in ("c", "d"):
        assert 0 <= tab[f]["mean_abs_shap"] <= tab[f]["null_high"]
    assert res.to_frame()["factor"][:2].to_list() == ["a", "b"]
    assert res.cv_r_sq > 0.5
    assert res.coefficients.height == 0 and res.to_frame()["partial_r_sq"].is_null().all()


def test_attribute_errors():
    units = _planted_units()
    with pytest.raises(ParameterError, match="`method` must be 'xgboost' or 'linear'"):
        attribute(units, factors=["a"], method="shap")
    with pytest.raises(ParameterError, match="Did you mean 0.95"):
        attribute(units, factors=["a"], confidence_level=95)
    with pytest.raises(SchemaError, match="`factors` names 'zz'"):
        attribute(units, factors=["zz"])


def test_import_evalstats_does_not_import_xgboost():
    import subprocess
    import sys

    code = "import sys, evalstats; print('xgboost' in sys.modules, 'matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def _dummies(frame: pl.DataFrame, terms: list[tuple[str, ...]]) -> np.ndarray:
    cols = [np.ones(frame.height)]
    for t in terms:
        levels = [np.unique(frame[f].to_numpy())[1:] for f in t]
        if len(t) == 1:
            cols += [(frame[t[0]].to_numpy() == lv).astype(float) for lv in levels[0]]
        else:
            cols += [
                ((frame[t[0]].to_numpy() == la) & (frame[t[1]].to_numpy() == lb)).astype(float)
                for la in levels[0]
                for lb in levels[1]
            ]
    return np.column_stack(cols)


@pytest.mark.parametrize(
    ("term", "reduced"),
    [
        ("a", [("b",), ("c",), ("b", "c")]),
        ("a:b", [("a",), ("b",), ("c",), ("a", "c"), ("b", "c")]),
    ],
)
def test_null_distribution_equals_refits_on_freedman_lane_responses(term, reduced):
    """The first permutations' F* equal F recomputed from scratch on y* = fitted_R + P e_R
    (Type II reduced model by dummy regression; F invariant to the affine rescaling that keeps
    y* in [0, 1]). Rounding tolerance."""
    units = _planted_units(seed=5)
    res = factor_anova(
        units,
        runs="replicates",
        factors=["a", "b", "c"],
        n_resamples=4,
        seed=3,
        max_exceedances=None,
    )
    y = units["score"].to_numpy()
    x = _dummies(units, reduced)
    fitted = x @ np.linalg.lstsq(x, y, rcond=None)[0]
    e = y - fitted
    # the permutations factor_anova drew: the same layout (cells of a, b, c; one block) and
    # generator; with six terms the kernel shuffles an index array, whatever the residuals
    codes = [np.unique(units[f].to_numpy(), return_inverse=True)[1] for f in ("a", "b", "c")]
    cells = np.unique(np.column_stack(codes), axis=0, return_inverse=True)[1].ravel()
    lay = _permute.layout(np.zeros((y.size, 1)), None, cells)
    _, drawn = _permute.permuted_projections(
        lay, np.zeros((y.size, 6)), np.random.default_rng(3), 4
    )
    idx = _permute.global_permutations(lay, drawn)
    for j in range(3):
        ystar = fitted + e[idx[j]]
        scaled = (ystar - ystar.min()) / (ystar.max() - ystar.min())
        again = factor_anova(
            units.with_columns(score=pl.Series(scaled)),
            runs="replicates",
            factors=["a", "b", "c"],
            n_resamples=0,
        ).to_frame()
        direct = again.filter(pl.col("term") == term)["statistic"][0]
        assert_allclose(res.null_distribution[res.terms.index(term), j], direct, rtol=1e-8)


# --- issue 18, point 1: items as a random factor ---------------------------------------------


def _item_factor_obs(
    rng: np.random.Generator,
    *,
    n_items: int = 40,
    n_variants: int = 4,
    effect: float = 0.0,
    item_x_factor_sd: float = 1.0,
    levels_b: tuple[str, ...] = (),
) -> pl.DataFrame:
    """0/1 item scores: items x factor a (2 levels) [x factor b] x paraphrase variants.

    logit p = item difficulty + effect * a + item x a interaction (sd ``item_x_factor_sd``),
    one Bernoulli draw per (item, variant); ``n_variants`` paraphrases per cell, every item
    answered under every variant (as in State of What Art / DOVE dumps).
    """
    cells = [(a, b) for a in (0, 1) for b in (levels_b or ("-",))]
    diff = rng.normal(0.0, 1.0, n_items)
    inter = rng.normal(0.0, item_x_factor_sd, (n_items, 2))
    rows = []
    for i in range(n_items):
        for a, b in cells:
            for v in range(n_variants):
                p = 1 / (1 + np.exp(-(diff[i] + effect * a + inter[i, a])))
                rows.append((f"q{i:03d}", f"a{a}b{b}v{v}", a, b, float(rng.random() < p)))
    frame = pl.DataFrame(
        rows, schema=["item", "variant", "a", "b", "score"], orient="row"
    ).with_columns(model=pl.lit("m"), dataset=pl.lit("d"))
    return frame if levels_b else frame.drop("b")


def test_item_random_f_of_a_two_level_factor_is_the_paired_t_squared(rng):
    """With items random, F(a) = t² of the paired t test over items (scipy.stats.ttest_rel).

    The fixed-item analysis pools the a x item interaction into the residual, and its F is
    far from t² here (large item x factor variance).
    """
    from scipy import stats

    obs = _item_factor_obs(rng, n_variants=6, item_x_factor_sd=1.5, levels_b=("x", "y", "z"))
    res = factor_anova(obs, factors=["a", "b"], block="item", n_resamples=999, seed=0)
    assert res.items == "random" and res.method == "sign-flip"
    row = res.to_frame().filter(pl.col("term") == "a").row(0, named=True)
    means = obs.group_by("item", "a").agg(pl.col("score").mean()).sort("item", "a")
    t = stats.ttest_rel(
        means.filter(pl.col("a") == 1)["score"].to_numpy(),
        means.filter(pl.col("a") == 0)["score"].to_numpy(),
    )
    assert_allclose(row["statistic"], t.statistic**2, rtol=1e-10)
    assert_allclose(row["pvalue"], t.pvalue, rtol=1e-8)
    assert row["error_term"] == "a:item" and row["df_error"] == 39
    assert abs(row["pvalue_perm"] - t.pvalue) < 0.1  # sign flips: the same null, no normality
    again = factor_anova(obs, factors=["a", "b"], block="item", n_resamples=999, seed=0)
    assert again.to_frame().equals(res.to_frame())
    other = factor_anova(obs, factors=["a", "b"], block="item", n_resamples=999, seed=1)
    assert not np.array_equal(other.null_distribution, res.null_distribution)
    fixed = factor_anova(obs, factors=["a", "b"], block="item", items="fixed", n_resamples=0)
    frow = fixed.to_frame().filter(pl.col("term") == "a").row(0, named=True)
    assert frow["error_term"] == "Residual" and frow["df_error"] > 39 * 5
    # the random analysis works on item x cell means (6 variants averaged): on the row scale
    # its sums of squares are 6 times larger; then SS(a) is the same and only the error differs
    assert_allclose(frow["sum_sq"], 6 * row["sum_sq"], rtol=1e-10)
    ms_item = 6 * row["mean_sq_error"]  # a x item mean square on the row scale
    assert_allclose(frow["statistic"] / row["statistic"], ms_item / frow["mean_sq_error"])
    assert ms_item > 2 * frow["mean_sq_error"]


def test_item_random_anova_equals_statsmodels_anova_rm(rng):
    """Balanced items x (a x b) design: F, df of every term equal statsmodels' AnovaRM."""
    from statsmodels.stats.anova import AnovaRM

    obs = _item_factor_obs(rng, n_items=12, n_variants=2, levels_b=("x", "y", "z"))
    res = factor_anova(obs, factors=["a", "b"], block="item", n_resamples=0).to_frame()
    cell = obs.group_by("item", "a", "b").agg(pl.col("score").mean()).to_pandas()
    ref = AnovaRM(cell, depvar="score", subject="item", within=["a", "b"]).fit().anova_table
    for term, key in (("a", "a"), ("b", "b"), ("a:b", "a:b")):
        got = res.filter(pl.col("term") == term).row(0, named=True)
        assert_allclose(got["statistic"], ref.loc[key, "F Value"], rtol=1e-9)
        assert_allclose(got["pvalue"], ref.loc[key, "Pr > F"], rtol=1e-7)
        assert got["df"] == ref.loc[key, "Num DF"]
        assert got["df_error"] == ref.loc[key, "Den DF"]


def test_item_random_leaves_out_incomplete_items_with_a_warning(rng):
    obs = _item_factor_obs(rng, n_items=10, n_variants=2)
    partial = obs.filter(~((pl.col("item") == "q003") & (pl.col("a") == 1)))
    with pytest.warns(DegenerateDataWarning, match="1 of 10 items lack"):
        res = factor_anova(partial, factors=["a"], block="item", n_resamples=0)
    assert res.to_frame().filter(pl.col("term") == "a")["df_error"].item() == 8
    with pytest.raises(ParameterError, match="`items` must be 'random' or 'fixed'"):
        factor_anova(obs, factors=["a"], block="item", items="mixed")


def _item_size(n_sims: int, n_resamples: int, seed: int) -> dict[str, float]:
    """Rejection rates at 0.05 with no effect of a and a large item x a variance."""
    rng = np.random.default_rng(seed)
    hits = {"random_f": 0, "random_perm": 0, "fixed_f": 0}
    for _ in range(n_sims):
        obs = _item_factor_obs(rng, n_items=30, n_variants=10, item_x_factor_sd=1.5)
        r = factor_anova(obs, factors=["a"], block="item", n_resamples=n_resamples, seed=1)
        row = r.to_frame().row(0, named=True)
        hits["random_f"] += row["pvalue"] < 0.05
        if n_resamples:
            hits["random_perm"] += row["pvalue_perm"] < 0.05
        f = factor_anova(obs, factors=["a"], block="item", items="fixed", n_resamples=0)
        hits["fixed_f"] += f.to_frame().row(0, named=True)["pvalue"] < 0.05
    return {k: v / n_sims for k, v in hits.items()}


def test_item_random_size_short():
    rate = _item_size(150, 99, seed=21)
    assert rate["random_f"] <= 0.11 and rate["random_perm"] <= 0.11
    assert rate["fixed_f"] >= 0.3


@pytest.mark.slow
def test_item_random_size_full():
    """Size 0.05 +- 0.015 for the item-random F and sign-flip tests; the fixed-item F far above."""
    rate = _item_size(2000, 999, seed=22)
    print(f"rejection at 0.05 (2000 sims): {rate}")
    assert abs(rate["random_f"] - 0.05) <= 0.015
    assert abs(rate["random_perm"] - 0.05) <= 0.015
    assert rate["fixed_f"] >= 0.3


def test_xgboost_cell_fit_equals_row_level_fit():
    """attribute fits xgboost on the factor cells weighted by their counts; a row-level fit
    with the same settings gives the same mean |SHAP| and out-of-fold predictions up to
    float32 rounding of the gradient sums."""
    import xgboost as xgb

    from evalstats.attribution._attribute import _xgb_fit, _xgb_predict

    units = _planted_units(seed=3)
    factors = ["a", "b", "c"]
    res = attribute(units, runs="replicates", factors=factors, n_null=0, n_folds=3, seed=2)
    y = units["score"].to_numpy().astype(float)
    x = np.column_stack(
        [np.unique(units[f].to_numpy(), return_inverse=True)[1] for f in factors]
    ).astype(float)
    booster = _xgb_fit(xgb, x, y, factors, 2)
    contrib = _xgb_predict(xgb, booster, x, factors, pred_contribs=True)
    row_shap = np.abs(contrib[:, :-1].astype(float)).mean(axis=0)
    got = {r["factor"]: r["mean_abs_shap"] for r in res.to_frame().iter_rows(named=True)}
    assert_allclose([got[f] for f in factors], row_shap, rtol=1e-4)
    folds = np.random.default_rng(2).permutation(y.size) % 3
    oof = np.empty(y.size)
    for k in range(3):
        test = folds == k
        oof[test] = _xgb_predict(
            xgb, _xgb_fit(xgb, x[~test], y[~test], factors, 2), x[test], factors
        )
    cv = 1 - np.sum((y - oof) ** 2) / np.sum((y - y.mean()) ** 2)
    assert_allclose(res.cv_r_sq, cv, rtol=1e-4)


# ---------------------------------------------------------------------------------------------
# the smallest permutation p a design allows


def _distinct_arrangements(blocks: list[int], cells: list[int]) -> int:
    """Brute force: distinct within-block orderings of the cell labels (written here)."""
    import itertools

    per_block = {}
    for b, c in zip(blocks, cells):
        per_block.setdefault(b, []).append(c)
    count = 1
    for labels in per_block.values():
        count *= len(set(itertools.permutations(labels)))
    return count


@pytest.mark.parametrize(
    ("n_blocks", "levels", "reps"), [(4, 2, 1), (3, 3, 1), (2, 2, 2), (5, 2, 1)]
)
def test_the_smallest_permutation_p_is_one_over_the_distinct_arrangements(n_blocks, levels, reps):
    """Four models with two arena positions each read "0 of 1 term has a permutation p < 0.05"
    (η² 0.85, F-test p 0.027): only 16 arrangements exist, so no p falls below 0.0625."""
    rng = np.random.default_rng(n_blocks)
    rows = [
        {"model": f"m{b}", "pos": f"p{v}", "run": r, "score": float(rng.random())}
        for b in range(n_blocks)
        for v in range(levels)
        for r in range(reps)
    ]
    units = pl.DataFrame(rows).with_columns(dataset=pl.lit("d"), variant=pl.col("pos"))
    res = factor_anova(units, factors=["pos"], block="model", runs="replicates", n_resamples=99)
    blocks = [int(r["model"][1:]) for r in rows]
    cells = [int(r["pos"][1:]) for r in rows]
    assert res.min_pvalue_perm == pytest.approx(1 / _distinct_arrangements(blocks, cells))


def test_the_anova_reading_says_when_no_permutation_p_can_reach_005():
    from evalstats.report import ANALYSES, audit_report

    rng = np.random.default_rng(0)
    rows = [
        {"model": f"m{b}", "dataset": "d", "item": f"q{i}", "position": pos, "score": float(y)}
        for b in range(4)
        for pos, p in (("a", 0.3), ("b", 0.8))
        for i, y in enumerate(rng.random(40) < p)
    ]
    skip = [a.key for a in ANALYSES if a.key != "anova"]
    reading = audit_report(pl.DataFrame(rows), factors=["position"], skip=skip)["anova"].reading
    assert "0 of 1 term has a permutation p < 0.05, but none could: with 16 distinct " in reading
    assert "no permutation p falls below 0.0625, whatever the effect; the F-test p of " in reading
