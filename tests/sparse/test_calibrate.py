"""The parametric-bootstrap calibration of the sparse estimator's intervals (sparse._calibrate)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from numpy.testing import assert_allclose
from scipy import stats as sps

from evalstats.errors import ParameterError
from evalstats.sparse import full_grid, sparse_prompt_distribution, subsample_cells
from evalstats.sparse._calibrate import _invert, calibrate
from evalstats.sparse._draws import accuracy_draws, statistics_of
from evalstats.sparse._fit import fit_cells
from evalstats.sparse._prior import prompt_prior
from tests.sparse._cells import subsample_as_cells as _cells


def test_inversion_is_the_statsmodels_prediction_interval_read_backwards():
    """E = alpha + beta T fitted by statsmodels OLS: at the interval's ends the 90 % prediction
    interval of E just holds E_obs (upper bound at the low end, lower bound at the high end),
    to the inversion grid's resolution."""
    import statsmodels.api as sm

    rng = np.random.default_rng(0)
    t = np.linspace(0.04, 0.16, 10) + rng.normal(0, 0.003, 10)
    e = 0.02 + 0.6 * t + rng.normal(0, 0.01, 10)
    e_obs = 0.08
    res = sm.OLS(e, sm.add_constant(t)).fit()
    lo, hi = _invert(t, e, e_obs, float(sps.t.ppf(0.95, 8)))
    frame = res.get_prediction(np.array([[1.0, lo], [1.0, hi]])).summary_frame(alpha=0.1)
    step = 2 * np.ptp(t) / 2000 * res.params[1]  # one grid step, on the scale of E
    assert_allclose(frame["obs_ci_upper"].iloc[0], e_obs, atol=step)
    assert_allclose(frame["obs_ci_lower"].iloc[1], e_obs, atol=step)


def test_inverted_interval_covers_a_planted_shrinkage_at_its_level():
    """Worlds where the estimator returns 0.02 + 0.6 T + N(0, 0.01): 4000 repetitions of 8
    worlds, the 90 % interval holds T in 0.90 of them (Monte Carlo se 0.005)."""
    rng = np.random.default_rng(1)
    t_q = float(sps.t.ppf(0.95, 6))
    hits = 0
    for _ in range(4000):
        t = np.linspace(0.04, 0.16, 8) + rng.normal(0, 0.003, 8)
        e = 0.02 + 0.6 * t + rng.normal(0, 0.01, 8)
        lo, hi = _invert(t, e, 0.02 + 0.6 * 0.09 + rng.normal(0, 0.01), t_q)
        hits += lo <= 0.09 <= hi
    assert abs(hits / 4000 - 0.90) < 0.02


def test_an_undetermined_slope_falls_back_to_taking_off_the_mean_error():
    """Every world with the same truth: no slope to invert; E_obs minus the mean error, -+ t
    times the errors' sd times sqrt(1 + 1/B)."""
    t = np.full(6, 0.1)
    e = np.array([0.07, 0.08, 0.075, 0.085, 0.07, 0.08])
    t_q = float(sps.t.ppf(0.95, 4))
    lo, hi = _invert(t, e, 0.06, t_q)
    d = e - t
    centre = 0.06 - d.mean()
    half = t_q * d.std(ddof=1) * np.sqrt(1 + 1 / 6)
    assert_allclose([lo, hi], [centre - half, centre + half], rtol=1e-12)


def test_a_full_grid_is_not_calibrated_and_keeps_a_zero_width_interval():
    grid = full_grid(n_items=40, n_variants=12, factors={}, seed=3)
    cells, truth = _cells(grid, 1.0, 0)
    fit = fit_cells(cells)
    prior = prompt_prior(cells, fit)
    rng = np.random.default_rng(0)
    draws = accuracy_draws(cells, fit, n_resamples=30, rng=rng, prior=prior)
    cal = calibrate(cells, fit, prior, draws, n_worlds=8, world_resamples=20, rng=rng)
    assert cal.n_worlds == 0
    est, lo, hi = cal.interval(0.9)
    assert_allclose(est, statistics_of(truth)[0], atol=1e-12)
    assert_allclose(hi - lo, 0.0, atol=1e-12)


def test_worlds_share_the_design_and_are_seeded():
    """Each world keeps the group's cells (items, prompts, runs); the same seed, the same worlds."""
    grid = full_grid(n_items=120, n_variants=30, factors={}, prompt_sd=0.6, seed=4)
    cells, _ = _cells(grid, 0.1, 1)
    fit = fit_cells(cells)
    prior = prompt_prior(cells, fit)

    def run(seed):
        rng = np.random.default_rng(seed)
        draws = accuracy_draws(cells, fit, n_resamples=30, rng=rng, prior=prior)
        return calibrate(cells, fit, prior, draws, n_worlds=4, world_resamples=20, rng=rng)

    a, b = run(5), run(5)
    assert a.n_worlds == 4
    assert_allclose(a.truth, b.truth)
    assert_allclose(a.fitted, b.fitted)
    # the worlds' spreads differ (the stretch), so the sd's slope can be fitted
    assert np.ptp(a.truth[:, 1]) > 0.01


def test_calibration_keeps_the_estimate_and_only_widens_the_interval():
    grid = full_grid(n_items=150, n_variants=30, factors={}, prompt_sd=0.6, seed=6)
    obs = subsample_cells(grid, share=0.06, seed=6)
    raw = sparse_prompt_distribution(obs, n_resamples=100, seed=2, n_worlds=0)
    cal = sparse_prompt_distribution(obs, n_resamples=100, seed=2, n_worlds=4)
    assert_allclose(cal["estimate"], raw["estimate"], rtol=1e-12)
    assert (cal["ci_low"] <= raw["ci_low"] + 1e-12).all()
    assert (cal["ci_high"] >= raw["ci_high"] - 1e-12).all()
    assert "parametric bootstrap (4 simulated grids)" in cal["method"][0]
    assert "bootstrap" not in raw["method"][0]


@pytest.mark.parametrize("bad", [1, 2, -1, 2.5])
def test_n_worlds_is_validated(bad):
    obs = subsample_cells(full_grid(n_items=30, n_variants=10, seed=0), share=0.5, seed=0)
    with pytest.raises(ParameterError, match="`n_worlds`"):
        sparse_prompt_distribution(obs, n_resamples=20, n_worlds=bad)


def _coverage(reps: int, share: float, scheme: str, n_worlds: int, seed0: int) -> np.ndarray:
    """Coverage of the 90 % intervals of every statistic over fresh grids (a new grid each)."""
    hits = []
    for rep in range(reps):
        grid = full_grid(
            n_items=200,
            n_variants=50,
            mean_logit=1.5,
            prompt_sd=0.5,
            factors={},
            seed=seed0 + rep,
        )
        acc = grid.group_by("variant").agg(pl.col("score").mean())["score"].to_numpy()
        t = statistics_of(acc)[0]
        obs = subsample_cells(grid, share=share, scheme=scheme, seed=rep)
        out = sparse_prompt_distribution(  # the truth is over every item, seen or not
            obs,
            n_resamples=100,
            seed=rep,
            confidence_level=0.9,
            n_worlds=n_worlds,
            grid_items=200,
        )
        hits.append((out["ci_low"].to_numpy() <= t) & (t <= out["ci_high"].to_numpy()))
    return np.mean(hits, axis=0)


@pytest.mark.parametrize(
    ("share", "low", "high", "seeds"),
    [(0.03, 0.0, 0.85, range(5, 12)), (0.3, 0.85, 1.15, (7, 8))],
)
def test_worlds_measure_the_inward_pull_of_the_spread(share, low, high, seeds):
    """40 x 160 grids: at 3 % the estimator's sd moves by less than 0.85 of the worlds' true sd
    (the raw intervals sit too low), at 30 % by about 1; the slope averaged over grids (one
    grid's six worlds give anything from -0.5 to 1.5). At 5 % the mean over seeds 5-11 was
    0.73 before issue 44's sixth round and is 0.87 after it (the items' exact variance: less
    pull), at 3 % 0.57. At 3 % the calibrated upper end of the sd reaches above the draws' on
    most grids."""
    slopes, above = [], []
    for seed in seeds:
        grid = full_grid(
            n_items=160, n_variants=40, mean_logit=1.5, prompt_sd=0.6, factors={}, seed=seed
        )
        cells, _ = _cells(grid, share, seed)
        fit = fit_cells(cells)
        prior = prompt_prior(cells, fit)
        rng = np.random.default_rng(0)
        draws = accuracy_draws(cells, fit, n_resamples=50, rng=rng, prior=prior)
        cal = calibrate(cells, fit, prior, draws, n_worlds=6, world_resamples=20, rng=rng)
        slopes.append(np.polyfit(cal.truth[:, 1], cal.fitted[:, 1], 1)[0])
        _, _, hi = cal.interval(0.9)
        _, c_hi = cal.calibrated(0.9)
        above.append(c_hi[1] > np.quantile(cal.draws_stats[:, 1], 0.95) and hi[1] == c_hi[1])
    assert low <= np.mean(slopes) <= high, slopes
    if share < 0.1:  # the calibrated interval reaches above the draws' one
        assert np.mean(above) >= 0.7, above


@pytest.mark.slow
@pytest.mark.parametrize("scheme", ["uniform", "walk"])
@pytest.mark.parametrize("share", [0.04, 0.1])
def test_calibrated_intervals_cover_over_fresh_grids(share, scheme):
    """60 fresh 50 x 200 grids per budget and scheme (4 %: two cells an item and eight a
    prompt, as 2 % of bench_promptEval's grids; 10 %: five and twenty): the 90 % intervals
    cover 0.88 on average over the statistics and none below 0.78 (three binomial se of 0.039
    under 0.9; the draws alone covered the sd 0.57-0.68 at 2 % on bench_sparse_coverage.py's
    grids)."""
    cover = _coverage(60, share, scheme, 10, 10_000)
    assert cover.mean() >= 0.88, cover
    assert cover.min() >= 0.78, cover
