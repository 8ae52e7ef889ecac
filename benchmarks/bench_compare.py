"""Model comparison benchmark: ``evalstats compare`` against the peer package on the same CSVs.

The peer is PyPI ``evalstats`` 0.3.3 (Ian Arawjo's package, a different project with the same
name). It must live in its own virtual environment, because both import as ``evalstats``:

    python3 -m venv /work/peer-venv && /work/peer-venv/bin/pip install evalstats==0.3.3

For each size the script writes one long CSV (``model, item, run, score``: 5 models with shared
item difficulty, 0/1 answers, 10 samples per item) and times, each in a fresh subprocess so that
neither package's imports or caches help the other:

- ``ours``: ``evalstats.io.read`` + :func:`evalstats.compare.compare_models`, twice: with its
  defaults (items as the paired unit, item means over the 10 samples, sign-flip permutation
  test with 9999 sign vectors shared by all 10 pairs, Holm, decision-consistent intervals), and
  with ``correction='romano-wolf'`` (studentized bootstrap of all pairs jointly, 9999
  resamples, Romano-Wolf step-down), which is the method the peer uses by default here;
- ``peer``: ``evalstats.load_from`` + ``evalstats.compare_models`` with its defaults
  (bootstrap-t intervals, 10,000 resamples, Romano-Wolf p-values for >= 30 items and >= 3
  models).

The time is measured inside each subprocess from reading the CSV to the finished result
(imports excluded, reported separately as the subprocess wall time). The peer is skipped with
a message when its virtual environment is absent. Timings on a shared machine are noisy; the
script prints the median of ``--repeat`` runs.

    python benchmarks/bench_compare.py                   # 40,000 and 250,000 rows
    python benchmarks/bench_compare.py --peer /path/to/venv/bin/python
    python benchmarks/bench_compare.py --many            # issue 15: 28 models, 896k rows

``--many`` (issue 15) times :func:`evalstats.compare.compare_models` in this process on a
CRUXEval-shaped table: 28 models x 800 items x 4 settings (temperature x CoT) x 10 samples =
896,000 rows of 0/1 scores, 378 pairs in one Holm family. It compares the default
(``method='auto'``: the paired t test on the 800 item means) with the sign-flip permutation
test drawing all of its 15,120 sign vectors (the previous default for these scores) and with
Besag-Clifford sequential stopping (``stop_after=20``), and prints the ratio of each to the
previous default, with the number of pairs each rejects.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parents[1]
PEER = Path("/work/peer-venv/bin/python")

OURS = """
import json, sys, time, warnings
warnings.simplefilter("ignore")
from evalstats.io import read
from evalstats.compare import compare_models
kwargs = json.loads(sys.argv[2])
t = time.perf_counter()
obs = read(sys.argv[1]).observations
out = compare_models(obs, **kwargs)
dt = time.perf_counter() - t
print(json.dumps({"seconds": dt, "pairs": out.height,
                  "difference": out["difference"].to_list()}))
"""

PEER_CODE = """
import json, sys, time, warnings
warnings.simplefilter("ignore")
import evalstats as es
t = time.perf_counter()
data = es.load_from(sys.argv[1])
res = es.compare_models(data)
dt = time.perf_counter() - t
print(json.dumps({"seconds": dt}))
"""


#: our configurations: the defaults, and the peer's own default method (for >= 30 items and
#: >= 3 entities: bootstrap-t intervals with Romano-Wolf step-down p-values) forced on ours
CONFIGS = {
    "default (permutation, Holm)": {},
    "romano-wolf (= peer's default)": {"correction": "romano-wolf"},
}


def generate(models: int, items: int, runs: int, seed: int = 0) -> pl.DataFrame:
    """``models x items x runs`` rows of 0/1 scores with shared item difficulty."""
    rng = np.random.default_rng(seed)
    difficulty = rng.normal(0, 1.2, items)
    skill = np.linspace(-0.2, 0.3, models)
    p = 1 / (1 + np.exp(-(skill[:, None] - difficulty[None, :])))  # models x items
    y = (rng.random((models, items, runs)) < p[:, :, None]).astype(np.int8)
    return pl.DataFrame(
        {
            "model": np.repeat([f"model_{m}" for m in range(models)], items * runs),
            "item": np.tile(np.repeat(np.arange(items), runs), models),
            "run": np.tile(np.arange(runs), models * items),
            "score": y.reshape(-1),
        }
    )


def _run(python: str, code: str, path: Path, cwd: Path, *extra: str) -> tuple[dict, float]:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    t = time.perf_counter()
    proc = subprocess.run(
        [python, "-c", code, str(path), *extra], capture_output=True, text=True, cwd=cwd, env=env
    )
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise RuntimeError(f"{python} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1]), wall


def cruxeval_like(
    models: int = 28, items: int = 800, runs: int = 10, seed: int = 0, spread=(0.20, 0.79)
):
    """``models x items x 4 settings x runs`` 0/1 rows; pass rates evenly over ``spread``."""
    from itertools import product

    rng = np.random.default_rng(seed)
    acc = np.linspace(*spread, models)
    logit = np.log(acc / (1 - acc))
    difficulty = rng.normal(0, 1.0, items)
    frames = []
    for t, cot in product((0.2, 0.8), (False, True)):
        shift = -0.1 * (t == 0.8) + 0.15 * cot
        p = 1 / (1 + np.exp(-(logit[:, None] + difficulty[None, :] + shift)))
        y = (rng.random((models, items, runs)) < p[:, :, None]).astype(np.float64)
        frames.append(
            pl.DataFrame(
                {
                    "model": np.repeat([f"model_{m:02d}" for m in range(models)], items * runs),
                    "dataset": "cruxeval",
                    "item": np.tile(np.repeat(np.arange(items), runs), models).astype(str),
                    "variant": f"t={t},cot={cot}",
                    "run": np.tile(np.arange(runs), models * items),
                    "score": y.reshape(-1),
                }
            )
        )
    return pl.concat(frames)


def many(repeat: int) -> int:
    """Issue 15: the 28-model family, analytic and sequential choices against the old default."""
    import warnings

    sys.path.insert(0, str(ROOT))
    from evalstats.compare import compare_models

    configs = {
        "permutation, all draws (old default)": {"method": "permutation", "stop_after": None},
        "permutation, Besag-Clifford": {"method": "permutation"},
        "auto = paired t (default)": {},
    }
    # far apart (20 % to 79 %: every pair differs) and close (60 % to 63 %: most pairs do not)
    for spread in ((0.20, 0.79), (0.60, 0.63)):
        obs = cruxeval_like(spread=spread)
        compare_models(obs.head(20_000), method="t")  # warm-up: imports and first-call costs
        print(f"pass rates {spread[0]:.0%} to {spread[1]:.0%}, {obs.height:,} rows, 378 pairs")
        times = {}
        for label, kwargs in configs.items():
            runs = []
            for _ in range(repeat):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    t = time.perf_counter()
                    out = compare_models(obs, **kwargs)
                    runs.append(time.perf_counter() - t)
            times[label] = statistics.median(runs)
            used = out["resamples_used"].drop_nulls()
            extra = f", draws per pair: median {int(used.median())}" if used.len() else ""
            print(
                f"  {label:<38} {times[label]:7.2f} s  rejects {int(out['reject'].sum())} of "
                f"{out.height}{extra}",
                flush=True,
            )
        base = times["permutation, all draws (old default)"]
        ratios = ", ".join(f"{label}: {base / sec:.1f}x" for label, sec in times.items())
        print(f"  speed-up against all draws: {ratios}\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Generate the CSVs, time both packages, print the ratios."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, nargs="+", default=[800, 5000])
    ap.add_argument("--models", type=int, default=5)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--peer", default=str(PEER), help="python of the peer's virtual environment")
    ap.add_argument("--many", action="store_true", help="issue 15: 28 models, 896k rows")
    args = ap.parse_args(argv)
    if args.many:
        return many(args.repeat)
    peer = Path(args.peer)
    if not peer.exists():
        print(
            f"peer skipped: {peer} not found (python3 -m venv /work/peer-venv && "
            "/work/peer-venv/bin/pip install evalstats==0.3.3)",
            file=sys.stderr,
        )
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for items in args.items:
            frame = generate(args.models, items, args.runs)
            path = Path(tmp) / f"compare_{frame.height}.csv"
            frame.write_csv(path)
            peer_s = peer_wall = None
            if peer.exists():
                # run the peer from a neutral folder so our checkout is not on its path
                theirs = [_run(str(peer), PEER_CODE, path, Path(tmp)) for _ in range(args.repeat)]
                peer_s = statistics.median(t[0]["seconds"] for t in theirs)
                peer_wall = statistics.median(t[1] for t in theirs)
            for label, kwargs in CONFIGS.items():
                ours = [
                    _run(sys.executable, OURS, path, ROOT, json.dumps(kwargs))
                    for _ in range(args.repeat)
                ]
                line = {
                    "rows": frame.height,
                    "ours": label,
                    "ours_s": statistics.median(o[0]["seconds"] for o in ours),
                    "ours_wall_s": statistics.median(o[1] for o in ours),
                    "peer_s": peer_s,
                    "peer_wall_s": peer_wall,
                    "ratio": peer_s / statistics.median(o[0]["seconds"] for o in ours)
                    if peer_s
                    else None,
                }
                rows.append(line)
                print(json.dumps(line), flush=True)
    print()
    print(f"{'rows':>9} {'ours':<32} {'ours (s)':>9} {'peer (s)':>9} {'peer/ours':>10}")
    for r in rows:
        peer_s = f"{r['peer_s']:9.2f}" if r["peer_s"] else f"{'-':>9}"
        ratio = f"{r['ratio']:9.1f}x" if r["ratio"] else f"{'-':>10}"
        print(f"{r['rows']:>9} {r['ours']:<32} {r['ours_s']:9.3f} {peer_s} {ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
