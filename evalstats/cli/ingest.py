"""``evalstats ingest``: read a dump, print the ingest report, write the table."""

from __future__ import annotations

import argparse
import json
import sys

from evalstats.cli._common import add_input_arguments, load, write_table


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser(
        "ingest",
        help="read a dump into the canonical table and report what was kept",
        description="Read a prediction dump into the observation table (or the unit "
        "table), print the ingest report and write the table.",
    )
    add_input_arguments(p)
    p.add_argument(
        "--level",
        choices=["units", "observations"],
        default="units",
        help="write unit rows (default) or observation rows",
    )
    p.add_argument("--out", default=None, help="write the table (.parquet, .csv, .jsonl)")
    p.add_argument("--json", action="store_true", help='print {"report": {...}} as JSON on stdout')
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run ``ingest``."""
    from pathlib import Path

    from evalstats.aggregate import to_units

    args.quiet = args.json
    obs, report = load(args)
    table = obs if args.level == "observations" else to_units(obs, check_values=False)
    if args.out:
        frame = table.collect(engine="streaming")
        write_table(frame, Path(args.out))
        print(f"wrote {frame.height} {args.level} rows to {args.out}", file=sys.stderr)
    if args.json:
        sys.stdout.write(json.dumps({"report": report.to_dict()}) + "\n")
    return 0
