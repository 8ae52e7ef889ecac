"""``evalstats anova``: factorial ANOVA of scores on configuration factors (η², permutation p)."""

from __future__ import annotations

import argparse
import sys

from evalstats._output import save_figure
from evalstats.cli._common import add_input_arguments, add_output_arguments, emit, load, params_from


def _factors(text: str) -> list[str]:
    names = [f.strip() for f in text.split(",") if f.strip()]
    if not names:
        raise argparse.ArgumentTypeError("expected comma-separated column names, e.g. a,b,c")
    return names


def _block(text: str) -> str | tuple[str, ...]:
    names = _factors(text)
    return names[0] if len(names) == 1 else tuple(names)


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser(
        "anova",
        help="factorial ANOVA: η², F test and permutation p-value per factor and interaction",
        description="Factorial ANOVA of unit scores (or item rows with --block item) on "
        "configuration factors: one row per term (a, a:b) and a Residual row, sorted by η².",
    )
    add_input_arguments(p)
    p.add_argument(
        "--factors",
        type=_factors,
        required=True,
        metavar="A,B,...",
        help="factor columns, comma-separated",
    )
    p.add_argument(
        "--interactions",
        type=int,
        choices=[1, 2],
        default=argparse.SUPPRESS,
        help="1: main effects; 2: also two-way interactions (default 2)",
    )
    p.add_argument(
        "--ss-type",
        dest="ss_type",
        type=int,
        choices=[1, 2, 3],
        default=argparse.SUPPRESS,
        help="sums of squares type (default 2)",
    )
    p.add_argument(
        "--n-resamples",
        dest="n_resamples",
        type=int,
        default=argparse.SUPPRESS,
        help="permutations per term (default 10000; 0 skips them)",
    )
    p.add_argument(
        "--block",
        type=_block,
        default=argparse.SUPPRESS,
        metavar="COL,...",
        help="permute within the levels of COL (or of several columns jointly, e.g. "
        "model,dataset); 'item' analyses item rows",
    )
    p.add_argument(
        "--runs",
        choices=["mean", "replicates"],
        default=argparse.SUPPRESS,
        help="average the repeated runs of a configuration first (default: mean) or count "
        "each run as a row (replicates)",
    )
    p.add_argument(
        "--items",
        choices=["random", "fixed"],
        default=argparse.SUPPRESS,
        help="with --block item: items as a random sample, each term tested against its "
        "term x item interaction (default: random), or fixed (one pooled residual)",
    )
    p.add_argument("--seed", type=int, default=argparse.SUPPRESS, help="seed (default 0)")
    p.add_argument(
        "--plot",
        default=None,
        metavar="FILE",
        help="save the η² chart (and the strongest interaction's heatmap) to FILE",
    )
    add_output_arguments(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run ``anova``."""
    from evalstats.attribution import factor_anova

    args.quiet = args.json
    obs, _ = load(args)
    params = params_from(
        args, "interactions", "ss_type", "n_resamples", "block", "runs", "items", "seed"
    )
    res = factor_anova(obs, factors=args.factors, **params)
    print(
        f"ANOVA: Type {['I', 'II', 'III'][res.ss_type - 1]} sums of squares, "
        f"{res.n_obs} rows (runs: {res.runs}"
        + (f", items: {res.items}" if res.items else "")
        + f"), {res.n_resamples} {'sign flips' if res.method == 'sign-flip' else 'permutations'}"
        f" (seed {res.seed})",
        file=sys.stderr,
    )
    if args.plot:
        _plot(obs, res, args.plot)
    recorded = {
        "factors": args.factors,
        "interactions": res.interactions,
        "ss_type": res.ss_type,
        "n_resamples": res.n_resamples,
        "block": res.block,
        "runs": res.runs,
        "seed": res.seed,
    }
    if res.items is not None:
        recorded["items"] = res.items
    emit(
        res.to_frame(),
        args,
        command="anova",
        params=recorded,
        extra={"ss_type": res.ss_type, "method": res.method, "n_obs": res.n_obs},
    )
    return 0


def _plot(obs, res, path: str) -> None:
    from evalstats.attribution import interaction_means
    from evalstats.plots import paper_style, plot_anova_effects, plot_interaction_heatmap
    from evalstats.plots._style import require_plotting

    plt, _ = require_plotting()
    term = res.strongest_interaction()
    with paper_style():
        if term is None:
            fig = plot_anova_effects(res)
        else:
            fig, (a1, a2) = plt.subplots(1, 2, figsize=(7.0, 3.0), layout="constrained")
            plot_anova_effects(res, ax=a1)
            plot_interaction_heatmap(interaction_means(obs, term=term), ax=a2)
        save_figure(fig, path)
    plt.close(fig)
    print(f"wrote {path}", file=sys.stderr)
