"""Write docs/performance.md: how time and memory grow with rows, variants and models.

Two parts, each measured in fresh subprocesses (peak memory is ``ru_maxrss`` of the child; the
parent imports neither numpy nor polars, so it does not inflate the children's figure):

1. **Ingest** (files -> unit table): ``benchmarks/bench_ingest.py`` on generated DOVE_Lite-shaped
   folders (default 1M and 5M rows here; pass ``--ingest-json`` with the output of a
   ``bench_ingest.py --json`` run to include larger ones such as 20M without re-running them).
2. **Every analysis** on simulated data (``evalstats.simulate.observations``) that grows along
   one axis at a time from a base of 4 models x 20 variants x 100 items x 5 runs (40,000
   observation rows): items (x1, x4, x16), variants (x1, x4, x16) and models (x1, x2, x4;
   pairwise comparisons grow with the square of the models). Sizes run in increasing order in
   one child per (analysis, axis), so each peak-memory figure is the high-water mark up to that
   size.

    python benchmarks/performance.py                                   # about 10 minutes
    python benchmarks/bench_ingest.py --json /tmp/ingest.json          # 1M, 5M, 20M rows
    python benchmarks/performance.py --ingest-json /tmp/ingest.json    # use those numbers

The install size comes from ``benchmarks/install_size.py`` (its JSON in benchmarks/results/).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "docs" / "performance.md"

BASE = {"n_models": 4, "n_variants": 20, "n_items": 100, "n_runs": 5}
AXES = {
    "items": ("n_items", (1, 4, 16)),
    "variants": ("n_variants", (1, 4, 16)),
    "models": ("n_models", (1, 2, 4)),
}

#: analysis -> (call on (evalstats, obs, units, stability table), input, options shown)
ANALYSES = {
    "to_units": (lambda es, o, u, s: es.to_units(o).collect(), "observations", ""),
    "prompt_spread": (lambda es, o, u, s: es.prompt_spread(u), "units", ""),
    "sample_size_curve": (
        lambda es, o, u, s: es.sample_size_curve(u, n_resamples=500),
        "units",
        "n_resamples=500",
    ),
    "required_sample_size": (
        lambda es, o, u, s: es.required_sample_size(u, n_resamples=500),
        "units",
        "n_resamples=500",
    ),
    "stability_table": (lambda es, o, u, s: es.stability_table(o), "observations", ""),
    "tar_curve": (lambda es, o, u, s: es.tar_curve(o), "observations", ""),
    "run_normality": (lambda es, o, u, s: es.run_normality(u), "units", "lilliefors"),
    "factor_anova": (
        lambda es, o, u, s: es.factor_anova(u, factors=["template", "separator"], n_resamples=200),
        "units",
        "n_resamples=200",
    ),
    "attribute": (
        lambda es, o, u, s: es.attribute(u, factors=["template", "separator"], n_null=5),
        "units",
        "xgboost, n_null=5",
    ),
    "intervals": (lambda es, o, u, s: es.intervals(u), "units", "t"),
    "compare_models": (lambda es, o, u, s: es.compare_models(o), "observations", "paired on items"),
    "rank_intervals": (
        lambda es, o, u, s: es.rank_intervals(o, n_resamples=200),
        "observations",
        "n_resamples=200",
    ),
    "convergence": (lambda es, o, u, s: es.convergence(u, n_orders=50), "units", "n_orders=50"),
    "spearman_matrix": (
        lambda es, o, u, s: es.spearman_matrix(
            s, columns=["tar_a", "spread", "acc_mean", "input_len"], n_resamples=199
        ),
        "stability table",
        "n_resamples=199",
    ),
}


def _cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def _child(name: str, axis: str) -> list[dict]:
    """Run one analysis at the sizes of one axis (in this child process)."""
    import warnings

    import evalstats as es
    from evalstats.simulate import observations

    warnings.simplefilter("ignore")
    param, factors = AXES[axis]
    call = ANALYSES[name][0]
    out = []
    for k in factors:
        size = dict(BASE)
        size[param] = BASE[param] * k
        n_templates = max(1, size["n_variants"] // 4)
        obs = observations(
            n_models=size["n_models"],
            n_items=size["n_items"],
            n_variants=size["n_variants"],
            n_runs=size["n_runs"],
            factors={
                "template": {f"t{i}": 0.01 * (i % 7) for i in range(n_templates)},
                "separator": {f"s{i}": -0.01 * i for i in range(4)},
            },
            seed=0,
        )
        units = es.to_units(obs).collect()
        stability = es.stability_table(obs) if name == "spearman_matrix" else None
        if k == factors[0]:  # once, untimed: lazy imports (statsmodels, xgboost) and caches
            call(es, obs, units, stability)
        t0, c0 = time.perf_counter(), _cpu()
        call(es, obs, units, stability)
        out.append(
            {
                "factor": k,
                "obs_rows": obs.height,
                "unit_rows": units.height,
                "seconds": time.perf_counter() - t0,
                "cpu_s": _cpu() - c0,
                "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            }
        )
    return out


def _run_child(name: str, axis: str) -> list[dict]:
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child", name, axis],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"{name} / {axis} failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _baseline() -> float:
    code = "import resource, evalstats, evalstats.simulate; print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


#: ``benchmarks/install_size.py`` results: the current install, and an earlier commit's.
INSTALL_JSON = HERE / "results" / "install_size.json"
INSTALL_BEFORE_JSON = HERE / "results" / "install_size_before.json"


def install_section(current: Path = INSTALL_JSON, before: Path = INSTALL_BEFORE_JSON) -> list[str]:
    """The "Install size" section, from ``benchmarks/install_size.py`` JSON (none: no section)."""
    if not current.exists():
        return []
    runs = [json.loads(p.read_text()) for p in (before, current) if p.exists()]
    now = runs[-1]
    lines = [
        "## Install size",
        "",
        f"The README's install (`{now['command']}`) in a fresh virtual environment, measured "
        f"with `du -sh .venv` by `python benchmarks/install_size.py` on {now['date']} "
        f"({now['machine']}, Python {now['python']}).",
        "",
        "| source | xgboost | `du -sh .venv` | bytes | largest folders (MiB) |",
        "|---|---|---:|---:|---|",
    ]
    for r in runs:
        xgb = ", ".join(f"{k} {v}" for k, v in r["xgboost"].items()) or "none"
        big = ", ".join(f"{f['folder']} {f['mib']}" for f in r["largest"][:4])
        lines.append(f"| {r['source']} | {xgb} | {r['du_sh']} | {r['bytes']:,} | {big} |")
    lines.append("")
    tests = now.get("attribution_tests")
    if tests:
        verdict = "pass" if tests["status"] == 0 else "FAIL"
        lines += [
            f"The attribution tests on that environment (`tests/test_attribution.py`, slow "
            f"tests included, after adding pytest, hypothesis and pyarrow): {verdict} "
            f"({tests['summary']}).",
            "",
        ]
    lines += [
        "xgboost's Linux wheels depend on `nvidia-nccl-cu12`, a CUDA library no CPU run uses; "
        "`xgboost-cpu` is the same library built without CUDA. pyproject.toml installs "
        "`xgboost-cpu` where it has wheels (Linux x86_64 and aarch64, manylinux_2_28; Windows "
        "AMD64 and ARM64) and `xgboost` elsewhere (macOS, whose wheels hold no CUDA, and other "
        "platforms), with two complementary environment markers.",
        "",
    ]
    return lines


def _long_section(results: list[dict], command: str) -> list[str]:
    """Issue 47's scaling table: one long file per size, ours against the floor."""
    import bench_ingest

    lines = [
        "### Scaling: one long table per size",
        "",
        f"A long table of {bench_ingest.LONG_MODELS} models x {bench_ingest.LONG_VARIANTS} "
        "variants x N items with 0/1 scores, written as one Parquet file per size in dump order "
        "(model, variant, item). `ours` is `read_units(file)` then `write_parquet` (what "
        "`evalstats ingest --out` does), `floor` is `scan_parquet -> group_by(model, variant) "
        "-> sink_parquet` (same units), the two interleaved in fresh processes; CPU is user + "
        "system after the imports (the smallest of the runs), `with imports` is the whole "
        "process. The log-log slope is fitted over the sizes.",
        "",
        f"Command: `{command}`",
        "",
        "| rows | ours CPU s | floor CPU s | CPU / floor | with imports | ours peak MiB "
        "| floor peak MiB | memory / floor |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        o, f = r["steps"]["long_ours"], r["steps"]["long_floor"]
        lines.append(
            f"| {r['rows']:,} | {o['cpu_s']:.2f} | {f['cpu_s']:.2f} | "
            f"{o['cpu_s'] / f['cpu_s']:.1f} | {o['process_cpu_s'] / f['process_cpu_s']:.1f} | "
            f"{o['maxrss_mb']:.0f} | {f['maxrss_mb']:.0f} | {o['maxrss_mb'] / f['maxrss_mb']:.1f} |"
        )
    if len(results) > 1:
        rows = [r["rows"] for r in results]
        slopes = {
            step: (
                bench_ingest._slope(rows, [r["steps"][step]["cpu_s"] for r in results]),
                bench_ingest._slope(rows, [r["steps"][step]["maxrss_mb"] for r in results]),
            )
            for step in bench_ingest.LONG_STEPS
        }
        lines += [
            "",
            f"Log-log slope over rows: ours CPU {slopes['long_ours'][0]:.2f}, peak memory "
            f"{slopes['long_ours'][1]:.2f}; floor CPU {slopes['long_floor'][0]:.2f}, peak memory "
            f"{slopes['long_floor'][1]:.2f}.",
        ]
    dask = [r for r in results if "dask" in r]
    if dask:
        lines += [
            "",
            "The Dask engine (`--dask`): `read_units(file, engine='dask')` on a `LocalCluster` of "
            "2 worker processes of one thread each on this machine, against the local engine in "
            "the same process; the workers run the streaming query on slices of 2 million rows "
            "(`partition_rows`). Its CPU is this process's plus the workers'; the cluster's "
            "start-up is not included. The unit table and the ingest report are compared, "
            "exactly, with the local engine's.",
            "",
            "| rows | local s | local CPU s | Dask s | Dask CPU s | of which workers | wall / local "
            "| CPU / local | start-up s | same units and report |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        ]
        for r in dask:
            d = r["dask"]
            lines.append(
                f"| {r['rows']:,} | {d['local_seconds']:.2f} | {d['local_cpu_s']:.2f} | "
                f"{d['dask_seconds']:.2f} | {d['dask_cpu_s']:.2f} | {d['dask_worker_cpu_s']:.2f} "
                f"| {d['dask_seconds'] / d['local_seconds']:.2f} | "
                f"{d['dask_cpu_s'] / d['local_cpu_s']:.2f} | {d['startup_seconds']:.1f} | "
                f"{'yes' if d['equal'] else 'no'} |"
            )
    return lines + ["", *LONG_HISTORY, ""]


#: How the long-table numbers came to be (kept beside each new table).
LONG_HISTORY = [
    "Before issue 47's rewrite, the same benchmark gave 9.76 CPU s at 5M rows (47.8x the floor) "
    "and 109.0 CPU s, 1412 MiB at 20M (163x; partition hashing in Python, a file over 2M rows "
    "read again per bucket); with a streaming pass that found duplicates with `shift` in "
    "queries of 4M rows and read the distinct names in a pass of their own, 6.4x to 10.8x the "
    "floor from 1M to 100M rows and 2.8 GB at 100M. The pass measured above groups by the "
    "columns that vary within a file only, proves whole-number items distinct by `item - row` "
    "(no `shift`), checks the names from its own groups, and runs as one query.",
]


def _replace_long_section(page: str, section: list[str]) -> str:
    """``page`` with its long-table section (up to the next ``## `` heading) replaced."""
    head = "### Scaling: one long table per size"
    start = page.index(head)
    end = page.find("\n## ", start)
    end = len(page) if end < 0 else end + 1
    return page[:start] + "\n".join(section).rstrip() + "\n\n" + page[end:]


def _ingest_section(results: list[dict], command: str) -> list[str]:
    lines = [
        "## Ingest: files to the unit table",
        "",
        "Generated DOVE_Lite-shaped folders (80 files: 4 models x 2 shot settings x 10 "
        "benchmarks; 0.5% duplicate rows and 0.2% `sample_index == -1` rows planted), measured "
        "by `benchmarks/bench_ingest.py`, each step in its own process. `floor` is a bare "
        "`pl.scan_parquet(files).group_by(<unit columns>).agg(mean, len)` on the streaming "
        "engine (no validation, no de-duplication); `floor_dedup` adds the DOVE quirks in bare "
        "polars; `ours` is `evalstats.read_units` (what `evalstats ingest` runs); `ours_lazy` is "
        "`read_dove` + `to_units(...).collect(engine='streaming')`; `pandas` reads the same "
        "columns and groups (not the same answer: no de-duplication), `pandas_dedup` computes "
        "the same answer the DOVE authors' way (`drop_duplicates`, then `groupby`). CPU time is "
        "user + system of the process, steadier than wall time on a shared machine; peak RSS "
        "includes the imports (`baseline`).",
        "",
        f"Command: `{command}`",
        "",
    ]
    for result in results:
        res = result["steps"]
        floor = res["floor"]
        planted = result["planted"]
        lines += [
            f"### {result['rows']:,} rows ({planted['mib']:.0f} MiB of Parquet)",
            "",
            "| step | wall s | CPU s | rows/s (wall) | peak RSS MiB | CPU / floor | wall / floor |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for name, r in res.items():
            if name == "baseline":
                lines.append(
                    f"| baseline (imports) | {r['seconds']:.2f} | {r['cpu_s']:.2f} | | "
                    f"{r['maxrss_mb']:.0f} | | |"
                )
                continue
            lines.append(
                f"| {name} | {r['seconds']:.2f} | {r['cpu_s']:.2f} | "
                f"{result['rows'] / r['seconds']:,.0f} | {r['maxrss_mb']:.0f} | "
                f"{r['cpu_s'] / floor['cpu_s']:.2f} | {r['seconds'] / floor['seconds']:.2f} |"
            )
        ours = res.get("ours")
        if ours is not None:
            lines.append("")
            for ref in ("pandas", "pandas_dedup"):
                if ref in res:
                    lines.append(
                        f"- `{ref}` / `ours`: CPU {res[ref]['cpu_s'] / ours['cpu_s']:.1f}x, "
                        f"wall {res[ref]['seconds'] / ours['seconds']:.1f}x, peak memory "
                        f"{res[ref]['maxrss_mb'] / ours['maxrss_mb']:.1f}x"
                    )
        lines.append("")
    by_rows = [(r["rows"], r["steps"].get("ours")) for r in results if "ours" in r["steps"]]
    if by_rows:
        lines += [
            "Peak memory of `ours` by rows: "
            + ", ".join(f"{n:,} rows: {o['maxrss_mb']:.0f} MiB" for n, o in by_rows)
            + " (set by the largest partition, here one file, and the unit table; not by the "
            "number of rows: the 20M-row files are four times larger).",
            "",
        ]
    return lines


def _analysis_section(measured: dict, baseline: float) -> list[str]:
    lines = [
        "## Analyses",
        "",
        "Simulated data (`evalstats.simulate.observations`, seed 0) grown along one axis at a "
        "time from 4 models x 20 variants (5 templates x 4 separators) x 100 items x 5 runs "
        f"(40,000 observation rows, 400 unit rows). Each cell is wall seconds / peak RSS MiB of "
        f"the process (imports alone: {baseline:.0f} MiB). Inputs: `obs` is the observation "
        "table, `units` the unit table (one row per model, variant and run).",
        "",
    ]
    for axis, (param, factors) in AXES.items():
        sizes = [BASE[param] * k for k in factors]
        head = " | ".join(f"{param}={s}" for s in sizes)
        lines += [
            f"### Growing {axis}",
            "",
            f"| analysis | input | options | {head} |",
            "|---|---|---|" + "---:|" * len(sizes),
        ]
        for name, (_, table, options) in ANALYSES.items():
            cells = " | ".join(
                f"{m['seconds']:.2f} s / {m['maxrss_mb']:.0f}" for m in measured[name][axis]
            )
            lines.append(f"| `{name}` | {table} | {options} | {cells} |")
        rows = measured["to_units"][axis]
        lines += [
            "",
            "Observation rows: " + ", ".join(f"{m['obs_rows']:,}" for m in rows) + ".",
            "",
        ]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ingest-rows", type=int, nargs="+", default=[1_000_000, 5_000_000])
    parser.add_argument(
        "--ingest-json",
        type=Path,
        default=None,
        help="results of `bench_ingest.py --json` to use instead of running the ingest benchmark",
    )
    parser.add_argument(
        "--ingest-long-json",
        type=Path,
        default=None,
        help="results of `bench_ingest.py --shape long --json` (issue 47's scaling table)",
    )
    parser.add_argument(
        "--only-long",
        action="store_true",
        help="with --ingest-long-json: rewrite only the long-table section of the page in place",
    )
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--child", nargs=2, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_child(*args.child)))
        return 0

    sys.path.insert(0, str(HERE))
    import bench_ingest

    if args.only_long:
        if not args.ingest_long_json:
            parser.error("--only-long needs --ingest-long-json")
        long = json.loads(args.ingest_long_json.read_text())
        command = (
            "nice -n 10 python benchmarks/bench_ingest.py --shape long --rows "
            + " ".join(str(r["requested"]) for r in long)
            + (" --dask" if any("dask" in r for r in long) else "")
        )
        args.out.write_text(
            _replace_long_section(args.out.read_text(), _long_section(long, command))
        )
        print(f"wrote the long-table section of {args.out}", file=sys.stderr)
        return 0
    if args.ingest_json:
        ingest = json.loads(args.ingest_json.read_text())
        command = "python benchmarks/bench_ingest.py --rows " + " ".join(
            str(r.get("requested", r["rows"])) for r in ingest
        )
    else:
        ingest = [bench_ingest.bench(n) for n in args.ingest_rows]
        command = "python benchmarks/bench_ingest.py --rows " + " ".join(
            str(n) for n in args.ingest_rows
        )
    measured: dict = {}
    for name in ANALYSES:
        measured[name] = {}
        for axis in AXES:
            print(f"{name} / {axis}", file=sys.stderr)
            measured[name][axis] = _run_child(name, axis)
    baseline = _baseline()
    import polars  # noqa: F401 - only its version, after the children ran

    lines = [
        "# Performance",
        "",
        "<!-- written by benchmarks/performance.py; do not edit by hand -->",
        "",
        "How time and memory grow with rows, variants and models, for the ingest and for every "
        "analysis. Written by `python benchmarks/performance.py"
        + (f" --ingest-json {args.ingest_json.name}" if args.ingest_json else "")
        + f"` on {datetime.date.today().isoformat()}: {platform.machine()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}, polars "
        f"{sys.modules['polars'].__version__}. The machine is shared, so wall times carry "
        "noise; ratios from the same run (CPU / floor) are the steadier figures. "
        "See [scale.md](scale.md) for large dumps and Dask clusters.",
        "",
    ]
    lines += install_section()
    lines += _ingest_section(ingest, command)
    if args.ingest_long_json:
        long = json.loads(args.ingest_long_json.read_text())
        lines += _long_section(
            long,
            "nice -n 10 python benchmarks/bench_ingest.py --shape long --rows "
            + " ".join(str(r["requested"]) for r in long)
            + (" --dask" if any("dask" in r for r in long) else ""),
        )
    lines += _analysis_section(measured, baseline)
    args.out.write_text("\n".join(lines).rstrip() + "\n")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
