"""Benchmark: time of one fit, ours against PromptEval's PE-Rasch, on the same subsamples.

Per grid and budget (uniform sampling, ``--reps`` subsamples of fresh grids of
``bench_promptEval.py``): the median time of PE-Rasch's fit, of ours (:func:`fit_cells`: modes
and variance components) and of ours with the prompt prior and 200 posterior draws, in the
same process, one after the other, and their ratios; then, with the grids' prompt factors
(template, separator), PE-discrete's fit against ours with the factors in the model. PromptEval is run from a local copy of its
code (``--prompteval``), as in ``bench_promptEval.py``.

Run:  PYTHONPATH=.:/tmp/pe-deps python benchmarks/bench_promptEval_timing.py \
          --prompteval /tmp/prompteval [--reps 6] [--grids normal,heavy,broken] [--budgets 2,5,10,20]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_promptEval import (  # noqa: E402
    GRIDS,
    dummies,
    grid_arrays,
    load_prompteval,
    mask_of,
    run_ours,
    run_pe,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompteval", required=True, help="root of a local PromptEval copy")
    parser.add_argument("--reps", type=int, default=6)
    parser.add_argument("--grids", default="normal,heavy,broken")
    parser.add_argument("--budgets", default="2,5,10,20")
    args = parser.parse_args()
    from evalstats.sparse import full_grid

    methods = load_prompteval(args.prompteval)
    for g in args.grids.split(","):
        for share in (float(b) / 100 for b in args.budgets.split(",")):
            pe, fit, total, pe_cov, fit_cov = [], [], [], [], []
            for rep in range(args.reps):
                y, levels = grid_arrays(full_grid(seed=rep, **GRIDS[g]))
                mask = mask_of(y.shape, share, "uniform", np.random.default_rng(rep))
                pe.append(run_pe(methods, mask, y)[1])
                no_cov = np.zeros((y.shape[0], 0), dtype=np.int64)
                *_, (f, t) = run_ours(mask, y, no_cov, n_resamples=200, seed=rep, level=0.9)
                fit.append(f)
                total.append(t)
                pe_cov.append(run_pe(methods, mask, y, dummies(levels))[1])
                *_, (f, _) = run_ours(mask, y, levels, n_resamples=200, seed=rep, level=0.9)
                fit_cov.append(f)
            pe_s, fit_s, tot_s, pec_s, fc_s = (
                float(np.median(v)) for v in (pe, fit, total, pe_cov, fit_cov)
            )
            print(
                f"{g:7s} {share:4.0%}  PE-Rasch {pe_s:.3f} s  ours fit {fit_s:.3f} s "
                f"({fit_s / pe_s:.1f}x)  ours fit + prior + 200 draws {tot_s:.3f} s "
                f"({tot_s / pe_s:.1f}x) | with factors: PE-discrete {pec_s:.3f} s  "
                f"ours fit {fc_s:.3f} s ({fc_s / pec_s:.1f}x)"
            )


if __name__ == "__main__":
    main()
