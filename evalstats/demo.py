"""The bundled demo: simulated data with planted effects, run through evalstats end to end."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TextIO

import polars as pl

__all__ = ["DEMO_FILE", "demo_path", "run_demo"]

#: Where the demo data lives in a source checkout.
DEMO_FILE = (
    Path(__file__).resolve().parent.parent / "fixtures" / "demo" / "demo_observations.parquet"
)


def demo_path(cache_dir: Path | None = None) -> Path:
    """Path of the demo observation file.

    In a source checkout this is ``fixtures/demo/demo_observations.parquet``. An installed
    package without the fixtures regenerates the same file (same seed, same bytes of data) from
    :func:`evalstats.simulate.demo_observations` into ``cache_dir``.
    """
    if DEMO_FILE.exists():
        return DEMO_FILE
    from evalstats.simulate import demo_observations

    cache_dir = Path(cache_dir or Path.cwd() / "evalstats-demo")
    cache_dir.mkdir(parents=True, exist_ok=True)
    path = cache_dir / "demo_observations.parquet"
    if not path.exists():
        demo_observations().write_parquet(path)
    return path


def run_demo(out: Path, *, stream: TextIO | None = None) -> Path:
    """Ingest the demo data, aggregate it and write the results into ``out``; return ``out``."""
    from evalstats.aggregate import to_units
    from evalstats.io import read_table

    stream = stream or sys.stderr
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    obs, report = read_table(demo_path(out))
    print(report.summary(), file=stream)
    units = to_units(obs).collect()
    units.write_parquet(out / "units.parquet")
    summary = (
        units.group_by("model", "dataset")
        .agg(
            pl.col("score").mean().alias("mean_score"),
            pl.col("score").min().alias("min_score"),
            pl.col("score").max().alias("max_score"),
            pl.col("variant").n_unique().alias("n_variants"),
            pl.col("run").n_unique().alias("n_runs"),
            (pl.col("n_errors").sum() / pl.col("n_items").sum()).alias("error_share"),
        )
        .sort("model", "dataset")
    )
    summary.write_csv(out / "summary.csv")
    (out / "ingest_report.json").write_text(report.to_json())
    with pl.Config(tbl_rows=50, float_precision=3, tbl_hide_dataframe_shape=True):
        print(summary, file=stream)
    return out
