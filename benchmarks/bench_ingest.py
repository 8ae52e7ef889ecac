"""Ingest benchmark: DOVE_Lite-shaped folders to the unit table, against polars and pandas.

Generates DOVE_Lite-shaped Parquet of each requested size (default 1, 5 and 20 million rows) in
the published layout ``{model}/{language}/{N}_shot/{benchmark}.parquet`` (temp folder unless
``--dir``), with planted duplicates and ``sample_index == -1`` rows, then measures, each step in
its own subprocess so that peak memory (``ru_maxrss``) belongs to that step alone:

- ``floor``: a bare ``pl.scan_parquet(...).group_by(<unit columns>).agg(mean score, count)``
  collected with the streaming engine: the least work any aggregation must do (the issue's
  floor; no validation, no de-duplication);
- ``floor_dedup``: the same plus the quirk handling in bare polars (drop ``sample_index == -1``,
  ``unique`` on the authors' key keeping the first row): the least work for the same answer;
- ``ours``: ``evalstats.read_units(folder)``, the one-pass partitioned path that
  ``evalstats ingest`` runs (accounting, de-duplication, unit sums; engine="polars");
- ``ours_lazy``: ``read_dove(folder)`` then ``to_units(obs).collect(engine="streaming")``, the
  lazy observation-table path (one accounting pass, then a second pass to aggregate);
- ``pandas``: ``pd.read_parquet`` of the same columns, file by file, then ``groupby`` mean and
  count (the issue's pandas reference; no de-duplication, so not the same answer);
- ``pandas_dedup``: the same answer in pandas, as the DOVE authors compute it: drop
  ``sample_index == -1``, ``drop_duplicates`` on their key (first row kept), then ``groupby``;
- ``baseline``: imports only, to read the memory figures against.

The data are generated in a subprocess too, and the parent imports neither numpy nor polars:
on Linux a child's ``ru_maxrss`` starts from its parent's resident size, so the parent must stay
small. Prints rows/s, peak RSS, CPU seconds (user + system; steadier than wall time on a shared
machine) and the ratios to ``floor`` from the same run, then checks the targets of issue 9
(peak memory under 2 GiB, CPU within 1.5x of the floor, at least 10x faster than pandas).

    python benchmarks/bench_ingest.py                          # 1M, 5M and 20M rows
    python benchmarks/bench_ingest.py --rows 200000            # quick
    python benchmarks/bench_ingest.py --rows 5000000 --json out.json

``--shape long`` measures issue 47's scaling instead: one Parquet file per size holding a long
table of 20 models x 50 variants x N items with 0/1 scores (sorted by model, variant, item, as
dumps are written), ``evalstats ingest`` (``read_units`` then ``write_parquet``) against the floor
``scan_parquet -> group_by(model, variant) -> sink_parquet`` (same columns, same units), the two
interleaved ``--repeat`` times in fresh processes (the smallest CPU of each is kept); it prints
the ratio at each size and the log-log slope of our CPU (and peak memory) over rows:

    nice -n 10 python benchmarks/bench_ingest.py --shape long --rows 1000000 5000000 20000000

``--dask`` (with ``--shape long``) also runs ``read_units(..., engine="dask")`` on a
``LocalCluster`` of 2 worker processes (one thread each) on each table, checks that its unit
table and ingest report equal the local engine's (run in the same process), and prints its
overhead: wall time, and CPU summed over this process and the workers (cluster start-up
excluded, reported apart):

    nice -n 10 python benchmarks/bench_ingest.py --shape long --rows 20000000 --dask
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODELS = (
    "Llama-3.2-1B-Instruct",
    "OLMoE-1B-7B-0924-Instruct",
    "Mistral-7B-Instruct-v0.3",
    "Llama-3.2-3B-Instruct",
)
SHOTS = (0, 5)
BENCHMARKS = tuple(f"mmlu.subject_{i:02d}" for i in range(10))
TEMPLATES = tuple(f"MultipleChoiceTemplatesInstructions{i}" for i in range(10))
SEPARATORS = ("\n", "; ", " | ", ", ", " OR ")
ENUMERATORS = ("capitals", "lowercase", "numbers", "roman", "greek", "keyboard")
ORDERS = (
    "none",
    "shortest_to_longest",
    "longest_to_shortest",
    "alphabetical",
    "reverse_alphabetical",
    "correct_first",
    "correct_last",
    "random",
)
KEYS = ["model", "dataset", "template", "separator", "enumerator", "choices_order", "shots"]
#: The unit table's key columns that are file columns (language comes from the path, run is 0).
UNIT_KEYS = [*KEYS, "quantization"]
STEPS = ("baseline", "floor", "floor_dedup", "ours", "ours_lazy", "pandas", "pandas_dedup")
LONG_STEPS = ("long_floor", "long_ours")
LONG_MODELS = 20
LONG_VARIANTS = 50
N_ITEMS = 100
DUP_RATE = 0.005
UNKNOWN_RATE = 0.002


def _file_frame(rng, model: str, shots: int, dataset: str, n_rows: int):
    import numpy as np
    import polars as pl

    n_var = max(1, n_rows // N_ITEMS)
    space = len(TEMPLATES) * len(SEPARATORS) * len(ENUMERATORS) * len(ORDERS)
    combos = rng.choice(space, size=min(n_var, space), replace=False)
    t, rest = np.divmod(combos, len(SEPARATORS) * len(ENUMERATORS) * len(ORDERS))
    s, rest = np.divmod(rest, len(ENUMERATORS) * len(ORDERS))
    e, o = np.divmod(rest, len(ORDERS))
    variants = pl.DataFrame(
        {
            "template": np.array(TEMPLATES)[t],
            "separator": np.array(SEPARATORS)[s],
            "enumerator": np.array(ENUMERATORS)[e],
            "choices_order": np.array(ORDERS)[o],
            "p": rng.uniform(0.2, 0.9, len(combos)),
        }
    )
    items = pl.DataFrame(
        {
            "sample_index": np.arange(N_ITEMS, dtype=np.int64),
            "question": [
                f"The following are multiple choice questions about {dataset}. Question {i}: "
                + "which of these statements is most accurate given the passage above? " * 3
                + "A. one B. two C. three D. four Answer:"
                for i in range(N_ITEMS)
            ],
            "ground_truth": [f"{'ABCD'[i % 4]}. option text" for i in range(N_ITEMS)],
        }
    )
    df = variants.join(items, how="cross")
    n = df.height
    correct = rng.random(n) < df["p"].to_numpy()
    df = (
        df.with_columns(
            pl.Series("score", correct.astype(np.float64)),
            pl.Series("cumulative_logprob", -rng.gamma(2.0, 3.0, n)),
        )
        .with_columns(
            pl.when(pl.col("score") == 1)
            .then(pl.col("ground_truth"))
            .otherwise(pl.lit("B. option text"))
            .alias("closest_answer"),
        )
        .with_columns(
            pl.concat_str(
                [
                    pl.lit("The answer is "),
                    pl.col("closest_answer"),
                    pl.lit(" because the passage says so."),
                ]
            ).alias("generated_text"),
            pl.lit(model).alias("model"),
            pl.lit("None").alias("quantization"),
            pl.lit(dataset).alias("dataset"),
            pl.lit(shots, dtype=pl.Int64).alias("shots"),
        )
    )
    unknown = rng.random(n) < UNKNOWN_RATE
    df = df.with_columns(
        pl.when(pl.Series(unknown)).then(-1).otherwise(pl.col("sample_index")).alias("sample_index")
    )
    dups = df[np.sort(rng.choice(n, size=int(n * DUP_RATE), replace=False)).tolist()]
    df = pl.concat([df, dups])
    h = pl.int_range(pl.len(), dtype=pl.UInt64)
    df = df.with_columns(
        pl.concat_str([(h + k).hash(seed=k).cast(pl.String).str.zfill(20) for k in range(3)])
        .str.slice(0, 64)
        .alias("evaluation_id")
    )
    return df.select(
        "evaluation_id",
        "dataset",
        "sample_index",
        "model",
        "quantization",
        "question",
        "shots",
        "template",
        "separator",
        "enumerator",
        "choices_order",
        "generated_text",
        "cumulative_logprob",
        "closest_answer",
        "ground_truth",
        "score",
    )


def generate(folder: Path, rows: int, seed: int = 0) -> dict[str, int]:
    """Write about ``rows`` rows (duplicates included) in the DOVE_Lite layout under ``folder``."""
    import numpy as np
    import polars as pl

    rng = np.random.default_rng(seed)
    cells = [(m, s, b) for m in MODELS for s in SHOTS for b in BENCHMARKS]
    per_file = max(N_ITEMS, round(rows / len(cells) / (1 + DUP_RATE)))
    total = dups = unknown = 0
    for model, shots, dataset in cells:
        df = _file_frame(rng, model, shots, dataset, per_file)
        path = folder / model / "en" / f"{shots}_shot" / f"{dataset}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        df.write_parquet(path)
        total += df.height
        unknown += int((df["sample_index"] == -1).sum())
        known = df.filter(pl.col("sample_index") != -1)
        dups += known.height - known.unique(["sample_index", *KEYS]).height
    return {"rows": total, "files": len(cells), "duplicate": dups, "unknown_item": unknown}


def generate_long(path: Path, rows: int, seed: int = 0) -> dict[str, int]:
    """One Parquet file: LONG_MODELS x LONG_VARIANTS x N items, 0/1 scores, in written order."""
    import numpy as np
    import polars as pl

    n_items = max(1, rows // (LONG_MODELS * LONG_VARIANTS))
    n_units = LONG_MODELS * LONG_VARIANTS
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.2, 0.9, n_units)
    unit = pl.int_range(pl.len(), dtype=pl.Int64) // n_items
    lf = (
        pl.LazyFrame({"i": pl.Series(np.arange(n_units * n_items, dtype=np.int64))})
        .with_columns(
            ("model_" + (unit // LONG_VARIANTS).cast(pl.String).str.zfill(2)).alias("model"),
            ("variant_" + (unit % LONG_VARIANTS).cast(pl.String).str.zfill(2)).alias("variant"),
            (pl.col("i") % n_items).alias("item"),
        )
        .drop("i")
    )
    df = lf.collect()
    u = np.repeat(p, n_items)
    df = df.with_columns(pl.Series("score", (rng.random(df.height) < u).astype(np.float64)))
    df.write_parquet(path)
    return {"rows": df.height, "files": 1, "units": n_units, "items": n_items}


# --- measured steps (each runs in its own subprocess) ------------------------------------------


def _cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def _step(name: str, folder: Path, rows: int = 0, seed: int = 0) -> dict:
    # imports first and outside the timers: every measured step pays the same import cost,
    # which the ``baseline`` step reports on its own
    t_start, cpu_start = time.perf_counter(), _cpu()
    import polars as pl

    from evalstats.aggregate import read_units, to_units
    from evalstats.io.dove import read_dove

    out: dict = {"step": name}
    t0, cpu0 = time.perf_counter(), _cpu()
    if name == "generate":
        out.update(generate(folder, rows, seed=seed))
        out["mib"] = sum(p.stat().st_size for p in folder.rglob("*.parquet")) / 2**20
        out["polars"] = pl.__version__
        out["threads"] = pl.thread_pool_size()
    elif name == "long_generate":
        out.update(generate_long(folder / "long.parquet", rows, seed=seed))
        out["mib"] = (folder / "long.parquet").stat().st_size / 2**20
        out["polars"] = pl.__version__
        out["threads"] = pl.thread_pool_size()
    elif name == "long_floor":
        (
            pl.scan_parquet(folder / "long.parquet")
            .group_by("model", "variant")
            .agg(pl.col("score").mean(), pl.len().alias("n_items"))
            .sink_parquet(folder / "floor_units.parquet")
        )
        out["units"] = (
            pl.scan_parquet(folder / "floor_units.parquet").select(pl.len()).collect().item()
        )
    elif name == "long_ours":
        units, report = read_units(folder / "long.parquet", progress=False)
        units.write_parquet(folder / "our_units.parquet")
        out["units"] = units.height
        out["rows_read"] = report.rows_read
        out["rows_kept"] = report.rows_kept
        out["set_aside"] = dict(report.set_aside)
    elif name == "long_dask":
        out.update(_dask_step(folder / "long.parquet"))
    elif name == "baseline":
        t0, cpu0 = t_start, cpu_start
    elif name in ("floor", "floor_dedup"):
        files = sorted(str(p) for p in folder.rglob("*.parquet"))
        lf = pl.scan_parquet(files)
        if name == "floor_dedup":  # the same semantic work as read_dove, in bare polars
            lf = lf.filter(pl.col("sample_index") != -1).unique(
                ["sample_index", *KEYS], keep="first", maintain_order=True
            )
        units = (
            lf.group_by(UNIT_KEYS)
            .agg(pl.col("score").mean(), pl.len().alias("n_items"))
            .collect(engine="streaming")
        )
        out["units"] = units.height
    elif name in ("pandas", "pandas_dedup"):
        import pandas as pd

        t0, cpu0 = time.perf_counter(), _cpu()  # pandas' import is not the work
        files = sorted(folder.rglob("*.parquet"))
        cols = [*UNIT_KEYS, "score"] + (["sample_index"] if name == "pandas_dedup" else [])
        df = pd.concat([pd.read_parquet(f, columns=cols) for f in files], ignore_index=True)
        if name == "pandas_dedup":
            df = df[df["sample_index"] != -1].drop_duplicates(["sample_index", *KEYS])
        units = df.groupby(UNIT_KEYS, sort=False)["score"].agg(["mean", "count"])
        out["units"] = len(units)
    elif name == "ours":
        units, report = read_units(folder, format="dove", progress=False)
        out["units"] = units.height
        out["rows_read"] = report.rows_read
        out["rows_kept"] = report.rows_kept
        out["set_aside"] = dict(report.set_aside)
    else:  # ours_lazy
        obs, report = read_dove(folder)
        out["read_s"] = time.perf_counter() - t0
        units = to_units(obs, check_values=False).collect(engine="streaming")
        out["units"] = units.height
        out["rows_read"] = report.rows_read
        out["set_aside"] = dict(report.set_aside)
    out["seconds"] = time.perf_counter() - t0
    out["cpu_s"] = _cpu() - cpu0
    out["process_cpu_s"] = _cpu()  # imports and interpreter start included
    out["maxrss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def _dask_step(path: Path) -> dict:
    """Local engine, then the Dask engine on a 2-worker LocalCluster: equality and overhead."""
    import distributed
    import psutil
    from polars.testing import assert_frame_equal

    from evalstats.aggregate import read_units

    def worker_cpu(cluster) -> float:
        total = 0.0
        for w in cluster.workers.values():
            proc = psutil.Process(w.process.process.pid)
            for p in [proc, *proc.children(recursive=True)]:
                t = p.cpu_times()
                total += t.user + t.system
        return total

    t0, c0 = time.perf_counter(), _cpu()
    local, local_report = read_units(path, progress=False)
    out = {"local_seconds": time.perf_counter() - t0, "local_cpu_s": _cpu() - c0}
    t0 = time.perf_counter()
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=40,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        client.run(lambda: None)  # workers up
        out["startup_seconds"] = time.perf_counter() - t0
        t0, c0, w0 = time.perf_counter(), _cpu(), worker_cpu(cluster)
        remote, remote_report = read_units(path, engine="dask", scheduler=client, progress=False)
        out["dask_seconds"] = time.perf_counter() - t0
        out["dask_client_cpu_s"] = _cpu() - c0
        out["dask_worker_cpu_s"] = worker_cpu(cluster) - w0
    out["dask_cpu_s"] = out["dask_client_cpu_s"] + out["dask_worker_cpu_s"]
    # the same unit table and report (0/1 scores: sums exact whatever the order)
    assert_frame_equal(remote, local, check_exact=True)
    assert remote_report.to_dict() == local_report.to_dict()
    out["equal"] = True
    out["units"] = remote.height
    out["rows_read"] = remote_report.rows_read
    return out


def _run_step(name: str, folder: Path, rows: int = 0, seed: int = 0) -> dict:
    proc = subprocess.run(
        [
            sys.executable,
            str(Path(__file__).resolve()),
            "--step",
            name,
            "--dir",
            str(folder),
            "--rows",
            str(rows),
            "--seed",
            str(seed),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"step {name} failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def bench(
    rows: int, folder: Path | None = None, seed: int = 0, steps: tuple[str, ...] = STEPS
) -> dict:
    """Generate ``rows`` rows (in ``folder`` or a temp folder, removed after) and run ``steps``."""
    tmp = None
    if folder is None:
        tmp = tempfile.mkdtemp(prefix="bench_ingest_")
        folder = Path(tmp)
    try:
        planted = _run_step("generate", folder, rows, seed)
        res = {name: _run_step(name, folder) for name in steps}
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    ours = res.get("ours")
    if ours is not None:  # the benchmark is only worth its numbers if the answer is right
        assert ours["rows_read"] == planted["rows"], (ours["rows_read"], planted["rows"])
        assert ours["set_aside"] == {
            "duplicate": planted["duplicate"],
            "unknown_item": planted["unknown_item"],
        }, ours["set_aside"]
        assert ours["units"] == res["floor"]["units"]
    return {"rows": planted["rows"], "requested": rows, "planted": planted, "steps": res}


def bench_long(
    rows: int, folder: Path | None = None, seed: int = 0, repeat: int = 2, dask: bool = False
) -> dict:
    """Generate a long table of ``rows`` rows, run floor and ours interleaved ``repeat`` times.

    With ``dask``, then the Dask engine against the local one (:func:`_dask_step`).
    """
    tmp = None
    if folder is None:
        tmp = tempfile.mkdtemp(prefix="bench_ingest_long_")
        folder = Path(tmp)
    folder.mkdir(parents=True, exist_ok=True)
    try:
        planted = _run_step("long_generate", folder, rows, seed)
        runs: dict[str, list[dict]] = {name: [] for name in LONG_STEPS}
        for _ in range(repeat):
            for name in LONG_STEPS:
                runs[name].append(_run_step(name, folder))
        dask_run = _run_step("long_dask", folder) if dask else None
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    ours = runs["long_ours"][0]
    assert ours["rows_read"] == planted["rows"] == ours["rows_kept"], (ours, planted)
    assert ours["units"] == runs["long_floor"][0]["units"] == planted["units"]
    best = {
        name: {
            "cpu_s": min(r["cpu_s"] for r in rs),
            "process_cpu_s": min(r["process_cpu_s"] for r in rs),
            "seconds": min(r["seconds"] for r in rs),
            "maxrss_mb": min(r["maxrss_mb"] for r in rs),
            "cpu_all": [r["cpu_s"] for r in rs],
        }
        for name, rs in runs.items()
    }
    out = {"rows": planted["rows"], "requested": rows, "planted": planted, "steps": best}
    if dask_run is not None:
        out["dask"] = dask_run
    return out


def _slope(xs: list[float], ys: list[float]) -> float:
    import math

    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    num = sum((a - mx) * (b - my) for a, b in zip(lx, ly))
    den = sum((a - mx) ** 2 for a in lx)
    return num / den if den else float("nan")


def _print_long(results: list[dict]) -> None:
    print(
        f"\nlong table: {LONG_MODELS} models x {LONG_VARIANTS} variants x N items, one file "
        "(CPU = user + sys, smallest of the interleaved runs; RSS = peak of the process)"
    )
    print(
        f"{'rows':>12}{'MiB':>7}{'ours cpu s':>12}{'floor cpu s':>13}{'ratio':>8}"
        f"{'ratio with imports':>20}{'ours MiB':>10}{'floor MiB':>11}{'mem ratio':>11}"
    )
    for r in results:
        o, f = r["steps"]["long_ours"], r["steps"]["long_floor"]
        print(
            f"{r['rows']:>12,}{r['planted']['mib']:>7.1f}{o['cpu_s']:>12.2f}{f['cpu_s']:>13.2f}"
            f"{o['cpu_s'] / f['cpu_s']:>8.2f}{o['process_cpu_s'] / f['process_cpu_s']:>20.2f}"
            f"{o['maxrss_mb']:>10.0f}{f['maxrss_mb']:>11.0f}"
            f"{o['maxrss_mb'] / f['maxrss_mb']:>11.2f}"
        )
    for r in results:  # issue 47's targets at each size
        o, f = r["steps"]["long_ours"], r["steps"]["long_floor"]
        cpu_ok = o["cpu_s"] <= 3 * f["cpu_s"]
        mem_ok = o["maxrss_mb"] <= 3 * f["maxrss_mb"] or o["maxrss_mb"] < 1024
        print(
            f"  {r['rows']:,} rows: {'yes' if cpu_ok else 'NO '} CPU within 3x the floor, "
            f"{'yes' if mem_ok else 'NO '} peak memory within 3x the floor's or under 1 GB"
        )
    if len(results) > 1:
        rows = [r["rows"] for r in results]
        slope = _slope(rows, [r["steps"]["long_ours"]["cpu_s"] for r in results])
        print(f"  {'yes' if slope <= 1.1 else 'NO '} CPU slope at most 1.1 ({slope:.2f})")
        for step in LONG_STEPS:
            cpu = [r["steps"][step]["cpu_s"] for r in results]
            mem = [r["steps"][step]["maxrss_mb"] for r in results]
            print(
                f"log-log slope over rows, {step}: CPU {_slope(rows, cpu):.2f}, "
                f"peak memory {_slope(rows, mem):.2f}"
            )


def _print_dask(results: list[dict]) -> None:
    rows = [r for r in results if "dask" in r]
    if not rows:
        return
    print(
        "\nDask engine (LocalCluster, 2 worker processes x 1 thread) against the local engine, "
        "same process; CPU of the Dask run = this process + the workers"
    )
    print(
        f"{'rows':>12}{'local s':>9}{'local cpu':>11}{'dask s':>8}{'dask cpu':>10}"
        f"{'(workers)':>10}{'wall x':>8}{'cpu x':>7}{'start-up s':>12}  same units and report"
    )
    for r in rows:
        d = r["dask"]
        print(
            f"{r['rows']:>12,}{d['local_seconds']:>9.2f}{d['local_cpu_s']:>11.2f}"
            f"{d['dask_seconds']:>8.2f}{d['dask_cpu_s']:>10.2f}{d['dask_worker_cpu_s']:>10.2f}"
            f"{d['dask_seconds'] / d['local_seconds']:>8.2f}"
            f"{d['dask_cpu_s'] / d['local_cpu_s']:>7.2f}{d['startup_seconds']:>12.2f}"
            f"  {'yes' if d['equal'] else 'NO'}"
        )


def _print(result: dict) -> None:
    planted, res = result["planted"], result["steps"]
    print(
        f"\n{planted['rows']:,} rows in {planted['files']} files ({planted['mib']:.0f} MiB "
        f"parquet), generated in {planted['seconds']:.1f} s; planted {planted['duplicate']:,} "
        f"duplicates, {planted['unknown_item']:,} -1 indices; polars {planted['polars']}, "
        f"threads {planted['threads']}"
    )
    floor = res["floor"]
    print(
        f"{'step':<13}{'wall s':>8}{'cpu s':>8}{'rows/s':>13}{'peak RSS MiB':>14}"
        f"{'wall/floor':>12}{'cpu/floor':>11}"
    )
    for name, r in res.items():
        if name == "baseline":
            print(
                f"{name:<13}{r['seconds']:>8.2f}{r['cpu_s']:>8.2f}{'':>13}{r['maxrss_mb']:>14.0f}"
            )
            continue
        print(
            f"{name:<13}{r['seconds']:>8.2f}{r['cpu_s']:>8.2f}"
            f"{planted['rows'] / r['seconds']:>13,.0f}{r['maxrss_mb']:>14.0f}"
            f"{r['seconds'] / floor['seconds']:>12.2f}{r['cpu_s'] / floor['cpu_s']:>11.2f}"
        )
    ours = res.get("ours")
    if ours is None:
        return
    checks = [("peak memory under 2 GiB", ours["maxrss_mb"] < 2048, f"{ours['maxrss_mb']:.0f} MiB")]
    checks.append(
        (
            "CPU within 1.5x of the floor",
            ours["cpu_s"] <= 1.5 * floor["cpu_s"],
            f"{ours['cpu_s'] / floor['cpu_s']:.2f}x (wall {ours['seconds'] / floor['seconds']:.2f}x)",
        )
    )
    for ref in ("pandas", "pandas_dedup"):
        if ref in res:
            pd_ = res[ref]
            checks.append(
                (
                    f"at least 10x faster than {ref}",
                    pd_["cpu_s"] >= 10 * ours["cpu_s"],
                    f"{ref}/ours CPU {pd_['cpu_s'] / ours['cpu_s']:.1f}x, wall "
                    f"{pd_['seconds'] / ours['seconds']:.1f}x",
                )
            )
    for what, ok, detail in checks:
        print(f"  {'yes' if ok else 'NO ':<4}{what}: {detail}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 5_000_000, 20_000_000])
    parser.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="where to write the data (default: a temp folder, removed after)",
    )
    parser.add_argument("--steps", nargs="+", default=list(STEPS), choices=STEPS)
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    parser.add_argument("--step", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--shape", choices=("dove", "long"), default="dove")
    parser.add_argument("--repeat", type=int, default=2, help="interleaved runs (--shape long)")
    parser.add_argument(
        "--dask", action="store_true", help="also the Dask engine on 2 local workers (--shape long)"
    )
    args = parser.parse_args(argv)
    if args.step:
        print(json.dumps(_step(args.step, args.dir, args.rows[0], args.seed)))
        return 0
    if args.shape == "long":
        results = []
        for rows in args.rows:
            folder = None if args.dir is None else args.dir / f"long_{rows}"
            results.append(bench_long(rows, folder, args.seed, args.repeat, args.dask))
            _print_long(results[-1:])
        _print_long(results)
        _print_dask(results)
        if args.json:
            args.json.write_text(json.dumps(results, indent=1))
        return 0
    if "floor" not in args.steps:
        args.steps.insert(0, "floor")
    results = []
    for rows in args.rows:
        folder = None if args.dir is None else args.dir / f"rows_{rows}"
        result = bench(rows, folder, args.seed, tuple(args.steps))
        _print(result)
        results.append(result)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
