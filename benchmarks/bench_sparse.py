"""Benchmark: the per-prompt accuracy distribution from a share of the item x prompt grid.

Full grids with a known truth (every variant's accuracy over every item) are subsampled at
budgets of 2, 5, 10 and 20 % of the cells, by two schemes:

- ``uniform``: every cell kept with probability = budget;
- ``walk``: every item run under round(budget x variants) variants drawn at random.

For each (grid, scheme, budget) and each of ``--reps`` subsamples, both estimators of
:func:`evalstats.sparse.sparse_prompt_distribution` run: ours (``estimate``, the crossed
logistic model) and ``naive`` (per-variant means of the observed cells). Printed per budget:
the mean absolute error of each quantity (mean, sd, min, q05, q25, median, q75, q95, max)
against the full grid's, for ours and naive, the ratio ours / naive, and the share of
subsamples whose ``--confidence-level`` interval covers the full grid's value, and
the mean signed error of ours (``bias``).

Grids (``--grids``):

- ``planted``: :func:`evalstats.sparse.full_grid`, 400 items x 200 variants, the model the
  estimator assumes (item, prompt and two prompt-factor effects);
- ``interaction``: the same with an item x prompt interaction (sd 0.5 on the logit scale)
  that the estimator does not model.

No real full grid is read: none with item-level scores for every (item, prompt) cell could be
found in a form that is safe to read here (PromptEval's correctness matrices ship as Python
pickles, which evalstats never loads).

Run:  python benchmarks/bench_sparse.py [--reps 200] [--budgets 2,5,10,20]
      [--schemes uniform,walk] [--grids planted,interaction] [--n-resamples 200] [--seed 0]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import polars as pl

GRIDS = {
    "planted": {"n_items": 400, "n_variants": 200},
    "interaction": {"n_items": 400, "n_variants": 200, "interaction_sd": 0.5},
}


def truth_of(grid: pl.DataFrame) -> dict[str, float]:
    from evalstats.sparse._draws import STATISTICS, statistics_of

    acc = grid.group_by("variant").agg(pl.col("score").mean())["score"].to_numpy()
    return {n: float(v) for (n, _), v in zip(STATISTICS, statistics_of(acc)[0])}


def one(grid, truth, *, share, scheme, seed, n_resamples, level):
    from evalstats.sparse import sparse_prompt_distribution, subsample_cells

    obs = subsample_cells(grid, share=share, scheme=scheme, seed=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = sparse_prompt_distribution(
            obs, n_resamples=n_resamples, seed=seed, confidence_level=level
        )
    t = np.array([truth[q] for q in out["quantity"]])
    est, nai = out["estimate"].to_numpy(), out["naive"].to_numpy()
    cover = (out["ci_low"].to_numpy() <= t) & (t <= out["ci_high"].to_numpy())
    return est - t, nai - t, cover, out["quantity"].to_list()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--budgets", default="2,5,10,20")
    parser.add_argument("--schemes", default="uniform,walk")
    parser.add_argument("--grids", default="planted,interaction")
    parser.add_argument("--n-resamples", dest="n_resamples", type=int, default=200)
    parser.add_argument("--confidence-level", dest="level", type=float, default=0.9)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    from evalstats.sparse import full_grid

    budgets = [float(b) / 100 for b in args.budgets.split(",")]
    for gname in args.grids.split(","):
        grid = full_grid(seed=args.seed, **GRIDS[gname])
        truth = truth_of(grid)
        print(f"\n== grid {gname}: {GRIDS[gname]}, seed {args.seed}")
        print("   truth: " + ", ".join(f"{k} {v:.3f}" for k, v in truth.items()))
        for scheme in args.schemes.split(","):
            for share in budgets:
                start = time.perf_counter()
                errs, nerrs, covs = [], [], []
                names: list[str] = []
                for rep in range(args.reps):
                    e, n, c, names = one(
                        grid,
                        truth,
                        share=share,
                        scheme=scheme,
                        seed=args.seed * 100_003 + rep,
                        n_resamples=args.n_resamples,
                        level=args.level,
                    )
                    errs.append(e)
                    nerrs.append(n)
                    covs.append(c)
                sec = (time.perf_counter() - start) / args.reps
                bias = np.mean(errs, 0)
                e, n = np.mean(np.abs(errs), 0), np.mean(np.abs(nerrs), 0)
                c = np.mean(covs, 0)
                print(
                    f"\n-- {gname} {scheme} budget {share:.0%}  ({args.reps} subsamples, "
                    f"{sec:.2f} s each)"
                )
                print(
                    f"   {'quantity':<8} {'ours':>7} {'naive':>7} {'ratio':>6} {'cover':>6}"
                    f" {'bias':>8}"
                )
                for q, a, b, cv, bs in zip(names, e, n, c, bias):
                    ratio = a / b if b else np.nan
                    print(f"   {q:<8} {a:7.4f} {b:7.4f} {ratio:6.2f} {cv:6.2f} {bs:+8.4f}")


if __name__ == "__main__":
    main()
