"""Ingest benchmark: read_dove + to_units on a generated DOVE_Lite-shaped dataset.

Generates ``--rows`` rows (default 5 million) of DOVE_Lite-shaped Parquet in the published
layout ``{model}/{language}/{N}_shot/{benchmark}.parquet`` (temp folder unless ``--dir``), with
planted duplicates and ``sample_index == -1`` rows, then measures, each step in its own
subprocess so that peak memory (``ru_maxrss``) belongs to that step alone:

- ``floor``: a bare ``pl.scan_parquet(...).group_by(<unit keys>).agg(mean score, count)``
  collected with the streaming engine: the least work any loader must do;
- ``floor_dedup``: the same plus the quirk handling in bare polars (drop ``sample_index == -1``,
  ``unique`` on the authors' key keeping the first row): the least work for the same answer;
- ``ours``: ``read_dove(folder)`` (its accounting passes) then
  ``to_units(obs, check_values=False).collect(engine="streaming")``, as ``evalstats ingest`` does;
- ``ours_checked``: the same with ``to_units``'s default score validation pass;
- ``baseline``: imports only, to read the memory figures against.

The data are generated in a subprocess too, and the parent imports neither numpy nor polars:
on Linux a child's ``ru_maxrss`` starts from its parent's resident size, so the parent must stay
small. Prints rows/s, peak RSS, CPU seconds (user + system; steadier than wall time on a shared
machine) and the ratios to ``floor`` from the same run.

    python benchmarks/bench_ingest.py                 # 5,000,000 rows
    python benchmarks/bench_ingest.py --rows 200000   # quick
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

MODELS = ("Llama-3.2-1B-Instruct", "OLMoE-1B-7B-0924-Instruct", "Mistral-7B-Instruct-v0.3",
          "Llama-3.2-3B-Instruct")
SHOTS = (0, 5)
BENCHMARKS = tuple(f"mmlu.subject_{i:02d}" for i in range(10))
TEMPLATES = tuple(f"MultipleChoiceTemplatesInstructions{i}" for i in range(10))
SEPARATORS = ("\n", "; ", " | ", ", ", " OR ")
ENUMERATORS = ("capitals", "lowercase", "numbers", "roman", "greek", "keyboard")
ORDERS = ("none", "shortest_to_longest", "longest_to_shortest", "alphabetical",
          "reverse_alphabetical", "correct_first", "correct_last", "random")
KEYS = ["model", "dataset", "template", "separator", "enumerator", "choices_order", "shots"]
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
    variants = pl.DataFrame({
        "template": np.array(TEMPLATES)[t], "separator": np.array(SEPARATORS)[s],
        "enumerator": np.array(ENUMERATORS)[e], "choices_order": np.array(ORDERS)[o],
        "p": rng.uniform(0.2, 0.9, len(combos)),
    })
    items = pl.DataFrame({
        "sample_index": np.arange(N_ITEMS, dtype=np.int64),
        "question": [f"The following are multiple choice questions about {dataset}. Question {i}: "
                     + "which of these statements is most accurate given the passage above? " * 3
                     + "A. one B. two C. three D. four Answer:" for i in range(N_ITEMS)],
        "ground_truth": [f"{'ABCD'[i % 4]}. option text" for i in range(N_ITEMS)],
    })
    df = variants.join(items, how="cross")
    n = df.height
    correct = rng.random(n) < df["p"].to_numpy()
    df = df.with_columns(
        pl.Series("score", correct.astype(np.float64)),
        pl.Series("cumulative_logprob", -rng.gamma(2.0, 3.0, n)),
    ).with_columns(
        pl.when(pl.col("score") == 1).then(pl.col("ground_truth"))
        .otherwise(pl.lit("B. option text")).alias("closest_answer"),
    ).with_columns(
        pl.concat_str([pl.lit("The answer is "), pl.col("closest_answer"),
                       pl.lit(" because the passage says so.")]).alias("generated_text"),
        pl.lit(model).alias("model"), pl.lit("None").alias("quantization"),
        pl.lit(dataset).alias("dataset"), pl.lit(shots, dtype=pl.Int64).alias("shots"),
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
        .str.slice(0, 64).alias("evaluation_id")
    )
    return df.select(
        "evaluation_id", "dataset", "sample_index", "model", "quantization", "question", "shots",
        "template", "separator", "enumerator", "choices_order", "generated_text",
        "cumulative_logprob", "closest_answer", "ground_truth", "score",
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


# --- measured steps (each runs in its own subprocess) ------------------------------------------


def _cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def _step(name: str, folder: Path, rows: int = 0, seed: int = 0) -> dict:
    # imports first and outside the timers: every measured step pays the same import cost,
    # which the ``baseline`` step reports on its own
    t_start, cpu_start = time.perf_counter(), _cpu()
    import polars as pl

    from evalstats.aggregate import to_units
    from evalstats.io.dove import read_dove

    out: dict = {"step": name}
    t0, cpu0 = time.perf_counter(), _cpu()
    if name == "generate":
        out.update(generate(folder, rows, seed=seed))
        out["mib"] = sum(p.stat().st_size for p in folder.rglob("*.parquet")) / 2**20
        out["polars"] = pl.__version__
        out["threads"] = pl.thread_pool_size()
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
            lf.group_by(KEYS)
            .agg(pl.col("score").mean(), pl.len().alias("n_items"))
            .collect(engine="streaming")
        )
        out["units"] = units.height
    else:
        obs, report = read_dove(folder)
        out["read_s"] = time.perf_counter() - t0
        units = to_units(obs, check_values=(name == "ours_checked")).collect(engine="streaming")
        out["units"] = units.height
        out["rows_read"] = report.rows_read
        out["rows_kept"] = report.rows_kept
        out["set_aside"] = dict(report.set_aside)
    out["seconds"] = time.perf_counter() - t0
    out["cpu_s"] = _cpu() - cpu0
    out["maxrss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def _run_step(name: str, folder: Path, rows: int = 0, seed: int = 0) -> dict:
    proc = subprocess.run(
        [sys.executable, __file__, "--step", name, "--dir", str(folder), "--rows", str(rows),
         "--seed", str(seed)],
        capture_output=True, text=True, check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"step {name} failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--dir", type=Path, default=None,
                        help="where to write the data (default: a temp folder, removed after)")
    parser.add_argument("--step", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.step:
        print(json.dumps(_step(args.step, args.dir, args.rows, args.seed)))
        return 0

    tmp = None
    folder = args.dir
    if folder is None:
        tmp = tempfile.mkdtemp(prefix="bench_ingest_")
        folder = Path(tmp)
    try:
        planted = _run_step("generate", folder, args.rows, args.seed)
        print(f"generated {planted['rows']:,} rows in {planted['files']} files "
              f"({planted['mib']:.0f} MiB parquet) in {planted['seconds']:.1f} s; planted "
              f"{planted['duplicate']:,} duplicates, {planted['unknown_item']:,} -1 indices")
        print(f"polars {planted['polars']}, threads {planted['threads']}")
        res = {name: _run_step(name, folder)
               for name in ("baseline", "floor", "floor_dedup", "ours", "ours_checked")}
        ours = res["ours"]
        assert ours["rows_read"] == planted["rows"], (ours["rows_read"], planted["rows"])
        assert ours["set_aside"] == {"duplicate": planted["duplicate"],
                                     "unknown_item": planted["unknown_item"]}, ours["set_aside"]
        assert ours["units"] == res["floor"]["units"]
        base = res["baseline"]["maxrss_mb"]
        floor = res["floor"]
        print(f"{'step':<14}{'wall s':>8}{'cpu s':>8}{'rows/s':>13}{'peak RSS MiB':>14}"
              f"{'wall/floor':>12}{'cpu/floor':>11}{'RSS/floor':>11}")
        for name, r in res.items():
            if name == "baseline":
                print(f"{name:<14}{r['seconds']:>8.2f}{r['cpu_s']:>8.2f}{'':>13}"
                      f"{r['maxrss_mb']:>14.0f}")
                continue
            print(f"{name:<14}{r['seconds']:>8.2f}{r['cpu_s']:>8.2f}"
                  f"{planted['rows'] / r['seconds']:>13,.0f}{r['maxrss_mb']:>14.0f}"
                  f"{r['seconds'] / floor['seconds']:>12.2f}{r['cpu_s'] / floor['cpu_s']:>11.2f}"
                  f"{r['maxrss_mb'] / floor['maxrss_mb']:>11.2f}")
        print(f"(baseline = imports only, {base:.0f} MiB, included in every peak RSS; ours: read_dove's accounting passes "
              f"took {ours['read_s']:.2f} s of {ours['seconds']:.2f} s; "
              f"{ours['units']:,} units, {ours['rows_kept']:,} rows kept)")
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
