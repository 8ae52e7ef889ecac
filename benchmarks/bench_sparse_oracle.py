"""Benchmark: the oracle bound, the Bayes estimator that knows the generating model.

For the simulated grids of ``bench_promptEval.py`` (fresh grids: grid seed ``seed * 1000 +
rep``, subsample seed ``seed * 100_003 + rep``, so the subsamples are those of
``bench_promptEval.py --fresh-grids``), the oracle knows the intercept, every item effect, every
prompt-factor level effect and the family of the residual prompt effects u_p (normal with sd
0.4; Student t with 3 df scaled to sd 0.4; normal with each prompt shifted by -3 with probability
1 / P, the broken grid's one shifted prompt taken as an independent draw). Given the items the
prompts are independent a posteriori: each u_p's posterior is its prior times the likelihood of
its observed cells on a grid of 1201 logit values over [-9, 9]. A posterior draw takes every
u_p from its posterior and every unobserved cell from its Bernoulli law; observed cells stay as
observed, and a prompt's accuracy is its mean over every item (the truth's definition).

The oracle's estimate of each quantity is the posterior mean (as ours) or the posterior median
(the Bayes rule for the absolute error these tables average); W1 uses the mean (median) of each
order statistic. No estimator that does not know the generating model can do better on average
than the better of the two, up to Monte Carlo error (``--n-resamples`` draws).

``oracle-hyper`` (``--hyper``) knows only what the generating model fixes: the intercept, the
item sd, the factor sd and the prompt effects' family and sd; the item, factor-level and prompt
effects are drawn by Gibbs sampling (each block independent given the others, on a grid of 141
values over [-7, 7]; 100 sweeps of burn-in, one draw per sweep after). It is the Bayes
estimator of the generating model itself: no estimator does better on average there.

``oracle-sd?`` knows the items and factor effects but not the prompt sd: it weighs 100 sds in [0.02, 2] by the marginal
likelihood of every prompt's cells (a flat prior) and draws the sd first (empirical Bayes with
the family known). It shows how much of the oracle's lead is knowing the spread itself.

``oracle-shift?`` (broken grid only) knows the items, factor effects, the bulk's sd and that a
prompt is outlying with probability 1 / P, but not where: the outlier's effect is flat on
[-6, 6] instead of the planted -3. It is the Bayes estimator for that knowledge: what knowing
everything but the broken prompt's location buys on the worst prompt.

Printed per grid, scheme and budget: the mean absolute errors of PE-Rasch, ours (optional, as
``bench_promptEval.py``'s ``ours``), oracle (mean) and oracle (median), and the ratios to
PE-Rasch with 90 % bootstrap intervals (subsamples resampled in pairs).

Run:  PYTHONPATH=.:/tmp/pe-deps python benchmarks/bench_sparse_oracle.py \
          --prompteval /tmp/prompteval [--reps 30] [--budgets 5] [--schemes uniform,walk] \
          [--grids normal] [--n-resamples 400] [--seed 0] [--no-ours]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from scipy.special import expit, log_expit

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_promptEval import (  # noqa: E402
    GRIDS,
    NAMES,
    errors,
    grid_arrays,
    load_prompteval,
    mask_of,
    run_ours,
    run_pe,
    stats_of,
)
from bench_sparse import ratio_interval  # noqa: E402

_GRID = np.linspace(-9.0, 9.0, 1201)
#: Prompt sds the ``oracle-sd?`` estimator weighs (its family known, its scale not).
_SCALES = np.linspace(0.02, 2.0, 100)


def oracle_prior(kind: str, sd: float, n_prompts: int, shift: float = -3.0) -> np.ndarray:
    """Log density (up to a constant) of the residual prompt effect on :data:`_GRID`."""
    t = _GRID
    if kind == "normal":
        return -0.5 * (t / sd) ** 2
    if kind == "heavy":
        z = t / (sd / np.sqrt(3.0))  # sd * t_3 / sqrt(3): scale sd / sqrt(3)
        return -2.0 * np.log1p(z * z / 3.0)
    if kind == "broken":
        eps = 1.0 / n_prompts
        return np.logaddexp(
            np.log1p(-eps) - 0.5 * (t / sd) ** 2, np.log(eps) - 0.5 * ((t - shift) / sd) ** 2
        )
    if kind == "broken-flat":
        # the shift unknown: an outlying prompt (probability 1 / P) anywhere on [-6, 6]
        eps = 1.0 / n_prompts
        bulk = np.log1p(-eps) - 0.5 * (t / sd) ** 2 - np.log(np.sqrt(2 * np.pi) * sd)
        slab = np.where(np.abs(t) <= 6.0, np.log(eps / 12.0), -np.inf)
        return np.logaddexp(bulk, slab)
    raise ValueError(kind)


def _loglik(y, mask, eta_fixed) -> np.ndarray:
    """log L_p(t) of every prompt's observed cells on :data:`_GRID` (P x K)."""
    loglik = np.zeros((y.shape[0], _GRID.size))
    for p in range(y.shape[0]):
        obs = mask[p]
        eta = eta_fixed[p, obs][:, None] + _GRID[None, :]
        yy = y[p, obs][:, None]
        loglik[p] = np.sum(yy * log_expit(eta) + (1 - yy) * log_expit(-eta), axis=0)
    return loglik


def oracle_draws(y, mask, eta_fixed, log_priors, *, n_resamples, rng) -> np.ndarray:
    """``n_resamples x P`` exact posterior draws of every prompt's accuracy (module doc).

    ``eta_fixed`` is the known part of every cell's logit (P x I): intercept, item and factor
    effects; u_p is the unknown. ``log_priors`` is one log prior on :data:`_GRID` (the oracle)
    or several (S x K, the family's scales): then the scale's posterior (flat prior over the
    rows, marginal likelihood of every prompt's cells) is drawn first in each draw.
    """
    n_p, n_i = y.shape
    loglik = _loglik(y, mask, eta_fixed)
    log_priors = np.atleast_2d(log_priors)
    log_priors = log_priors - np.logaddexp.reduce(log_priors, axis=1, keepdims=True)
    top = loglik.max(axis=1, keepdims=True)
    lik = np.exp(loglik - top)
    marg = np.log(np.maximum(lik @ np.exp(log_priors).T, 1e-300)).sum(axis=0)
    w = np.exp(marg - marg.max())
    w /= w.sum()
    cdfs = []
    for s in range(log_priors.shape[0]):
        post = lik * np.exp(log_priors[s])[None, :] if w[s] > 1e-6 else lik
        cdf = np.cumsum(post, axis=1)
        cdfs.append(cdf / np.maximum(cdf[:, -1:], 1e-300))
    obs_sum = np.where(mask, y, 0.0).sum(axis=1)
    out = np.empty((n_resamples, n_p))
    step = _GRID[1] - _GRID[0]
    for r in range(n_resamples):
        cdf = cdfs[int(rng.choice(w.size, p=w))]
        k = np.minimum((cdf < rng.random(n_p)[:, None]).sum(axis=1), _GRID.size - 1)
        u = _GRID[k] + step * (rng.random(n_p) - 0.5)
        prob = expit(eta_fixed + u[:, None])
        draw = (rng.random(prob.shape) < prob) & ~mask
        out[r] = (obs_sum + draw.sum(axis=1)) / n_i
    return out


_BLOCK_GRID = np.linspace(-7.0, 7.0, 141)


def _conditional_draw(eta_rest, y_cells, owner, n_owner, log_prior, rng) -> np.ndarray:
    """One draw of a block of effects independent given the rest (griddy Gibbs).

    Every cell's logit is ``eta_rest`` plus its owner's effect; each owner's conditional is its
    prior times its cells' likelihood on :data:`_BLOCK_GRID`.
    """
    eta = eta_rest[:, None] + _BLOCK_GRID[None, :]
    ll = y_cells[:, None] * eta - np.logaddexp(0.0, eta)
    ind = sp.csr_matrix(
        (np.ones(owner.size), (owner, np.arange(owner.size))), shape=(n_owner, owner.size)
    )
    tot = ind @ ll + log_prior[None, :]
    post = np.exp(tot - tot.max(axis=1, keepdims=True))
    cdf = np.cumsum(post, axis=1)
    cdf /= cdf[:, -1:]
    k = np.minimum((cdf < rng.random(n_owner)[:, None]).sum(axis=1), _BLOCK_GRID.size - 1)
    step = _BLOCK_GRID[1] - _BLOCK_GRID[0]
    return _BLOCK_GRID[k] + step * (rng.random(n_owner) - 0.5)


def hyper_oracle_draws(y, mask, spec, eff, *, n_resamples, rng, burn=100) -> np.ndarray:
    """Posterior draws of every prompt's accuracy knowing the hyperparameters only.

    The generating model with its intercept, item sd, factor sd and prompt-effect family known,
    every effect unknown: Gibbs sampling of the items, each factor's levels and the prompts in
    turn (each block independent given the others, drawn on a grid), ``burn`` sweeps of
    burn-in, then one draw per sweep.
    """
    p_idx, i_idx = np.nonzero(mask)
    yc = y[p_idx, i_idx].astype(float)
    n_p, n_i = y.shape
    t = _BLOCK_GRID
    prior_a = -0.5 * (t / spec["item_sd"]) ** 2
    prior_c = -0.5 * (t / 0.3) ** 2  # full_grid's default factor_sd
    prior_u = np.interp(t, _GRID, oracle_prior(spec["prompt_effects"], spec["prompt_sd"], n_p))
    lev = eff.levels
    a, u = np.zeros(n_i), np.zeros(n_p)
    c = [np.zeros(len(x)) for x in eff.factor]
    mu = spec["mean_logit"]
    obs_sum = np.where(mask, y, 0.0).sum(axis=1)
    out = np.empty((n_resamples, n_p))

    def b_of():
        b = u.copy()
        for f, cf in enumerate(c):
            b = b + cf[lev[:, f]]
        return b

    for sweep in range(burn + n_resamples):
        b = b_of()
        a = _conditional_draw(mu + b[p_idx], yc, i_idx, n_i, prior_a, rng)
        for f in range(len(c)):
            rest = mu + a[i_idx] + (b - c[f][lev[:, f]])[p_idx]
            c[f] = _conditional_draw(rest, yc, lev[p_idx, f], c[f].size, prior_c, rng)
            b = b_of()
        u = _conditional_draw(mu + a[i_idx] + (b - u)[p_idx], yc, p_idx, n_p, prior_u, rng)
        if sweep >= burn:
            prob = expit(mu + a[None, :] + b_of()[:, None])
            draw = (rng.random(prob.shape) < prob) & ~mask
            out[sweep - burn] = (obs_sum + draw.sum(axis=1)) / n_i
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompteval", required=True, help="root of a local PromptEval copy")
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--budgets", default="5")
    parser.add_argument("--schemes", default="uniform,walk")
    parser.add_argument("--grids", default="normal")
    parser.add_argument("--n-resamples", dest="n_resamples", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-ours", dest="ours", action="store_false")
    parser.add_argument("--hyper", action="store_true", help="add oracle-hyper (Gibbs, slow)")
    args = parser.parse_args()
    from evalstats.sparse import full_grid, planted_effects

    methods = load_prompteval(args.prompteval)
    n_draws = args.n_resamples
    for g in args.grids.split(","):
        spec = GRIDS[g]
        for scheme in args.schemes.split(","):
            for share in (float(b) / 100 for b in args.budgets.split(",")):
                err: dict[str, list[np.ndarray]] = {}
                for rep in range(args.reps):
                    gseed, mseed = args.seed * 1000 + rep, args.seed * 100_003 + rep
                    y, _ = grid_arrays(full_grid(seed=gseed, **spec))
                    eff = planted_effects(seed=gseed, **spec)
                    truth = y.mean(axis=1)
                    mask = mask_of(y.shape, share, scheme, np.random.default_rng(mseed))
                    acc, _ = run_pe(methods, mask, y)
                    err.setdefault("PE-Rasch", []).append(errors(acc, stats_of(acc)[0], truth))
                    if args.ours:
                        no_cov = np.zeros((y.shape[0], 0), dtype=np.int64)
                        s, est, *_ = run_ours(
                            mask, y, no_cov, n_resamples=200, seed=mseed, level=0.9
                        )
                        err.setdefault("ours", []).append(errors(s, est, truth))
                    b_fixed = eff.prompt_effect - eff.prompt
                    eta_fixed = spec["mean_logit"] + eff.item[None, :] + b_fixed[:, None]
                    kind, n_p = spec["prompt_effects"], y.shape[0]
                    known = oracle_prior(kind, spec["prompt_sd"], n_p)
                    # the same, the prompt sd unknown (its family known): empirical Bayes
                    scales = np.stack([oracle_prior(kind, s, n_p) for s in _SCALES])
                    runs = [("oracle", known), ("oracle-sd?", scales)]
                    if kind == "broken":
                        # the shift's location unknown (flat on [-6, 6]), the sd known
                        runs.append(
                            ("oracle-shift?", oracle_prior("broken-flat", spec["prompt_sd"], n_p))
                        )
                    for name, priors in runs + ([("oracle-hyper", None)] if args.hyper else []):
                        rng = np.random.default_rng(mseed)
                        draws = (
                            hyper_oracle_draws(y, mask, spec, eff, n_resamples=n_draws, rng=rng)
                            if priors is None
                            else oracle_draws(
                                y, mask, eta_fixed, priors, n_resamples=n_draws, rng=rng
                            )
                        )
                        st, srt = stats_of(draws), np.sort(draws, axis=1)
                        key = "oracle-mean" if name == "oracle" else name
                        err.setdefault(key, []).append(errors(srt.mean(0), st.mean(0), truth))
                        if name == "oracle":
                            err.setdefault("oracle-median", []).append(
                                errors(np.median(srt, 0), np.median(st, 0), truth)
                            )
                e = {k: np.array(v) for k, v in err.items()}
                print(f"\n-- {g} {scheme} budget {share:.0%} ({args.reps} fresh grids)")
                others = [k for k in e if k != "PE-Rasch"]
                head = " ".join(f"{k:>13}" for k in e)
                rhead = " ".join(f"{k + '/PE-Rasch':>24}" for k in others)
                print(f"   {'quantity':<8} {head}  {rhead}")
                rat = {
                    k: (
                        e[k].mean(0) / e["PE-Rasch"].mean(0),
                        *ratio_interval(e[k], e["PE-Rasch"], seed=args.seed),
                    )
                    for k in others
                }
                for j, name in enumerate(NAMES):
                    vals = " ".join(f"{e[k][:, j].mean():13.4f}" for k in e)
                    rs = " ".join(
                        f"{rat[k][0][j]:8.2f} [{rat[k][1][j]:.2f},{rat[k][2][j]:.2f}]".rjust(24)
                        for k in others
                    )
                    print(f"   {name:<8} {vals}  {rs}")
                sys.stdout.flush()


if __name__ == "__main__":
    main()
