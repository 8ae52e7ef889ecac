"""The sparse-grid estimator of the per-prompt accuracy distribution (evalstats.sparse)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from numpy.testing import assert_allclose

from evalstats.errors import (
    DesignWarning,
    InsufficientDataError,
    MetricScaleError,
    ParameterError,
)
from evalstats.moments import prompt_spread
from evalstats.sparse import (
    full_grid,
    sparse_grid,
    sparse_plan,
    sparse_prompt_distribution,
    sparse_prompt_scores,
    subsample_cells,
)
from evalstats.sparse._draws import STATISTICS, statistics_of
from evalstats.sparse._fit import CellData, _design, _mode


def _truth(truth: pl.DataFrame) -> dict[str, float]:
    stats = statistics_of(truth["accuracy"].to_numpy())[0]
    return {name: float(v) for (name, _), v in zip(STATISTICS, stats)}


def _by_quantity(out: pl.DataFrame, col: str) -> dict[str, float]:
    return dict(zip(out["quantity"].to_list(), out[col].to_list()))


def test_planted_prompt_and_item_effects_recover_the_distribution():
    """A 300 x 150 grid seen at 10 %: the planted per-prompt distribution is recovered.

    Tolerances: at 10 % each variant is seen on about 30 items, so a variant's naive mean has
    a standard error near 0.09; the model's quantiles should be within 0.04 of the truth and
    its sd within 0.03, both closer than the naive ones at the tails.
    """
    obs, truth = sparse_grid(n_items=300, n_variants=150, share=0.1, seed=4)
    out = sparse_prompt_distribution(obs, n_resamples=200, seed=0)
    est, naive, true = _by_quantity(out, "estimate"), _by_quantity(out, "naive"), _truth(truth)
    for q in ("mean", "q25", "median", "q75"):
        assert abs(est[q] - true[q]) < 0.04, (q, est[q], true[q])
    assert abs(est["sd"] - true["sd"]) < 0.03
    for q in ("sd", "q05", "q95", "min", "max"):
        assert abs(est[q] - true[q]) < abs(naive[q] - true[q]), (q, est[q], naive[q], true[q])
    assert (out["ci_low"] <= out["estimate"]).all() and (out["estimate"] <= out["ci_high"]).all()
    assert out["cells_observed"][0] == pytest.approx(obs.height / (300 * 150))


def test_full_grid_gives_the_complete_data_moments():
    """Every cell observed: every draw is the data, so the answer is prompt_spread's."""
    grid = full_grid(n_items=40, n_variants=12, seed=1)
    out = sparse_prompt_distribution(grid, n_resamples=50, seed=0)
    ref = prompt_spread(grid).row(0, named=True)
    names = {
        "mean": "mean",
        "sd": "std",
        "min": "min",
        "q05": "q05",
        "q25": "q25",
        "median": "median",
        "q75": "q75",
        "q95": "q95",
        "max": "max",
    }
    est = _by_quantity(out, "estimate")
    for ours, theirs in names.items():
        assert_allclose(est[ours], ref[theirs], rtol=1e-12, err_msg=ours)
    assert_allclose(out["ci_low"], out["estimate"], rtol=1e-12)
    assert_allclose(out["ci_high"], out["estimate"], rtol=1e-12)
    assert_allclose(out["naive"], out["estimate"], rtol=1e-12)


def test_degenerate_grid_is_refused():
    """One item per variant and one variant per item: item and prompt effects are confounded."""
    obs = pl.DataFrame(
        {
            "model": "m",
            "dataset": "d",
            "item": [f"i{j}" for j in range(10)],
            "variant": [f"p{j}" for j in range(10)],
            "score": [float(j % 2) for j in range(10)],
        }
    )
    with pytest.raises(InsufficientDataError, match="cannot be told apart"):
        sparse_prompt_distribution(obs, n_resamples=50)


def test_nested_grid_is_fitted_through_the_item_distribution():
    """Each item under one variant (several items per variant): the variants are compared
    through the fitted item distribution, with a warning and an interval, not refused."""
    obs = pl.DataFrame(
        {
            "model": "m",
            "dataset": "d",
            "item": [f"i{j}" for j in range(12)],
            "variant": [f"p{j % 3}" for j in range(12)],
            "score": [float(j % 2) for j in range(12)],
        }
    )
    with pytest.warns(DesignWarning, match="model='m'.*item distribution"):
        out = sparse_prompt_distribution(obs, n_resamples=50)
    assert (out["ci_low"] < out["ci_high"]).all()


def _below_one_cell_per_item(seed: int) -> tuple[pl.DataFrame, dict[str, float]]:
    """200 cells of a 100 x 545 grid: every variant on 2 items, each item under one variant
    at most (345 items never seen), and the grid's truth."""
    grid = full_grid(n_items=545, n_variants=100, mean_logit=1.5, item_sd=1.5, seed=seed)
    rng = np.random.default_rng(seed)
    items = np.array(sorted(grid["item"].unique().to_list()))[rng.permutation(545)[:200]]
    variants = sorted(grid["variant"].unique().to_list())
    keep = pl.DataFrame({"variant": np.repeat(variants, 2), "item": items})
    obs = grid.join(keep, on=["variant", "item"], how="semi")
    acc = grid.group_by("variant").agg(pl.col("score").mean())["score"].to_numpy()
    stats = statistics_of(acc)[0]
    return obs, {name: float(v) for (name, _), v in zip(STATISTICS, stats)}


def test_two_hundred_cells_of_a_545_item_grid_give_an_estimate_with_an_interval():
    """Below one cell per item (issue 44): an answer over all 545 items, not a refusal; its
    90 % intervals hold the grid's mean, median and quartiles, and at least 7 of the 9
    quantities (at 90 % one miss in nine is expected; seed 3 misses the best prompt, whose
    interval starts 0.02 above it)."""
    obs, true = _below_one_cell_per_item(3)
    with pytest.warns(DesignWarning):
        out = sparse_prompt_distribution(
            obs, n_resamples=200, seed=0, confidence_level=0.9, grid_items=545
        )
    assert out["n_items"].to_list() == [545] * 9
    lo, hi = _by_quantity(out, "ci_low"), _by_quantity(out, "ci_high")
    held = {q: lo[q] <= true[q] <= hi[q] for q in true}
    for q in ("mean", "q25", "median", "q75"):
        assert held[q], (q, lo[q], true[q], hi[q])
    assert sum(held.values()) >= 7, held
    with pytest.raises(ParameterError, match="`grid_items`.*200 items observed"):
        sparse_prompt_distribution(obs, n_resamples=50, grid_items=100)


def test_naive_is_the_per_variant_mean_of_observed_cells():
    """Independent computation with polars of the naive quantities."""
    obs, _ = sparse_grid(n_items=80, n_variants=40, share=0.15, seed=2)
    out = sparse_prompt_distribution(obs, n_resamples=50, seed=0)
    per_variant = obs.group_by("variant").agg(pl.col("score").mean())["score"].to_numpy()
    naive = _by_quantity(out, "naive")
    assert_allclose(naive["mean"], per_variant.mean(), rtol=1e-12)
    assert_allclose(naive["sd"], per_variant.std(), rtol=1e-12)
    assert_allclose(naive["q05"], np.quantile(per_variant, 0.05), rtol=1e-12)
    assert_allclose(naive["max"], per_variant.max(), rtol=1e-12)


def test_same_seed_same_output_and_seed_recorded():
    obs, _ = sparse_grid(n_items=60, n_variants=30, share=0.2, seed=0)
    a = sparse_prompt_distribution(obs, n_resamples=60, seed=7)
    b = sparse_prompt_distribution(
        obs.sample(fraction=1.0, shuffle=True, seed=3), n_resamples=60, seed=7
    )
    c = sparse_prompt_distribution(obs, n_resamples=60, seed=8)
    assert a.equals(b)
    assert not a.equals(c)
    assert a["seed"].unique().to_list() == [7]


def test_penalised_mode_matches_statsmodels_logistic_regression():
    """With a negligible penalty the mode is the MLE of item + prompt dummies (statsmodels GLM).

    Fitted probabilities are compared (the effects themselves are identified only up to the
    constraint the penalty picks); tolerance 1e-5 for two iterative solvers.
    """
    import statsmodels.api as sm

    grid = full_grid(n_items=25, n_variants=8, item_sd=0.5, prompt_sd=0.5, factors={}, seed=3)
    obs = subsample_cells(grid, share=0.6, seed=1)
    items, ic = np.unique(obs["item"].to_numpy(), return_inverse=True)
    prompts, pc = np.unique(obs["variant"].to_numpy(), return_inverse=True)
    y = obs["score"].to_numpy()
    cells = CellData(
        item=ic,
        prompt=pc,
        k=y,
        n=np.ones_like(y),
        n_items=len(items),
        n_prompts=len(prompts),
        levels=np.zeros((len(prompts), 0), dtype=np.int64),
    )
    x, _ = _design(cells)
    lam = np.full(x.shape[1], 1e-9)
    theta, ok = _mode(x, x.T.tocsr(), y, np.ones_like(y), lam, np.zeros(x.shape[1]))
    ours = 1 / (1 + np.exp(-(x @ theta)))
    dummies = np.column_stack(
        [np.ones_like(y), np.eye(len(items))[ic][:, 1:], np.eye(len(prompts))[pc][:, 1:]]
    )
    ref = sm.GLM(y, dummies, family=sm.families.Binomial()).fit(tol=1e-12)
    assert ok
    assert_allclose(ours, ref.fittedvalues, atol=1e-5)


@pytest.mark.parametrize("shape", [(60, 20), (15, 40)])
def test_block_newton_mode_and_log_determinant_match_dense_references(shape):
    """The exact Newton mode (Schur complement of the larger facet, either facet) equals the
    trust-region Newton-CG mode to 1e-6, and log|X'WX + Lambda| equals numpy's dense slogdet,
    with two prompt factors in the design."""
    import scipy.sparse as sp

    from evalstats.sparse._fit import _Blocks, _newton_mode, _precision

    n_items, n_variants = shape
    grid = full_grid(n_items=n_items, n_variants=n_variants, seed=4)
    obs = subsample_cells(grid, share=0.3, seed=2)
    items, ic = np.unique(obs["item"].to_numpy(), return_inverse=True)
    prompts, pc = np.unique(obs["variant"].to_numpy(), return_inverse=True)
    per_v = obs.group_by("variant").agg(pl.col("template", "separator").first()).sort("variant")
    levels = np.stack(
        [np.unique(per_v[f].to_numpy(), return_inverse=True)[1] for f in ("template", "separator")],
        axis=1,
    )
    y = obs["score"].to_numpy().astype(float)
    cells = CellData(ic, pc, y, np.ones_like(y), len(items), len(prompts), levels)
    x, blocks = _design(cells)
    xt = x.T.tocsr()
    lam = _precision(blocks, [1.5, 0.2, 0.1, 0.3])
    structure = _Blocks(cells, blocks)
    assert structure.diag == (blocks[1] if n_items >= n_variants else blocks[-1])
    theta, ok = _newton_mode(x, xt, y, np.ones_like(y), lam, np.zeros(x.shape[1]), structure)
    ref, ok_ref = _mode(x, xt, y, np.ones_like(y), lam, np.zeros(x.shape[1]))
    assert ok and ok_ref
    assert_allclose(theta, ref, atol=1e-6)
    w = np.random.default_rng(1).uniform(0.05, 0.25, y.size)
    dense = (x.T @ sp.diags(w) @ x).toarray() + np.diag(lam)
    assert_allclose(structure.logdet(w, lam), np.linalg.slogdet(dense)[1], rtol=1e-12)


def test_prompt_scores_one_row_per_variant_with_intervals():
    obs, truth = sparse_grid(n_items=120, n_variants=40, share=0.1, seed=5)
    out = sparse_prompt_scores(obs, n_resamples=100, seed=0)
    assert out.height == 40
    assert (out["ci_low"] <= out["ci_high"]).all()
    counts = obs.group_by("variant").len().sort("variant")["len"].to_list()
    assert out["n_items_observed"].to_list() == counts
    # shrinkage: the model's per-variant values are closer to the truth than the naive ones
    joined = out.join(truth, on="variant")
    err_model = (joined["estimate"] - joined["accuracy"]).abs().mean()
    err_naive = (joined["naive"] - joined["accuracy"]).abs().mean()
    assert err_model < err_naive


def test_prompt_scores_are_the_draws_means_the_distribution_reads():
    """Each variant's estimate is the mean of its posterior draws (the prompt prior the data
    choose), the draws sparse_prompt_distribution reads: the variants' mean is the
    distribution's mean estimate to rounding. Before, it was the normal prior's mode prediction:
    a broken prompt (truth 0.29, 19 cells) at 0.667 instead of the draws' 0.633."""
    grid = full_grid(
        n_items=300, n_variants=60, factors={}, mean_logit=1.5, prompt_effects="broken", seed=2
    )
    obs = subsample_cells(grid, share=0.1, seed=2)
    out = sparse_prompt_scores(obs, n_resamples=200, seed=0)
    dist = sparse_prompt_distribution(obs, n_resamples=200, seed=0, n_worlds=0)
    mean = dist.filter(pl.col("quantity") == "mean")["estimate"][0]
    assert out["estimate"].mean() == pytest.approx(mean, abs=1e-12)
    truth = grid.group_by("variant").agg(pl.col("score").mean().alias("truth"))
    worst = out.join(truth, on="variant").sort("truth").row(0, named=True)
    assert worst["ci_low"] <= worst["estimate"] <= worst["ci_high"]
    assert worst["estimate"] < 0.65, worst


def test_bad_input_named():
    obs, _ = sparse_grid(n_items=30, n_variants=10, share=0.5, seed=0)
    with pytest.raises(ParameterError, match="Did you mean 0.95"):
        sparse_prompt_distribution(obs, confidence_level=95)
    with pytest.raises(ParameterError, match="n_resamples"):
        sparse_prompt_distribution(obs, n_resamples=3)
    bleu = obs.with_columns(pl.col("score") * 40.0, pl.lit("bleu").alias("metric"))
    with pytest.raises(MetricScaleError, match="'bleu'"):
        sparse_prompt_distribution(bleu, n_resamples=50)


@pytest.mark.slow
def test_intervals_cover_at_ten_percent():
    """90 % intervals over 40 subsamples of planted grids: mean coverage >= 0.85 per quantity."""
    hits = []
    for rep in range(40):
        obs, truth = sparse_grid(n_items=300, n_variants=150, share=0.1, seed=100 + rep)
        out = sparse_prompt_distribution(obs, n_resamples=200, seed=rep, confidence_level=0.9)
        true = _truth(truth)
        t = np.array([true[q] for q in out["quantity"]])
        hits.append((out["ci_low"].to_numpy() <= t) & (t <= out["ci_high"].to_numpy()))
    cover = np.mean(hits, axis=0)
    assert cover.mean() >= 0.85, cover
    assert cover.min() >= 0.75, dict(zip(out["quantity"], cover))  # the sd's included


def _small_prompt_effects_cover(reps: int, share: float) -> np.ndarray:
    """Coverage of the 90 % intervals on grids where prompts barely matter (as on the real
    MMLU grid of docs/methods/sparse.md): the fitted prompt variance often sits at its floor,
    and the sd's interval must still reach the finite grid's sd."""
    hits = []
    for rep in range(reps):
        grid = full_grid(
            n_items=300,
            n_variants=60,
            mean_logit=2.0,
            item_sd=2.0,
            prompt_sd=0.08,
            factors={},
            seed=500 + rep,
        )
        acc = grid.group_by("variant").agg(pl.col("score").mean())["score"].to_numpy()
        true = {"mean": acc.mean(), "sd": acc.std()}
        obs = subsample_cells(grid, share=share, scheme="uniform", seed=rep)
        out = sparse_prompt_distribution(obs, n_resamples=200, seed=rep, confidence_level=0.9)
        out = out.filter(pl.col("quantity").is_in(["mean", "sd"]))
        t = np.array([true[q] for q in out["quantity"]])
        hits.append((out["ci_low"].to_numpy() <= t) & (t <= out["ci_high"].to_numpy()))
    return np.mean(hits, axis=0)


def test_sd_interval_covers_when_prompts_barely_matter_short():
    """16 subsamples at 10 % (CI): 15 covered; with the variance drawn from a scaled inverse
    chi-square around its fit (either degrees of freedom), 12."""
    cover = _small_prompt_effects_cover(16, 0.1)
    assert cover[1] >= 0.85, cover


@pytest.mark.slow
def test_sd_interval_covers_when_prompts_barely_matter():
    """80 subsamples at 10 % and 20 %: the sd's 90 % interval covers at least 0.85."""
    for share in (0.1, 0.2):
        cover = _small_prompt_effects_cover(80, share)
        assert cover[1] >= 0.85, (share, cover)


def test_plan_proposes_distinct_unobserved_cells_best_first():
    obs, _ = sparse_grid(n_items=80, n_variants=40, share=0.1, seed=6)
    plan = sparse_plan(obs, k=30, quantity="q05", n_resamples=100, seed=0)
    assert plan.height == 30
    assert plan["rank"].to_list() == list(range(1, 31))
    cells = set(zip(plan["variant"], plan["item"]))
    assert len(cells) == 30
    assert not cells & set(zip(obs["variant"], obs["item"]))
    gains = plan["variance_reduction"].to_numpy()
    assert (np.diff(gains) <= 1e-15).all() and (gains > 0).all()
    assert {"template", "separator"} <= set(plan.columns)
    with pytest.raises(ParameterError, match="`quantity`"):
        sparse_plan(obs, quantity="q10")


@pytest.mark.slow
def test_planned_cells_narrow_the_interval_more_than_random_cells():
    """300 planned cells vs 300 random unobserved cells added to a 5 % subsample, 8 grids.

    The posterior draws' intervals (``n_worlds=0``): the plan targets the posterior's
    uncertainty, and the calibration's 10 simulated worlds add a noise of their own that
    drowned the difference at 4 grids (0.129 planned against 0.108 random, after one-sided
    items entered the draws; 0.0764 against 0.0806 before). Measured: mean 95 %-interval width
    of q05 0.0893 (plan) against 0.1033 (random), the plan narrower on 7 of the 8 grids.
    """
    widths = []
    for seed in range(8):
        grid = full_grid(n_items=300, n_variants=150, seed=seed)
        obs = subsample_cells(grid, share=0.05, seed=seed + 50)
        plan = sparse_plan(obs, k=300, quantity="q05", n_resamples=200, seed=0)
        planned = grid.join(plan.select("variant", "item"), on=["variant", "item"], how="semi")
        unseen = grid.join(obs, on=["variant", "item"], how="anti")
        rnd = unseen.sample(300, seed=seed)
        row = []
        for extra in (planned, rnd):
            out = sparse_prompt_distribution(
                pl.concat([obs, extra]), n_resamples=200, seed=0, n_worlds=0
            )
            q = out.filter(pl.col("quantity") == "q05")
            row.append(float(q["ci_high"][0] - q["ci_low"][0]))
        widths.append(row)
    plan_w, random_w = np.mean(widths, axis=0)
    assert plan_w < random_w


def test_unit_table_of_a_full_grid_is_the_observed_unit_table():
    """Every cell observed: the representative draw is each variant's observed mean."""
    from evalstats.sparse import sparse_unit_table

    grid = full_grid(n_items=30, n_variants=10, seed=2)
    units = sparse_unit_table(grid, n_resamples=40, seed=0)
    ref = grid.group_by("variant").agg(pl.col("score").mean()).sort("variant")
    assert units["variant"].to_list() == ref["variant"].to_list()
    assert_allclose(units["score"], ref["score"], rtol=1e-12)
    assert units["n_items"].unique().to_list() == [30]


def _cells_of(grid: pl.DataFrame, share: float, seed: int):
    """CellData of a uniform subsample of a full grid, all its items kept, and the truth."""
    from evalstats.sparse._fit import CellData

    grid = grid.sort("variant", "item")
    n_v, n_i = grid["variant"].n_unique(), grid["item"].n_unique()
    y = grid["score"].to_numpy().reshape(n_v, n_i)
    p, i = np.nonzero(np.random.default_rng(seed).random(y.shape) < share)
    cells = CellData(
        item=i,
        prompt=p,
        k=y[p, i].astype(float),
        n=np.ones(i.size),
        n_items=n_i,
        n_prompts=n_v,
        levels=np.zeros((n_v, 0), dtype=np.int64),
    )
    return cells, y.mean(axis=1)


def _df_weight(prior) -> dict[float, float]:
    """Posterior weight of each Student-t df (summed over scales and slab weights)."""
    from evalstats.sparse._prior import DF, _candidates

    df = np.array([d for d, _ in _candidates(prior.grid)[1]])
    per_bulk = prior.weight.sum(axis=0)
    return {d: float(per_bulk[df == d].sum()) for d in DF}


def test_a_broken_prompt_is_kept_out_of_the_bulk():
    """Planted: one prompt shifted by -3 logits among 150 (issue 44). At 20 % of the grid its
    accuracy (0.277) is estimated within 0.03 and inside its 90 % interval; the normal prior's
    mode put it at 0.396, and the data choose heavy tails (t with 3 or 5 df, 0.91)."""
    from evalstats.sparse._draws import accuracy_draws, point_accuracy
    from evalstats.sparse._fit import fit_cells
    from evalstats.sparse._prior import prompt_prior

    grid = full_grid(
        n_items=300, n_variants=150, mean_logit=1.5, factors={}, prompt_effects="broken", seed=11
    )
    cells, truth = _cells_of(grid, 0.2, 1)
    fit = fit_cells(cells)
    j = int(truth.argmin())
    draws = accuracy_draws(cells, fit, n_resamples=100, rng=np.random.default_rng(0))
    est, (lo, hi) = draws[:, j].mean(), np.quantile(draws[:, j], [0.05, 0.95])
    normal_mode = point_accuracy(cells, fit)[j]
    assert abs(est - truth[j]) < 0.03 and lo <= truth[j] <= hi, (est, lo, hi, truth[j])
    assert abs(est - truth[j]) < abs(normal_mode - truth[j]) - 0.05
    weight = _df_weight(prompt_prior(cells, fit))
    assert weight[3.0] + weight[5.0] > 0.8, weight


def test_contaminated_prior_gives_a_broken_prompt_to_the_slab(monkeypatch):
    """With the slab candidates on (measured and left, evalstats.sparse._prior's docstring):
    the broken prompt of the test above goes to the slab (probability > 0.3; 0.45 measured) and
    keeps its likelihood's mode within 0.3 logit; no bulk prompt goes there (each < 0.1)."""
    from evalstats.sparse import _prior
    from evalstats.sparse._fit import fit_cells

    monkeypatch.setattr(_prior, "OUTLIERS", (0.5, 1.0, 2.0, 4.0, 8.0))
    grid = full_grid(
        n_items=300, n_variants=150, mean_logit=1.5, factors={}, prompt_effects="broken", seed=11
    )
    cells, truth = _cells_of(grid, 0.2, 1)
    j = int(truth.argmin())
    prior = _prior.prompt_prior(cells, fit_cells(cells))
    assert prior.eps.size == 6
    slab = prior.slab_probability()
    assert slab[j] > 0.3 and np.delete(slab, j).max() < 0.1, (slab[j], np.sort(slab)[-3:])
    mle = prior.grid[np.argmax(prior.lik[j])]
    assert abs(prior.posterior_mean()[j] - mle) < 0.3, (prior.posterior_mean()[j], mle)


def test_normal_prompt_effects_give_the_slab_little_weight(monkeypatch):
    """Slab candidates on, planted normal prompt effects (sd 0.4, 150 prompts, 20 %): no prompt
    is given to the slab (each probability < 0.2) and the posterior means equal the slab-free
    prior's within 0.02 logit."""
    from evalstats.sparse import _prior
    from evalstats.sparse._fit import fit_cells
    from evalstats.sparse._prior import PromptPrior, prompt_prior

    monkeypatch.setattr(_prior, "OUTLIERS", (0.5, 1.0, 2.0, 4.0, 8.0))
    grid = full_grid(n_items=300, n_variants=150, mean_logit=1.5, factors={}, seed=12)
    cells, _ = _cells_of(grid, 0.2, 2)
    prior = prompt_prior(cells, fit_cells(cells))
    assert prior.slab_probability().max() < 0.2
    no_slab = prior.weight[prior.eps == 0] / prior.weight[prior.eps == 0].sum()
    ref = PromptPrior(
        prior.grid, prior.lik, prior.priors, np.zeros(1), no_slab, prior.item_mode, prior.family
    )
    assert_allclose(prior.posterior_mean(), ref.posterior_mean(), atol=0.02)


def test_candidate_priors_are_scipy_student_t_densities_on_the_grid():
    """The cached closed-form kernels equal scipy.stats.t.pdf (norm.pdf for inf df), each
    normalised on the grid, to 1e-14."""
    from scipy.stats import norm
    from scipy.stats import t as student_t

    from evalstats.sparse._prior import _candidates

    grid = np.linspace(-6, 6, 481)
    priors, labels = _candidates(grid)
    for row, (df, s) in zip(priors[::37], labels[::37]):
        ref = norm.pdf(grid / s) if np.isinf(df) else student_t.pdf(grid / s, df)
        assert_allclose(row, ref / ref.sum(), atol=1e-14)
    assert not priors.flags.writeable


def test_cavity_widening_is_a_convolution_with_a_normal_on_the_grid():
    """_convolve equals the dense sum_j L(t_j) N(t_k - t_j; 0, v) on the grid, in logs, to
    1e-10, for variances from 0 (row unchanged) to 2, and keeps a far tail (a likelihood
    peaked at 3 read at -5 with v = 0.05 equals the dense value, not the row's own tail)."""
    from evalstats.sparse._prior import _convolve

    grid = np.linspace(-6, 6, 481)
    rng = np.random.default_rng(0)
    centres = np.r_[rng.normal(0, 1, 4), 3.0]
    ll = -1.5 * ((grid[None, :] - centres[:, None]) / 0.4) ** 2
    var = np.array([0.0, 0.01, 0.5, 2.0, 0.05])
    out = _convolve(ll, grid, var)
    d = grid[:, None] - grid[None, :]
    assert_allclose(out[0], ll[0])
    for p in range(1, 5):
        lik = np.exp(ll[p] - ll[p].max())
        ref = np.log(np.maximum(np.exp(-0.5 * d * d / var[p]) @ lik, 1e-300)) + ll[p].max()
        assert_allclose(out[p], ref, atol=1e-10)


def test_prior_posterior_mean_matches_a_direct_sum():
    """The vectorised posterior mean equals sum_k t_k L(t_k) g(t_k) / sum_k L g, g the mixture
    (1 - eps) t_{df,s} + eps slab, averaged by a loop over every candidate's weight."""
    from evalstats.sparse._prior import PromptPrior, _candidates

    grid = np.linspace(-6, 6, 481)
    rng = np.random.default_rng(0)
    centres, widths = rng.normal(0, 1, 7), rng.uniform(0.3, 2, 7)
    lik = np.exp(-0.5 * ((grid[None, :] - centres[:, None]) / widths[:, None]) ** 2)
    priors, labels = _candidates(grid)
    eps = np.array([0.0, 0.01, 0.1])
    weight = rng.random((eps.size, len(labels)))
    weight /= weight.sum()
    prior = PromptPrior(grid, lik, priors, eps, weight, np.zeros(3), (np.inf, 1.0, 0.0))
    ref = np.zeros(7)
    for e in range(eps.size):
        for c in range(len(labels)):
            g = (1 - eps[e]) * priors[c] + eps[e] / grid.size
            ref += weight[e, c] * (lik * g) @ grid / (lik @ g)
    assert_allclose(prior.posterior_mean(), ref, rtol=1e-10, atol=1e-12)


def test_heavy_tailed_prompt_effects_choose_a_heavy_tailed_prior():
    """Planted: Student t (3 df) prompt effects of sd 0.6: the t with 3 df weighs most (0.65
    at seed 11, 20 % of the grid)."""
    from evalstats.sparse._fit import fit_cells
    from evalstats.sparse._prior import prompt_prior

    grid = full_grid(
        n_items=300,
        n_variants=150,
        mean_logit=1.5,
        prompt_sd=0.6,
        factors={},
        prompt_effects="heavy",
        seed=11,
    )
    cells, _ = _cells_of(grid, 0.2, 1)
    prior = prompt_prior(cells, fit_cells(cells))
    weight = _df_weight(prior)
    assert weight[3.0] > 0.5, weight
    assert weight[np.inf] < 0.05, weight


def test_planted_effects_are_the_effects_full_grid_draws_from():
    """planted_effects (same arguments, same seed) gives full_grid's effects: every variant's
    accuracy over 2000 items is the mean of sigmoid(mean_logit + a_i + b_p) within 4 binomial
    standard errors, and the broken variant is the worst one."""
    from evalstats.sparse import planted_effects

    spec = dict(n_items=2000, n_variants=20, mean_logit=1.0, prompt_effects="broken", seed=5)
    grid = full_grid(**spec).sort("variant", "item")
    eff = planted_effects(**spec)
    acc = grid["score"].to_numpy().reshape(20, 2000).mean(axis=1)
    prob = 1.0 / (1.0 + np.exp(-(1.0 + eff.item[None, :] + eff.prompt_effect[:, None])))
    expected = prob.mean(axis=1)
    se = np.sqrt((prob * (1 - prob)).sum(axis=1)) / 2000
    assert np.all(np.abs(acc - expected) < 4 * se), np.abs(acc - expected) / se
    assert eff.broken == int(np.argmin(acc))
    assert eff.levels.shape == (20, 2) and [len(c) for c in eff.factor] == [3, 5]


def _prior_scale_ratio(share: float, seeds, **settings) -> float:
    """Mean over grids of the prompt prior's sd (posterior mean) / the planted effects' sd."""
    from evalstats.sparse import _prior, planted_effects
    from evalstats.sparse._fit import fit_cells

    ratios = []
    for seed in seeds:
        spec = dict(n_items=400, n_variants=100, mean_logit=1.5, prompt_sd=0.5, factors={})
        grid = full_grid(seed=seed, **spec)
        cells, _ = _cells_of(grid, share, seed + 1)
        fit = fit_cells(cells)
        old = {k: getattr(_prior, k) for k in settings}
        try:
            for k, v in settings.items():
                setattr(_prior, k, v)
            prior = _prior.prompt_prior(cells, fit)
        finally:
            for k, v in old.items():
                setattr(_prior, k, v)
        # each candidate prior's sd on the grid (a t's scale is not its sd)
        sds = np.sqrt(prior.priors @ prior.grid**2)
        planted = planted_effects(seed=seed, **spec).prompt.std()
        ratios.append(prior.weight.sum(axis=0) @ sds / planted)
    return float(np.mean(ratios))


def test_prompt_prior_scale_is_not_pulled_in_by_the_item_modes():
    """Issue 44: at 5 % (5 cells an item) the prompt prior's scale came out at 0.55 of the
    planted sd (8 fresh grids of benchmarks/bench_promptEval.py; 1.01 with the items known):
    the items' plug-in modes flatten every prompt's likelihood. Integrating each cell over its
    item's leave-one-out uncertainty (and the s^-0.5 prior on the scale) brings it to 0.78
    there. Here, 6 grids without factors: the prior's sd is 0.70 of the planted sd (0.50 with
    the previous round's likelihoods and flat prior); asserted above 0.62 and 0.12 above."""
    seeds = range(6)
    ratio = _prior_scale_ratio(0.05, seeds)
    plug_in = _prior_scale_ratio(
        0.05, seeds, _INTEGRATE=False, _PULL_BACK=0.75, _CAVITY=True, _SCALE_PRIOR_POWER=0.0
    )
    assert ratio > 0.62 and ratio > plug_in + 0.12, (ratio, plug_in)
