"""Per-prompt accuracy over the whole item grid: point values and approximate posterior draws.

The target of a prompt p is its mean cell score over *every* item of the group,

    acc_p = (1/I) * (sum of its observed cell scores + sum of its unobserved cell scores),

and the unobserved cells are what the model predicts. A draw takes the item, factor and
prompt effects from their approximate (Laplace, diagonal with Schur correction) posteriors
(an item whose observed cells all agree from its one-sided posterior on a grid),
predicts every unobserved cell, and adds the binomial noise of those cells (normal
approximation). Observed cells stay as observed: on a full grid every draw is the data.

The level of the predictions is matched on the observed cells (:func:`_level_shift`): the
intercept is a mode of the joint fit, at which the observed cells' predictions at the effects'
modes sum to their scores; averaged over the effects' posterior draws they no longer do (a
sigmoid averaged over a spread is pulled toward 1/2), so the draws' intercept is shifted until
they do again, and the unobserved cells are predicted at that level.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from scipy.special import expit, log_expit

from evalstats.sparse._fit import CellData, Fit

if TYPE_CHECKING:
    from evalstats.sparse._prior import PromptPrior

__all__ = ["STATISTICS", "point_accuracy", "accuracy_draws", "statistics_of"]

#: Statistics of the per-prompt distribution, in output order, with their quantile level.
STATISTICS: tuple[tuple[str, float | None], ...] = (
    ("mean", None),
    ("sd", None),
    ("min", 0.0),
    ("q05", 0.05),
    ("q25", 0.25),
    ("median", 0.5),
    ("q75", 0.75),
    ("q95", 0.95),
    ("max", 1.0),
)

#: Points of a one-sided item's posterior grid (:class:`_OneSidedItems`).
_ITEM_POINTS = 64
#: Posterior draws the level of the predictions is matched on (:func:`_level_shift`).
_LEVEL_DRAWS = 20
#: The largest shift of that level, in logits (the shifts measured on benchmarks/
#: bench_promptEval.py's grids were 0.02 to 0.2).
_MAX_LEVEL_SHIFT = 1.0

#: Above this many item x prompt cells a draw sums sigmoid over items on a grid of prompt
#: effects and interpolates, instead of evaluating every cell.
_EXACT_CELLS = 2_000_000
_GRID = 257


def _observed(cells: CellData) -> tuple[np.ndarray, np.ndarray, float]:
    score = cells.k / cells.n
    obs_sum = np.bincount(cells.prompt, score, cells.n_prompts)
    m = np.bincount(cells.prompt, minlength=cells.n_prompts).astype(float)
    return obs_sum, m, float(np.median(cells.n))


def _item_sums(mu: float, a: np.ndarray, b: np.ndarray, fn) -> np.ndarray:
    """sum_i fn(sigmoid(mu + a_i + b_p)) for every prompt p."""
    if a.size * b.size <= _EXACT_CELLS:
        return fn(expit(mu + a[None, :] + b[:, None])).sum(axis=1)
    lo, hi = float(b.min()), float(b.max())
    grid = np.linspace(lo, hi if hi > lo else lo + 1e-9, _GRID)
    table = np.array([fn(expit(mu + a + g)).sum() for g in grid])
    return np.interp(b, grid, table)


def _identity(p: np.ndarray) -> np.ndarray:
    return p


def _bernoulli_var(p: np.ndarray) -> np.ndarray:
    return p * (1 - p)


def point_accuracy(cells: CellData, fit: Fit) -> np.ndarray:
    """acc_p at the posterior mode: observed cells as observed, the rest predicted."""
    obs_sum, _, _ = _observed(cells)
    b = fit.prompt_effect(cells.levels)
    eta_obs = fit.mu + fit.a[cells.item] + b[cells.prompt]
    pred_obs = np.bincount(cells.prompt, expit(eta_obs), cells.n_prompts)
    total = _item_sums(fit.mu, fit.a, b, _identity)
    return np.clip((obs_sum + total - pred_obs) / cells.n_items, 0.0, 1.0)


def _level_var(cells: CellData, fit: Fit, p_obs: np.ndarray, seen: np.ndarray) -> float:
    """Variance of the overall logit level the effects' independent draws leave out.

    The item and prompt effects are drawn independently around their modes, so the level of
    their sum averages out over many items: its uncertainty, the information of all cells
    together (1 / sum w), is drawn once per draw; and the mean effect of the items never
    observed is as uncertain as a mean of the observed items' effects (s_a^2 / I_seen) for
    their share of the grid.
    """
    # each cell's probability kept 1/2 a cell away from 0 and 1 (a Jeffreys-like floor): when
    # every observed cell is right (or wrong) the fit's intercept runs off and 1 / sum w with
    # it; unfloored, such a group's draws put the level at +-1e6 and its mean accuracy at 0.6
    eps = 0.5 / (float(np.sum(cells.n)) + 1.0)
    p_obs = np.clip(p_obs, eps, 1.0 - eps)
    w = float(np.sum(cells.n * p_obs * (1 - p_obs)))
    n_seen = int(seen.sum())
    unseen = (cells.n_items - n_seen) / cells.n_items
    return 1.0 / max(w, 1e-12) + fit.var_item * unseen / max(n_seen, 1)


class _OneSidedItems:
    """Posterior draws of the items whose observed cells are all right (or all wrong).

    Their posterior is one-sided: bounded on one side by the cells, the item prior's tail on
    the other. The normal approximation at the mode spread it to both sides (on PromptEval's
    real MMLU grid, items right under every template had posterior sds of 3 logits at a mode
    of 5), and the draws put such items' unobserved cells at 0.9 where they are 1: the grid's
    mean came out 0.01-0.02 low, beyond what the level match could take back. They are drawn
    from their posterior on a grid of :data:`_ITEM_POINTS` points instead (the prompts at
    their posterior means), by the inverse CDF and uniformly within a grid step.
    """

    def __init__(self, cells: CellData, fit: Fit, a_mode: np.ndarray, prompt_eta: np.ndarray):
        k = np.bincount(cells.item, cells.k, cells.n_items)
        n = np.bincount(cells.item, cells.n, cells.n_items)
        self.items = np.flatnonzero((n > 0) & ((k <= 0) | (k >= n)))
        if self.items.size == 0:
            return
        chosen = np.zeros(cells.n_items, dtype=bool)
        chosen[self.items] = True
        sel = np.flatnonzero(chosen[cells.item])
        local = np.full(cells.n_items, -1, dtype=np.int64)
        local[self.items] = np.arange(self.items.size)
        it = local[cells.item[sel]]
        off = prompt_eta[cells.prompt[sel]]
        a0 = a_mode[self.items]
        p = expit(a0[it] + off)
        h = np.bincount(it, cells.n[sel] * p * (1 - p), self.items.size) + 1.0 / fit.var_item
        half = np.minimum(6.0 / np.sqrt(h), 6.0 * np.sqrt(fit.var_item)) + 1.0
        z = np.linspace(-1.0, 1.0, _ITEM_POINTS)
        self.grid = a0[:, None] + half[:, None] * z[None, :]
        eta = self.grid[it] + off[:, None]
        kk, nn = cells.k[sel, None], cells.n[sel, None]
        ll = kk * log_expit(eta) + (nn - kk) * log_expit(-eta)
        log_post = -0.5 * self.grid**2 / fit.var_item
        for j in range(_ITEM_POINTS):
            log_post[:, j] += np.bincount(it, ll[:, j], self.items.size)
        post = np.exp(log_post - log_post.max(axis=1, keepdims=True))
        self.cdf = np.cumsum(post, axis=1)
        self.cdf /= self.cdf[:, -1:]
        self.step = self.grid[:, 1] - self.grid[:, 0]

    def draw(self, a: np.ndarray, rng: np.random.Generator) -> None:
        """Replace the one-sided items' entries of ``a`` by draws from their posteriors."""
        if self.items.size == 0:
            return
        u = rng.random(self.items.size)
        j = np.minimum((self.cdf < u[:, None]).sum(axis=1), _ITEM_POINTS - 1)
        rows = np.arange(self.items.size)
        a[self.items] = self.grid[rows, j] + self.step * (rng.random(self.items.size) - 0.5)


def accuracy_draws(
    cells: CellData,
    fit: Fit,
    *,
    n_resamples: int,
    rng: np.random.Generator,
    prior: PromptPrior | None = None,
) -> np.ndarray:
    """``n_resamples x n_prompts`` approximate posterior draws of acc_p (module docstring).

    The residual prompt effects come from :mod:`evalstats.sparse._prior` (their distribution
    estimated from the data, its uncertainty by the Bayesian bootstrap); items and factor
    levels from their normal approximations. An item with no observed cell (the grid has it,
    the sample does not) takes its effect from the fitted item distribution. ``prior``: the
    group's :func:`~evalstats.sparse._prior.prompt_prior`, computed here when None.
    """
    from evalstats.sparse._prior import prompt_prior

    obs_sum, m, n_typ = _observed(cells)
    i_all = cells.n_items
    full = m >= i_all
    seen = np.bincount(cells.item, minlength=i_all) > 0
    prior = prompt_prior(cells, fit) if prior is None else prior
    a_mode = prior.item_mode
    if fit.mu_marginal is not None and not seen.all():
        # the items never observed: around the intercept their exact likelihood pairs with the
        # item variance (evalstats.sparse._items), not the joint mode's
        a_mode = a_mode.copy()
        a_mode[~seen] += fit.mu_marginal - fit.mu
    # binomial noise of the unobserved cells, at the mode (their outcomes are unknown)
    b0 = fit.prompt_effect(cells.levels) - fit.u + prior.posterior_mean()
    eta0 = fit.mu + a_mode[cells.item] + b0[cells.prompt]
    v_obs = np.bincount(cells.prompt, _bernoulli_var(expit(eta0)), cells.n_prompts)
    v_all = _item_sums(fit.mu, a_mode, b0, _bernoulli_var)
    noise_sd = np.sqrt(np.maximum(v_all - v_obs, 0.0) / n_typ)
    mu_sd = np.sqrt(_level_var(cells, fit, expit(eta0), seen))
    sd_a = np.sqrt(fit.a_var)
    sd_c = [np.sqrt(v) for v in fit.c_var]
    one_sided = _OneSidedItems(cells, fit, a_mode, fit.mu + b0)

    def effects() -> tuple[np.ndarray, np.ndarray]:
        a = a_mode + sd_a * rng.standard_normal(a_mode.size)
        one_sided.draw(a, rng)
        b = prior.draw(rng)
        for f, (c, s) in enumerate(zip(fit.c, sd_c)):
            b = b + (c + s * rng.standard_normal(c.size))[cells.levels[:, f]]
        return a, b

    level = fit.mu + _level_shift(cells, fit.mu, [effects() for _ in range(_LEVEL_DRAWS)])
    out = np.empty((n_resamples, cells.n_prompts))
    for r in range(n_resamples):
        mu = level + mu_sd * rng.standard_normal()
        a, b = effects()
        pred_obs = np.bincount(
            cells.prompt, expit(mu + a[cells.item] + b[cells.prompt]), cells.n_prompts
        )
        total = _item_sums(mu, a, b, _identity)
        noise = noise_sd * rng.standard_normal(cells.n_prompts)
        acc = (obs_sum + total - pred_obs + noise) / i_all
        acc[full] = obs_sum[full] / i_all
        out[r] = acc
    return np.clip(out, 0.0, 1.0)


def _level_shift(cells: CellData, mu: float, draws: list[tuple[np.ndarray, np.ndarray]]) -> float:
    """The shift delta: mean over ``draws`` of sum_obs n sigmoid(mu + delta + a_i + b_p) = sum k.

    At the effects' modes the observed cells' predictions sum to their scores (the intercept's
    score equation); the draws spread the effects, and a sigmoid averaged over a spread is
    pulled toward 1/2. With the modes' intercept the draws predicted the unobserved cells 0.003
    too high at 20 % of a grid and, without the earlier removal of the items' spread, 0.004 to
    0.02 too low from 20 % to 2 % (benchmarks/bench_promptEval.py's grids); matched on the
    observed cells the bias of the mean was within 0.0004 at 20 % and 2 %.

    When every observed cell is at a bound (all right or all wrong) no shift matches them (the
    equation asks for an infinite one) and the modes' level is kept; the shift is bounded by
    :data:`_MAX_LEVEL_SHIFT` logits either way.
    """
    target = float(np.sum(cells.k))
    if target <= 0.0 or target >= float(np.sum(cells.n)):
        return 0.0
    delta = 0.0
    for _ in range(30):
        f = g = 0.0
        for a, b in draws:
            p = expit(mu + delta + a[cells.item] + b[cells.prompt])
            f += float(np.sum(cells.n * p))
            g += float(np.sum(cells.n * p * (1 - p)))
        step = (target * len(draws) - f) / max(g, 1e-12)
        delta = float(np.clip(delta + step, -_MAX_LEVEL_SHIFT, _MAX_LEVEL_SHIFT))
        if abs(step) < 1e-9:
            break
    return delta


def statistics_of(acc: np.ndarray) -> np.ndarray:
    """The :data:`STATISTICS` of per-prompt accuracies; ``acc`` is (..., n_prompts)."""
    acc = np.atleast_2d(acc)
    cols = []
    for name, q in STATISTICS:
        if name == "mean":
            cols.append(acc.mean(axis=-1))
        elif name == "sd":
            cols.append(acc.std(axis=-1))
        else:
            cols.append(np.quantile(acc, q, axis=-1))
    return np.stack(cols, axis=-1)
