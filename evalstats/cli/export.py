"""``evalstats export``: write the observation table of a dump in another exchange format."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from evalstats.cli._common import add_input_arguments, load

#: Formats ``export`` writes.
EXPORT_FORMATS = ("every-eval-ever",)


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser(
        "export",
        help="write a dump's observation table as Every Eval Ever records",
        description="Read a prediction dump (any format evalstats reads) and write its "
        "observation table as Every Eval Ever records: per model and dataset an aggregate "
        "<uuid>.json and the instance-level <uuid>_samples.jsonl, under OUT/<dataset>/"
        "<developer>/<model>/. The records validate against the published schemas and read "
        "back into the same table.",
    )
    add_input_arguments(p, item_sets=False, format_flag="--from")
    p.add_argument("out", metavar="OUT", type=Path, help="folder to write the records into")
    p.add_argument(
        "--format",
        dest="to",
        choices=EXPORT_FORMATS,
        default="every-eval-ever",
        help="the format written (default: every-eval-ever); the input's is --from",
    )
    p.add_argument(
        "--source-organization",
        dest="source_organization",
        default=argparse.SUPPRESS,
        metavar="NAME",
        help="source_metadata.source_organization_name of the records (default: evalstats)",
    )
    p.add_argument("--json", action="store_true", help='print {"files": [...]} as JSON on stdout')
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run ``export``."""
    from evalstats.io.every_eval_ever import write_every_eval_ever

    args.quiet = args.json
    obs, _report = load(args)
    options = {}
    if hasattr(args, "source_organization"):
        options["source_organization"] = args.source_organization
    paths = write_every_eval_ever(obs, args.out, **options)
    n = len(paths) // 2
    print(
        f"wrote {n} Every Eval Ever evaluation{'s' if n != 1 else ''} to {args.out}",
        file=sys.stderr,
    )
    if args.json:
        sys.stdout.write(json.dumps({"files": [str(p) for p in paths]}) + "\n")
    return 0
