"""Bounds of the worst and best prompt from each prompt's own cells, not the prior's tails.

The posterior draws of the worst prompt's accuracy rest on the prompt prior's tails
(:mod:`evalstats.sparse._prior`): a prompt whose cells look broken is pulled toward the bulk as
far as the fitted family says such prompts are rare. On a grid with one broken prompt (0.37
among prompts near 0.88) the worst prompt came out 0.29 too high at 2 % of the cells and 0.13
at 5 %, and its interval covered 0.69 and 0.63 (16 fresh grids, the calibration included). The
Bayes estimator that knows everything but where the outlying prompt lies does not do much
better there (``benchmarks/bench_sparse_oracle.py``'s ``oracle-shift?``): a prior cannot be
right about a tail the data barely show. The interval can be made not to depend on it.

For every prompt with observed cells, Q_p(q) is the q-quantile of its accuracy over the whole
item grid when its residual effect has a flat prior (its posterior is then its own cells'
likelihood, :attr:`PromptPrior.lik`, each cell integrated over its item's uncertainty), the
items and factor levels at their modes. With alpha = 1 - level and P observed prompts:

- the worst prompt's accuracy lies in [min_p Q_p(alpha / 2), min_p Q_p(1 - alpha / (2P))];
- the best prompt's in [max_p Q_p(alpha / (2P)), max_p Q_p(1 - alpha / 2)].

Each bound fails with probability at most alpha / 2 when every Q_p is a valid bound for its
prompt: the truly worst prompt p0 is fixed by the grid, so min_p Q_p(alpha / 2) <= Q_p0(alpha
/ 2) falls below the truth with at most alpha / 2; the upper bound of the worst fails only if
some prompt lies above its own Q_p(1 - alpha / (2P)), a union of P events of alpha / (2P). The
reported interval of ``min`` and ``max`` is the hull of the model's interval and these bounds:
they only widen it, and only where the prompt's own cells leave room the prior closed. Prompts
with no observed cell have no own bound and are left to the model.

Measured (``benchmarks/bench_sparse_coverage.py --reps 16 --budgets 2,5 --schemes uniform
--seed 23``, the grids of the calibration's measurement): the worst prompt's 90 % interval
covered 1.00 on normal, heavy and broken grids at 2 and 5 % (before: 0.69 and 0.63 on the
broken grid, 0.75 on the heavy at 2 %), the best prompt's 0.94-1.00 (before 0.75 and 0.81 in
two cells); the price is width: the worst prompt's interval 0.75 wide at 2 % (0.44-0.54
before) and 0.51 at 5 % (0.28-0.35), the best prompt's 0.31-0.36 and 0.23-0.25 (0.22 and
0.13-0.16). At 2 % a prompt has eight cells: whether one of them is broken is not in the data,
and the interval says so. Measured and left: the inner ends from the single prompt the model
calls worst or best at alpha / 2 instead of the union bound (narrower by 0.03-0.1, but the
best prompt on the broken grid at 5 % covered 0.75 again).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.special import expit

from evalstats.sparse._draws import _identity, _item_sums
from evalstats.sparse._fit import CellData, Fit

__all__ = ["OwnCells", "own_cells"]


@dataclass(frozen=True)
class OwnCells:
    """What the own-cell bounds need: each observed prompt's flat-prior posterior of u_p."""

    grid: np.ndarray = field(repr=False)  # residual prompt effects (logit), K
    cdf: np.ndarray = field(repr=False)  # P_obs x K, each prompt's own-cells posterior CDF
    prompt: np.ndarray = field(repr=False)  # the observed prompts' indices
    cells: CellData = field(repr=False)
    mu: float = 0.0
    a: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    base: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)  # b_p without u_p

    def accuracy(self, q: float) -> np.ndarray:
        """Q_p(q) of every observed prompt: its accuracy at its own posterior's q-quantile."""
        c = self.cells
        k = np.minimum((self.cdf < q).sum(axis=1), self.grid.size - 1)
        b = np.zeros(c.n_prompts)
        b[self.prompt] = self.base[self.prompt] + self.grid[k]
        score = c.k / c.n
        obs_sum = np.bincount(c.prompt, score, c.n_prompts)
        pred_obs = np.bincount(c.prompt, expit(self.mu + self.a[c.item] + b[c.prompt]), c.n_prompts)
        total = _item_sums(self.mu, self.a, b[self.prompt], _identity)
        acc = (obs_sum[self.prompt] + total - pred_obs[self.prompt]) / c.n_items
        m = np.bincount(c.prompt, minlength=c.n_prompts)[self.prompt]
        full = m >= c.n_items
        acc[full] = obs_sum[self.prompt][full] / c.n_items
        return np.clip(acc, 0.0, 1.0)

    def bounds(self, confidence_level: float) -> tuple[float, float, float, float]:
        """(worst low, worst high, best low, best high) at ``confidence_level`` (module doc)."""
        alpha = 1.0 - float(confidence_level)
        n = max(int(self.prompt.size), 1)
        lo, hi = self.accuracy(alpha / 2), self.accuracy(1 - alpha / 2)
        lo_p, hi_p = self.accuracy(alpha / (2 * n)), self.accuracy(1 - alpha / (2 * n))
        return float(lo.min()), float(hi_p.min()), float(lo_p.max()), float(hi.max())


def own_cells(cells: CellData, fit: Fit, prior) -> OwnCells | None:
    """The group's :class:`OwnCells` from its prompt prior (None when no prompt was observed)."""
    observed = np.flatnonzero(np.bincount(cells.prompt, minlength=cells.n_prompts) > 0)
    if observed.size == 0:
        return None
    cdf = np.cumsum(prior.lik[observed], axis=1)
    cdf /= cdf[:, -1:]
    return OwnCells(
        grid=prior.grid,
        cdf=cdf,
        prompt=observed,
        cells=cells,
        mu=float(fit.mu),
        a=prior.item_mode,
        base=fit.prompt_effect(cells.levels) - fit.u,
    )
