"""``evalstats converge``: replay the sequential stopping rule on recorded configurations."""

from __future__ import annotations

import argparse

from evalstats.cli._common import add_input_arguments, add_output_arguments, emit, load, params_from


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser(
        "converge",
        help="replay the sequential stopping rule",
        description="Replay the stopping rule (batches of configurations in "
        "random order; stop when the mean moves less than --mean-tol and the "
        "interval is narrower than --ci-width) and report the stopping size and "
        "error over many orders.",
    )
    add_input_arguments(p)
    p.add_argument("--batch", type=int, default=None, help="configurations per batch (default 10)")
    p.add_argument("--mean-tol", dest="mean_tol", type=float, default=None)
    p.add_argument("--ci-width", dest="ci_width", type=float, default=None)
    p.add_argument("--n-orders", dest="n_orders", type=int, default=None)
    p.add_argument("--confidence-level", dest="confidence_level", type=float, default=None)
    p.add_argument("--seed", type=int, default=None)
    add_output_arguments(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run ``converge``."""
    from evalstats.compare import convergence

    args.quiet = args.json
    obs, _ = load(args)
    params = params_from(
        args, "batch", "mean_tol", "ci_width", "n_orders", "confidence_level", "seed"
    )
    emit(convergence(obs, **params), args, command="converge", params=params)
    return 0
