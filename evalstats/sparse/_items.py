"""The item variance from the items' exact marginal likelihood.

The Laplace approximation of the crossed model's marginal likelihood (:mod:`._laplace`) puts
the item variance low where items have two to five cells: on bench_promptEval's grids at 2 %
(two cells an item) the item sd came out at 1.16 for a planted 1.5 (12 fresh grids), and
with it every prompt's likelihood, whose cells are integrated over their items' uncertainty
(:mod:`._prior`), came out too flat: the prompt prior's scale 0.28 for a realised prompt sd of
0.53 (0.34 with the true item sd).

Here the items are integrated out one at a time:

    L(mu, s) = prod_i int prod_{c in i} P(k_c | mu + a + b_c) N(a; 0, s^2) da,

each item's integral by adaptive Gauss-Hermite quadrature around its mode, and maximised over
the intercept and s together (the two trade off: a wider item distribution needs a higher
intercept for the same accuracy); the intercept found is not used: the joint mode's stays,
refitted at the new variance. (Taking it too, on grids where most items are right under every
prompt, put it 3 logits above the mode's and the prompts' sd at 4.6 times the truth:
tests/sparse/test_one_sided.py.) Each cell's prompt effect b_c is the prompt's posterior
without that cell (its mean less the cell's own pull, g / (H_p - w), and its variance
1 / (H_p - w)), integrated in by the probit approximation: a prompt's mode took part of each
of its cells' deviations, and a cell scored against it would look less like its item's other
cells than it is, which reads as a narrower item distribution (the same leave-one-out the
prompt likelihoods of :mod:`._prior` take over the items).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import minimize
from scipy.special import expit

from evalstats.sparse._fit import CellData

__all__ = ["item_variance", "marginal"]

#: Gauss-Hermite nodes of each item's integral.
NODES = 16
#: Largest standard error of log s (from the likelihood's curvature) at which the items' own
#: estimate is taken. Where items are seen once each, their cells tell only the accuracy, not
#: the spread: the likelihood is a ridge in (intercept, s) and the standard error was 12-75
#: (200 cells of a 100 x 545 grid); with two cells an item on average it is 0.15-0.25, with one
#: 0.22-0.32 (bench_promptEval's grids at 2 % and 1 %).
MAX_SD_LOG = 1.0


def item_variance(
    cells: CellData,
    mu: float,
    a_mode: np.ndarray,
    a_var: np.ndarray,
    b_mean: np.ndarray,
    b_var: np.ndarray,
) -> float | None:
    """The item variance maximising the items' marginal likelihood (module docstring).

    None where the items cannot tell their spread (:data:`MAX_SD_LOG`). ``a_mode`` and ``a_var`` centre and scale each item's quadrature; ``b_mean`` and ``b_var``
    are every prompt's posterior mean and variance (factor levels included) with all its cells;
    ``mu`` starts the intercept.
    """
    minus = marginal(cells, mu, a_mode, a_var, b_mean, b_var)
    seen = np.bincount(cells.item, minlength=cells.n_items) > 0
    start = 0.5 * np.log(max(float(np.mean(a_var[seen] + a_mode[seen] ** 2)), 1e-2))
    res = minimize(
        minus, np.array([0.0, start]), method="Nelder-Mead", options={"xatol": 1e-3, "fatol": 1e-4}
    )
    # the curvature in (shift, log s) by central differences: how well the items tell the sd
    h = 1e-2
    steps = np.eye(2) * h
    hess = np.empty((2, 2))
    for i in range(2):
        for j in range(2):
            hess[i, j] = (
                minus(res.x + steps[i] + steps[j])
                - minus(res.x + steps[i] - steps[j])
                - minus(res.x - steps[i] + steps[j])
                + minus(res.x - steps[i] - steps[j])
            ) / (4 * h * h)
    try:
        sd_log_s = float(np.sqrt(max(np.linalg.inv(hess)[1, 1], 0.0)))
    except np.linalg.LinAlgError:
        sd_log_s = np.inf
    if not sd_log_s <= MAX_SD_LOG:
        return None
    return float(np.exp(2.0 * res.x[1]))


def marginal(
    cells: CellData,
    mu: float,
    a_mode: np.ndarray,
    a_var: np.ndarray,
    b_mean: np.ndarray,
    b_var: np.ndarray,
):
    """``(shift, log s) -> -log L(mu + shift, s)`` of the module docstring.

    The cells' leave-one-out prompt effects, the quadrature nodes and the item sums are set up
    once.
    """
    eta0 = mu + a_mode[cells.item] + b_mean[cells.prompt]
    p0 = expit(eta0)
    w = cells.n * p0 * (1 - p0)
    h = 1.0 / np.maximum(b_var[cells.prompt], 1e-8)
    h_out = np.maximum(h - w, 0.5 * h)
    b_out = b_mean[cells.prompt] - (cells.k - cells.n * p0) / h_out
    kappa = 1.0 / np.sqrt(1.0 + np.pi / (8.0 * h_out))
    x, wq = np.polynomial.hermite.hermgauss(NODES)
    sd = np.sqrt(a_var)
    nodes = a_mode[:, None] + np.sqrt(2.0) * sd[:, None] * x[None, :]  # items x nodes
    seen = np.bincount(cells.item, minlength=cells.n_items) > 0
    # int f(a) da = sum_j w_j e^{x_j^2} sqrt(2) sd f(mode + sqrt(2) sd x_j)
    log_w = (np.log(wq)[None, :] + x[None, :] ** 2 + np.log(np.sqrt(2.0) * sd)[:, None])[seen]
    nodes_seen = nodes[seen]
    rows = np.cumsum(seen) - 1
    m = cells.item.size
    to_item = sp.csr_matrix((np.ones(m), (rows[cells.item], np.arange(m))), (int(seen.sum()), m))
    cell_nodes = b_out[:, None] + nodes[cells.item]
    k, n = cells.k[:, None], cells.n[:, None]

    def minus(par: np.ndarray) -> float:
        shift, log_s = par
        s2 = np.exp(2.0 * log_s)
        eta = kappa[:, None] * (mu + shift + cell_nodes)
        loglik = to_item @ (k * eta - n * np.logaddexp(0.0, eta))
        t = loglik + log_w - 0.5 * nodes_seen**2 / s2 - 0.5 * np.log(2.0 * np.pi * s2)
        top = t.max(axis=1, keepdims=True)
        return -float(np.sum(top[:, 0] + np.log(np.exp(t - top).sum(axis=1))))

    return minus
