"""The variances after the Laplace step: the items' exact marginal likelihood and the factors'
posterior medians (issue 44, sixth round)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, optimize
from scipy.special import expit

from evalstats.sparse import _fit as F
from evalstats.sparse._items import item_variance, marginal
from evalstats.sparse._laplace import SD_HIGH, SD_LOW, factor_variances
from tests.sparse._cells import planted_cells as _cells


def _laplace_state(cells, variances):
    """Mode, structure and precision of the fit at given variances."""
    x, blocks = F._design(cells)
    xt = x.T.tocsr()
    structure = F._Blocks(cells, blocks)
    lam = F._precision(blocks, variances)
    theta, ok = F._mode(x, xt, cells.k, cells.n, lam, np.zeros(blocks[-1].stop), structure)
    assert ok
    return x, blocks, structure, lam, theta


def test_rest_covariance_is_the_dense_inverse_block() -> None:
    cells = _cells(150, 60, 0.1, seed=1, factors=(3, 5))
    x, blocks, structure, lam, theta = _laplace_state(cells, [1.5, 0.1, 0.2, 0.3])
    w = expit(x @ theta) * (1 - expit(x @ theta))
    dense = np.linalg.inv((x.T @ x.multiply(w[:, None])).toarray() + np.diag(lam))
    for blk in blocks[2:-1]:
        params = np.arange(blk.start, blk.stop)
        np.testing.assert_allclose(
            structure.rest_covariance(w, lam, params), dense[np.ix_(params, params)], rtol=1e-8
        )


def test_factor_sd_is_the_posterior_median_of_its_levels_likelihood() -> None:
    """Against scipy: the levels' Gaussian likelihood at the mode, c^ ~ N(0, A^-1 + sd^2 I),
    integrated over a flat prior on the sd by adaptive quadrature, its median by root finding."""
    cells = _cells(200, 80, 0.05, seed=4, factors=(4,))
    variances = [1.5, 0.05, 0.3]
    x, blocks, structure, lam, theta = _laplace_state(cells, variances)
    got = np.sqrt(factor_variances(structure, x, cells.n, theta, variances, lam, blocks)[1])
    w = expit(x @ theta) * (1 - expit(x @ theta))
    dense = np.linalg.inv((x.T @ x.multiply(w[:, None])).toarray() + np.diag(lam))
    blk = blocks[2]
    cov = dense[blk, blk]
    info = np.linalg.inv(cov) - np.eye(cov.shape[0]) / variances[1]  # the levels' own
    c_hat = np.linalg.solve(info, np.linalg.solve(cov, theta[blk]))

    def density(sd: float) -> float:
        total = np.linalg.inv(info) + sd * sd * np.eye(cov.shape[0])
        sign, logdet = np.linalg.slogdet(total)
        return float(np.exp(-0.5 * (logdet + c_hat @ np.linalg.solve(total, c_hat))))

    mass = integrate.quad(density, SD_LOW, SD_HIGH, limit=200, points=[0.1, 0.5, 1.0])[0]

    def below(m: float) -> float:
        return integrate.quad(density, SD_LOW, m, limit=200)[0] / mass - 0.5

    want = optimize.brentq(below, SD_LOW, SD_HIGH, xtol=1e-6)
    assert got == pytest.approx(want, rel=0.02)


@pytest.mark.parametrize(("n_levels", "low", "high"), [(2, 1.0, np.inf), (25, 0.8, 1.3)])
def test_few_levels_are_barely_shrunk_many_keep_their_mode(n_levels, low, high) -> None:
    """Two levels cannot tell their sd: its posterior median lies far out (the levels are as
    fixed effects). Twenty-five levels tell it: the median is near the Laplace mode."""
    cells = _cells(300, 100, 0.1, seed=n_levels, factors=(n_levels,))
    x, blocks, structure, lam, theta = _laplace_state(cells, [1.5, 0.09, 0.3])
    from evalstats.sparse._laplace import laplace_variances

    xt = x.T.tocsr()
    variances, theta = laplace_variances(
        x,
        cells.k,
        cells.n,
        structure,
        [1.5, 0.09, 0.3],
        theta,
        lambda lam_, t0: F._mode(x, xt, cells.k, cells.n, lam_, t0, structure),
        lambda v: F._precision(blocks, v),
        F._MIN_VAR,
        blocks,
    )
    lam = F._precision(blocks, variances)
    median = factor_variances(structure, x, cells.n, theta, variances, lam, blocks)[1]
    ratio = np.sqrt(median / variances[1])
    if np.isinf(high):  # an absolute bound: the mode of a 2-level factor may sit at its floor
        assert np.sqrt(median) >= low, (median, variances[1])
    else:
        assert low <= ratio <= high, (median, variances[1])


def test_three_and_five_levels_are_not_shrunk_to_nothing() -> None:
    """Two factors of 3 and 5 levels (planted sd 0.3) at 2 % of 100 x 400, 12 grids: the
    Laplace mode put each factor's sd at its floor (0.01) on 3 of the 12 grids, shrinking
    well-measured levels to nothing; the posterior median puts none below 0.15."""
    sds = np.array(
        [
            np.sqrt(F.fit_cells(_cells(400, 100, 0.02, 100 + s, (3, 5), prompt_sd=0.4)).var_factor)
            for s in range(12)
        ]
    )
    assert sds.min() > 0.15, sds


def test_items_marginal_likelihood_is_the_integral_of_each_item() -> None:
    """log L of :func:`marginal` against scipy's adaptive quadrature of every item's integral,
    the same leave-one-out prompt effects, at two (intercept, sd) points; its gradient and
    Hessian against central differences."""
    cells = _cells(40, 30, 0.1, seed=7)
    fit = F.fit_cells(cells)
    b_var = fit.u_var
    loglik = marginal(cells, fit.mu, (fit.a, fit.a_var), (fit.u, b_var))
    # the leave-one-out prompt effects, as the module docstring defines them
    p0 = expit(fit.mu + fit.a[cells.item] + fit.u[cells.prompt])
    w = p0 * (1 - p0)
    h = 1.0 / b_var[cells.prompt]
    h_out = np.maximum(h - w, 0.5 * h)
    b_out = fit.u[cells.prompt] - (cells.k - p0) / h_out
    kappa = 1.0 / np.sqrt(1.0 + np.pi / (8.0 * h_out))
    for shift, sd in [(0.0, 1.2), (0.3, 2.0)]:
        total = 0.0
        for i in np.unique(cells.item):
            c = cells.item == i

            def integrand(a, c=c, sd=sd, shift=shift):
                eta = kappa[c] * (fit.mu + shift + a + b_out[c])
                p = expit(eta)
                lik = np.prod(np.where(cells.k[c] > 0.5, p, 1 - p))
                return lik * np.exp(-0.5 * a * a / sd**2) / np.sqrt(2 * np.pi * sd**2)

            total += np.log(integrate.quad(integrand, -12 * sd, 12 * sd, limit=200)[0])
        par = np.array([shift, np.log(sd)])
        assert loglik(par) == pytest.approx(total, rel=1e-4)
        # and its gradient and Hessian against central differences
        _, grad, hess = loglik(par, derivatives=True)
        eps = 1e-4
        for j in range(2):
            e = np.eye(2)[j] * eps
            assert grad[j] == pytest.approx(
                (loglik(par + e) - loglik(par - e)) / (2 * eps), rel=1e-4, abs=1e-6
            )
            g_plus, g_minus = loglik(par + e, True)[1], loglik(par - e, True)[1]
            np.testing.assert_allclose(
                hess[:, j], (g_plus - g_minus) / (2 * eps), rtol=1e-4, atol=1e-6
            )


def test_exact_item_variance_is_closer_to_the_planted_one() -> None:
    """Two cells an item (2 % of 100 x 400, item sd 1.5, prompt sd 0.58): the Laplace fit put
    the item sd at 1.01 on average over 10 grids, the items' exact likelihood at 1.28; at 20 %
    both 1.44-1.46."""
    exact, laplace = [], []
    for seed in range(10):
        cells = _cells(400, 100, 0.02, seed=seed)
        exact.append(np.sqrt(F.fit_cells(cells).var_item))
        F._EXACT_ITEMS = False
        try:
            laplace.append(np.sqrt(F.fit_cells(cells).var_item))
        finally:
            F._EXACT_ITEMS = True
    assert np.mean(exact) > 1.15 and np.mean(exact) > np.mean(laplace) + 0.15, (exact, laplace)


def test_items_seen_once_each_keep_the_laplace_variance() -> None:
    """One cell an item: the cells tell the accuracy, not the spread; the items' own estimate
    is refused (its standard error of log s was 12-75) and the Laplace value kept."""
    rng = np.random.default_rng(3)
    n_items, n_prompts = 500, 100
    item = rng.permutation(n_items)[:200]
    prompt = np.repeat(np.arange(n_prompts), 2)
    y = rng.random(200) < 0.8
    cells = F.CellData(
        item=item.astype(np.int64),
        prompt=prompt.astype(np.int64),
        k=y.astype(float),
        n=np.ones(200),
        n_items=n_items,
        n_prompts=n_prompts,
        levels=np.zeros((n_prompts, 0), dtype=np.int64),
    )
    fit = F.fit_cells(cells)
    assert item_variance(cells, fit.mu, (fit.a, fit.a_var), (fit.u, fit.u_var)) is None


def test_items_never_observed_are_drawn_around_the_items_own_intercept() -> None:
    """A grid like PromptEval's MMLU one (67 % of the items right under every prompt, 8 %
    wrong; tests/sparse/test_one_sided.py), 2 % of 545 x 100: 10-15 % of the items are never
    observed. Drawn around the joint mode's intercept with the wider item distribution their
    accuracy came out too close to 1/2: the grid's mean off by 0.019 on average over 6 grids;
    around the intercept the items' exact likelihood pairs with the variance, 0.010."""
    import dataclasses

    from evalstats.sparse._draws import accuracy_draws
    from tests.sparse._cells import subsample_as_cells
    from tests.sparse.test_one_sided import _saturated_grid

    errors = {True: [], False: []}
    for seed in range(6):
        cells, truth = subsample_as_cells(_saturated_grid(seed, 545, 100), 0.02, seed)
        fit = F.fit_cells(cells)
        assert fit.mu_marginal is not None
        for own in (True, False):
            used = fit if own else dataclasses.replace(fit, mu_marginal=None)
            draws = accuracy_draws(cells, used, n_resamples=100, rng=np.random.default_rng(0))
            errors[own].append(abs(draws.mean() - truth.mean()))
    assert np.mean(errors[True]) < 0.013, errors
    assert np.mean(errors[True]) < 0.7 * np.mean(errors[False]), errors
