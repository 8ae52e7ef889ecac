"""Benchmark: variance components by REML, statsmodels MixedLM vs evalstats.noise, same data.

Design: an unbalanced crossed dump (items x prompt variants x runs, 20 % of the rows dropped at
random) from ``evalstats.simulate.crossed_scores``. statsmodels: ``MixedLM`` with one group and
variance components item, variant and item:variant (REML, its default optimiser). evalstats:
``variance_components(method="reml")`` (REML on cell summaries, Sherman-Morrison and Woodbury),
timed in the same process. The larger sizes run evalstats only (``--sizes``); statsmodels runs on
the first size. A balanced ANOVA fit of the largest size is timed too.

Timings on a shared machine are noisy: the ratio in one run is what to read.

Run:  python benchmarks/bench_noise.py [--sizes 60x8x2,1000x20x3] [--seed 0]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import polars as pl


def dump(a: int, b: int, r: int, seed: int, drop: float = 0.2) -> pl.DataFrame:
    from evalstats.simulate import crossed_scores

    obs = crossed_scores(n_items=a, n_variants=b, n_runs=r, seed=seed)
    keep = np.random.default_rng(seed).random(obs.height) > drop
    return obs.filter(pl.Series(keep))


def statsmodels_seconds(obs: pl.DataFrame) -> tuple[float, np.ndarray]:
    import statsmodels.formula.api as smf

    pdf = obs.to_pandas()
    pdf["g"] = 1
    pdf["iv"] = pdf["item"] + ":" + pdf["variant"]
    vc = {"item": "0 + C(item)", "iv": "0 + C(iv)", "variant": "0 + C(variant)"}
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = smf.mixedlm("score ~ 1", pdf, groups="g", vc_formula=vc).fit(reml=True)
    sec = time.perf_counter() - start
    return sec, np.array([fit.vcomp[0], fit.vcomp[2], fit.vcomp[1], fit.scale])


def ours_seconds(obs: pl.DataFrame, method: str = "reml") -> tuple[float, np.ndarray]:
    from evalstats.noise import variance_components

    start = time.perf_counter()
    out = variance_components(obs, method=method)
    sec = time.perf_counter() - start
    return sec, out["variance"].to_numpy()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="60x8x2,1000x20x3")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    sizes = [tuple(int(x) for x in s.split("x")) for s in args.sizes.split(",")]
    for k, (a, b, r) in enumerate(sizes):
        obs = dump(a, b, r, args.seed)
        t_ours, est = ours_seconds(obs)
        line = f"{a} items x {b} variants x {r} runs ({obs.height} rows): evalstats REML {t_ours:.2f} s"
        if k == 0:
            t_sm, ref = statsmodels_seconds(obs)
            rel = np.max(np.abs(est - ref) / ref)
            line += (
                f"; statsmodels MixedLM {t_sm:.2f} s; ratio {t_sm / t_ours:.1f}x; "
                f"largest relative difference of the estimates {rel:.1e} (statsmodels' optimiser "
                "tolerance)"
            )
        print(line)
    a, b, r = sizes[-1]
    from evalstats.simulate import crossed_scores

    bal = crossed_scores(n_items=a, n_variants=b, n_runs=r, seed=args.seed)
    t_anova, _ = ours_seconds(bal, method="anova")
    print(
        f"balanced {a} x {b} x {r} ({bal.height} rows): evalstats ANOVA + intervals {t_anova:.2f} s"
    )


if __name__ == "__main__":
    main()
