"""The Laplace marginal likelihood's exact gradient, against central differences."""

from __future__ import annotations

import numpy as np
import pytest

from evalstats.sparse import _fit as F
from evalstats.sparse._laplace import _objective
from tests.sparse._cells import planted_cells


def _cells(n_items: int, n_prompts: int, share: float, seed: int, factors: tuple[int, ...]):
    return planted_cells(
        n_items, n_prompts, share, seed, factors, mean=1.0, item_sd=1.5, prompt_sd=0.4
    )


@pytest.mark.parametrize(
    ("n_items", "n_prompts", "share", "factors"),
    [
        (300, 60, 0.05, ()),  # items are the diagonal block
        (200, 80, 0.1, (3, 5)),  # with two prompt factors
        (40, 150, 0.2, (4,)),  # prompts are the diagonal block
    ],
)
def test_gradient_is_the_objectives_derivative(n_items, n_prompts, share, factors) -> None:
    cells = _cells(n_items, n_prompts, share, seed=n_items, factors=factors)
    x, blocks = F._design(cells)
    xt = x.T.tocsr()
    structure = F._Blocks(cells, blocks)
    k, n = cells.k, cells.n

    def objective(logv: np.ndarray):
        lam = F._precision(blocks, list(np.exp(logv)))
        theta, ok = F._mode(x, xt, k, n, lam, np.zeros(blocks[-1].stop), structure)
        assert ok
        return _objective(x, k, n, structure, lam, theta, blocks[1:])

    logv = np.log(np.r_[1.2, [0.15] * len(factors), 0.2])
    _, grad = objective(logv)
    h = 1e-5
    numeric = []
    for j in range(logv.size):
        e = np.zeros(logv.size)
        e[j] = h
        numeric.append((objective(logv + e)[0] - objective(logv - e)[0]) / (2 * h))
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-6)


def test_fitted_variances_are_stationary_or_at_a_bound(monkeypatch) -> None:
    """The Laplace step's optimum (the steps after it, the items' exact variance and the
    factors' posterior medians, off: they move away from it on purpose)."""
    monkeypatch.setattr(F, "_EXACT_ITEMS", False)
    monkeypatch.setattr(F, "_FACTOR_MEDIAN", False)
    cells = _cells(300, 60, 0.1, seed=3, factors=(3,))
    fit = F.fit_cells(cells)
    x, blocks = F._design(cells)
    structure = F._Blocks(cells, blocks)
    variances = [fit.var_item, *fit.var_factor, fit.var_prompt]
    lam = F._precision(blocks, variances)
    theta = np.r_[fit.mu, fit.a, *fit.c, fit.u]
    _, grad = _objective(x, cells.k, cells.n, structure, lam, theta, blocks[1:])
    at_floor = np.isclose(variances, F._MIN_VAR, rtol=1e-3)
    # a variance at its floor may have a positive derivative (it would go lower); the others
    # are at a stationary point of the marginal likelihood
    assert np.all(np.abs(grad[~at_floor]) < 1e-2), grad
    assert np.all(grad[at_floor] > -1e-2), grad


@pytest.mark.parametrize(("share", "factors"), [(0.03, ()), (0.1, (3, 4)), (0.4, (2,))])
def test_sparse_and_dense_cross_blocks_agree(monkeypatch, share, factors) -> None:
    """The Schur complement from the cross block's row pairs equals the dense product's."""
    cells = _cells(250, 70, share, seed=7, factors=factors)
    x, blocks = F._design(cells)
    rng = np.random.default_rng(1)
    w = rng.uniform(0.05, 0.25, cells.item.size)
    lam = F._precision(blocks, [0.7, *[2.0] * len(factors), 1.5])
    g = rng.standard_normal(blocks[-1].stop)
    monkeypatch.setattr(F, "_PAIR_COST", 0)
    sparse = F._Blocks(cells, blocks)
    monkeypatch.setattr(F, "_PAIR_COST", 10**12)
    dense = F._Blocks(cells, blocks)
    assert sparse.pairs is not None and dense.pairs is None
    np.testing.assert_allclose(sparse.solve(w, lam, g), dense.solve(w, lam, g), rtol=1e-10)
    ls, ds, vs, solve_s = sparse.inverse(w, lam)
    ld, dd, vd, solve_d = dense.inverse(w, lam)
    assert ls == pytest.approx(ld, rel=1e-12)
    np.testing.assert_allclose(ds, dd, rtol=1e-10)
    np.testing.assert_allclose(vs, vd, rtol=1e-10)
    np.testing.assert_allclose(solve_s(g), solve_d(g), rtol=1e-10)
    # and both equal the dense Hessian's own inverse
    h = (x.T @ (x.multiply(w[:, None]))).toarray() + np.diag(lam)
    hinv = np.linalg.inv(h)
    np.testing.assert_allclose(dd, np.diag(hinv), rtol=1e-8)
    lev = np.einsum("ij,jk,ik->i", x.toarray(), hinv, x.toarray())
    np.testing.assert_allclose(vd, lev, rtol=1e-8)
    assert ld == pytest.approx(np.linalg.slogdet(h)[1], rel=1e-10)
