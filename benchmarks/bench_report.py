"""Whole-process ``evalstats report`` at leaderboard scale, and ``evalstats --help`` start-up.

Times the command as a user runs it (a fresh process: imports, ingest, every analysis, every
figure, the HTML) on

- a generated table of about 1M rows: 30 models × 20 datasets × 170 items × 2 prompt variants
  × 5 runs (``evalstats.simulate.observations``, written once to Parquet), and
- the State of What Art data (``--format state-of-what-art``), when its folder is given,

reports wall time and peak memory (the child's max RSS), and, with ``--baseline DIR`` (a
checkout of an earlier commit, e.g. ``git worktree add /tmp/base <commit>``), runs the same
command from that checkout on the same input and prints the ratio. Targets (issue 16): under
60 s for the generated table and under 30 s for State of What Art on a 2-core machine, peak
memory under 2 GB, ``evalstats --help`` under 0.3 s.

Timings on a shared machine are noisy; run it when the machine is quiet and read ratios rather
than absolute times.

Usage::

    python benchmarks/bench_report.py [--sowa PATH] [--baseline DIR] [--skip-big] [--timeout S]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(
    args: list[str], cwd: Path, timeout: float, out: Path | None = None
) -> tuple[float, float, int]:
    """Wall seconds, peak RSS (MB) and exit status of ``python -m evalstats.cli *args``."""
    env = dict(os.environ, PYTHONPATH=str(cwd))
    cmd = [sys.executable, "-m", "evalstats.cli", *args]
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
        )
        code = proc.returncode
        if code:
            print(proc.stderr[-2000:], file=sys.stderr)
    except subprocess.TimeoutExpired:
        code = -1
    wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    # ru_maxrss of children is the largest child so far (kB on Linux)
    return wall, max(peak, before) / 1024, code


def generated_table(path: Path) -> Path:
    if not path.exists():
        sys.path.insert(0, str(ROOT))
        from evalstats.simulate import observations

        obs = observations(
            n_models=30,
            n_datasets=20,
            n_items=170,
            n_variants=2,
            n_runs=5,
            instability=0.05,
            seed=1,
        )
        obs.write_parquet(path)
        print(f"generated {obs.height:,} rows -> {path}")
    return path


def bench(name: str, report_args: list[str], baseline: Path | None, timeout: float) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        wall, peak, code = run([*report_args, "--out", f"{tmp}/new", "--quiet"], ROOT, timeout)
        status = "ok" if code == 0 else ("timeout" if code == -1 else f"exit {code}")
        print(f"{name}: {wall:7.1f} s, peak {peak:7.0f} MB ({status})")
        if baseline is not None:
            bwall, bpeak, bcode = run(
                [*report_args, "--out", f"{tmp}/base", "--quiet"], baseline, timeout
            )
            bstatus = "ok" if bcode == 0 else ("timeout" if bcode == -1 else f"exit {bcode}")
            print(f"{name} (baseline): {bwall:7.1f} s, peak {bpeak:7.0f} MB ({bstatus})")
            print(
                f"{name}: ratio baseline/new = {bwall / wall:.2f}"
                + ("" if bcode == 0 else " (baseline did not finish: a lower bound)")
            )


def bench_help(repeats: int = 5) -> None:
    times = []
    for _ in range(repeats):
        wall, _, _ = run(["--help"], ROOT, 60)
        times.append(wall)
    print(
        f"evalstats --help: best {min(times):.3f} s, median {sorted(times)[len(times) // 2]:.3f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sowa", type=Path, default=None, help="State of What Art folder")
    parser.add_argument("--baseline", type=Path, default=None, help="checkout to compare with")
    parser.add_argument("--skip-big", action="store_true", help="skip the generated 1M-row table")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per run")
    parser.add_argument(
        "--table", type=Path, default=Path(tempfile.gettempdir()) / "evalstats_bench_1m.parquet"
    )
    args = parser.parse_args()
    bench_help()
    if args.sowa is not None:
        bench(
            "state-of-what-art",
            ["report", str(args.sowa), "--format", "state-of-what-art"],
            args.baseline,
            args.timeout,
        )
    if not args.skip_big:
        table = generated_table(args.table)
        bench("generated 1M rows", ["report", str(table)], args.baseline, args.timeout)


if __name__ == "__main__":
    main()
