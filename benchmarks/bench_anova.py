"""Benchmark: Freedman-Lane permutation ANOVA, naive statsmodels loop vs evalstats.factor_anova.

Design: a 2^10 factorial (1024 configurations, one unit each, simulated with planted effects on
f0, f1 and f0:f1), main effects and all 45 two-way interactions (55 terms), Type II.

Naive: what one writes with statsmodels. For every term, fit the reduced model once; then for
every permutation, rebuild y* = fitted_R + P e_R, refit ``ols(formula)`` and run
``anova_lm(typ=2)``, and keep that term's F. The naive loop is timed on ``--naive-permutations``
permutations (all 55 terms each) and extrapolated linearly to ``--n-resamples``; the output says
so. Ours: ``factor_anova(..., n_resamples=N)`` timed in full, in the same process.

Run:  python benchmarks/bench_anova.py [--n-resamples 10000] [--naive-permutations 2]
"""

from __future__ import annotations

import argparse
import itertools
import time
import warnings

import numpy as np
import polars as pl


def design(seed: int = 0) -> tuple[pl.DataFrame, list[str]]:
    from evalstats.simulate import unit_table

    names = [f"f{i}" for i in range(10)]
    factors = {f: {0: 0.0, 1: 0.0} for f in names}
    factors["f0"] = {0: 0.0, 1: 0.08}
    factors["f1"] = {0: 0.0, 1: 0.04}
    units = unit_table(
        n_models=1,
        n_items=100,
        n_variants=1024,
        design="grid",
        prompt_sd=0.0,
        factors=factors,
        interactions={("f0", "f1"): {(1, 1): 0.05}},
        seed=seed,
    )
    return units, names


def naive_seconds(
    units: pl.DataFrame, names: list[str], n_perm: int, seed: int
) -> tuple[float, int]:
    import statsmodels.formula.api as smf
    from statsmodels.stats.anova import anova_lm

    df = units.select(*names, "score").to_pandas()
    terms = [(f,) for f in names] + list(itertools.combinations(names, 2))
    label = {t: ":".join(f"C({f})" for f in t) for t in terms}
    full = " + ".join(label[t] for t in terms)
    rng = np.random.default_rng(seed)
    n = len(df)
    fits = 0
    start = time.perf_counter()
    for t in terms:
        # Type II reduced model: every term that does not contain t
        reduced = [u for u in terms if u != t and not set(t).issubset(u)]
        red = smf.ols("score ~ " + " + ".join(label[u] for u in reduced), data=df).fit()
        fitted, resid = red.fittedvalues.to_numpy(), red.resid.to_numpy()
        for _ in range(n_perm):
            df["ystar"] = fitted + resid[rng.permutation(n)]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                table = anova_lm(smf.ols("ystar ~ " + full, data=df).fit(), typ=2)
            _ = table.loc[label[t], "F"]
            fits += 1
    return time.perf_counter() - start, fits


def ours_seconds(units: pl.DataFrame, names: list[str], n_resamples: int, seed: int) -> float:
    from evalstats.attribution import factor_anova

    start = time.perf_counter()
    res = factor_anova(
        units, factors=names, interactions=2, ss_type=2, n_resamples=n_resamples, seed=seed
    )
    elapsed = time.perf_counter() - start
    top = res.to_frame().head(3).select("term", "eta_sq", "pvalue_perm").rows()
    print(f"ours: top terms {top}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-resamples", type=int, default=10000)
    parser.add_argument("--naive-permutations", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    units, names = design(args.seed)
    print(
        f"design: {units.height} units, {len(names)} two-level factors, "
        f"{len(names) + len(names) * (len(names) - 1) // 2} terms (main + two-way), Type II"
    )
    t_ours = ours_seconds(units, names, args.n_resamples, args.seed)
    print(f"ours:  {args.n_resamples} permutations x 55 terms: {t_ours:.2f} s (measured)")
    t_naive, fits = naive_seconds(units, names, args.naive_permutations, args.seed)
    per_perm = t_naive / args.naive_permutations
    t_naive_full = per_perm * args.n_resamples
    print(
        f"naive: {args.naive_permutations} permutations x 55 terms ({fits} statsmodels refits) "
        f"took {t_naive:.2f} s; extrapolated to {args.n_resamples} permutations: "
        f"{t_naive_full:.0f} s ({t_naive_full / 3600:.1f} h)"
    )
    print(f"ratio naive/ours: {t_naive_full / t_ours:.0f}x (naive extrapolated linearly)")


if __name__ == "__main__":
    main()
