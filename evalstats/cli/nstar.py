"""``evalstats nstar``: ReliableEval's n* (and its curve, uncertainty and proxy check)."""

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

_LIBRARY_OPTIONS = (
    "epsilon",
    "delta",
    "moments",
    "n_resamples",
    "method",
    "compat",
    "population_size",
    "seed",
    "by",
    "relative_epsilon",
    "relative_to",
    "variant_factors",
)


def _csv(text: str) -> tuple[str, ...]:
    return tuple(b.strip() for b in text.split(",") if b.strip())


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser(
        "nstar",
        help="how many prompt variants the mean/variance need (ReliableEval n*)",
        description="ReliableEval's Delta(n) and n*: the fewest prompt variants whose moments are "
        "within epsilon of the full value with confidence 1 - delta.",
    )
    add_input_arguments(p)
    S = argparse.SUPPRESS
    p.add_argument(
        "--epsilon",
        type=float,
        default=S,
        help="tolerated error in the metric's units, for every moment (default 0.01 for a "
        "metric on [0, 1], the variance's on the sd scale: 2 x sd x 0.01)",
    )
    p.add_argument(
        "--relative-epsilon",
        dest="relative_epsilon",
        type=float,
        default=S,
        metavar="SHARE",
        help="epsilon as a share of the metric's range (or of the across-variant sd)",
    )
    p.add_argument(
        "--relative-to",
        dest="relative_to",
        choices=["range", "sd"],
        default=S,
        help="what --relative-epsilon is a share of (default range)",
    )
    p.add_argument("--delta", type=float, default=S, help="1 - confidence (default 0.1)")
    p.add_argument(
        "--moments",
        type=_csv,
        default=S,
        metavar="mean,variance",
        help="moments to follow (default mean,variance)",
    )
    p.add_argument(
        "--n-resamples",
        dest="n_resamples",
        type=int,
        default=S,
        help="subsets per size n when not enumerated (default 5000)",
    )
    p.add_argument(
        "--method",
        choices=["pool", "bootstrap", "analytic"],
        default=S,
        help="bootstrap (default) or analytic: claims about prompt variants not yet evaluated, "
        "from the same perturbation space; pool (the paper's definition): a claim about the "
        "recorded variants only (read as one about fresh prompts it fails about twice as often "
        "as delta/2)",
    )
    p.add_argument(
        "--compat",
        choices=["reliable-eval"],
        default=S,
        help="reproduce the published reference script's choices",
    )
    p.add_argument(
        "--population-size",
        dest="population_size",
        type=int,
        default=S,
        help="size of the perturbation space (analytic finite-population correction)",
    )
    p.add_argument("--seed", type=int, default=S, help="random seed (default 0)")
    p.add_argument(
        "--by",
        type=_csv,
        default=S,
        metavar="COL,...",
        help="group columns (default model,dataset,metric)",
    )
    add_variant_factors_argument(p)
    from evalstats.cli.moments import add_sparse_arguments

    # n* of the variants' accuracies over the whole item grid, from the cells observed (one
    # representative posterior draw of evalstats.sparse; docs/methods/sparse.md)
    add_sparse_arguments(p, options=False)
    what = p.add_mutually_exclusive_group()
    what.add_argument(
        "--reference-model",
        dest="reference_model",
        default=None,
        metavar="NAME",
        help="report each model's n* against this proxy model's n* (Step 3)",
    )
    what.add_argument(
        "--uncertainty",
        type=int,
        default=None,
        metavar="B",
        help="bootstrap the variants B times and report the distribution of n*",
    )
    what.add_argument("--curve", action="store_true", help="write the Delta(n) curve instead of n*")
    add_output_arguments(p)
    p.add_argument(
        "--plot",
        default=None,
        metavar="FILE",
        help="save the convergence plot (one panel per model and dataset)",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run ``nstar``."""
    import polars as pl

    from evalstats import resampling

    args.quiet = args.json
    obs, _ = load(args)
    params = params_from(args, *_LIBRARY_OPTIONS)
    from evalstats.cli.moments import _unit_interval, use_sparse

    modelled = args.sparse or (
        not args.no_sparse
        and _unit_interval(obs)
        and use_sparse(
            args, "n* is of the variants' accuracies over the whole grid (the sparse-grid model)"
        )
    )
    if modelled:
        from evalstats.sparse import sparse_unit_table

        keep = {k: params[k] for k in ("by", "seed") if k in params}
        with warnings_to_stderr():
            obs = sparse_unit_table(
                obs, variant_factors=params.pop("variant_factors", None), **keep
            )
    elif args.no_sparse:
        use_sparse(args, "")
    with warnings_to_stderr():
        if args.reference_model is not None:
            out = resampling.reference_model_check(
                obs, reference_model=args.reference_model, **params
            )
            command_params = {**params, "reference_model": args.reference_model}
        elif args.uncertainty is not None:
            out = resampling.sample_size_uncertainty(obs, n_bootstrap=args.uncertainty, **params)
            command_params = {**params, "uncertainty": args.uncertainty}
        elif args.curve:
            for name in ("epsilon", "relative_epsilon", "relative_to"):
                params.pop(name, None)
            out = resampling.sample_size_curve(obs, **params)
            command_params = {**params, "curve": True}
        else:
            out = resampling.required_sample_size(obs, **params)
            command_params = params
            if out["population"].eq("recorded").any():
                print(
                    "n* (pool): how many of the recorded variants a random subset needs; for prompts "
                    "not yet evaluated use --method bootstrap.",
                    file=sys.stderr,
                )
    if "vacuous" in out.columns and not args.json:
        vac = out.filter(pl.col("vacuous") & (pl.col("moment") != "overall"))
        for (moment,), part in vac.group_by(["moment"], maintain_order=True):
            groups = out.filter(pl.col("moment") == moment).height
            print(
                f"n* for the {moment} is vacuous in {part.height} of {groups} groups: the "
                f"{moment} itself is within epsilon of 0, so any estimate near 0 meets the "
                "tolerance (see the vacuous column).",
                file=sys.stderr,
            )
    if modelled:
        command_params = {**command_params, "sparse": True if args.sparse else "default"}
    emit(out, args, command="nstar", params=command_params)
    if args.plot:
        _plot(obs, params, args.plot)
    return 0


def _plot(obs, params: dict, path: str) -> None:
    import polars as pl

    from evalstats import resampling
    from evalstats.plots import paper_style, plot_convergence
    from evalstats.plots._style import require_plotting

    plt, _ = require_plotting()
    curve_params = {
        k: v for k, v in params.items() if k not in ("epsilon", "relative_epsilon", "relative_to")
    }
    curve = resampling.sample_size_curve(obs, **curve_params)
    nstar = resampling.required_sample_size(obs, **params)
    groups = curve.select("model", "dataset").unique().sort("model", "dataset").rows()
    ncol = min(3, len(groups))
    nrow = -(-len(groups) // ncol)
    with paper_style():
        fig, axes = plt.subplots(
            nrow, ncol, figsize=(4.2 * ncol, 3.0 * nrow), squeeze=False, layout="constrained"
        )
        flat = list(axes.ravel())
        for ax, (m, d) in zip(flat, groups):
            plot_convergence(
                curve.filter(pl.col("model") == m, pl.col("dataset") == d),
                nstar,
                model=m,
                dataset=d,
                ax=ax,
            )
        for ax in flat[len(groups) :]:
            ax.set_visible(False)
        save_figure(fig, path)
    print(f"wrote {path}", file=sys.stderr)
