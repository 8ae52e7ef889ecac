"""Whole-process ``evalstats report`` at leaderboard scale, and ``evalstats --help`` start-up.

Times the command as a user runs it (a fresh process: imports, ingest, every analysis, every
figure, the HTML) on

- a generated table of about 1M rows: 30 models × 20 datasets × 170 items × 2 prompt variants
  × 5 runs (``evalstats.simulate.observations``, written once to Parquet), and
- the State of What Art data (``--format state-of-what-art``), when its folder is given,

reports wall time and peak memory (the child's max RSS), the same report's CPU with
``--figures none`` (the analysis floor; the ratio is what the figures cost), and, with ``--baseline DIR`` (a
checkout of an earlier commit, e.g. ``git worktree add /tmp/base <commit>``), runs the same
command from that checkout on the same input and prints the ratio. Targets (issue 16): under
60 s for the generated table and under 30 s for State of What Art on a 2-core machine, peak
memory under 2 GB, ``evalstats --help`` under 0.3 s.

Timings on a shared machine are noisy; run it when the machine is quiet and read ratios rather
than absolute times.

CPU time (user + system of the report and all its worker processes, sampled from ``/proc``) is
printed beside wall time: on a machine shared with other jobs it is the steadier number. Peak
memory is the largest single process's high-water mark; the largest sum over all processes
at once is printed besides. ``--pairs N`` runs the reports with and without figures N times
alternately and prints the median ratio. ``--workers N`` passes
``--workers`` to the new code's report (default: its own default, ``auto``); ``--record FILE``
appends one JSON line per case (times, peak, load average, cores) for the record.

Usage::

    python benchmarks/bench_report.py [--sowa PATH] [--baseline DIR] [--skip-big] [--timeout S]
        [--workers N] [--record FILE] [--skip-help] [--pairs N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


class TreeSampler:
    """CPU seconds and memory of a process and all its descendants, read from ``/proc``.

    The report's workers are forked by a fork server (:mod:`evalstats._procs`): grandchildren
    of the report process that ``wait4`` never reports. Every ``interval`` seconds this reads
    each descendant's user + system time, its resident-set high-water mark (``VmHWM``) and its
    proportional set size; CPU is the sum of the last values seen (a process's last
    ``interval`` before it exits is lost), the peak is the largest single high-water mark and,
    besides, the largest sum of the proportional set sizes seen at once (the memory of all the
    processes together). Linux only; elsewhere the numbers stay 0.
    """

    def __init__(self, root: int, interval: float = 0.1) -> None:
        self.root = root
        self.interval = interval
        self.cpu: dict[int, float] = {}
        self.hwm: dict[int, float] = {}
        self.sum_peak_mb = 0.0
        self._stop = threading.Event()
        self._tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> TreeSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _stat(self, pid: str) -> tuple[int, float] | None:
        try:
            text = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return None
        fields = text[text.rindex(")") + 2 :].split()
        return int(fields[1]), (int(fields[11]) + int(fields[12])) / self._tick  # ppid, cpu

    def _memory(self, pid: int) -> tuple[float, float]:
        """High-water mark of the resident set, and the proportional set size (MB).

        PSS shares each page among the processes that map it, so the PSS of forked workers
        sums to the memory they use together (their RSS counts shared pages once each).
        """
        hwm = pss = 0.0
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    hwm = int(line.split()[1]) / 1024
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    pss = int(line.split()[1]) / 1024
        except OSError:
            pass
        return hwm, pss

    def sample(self) -> None:
        if not Path("/proc").is_dir():
            return
        parent: dict[int, int] = {}
        cpu: dict[int, float] = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit() and (st := self._stat(entry)) is not None:
                parent[int(entry)], cpu[int(entry)] = st
        tree = {self.root}
        grew = True
        while grew:
            new = {p for p, pp in parent.items() if pp in tree} - tree
            tree |= new
            grew = bool(new)
        total = 0.0
        for pid in tree & cpu.keys():
            self.cpu[pid] = cpu[pid]
            hwm, pss = self._memory(pid)
            self.hwm[pid] = max(self.hwm.get(pid, 0.0), hwm)
            total += pss
        self.sum_peak_mb = max(self.sum_peak_mb, total)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()


def run(
    args: list[str], cwd: Path, timeout: float, out: Path | None = None
) -> tuple[float, float, float, int, float]:
    """Wall seconds, CPU seconds, peak RSS (MB), exit status and all-process peak (MB) of
    ``python -m evalstats.cli``.

    CPU is user + system time of the process and of all its descendants (the workers and
    the fork server that forks them; see :class:`TreeSampler`), or where ``/proc`` is missing
    of the ones it waited for; peak RSS is the largest single one of them, not their sum
    (the largest sum of proportional set sizes is printed besides).
    """
    env = dict(os.environ, PYTHONPATH=str(cwd))
    cmd = [sys.executable, "-m", "evalstats.cli", *args]
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=err)
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        with TreeSampler(proc.pid) as tree:
            _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        timed_out = not timer.is_alive()
        timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        code = -1 if timed_out else proc.returncode
        if code:
            err.seek(0)
            print(err.read().decode(errors="replace")[-2000:], file=sys.stderr)
    own = usage.ru_utime + usage.ru_stime  # the process and the children it waited for
    cpu = max(own, sum(tree.cpu.values()))
    peak = max([usage.ru_maxrss / 1024, *tree.hwm.values()])
    if tree.sum_peak_mb:
        print(f"  all processes at once: peak {tree.sum_peak_mb:6.0f} MB (sum of PSS)")
    return wall, cpu, peak, code, tree.sum_peak_mb


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


def _status(code: int) -> str:
    return "ok" if code == 0 else ("timeout" if code == -1 else f"exit {code}")


def bench(
    name: str,
    report_args: list[str],
    baseline: Path | None,
    timeout: float,
    record: Path | None = None,
    new_only: tuple[str, ...] = (),
    floor: bool = True,
    pairs: int = 1,
) -> float:
    """Run one case; print and return the report's CPU seconds.

    With ``floor``, the same report with ``--figures none`` too, ``pairs`` times alternately
    with the report with figures (the ratio of one pair moves by about ±0.07 on a shared
    machine whose speed drifts; the median of several pairs is the steadier number).
    """
    with tempfile.TemporaryDirectory() as tmp:
        new_args = [*report_args, *new_only, "--out", f"{tmp}/new", "--quiet"]
        wall, cpu, peak, code, together = run(new_args, ROOT, timeout)
        print(
            f"{name}: {wall:7.1f} s wall, {cpu:7.1f} s CPU, peak {peak:6.0f} MB ({_status(code)})"
        )
        row = {"case": name, "wall_s": wall, "cpu_s": cpu, "peak_mb": peak, "status": code}
        row["all_processes_peak_mb"] = together
        row |= {"options": list(new_only)}
        if floor:  # the analysis floor: the same report without figures (issue 30: <= 1.3)
            floor_args = [*new_args[:-3], "--figures", "none", "--out", f"{tmp}/floor", "--quiet"]
            cpus, fcpus = [cpu], []
            for i in range(pairs):
                if i:  # the next pair: with figures again, then without
                    shutil.rmtree(f"{tmp}/new", ignore_errors=True)
                    cpus.append(run(new_args, ROOT, timeout)[1])
                shutil.rmtree(f"{tmp}/floor", ignore_errors=True)
                fwall, fcpu, _, fcode, _ = run(floor_args, ROOT, timeout)
                fcpus.append(fcpu)
                print(
                    f"{name} (--figures none): {fwall:7.1f} s wall, {fcpu:7.1f} s CPU "
                    f"({_status(fcode)}); CPU with figures / without = {cpus[i] / fcpu:.2f}"
                )
            ratios = [a / b for a, b in zip(cpus, fcpus)]
            if pairs > 1:
                print(
                    f"{name}: {pairs} pairs, CPU with figures / without: median "
                    f"{statistics.median(ratios):.2f} (range {min(ratios):.2f} to "
                    f"{max(ratios):.2f}; summed CPU {sum(cpus) / sum(fcpus):.2f})"
                )
            row |= {"floor_wall_s": fwall, "floor_cpu_s": fcpus[-1]}
            row |= {"figure_cpu_ratio": statistics.median(ratios)}
            if pairs > 1:
                row |= {
                    "figure_cpu_ratios": ratios,
                    "cpu_s_pairs": cpus,
                    "floor_cpu_s_pairs": fcpus,
                }
        if baseline is not None:
            bwall, bcpu, bpeak, bcode, _ = run(
                [*report_args, "--out", f"{tmp}/base", "--quiet"], baseline, timeout
            )
            print(
                f"{name} (baseline): {bwall:7.1f} s wall, {bcpu:7.1f} s CPU, peak {bpeak:6.0f} MB "
                f"({_status(bcode)})"
            )
            print(
                f"{name}: ratio baseline/new = {bwall / wall:.2f} wall, {bcpu / cpu:.2f} CPU"
                + ("" if bcode == 0 else " (baseline did not finish: a lower bound)")
            )
            row |= {"baseline_wall_s": bwall, "baseline_cpu_s": bcpu, "baseline_peak_mb": bpeak}
            row |= {"baseline_status": bcode, "baseline": str(baseline)}
        if record is not None:
            row |= {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
            row |= {"load_avg_1min": os.getloadavg()[0], "cores": os.cpu_count()}
            with record.open("a") as fh:
                fh.write(json.dumps(row) + "\n")
    return cpu


def _seconds_per_group(path: Path, cpu: float) -> tuple[float, int]:
    """CPU seconds per model x task group of a State of What Art folder (its accuracy CSVs)."""
    import polars as pl

    groups = 0
    for csv in path.rglob("*.csv"):
        if "paraphrases accuracies" not in str(csv) and csv.parent != path:
            continue
        cols = pl.read_csv(csv, n_rows=1).columns
        groups += sum(1 for c in cols if c.endswith("_acc"))
    return cpu / max(groups, 1), groups


def bench_help(repeats: int = 5) -> None:
    times = []
    for _ in range(repeats):
        wall, *_ = run(["--help"], ROOT, 60)
        times.append(wall)
    print(
        f"evalstats --help: best {min(times):.3f} s, median {sorted(times)[len(times) // 2]:.3f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sowa", type=Path, default=None, help="State of What Art folder")
    parser.add_argument(
        "--sowa-release",
        type=Path,
        default=None,
        help="the whole State of What Art release folder (its format auto-detected)",
    )
    parser.add_argument("--baseline", type=Path, default=None, help="checkout to compare with")
    parser.add_argument("--skip-big", action="store_true", help="skip the generated 1M-row table")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per run")
    parser.add_argument(
        "--table", type=Path, default=Path(tempfile.gettempdir()) / "evalstats_bench_1m.parquet"
    )
    parser.add_argument("--workers", default=None, help="--workers of the new code's report")
    parser.add_argument("--skip-help", action="store_true", help="skip the --help timing")
    parser.add_argument(
        "--record", type=Path, default=None, help="append one JSON line per case to this file"
    )
    parser.add_argument(
        "--pairs",
        type=int,
        default=1,
        help="reports with and without figures, run alternately this many times (median ratio)",
    )
    args = parser.parse_args()
    if not args.skip_help:
        bench_help()
    new_only = ("--workers", args.workers) if args.workers else ()
    if args.sowa is not None:
        bbh = bench(
            "state-of-what-art",
            ["report", str(args.sowa), "--format", "state-of-what-art"],
            args.baseline,
            args.timeout,
            args.record,
            new_only,
            pairs=args.pairs,
        )
    if args.sowa_release is not None:
        # the release folder as it is published, its format detected: per group no slower
        # than the BBH folder named with --format (issue 30: within 2x)
        whole = bench(
            "state-of-what-art release (auto-detected)",
            ["report", str(args.sowa_release)],
            None,
            args.timeout,
            args.record,
            new_only,
            floor=False,
        )
        if args.sowa is not None:
            per = [
                _seconds_per_group(path, t)
                for path, t in ((args.sowa, bbh), (args.sowa_release, whole))
            ]
            print(
                f"state-of-what-art: {per[0][1]} groups in the BBH folder, {per[1][1]} in the "
                f"release; CPU per group {per[0][0]:.3f} s and {per[1][0]:.3f} s "
                f"(release / BBH = {per[1][0] / per[0][0]:.2f})"
            )
    if not args.skip_big:
        table = generated_table(args.table)
        bench(
            "generated 1M rows",
            ["report", str(table)],
            args.baseline,
            args.timeout,
            args.record,
            new_only,
            pairs=args.pairs,
        )


if __name__ == "__main__":
    main()
