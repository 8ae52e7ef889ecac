"""Design benchmark: ``evalstats design`` on a wide table, against the polars floor (issue 40).

Generates one Parquet file of ``--rows`` rows (default 1,000,000) and ``--columns`` columns
(default 200): ``model`` (10 values), ``item`` (rows / 400 items), ``prompt_id`` (40 values
within each model and item), ``score`` (0/1), and candidate columns of every structural kind the rules judge (prompt factors that vary within items, item
attributes, model attributes, outcomes null where the answer is right, per-call counts and
durations, near-unique ids). Then measures, each step in its own subprocess so that peak memory
(``ru_maxrss``) belongs to that step alone:

- ``floor``: ``pl.scan_parquet(f).group_by("model", "item").agg(pl.all().n_unique())``, the
  distinct values of every column per (model, item) cell, collected with the streaming engine:
  the least any structural reading of the columns must do (the issue's floor);
- ``design``: ``evalstats.read(f)`` and ``evalstats.infer_design(obs, ingest=report)``, what
  ``evalstats design FILE`` runs (the ingest's accounting, the roles, the groups);
- ``classify``: the role rules alone (:func:`evalstats._column_rules.classify` over the
  candidate columns), the part of ``design`` this issue changed;
- ``baseline``: imports only, to read the memory figures against.

The parent imports neither numpy nor polars (a child's ``ru_maxrss`` starts from its parent's
resident size). Prints CPU seconds (user + system; steadier than wall time on a shared 2-core
machine), peak RSS and the ratios to ``floor`` from the same run, and checks the target of
issue 40 (``design`` within 2x the floor's CPU and peak memory). ``--repeat N`` interleaves
N runs of each step and reports the medians.

    python benchmarks/bench_design.py                      # 1M rows x 200 columns
    python benchmarks/bench_design.py --rows 200000        # quick
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

GENERATE = r"""
import sys
import numpy as np
import polars as pl

rows, columns, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
rng = np.random.default_rng(0)
# 40 prompt variants per (model, item) cell, 10 models: rows / 400 items
row = np.arange(rows)
variant = row % 40
model = (row // 40) % 10
item = row // 400
score = (rng.random(rows) < 0.6).astype(np.float64)
data = {
    "model": np.char.add("m", model.astype(str)),
    "item": item.astype(str),
    "score": score,
    "prompt_id": variant.astype(np.int16),
}
kinds = ["prompt", "item_attr", "model_attr", "outcome", "count", "duration", "id"]
for j in range(columns - 4):
    kind = kinds[j % len(kinds)]
    name = f"{kind}_{j}"
    if kind == "prompt":
        data[name] = (variant % (2 + j % 6)).astype(np.int8)  # a factor of the variant
    elif kind == "item_attr":
        data[name] = (item % (3 + j % 5)).astype(np.int16)
    elif kind == "model_attr":
        data[name] = (model % (2 + j % 3)).astype(np.int8)
    elif kind == "outcome":
        data[name] = pl.Series(rng.integers(0, 3, rows)).cast(pl.String).set(
            pl.Series(score == 1.0), None
        )
    elif kind == "count":
        data[name] = rng.integers(10, 5000, rows).astype(np.int32)
    elif kind == "duration":
        data[name] = rng.gamma(2.0, 1.0, rows)
    else:
        data[name] = np.arange(rows, dtype=np.int64) * 7 + j
pl.DataFrame(data).write_parquet(path)
"""

STEPS = {
    "baseline": "import polars, numpy, evalstats",
    "floor": (
        "import polars as pl\n"
        "pl.scan_parquet(PATH).group_by('model', 'item')"
        ".agg(pl.all().n_unique()).collect(engine='streaming')"
    ),
    "design": (
        "import evalstats\n"
        "obs, report = evalstats.read(PATH)\n"
        "evalstats.infer_design(obs, ingest=report)"
    ),
    "classify": (
        "import polars as pl\n"
        "from evalstats._column_rules import classify\n"
        "lf = pl.scan_parquet(PATH)\n"
        "names = [c for c in lf.collect_schema().names() if c not in ('model', 'item', 'score')]\n"
        "classify(lf, names)"
    ),
}


def _child(code: str, path: Path) -> tuple[float, float]:
    """CPU seconds and peak RSS (MiB) of one step in a fresh interpreter."""
    script = (
        "import resource, sys\n"
        f"PATH = {str(path)!r}\n"
        f"{code}\n"
        "u = resource.getrusage(resource.RUSAGE_SELF)\n"
        "print(u.ru_utime + u.ru_stime, u.ru_maxrss / 1024)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], check=True, capture_output=True, text=True
    ).stdout.split()
    return float(out[-2]), float(out[-1])


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; print the table and the issue's check."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--columns", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=1, help="interleaved runs of each step")
    ap.add_argument("--json", type=Path, help="write the measurements here")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "wide.parquet"
        subprocess.run(
            [sys.executable, "-c", GENERATE, str(args.rows), str(args.columns), str(path)],
            check=True,
        )
        runs: dict[str, list[tuple[float, float]]] = {k: [] for k in STEPS}
        for _ in range(args.repeat):
            for name, code in STEPS.items():
                runs[name].append(_child(code, path))
    med = {
        k: (statistics.median(c for c, _ in v), statistics.median(m for _, m in v))
        for k, v in runs.items()
    }
    print(
        f"{args.rows:,} rows x {args.columns} columns, median of {args.repeat} interleaved "
        "run(s) per step"
    )
    print(f"{'step':10s} {'CPU s':>8s} {'peak MiB':>9s} {'CPU/floor':>10s} {'mem/floor':>10s}")
    floor_cpu, floor_mem = med["floor"]
    for name, (cpu, mem) in med.items():
        print(f"{name:10s} {cpu:8.2f} {mem:9.0f} {cpu / floor_cpu:10.2f} {mem / floor_mem:10.2f}")
    cpu_ratio = med["design"][0] / floor_cpu
    mem_ratio = med["design"][1] / floor_mem
    ok = cpu_ratio <= 2 and mem_ratio <= 2
    print(
        f"issue 40 target (design within 2x the floor's CPU and peak memory): "
        f"CPU {cpu_ratio:.2f}x, memory {mem_ratio:.2f}x: {'met' if ok else 'NOT met'}"
    )
    if args.json:
        args.json.write_text(json.dumps({"rows": args.rows, "columns": args.columns, "runs": runs}))
    return 0


if __name__ == "__main__":
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    sys.exit(main())
