"""Benchmark: time of one fit, ours against PromptEval's PE-Rasch, on the same subsamples.

Per grid and budget (uniform sampling, ``--reps`` subsamples of fresh grids of
``bench_promptEval.py``): the median time of PE-Rasch's fit, of ours (:func:`fit_cells`: modes
and variance components) and of ours with the prompt prior and 200 posterior draws, in the
same process, one after the other, and their ratios. PromptEval is run from a local copy of its
code (``--prompteval``), as in ``bench_promptEval.py``.

Run:  PYTHONPATH=.:/tmp/pe-deps python benchmarks/bench_promptEval_timing.py \
          --prompteval /tmp/prompteval [--reps 4] [--grids normal,broken] [--budgets 2,5,10,20]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_promptEval import GRIDS, grid_arrays, load_prompteval, mask_of, run_ours, run_pe  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompteval", required=True, help="root of a local PromptEval copy")
    parser.add_argument("--reps", type=int, default=4)
    parser.add_argument("--grids", default="normal,broken")
    parser.add_argument("--budgets", default="2,5,10,20")
    args = parser.parse_args()
    from evalstats.sparse import full_grid

    methods = load_prompteval(args.prompteval)
    for g in args.grids.split(","):
        for share in (float(b) / 100 for b in args.budgets.split(",")):
            pe, fit, total = [], [], []
            for rep in range(args.reps):
                y, _ = grid_arrays(full_grid(seed=rep, **GRIDS[g]))
                mask = mask_of(y.shape, share, "uniform", np.random.default_rng(rep))
                pe.append(run_pe(methods, mask, y)[1])
                no_cov = np.zeros((y.shape[0], 0), dtype=np.int64)
                *_, (f, t) = run_ours(mask, y, no_cov, n_resamples=200, seed=rep, level=0.9)
                fit.append(f)
                total.append(t)
            pe_s, fit_s, tot_s = (float(np.median(v)) for v in (pe, fit, total))
            print(
                f"{g:7s} {share:4.0%}  PE-Rasch {pe_s:.3f} s  ours fit {fit_s:.3f} s "
                f"({fit_s / pe_s:.1f}x)  ours fit + prior + 200 draws {tot_s:.3f} s "
                f"({tot_s / pe_s:.1f}x)"
            )


if __name__ == "__main__":
    main()
