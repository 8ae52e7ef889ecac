"""Benchmark: cost of one sparse estimate with and without the calibration, in the same process.

On ``--reps`` fresh normal grids of ``bench_promptEval.py`` (100 variants x 400 items), uniform
subsamples at each budget: the median time of the library's path (fit, prompt prior, 200
posterior draws) with ``n_worlds=0`` and with the default calibration, measured alternately,
one BLAS thread, and their ratio.

Run:  PYTHONPATH=. nice -n 10 python benchmarks/bench_sparse_calibration_cost.py [--reps 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_promptEval import GRIDS, cells_of, grid_arrays, mask_of  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--budgets", default="2,5,10,20")
    args = parser.parse_args()
    from evalstats._threads import single_blas_thread
    from evalstats.sparse import full_grid
    from evalstats.sparse._calibrate import N_WORLDS, estimate_cells

    print(f"n_worlds {N_WORLDS}; median seconds of one estimate over {args.reps} grids")
    print(f"{'budget':>6} {'uncalibrated':>13} {'calibrated':>11} {'ratio':>6}")
    for b in args.budgets.split(","):
        times = {0: [], N_WORLDS: []}
        for rep in range(args.reps):
            y, _ = grid_arrays(full_grid(seed=31_000 + rep, **GRIDS["normal"]))
            mask = mask_of(y.shape, float(b) / 100, "uniform", np.random.default_rng(rep))
            cells = cells_of(mask, y)
            for n_worlds in times:
                with single_blas_thread():
                    start = time.perf_counter()
                    estimate_cells(
                        cells,
                        n_resamples=200,
                        rng=np.random.default_rng(rep),
                        n_worlds=n_worlds,
                        world_resamples=25,
                    )
                    times[n_worlds].append(time.perf_counter() - start)
        t0, t1 = np.median(times[0]), np.median(times[N_WORLDS])
        print(f"{b + ' %':>6} {t0:13.3f} {t1:11.3f} {t1 / t0:6.1f}")


if __name__ == "__main__":
    main()
