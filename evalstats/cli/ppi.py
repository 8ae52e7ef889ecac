"""``evalstats ppi``: judge-score means and model differences corrected with gold labels (PPI++)."""

from __future__ import annotations

import argparse

from evalstats.cli._common import (
    add_input_arguments,
    add_output_arguments,
    add_target_arguments,
    emit,
    load,
    params_from,
)


def _cols(text: str) -> tuple[str, ...]:
    return tuple(b.strip() for b in text.split(",") if b.strip())


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser(
        "ppi",
        help="PPI++ accuracy and paired differences from judge scores plus gold labels",
        description="Prediction-powered inference (PPI++, power-tuned): `score` comes from an "
        "automatic judge, a gold column holds human scores on a random subset of the items; "
        "the estimates and intervals are corrected for the judge's bias.",
    )
    add_input_arguments(p)
    p.add_argument("--gold", default=None, help="column of gold scores (default: gold_score)")
    p.add_argument(
        "--pairs", action="store_true", help="paired differences between models instead of means"
    )
    p.add_argument("--lam", type=float, default=None, help="fixed judge weight (default: tuned)")
    p.add_argument("--confidence-level", dest="confidence_level", type=float, default=None)
    p.add_argument("--by", type=_cols, default=None, metavar="COL,...", help="group columns")
    add_target_arguments(p)
    add_output_arguments(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run ``ppi``."""
    from evalstats.compare import ppi_difference, ppi_mean

    args.quiet = args.json
    obs, _ = load(args)
    params = params_from(
        args, "gold", "lam", "confidence_level", "by", "over", "cluster", "variant_factors"
    )
    fn = ppi_difference if args.pairs else ppi_mean
    emit(fn(obs, **params), args, command="ppi", params={**params, "pairs": args.pairs})
    return 0
