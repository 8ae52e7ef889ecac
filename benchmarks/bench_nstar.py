"""Time the Reliable-Eval reference algorithm against evalstats' n* on the same data, one run.

The reference (SLAB-NLP/Reliable-Eval, scripts/post_process/analyze_100_resamplings.py,
``convergence_combinations``) loops in Python over k = 1..N and over subsets: it enumerates
``itertools.combinations`` for k <= 2 and otherwise draws ``samples_per_k`` subsets with
``np.random.choice(data, k, replace=False)``, computing ``np.mean`` and ``np.var`` of each. It is
re-implemented here loop for loop (no plotting). evalstats computes the same curve with
``required_sample_size(..., compat="reliable-eval")`` (prefix sums over permutations).

Usage: python benchmarks/bench_nstar.py [--n-variants 100] [--samples-per-k 5000] [--repeat 3]
Prints both timings, the ratio, and both n* values.
"""

from __future__ import annotations

import argparse
import time
from itertools import combinations

import numpy as np
import polars as pl

from evalstats.resampling import required_sample_size


def reference_loops(data, epsilon, delta, max_k=2, samples_per_k=5000):
    """n* of the mean, computed as the reference script does (Python loops, both moments)."""
    N = len(data)
    true_mean, true_var = np.mean(data), np.var(data)
    upper, lower = int(100 * (1 - delta / 2)), int(100 * (delta / 2))
    highs = []
    for k in range(1, N + 1):
        if k <= max_k:
            subsets = list(combinations(data, k))
        else:
            subsets = [
                tuple(np.random.choice(data, k, replace=False))  # noqa: NPY002
                for _ in range(samples_per_k)
            ]
        em, ev = [], []
        for s in subsets:
            s = np.array(s)
            em.append(abs(np.mean(s) - true_mean))
            ev.append(abs(np.var(s) - true_var))
        highs.append(np.percentile(em, upper))
        _ = (
            np.mean(em),
            np.percentile(em, lower),
            np.mean(ev),
            np.percentile(ev, lower),
            np.percentile(ev, upper),
        )
    hits = np.where(np.asarray(highs) < epsilon)[0]
    return int(hits[0]) + 1 if hits.size else None


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n-variants", type=int, default=100)
    p.add_argument("--samples-per-k", type=int, default=5000)
    p.add_argument("--epsilon", type=float, default=0.01)
    p.add_argument("--delta", type=float, default=0.1)
    p.add_argument("--repeat", type=int, default=3, help="repeats of the fast implementation")
    args = p.parse_args()

    rng = np.random.default_rng(0)
    x = np.round(rng.binomial(100, np.clip(rng.normal(0.62, 0.03, args.n_variants), 0, 1)) / 100, 2)
    units = pl.DataFrame(
        {"model": "m", "dataset": "d", "variant": [f"v{i}" for i in range(x.size)], "score": x}
    )

    np.random.seed(0)  # noqa: NPY002 - the reference uses the global legacy RNG
    t0, c0 = time.perf_counter(), time.process_time()
    n_ref = reference_loops(list(x), args.epsilon, args.delta, samples_per_k=args.samples_per_k)
    t_ref, c_ref = time.perf_counter() - t0, time.process_time() - c0

    times, cpu = [], []
    for r in range(args.repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        out = required_sample_size(
            units,
            epsilon=args.epsilon,
            delta=args.delta,
            moments=("mean", "variance"),
            n_resamples=args.samples_per_k,
            compat="reliable-eval",
            seed=r,
        )
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    t_ours, c_ours = min(times), min(cpu)
    n_ours = out.filter(pl.col("moment") == "mean")["n_star"].item()
    print(f"N = {x.size} variants, {args.samples_per_k} subsets per n, moments mean+variance")
    print(f"reference (Python loops): wall {t_ref:8.3f} s  cpu {c_ref:8.3f} s   n*_mean = {n_ref}")
    print(
        f"evalstats (prefix sums) : wall {t_ours:8.3f} s  cpu {c_ours:8.3f} s   n*_mean = {n_ours}"
        f"  (best of {args.repeat})"
    )
    print(f"ratio: {t_ref / t_ours:,.0f}x faster (wall clock), {c_ref / c_ours:,.0f}x (CPU time)")


if __name__ == "__main__":
    main()
