"""``evalstats providers``: error rates, scoring policies and differences per provider."""

from __future__ import annotations

import argparse

from evalstats.cli._common import add_input_arguments, add_output_arguments, emit, load, params_from
from evalstats.errors import EvalstatsError

_TABLES = (
    "scores",
    "policies",
    "versus",
    "errors",
    "settings",
    "differences",
    "latency",
    "tail_quality",
)


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser(
        "providers",
        help="provider and error audit",
        description="Per (model, provider): each provider against a reference (the "
        "model developer's API, the best covered one, or --reference) with a verdict, error "
        "rates by class, the score with errors as failures and with errors excluded side by "
        "side, paired provider differences, latency and tail-to-quality. --compare COLUMN "
        "audits any setting (temperature, reasoning_effort, quantization) the same way.",
    )
    add_input_arguments(p)
    p.add_argument(
        "--provider",
        "--compare",
        dest="provider",
        default=None,
        help="column whose levels are compared: a provider, quantization, endpoint or any "
        "setting such as temperature or reasoning_effort (default: provider)",
    )
    p.add_argument(
        "--reference",
        default=None,
        help="level every other one is compared with (default: the model developer's API "
        "when it is a provider, else the best-covered one)",
    )
    p.add_argument(
        "--by",
        default=None,
        help="comma-separated grouping columns (default: model,metric); e.g. model,provider "
        "with --compare reasoning_effort compares the levels within each provider",
    )
    p.add_argument("--correction", default=None, help="multiplicity correction (default: holm)")
    p.add_argument(
        "--settings",
        default=None,
        help="comma-separated setting columns checked for any effect at all (--table settings; "
        "default: the design's settings or factor columns of 2 to 20 levels; '' for none)",
    )
    p.add_argument("--method", choices=["cluster", "t", "wilson"], default=None)
    p.add_argument("--confidence-level", dest="confidence_level", type=float, default=None)
    p.add_argument("--n-resamples", dest="n_resamples", type=int, default=None)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument(
        "--table",
        choices=_TABLES,
        default="versus",
        help="which table to write (default: versus, each provider against the reference "
        "with its verdict; all are in --json)",
    )
    add_output_arguments(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run ``providers``."""
    from evalstats.compare import provider_audit

    args.quiet = args.json
    given = getattr(args, "roles", None)
    if _compared_is_a_setting(args):
        try:
            obs, _ = load(args)
        except EvalstatsError:
            # the compared column may not be in the file (a typo, another case): read it as
            # the user asked, so that the error is the audit's ("no column 'X'") or the file's
            if given is None:
                del args.roles
            else:
                args.roles = given
            obs, _ = load(args)
    else:
        obs, _ = load(args)
    params = params_from(
        args,
        "provider",
        "method",
        "confidence_level",
        "n_resamples",
        "seed",
        "reference",
        "correction",
    )
    if args.settings is not None:
        params["settings"] = tuple(c.strip() for c in args.settings.split(",") if c.strip())
    if args.by is not None:
        params["by"] = tuple(b.strip() for b in args.by.split(",") if b.strip())
    res = provider_audit(obs, **params)
    extra = {t: getattr(res, t).to_dicts() for t in _TABLES if t != args.table}
    emit(getattr(res, args.table), args, command="providers", params=params, extra=extra)
    return 0


def _compared_is_a_setting(args: argparse.Namespace) -> bool:
    """The column named by ``--compare`` is read as a setting unless ``--roles`` says otherwise.

    Returns whether a role was added (``args.roles`` then holds it).

    Without this, a column that a documented alias claims (``label`` as a reference, by its
    name) or that the column rules leave out would not reach the audit the user asked for.
    """
    from evalstats.design import parse_roles
    from evalstats.io._columns import ALIASES

    col = args.provider
    if not col or col in ALIASES:
        return False
    given = parse_roles(getattr(args, "roles", None) or "")
    if col in given:
        return False
    args.roles = ",".join([*(f"{k}={v}" for k, v in given.items()), f"{col}=setting"])
    return True
