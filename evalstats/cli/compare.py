"""``evalstats compare``: paired differences between every pair of models."""

from __future__ import annotations

import argparse

from evalstats.cli._common import add_input_arguments, add_output_arguments, emit, load, params_from


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser(
        "compare",
        help="paired differences between every pair of models",
        description="Every model pair: mean difference, paired interval, "
        "permutation or exact McNemar p-value, corrected p-value, correlation "
        "of paired scores and minimum detectable difference.",
    )
    add_input_arguments(p)
    p.add_argument(
        "--paired-on",
        dest="paired_on",
        choices=["items", "variants"],
        default=None,
        help="paired unit (default: items)",
    )
    p.add_argument(
        "--correction",
        choices=["holm", "bh", "none"],
        default=None,
        help="multiple-comparison correction (default: holm)",
    )
    p.add_argument("--method", choices=["auto", "permutation", "mcnemar"], default=None)
    p.add_argument("--alternative", choices=["two-sided", "less", "greater"], default=None)
    p.add_argument("--confidence-level", dest="confidence_level", type=float, default=None)
    p.add_argument("--n-resamples", dest="n_resamples", type=int, default=None)
    p.add_argument("--seed", type=int, default=None)
    add_output_arguments(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run ``compare``."""
    from evalstats.compare import compare_models

    args.quiet = args.json
    obs, _ = load(args)
    params = params_from(
        args,
        "paired_on",
        "correction",
        "method",
        "alternative",
        "confidence_level",
        "n_resamples",
        "seed",
    )
    emit(compare_models(obs, **params), args, command="compare", params=params)
    return 0
