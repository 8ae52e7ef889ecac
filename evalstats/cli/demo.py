"""``evalstats demo``: the full audit report on the bundled demo data."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from evalstats.cli.report import add_report_arguments, parse_options, progress_wanted


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser(
        "demo",
        help="run the audit report on the bundled demo data",
        description="Run `evalstats report` on the bundled demo data (simulated with planted "
        "effects; see evalstats.simulate.DEMO_TRUTH), auditing its default configuration "
        "template=plain,shots=0,cot=False, and print where the report was written.",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=Path("evalstats-demo"),
        help="folder for the outputs (default: ./evalstats-demo)",
    )
    add_report_arguments(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run ``demo``."""
    from evalstats.cli.report import finish
    from evalstats.demo import demo_report

    args.quiet = args.quiet or args.json
    report, html = demo_report(
        args.out,
        options=parse_options(args.options),
        skip=args.skip,
        figure_formats=args.figure_format,
        serif=args.serif,
        progress=progress_wanted(args),
        stream=None if args.quiet else sys.stderr,
        **({"seed": args.seed} if hasattr(args, "seed") else {}),
    )
    if args.json:
        finish(report, html, args, command="demo")
        return 0
    if not args.quiet:
        print(f"evalstats demo: wrote the report to {html.parent}/; open {html}", file=sys.stderr)
    print(html)
    return 0
