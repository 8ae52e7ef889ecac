"""The distribution of the prompt effects, chosen by the data (a heavy-tailed family).

The fit (:mod:`evalstats.sparse._fit`) shrinks every prompt effect toward a normal prior, and
its item modes were fitted with the prompts so shrunk. A broken prompt (accuracy 0.37 among
prompts near 0.88) or a long tail is then pulled into the bulk twice: by the prior, and by the
items it was seen on, which took part of its failures. Here, per group:

1. every prompt's likelihood L_p(t) of its residual effect is computed on a grid of logit
   values t (481 points on [-6, 6]), each cell with its item's leave-this-cell-out mean,
   integrated over that mean's uncertainty, and the other effects at their modes
   (:func:`_likelihoods`); where the item's other cells are all right (or all wrong) its
   posterior is one-sided and the cell is integrated over it on a grid
   (:func:`_quadrature_likelihoods`);
2. the prior of the residual prompt effects is a Student t of scale s and degrees of freedom
   nu in :data:`DF` (nu = inf: normal), and the marginal likelihood
   prod_p sum_k prior_{nu,s}(t_k) L_p(t_k) gives their posterior on a grid (s in (0, 3]
   with a prior proportional to s^-0.5, uniform over nu): normal prompt effects choose the
   normal, a long tail or a broken prompt the heavier tails as far as the cells show them,
   and an outlier under a t prior is shrunk by little;
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

Also measured and left (off by default, :data:`OUTLIERS` empty; the code stays, tested): a
contaminated prior, (1 - eps) t_{nu,s} + eps * a flat slab over the grid, eps among k / P for
k in :data:`OUTLIERS` (P prompts), half the prior mass on eps = 0, weighed by the same marginal
likelihood. An outlier then goes to the slab and keeps its likelihood's mode (a prompt at -3
logits, 40 cells: posterior mean within 0.2 logit of its mode, slab probability 0.2 to 0.95).
On 12 fresh grids per case (benchmarks/bench_promptEval.py, uniform 5 %, paired subsamples) the
worst prompt's error on the broken grid fell from 0.156 to 0.130 (k in {0.5, 1}) but W1 rose
from 0.017 to 0.020 and q05 from 0.032 to 0.042 there, and q05 on heavy-tailed grids from 0.037
to 0.040: lower-tail prompts of the bulk with 20 cells take some slab probability and lose
their shrinkage. Adding Student t with 1 and 2 df to :data:`DF` did the same in smaller measure
(broken: min 0.139, W1 0.019, q05 0.038). With the integrated likelihoods (issue 44, this
round) the slab was measured again (paired, 8 fresh grids, uniform 5 %), flat and with a gap
(flat only beyond 3 bulk scales), soft and as a per-prompt choice (a prompt whose slab
probability passes 1/2 keeps its own likelihood, every other one its bulk's posterior alone):
on the broken grid the worst prompt's error moved 0.125 -> 0.123 and the best prompt's 0.050 ->
0.053, on heavy grids q05 0.018 -> 0.019. At 2 % the broken prompt's slab probability is
0.01-0.05 (4-12 cells, its likelihood's mode -2.1 to -2.7 for a planted -3): its cells do
not show it.
"""

from __future__ import annotations

import functools

import numpy as np
import scipy.sparse as sp
from scipy.special import expit, log_expit

from evalstats.sparse._fit import CellData, Fit

__all__ = ["DF", "OUTLIERS", "PromptPrior", "prompt_prior", "slab_weights"]

#: Grid of residual prompt effects (logit scale): half-width and number of points.
_HALF_WIDTH = 6.0
_N_GRID = 481
#: Degrees of freedom of the candidate priors (inf: normal) and their scale grid (logit).
DF = (3.0, 5.0, 10.0, 30.0, np.inf)
_MIN_SCALE, _MAX_SCALE, _N_SCALES = 0.0125, 3.0, 120
#: Expected numbers of outlying prompts of the contaminated candidates (slab weight k / P),
#: and the largest slab weight. Empty: no slab (module docstring: measured and left).
OUTLIERS: tuple[float, ...] = ()
_MAX_EPS = 0.25
#: Rounds of (g given the items, items given the prompts).
_ROUNDS = 3
#: Share of a cell's own pull on its item's mode taken back in the prompt likelihoods (1: all,
#: the item's leave-this-cell-out mean by one Newton step of the leave-one-out objective,
#: g / (H - w); see :func:`_likelihoods`).
_PULL_BACK = 1.0
#: Whether each cell's probability is integrated over its item's leave-this-cell-out
#: uncertainty v = 1 / (H - w) (probit approximation: sigma(kappa eta), kappa = 1 / sqrt(1 +
#: pi v / 8)); without it the item's plug-in mean flattens every prompt's likelihood.
_INTEGRATE = True
#: Whether each prompt's likelihood is widened instead (or as well) by a normal of variance
#: sum w^2 v / (sum w)^2, convolved in on the grid (the previous round's correction; measured
#: and left, :func:`_likelihoods`).
_CAVITY = False
#: Prior on the candidates' scale s, proportional to s^-power over the scale grid (0: flat).
#: With the integrated likelihoods a flat prior put the scale at twice the planted 0.08 where
#: prompts barely matter (tests/test_sparse.py's small-effects grids); 0.5 puts it at 0.11.
_SCALE_PRIOR_POWER = 0.5
#: Points of an item's grid and the stride on the prompt grid of the quadrature likelihoods
#: (:func:`_quadrature_likelihoods`).
_ITEM_POINTS = 48
_T_STRIDE = 8
#: Cells per block when the (cells x grid) log-likelihood is built.
_BLOCK = 100_000
#: Candidates whose per-prompt posterior CDFs a :class:`PromptPrior` keeps between draws.
_CDF_CACHE = 64


class PromptPrior:
    """The prompts' likelihoods on the grid, the candidate priors' posterior, a sampler of u.

    A candidate prior is ``(1 - eps) * t_{df, s} + eps * slab``: a Student t bulk (row ``c``
    of ``priors``) contaminated by a flat slab over the grid with weight ``eps`` (entry ``e``
    of ``eps``); ``weight[e, c]`` is its posterior probability.
    """

    def __init__(
        self,
        grid: np.ndarray,
        lik: np.ndarray,
        priors: np.ndarray,
        eps: np.ndarray,
        weight: np.ndarray,
        item_mode: np.ndarray,
        family: tuple[float, float, float],
    ):
        self.grid = grid
        self.lik = lik  # n_prompts x K, each row scaled to max 1
        self.priors = priors  # Student-t bulks on the grid, n_candidates x K
        self.eps = eps  # slab weights, n_eps
        self.weight = weight  # posterior probabilities, n_eps x n_candidates
        self.item_mode = item_mode  # item effects refitted with the prompts at their new means
        self.family = family  # (df, scale, eps) of the most probable candidate
        self._mom: tuple[np.ndarray, ...] | None = None
        self._cdf: dict[tuple[int, int], np.ndarray] = {}

    @property
    def moments(self) -> tuple[np.ndarray, ...]:
        """:func:`_moments` of the likelihoods, computed once (they do not change)."""
        if self._mom is None:
            self._mom = _moments(self.lik, self.priors, self.grid)
        return self._mom

    def _prior(self, e: int, c: int) -> np.ndarray:
        return (1.0 - self.eps[e]) * self.priors[c] + self.eps[e] * _slab(self.grid)

    def slab_probability(self) -> np.ndarray:
        """P(u_p from the slab | data) for every prompt, averaged over the candidates."""
        a, _, a_s, _ = self.moments
        out = np.zeros(self.lik.shape[0])
        for e, eps in enumerate(self.eps):
            den = (1.0 - eps) * a + eps * a_s[:, None]
            out += ((eps * a_s[:, None]) / den) @ self.weight[e]
        return out

    def posterior_mean(self) -> np.ndarray:
        """E[u_p | data], averaged over the candidate priors' posterior."""
        a, b, a_s, b_s = self.moments
        out = np.zeros(self.lik.shape[0])
        for e, eps in enumerate(self.eps):
            if self.weight[e].max() <= 0:
                continue
            num = (1.0 - eps) * b + eps * b_s[:, None]
            den = (1.0 - eps) * a + eps * a_s[:, None]
            out += (num / den) @ self.weight[e]
        return out

    def draw(self, rng: np.random.Generator) -> np.ndarray:
        """One draw of every u_p: a candidate prior from its posterior, then u_p from its own."""
        flat = self.weight.ravel()
        j = int(np.searchsorted(np.cumsum(flat), rng.random() * flat.sum()))
        e, c = divmod(min(j, flat.size - 1), self.weight.shape[1])
        cdf = self._cdf.get((e, c))
        if cdf is None:
            # each candidate's posterior CDFs once: a few candidates carry most of the weight
            cdf = np.cumsum(self.lik * self._prior(e, c)[None, :], axis=1)
            cdf /= cdf[:, -1:]
            if len(self._cdf) < _CDF_CACHE:
                self._cdf[(e, c)] = cdf
        u = rng.random(cdf.shape[0])
        k = np.minimum((cdf < u[:, None]).sum(axis=1), self.grid.size - 1)
        step = self.grid[1] - self.grid[0]
        return self.grid[k] + step * (rng.random(k.size) - 0.5)


def _slab(grid: np.ndarray) -> np.ndarray:
    """The flat slab: equal mass on every grid point."""
    return np.full(grid.size, 1.0 / grid.size)


def _moments(lik: np.ndarray, priors: np.ndarray, grid: np.ndarray):
    """sum_k L_p(t_k) g(t_k) and sum_k t_k L_p(t_k) g(t_k) for every bulk g, and the slab's."""
    slab = _slab(grid)
    return lik @ priors.T, lik @ (priors * grid).T, lik @ slab, lik @ (slab * grid)


@functools.lru_cache(maxsize=4)
def _candidates_cached(half_width: float, n_grid: int) -> tuple[np.ndarray, tuple]:
    grid = np.linspace(-half_width, half_width, n_grid)
    scales = np.linspace(_MIN_SCALE, _MAX_SCALE, _N_SCALES)
    z2 = (grid[None, :] / scales[:, None]) ** 2
    rows, labels = [], []
    for df in DF:
        # the Student-t kernel; its constant cancels in the normalisation on the grid
        dens = np.exp(-0.5 * z2) if np.isinf(df) else (1.0 + z2 / df) ** (-(df + 1.0) / 2.0)
        rows.append(dens / dens.sum(axis=1, keepdims=True))
        labels.extend((float(df), float(s)) for s in scales)
    out = np.concatenate(rows)
    out.flags.writeable = False
    return out, tuple(labels)


def _candidates(grid: np.ndarray) -> tuple[np.ndarray, list[tuple[float, float]]]:
    """Student-t priors (every df of :data:`DF`, every scale of the scale grid) on the grid.

    Computed once per grid (the module's grid is fixed) and shared, read-only.
    """
    half, n = float(grid[-1]), int(grid.size)
    if not np.allclose(grid, np.linspace(-half, half, n)):
        raise ValueError("the candidate priors are defined on a symmetric uniform grid")
    priors, labels = _candidates_cached(half, n)
    return priors, list(labels)


def slab_weights(n_prompts: int) -> np.ndarray:
    """The candidate slab weights: 0, and :data:`OUTLIERS` expected outlying prompts."""
    eps = [0.0] + [min(k / max(n_prompts, 1), _MAX_EPS) for k in OUTLIERS]
    return np.unique(eps)


def _family_posterior(a: np.ndarray, a_s: np.ndarray, eps: np.ndarray):
    """Posterior of the candidates (eps x bulk): s^-power on the scale, half on eps = 0.

    ``a`` and ``a_s`` are the observed prompts' marginal likelihoods under every bulk and
    under the slab (:func:`_moments`). Flat over the dfs; the power is
    :data:`_SCALE_PRIOR_POWER`.
    """
    marg = np.stack(
        [np.log(np.maximum((1.0 - e) * a + e * a_s[:, None], 1e-300)).sum(axis=0) for e in eps]
    )
    # prior: half on no slab (eps = 0), half spread over the slab weights
    log_prior = np.where(eps == 0, np.log(0.5), np.log(0.5 / max(int(np.sum(eps > 0)), 1)))
    marg = marg + log_prior[:, None]
    # p(s) proportional to s^-power over the scale grid (the candidates are df-major)
    scales = np.tile(np.linspace(_MIN_SCALE, _MAX_SCALE, _N_SCALES), len(DF))
    marg = marg - _SCALE_PRIOR_POWER * np.log(scales)[None, :]
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

    Each cell uses its item's leave-this-cell-out mean and the other effects' modes. An item's
    mode was fitted on the prompt's own cell too and took part of its deviation (with two cells
    an item, half of it); :data:`_PULL_BACK` of that pull is taken back, a - share * g/(H - w)
    (g the cell's score residual, H the item's penalised information, w the cell's weight: one
    Newton step of the item's objective without the cell). That mean is uncertain, by
    v = 1 / (H - w), and with :data:`_INTEGRATE` each cell's probability is integrated over it
    (probit approximation, sigma(kappa (a_out + t)), kappa = 1 / sqrt(1 + pi v / 8)); with
    :data:`_CAVITY` each prompt's likelihood is instead widened by a normal of variance
    sum w^2 v / (sum w)^2 convolved in on the grid (:func:`_convolve`).

    Why (issue 44; benchmarks/bench_sparse_oracle.py): with the items known, the prior's scale
    came out at 1.01 of the planted prompt sd (8 fresh normal grids at 5 %, 5 cells an item);
    with the items' plug-in modes at 0.56, with the previous round's correction (share 0.75 of
    g/H and the convolution) at 0.55: a plug-in item mean flattens every prompt's likelihood,
    so the spread came out too narrow (normal grid at 5 %: sd -0.019, q05 +0.037, q95 -0.028,
    16 grids). Integrating the cell over the item (share 1, g/(H - w)) brings the scale to
    0.84 and those biases within their standard errors (sd -0.0004, q05 +0.0005, q95 -0.001,
    8 grids); the convolution on top of it to 0.72. Where prompts barely matter the integrated
    likelihoods with a flat prior on the scale put it at 0.16 for a planted 0.08 and the sd's
    90 % interval covered 0.69 at 10 % (16 grids; the test asks 0.85), hence the s^-0.5 prior
    on the scale (:data:`_SCALE_PRIOR_POWER`: 0.11 there, 0.78 of the planted sd on the normal
    grids at 5 %).

    Measured before (benchmarks/bench_sparse_bias.py): the pull-back alone, where prompts
    barely matter, left the sd's 90 % interval at 0.80 at 10 %; with the convolution, shares
    0.5 and 0.75 covered 0.875 over the test's 80 grids.
    """
    eta = offset[cells.prompt] + a[cells.item] + u[cells.prompt]
    p = 1.0 / (1.0 + np.exp(-eta))
    w = cells.n * p * (1 - p)
    h_item = np.bincount(cells.item, w, cells.n_items) + 1.0 / fit.var_item
    # the leave-this-cell-out item precision and mean (one Newton step without the cell)
    h_out = np.maximum(h_item[cells.item] - w, 1.0 / fit.var_item)
    a_out = a[cells.item] - _PULL_BACK * (cells.k - cells.n * p) / h_out
    base = offset[cells.prompt] + a_out
    kappa = 1.0 / np.sqrt(1.0 + np.pi / (8.0 * h_out)) if _INTEGRATE else np.ones(base.size)
    out = np.zeros((cells.n_prompts, grid.size))
    # cells whose item's other cells are all right (or all wrong): the item's posterior is
    # one-sided there and its normal approximation wrong (module docstring), so they are
    # integrated over it on a grid instead
    one_sided = _one_sided(cells) if _INTEGRATE else np.zeros(cells.item.size, dtype=bool)
    if one_sided.any():
        out += _quadrature_likelihoods(cells, fit, a, offset, u, grid, one_sided)
    # one 0/1 outcome a cell (the usual case): log sigma(+-eta), a third cheaper than the
    # binomial form and equal to it
    binary = bool(np.all(cells.n == 1) and np.all((cells.k == 0) | (cells.k == 1)))
    sign = np.where(cells.k > 0.5, 1.0, -1.0) * kappa if binary else kappa
    rest = np.flatnonzero(~one_sided)
    for start in range(0, rest.size, _BLOCK):
        sl = rest[start : start + _BLOCK]
        eta = sign[sl, None] * (base[sl, None] + grid[None, :])
        if binary:
            ll = log_expit(eta)
        else:
            ll = cells.k[sl, None] * eta - cells.n[sl, None] * np.logaddexp(0.0, eta)
        m = ll.shape[0]
        s = sp.csr_matrix(
            (np.ones(m), (cells.prompt[sl], np.arange(m))), shape=(cells.n_prompts, m)
        )
        out += s @ ll
    if not _CAVITY:
        return out
    # the cavity means carry their item's remaining uncertainty 1 / (H_i - w_ip): the prompt's
    # deviation estimate gets sum w^2 v / (sum w)^2 of variance more, convolved in on the grid
    v = 1.0 / h_out
    num = np.bincount(cells.prompt, w * w * v, cells.n_prompts)
    den = np.bincount(cells.prompt, w, cells.n_prompts)
    extra = np.where(den > 0, num / np.maximum(den, 1e-12) ** 2, 0.0)
    return _convolve(out, grid, extra)


def _one_sided(cells: CellData) -> np.ndarray:
    """Cells whose item has other cells, every one of them right (or every one wrong)."""
    k_item = np.bincount(cells.item, cells.k, cells.n_items)
    n_item = np.bincount(cells.item, cells.n, cells.n_items)
    k_other = k_item[cells.item] - cells.k
    n_other = n_item[cells.item] - cells.n
    return (n_other > 0) & ((k_other <= 0) | (k_other >= n_other))


def _cell_loglik(k: np.ndarray, n: np.ndarray, eta: np.ndarray) -> np.ndarray:
    return k * log_expit(eta) + (n - k) * log_expit(-eta)


def _quadrature_likelihoods(
    cells: CellData,
    fit: Fit,
    a: np.ndarray,
    offset: np.ndarray,
    u: np.ndarray,
    grid: np.ndarray,
    chosen: np.ndarray,
) -> np.ndarray:
    """Sum over the ``chosen`` cells of log L_c(t), their item integrated out on a grid.

    L_c(t) = E[P(cell | a + offset_p + t)] over the item's posterior without the cell
    (its prior N(0, s_a^2) times its other cells' likelihoods at their prompts' current
    effects), on :data:`_ITEM_POINTS` points around the item's mean; the expectation is taken
    on every :data:`_T_STRIDE`-th point of ``grid`` and interpolated in between (it is
    smooth in t). Exact up to the quadrature, where the probit approximation of
    :func:`_likelihoods` takes the posterior as normal: for an item whose other cells are all
    right that posterior is one-sided (bounded below, a long upper tail), the normal put a
    third of its mass below the bound, and every right cell of an easy item then read as
    evidence for its prompt (on PromptEval's real MMLU grid, 67 % of items right under every
    template, the prompts' sd came out 0.03-0.05 for a true 0.011).
    """
    item_all = cells.item
    off_all = offset[cells.prompt] + u[cells.prompt]
    items = np.zeros(cells.n_items, dtype=bool)
    items[item_all[chosen]] = True
    in_items = items[item_all]
    idx = np.flatnonzero(in_items)
    # each item's grid: its mean +- 6 sd of its normal approximation (at most 6 prior sds)
    p = expit(a[item_all[idx]] + off_all[idx])
    h = np.bincount(item_all[idx], cells.n[idx] * p * (1 - p), cells.n_items)
    h += 1.0 / fit.var_item
    half = np.minimum(6.0 / np.sqrt(h), 6.0 * np.sqrt(fit.var_item)) + 1.0
    z = np.linspace(-1.0, 1.0, _ITEM_POINTS)
    a_grid = a[:, None] + half[:, None] * z[None, :]  # items x points
    ll = _cell_loglik(
        cells.k[idx, None], cells.n[idx, None], a_grid[item_all[idx]] + off_all[idx, None]
    )
    log_post = -0.5 * a_grid**2 / fit.var_item
    for j in range(_ITEM_POINTS):
        log_post[:, j] += np.bincount(item_all[idx], ll[:, j], cells.n_items)
    pos = np.searchsorted(idx, np.flatnonzero(chosen))
    sel = idx[pos]
    lp = log_post[item_all[sel]] - ll[pos]  # without the cell itself
    lp -= lp.max(axis=1, keepdims=True)
    weight = np.exp(lp)
    weight /= weight.sum(axis=1, keepdims=True)
    coarse = np.unique(np.r_[grid[::_T_STRIDE], grid[-1]])
    base = offset[cells.prompt[sel]]
    binary = bool(np.all(cells.n[sel] == 1) and np.all((cells.k[sel] == 0) | (cells.k[sel] == 1)))
    sums = np.zeros((cells.n_prompts, coarse.size))
    step = max(1, _BLOCK // (_ITEM_POINTS * coarse.size))
    for start in range(0, sel.size, step):
        b = slice(start, start + step)
        c = sel[b]
        eta = a_grid[item_all[c]][:, :, None] + base[b, None, None] + coarse[None, None, :]
        if binary:  # one 0/1 outcome: sigma(+-eta)
            lik = expit(np.where(cells.k[c] > 0.5, 1.0, -1.0)[:, None, None] * eta)
        else:
            lik = np.exp(_cell_loglik(cells.k[c, None, None], cells.n[c, None, None], eta))
        lc = np.log(np.maximum(np.einsum("cj,cjk->ck", weight[b], lik), 1e-300))
        np.add.at(sums, cells.prompt[c], lc)
    # a sum of linear interpolations is the interpolation of the sum
    out = np.zeros((cells.n_prompts, grid.size))
    for q in np.flatnonzero(np.bincount(cells.prompt[sel], minlength=cells.n_prompts)):
        out[q] = np.interp(grid, coarse, sums[q])
    return out


def _convolve(loglik: np.ndarray, grid: np.ndarray, var: np.ndarray) -> np.ndarray:
    """Log of each row's likelihood convolved with N(0, var_p) on the (uniform) grid.

    The kernel spans the whole grid (a cut one loses the far tails that tell a narrow prior
    from a broken prompt) and the convolution is ``np.convolve`` per row; rows with no extra
    variance are returned as they are.
    """
    step = grid[1] - grid[0]
    top = loglik.max(axis=1, keepdims=True)
    lik = np.exp(loglik - top)
    out = loglik.copy()
    half = grid.size - 1
    m = np.arange(-half, half + 1) * step
    for p in np.flatnonzero(var > 0):
        kern = np.exp(-0.5 * m * m / var[p])
        conv = np.convolve(lik[p], kern, mode="full")[half : half + grid.size]
        out[p] = np.log(np.maximum(conv, 1e-300)) + top[p, 0]
    return out


def prompt_prior(cells: CellData, fit: Fit) -> PromptPrior:
    """The prompt effects' prior chosen by the data, and the items refitted (module docstring)."""
    grid = np.linspace(-_HALF_WIDTH, _HALF_WIDTH, _N_GRID)
    observed = np.bincount(cells.prompt, minlength=cells.n_prompts) > 0
    priors, labels = _candidates(grid)
    eps = slab_weights(int(observed.sum()))
    offset, a, u = _offset(cells, fit), fit.a, fit.u
    # the items' modes were fitted with the prompts shrunk toward a normal: an item seen under
    # a broken prompt took part of its failures. Alternate: the prior given the items, the
    # items given the prompts at their posterior means
    for rounds in range(_ROUNDS):
        loglik = _likelihoods(cells, fit, a, offset, u, grid)
        lik = np.exp(loglik - loglik.max(axis=1, keepdims=True))
        mom = _moments(lik, priors, grid)
        weight = _family_posterior(mom[0][observed], mom[2][observed], eps)
        e, c = np.unravel_index(int(np.argmax(weight)), weight.shape)
        result = PromptPrior(grid, lik, priors, eps, weight, a, (*labels[c], float(eps[e])))
        result._mom = mom
        if rounds == _ROUNDS - 1:
            return result
        u = result.posterior_mean()
        a = _item_modes(cells, fit, a, offset + u)
    raise AssertionError("unreachable")
