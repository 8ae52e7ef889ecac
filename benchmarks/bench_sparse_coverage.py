"""Benchmark: coverage of the sparse estimator's intervals over fresh grids, with a diagnosis.

Each subsample is drawn from a new grid of ``bench_promptEval.py`` (``--grids`` normal, heavy,
broken: 100 variants x 400 items; seeds ``--seed`` x 1000 + rep, none used while developing
when ``--seed`` is new), sampled ``uniform`` or ``walk`` at each budget, and estimated by
:func:`evalstats.sparse._calibrate.interval_draws` (the library's own path: fit, prompt prior,
posterior draws and, unless ``--no-calibrate``, the calibration of
:mod:`evalstats.sparse._calibrate`). Printed per (grid, scheme, budget) and quantity:

- ``bias``: mean of estimate - truth; ``sd(err)``: sd of estimate - truth over the grids;
- ``draw sd``: mean sd of the quantity over the draws (what the interval's width rests on);
- ``ratio``: sd(err) / draw sd (1 when the draws are as wide as the errors), and ``bias/sd``:
  bias / draw sd (0 when the estimate is centred);
- ``width``: mean width of the interval;
- ``cover``: share of the grids whose ``--confidence-level`` interval holds the truth, and its
  standard error;

and the mean time of one estimate (fit, prior, draws and calibration). ``--jobs`` runs the
grids in that many processes (each with one BLAS thread).

Run:  PYTHONPATH=. nice -n 10 python benchmarks/bench_sparse_coverage.py --reps 200 \
          [--grids normal,heavy,broken] [--budgets 2,5,10,20] [--schemes uniform,walk] \
          [--seed 11] [--jobs 2] [--no-calibrate] [--n-resamples 200] [--confidence-level 0.9]
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_promptEval import GRIDS, cells_of, grid_arrays, mask_of  # noqa: E402

NAMES = ("mean", "sd", "min", "q05", "q25", "median", "q75", "q95", "max")


def one(task: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]:
    """One fresh grid and subsample: truth, estimate, draw sd, interval, seconds."""
    from evalstats._threads import single_blas_thread
    from evalstats.sparse import full_grid
    from evalstats.sparse._calibrate import interval_draws
    from evalstats.sparse._draws import statistics_of

    gname, scheme, share, rep, seed, n_resamples, level, calibrate = task
    y, _ = grid_arrays(full_grid(seed=seed * 1000 + rep, **GRIDS[gname]))
    mask = mask_of(y.shape, share, scheme, np.random.default_rng(seed * 100_003 + rep))
    cells = cells_of(mask, y)
    with single_blas_thread():
        start = time.perf_counter()
        est, lo, hi, spread = interval_draws(
            cells,
            n_resamples=n_resamples,
            rng=np.random.default_rng(rep),
            confidence_level=level,
            calibrate=calibrate,
        )
        sec = time.perf_counter() - start
    return statistics_of(y.mean(axis=1))[0], est, spread, lo, hi, sec


def report(rows: list[tuple], label: str) -> None:
    """Print the diagnosis and coverage of one (grid, scheme, budget)."""
    truth, est, spread, lo, hi, sec = (np.array(x) for x in zip(*rows))
    err = est - truth
    cover = (lo <= truth) & (truth <= hi)
    n = len(rows)
    print(f"\n-- {label} ({n} fresh grids); mean time of one estimate {sec.mean():.3f} s")
    print(
        f"   {'quantity':<8} {'bias':>8} {'sd(err)':>8} {'draw sd':>8} {'ratio':>6} "
        f"{'bias/sd':>7} {'width':>7} {'cover':>6} {'se':>6}"
    )
    for j, name in enumerate(NAMES):
        d = spread[:, j].mean()
        c = cover[:, j].mean()
        print(
            f"   {name:<8} {err[:, j].mean():+8.4f} {err[:, j].std():8.4f} {d:8.4f} "
            f"{err[:, j].std() / max(d, 1e-12):6.2f} {err[:, j].mean() / max(d, 1e-12):+7.2f} "
            f"{(hi[:, j] - lo[:, j]).mean():7.4f} "
            f"{c:6.3f} {np.sqrt(c * (1 - c) / n):6.3f}"
        )
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=25)
    parser.add_argument("--grids", default="normal,heavy,broken")
    parser.add_argument("--budgets", default="2,5,10,20")
    parser.add_argument("--schemes", default="uniform,walk")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--n-resamples", dest="n_resamples", type=int, default=200)
    parser.add_argument("--confidence-level", dest="level", type=float, default=0.9)
    parser.add_argument("--no-calibrate", dest="calibrate", action="store_false")
    args = parser.parse_args()
    print(
        f"fresh grids, seed {args.seed}, {args.n_resamples} draws, level {args.level}, "
        f"calibrate {args.calibrate}"
    )
    with ProcessPoolExecutor(args.jobs) as pool:
        for gname in args.grids.split(","):
            for scheme in args.schemes.split(","):
                for b in args.budgets.split(","):
                    share = float(b) / 100
                    tasks = [
                        (
                            gname,
                            scheme,
                            share,
                            rep,
                            args.seed,
                            args.n_resamples,
                            args.level,
                            args.calibrate,
                        )
                        for rep in range(args.reps)
                    ]
                    rows = list(pool.map(one, tasks))
                    report(rows, f"{gname} {scheme} budget {b} %")


if __name__ == "__main__":
    main()
