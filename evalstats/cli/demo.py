"""``evalstats demo``: the main job on the bundled demo data."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser(
        "demo",
        help="run the analysis on the bundled demo data",
        description="Run evalstats on the bundled demo data (simulated with planted "
        "effects; see evalstats.simulate.DEMO_TRUTH).",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=Path("evalstats-demo"),
        help="folder for the outputs (default: ./evalstats-demo)",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run ``demo``."""
    from evalstats.demo import run_demo

    out = run_demo(args.out, stream=sys.stderr)
    print(f"evalstats demo: wrote {out}", file=sys.stderr)
    return 0
