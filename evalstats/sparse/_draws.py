"""Per-prompt accuracy over the whole item grid: point values and approximate posterior draws.

The target of a prompt p is its mean cell score over *every* item of the group,

    acc_p = (1/I) * (sum of its observed cell scores + sum of its unobserved cell scores),

and the unobserved cells are what the model predicts. A draw takes the item, factor and
prompt effects from their approximate (Laplace, diagonal with Schur correction) posteriors,
predicts every unobserved cell, and adds the binomial noise of those cells (normal
approximation). Observed cells stay as observed: on a full grid every draw is the data.
Each variant's draws are then re-centred at its mode prediction (see :func:`accuracy_draws`).
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from evalstats.sparse._fit import CellData, Fit

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


def _prompt_effects(fit: Fit):
    """A sampler of the prompt effects u that also draws their variance s_u^2.

    Normal-normal algebra per prompt: the data alone say u_p ~ N(r_p, nu_p), with data
    precision 1/nu_p = 1/v_p - 1/s^2 (posterior minus prior precision at the fitted variance
    s^2) and r_p = u_hat_p / (1 - v_p/s^2). A draw takes s_u^2 from its marginal posterior
    given these, p(s_u | r) ~ prod_p N(r_p; 0, s_u^2 + nu_p) under a flat prior on the sd s_u
    (Gelman, 2006), evaluated on a grid of s_u, then u_p ~ N(w r_p, w nu_p) with
    w = s_u^2/(s_u^2 + nu_p): the spread of the prompt effects is as uncertain as the data
    leave it, and a variance the fit puts at its floor (a grid where prompts barely matter,
    every variant seen on a few items) still has the values the data allow above it.

    (A scaled inverse chi-square around the fitted variance, tried first, covered 0.84 with its
    90 % interval of the sd at a 10 % budget with g = sum(1 - v_p/s^2) degrees of freedom and
    0.91 with g = sum (1 - v_p/s^2)^2, the variance's Fisher information; but around a variance
    at its floor it has no width, and on a real grid with small prompt effects the sd's interval
    covered 0.78 to 0.80 at 10 % and 0.29 to 0.33 at 20 %.)
    """
    s2 = fit.var_prompt
    prec = np.maximum(1.0 / fit.u_var - 1.0 / s2, 0.0)
    informed = prec > 1e-12
    nu = np.full(fit.u.size, np.inf)
    nu[informed] = 1.0 / prec[informed]
    raw = np.zeros(fit.u.size)
    raw[informed] = fit.u[informed] * (prec[informed] + 1.0 / s2) / prec[informed]
    grid, cdf = _sd_posterior(raw[informed], nu[informed], s2)

    def draw(rng: np.random.Generator) -> np.ndarray:
        k = int(np.searchsorted(cdf, rng.random(), side="right"))
        sd = grid[min(k, grid.size - 1)] + (grid[1] - grid[0]) * (rng.random() - 0.5)
        s2_star = max(sd, 1e-6) ** 2
        w = np.where(informed, s2_star / (s2_star + nu), 0.0)
        var = np.where(informed, w * nu, s2_star)
        return w * raw + np.sqrt(var) * rng.standard_normal(raw.size)

    return draw


_SD_GRID = 400


def _sd_posterior(r: np.ndarray, nu: np.ndarray, s2: float) -> tuple[np.ndarray, np.ndarray]:
    """Grid of the prompt sd and the CDF of its marginal posterior (flat prior on the sd)."""
    if not r.size:
        return np.array([np.sqrt(s2), np.sqrt(s2)]), np.array([1.0, 1.0])
    # the likelihood is negligible beyond the spread of the raw estimates themselves
    top = 1.5 * np.sqrt(max(float(np.mean(r * r)), s2)) + 1e-3
    grid = np.linspace(0.0, top, _SD_GRID)
    total = grid[:, None] ** 2 + nu[None, :]
    loglik = -0.5 * np.sum(np.log(total) + (r * r)[None, :] / total, axis=1)
    weight = np.exp(loglik - loglik.max())
    return grid, np.cumsum(weight) / weight.sum()


def accuracy_draws(
    cells: CellData, fit: Fit, *, n_resamples: int, rng: np.random.Generator
) -> np.ndarray:
    """``n_resamples x n_prompts`` approximate posterior draws of acc_p (module docstring)."""
    obs_sum, m, n_typ = _observed(cells)
    i_all = cells.n_items
    full = m >= i_all
    # binomial noise of the unobserved cells, at the mode (their outcomes are unknown)
    b0 = fit.prompt_effect(cells.levels)
    eta0 = fit.mu + fit.a[cells.item] + b0[cells.prompt]
    v_obs = np.bincount(cells.prompt, _bernoulli_var(expit(eta0)), cells.n_prompts)
    v_all = _item_sums(fit.mu, fit.a, b0, _bernoulli_var)
    noise_sd = np.sqrt(np.maximum(v_all - v_obs, 0.0) / n_typ)
    sd_a = np.sqrt(fit.a_var)
    sd_c = [np.sqrt(v) for v in fit.c_var]
    prompt_draw = _prompt_effects(fit)
    out = np.empty((n_resamples, cells.n_prompts))
    for r in range(n_resamples):
        a = fit.a + sd_a * rng.standard_normal(fit.a.size)
        b = prompt_draw(rng)
        for f, (c, s) in enumerate(zip(fit.c, sd_c)):
            b = b + (c + s * rng.standard_normal(c.size))[cells.levels[:, f]]
        pred_obs = np.bincount(
            cells.prompt, expit(fit.mu + a[cells.item] + b[cells.prompt]), cells.n_prompts
        )
        total = _item_sums(fit.mu, a, b, _identity)
        noise = noise_sd * rng.standard_normal(cells.n_prompts)
        acc = (obs_sum + total - pred_obs + noise) / i_all
        acc[full] = obs_sum[full] / i_all
        out[r] = acc
    # re-centre each variant's draws at its mode prediction: the normal approximation of the
    # item effects pulls every predicted cell toward 1/2 (the mean of a sigmoid over a wider
    # spread), a shift common to all variants that biased the mean by about 0.005 at a 2 %
    # budget (benchmarks/bench_sparse.py); the mode's predictions sum to the observed scores
    # on the observed cells (the intercept's score equation)
    out += (point_accuracy(cells, fit) - out.mean(axis=0))[None, :]
    return np.clip(out, 0.0, 1.0)


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
