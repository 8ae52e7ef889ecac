"""``evalstats intervals``: mean score per model (and dataset) with a confidence interval."""

from __future__ import annotations

import argparse

from evalstats.cli._common import add_input_arguments, add_output_arguments, emit, load, params_from


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser(
        "intervals",
        help="mean score per model with a confidence interval",
        description="Mean score per model and dataset with a Wilson, logit, t, bootstrap or "
        "cluster-robust interval over items, variants or runs.",
    )
    add_input_arguments(p)
    p.add_argument(
        "--over",
        choices=["auto", "items", "variants", "runs"],
        default=None,
        help="sampling unit of the interval (default: auto = items when the table has items, "
        "else variants in groups with at least 20)",
    )
    p.add_argument(
        "--method",
        choices=["auto", "t", "logit", "bootstrap", "percentile", "wilson", "cluster"],
        default=None,
        help="interval method (default: auto = Wilson for 0/1 scores, logit for a bounded "
        "metric, else t)",
    )
    p.add_argument("--confidence-level", dest="confidence_level", type=float, default=None)
    p.add_argument("--cluster", default=None, help="column naming item clusters (--method cluster)")
    p.add_argument("--n-resamples", dest="n_resamples", type=int, default=None)
    p.add_argument("--seed", type=int, default=None)
    add_output_arguments(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run ``intervals``."""
    from evalstats.compare import intervals

    args.quiet = args.json
    obs, _ = load(args)
    params = params_from(
        args, "over", "method", "confidence_level", "cluster", "n_resamples", "seed"
    )
    emit(intervals(obs, **params), args, command="intervals", params=params)
    return 0
