"""``evalstats plan``: the cheapest items x prompts x runs for a target interval or power."""

from __future__ import annotations

import argparse
import sys

from evalstats._output import save_figure
from evalstats.cli._common import add_input_arguments, add_output_arguments, emit, load, params_from
from evalstats.cli.moments import _sparse_groups, use_sparse
from evalstats.errors import ParameterError


def _csv(text: str) -> tuple[str, ...]:
    return tuple(b.strip() for b in text.split(",") if b.strip())


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser(
        "plan",
        help="what to run next: the cheapest items x prompts x runs for a target",
        description="From a pilot dump's variance components, the cheapest design (items, prompt "
        "variants, runs) whose interval of a model's mean has width W (--target-ci W), or that "
        "detects a paired difference D with power P (--detect D --power P). Writes the "
        "recommended design per model (and the one design that serves all); --alternatives "
        "writes the cheapest designs per allocation instead.",
    )
    add_input_arguments(p)
    S = argparse.SUPPRESS
    target = p.add_mutually_exclusive_group()
    target.add_argument(
        "--target-ci",
        dest="target_width",
        type=float,
        default=None,
        metavar="W",
        help="full width (high - low) of the confidence interval of each model's mean",
    )
    target.add_argument(
        "--detect",
        type=float,
        default=None,
        metavar="D",
        help="paired difference between two models to detect",
    )
    p.add_argument("--power", type=float, default=S, help="power for --detect (default 0.8)")
    p.add_argument("--confidence-level", dest="confidence_level", type=float, default=S)
    p.add_argument(
        "--cost",
        default=S,
        metavar="item=C,variant=C,run=C",
        help="one-off cost per item and per variant, cost per call (run); 'tokens' or "
        "input_token=P,output_token=P price calls by the dump's token counts (default run=1)",
    )
    p.add_argument(
        "--over",
        type=_csv,
        default=S,
        metavar="items,variants",
        help="facets the interval generalises over (default items,variants)",
    )
    p.add_argument("--max-items", dest="max_items", type=int, default=S)
    p.add_argument("--max-variants", dest="max_variants", type=int, default=S)
    p.add_argument("--max-runs", dest="max_runs", type=int, default=S)
    p.add_argument("--method", choices=["auto", "anova", "reml"], default=S)
    p.add_argument("--seed", type=int, default=S, help="random seed (default 0)")
    p.add_argument(
        "--by",
        type=_csv,
        default=S,
        metavar="COL,...",
        help="group columns (default model,dataset)",
    )
    p.add_argument(
        "--alternatives", action="store_true", help="write the table of alternative designs"
    )
    p.add_argument(
        "--sparse",
        action="store_true",
        help="for a sparse item x prompt dump: the next --cells (variant, item) cells to run "
        "that most narrow the interval of --quantity (docs/methods/sparse.md), as a table a "
        "harness can run (variant, item and the variant's prompt factors)",
    )
    p.add_argument(
        "--cells",
        dest="k",
        type=int,
        default=S,
        metavar="K",
        help="with --sparse: cells to propose per group (default 100)",
    )
    p.add_argument(
        "--quantity",
        choices=["mean", "sd", "min", "q05", "q25", "median", "q75", "q95", "max"],
        default=S,
        help="with --sparse: the quantity of the per-prompt distribution whose interval to "
        "narrow (default q05)",
    )
    p.add_argument(
        "--n-resamples",
        dest="n_resamples",
        type=int,
        default=S,
        help="with --sparse: posterior draws (default 400)",
    )
    add_output_arguments(p)
    p.add_argument("--plot", default=None, metavar="FILE", help="save interval width against cost")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run ``plan``."""
    from evalstats.noise import plan

    args.quiet = args.json
    if args.sparse:
        return _sparse(args)
    if args.target_width is None and args.detect is None:
        # a design with sparse groups: the next cells of the sparse-grid model, saying why
        obs, _ = load(args)
        if _sparse_groups(args) is None:
            raise ParameterError(
                "give --target-ci W or --detect D (or --sparse for the next cells)."
            )
        use_sparse(
            args,
            "the plan is the sparse-grid model's next cells to run (as --sparse; "
            "--target-ci W or --detect D for the design planner)",
        )
        return _sparse(args, obs)
    for name in ("k", "quantity", "n_resamples"):
        if hasattr(args, name):
            flag = "--cells" if name == "k" else f"--{name.replace('_', '-')}"
            raise ParameterError(f"`{flag}` applies with --sparse only.")
    obs, _ = load(args)
    params = params_from(
        args,
        "target_width",
        "detect",
        "power",
        "confidence_level",
        "cost",
        "over",
        "max_items",
        "max_variants",
        "max_runs",
        "method",
        "seed",
        "by",
    )
    res = plan(obs, **params)
    out = res.alternatives if args.alternatives else res.best
    emit(out, args, command="plan", params={**params, "alternatives": args.alternatives})
    if args.plot:
        from evalstats.plots import paper_style, plot_plan

        with paper_style():
            fig = plot_plan(res)
            save_figure(fig, args.plot, bbox_inches="tight")
        print(f"wrote {args.plot}", file=sys.stderr)
    return 0


def _sparse(args: argparse.Namespace, obs=None) -> int:
    """``plan --sparse``: the next cells of a sparse grid, one table for the harness.

    ``obs``: the table when already loaded (the default for a sparse design, :func:`run`).
    """
    from evalstats.sparse import sparse_plan

    for name in ("target_width", "detect"):
        if getattr(args, name) is not None:
            raise ParameterError("--sparse proposes cells; --target-ci and --detect do not apply.")
    for name in (
        "power",
        "confidence_level",
        "cost",
        "over",
        "max_items",
        "max_variants",
        "max_runs",
        "method",
    ):
        if hasattr(args, name):
            flag = f"--{name.replace('_', '-')}"
            raise ParameterError(f"`{flag}` does not apply with --sparse.")
    if args.alternatives or args.plot:
        raise ParameterError("--alternatives and --plot do not apply with --sparse.")
    if obs is None:
        obs, _ = load(args)
    params = params_from(args, "k", "quantity", "n_resamples", "seed", "by", "variant_factors")
    out = sparse_plan(obs, **params)
    if "by" in params:
        params["by"] = list(params["by"])
    mode = True if args.sparse else "default"
    emit(out, args, command="plan-sparse", params={**params, "sparse": mode})
    return 0
