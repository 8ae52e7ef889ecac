"""``evalstats report`` on the inputs that ran past its time budget (issue 45): finish or refuse.

Cases, each run as a user runs it (a fresh process) with a timeout:

- ``helm-10mb``: a synthetic HELM suite of about 10 MB in ``helm-run``'s layout
  (:mod:`helm_suite`): 4 models, 50 instances, 12 perturbations plus the originals, 8 statistics;
- ``helm-many-perturbations``: about 10 MB again, 2 models, 20 instances, 60 perturbations
  (HELM's perturbations at several strengths);
- ``models-100k``: 100,000 models x 5 items of 0/1 scores (Parquet).

For each: ``ingest``, ``moments`` and ``nstar`` (the steps the issue timed at 2-3 s on its suite)
and the whole ``report``; the wall time, the exit status (0 finished, 2 refused with one line)
and whether it stayed under the budget (``--budget``, default 120 s). On a machine shared with
other jobs read the load average printed beside the times.

Usage::

    python benchmarks/bench_report_cost.py [--budget 120] [--only NAME] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))
from helm_suite import suite_bytes, write_helm_suite  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _cases(work: Path) -> dict[str, Path]:
    cases = {}
    runs = write_helm_suite(
        work / "helm10", n_models=4, n_instances=50, n_perturbations=12, n_stats=8
    )
    cases["helm-10mb"] = runs
    runs = write_helm_suite(
        work / "helm60", n_models=2, n_instances=20, n_perturbations=60, n_stats=8
    )
    cases["helm-many-perturbations"] = runs
    rng = np.random.default_rng(0)
    n, items = 100_000, 5
    table = work / "models-100k.parquet"
    pl.DataFrame(
        {
            "model": np.repeat([f"m{i}" for i in range(n)], items),
            "item": np.tile([str(i) for i in range(items)], n),
            "score": (rng.random(n * items) < 0.6).astype(float),
        }
    ).write_parquet(table)
    cases["models-100k"] = table
    return cases


def _run(argv: list[str], budget: float) -> tuple[float, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "evalstats", *argv],
            env=env,
            capture_output=True,
            text=True,
            timeout=budget * 2.5,
        )
    except subprocess.TimeoutExpired:
        return time.perf_counter() - start, "timeout"
    seconds = time.perf_counter() - start
    if proc.returncode == 0:
        return seconds, "finished"
    last = proc.stderr.strip().splitlines()[-1:] or [""]
    return seconds, f"exit {proc.returncode}: {last[0][:160]}"


def main() -> int:
    """Run the cases; print one line per step."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=float, default=120.0)
    ap.add_argument("--only", default=None)
    ap.add_argument("--keep", type=Path, default=None, help="build the inputs here and keep them")
    args = ap.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="evalstats-cost-"))
    work.mkdir(parents=True, exist_ok=True)
    cases = _cases(work)
    failed = 0
    for name, path in cases.items():
        if args.only and name != args.only:
            continue
        size = suite_bytes(path) if path.is_dir() else path.stat().st_size
        print(f"{name}: {size / 1e6:.1f} MB ({path})", flush=True)
        steps = [("ingest", ["ingest", str(path)])]
        if path.is_dir():
            steps += [
                ("moments", ["moments", str(path)]),
                ("nstar", ["nstar", str(path), "--metric", "exact_match"]),
            ]
        out = work / f"report-{name}"
        steps.append(("report", ["report", str(path), "--out", str(out), "--force", "--quiet"]))
        for step, argv in steps:
            seconds, status = _run(argv, args.budget)
            ok = seconds <= args.budget and status != "timeout"
            failed += step == "report" and not ok
            load = os.getloadavg()[0]
            print(
                f"  {step:8s} {seconds:7.1f} s  {status}  "
                f"[{'within' if ok else 'OVER'} {args.budget:.0f} s; load {load:.1f}]",
                flush=True,
            )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
