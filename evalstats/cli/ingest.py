"""``evalstats ingest``: read a dump, print the ingest report, write the table."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from evalstats.cli._common import add_input_arguments, load, loader_options, write_table
from evalstats.errors import ParameterError

if TYPE_CHECKING:
    import polars as pl


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser(
        "ingest",
        help="read a dump into the canonical table and report what was kept",
        description="Read a prediction dump into the observation table (or the unit "
        "table), print the ingest report and write the table. The unit table is built in one "
        "pass over the rows with bounded memory, on this machine or on a Dask cluster "
        "(--engine dask).",
    )
    add_input_arguments(p, item_sets=False)
    p.add_argument(
        "--level",
        choices=["units", "observations"],
        default="units",
        help="write unit rows (default) or observation rows",
    )
    p.add_argument("--out", default=None, help="write the table (.parquet, .csv, .jsonl)")
    p.add_argument("--json", action="store_true", help='print {"report": {...}} as JSON on stdout')
    p.add_argument(
        "--engine",
        choices=["polars", "dask"],
        default=argparse.SUPPRESS,
        help="where the unit table is computed: this process (polars, default) or a Dask "
        "cluster (dask; needs pip install 'evalstats[dask]')",
    )
    p.add_argument(
        "--scheduler",
        default=argparse.SUPPRESS,
        metavar="ADDRESS",
        help="Dask scheduler address for --engine dask, e.g. tcp://10.0.0.5:8786 (default: "
        "DASK_SCHEDULER_ADDRESS, else a local cluster)",
    )
    p.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=argparse.SUPPRESS,
        help="progress bar of files done on stderr (default: when stderr is a terminal)",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run ``ingest``."""
    from evalstats.aggregate import read_units

    quiet = args.json
    if args.level == "observations":
        if getattr(args, "engine", "polars") != "polars" or hasattr(args, "scheduler"):
            raise ParameterError(
                "--engine dask and --scheduler build the unit table; "
                "use them with --level units (the default)."
            )
        args.quiet = quiet
        obs, report = load(args)
        if args.out:
            _sink(obs, Path(args.out))
            print(f"wrote {report.rows_kept} observations rows to {args.out}", file=sys.stderr)
    elif any(hasattr(args, k) for k in ("roles", "design_file", "model_name", "copies")):
        # the design decides what the units are: read through it, then aggregate
        from evalstats.aggregate import to_units

        args.quiet = quiet
        obs, report = load(args)
        units = to_units(obs).collect(engine="streaming")
        if args.out:
            write_table(units, Path(args.out))
            print(f"wrote {units.height} units rows to {args.out}", file=sys.stderr)
    else:
        options = loader_options(args)
        for name in ("engine", "scheduler", "progress"):
            if hasattr(args, name):
                options[name] = getattr(args, name)
        if "progress" not in options and quiet:
            options["progress"] = False
        units, report = read_units(args.path, format=args.format, **options)
        if not quiet:
            print(report.summary(), file=sys.stderr)
        if args.out:
            write_table(units, Path(args.out))
            print(f"wrote {units.height} units rows to {args.out}", file=sys.stderr)
    if args.json:
        sys.stdout.write(json.dumps({"report": report.to_dict()}) + "\n")
    return 0


def _sink(obs: pl.LazyFrame, out: Path) -> None:
    """Stream the observation table to ``out`` without holding it in memory, where possible."""
    import polars as pl

    from evalstats._output import csv_safe_lazy, writing

    suffix = out.suffix.lower()
    nested = any(
        isinstance(t, (pl.List, pl.Array, pl.Struct)) for t in obs.collect_schema().dtypes()
    )
    if suffix in (".parquet", ".pq", ".jsonl", ".ndjson") or (suffix == ".csv" and not nested):
        with writing(out):
            out.parent.mkdir(parents=True, exist_ok=True)
            if suffix in (".parquet", ".pq"):
                obs.sink_parquet(out)
            elif suffix in (".jsonl", ".ndjson"):
                obs.sink_ndjson(out)
            else:  # formula-like cells neutralised, as write_table does
                csv_safe_lazy(obs).sink_csv(out)
    else:  # .json (one array) and CSV with list columns need the whole table
        write_table(obs.collect(engine="streaming"), out)
