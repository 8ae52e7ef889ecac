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
intercept for the same accuracy). The joint mode's intercept stays where the items are seen,
refitted at the new variance; the items never observed are drawn from the pair found
(:mod:`._draws`): the joint mode's intercept with the wider item distribution put their mean
accuracy too close to 1/2 (PromptEval's real MMLU grid at 2 %, 13 % of the items unseen:
the grid's mean 0.021 off against 0.015). (Taking the intercept for the seen items too, on
grids where most items are right under every prompt, put it 3 logits above the mode's and the
prompts' sd at 4.6 times the truth: tests/sparse/test_one_sided.py.) Each cell's prompt effect b_c is the prompt's posterior
without that cell (its mean less the cell's own pull, g / (H_p - w), and its variance
1 / (H_p - w)), integrated in by the probit approximation: a prompt's mode took part of each
of its cells' deviations, and a cell scored against it would look less like its item's other
cells than it is, which reads as a narrower item distribution (the same leave-one-out the
prompt likelihoods of :mod:`._prior` take over the items).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.special import expit

__all__ = ["item_variance", "marginal"]

#: Gauss-Hermite nodes of each item's integral.
NODES = 16
#: Largest standard error of log s (from the likelihood's curvature) at which the items' own
#: estimate is taken. Where items are seen once each, their cells tell only the accuracy, not
#: the spread: the likelihood is a ridge in (intercept, s) and the standard error was 12-75
#: (200 cells of a 100 x 545 grid); with two cells an item on average it is 0.15-0.25, with one
#: 0.22-0.32 (bench_promptEval's grids at 2 % and 1 %).
MAX_SD_LOG = 1.0
#: Most Newton steps of :func:`item_variance`.
_MAX_STEPS = 50


def item_variance(
    cells,
    mu: float,
    items: tuple[np.ndarray, np.ndarray],
    prompts: tuple[np.ndarray, np.ndarray],
) -> tuple[float, float] | None:
    """The (item variance, intercept) maximising the items' marginal likelihood (module doc).

    ``cells`` is the group's :class:`~evalstats.sparse._fit.CellData` (not imported here:
    :mod:`._fit` calls this module). None where the items cannot tell their spread
    (:data:`MAX_SD_LOG`). ``items`` (modes and
    posterior variances) centre and scale each item's quadrature; ``prompts`` are every
    prompt's posterior mean and variance (factor levels included) with all its cells; ``mu``
    starts the intercept. Newton steps on (shift of the intercept, log s) with the exact
    gradient and Hessian of the quadrature sums, halved until the likelihood rises.
    """
    loglik = marginal(cells, mu, items, prompts)
    a_mode, a_var = items
    seen = np.bincount(cells.item, minlength=cells.n_items) > 0
    par = np.array([0.0, 0.5 * np.log(max(float(np.mean(a_var[seen] + a_mode[seen] ** 2)), 1e-2))])
    value, grad, hess = loglik(par, derivatives=True)
    for _ in range(_MAX_STEPS):
        try:
            step = -np.linalg.solve(hess, grad)
        except np.linalg.LinAlgError:
            return None
        if grad @ step <= 0:  # not an ascent direction (the Hessian is not negative): gradient
            step = grad / max(float(np.abs(np.diag(hess)).max()), 1.0)
        t = 1.0
        for _ in range(30):
            found = loglik(par + t * step, derivatives=True)
            if found[0] >= value - 1e-10 * abs(value):
                break
            t *= 0.5
        else:
            break
        par = par + t * step
        value, grad, hess = found
        if np.max(np.abs(t * step)) < 1e-5:
            break
    # the standard error of log s from the curvature: how well the items tell the sd
    try:
        sd_log_s = float(np.sqrt(max(-np.linalg.inv(hess)[1, 1], 0.0)))
    except np.linalg.LinAlgError:
        sd_log_s = np.inf
    if not sd_log_s <= MAX_SD_LOG:
        return None
    return float(np.exp(2.0 * par[1])), float(mu + par[0])


def marginal(
    cells,
    mu: float,
    items: tuple[np.ndarray, np.ndarray],
    prompts: tuple[np.ndarray, np.ndarray],
):
    """``(shift, log s) -> log L(mu + shift, s)`` of the module docstring.

    The cells' leave-one-out prompt effects, the quadrature nodes and the item sums are set up
    once. With ``derivatives=True`` it also returns the gradient and the Hessian: with item
    i's node terms t_ij and their softmax weights pi_ij, d log L_i = E_pi[dt] and
    d2 log L_i = E_pi[d2 t] + Cov_pi(dt, dt').
    """
    (a_mode, a_var), (b_mean, b_var) = items, prompts
    eta0 = mu + a_mode[cells.item] + b_mean[cells.prompt]
    p0 = expit(eta0)
    w = cells.n * p0 * (1 - p0)
    h = 1.0 / np.maximum(b_var[cells.prompt], 1e-8)
    h_out = np.maximum(h - w, 0.5 * h)
    b_out = b_mean[cells.prompt] - (cells.k - cells.n * p0) / h_out
    kappa = (1.0 / np.sqrt(1.0 + np.pi / (8.0 * h_out)))[:, None]
    x, wq = np.polynomial.hermite.hermgauss(NODES)
    sd = np.sqrt(a_var)
    nodes = a_mode[:, None] + np.sqrt(2.0) * sd[:, None] * x[None, :]  # items x nodes
    seen = np.bincount(cells.item, minlength=cells.n_items) > 0
    # int f(a) da = sum_j w_j e^{x_j^2} sqrt(2) sd f(mode + sqrt(2) sd x_j)
    log_w = (np.log(wq)[None, :] + x[None, :] ** 2 + np.log(np.sqrt(2.0) * sd)[:, None])[seen]
    sq = nodes[seen] ** 2
    rows = np.cumsum(seen) - 1
    m = cells.item.size
    to_item = sp.csr_matrix((np.ones(m), (rows[cells.item], np.arange(m))), (int(seen.sum()), m))
    cell_nodes = b_out[:, None] + nodes[cells.item]
    k, n = cells.k[:, None], cells.n[:, None]

    def loglik(par: np.ndarray, derivatives: bool = False):
        shift, log_s = par
        s2 = np.exp(2.0 * log_s)
        eta = kappa * (mu + shift + cell_nodes)
        t = to_item @ (k * eta - n * np.logaddexp(0.0, eta))
        t += log_w - 0.5 * sq / s2 - 0.5 * np.log(2.0 * np.pi * s2)
        top = t.max(axis=1, keepdims=True)
        e = np.exp(t - top)
        total = e.sum(axis=1)
        value = float(np.sum(top[:, 0] + np.log(total)))
        if not derivatives:
            return value
        pi = e / total[:, None]
        p = expit(eta)
        g_shift = to_item @ (kappa * (k - n * p))  # dt / d shift
        h_shift = -(to_item @ (kappa * kappa * n * p * (1 - p)))
        g_log_s = sq / s2 - 1.0  # dt / d log s
        h_log_s = -2.0 * sq / s2
        m_shift = np.sum(pi * g_shift, axis=1)
        m_log_s = np.sum(pi * g_log_s, axis=1)
        grad = np.array([m_shift.sum(), m_log_s.sum()])
        d_shift, d_log_s = g_shift - m_shift[:, None], g_log_s - m_log_s[:, None]
        hess = np.empty((2, 2))
        hess[0, 0] = np.sum(pi * (h_shift + d_shift * d_shift))
        hess[1, 1] = np.sum(pi * (h_log_s + d_log_s * d_log_s))
        hess[0, 1] = hess[1, 0] = np.sum(pi * d_shift * d_log_s)
        return value, grad, hess

    return loglik
