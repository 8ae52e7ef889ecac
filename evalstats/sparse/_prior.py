"""The distribution of the prompt effects, chosen by the data (a heavy-tailed family).

The fit (:mod:`evalstats.sparse._fit`) shrinks every prompt effect toward a normal prior, and
its item modes were fitted with the prompts so shrunk. A broken prompt (accuracy 0.37 among
prompts near 0.88) or a long tail is then pulled into the bulk twice: by the prior, and by the
items it was seen on, which took part of its failures. Here, per group:

1. every prompt's likelihood L_p(t) of its residual effect is computed on a grid of logit
   values t (481 points on [-6, 6]), each cell with its item's mode and the other effects at
   their modes (:func:`_likelihoods`);
2. the prior of the residual prompt effects is a Student t of scale s and degrees of freedom
   nu in :data:`DF` (nu = inf: normal), and the marginal likelihood
   prod_p sum_k prior_{nu,s}(t_k) L_p(t_k) gives their posterior on a grid (flat on s in
   (0, 3], uniform over nu): normal prompt effects choose the normal, a long tail or a broken
   prompt the heavier tails as far as the cells show them, and an outlier under a t prior is
   shrunk by little;
3. the items are refitted given the prompts at their posterior means (vectorised Newton,
   :func:`_item_modes`) and steps 1-2 repeated (three rounds).

A posterior draw takes (nu, s) from their posterior, then every u_p from its posterior on the
grid (then uniformly within a grid step): the spread's uncertainty is carried as the data leave
it, as the earlier normal-only draw did with the prompt sd alone.

Measured and left: the nonparametric maximum likelihood prior (NPMLE on the grid, Koenker and
Mizera, 2014, by EM), with its uncertainty by the Bayesian bootstrap, and a smoothed NPMLE
(normals of half the prompt sd as components). Both kept a broken prompt better (posterior
mean -1.88 against -1.40 under the normal) but clumped the bulk into a few atoms: on normal
grids at 5 % the sd came out 0.017 too low and the q05 and q95 intervals covered 0 to 0.5 of
6 fresh grids (benchmarks/bench_promptEval.py's grids).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from evalstats.sparse._fit import CellData, Fit

__all__ = ["DF", "PromptPrior", "prompt_prior"]

#: Grid of residual prompt effects (logit scale): half-width and number of points.
_HALF_WIDTH = 6.0
_N_GRID = 481
#: Degrees of freedom of the candidate priors (inf: normal) and their scale grid (logit).
DF = (3.0, 5.0, 10.0, 30.0, np.inf)
_MIN_SCALE, _MAX_SCALE, _N_SCALES = 0.0125, 3.0, 120
#: Rounds of (g given the items, items given the prompts).
_ROUNDS = 3
#: Share of a cell's own pull on its item's mode taken back in the prompt likelihoods (0: none;
#: see :func:`_likelihoods` for what 1 and 0.5 gave).
_PULL_BACK = 0.0
#: Cells per block when the (cells x grid) log-likelihood is built.
_BLOCK = 100_000


class PromptPrior:
    """The prompts' likelihoods on the grid, the candidate priors' posterior, a sampler of u."""

    def __init__(
        self,
        grid: np.ndarray,
        lik: np.ndarray,
        priors: np.ndarray,
        weight: np.ndarray,
        item_mode: np.ndarray,
        family: tuple[float, float],
    ):
        self.grid = grid
        self.lik = lik  # n_prompts x K, each row scaled to max 1
        self.priors = priors  # candidate priors on the grid, n_candidates x K
        self.weight = weight  # their posterior probabilities
        self.item_mode = item_mode  # item effects refitted with the prompts at their new means
        self.family = family  # (df, scale) of the most probable candidate

    def posterior_mean(self) -> np.ndarray:
        """E[u_p | data], averaged over the candidate priors' posterior."""
        top = np.flatnonzero(self.weight > 1e-4 * self.weight.max())
        w = self.weight[top] / self.weight[top].sum()
        out = np.zeros(self.lik.shape[0])
        for j, wj in zip(top, w):
            post = self.lik * self.priors[j][None, :]
            out += wj * (post @ self.grid) / post.sum(axis=1)
        return out

    def draw(self, rng: np.random.Generator) -> np.ndarray:
        """One draw of every u_p: a prior (df, scale) from its posterior, then u_p from its own."""
        j = int(np.searchsorted(np.cumsum(self.weight), rng.random() * self.weight.sum()))
        post = self.lik * self.priors[min(j, self.weight.size - 1)][None, :]
        cdf = np.cumsum(post, axis=1)
        cdf /= cdf[:, -1:]
        u = rng.random(cdf.shape[0])
        k = np.minimum((cdf < u[:, None]).sum(axis=1), self.grid.size - 1)
        step = self.grid[1] - self.grid[0]
        return self.grid[k] + step * (rng.random(k.size) - 0.5)


def _candidates(grid: np.ndarray) -> tuple[np.ndarray, list[tuple[float, float]]]:
    """Student-t priors (every df of :data:`DF`, every scale of the scale grid) on the grid."""
    from scipy.stats import t as student_t

    scales = np.linspace(_MIN_SCALE, _MAX_SCALE, _N_SCALES)
    rows, labels = [], []
    for df in DF:
        for s in scales:
            z = grid / s
            dens = np.exp(-0.5 * z * z) if np.isinf(df) else student_t.pdf(z, df)
            rows.append(dens / dens.sum())
            labels.append((float(df), float(s)))
    return np.array(rows), labels


def _family_posterior(lik: np.ndarray, priors: np.ndarray) -> np.ndarray:
    """Posterior of the candidate priors: flat on the scale, uniform over the dfs."""
    marg = np.log(np.maximum(lik @ priors.T, 1e-300)).sum(axis=0)
    w = np.exp(marg - marg.max())
    return w / w.sum()


def _offset(cells: CellData, fit: Fit) -> np.ndarray:
    """The intercept plus the factor-level effects of every prompt, at the modes."""
    offset = np.full(cells.n_prompts, fit.mu)
    for f, c in enumerate(fit.c):
        offset = offset + c[cells.levels[:, f]]
    return offset


def _item_modes(cells: CellData, fit: Fit, a: np.ndarray, prompt_eta: np.ndarray) -> np.ndarray:
    """Item effects' penalised modes given every prompt's logit offset (vectorised Newton).

    Each item is then a one-parameter logistic problem with prior N(0, s_a^2).
    """
    lam = 1.0 / fit.var_item
    for _ in range(20):
        p = 1.0 / (1.0 + np.exp(-(a[cells.item] + prompt_eta[cells.prompt])))
        grad = np.bincount(cells.item, cells.k - cells.n * p, cells.n_items) - lam * a
        hess = np.bincount(cells.item, cells.n * p * (1 - p), cells.n_items) + lam
        step = grad / hess
        a = a + step
        if np.max(np.abs(step)) < 1e-6:
            break
    return a


def _likelihoods(
    cells: CellData, fit: Fit, a: np.ndarray, offset: np.ndarray, u: np.ndarray, grid: np.ndarray
):
    """The log-likelihood log L_p(t_k): each prompt's cells with its residual effect at t_k.

    Each cell uses its item's mode and the other effects' modes. An item's mode was fitted on
    the prompt's own cell too and took part of its deviation; :data:`_PULL_BACK` of that pull
    can be taken back, a - share * g/H (g the cell's score residual, H the item's penalised
    information), and is not by default. Measured (benchmarks/bench_promptEval.py's grids,
    tests/test_sparse.py): taking it all back (share 1) kept heavy tails and a broken prompt
    better (q05 error 0.015 against 0.030 on heavy-tailed grids at 5 %, 6 grids) but widened
    the spread where prompts barely matter: the sd's 90 % interval covered 0.79 of the 80
    grids of the slow test at 10 %, half of it 0.84, none 0.90 of 40 (the test asks 0.85). The
    full leave-one-out step a - g/(H - w) widened it more; integrating over the item's
    variance (probit approximation) widened the sd further and helped nowhere.
    """
    eta = offset[cells.prompt] + a[cells.item] + u[cells.prompt]
    p = 1.0 / (1.0 + np.exp(-eta))
    w = cells.n * p * (1 - p)
    h_item = np.bincount(cells.item, w, cells.n_items) + 1.0 / fit.var_item
    a_out = a[cells.item] - _PULL_BACK * (cells.k - cells.n * p) / h_item[cells.item]
    base = offset[cells.prompt] + a_out
    out = np.zeros((cells.n_prompts, grid.size))
    for start in range(0, base.size, _BLOCK):
        sl = slice(start, start + _BLOCK)
        eta = base[sl, None] + grid[None, :]
        ll = cells.k[sl, None] * eta - cells.n[sl, None] * np.logaddexp(0.0, eta)
        m = ll.shape[0]
        s = sp.csr_matrix(
            (np.ones(m), (cells.prompt[sl], np.arange(m))), shape=(cells.n_prompts, m)
        )
        out += s @ ll
    return out


def prompt_prior(cells: CellData, fit: Fit) -> PromptPrior:
    """The prompt effects' prior chosen by the data, and the items refitted (module docstring)."""
    grid = np.linspace(-_HALF_WIDTH, _HALF_WIDTH, _N_GRID)
    observed = np.bincount(cells.prompt, minlength=cells.n_prompts) > 0
    priors, labels = _candidates(grid)
    offset, a, u = _offset(cells, fit), fit.a, fit.u
    # the items' modes were fitted with the prompts shrunk toward a normal: an item seen under
    # a broken prompt took part of its failures. Alternate: the prior given the items, the
    # items given the prompts at their posterior means
    for rounds in range(_ROUNDS):
        loglik = _likelihoods(cells, fit, a, offset, u, grid)
        lik = np.exp(loglik - loglik.max(axis=1, keepdims=True))
        weight = _family_posterior(lik[observed], priors)
        result = PromptPrior(grid, lik, priors, weight, a, labels[int(np.argmax(weight))])
        if rounds == _ROUNDS - 1:
            return result
        u = result.posterior_mean()
        a = _item_modes(cells, fit, a, offset + u)
    raise AssertionError("unreachable")
