"""``evalstats compare``: paired differences between every pair of models."""

from __future__ import annotations

import argparse

from evalstats.cli._common import (
    add_input_arguments,
    add_output_arguments,
    add_target_arguments,
    emit,
    load,
    params_from,
    warned,
)


def _cols(text: str) -> tuple[str, ...]:
    return tuple(b.strip() for b in text.split(",") if b.strip())


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser(
        "compare",
        help="paired differences between every pair of models",
        description="Every model pair: mean difference, paired test, corrected p-value, an "
        "interval that agrees with the corrected decision (the `interval` column says what it "
        "guarantees), correlation of paired scores and minimum detectable difference. Unpaired "
        "units and missing runs are counted and warned about.",
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
        choices=["holm", "bonferroni", "sidak", "hochberg", "bh", "maxt", "romano-wolf", "none"],
        default=None,
        help="multiple-comparison correction (default: holm); maxt and romano-wolf resample "
        "all pairs jointly (bootstrap)",
    )
    p.add_argument(
        "--family",
        choices=["group", "global"],
        default=None,
        help="pairs corrected together: per group of --by (default) or all",
    )
    p.add_argument(
        "--method",
        choices=["auto", "t", "permutation", "mcnemar", "mcnemar-midp", "bootstrap"],
        default=None,
        help="paired test (default: auto = exact McNemar for 0/1 items, paired t from 30 "
        "shared units, else permutation)",
    )
    p.add_argument(
        "--stop-after",
        dest="stop_after",
        type=int,
        default=None,
        metavar="H",
        help="permutation tests stop drawing once H sign vectors were as extreme (default: 20)",
    )
    p.add_argument("--alternative", choices=["two-sided", "less", "greater"], default=None)
    p.add_argument("--confidence-level", dest="confidence_level", type=float, default=None)
    p.add_argument("--power", type=float, default=None, help="power of the MDD (default: 0.8)")
    p.add_argument("--n-resamples", dest="n_resamples", type=int, default=None)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument(
        "--by", type=_cols, default=None, metavar="COL,...", help="groups (default: dataset)"
    )
    p.add_argument(
        "--compare",
        dest="column",
        default=None,
        metavar="COLUMN",
        help="column whose values are compared (default: model), e.g. a prompt factor",
    )
    add_target_arguments(p)
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
        "family",
        "method",
        "alternative",
        "confidence_level",
        "power",
        "n_resamples",
        "seed",
        "by",
        "column",
        "stop_after",
        "over",
        "cluster",
        "variant_factors",
    )
    # load() applied the item-set rule (--on-mismatch); compare_models applies the same rule
    result = warned(compare_models, obs, **params)
    emit(result, args, command="compare", params=params)
    return 0
