"""Benchmark: variance components by REML, statsmodels MixedLM vs evalstats.noise, same data.

Design: an unbalanced crossed dump (items x prompt variants x runs, 20 % of the rows dropped at
random) from ``evalstats.simulate.crossed_scores``. statsmodels: ``MixedLM`` with one group and
variance components item, variant and item:variant (REML, its default optimiser). evalstats:
``variance_components(method="reml")`` (REML on cell summaries, Sherman-Morrison and Woodbury),
timed in the same process. The larger sizes run evalstats only (``--sizes``); statsmodels runs on
the first size. A balanced ANOVA fit of the largest size is timed too, and REML on sparse 0/1
grids (``--sparse``: items x variants x share of the cells observed, one run a cell; the prompt
grids of ``evalstats.sparse``), where one variance-components fit costs most.

Timings on a shared machine are noisy: the ratio in one run is what to read.

Run:  python benchmarks/bench_noise.py [--sizes 60x8x2,1000x20x3]
      [--sparse 5000x200x0.1,20000x100x0.05] [--seed 0]
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


def sparse_dump(a: int, b: int, share: float, seed: int) -> pl.DataFrame:
    """0/1 scores on ``share`` of an items x variants grid (logistic item and variant effects)."""
    rng = np.random.default_rng(seed)
    item, variant = np.nonzero(rng.random((a, b)) < share)
    eta = rng.normal(0.5, 1.0, a)[item] + rng.normal(0.0, 0.3, b)[variant]
    y = (rng.random(item.size) < 1.0 / (1.0 + np.exp(-eta))).astype(float)
    return pl.DataFrame(
        {
            "model": "m",
            "dataset": "d",
            "item": [f"i{i}" for i in item],
            "variant": [f"v{v}" for v in variant],
            "score": y,
        }
    )


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
    parser.add_argument("--sparse", default="5000x200x0.1,20000x100x0.05")
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
    for spec in filter(None, args.sparse.split(",")):
        a, b, share = spec.split("x")
        obs = sparse_dump(int(a), int(b), float(share), args.seed)
        t_ours, _ = ours_seconds(obs)
        print(
            f"sparse 0/1 {a} x {b} at {float(share):.0%} ({obs.height} cells): evalstats REML {t_ours:.2f} s"
        )


if __name__ == "__main__":
    main()
