"""``evalstats friedman``: Friedman and Iman-Davenport tests of ranks over independent blocks."""

from __future__ import annotations

import argparse
import sys

from evalstats._text import for_terminal
from evalstats.cli._common import (
    add_input_arguments,
    add_output_arguments,
    emit,
    load,
    params_from,
    warnings_to_stderr,
)


def _cols(text: str) -> tuple[str, ...]:
    return tuple(b.strip() for b in text.split(",") if b.strip())


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser(
        "friedman",
        help="Friedman / Iman-Davenport test of ranks and the Nemenyi critical difference",
        description="Rank the models (or any column's values) within each block and test "
        "whether mean ranks differ: Friedman chi-square, Iman-Davenport F, Nemenyi critical "
        "difference. Blocks must be independent units: datasets, or items "
        "(--blocks dataset,item); prompt variants of one task share its items.",
    )
    add_input_arguments(p)
    p.add_argument(
        "--blocks",
        type=_cols,
        default=None,
        metavar="COL,...",
        help="block columns (default: dataset; items as blocks: dataset,item)",
    )
    p.add_argument(
        "--compare",
        dest="column",
        default=None,
        metavar="COLUMN",
        help="column whose values are ranked (default: model)",
    )
    p.add_argument("--confidence-level", dest="confidence_level", type=float, default=None)
    add_output_arguments(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run ``friedman``."""
    from evalstats.compare import friedman_nemenyi

    args.quiet = args.json
    obs, _ = load(args)
    params = params_from(args, "blocks", "column", "confidence_level")
    with warnings_to_stderr():
        res = friedman_nemenyi(obs, **params)
    if res.n_dropped_blocks and not args.json:
        print(
            f"friedman: ranks over {res.n_blocks} of {res.n_blocks + res.n_dropped_blocks} "
            "blocks; left out (values without a score):",
            file=sys.stderr,
        )
        for row in res.dropped_blocks.iter_rows(named=True):
            where = "/".join(str(row[b]) for b in res.blocks)
            print(
                f"  {for_terminal(where)}: no {for_terminal(str(row['missing']))}", file=sys.stderr
            )
    emit(res.to_frame(), args, command="friedman", params=params)
    return 0
