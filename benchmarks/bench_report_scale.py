"""``evalstats report``: CPU against rows (log-log slope), and against its analyses called directly.

Two measurements, each command in a fresh process, CPU (user + system of the process, threads
included) counted after the imports:

1. **Scale.** The long tables of ``bench_ingest.py --shape long`` (20 models x 50 variants x N
   items, 0/1 scores, one Parquet file each, generated on disk and removed after) at each
   ``--rows``: ``evalstats report FILE --figure-format none --workers 1``: CPU, peak memory
   (the process's high-water mark), and the log-log slope of CPU over rows between each pair
   of sizes and over all of them (issue 47: at most 1.1 from 1M to 20M rows).
2. **Report against its analyses.** A CRUXEval-shaped table (28 models x 800 items x 4
   settings x 10 runs, :func:`bench_compare.cruxeval_like`): the same report, then, in another
   process, the file read with :func:`evalstats.read` and every analysis the report ran called
   through the public function its ``results.json`` names (``evalstats.prompt_spread``,
   ``evalstats.intervals``, ...) with the parameters it records. The ratio report / direct is
   what the report adds: the design, its own extra tables (per-dataset comparisons, letter
   groups, the noise plan, the whole-grid estimates), the readings and the pages (issue 47: at
   most 1.2). ``--repeat`` interleaves the two and prints every pair and the median ratio.

On a machine shared with other jobs, CPU seconds are steadier than wall time but still move a
few per cent; read ratios and slopes from runs made side by side.

Usage::

    python benchmarks/bench_report_scale.py [--rows 1000000 5000000 20000000] [--repeat 3]
        [--skip-scale] [--skip-direct] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

_CHILD = r"""
import json, resource, sys, warnings
sys.path.insert(0, {root!r})
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
mode, path, out = sys.argv[1], sys.argv[2], sys.argv[3]
if mode == "report":
    from evalstats.cli import main
    c0 = cpu()
    try:
        main(["report", path, "--out", out, "--force", "--quiet", "--workers", "1",
              "--figure-format", "none"])
    except SystemExit as e:
        if e.code not in (0, None):
            raise
else:
    import evalstats
    done = json.load(open(out + "/results.json"))["analyses"]
    c0 = cpu()
    obs = evalstats.read(path).observations
    for a in done:
        fn = getattr(evalstats, a["function"].split(".")[-1])
        params = {{k: v for k, v in a["params"].items() if v is not None}}
        if a["key"] == "correlation":  # takes the stability table, as the report does
            frame = evalstats.stability_table(obs)
        else:
            frame = obs
        for k, v in params.items():
            if isinstance(v, list):
                params[k] = tuple(v)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn(frame, **params)
print(json.dumps({{"cpu": cpu() - c0,
                  "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""


def _child(mode: str, path: Path, out: Path) -> dict:
    code = _CHILD.format(root=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-c", code, mode, str(path), str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{mode} on {path} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _slope(x0: float, y0: float, x1: float, y1: float) -> float:
    return math.log(y1 / y0) / math.log(x1 / x0)


def scale(rows: list[int], work: Path) -> list[dict]:
    from bench_ingest import generate_long

    results = []
    for n in rows:
        path = work / f"long_{n}.parquet"
        generate_long(path, n)
        r = _child("report", path, work / f"report_{n}")
        path.unlink()
        results.append({"rows": n, **r})
        print(f"  {n:>12,} rows: {r['cpu']:8.1f} CPU s, peak {r['peak_mib']:7.0f} MiB", flush=True)
    print("\n| rows | report CPU s | peak MiB | slope from the previous size |")
    print("|---|---|---|---|")
    for k, r in enumerate(results):
        s = (
            ""
            if k == 0
            else f"{_slope(results[k - 1]['rows'], results[k - 1]['cpu'], r['rows'], r['cpu']):.2f}"
        )
        print(f"| {r['rows']:,} | {r['cpu']:.1f} | {r['peak_mib']:.0f} | {s} |")
    if len(results) > 1:
        a, b = results[0], results[-1]
        print(
            f"\nlog-log slope of the report's CPU from {a['rows']:,} to {b['rows']:,} rows: "
            f"{_slope(a['rows'], a['cpu'], b['rows'], b['cpu']):.2f} (target <= 1.1)"
        )
    return results


def direct(repeat: int, work: Path) -> dict:
    from bench_compare import cruxeval_like

    path = work / "cruxeval_like.parquet"
    cruxeval_like().write_parquet(path)
    pairs = []
    for _ in range(repeat):
        rep = _child("report", path, work / "report_crux")
        dirct = _child("direct", path, work / "report_crux")
        pairs.append((rep["cpu"], dirct["cpu"]))
        print(
            f"  report {rep['cpu']:.1f} CPU s, analyses called directly {dirct['cpu']:.1f} "
            f"CPU s: ratio {rep['cpu'] / dirct['cpu']:.2f}",
            flush=True,
        )
    done = json.loads((work / "report_crux" / "results.json").read_text())["analyses"]
    ratio = statistics.median(r / d for r, d in pairs)
    print(f"\nanalyses: {', '.join(a['key'] for a in done)}")
    print(f"median ratio report / direct over {repeat} pair(s): {ratio:.2f} (target <= 1.2)")
    return {"pairs": pairs, "ratio": ratio, "analyses": [a["key"] for a in done]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 5_000_000, 20_000_000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-scale", action="store_true")
    parser.add_argument("--skip-direct", action="store_true")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = parser.parse_args()
    out = {}
    with tempfile.TemporaryDirectory(prefix="evalstats-report-scale-") as tmp:
        work = Path(tmp)
        if not args.skip_direct:
            print("report against its analyses called directly (CRUXEval-shaped table)")
            out["direct"] = direct(args.repeat, work)
        if not args.skip_scale:
            print("\nreport CPU by rows (long tables, --figure-format none --workers 1)")
            out["scale"] = scale(sorted(args.rows), work)
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
