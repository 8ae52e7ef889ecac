"""Benchmark: the per-prompt accuracy distribution from a share of the item x prompt grid.

Full grids with a known truth (every variant's accuracy over every item) are subsampled at
budgets of 2, 5, 10 and 20 % of the cells, by two schemes:

- ``uniform``: every cell kept with probability = budget;
- ``walk``: every item run under round(budget x variants) variants drawn at random.

For each (grid, scheme, budget) and each of ``--reps`` subsamples, both estimators of
:func:`evalstats.sparse.sparse_prompt_distribution` run: ours (``estimate``, the crossed
logistic model) and ``naive`` (per-variant means of the observed cells). Printed per budget:
the mean absolute error of each quantity (mean, sd, min, q05, q25, median, q75, q95, max)
against the full grid's, for ours and naive, the ratio ours / naive, and the share of
subsamples whose ``--confidence-level`` interval covers the full grid's value, and
the mean signed error of ours (``bias``). ``ratio 90%`` is a bootstrap interval of the ratio
over the subsamples (resampling them in pairs): a ratio whose interval straddles 1 is a tie at
this many subsamples.

A simulated grid is one draw of its generating model: its 200 prompt effects have, by chance,
a lower or higher 5th percentile than the model's (the interaction grid of seed 0 has its q05
0.8 sd of that statistic further out than the average over grid seeds). A shrinkage estimator is
right on average over such draws, not on each, so on one grid its error is partly that grid's
luck. ``--fresh-grids`` draws a new grid for every subsample (grid seed ``seed * 1000 + rep``)
and takes each one's own truth: the errors and coverage are then averages over the generating
model as well as over the subsamples.

Grids (``--grids``):

- ``planted``: :func:`evalstats.sparse.full_grid`, 400 items x 200 variants, the model the
  estimator assumes (item, prompt and two prompt-factor effects);
- ``interaction``: the same with an item x prompt interaction (sd 0.5 on the logit scale)
  that the estimator does not model.

Real full grids (``--real PATH``): 0/1 correctness of every item under every prompt variant,
read from a local file that is never copied into the project (see docs/methods/sparse.md,
"Measured", for the grid used and its licence). ``--real-format``:

- ``pickle``: a pickled numpy array, read by :class:`ArrayOnlyUnpickler`, which rebuilds numpy
  arrays and plain containers and refuses every other class (a plain ``pickle.load`` of a
  downloaded file could run any code); a 2-D array is one grid, a 3-D array or a dict of arrays
  several (``--real-groups N`` keeps the first N);
- ``npy``: the same array as ``.npy`` (read with ``allow_pickle=False``);
- ``table``: a parquet, CSV or JSONL table with ``item``, ``variant``, ``score`` and optionally
  ``model`` and ``dataset`` (one grid per model x dataset);
- ``auto`` (default): from the file's suffix.

Array axes are (variant, item) unless ``--real-layout item,variant``; a 3-D array has the group
axis first. Missing cells (NaN) are dropped: the truth is then the per-variant mean over the
observed cells of the (nearly) full grid. Scores must be 0 or 1. With ``--real`` only the real
grids run, unless ``--grids`` is also given.

Run:  python benchmarks/bench_sparse.py [--reps 200] [--budgets 2,5,10,20]
      [--schemes uniform,walk] [--grids planted,interaction] [--n-resamples 200] [--seed 0]
      [--fresh-grids]
      [--real PATH [--real-format auto] [--real-layout variant,item] [--real-groups N]]
"""

from __future__ import annotations

import argparse
import pickle
import time
import warnings
from pathlib import Path

import numpy as np
import polars as pl

GRIDS = {
    "planted": {"n_items": 400, "n_variants": 200},
    "interaction": {"n_items": 400, "n_variants": 200, "interaction_sd": 0.5},
}


class ArrayOnlyUnpickler(pickle.Unpickler):
    """Rebuild numpy arrays and plain containers from a pickle; refuse every other class.

    A downloaded pickle can name any importable callable; only numpy's array reconstruction and
    builtin containers and scalars are looked up here, so loading cannot run other code.
    """

    ALLOWED = frozenset(
        {
            ("numpy.core.multiarray", "_reconstruct"),
            ("numpy._core.multiarray", "_reconstruct"),
            ("numpy", "ndarray"),
            ("numpy", "dtype"),
            *(("builtins", n) for n in ("dict", "list", "tuple", "str", "int", "float")),
        }
    )

    def find_class(self, module: str, name: str) -> object:
        """Return the class only if it is on the allow list."""
        if (module, name) in self.ALLOWED:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)  # numpy.core in numpy 2
                return super().find_class(module, name)
        raise pickle.UnpicklingError(
            f"refused {module}.{name}: only numpy arrays and plain containers are read"
        )


def _array_grid(a, *, model: str, dataset: str, layout: str) -> pl.DataFrame:
    a = np.asarray(a, dtype=float)
    if a.ndim != 2:
        raise ValueError(f"a grid must be 2-D (variant x item), got shape {a.shape}")
    if layout == "item,variant":
        a = a.T
    n_var, n_item = a.shape
    vw, iw = len(str(n_var - 1)), len(str(n_item - 1))
    frame = pl.DataFrame(
        {
            "model": model,
            "dataset": dataset,
            "item": np.tile([f"i{i:0{iw}d}" for i in range(n_item)], n_var),
            "variant": np.repeat([f"p{j:0{vw}d}" for j in range(n_var)], n_item),
            "run": 0,
            "score": a.ravel(),
        }
    )
    return frame.filter(pl.col("score").is_not_nan())


def read_real(path: str, *, fmt: str = "auto", layout: str = "variant,item") -> list[pl.DataFrame]:
    """The real full grids in ``path``, one long frame per grid (the columns of ``full_grid``)."""
    p = Path(path)
    if fmt == "auto":
        suffix = p.suffix.lower()
        fmt = {".pkl": "pickle", ".pickle": "pickle", ".npy": "npy"}.get(suffix, "table")
    if fmt == "table":
        reader = {".csv": pl.read_csv, ".jsonl": pl.read_ndjson}.get(p.suffix.lower())
        t = (reader or pl.read_parquet)(p)
        for c in ("model", "dataset"):
            if c not in t.columns:
                t = t.with_columns(pl.lit(p.stem if c == "model" else "d0").alias(c))
        t = t.with_columns(
            pl.col("item", "variant", "model", "dataset").cast(pl.String),
            pl.col("score").cast(pl.Float64),
        ).filter(pl.col("score").is_not_null() & pl.col("score").is_not_nan())
        t = t.select("model", "dataset", "item", "variant", pl.lit(0).alias("run"), "score")
        grids = [g for _, g in t.group_by("model", "dataset", maintain_order=True)]
    else:
        if fmt == "npy":
            obj = np.load(p, allow_pickle=False)
        else:
            with p.open("rb") as f:
                obj = ArrayOnlyUnpickler(f).load()
        parts = obj.items() if isinstance(obj, dict) else [(p.stem, obj)]
        grids = []
        for name, a in parts:
            a = np.asarray(a, dtype=float)
            stack = a[None] if a.ndim == 2 else a
            for k, g in enumerate(stack):
                grids.append(_array_grid(g, model=str(name), dataset=f"g{k}", layout=layout))
    for g in grids:
        bad = g.filter(~pl.col("score").is_in([0.0, 1.0])).height
        if bad:
            raise ValueError(f"{bad} scores are not 0 or 1: the benchmark needs 0/1 correctness")
    return grids


def truth_of(grid: pl.DataFrame) -> dict[str, float]:
    from evalstats.sparse._draws import STATISTICS, statistics_of

    acc = grid.group_by("variant").agg(pl.col("score").mean())["score"].to_numpy()
    return {n: float(v) for (n, _), v in zip(STATISTICS, statistics_of(acc)[0])}


def one(grid, truth, *, share, scheme, seed, n_resamples, level):
    from evalstats.sparse import sparse_prompt_distribution, subsample_cells

    obs = subsample_cells(grid, share=share, scheme=scheme, seed=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = sparse_prompt_distribution(
            obs, n_resamples=n_resamples, seed=seed, confidence_level=level
        )
    t = np.array([truth[q] for q in out["quantity"]])
    est, nai = out["estimate"].to_numpy(), out["naive"].to_numpy()
    cover = (out["ci_low"].to_numpy() <= t) & (t <= out["ci_high"].to_numpy())
    return est - t, nai - t, cover, out["quantity"].to_list()


def ratio_interval(
    ours: np.ndarray, naive: np.ndarray, *, seed: int = 0, n_boot: int = 2000, level: float = 0.9
) -> tuple[np.ndarray, np.ndarray]:
    """Bootstrap interval of mean(ours) / mean(naive) per column, resampling rows in pairs.

    ``ours`` and ``naive`` are ``reps x quantities`` absolute errors of the same subsamples.
    """
    ours, naive = np.asarray(ours, float), np.asarray(naive, float)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, ours.shape[0], (n_boot, ours.shape[0]))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = ours[idx].mean(axis=1) / naive[idx].mean(axis=1)
    alpha = (1 - level) / 2
    return np.nanquantile(ratios, alpha, axis=0), np.nanquantile(ratios, 1 - alpha, axis=0)


def _fresh(kwargs: dict, seed: int):
    """A maker of the ``rep``-th grid of the generating model (``--fresh-grids``)."""
    from evalstats.sparse import full_grid

    def make(rep: int) -> pl.DataFrame:
        return full_grid(seed=seed * 1000 + rep, **kwargs)

    return make


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--budgets", default="2,5,10,20")
    parser.add_argument("--schemes", default="uniform,walk")
    parser.add_argument("--grids", default=None, help="default: planted,interaction")
    parser.add_argument("--n-resamples", dest="n_resamples", type=int, default=200)
    parser.add_argument("--confidence-level", dest="level", type=float, default=0.9)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--real", default=None, help="a local file of real full grids")
    parser.add_argument(
        "--real-format",
        dest="real_format",
        default="auto",
        choices=("auto", "pickle", "npy", "table"),
    )
    parser.add_argument(
        "--real-layout",
        dest="real_layout",
        default="variant,item",
        choices=("variant,item", "item,variant"),
    )
    parser.add_argument("--real-groups", dest="real_groups", type=int, default=None)
    parser.add_argument(
        "--fresh-grids",
        dest="fresh",
        action="store_true",
        help="a new simulated grid for every subsample (module docstring)",
    )
    args = parser.parse_args()
    from evalstats.sparse import full_grid

    budgets = [float(b) / 100 for b in args.budgets.split(",")]
    runs = []
    grids = args.grids or ("" if args.real else "planted,interaction")
    for gname in filter(None, grids.split(",")):
        if args.fresh:
            header = f"{GRIDS[gname]}, a new grid per subsample (seeds {args.seed * 1000} + rep)"
            runs.append((gname, _fresh(GRIDS[gname], args.seed), header))
        else:
            header = f"{GRIDS[gname]}, seed {args.seed}"
            runs.append((gname, full_grid(seed=args.seed, **GRIDS[gname]), header))
    if args.real:
        real = read_real(args.real, fmt=args.real_format, layout=args.real_layout)
        for grid in real[: args.real_groups]:
            m, d = grid["model"][0], grid["dataset"][0]
            n_i, n_v = grid["item"].n_unique(), grid["variant"].n_unique()
            header = (
                f"real {args.real}, {n_i} items x {n_v} variants, "
                f"{grid.height / (n_i * n_v):.1%} of cells scored"
            )
            runs.append((f"{m}/{d}", grid, header))
    for gname, grid, header in runs:
        print(f"\n== grid {gname}: {header}")
        if not callable(grid):
            truth = truth_of(grid)
            print("   truth: " + ", ".join(f"{k} {v:.3f}" for k, v in truth.items()))
        for scheme in args.schemes.split(","):
            for share in budgets:
                start = time.perf_counter()
                errs, nerrs, covs = [], [], []
                names: list[str] = []
                for rep in range(args.reps):
                    if callable(grid):
                        this = grid(rep)
                        truth = truth_of(this)
                    else:
                        this = grid
                    e, n, c, names = one(
                        this,
                        truth,
                        share=share,
                        scheme=scheme,
                        seed=args.seed * 100_003 + rep,
                        n_resamples=args.n_resamples,
                        level=args.level,
                    )
                    errs.append(e)
                    nerrs.append(n)
                    covs.append(c)
                sec = (time.perf_counter() - start) / args.reps
                bias = np.mean(errs, 0)
                e, n = np.mean(np.abs(errs), 0), np.mean(np.abs(nerrs), 0)
                lo, hi = ratio_interval(np.abs(errs), np.abs(nerrs), seed=args.seed)
                c = np.mean(covs, 0)
                print(
                    f"\n-- {gname} {scheme} budget {share:.0%}  ({args.reps} subsamples, "
                    f"{sec:.2f} s each)"
                )
                print(
                    f"   {'quantity':<8} {'ours':>7} {'naive':>7} {'ratio':>6} {'cover':>6}"
                    f" {'bias':>8}  ratio 90%"
                )
                for q, a, b, cv, bs, rl, rh in zip(names, e, n, c, bias, lo, hi):
                    ratio = a / b if b else np.nan
                    print(
                        f"   {q:<8} {a:7.4f} {b:7.4f} {ratio:6.2f} {cv:6.2f} {bs:+8.4f}"
                        f"  {rl:.2f}-{rh:.2f}"
                    )


if __name__ == "__main__":
    main()
