"""``evalstats moments``: distribution of unit scores over prompt variants, one row per group."""

from __future__ import annotations

import argparse
import sys

from evalstats._output import writing
from evalstats.cli._common import (
    add_input_arguments,
    add_output_arguments,
    add_variant_factors_argument,
    emit,
    load,
    params_from,
    warnings_to_stderr,
)


def _by(text: str) -> tuple[str, ...]:
    return tuple(b.strip() for b in text.split(",") if b.strip())


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser(
        "moments",
        help="moments, quantiles, MaxP/AvgP/CPS and PSS of scores over prompt variants",
        description="Distribution of each model's unit score over prompt variants (ReliableEval "
        "moments, State of What Art MaxP/AvgP/CPS, ProSA PSS, noise vs prompt variance).",
    )
    add_input_arguments(p)
    p.add_argument(
        "--by",
        type=_by,
        default=argparse.SUPPRESS,
        metavar="COL,...",
        help="group columns (default: model,dataset)",
    )
    add_variant_factors_argument(p)
    add_output_arguments(p)
    p.add_argument(
        "--plot",
        default=None,
        metavar="FILE",
        help="save box plots of scores over variants (per model, per dataset)",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run ``moments``."""
    from evalstats.moments import prompt_spread

    args.quiet = args.json
    obs, _ = load(args)
    params = params_from(args, "by", "variant_factors")
    with warnings_to_stderr():
        out = prompt_spread(obs, **params)
    if "by" in params:
        params["by"] = list(params["by"])
    emit(out, args, command="moments", params=params)
    if args.plot:
        from evalstats.plots import paper_style, plot_prompt_spread

        with paper_style():
            fig = plot_prompt_spread(obs)
            with writing(args.plot):
                fig.savefig(args.plot)
        print(f"wrote {args.plot}", file=sys.stderr)
    return 0
