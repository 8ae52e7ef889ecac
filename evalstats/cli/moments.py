"""``evalstats moments``: distribution of unit scores over prompt variants, one row per group."""

from __future__ import annotations

import argparse
import sys

from evalstats._output import save_figure
from evalstats.cli._common import (
    add_input_arguments,
    add_output_arguments,
    add_variant_factors_argument,
    emit,
    load,
    params_from,
    warnings_to_stderr,
)
from evalstats.errors import ParameterError


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
    add_sparse_arguments(p)
    add_output_arguments(p)
    p.add_argument(
        "--plot",
        default=None,
        metavar="FILE",
        help="save box plots of scores over variants (per model, per dataset)",
    )
    p.set_defaults(run=run)


def add_sparse_arguments(p: argparse.ArgumentParser) -> None:
    """``--sparse`` and the options of the sparse-grid estimator (also used by ``nstar``)."""
    S = argparse.SUPPRESS
    p.add_argument(
        "--sparse",
        action="store_true",
        help="estimate each prompt variant's accuracy over the whole item grid from the cells "
        "observed (item + prompt effects; docs/methods/sparse.md), for dumps that run each "
        "variant on part of the items",
    )
    p.add_argument(
        "--n-resamples",
        dest="n_resamples",
        type=int,
        default=S,
        help="with --sparse: posterior draws (default 1000)",
    )
    p.add_argument("--seed", type=int, default=S, help="with --sparse: random seed (default 0)")


def sparse_note(args: argparse.Namespace) -> None:
    """On stderr: which groups observe part of the grid, and that --sparse estimates the rest."""
    import polars as pl

    design = getattr(args, "design", None)
    if design is None or getattr(args, "sparse", False):
        return
    sparse = design.groups.filter(pl.col("structure") == "sparse")
    if sparse.height:
        lo, hi = f"{sparse['cells_observed'].min():.0%}", f"{sparse['cells_observed'].max():.0%}"
        print(
            f"{sparse.height} group(s) observe {lo if lo == hi else f'{lo} to {hi}'} of the "
            "item x prompt grid: each variant's score is over its own items; --sparse estimates "
            "the distribution over the whole grid.",
            file=sys.stderr,
        )


def run(args: argparse.Namespace) -> int:
    """Run ``moments``."""
    from evalstats.moments import prompt_spread

    args.quiet = args.json
    obs, _ = load(args)
    if args.sparse:
        from evalstats.sparse import sparse_prompt_distribution

        params = params_from(args, "by", "variant_factors", "n_resamples", "seed")
        with warnings_to_stderr():
            out = sparse_prompt_distribution(obs, **params)
        if "by" in params:
            params["by"] = list(params["by"])
        emit(out, args, command="moments-sparse", params={**params, "sparse": True})
        return 0
    for name in ("n_resamples", "seed"):
        if hasattr(args, name):
            raise ParameterError(f"`--{name.replace('_', '-')}` applies with --sparse only.")
    sparse_note(args)
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
            save_figure(fig, args.plot)
        print(f"wrote {args.plot}", file=sys.stderr)
    return 0
