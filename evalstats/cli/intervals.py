"""``evalstats intervals``: mean score per model (and dataset) with a confidence interval."""

from __future__ import annotations

import argparse

from evalstats.cli._common import (
    add_input_arguments,
    add_output_arguments,
    add_variant_factors_argument,
    emit,
    load,
    params_from,
)


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
        choices=["auto", "recorded-prompts", "prompt-space", "items", "variants", "runs"],
        default=None,
        help="target of the interval (default: auto = items, in clusters when the design has "
        "them, and the prompt space when a group has 3 or more prompt variants (with 2: the "
        "recorded prompts, and `note` says why); recorded-prompts conditions on the prompts "
        "that were run; prompt-space asks for the prompt space from 2 variants on; items, "
        "variants and runs are the sampling unit of a plain interval)",
    )
    p.add_argument(
        "--method",
        choices="auto t logit lognormal bootstrap-t bootstrap percentile wilson cluster".split(),
        default=None,
        help="interval method (default: auto = Wilson for 0/1 scores, logit for a bounded "
        "metric, else t, or for strongly right-skewed scores lognormal (positive) or "
        "bootstrap-t)",
    )
    p.add_argument("--confidence-level", dest="confidence_level", type=float, default=None)
    p.add_argument(
        "--cluster",
        default=None,
        help="column naming item clusters (default: the design's cluster column, if any)",
    )
    p.add_argument(
        "--by",
        type=lambda text: tuple(b.strip() for b in text.split(",") if b.strip()),
        default=None,
        metavar="COL,...",
        help="groups (default: model,dataset,metric and every setting held fixed that varies: "
        "a provider, a temperature; given, exactly these groups)",
    )
    add_variant_factors_argument(p)
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
        args,
        "over",
        "method",
        "confidence_level",
        "cluster",
        "n_resamples",
        "seed",
        "by",
        "variant_factors",
    )
    emit(intervals(obs, **params), args, command="intervals", params=params)
    return 0
