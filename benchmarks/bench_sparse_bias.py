"""Benchmark: signed error, RMSE and interval width of ours per quantity (bias diagnosis).

On ``--reps`` fresh grids of ``bench_promptEval.py`` (seeds 9000 + rep), uniform subsamples at
``--share``: the mean signed error (estimate - truth), the RMSE and the mean 90 %-interval width
/ 3.29 (the sd a normal interval of that width has) of every quantity. ``--pull-back`` sets
:data:`evalstats.sparse._prior._PULL_BACK` (the share of a cell's own pull on its item's mode
taken back in the prompt likelihoods; 0 by default).

Run:  PYTHONPATH=. python benchmarks/bench_sparse_bias.py normal 0.02 [--reps 8] [--pull-back 1]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_promptEval import GRIDS, grid_arrays, mask_of, run_ours, stats_of  # noqa: E402

NAMES = ("mean", "sd", "min", "q05", "q25", "med", "q75", "q95", "max")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("grid", choices=sorted(GRIDS))
    parser.add_argument("share", type=float)
    parser.add_argument("--reps", type=int, default=8)
    parser.add_argument("--pull-back", dest="pull_back", type=float, default=None)
    args = parser.parse_args()
    from evalstats.sparse import _prior, full_grid

    if args.pull_back is not None:
        _prior._PULL_BACK = args.pull_back
    err, width = [], []
    for rep in range(args.reps):
        y, _ = grid_arrays(full_grid(seed=9000 + rep, **GRIDS[args.grid]))
        mask = mask_of(y.shape, args.share, "uniform", np.random.default_rng(rep))
        no_cov = np.zeros((y.shape[0], 0), dtype=np.int64)
        _, est, lo, hi, _ = run_ours(mask, y, no_cov, n_resamples=200, seed=rep, level=0.9)
        err.append(est - stats_of(y.mean(axis=1))[0])
        width.append(hi - lo)
    e, w = np.array(err), np.array(width)
    for label, vals in (
        ("mean signed error", e.mean(0)),
        ("RMSE", np.sqrt((e**2).mean(0))),
        ("mean width / 3.29", w.mean(0) / 3.29),
    ):
        print(f"{label:<18}", " ".join(f"{n}:{v:+.4f}" for n, v in zip(NAMES, vals)))


if __name__ == "__main__":
    main()
