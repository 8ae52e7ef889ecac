"""Intervals of the per-prompt distribution's statistics, calibrated by parametric bootstrap.

The posterior draws (:mod:`evalstats.sparse._draws`) are about as wide as the estimator's
errors, but at small budgets their centre is pulled inward: items seen two to five times take
part of each prompt's deviation, and the prompt and item variances are estimated low (the item
variance at 0.4-0.7 of the planted one with two cells an item). On 40 fresh normal grids at 2 %
(``benchmarks/bench_sparse_coverage.py --no-calibrate``) the sd came out 0.029 low (1.5 draw
sds) and the q05 0.052 high, so their 90 % intervals covered 0.58 and 0.68; at 20 % the bias
was gone. The pull grows as the data weaken, so it is measured on the group's own design:

1. ``n_worlds`` grids are simulated from the fitted model, each with the group's items, prompts
   and observed cells (their number of runs): fresh item effects from a normal whose sd ranges
   over the worlds from the fitted one to :data:`_ITEM_WIDEN` times it; the prompt effects of
   one posterior draw (factor levels and residual effects) scaled about their mean to an sd of
   lambda times the draws' mean sd, lambda spread evenly on the log scale over
   [:data:`_STRETCH_LOW`, :data:`_STRETCH_HIGH`] (further when the moment estimate of the
   spread asks, :func:`_stretch_high`): the worlds' spreads range beyond what the draws, pulled
   in as they are, show, and each keeps its draw's shape (a long tail, an outlying prompt); the
   intercept set so that the world's mean accuracy is the group's estimate. Every cell's score
   is drawn (binomial); a world's truth T is every prompt's mean over its whole grid;
2. the estimator (fit, prompt prior, ``world_resamples`` posterior draws) is run on each world's
   observed cells, giving its estimate E of every statistic;
3. the sd: E = alpha + beta T + error is fitted by least squares over the worlds and read
   backwards at the group's own estimate E_obs: the calibrated interval holds every T whose
   prediction interval at ``confidence_level`` (Student t with n_worlds - 2 df, with the
   leverage term) holds E_obs, searched over the worlds' range of T widened by half of it on
   each side (at 2 % beta was about 0.25: the estimate barely follows the truth, and the
   interval is wide);
4. every other statistic: its error E - T is regressed on the worlds' true sd and read at both
   ends of the sd's calibrated interval; the interval is E_obs minus either, widened by t times
   the regression's residual sd (with its leverage). The mean and median, whose errors do not
   follow the spread, get E_obs - mean error -+ that width.

The reported interval is the hull of the draws' percentiles and the calibrated interval (for
the worst and best prompt also the own-cell bounds of :mod:`evalstats.sparse._extremes`, with
or without worlds), and the estimate stays the draws' mean: the calibration only widens,
toward where the worlds say the truth lies. On a full grid no world is simulated: the
estimate is the data and the interval has zero width.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import stats as sps
from scipy.special import expit

from evalstats.sparse._draws import STATISTICS, accuracy_draws, statistics_of
from evalstats.sparse._extremes import OwnCells, own_cells
from evalstats.sparse._fit import CellData, Fit, fit_cells

__all__ = [
    "N_WORLDS",
    "WORLD_RESAMPLES",
    "Calibration",
    "calibrate",
    "estimate_cells",
    "interval_draws",
]

#: Simulated grids of the calibration (the default of ``n_worlds``) and the posterior draws of
#: each world's estimate.
N_WORLDS = 10
WORLD_RESAMPLES = 25

#: Range of the worlds' prompt-effect sd, as multiples of the posterior draws' mean sd (spread
#: evenly on the log scale), and the draws that mean is taken over. At 2 % the planted prompt
#: sd was 2.5 times the draws' on bench_promptEval's grids (0.58 against 0.22 logit).
_STRETCH_LOW, _STRETCH_HIGH = 0.7, 4.0
_REF_DRAWS = 20
#: The largest stretch the moment estimate of the spread may ask for (:func:`_stretch_high`).
_STRETCH_MAX = 8.0
#: The worlds' item sd ranges from the fitted one to this multiple of it: with two cells an
#: item the fitted item variance came out at 0.4-0.7 of the planted one (1.0-1.7 against 2.25
#: on bench_promptEval's grids at 2 %), and a world with narrower items pulls its prompts in
#: less than the data's were.
_ITEM_WIDEN = 1.5
#: Points of the grid of truths the prediction band is read on.
_N_INVERT = 2001
#: Upper bound of each statistic (the sd of values in [0, 1] is at most 1/2).
_UPPER = np.array([0.5 if name == "sd" else 1.0 for name, _ in STATISTICS])
#: Position of the sd among the statistics: the spread the other statistics' errors follow.
_SD = [name for name, _ in STATISTICS].index("sd")
#: Positions of the worst and best prompt (their intervals also hold the own-cell bounds).
_MIN = [name for name, _ in STATISTICS].index("min")
_MAX = [name for name, _ in STATISTICS].index("max")


@dataclass(frozen=True)
class Calibration:
    """The group's raw estimate of every statistic and the simulated worlds' (truth, estimate).

    ``raw`` is the mean of each statistic over the group's posterior draws; ``truth`` and
    ``fitted`` are ``n_worlds x n_statistics``; empty when no calibration was run (a full grid,
    or ``n_worlds`` 0), in which case :meth:`interval` gives the draws' percentiles. ``own``
    holds each variant's own-cell bounds of the worst and best prompt (None on a full grid),
    applied with or without worlds.
    """

    raw: np.ndarray
    draws_stats: np.ndarray = field(repr=False)
    truth: np.ndarray = field(repr=False)
    fitted: np.ndarray = field(repr=False)
    own: OwnCells | None = field(default=None, repr=False)

    @property
    def n_worlds(self) -> int:
        """Number of simulated worlds the calibration rests on."""
        return int(self.truth.shape[0])

    def interval(self, confidence_level: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(estimate, ci_low, ci_high) of every statistic at ``confidence_level``.

        The estimate is the draws' mean; the interval is the hull of the draws' equal-tailed
        percentiles and the calibrated interval (module docstring).
        """
        alpha = (1.0 - float(confidence_level)) / 2.0
        lo, hi = np.quantile(self.draws_stats, [alpha, 1 - alpha], axis=0)
        if self.n_worlds >= 3:
            c_lo, c_hi = self.calibrated(confidence_level)
            lo, hi = np.minimum(lo, c_lo), np.maximum(hi, c_hi)
        if self.own is not None:
            # the worst and best prompt: also the bounds of each prompt's own cells
            # (:mod:`evalstats.sparse._extremes`), which do not rest on the prior's tails
            w_lo, w_hi, b_lo, b_hi = self.own.bounds(confidence_level)
            lo[_MIN], hi[_MIN] = min(lo[_MIN], w_lo), max(hi[_MIN], w_hi)
            lo[_MAX], hi[_MAX] = min(lo[_MAX], b_lo), max(hi[_MAX], b_hi)
        return self.raw.copy(), lo, hi

    def calibrated(self, confidence_level: float) -> tuple[np.ndarray, np.ndarray]:
        """The calibrated interval alone (module docstring, step 3)."""
        alpha = (1.0 - float(confidence_level)) / 2.0
        t_q = float(sps.t.ppf(1.0 - alpha, self.n_worlds - 2))
        lo, hi = np.empty(self.raw.size), np.empty(self.raw.size)
        lo[_SD], hi[_SD] = _invert(self.truth[:, _SD], self.fitted[:, _SD], self.raw[_SD], t_q)
        spread = self.truth[:, _SD]
        for j in range(self.raw.size):
            if j != _SD:
                lo[j], hi[j] = _shifted(
                    spread,
                    self.fitted[:, j] - self.truth[:, j],
                    self.raw[j],
                    (lo[_SD], hi[_SD]),
                    t_q,
                )
        return np.clip(lo, 0.0, _UPPER), np.clip(hi, 0.0, _UPPER)


def _shifted(
    spread: np.ndarray, d: np.ndarray, e_obs: float, sd_range: tuple[float, float], t_q: float
) -> tuple[float, float]:
    """Interval of T = E_obs - error, the error regressed on the worlds' spread (their true sd).

    The error's line is read at both ends of the sd's calibrated interval; the interval spans
    E_obs minus either, widened by t times the line's residual sd (with its leverage).
    """
    b = spread.size
    sxx = float(np.sum((spread - spread.mean()) ** 2))
    if sxx > 1e-18:
        slope = float(np.sum((spread - spread.mean()) * (d - d.mean())) / sxx)
    else:
        slope = 0.0
    icpt = float(d.mean() - slope * spread.mean())
    sigma = float(np.sqrt(np.sum((d - icpt - slope * spread) ** 2) / (b - 2)))
    ends = np.array(sd_range, dtype=float)
    shift = icpt + slope * ends
    lever = 1.0 + 1.0 / b + ((ends - spread.mean()) ** 2 / sxx if sxx > 1e-18 else 0.0)
    half = t_q * sigma * np.sqrt(lever)
    return float(np.min(e_obs - shift - half)), float(np.max(e_obs - shift + half))


def _invert(t: np.ndarray, e: np.ndarray, e_obs: float, t_q: float) -> tuple[float, float]:
    """Interval of T from E_obs, by the worlds' regression E = alpha + beta T (module doc)."""
    b = t.size
    d = e - t
    sxx = float(np.sum((t - t.mean()) ** 2))
    if sxx <= 1e-18:  # every world with one truth (a grid without spread): take off the error
        centre = e_obs - float(d.mean())
        half = t_q * float(d.std(ddof=1)) * np.sqrt(1.0 + 1.0 / b)
        return float(centre - half), float(centre + half)
    beta = float(np.sum((t - t.mean()) * (e - e.mean())) / sxx)
    alpha = float(e.mean() - beta * t.mean())
    sigma = float(np.sqrt(np.sum((e - alpha - beta * t) ** 2) / (b - 2)))
    # every T whose prediction interval holds E_obs, on a grid over the worlds' range widened by
    # half of it each side (an unbounded set: the estimate barely follows the truth)
    width = float(np.ptp(t))
    grid = np.linspace(t.min() - width / 2, t.max() + width / 2, _N_INVERT)
    band = t_q * sigma * np.sqrt(1.0 + 1.0 / b + (grid - t.mean()) ** 2 / sxx)
    inside = np.abs(e_obs - alpha - beta * grid) <= band
    if not inside.any():
        # E_obs beyond every prediction interval: the T whose prediction is nearest
        k = int(np.argmin(np.abs(e_obs - alpha - beta * grid) - band))
        return float(grid[k]), float(grid[k])
    return float(grid[inside].min()), float(grid[inside].max())


def _level(a: np.ndarray, b: np.ndarray, target: float) -> float:
    """The intercept mu with mean over items and prompts of sigmoid(mu + a_i + b_p) = target."""
    target = float(np.clip(target, 1e-4, 1 - 1e-4))
    mu = float(np.log(target / (1 - target)) - np.mean(a) - np.mean(b))
    for _ in range(30):
        p = expit(mu + a[None, :] + b[:, None])
        step = (float(p.mean()) - target) / max(float((p * (1 - p)).mean()), 1e-9)
        mu -= step
        if abs(step) < 1e-10:
            break
    return mu


def _world(
    cells: CellData,
    b: np.ndarray,
    item_sd: float,
    mean_acc: float,
    rng: np.random.Generator,
) -> tuple[CellData, np.ndarray]:
    """One simulated grid: its observed cells (same design, new scores) and every prompt's truth.

    ``b`` holds every prompt's whole effect (factor levels and residual); items are drawn afresh
    from a normal of sd ``item_sd``, and the intercept is set so that the world's expected mean
    accuracy is ``mean_acc`` (the group's estimate): widening the items alone would move it. The unobserved cells have the group's typical number of
    runs, as in the draws' binomial noise.
    """
    a = rng.normal(0.0, item_sd, cells.n_items)
    mu = _level(a, b, mean_acc)
    prob = expit(mu + a[None, :] + b[:, None])  # prompts x items
    n_typ = max(int(round(float(np.median(cells.n)))), 1)
    full = rng.binomial(n_typ, prob) / n_typ
    p_obs = prob[cells.prompt, cells.item]
    n_obs = np.maximum(np.rint(cells.n), 1).astype(np.int64)
    score = rng.binomial(n_obs, p_obs) / n_obs
    full[cells.prompt, cells.item] = score
    world = CellData(
        item=cells.item,
        prompt=cells.prompt,
        k=score * cells.n,
        n=cells.n,
        n_items=cells.n_items,
        n_prompts=cells.n_prompts,
        levels=cells.levels,
    )
    return world, full.mean(axis=1)


def _stretch_high(cells: CellData, sd_draws: float) -> float:
    """The largest stretch of the worlds: :data:`_STRETCH_HIGH`, or more if the moments ask.

    More when the moment estimate of the prompts' accuracy sd asks for it (1.5 times its ratio
    to the draws' sd).
    var(naive means) - mean(naive (1 - naive) / (m_p - 1)) is unbiased for the variance of the
    prompts' accuracies when each prompt's items are a random sample (m_p >= 2 cells), however
    few: noisy, but not pulled in as the model's estimate is at small budgets.
    """
    score = cells.k / cells.n
    m = np.bincount(cells.prompt, minlength=cells.n_prompts).astype(float)
    naive = np.bincount(cells.prompt, score, cells.n_prompts) / np.maximum(m, 1)
    use = m >= 2
    if use.sum() < 3 or sd_draws <= 0:
        return _STRETCH_HIGH
    noise = naive[use] * (1 - naive[use]) / (m[use] - 1)
    var = float(np.var(naive[use], ddof=1) - np.mean(noise))
    ratio = np.sqrt(max(var, 0.0)) / sd_draws
    return float(min(max(_STRETCH_HIGH, 1.5 * ratio), _STRETCH_MAX))


def calibrate(
    cells: CellData,
    fit: Fit,
    prior,
    draws: np.ndarray,
    *,
    n_worlds: int,
    world_resamples: int,
    rng: np.random.Generator,
) -> Calibration:
    """The group's :class:`Calibration`: ``n_worlds`` simulated grids refitted (module doc)."""
    stats = statistics_of(draws)
    raw = stats.mean(axis=0)
    m = np.bincount(cells.prompt, minlength=cells.n_prompts)
    if bool(np.all(m >= cells.n_items)):
        empty = np.zeros((0, raw.size))
        return Calibration(raw, stats, empty, empty)
    own = own_cells(cells, fit, prior)
    if n_worlds < 3:
        empty = np.zeros((0, raw.size))
        return Calibration(raw, stats, empty, empty, own)
    base = fit.prompt_effect(cells.levels) - fit.u
    # the reference spread: the posterior draws' mean sd of the prompt effects (logit)
    ref = float(np.mean([np.std(base + prior.draw(rng)) for _ in range(_REF_DRAWS)]))
    stretch = np.geomspace(_STRETCH_LOW, _stretch_high(cells, float(raw[1])), n_worlds)
    item_sd = np.sqrt(fit.var_item) * np.linspace(1.0, _ITEM_WIDEN, n_worlds)
    rng.shuffle(stretch)
    rng.shuffle(item_sd)
    truth, fitted = [], []
    for lam, s_item in zip(stretch, item_sd):
        b = base + prior.draw(rng)
        sd = float(np.std(b))
        b = b.mean() + (b - b.mean()) * (lam * ref / sd if sd > 0 else 0.0)
        world, acc = _world(cells, b, s_item, float(raw[0]), rng)
        try:
            wfit = fit_cells(world)
        except (ValueError, np.linalg.LinAlgError):  # pragma: no cover - a degenerate world
            continue
        wdraws = accuracy_draws(world, wfit, n_resamples=world_resamples, rng=rng)
        truth.append(statistics_of(acc)[0])
        fitted.append(statistics_of(wdraws).mean(axis=0))
    return Calibration(raw, stats, np.array(truth), np.array(fitted), own)


def estimate_cells(
    cells: CellData,
    *,
    n_resamples: int,
    rng: np.random.Generator,
    n_worlds: int,
    world_resamples: int,
) -> tuple[Fit, np.ndarray, Calibration]:
    """Fit, posterior draws and calibration of one group's cells."""
    from evalstats.sparse._prior import prompt_prior

    fit = fit_cells(cells)
    prior = prompt_prior(cells, fit)
    draws = accuracy_draws(cells, fit, n_resamples=n_resamples, rng=rng, prior=prior)
    cal = calibrate(
        cells,
        fit,
        prior,
        draws,
        n_worlds=n_worlds,
        world_resamples=world_resamples,
        rng=rng,
    )
    return fit, draws, cal


def interval_draws(
    cells: CellData,
    *,
    n_resamples: int,
    rng: np.random.Generator,
    confidence_level: float,
    calibrate: bool = True,
    n_worlds: int | None = None,
    world_resamples: int | None = None,
):
    """(estimate, ci_low, ci_high, draw sd) of every statistic: the library's path, for benchmarks."""
    _, _, cal = estimate_cells(
        cells,
        n_resamples=n_resamples,
        rng=rng,
        n_worlds=(N_WORLDS if n_worlds is None else n_worlds) if calibrate else 0,
        world_resamples=WORLD_RESAMPLES if world_resamples is None else world_resamples,
    )
    est, lo, hi = cal.interval(confidence_level)
    return est, lo, hi, cal.draws_stats.std(axis=0)
