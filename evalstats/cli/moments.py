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


def add_sparse_arguments(p: argparse.ArgumentParser, *, options: bool = True) -> None:
    """``--sparse``/``--no-sparse`` and the estimator's options (also used by ``nstar``)."""
    S = argparse.SUPPRESS
    mode = p.add_mutually_exclusive_group()
    mode.add_argument(
        "--sparse",
        action="store_true",
        help="estimate each prompt variant's accuracy over the whole item grid from the cells "
        "observed (item + prompt effects; docs/methods/sparse.md) for every group; the default "
        "already does so when the design calls a group sparse (each variant run on part of "
        "the items)",
    )
    mode.add_argument(
        "--no-sparse",
        dest="no_sparse",
        action="store_true",
        help="the per-variant values of the observed cells only, even where the design calls "
        "the grid sparse",
    )
    if not options:
        return
    p.add_argument(
        "--n-resamples",
        dest="n_resamples",
        type=int,
        default=S,
        help="with the sparse-grid model: posterior draws (default 1000)",
    )
    p.add_argument(
        "--seed", type=int, default=S, help="with the sparse-grid model: random seed (default 0)"
    )
    p.add_argument(
        "--n-worlds",
        dest="n_worlds",
        type=int,
        default=S,
        help="with the sparse-grid model: grids simulated from the fit to calibrate the "
        "intervals (default 10; 0 for the posterior draws' intervals alone, several times "
        "faster and too narrow below about 10 %% of the cells)",
    )


def _sparse_groups(args: argparse.Namespace):
    import polars as pl

    design = getattr(args, "design", None)
    if design is None:
        return None
    sparse = design.groups.filter(pl.col("structure") == "sparse")
    return sparse if sparse.height else None


def _share(sparse) -> str:
    lo, hi = f"{sparse['cells_observed'].min():.0%}", f"{sparse['cells_observed'].max():.0%}"
    return lo if lo == hi else f"{lo} to {hi}"


def use_sparse(args: argparse.Namespace, what: str) -> bool:
    """Whether to run the sparse-grid model: ``--sparse``, or by default a sparse design.

    Says on stderr, in one line, why the model's values are given (default) or why not
    (``--no-sparse``). ``what`` says what the model's values are and where the naive ones.
    """
    if getattr(args, "sparse", False):
        return True
    sparse = _sparse_groups(args)
    if sparse is None:
        return False
    if getattr(args, "no_sparse", False):
        print(
            f"{sparse.height} group(s) observe {_share(sparse)} of the item x prompt grid: each "
            "variant's score is over its own items (--no-sparse); without it the sparse-grid "
            "model estimates the distribution over the whole grid.",
            file=sys.stderr,
        )
        return False
    print(
        f"{sparse.height} group(s) observe {_share(sparse)} of the item x prompt grid, so each "
        f"variant's own items alone would add their sampling noise: {what} "
        "(docs/methods/sparse.md); --no-sparse for the observed cells only.",
        file=sys.stderr,
    )
    return True


def _unit_interval(obs) -> bool:
    from evalstats.schema import as_lazy, unit_interval_metrics

    return all(unit_interval_metrics(as_lazy(obs)).values())


def run(args: argparse.Namespace) -> int:
    """Run ``moments``."""
    from evalstats.moments import prompt_spread

    args.quiet = args.json
    obs, _ = load(args)
    if args.sparse or (
        not args.no_sparse
        and _unit_interval(obs)
        and use_sparse(
            args,
            "the values are the sparse-grid model's over the whole grid, the naive per-variant "
            "ones beside them in the column naive",
        )
    ):
        from evalstats.sparse import sparse_prompt_distribution

        params = params_from(args, "by", "variant_factors", "n_resamples", "seed", "n_worlds")
        with warnings_to_stderr():
            out = sparse_prompt_distribution(obs, **params)
        if "by" in params:
            params["by"] = list(params["by"])
        mode = True if args.sparse else "default"
        emit(out, args, command="moments-sparse", params={**params, "sparse": mode})
        return 0
    for name in ("n_resamples", "seed", "n_worlds"):
        if hasattr(args, name):
            raise ParameterError(
                f"`--{name.replace('_', '-')}` applies to the sparse-grid model only (--sparse, "
                "or a design with sparse groups)."
            )
    if args.no_sparse:
        use_sparse(args, "")
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
