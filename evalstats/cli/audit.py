"""``evalstats audit``: conclusion-reversal audit of a default configuration."""

from __future__ import annotations

import argparse
import sys

from evalstats.cli._common import (
    add_input_arguments,
    add_output_arguments,
    emit,
    load,
    params_from,
    warned,
)
from evalstats.errors import ParameterError


def _pairs(text: str) -> dict[str, str]:
    out = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        if "=" not in part:
            raise ParameterError(f"`--default` expects factor=value,..., got {part!r}.")
        k, v = part.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser(
        "audit",
        help="conclusion-reversal audit of a default configuration",
        description="Where each model's default-configuration score lies among "
        "all configurations, and whether the default ordering of each model pair "
        "contradicts the interval over configurations.",
    )
    add_input_arguments(p)
    p.add_argument(
        "--default",
        required=True,
        metavar="FACTOR=VALUE,...",
        help="the default configuration, e.g. template=plain,shots=0",
    )
    p.add_argument("--claim", default=None, help='a claim to check, e.g. "m1>m2"')
    p.add_argument("--confidence-level", dest="confidence_level", type=float, default=None)
    p.add_argument(
        "--subset",
        default=None,
        metavar="FACTOR",
        help="also rank models per level of this workload factor (Kendall tau)",
    )
    p.add_argument(
        "--table",
        choices=["pairs", "models", "ranks", "kendall"],
        default="pairs",
        help="which table to write (default: pairs; all are in --json)",
    )
    add_output_arguments(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run ``audit``."""
    from evalstats.compare import reversal_audit, subset_rankings

    args.quiet = args.json
    default = _pairs(args.default)
    if args.table in ("ranks", "kendall") and not args.subset:
        raise ParameterError(f"`--table {args.table}` needs `--subset FACTOR`.")
    obs, _ = load(args)
    params = params_from(args, "claim", "confidence_level")
    res = warned(reversal_audit, obs, default=default, **params)
    tables = {"pairs": res.pairs, "models": res.models}
    if args.subset:
        ranks = warned(subset_rankings, obs, subset=args.subset)
        tables.update(ranks=ranks.ranks, kendall=ranks.kendall)
    if not args.json:
        print(f"{res.n_reversals} conclusion reversal(s) at the default {default}", file=sys.stderr)
    extra = {"n_reversals": res.n_reversals}
    extra.update({k: v.to_dicts() for k, v in tables.items() if k != args.table})
    emit(
        tables[args.table],
        args,
        command="audit",
        params={"default": default, "subset": args.subset, **params},
        extra=extra,
    )
    return 0
