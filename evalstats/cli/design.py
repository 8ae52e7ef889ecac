"""``evalstats design``: the design read from a dump, to check and correct once."""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from evalstats.cli._common import add_input_arguments, load
from evalstats.errors import ParameterError


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser(
        "design",
        help="show the design read from a dump: each column's role, the groups, what they support",
        description="Read a dump and show its design: the role of every column (model, "
        "dataset, item, cluster, prompt factor, setting, run, text) with the evidence for "
        "each decision, the structure of every model x dataset group (items, prompt variants, "
        "runs; crossed, nested or sparse) and which analyses it supports. Write it with "
        "--out design.toml, correct a role there and pass it back to any command with "
        "--design design.toml (or correct it at once with --roles COL=ROLE).",
    )
    add_input_arguments(p, item_sets=False)
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="write the design: .toml (to edit and pass back with --design), .json, or .csv "
        "(the groups table)",
    )
    p.add_argument("--json", action="store_true", help="print the design as JSON on stdout")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run ``design``."""
    args.quiet = args.json
    load(args)
    design = args.design
    if args.out is not None:
        from evalstats._output import writing

        out = Path(args.out)
        suffix = out.suffix.lower()
        if suffix not in (".toml", ".json", ".csv"):
            raise ParameterError(f"`--out` must end in .toml, .json or .csv, got {out.name!r}.")
        if suffix == ".csv":
            from evalstats.cli._common import write_table

            write_table(design.groups, out)
        else:
            with writing(out):
                out.parent.mkdir(parents=True, exist_ok=True)
                text = design.to_toml() if suffix == ".toml" else design.to_json() + "\n"
                out.write_text(text, encoding="utf-8")
        print(f"wrote {out}", file=sys.stderr)
    if args.json:
        sys.stdout.write(design.to_json() + "\n")
    elif args.out is None:
        width = shutil.get_terminal_size((100, 24)).columns
        sys.stdout.write(design.summary(width=min(max(width, 60), 140)) + "\n")
    return 0
