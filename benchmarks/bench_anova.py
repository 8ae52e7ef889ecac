"""Benchmark: Freedman-Lane permutation ANOVA, naive statsmodels loop vs evalstats.factor_anova.

Design: a 2^10 factorial (1024 configurations, one unit each, simulated with planted effects on
f0, f1 and f0:f1), main effects and all 45 two-way interactions (55 terms), Type II.

Naive: what one writes with statsmodels. For every term, fit the reduced model once; then for
every permutation, rebuild y* = fitted_R + P e_R, refit ``ols(formula)`` and run
``anova_lm(typ=2)``, and keep that term's F. The naive loop is timed on ``--naive-permutations``
permutations (all 55 terms each) and extrapolated linearly to ``--n-resamples``; the output says
so. Ours: ``factor_anova(..., n_resamples=N)`` timed in full, in the same process.

Blocked design (``--blocked``, the shape of the State of What Art report's ANOVA): 165 blocks
(model x dataset) of 136-189 units, one four-level factor, Freedman-Lane permutations within
blocks. Reference: the dense engine evalstats used before (Q_X' P [r, Q_X] per permutation,
within-block permutations by argsort of random keys), run here on the same design and the same
number of permutations; ours with and without Besag-Clifford stopping. Both with one BLAS
thread (multi-threaded OpenBLAS alone made the dense engine 25x slower on a busy machine).

Run:  python benchmarks/bench_anova.py [--n-resamples 10000] [--naive-permutations 2]
      python benchmarks/bench_anova.py --blocked [--n-resamples 2000]
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


def blocked_design(seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(136, 190, 165)
    blk = np.repeat(np.arange(sizes.size), sizes)
    f = rng.integers(0, 4, blk.size)
    y = 0.5 + 0.1 * rng.normal(size=sizes.size)[blk] + 0.01 * f + 0.09 * rng.normal(size=blk.size)
    return pl.DataFrame(
        {
            "model": blk.astype(str),
            "dataset": "d",
            "variant": np.arange(blk.size).astype(str),
            "f": f.astype(str),
            "score": y,
        }
    )


def dense_reference(frame: pl.DataFrame, n_resamples: int, seed: int) -> np.ndarray:
    """The dense Freedman-Lane engine evalstats had before (one term here)."""
    from evalstats.attribution._anova import _anova_core
    from evalstats.attribution._common import _sum_coding

    frame = frame.sort("model", maintain_order=True)
    y = frame["score"].to_numpy()
    n = y.size
    codes = np.unique(frame["f"].to_numpy(), return_inverse=True)[1]
    blocks = np.unique(frame["model"].to_numpy(), return_inverse=True)[1]
    counts = np.bincount(blocks)
    nuisance = np.zeros((n, counts.size))
    nuisance[np.arange(n), blocks] = 1.0 / np.sqrt(counts[blocks])
    core = _anova_core(y, [_sum_coding(codes, 4)], [(0,)], nuisance, 2)
    q_x, t = core["q_x"], core["terms"][0]
    p = q_x.shape[1]
    basis = np.ascontiguousarray(np.column_stack([core["resid"], q_x]))
    q_xt = np.ascontiguousarray(q_x.T)
    coef = np.r_[1.0, t["a"]][:, None]
    ee = float(core["resid"] @ core["resid"] + t["a"] @ t["a"])
    rng = np.random.default_rng(seed)
    chunk = max(1, 2_000_000 // (n * (p + 1)))
    out = np.empty(n_resamples)
    for start in range(0, n_resamples, chunk):
        b = min(chunk, n_resamples - start)
        idx = np.argsort(blocks[None, :] + rng.random((b, n)), axis=1, kind="stable")
        gathered = basis[idx.T].reshape(n, b * (p + 1))
        g = (q_xt @ gathered).reshape(p, b, p + 1).transpose(1, 0, 2).reshape(b * p, p + 1)
        v = (g @ coef).reshape(b, p)
        ss = ((v @ t["b"]) ** 2).sum(axis=1)
        rss = ee - (v * v).sum(axis=1)
        out[start : start + b] = (ss / t["df"]) / (rss / core["df_res"])
    return out


def blocked(n_resamples: int, seed: int) -> None:
    from evalstats._threads import single_blas_thread
    from evalstats.attribution import factor_anova

    frame = blocked_design(seed)
    print(f"blocked design: {frame.height} units in 165 blocks, one 4-level factor")
    with single_blas_thread():
        start = time.perf_counter()
        ref = dense_reference(frame, n_resamples, seed)
        t_ref = time.perf_counter() - start
    kw = dict(factors=["f"], block="model", n_resamples=n_resamples, seed=seed)
    start = time.perf_counter()
    res = factor_anova(frame, max_exceedances=None, **kw)
    t_full = time.perf_counter() - start
    start = time.perf_counter()
    seq = factor_anova(frame, **kw)
    t_seq = time.perf_counter() - start
    stat = res.to_frame()["statistic"][0]
    p_ref = (1 + np.sum(ref >= stat * (1 - 1e-9))) / (1 + n_resamples)
    print(f"dense reference: {n_resamples} permutations {t_ref:.2f} s, p = {p_ref:.4g}")
    print(
        f"ours (all {n_resamples}): {t_full:.2f} s, p = {res.to_frame()['pvalue_perm'][0]:.4g}; "
        f"ratio {t_ref / t_full:.1f}x"
    )
    print(
        f"ours (Besag-Clifford, {seq.n_permutations[0]} drawn): {t_seq:.2f} s, "
        f"p = {seq.to_frame()['pvalue_perm'][0]:.4g}; ratio {t_ref / t_seq:.1f}x"
    )
    print("(wall times on a possibly shared machine; the ratios are the comparable numbers)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-resamples", type=int, default=10000)
    parser.add_argument("--naive-permutations", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--blocked", action="store_true", help="the blocked design instead")
    args = parser.parse_args()
    if args.blocked:
        blocked(args.n_resamples, args.seed)
        return
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
