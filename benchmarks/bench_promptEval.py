"""Benchmark: evalstats' sparse-grid estimator against PromptEval's, on the same subsamples.

PromptEval (Polo et al., NeurIPS 2024, github.com/felipemaiapolo/prompteval) is run from a local
copy of its code, given on the command line and never copied into this project:

    git --git-dir=<mirror of felipemaiapolo/prompteval> show HEAD:prompteval/methods.py ...
    python benchmarks/bench_promptEval.py --prompteval /tmp/prompteval

Its ``prompteval/methods.py`` is imported unmodified; its ``utils.py`` imports torch and
transformers at the top for functions these estimators do not call, so when those are not
installed empty stand-in modules are registered under their names before the import (the
estimators' code path never touches them). It needs scikit-learn (``liblinear``), e.g.
``pip install --target /tmp/pe-deps --no-deps scikit-learn joblib threadpoolctl tqdm`` and
``PYTHONPATH=/tmp/pe-deps``.

Estimators, each given the same observed cells (a boolean mask of the grid):

- ``PE-Rasch``: ``ExtendedRaschModel().fit(seen, Y)``, PromptEval's default (a ridge logistic
  regression on prompt and item one-hots, C = 100), per-prompt accuracy from ``get_Y_hat``;
- ``PE-discrete``: the same with ``X`` the prompt covariates (dummy-coded factor levels, one
  level of each factor dropped, as its full-rank check requires) when the grid has factors;
- ``ours``: :func:`evalstats.sparse._fit.fit_cells` and
  :func:`evalstats.sparse._draws.accuracy_draws` on the same cells, with the grid's items all
  known (an item never observed enters through the fitted item distribution) and, for
  ``ours+cov``, the factor levels as covariates of the prompt effects.

Quantities of the per-prompt accuracy distribution: ``W1`` (Wasserstein-1 distance between the
estimated and the true per-prompt accuracies; ours uses the posterior mean of the sorted
accuracies), ``mean``, ``sd``, ``min`` (worst prompt), ``q05`` ... ``q95`` and ``max`` (best).
Printed per grid, scheme and budget: the mean absolute error of each estimator, the ratios
ours / PE-Rasch and ours / PE-discrete with 90 % bootstrap intervals (subsamples resampled in
pairs), the coverage of our ``--confidence-level`` intervals, and the mean time of one fit.

Grids (``--grids``), 100 variants x 400 items, two prompt factors (3 and 5 levels, sd 0.3),
logit mean 1.5, item sd 1.5, prompt sd 0.4:

- ``normal``: normal prompt effects;
- ``heavy``: Student t (3 df) prompt effects, same sd;
- ``broken``: normal, and one prompt shifted by -3 on the logit scale.

``--fresh-grids`` draws a new grid per subsample (its own truth). ``--real PATH`` adds real full
grids read by ``bench_sparse.read_real`` (see that script; nothing is copied).

Run:  PYTHONPATH=.:/tmp/pe-deps python benchmarks/bench_promptEval.py --prompteval /tmp/prompteval
      [--reps 30] [--budgets 2,5,10,20] [--schemes uniform,walk] [--grids normal,heavy,broken]
      [--fresh-grids] [--real PATH] [--n-resamples 200] [--confidence-level 0.9] [--seed 0]
      [--ours-only]   (coverage runs: ours alone, no PromptEval needed)
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
import types
import warnings
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_sparse import ratio_interval, read_real  # noqa: E402

GRID = {
    "n_items": 400,
    "n_variants": 100,
    "mean_logit": 1.5,
    "item_sd": 1.5,
    "prompt_sd": 0.4,
}
GRIDS = {
    "normal": {**GRID, "prompt_effects": "normal"},
    "heavy": {**GRID, "prompt_effects": "heavy"},
    "broken": {**GRID, "prompt_effects": "broken"},
}
NAMES = ("W1", "mean", "sd", "min", "q05", "q25", "median", "q75", "q95", "max")


def load_prompteval(root: str):
    """PromptEval's ``methods`` module from a local copy, imported unmodified (module doc).

    The stand-ins are removed from ``sys.modules`` after the import: other libraries (scipy's
    array-API checks) look for a real ``torch`` there.
    """
    for dep in ("sklearn.linear_model", "sklearn.decomposition", "tqdm"):
        importlib.import_module(dep)  # before the stand-ins: scipy checks for torch on import
    stubs = []
    for name in ("torch", "torch.nn", "torch.nn.functional", "transformers"):
        try:
            importlib.import_module(name)
        except ImportError:
            stub = types.ModuleType(name)
            stub.device = None  # type: ignore[attr-defined]
            for attr in ("AutoModel", "AutoTokenizer", "PreTrainedModel", "PretrainedConfig"):
                setattr(stub, attr, type(attr, (), {}))
            stub.cuda = types.SimpleNamespace(is_available=lambda: False)  # type: ignore[attr-defined]
            stub.Module = object  # type: ignore[attr-defined]
            sys.modules[name] = stub
            stubs.append(name)
    sys.path.insert(0, str(Path(root).resolve()))
    try:
        return importlib.import_module("prompteval.methods")
    finally:
        for name in stubs:
            del sys.modules[name]


def grid_arrays(grid: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(variants x items) 0/1 matrix and (variants x factors) level codes of a full grid."""
    grid = grid.sort("variant", "item")
    variants = grid["variant"].unique(maintain_order=True)
    items = grid["item"].unique(maintain_order=True)
    y = grid["score"].to_numpy().reshape(len(variants), len(items))
    factors = [c for c in grid.columns if c not in ("model", "dataset", "item", "variant", "run")]
    factors = [c for c in factors if c != "score"]
    per_v = grid.group_by("variant", maintain_order=True).agg(pl.col(factors).first())
    cols = [np.unique(per_v[f].to_numpy(), return_inverse=True)[1] for f in factors]
    levels = np.stack(cols, axis=1) if cols else np.zeros((len(variants), 0), dtype=np.int64)
    return y, levels.astype(np.int64)


def mask_of(shape: tuple[int, int], share: float, scheme: str, rng) -> np.ndarray:
    """Observed cells: ``uniform`` (each with probability ``share``) or ``walk`` (per item)."""
    n_v, n_i = shape
    if scheme == "uniform":
        return rng.random(shape) < share
    k = max(1, round(share * n_v))
    order = np.argsort(rng.random(shape), axis=0)
    mask = np.zeros(shape, dtype=bool)
    np.put_along_axis(mask, order[:k], True, axis=0)
    return mask


def stats_of(acc: np.ndarray) -> np.ndarray:
    """The NAMES after W1 of per-prompt accuracies (..., n_prompts)."""
    from evalstats.sparse._draws import statistics_of

    return statistics_of(acc)


def dummies(levels: np.ndarray) -> np.ndarray | None:
    """Dummy coding of the factor levels, the first level of each dropped (full rank)."""
    cols = []
    for f in range(levels.shape[1]):
        for lev in range(1, int(levels[:, f].max()) + 1):
            cols.append((levels[:, f] == lev).astype(float))
    return np.stack(cols, axis=1) if cols else None


def run_pe(methods, mask, y, x=None) -> tuple[np.ndarray, float]:
    """PromptEval's per-prompt accuracies and the fit's time."""
    start = time.perf_counter()
    model = methods.ExtendedRaschModel()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(mask, y, x)
    acc = model.get_Y_hat().mean(-1)
    return acc, time.perf_counter() - start


def cells_of(mask: np.ndarray, y: np.ndarray, levels: np.ndarray | None = None):
    """The observed cells (``mask``, variants x items) of the 0/1 grid ``y`` as a CellData;
    ``levels`` None: no prompt factors."""
    from evalstats.sparse._fit import CellData

    prompt, item = np.nonzero(mask)
    if levels is None:
        levels = np.zeros((y.shape[0], 0), dtype=np.int64)
    return CellData(
        item=item.astype(np.int64),
        prompt=prompt.astype(np.int64),
        k=y[prompt, item].astype(float),
        n=np.ones(item.size),
        n_items=y.shape[1],
        n_prompts=y.shape[0],
        levels=levels,
    )


def run_ours(mask, y, levels, *, n_resamples, seed, level):
    """Our estimates (W1's sorted vector, the stats), intervals and the fit's time."""
    from evalstats._threads import single_blas_thread
    from evalstats.sparse._draws import accuracy_draws
    from evalstats.sparse._fit import fit_cells

    cells = cells_of(mask, y, levels)
    with single_blas_thread():
        start = time.perf_counter()
        fit = fit_cells(cells)
        sec = time.perf_counter() - start
        draws = accuracy_draws(cells, fit, n_resamples=n_resamples, rng=np.random.default_rng(seed))
        total = time.perf_counter() - start
    stats = stats_of(draws)
    alpha = (1 - level) / 2
    lo, hi = np.quantile(stats, [alpha, 1 - alpha], axis=0)
    return np.sort(draws, axis=1).mean(axis=0), stats.mean(axis=0), lo, hi, (sec, total)


def errors(sorted_est: np.ndarray, stats_est: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Absolute errors in NAMES order: W1, then each statistic."""
    w1 = float(np.mean(np.abs(np.sort(sorted_est) - np.sort(truth))))
    return np.r_[w1, np.abs(stats_est - stats_of(truth)[0])]


def one(methods, y, levels, *, share, scheme, seed, n_resamples, level, ours_only=False):
    """One subsample: errors of every estimator, our coverage, the fits' times.

    ``secs`` holds each estimator's fit time; ``ours`` also under ``ours (all)``: the fit, the
    prompt prior and the draws.
    """
    truth = y.mean(axis=1)
    mask = mask_of(y.shape, share, scheme, np.random.default_rng(seed))
    out, secs = {}, {}
    if not ours_only:
        acc, secs["PE-Rasch"] = run_pe(methods, mask, y)
        out["PE-Rasch"] = errors(acc, stats_of(acc)[0], truth)
    x = None if ours_only else dummies(levels)
    if x is not None:
        acc, secs["PE-discrete"] = run_pe(methods, mask, y, x)
        out["PE-discrete"] = errors(acc, stats_of(acc)[0], truth)
    no_cov = np.zeros((y.shape[0], 0), dtype=np.int64)
    s, est, lo, hi, (secs["ours"], secs["ours (all)"]) = run_ours(
        mask, y, no_cov, n_resamples=n_resamples, seed=seed, level=level
    )
    out["ours"] = errors(s, est, truth)
    t = stats_of(truth)[0]
    cover = {"ours": (lo <= t) & (t <= hi)}
    if x is not None:
        s, est, lo, hi, (secs["ours+cov"], _) = run_ours(
            mask, y, levels, n_resamples=n_resamples, seed=seed, level=level
        )
        out["ours+cov"] = errors(s, est, truth)
        cover["ours+cov"] = (lo <= t) & (t <= hi)
    return out, cover, secs


def table(results, covers, secs, *, seed) -> None:
    """Print the errors, ratios with intervals and coverage of one (grid, scheme, budget)."""
    est = list(results[0])
    err = {e: np.array([r[e] for r in results]) for e in est}
    ours = [e for e in est if e.startswith("ours")]
    refs = [e for e in est if e.startswith("PE")]
    timing = ", ".join(f"{e} {np.mean([s[e] for s in secs]):.3f} s" for e in [*est, "ours (all)"])
    print(f"   mean time of one fit: {timing}")
    head = " ".join(f"{e:>11}" for e in est)
    ratio_head = " ".join(f"{o + '/' + r:>24}" for o in ours for r in refs)
    print(f"   {'quantity':<8} {head}  {ratio_head}  " + " ".join(f"cov:{o:<8}" for o in ours))
    ratios = {
        (o, r): (
            err[o].mean(0) / err[r].mean(0),
            *ratio_interval(err[o], err[r], seed=seed),
        )
        for o in ours
        for r in refs
    }
    cov = {o: np.mean([c[o] for c in covers], axis=0) for o in ours}
    for j, name in enumerate(NAMES):
        vals = " ".join(f"{err[e][:, j].mean():11.4f}" for e in est)
        rats = " ".join(
            f"{ratios[k][0][j]:8.2f} [{ratios[k][1][j]:.2f},{ratios[k][2][j]:.2f}]".rjust(24)
            for k in ratios
        )
        cv = " ".join(f"{'' if j == 0 else format(cov[o][j - 1], '.2f'):>12}" for o in ours)
        print(f"   {name:<8} {vals}  {rats}  {cv}")


def coverage_table(covers, results, secs) -> None:
    """``--ours-only``: our errors and the coverage of our intervals with its standard error."""
    cov = np.array([c["ours"] for c in covers], dtype=float)
    err = np.array([r["ours"] for r in results])
    n = cov.shape[0]
    print(
        f"   mean time: fit {np.mean([s['ours'] for s in secs]):.3f} s, "
        f"fit + prior + draws {np.mean([s['ours (all)'] for s in secs]):.3f} s"
    )
    print(f"   {'quantity':<8} {'error':>8} {'coverage':>9} {'se':>6}")
    print(f"   {NAMES[0]:<8} {err[:, 0].mean():8.4f}")
    for j, name in enumerate(NAMES[1:]):
        c = cov[:, j].mean()
        print(f"   {name:<8} {err[:, j + 1].mean():8.4f} {c:9.3f} {np.sqrt(c * (1 - c) / n):6.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompteval", default=None, help="root of a local PromptEval copy")
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--budgets", default="2,5,10,20")
    parser.add_argument("--schemes", default="uniform,walk")
    parser.add_argument("--grids", default=None, help="default: normal,heavy,broken")
    parser.add_argument("--fresh-grids", dest="fresh", action="store_true")
    parser.add_argument("--real", default=None)
    parser.add_argument("--real-groups", dest="real_groups", type=int, default=None)
    parser.add_argument("--n-resamples", dest="n_resamples", type=int, default=200)
    parser.add_argument("--confidence-level", dest="level", type=float, default=0.9)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--ours-only",
        dest="ours_only",
        action="store_true",
        help="coverage run: ours alone (no PromptEval, no factors), coverage with its se",
    )
    args = parser.parse_args()
    if args.prompteval is None and not args.ours_only:
        parser.error("--prompteval is required (unless --ours-only)")
    from evalstats.sparse import full_grid

    methods = None if args.ours_only else load_prompteval(args.prompteval)
    budgets = [float(b) / 100 for b in args.budgets.split(",")]
    runs = []
    for g in filter(None, (args.grids or ("" if args.real else "normal,heavy,broken")).split(",")):
        if args.fresh:
            runs.append((g, lambda rep, g=g: full_grid(seed=args.seed * 1000 + rep, **GRIDS[g])))
        else:
            grid = full_grid(seed=args.seed, **GRIDS[g])
            runs.append((g, lambda rep, grid=grid: grid))
    if args.real:
        for grid in read_real(args.real)[: args.real_groups]:
            runs.append((f"real {grid['model'][0]}/{grid['dataset'][0]}", lambda rep, g=grid: g))
    for gname, make in runs:
        print(f"\n== grid {gname}{' (a new grid per subsample)' if args.fresh else ''}")
        for scheme in args.schemes.split(","):
            for share in budgets:
                res, cov, secs = [], [], []
                for rep in range(args.reps):
                    y, levels = grid_arrays(make(rep))
                    r, c, s = one(
                        methods,
                        y,
                        levels,
                        share=share,
                        scheme=scheme,
                        seed=args.seed * 100_003 + rep,
                        n_resamples=args.n_resamples,
                        level=args.level,
                        ours_only=args.ours_only,
                    )
                    res.append(r)
                    cov.append(c)
                    secs.append(s)
                print(f"\n-- {gname} {scheme} budget {share:.0%} ({args.reps} subsamples)")
                if args.ours_only:
                    coverage_table(cov, res, secs)
                else:
                    table(res, cov, secs, seed=args.seed)


if __name__ == "__main__":
    main()
