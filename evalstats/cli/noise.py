"""``evalstats noise``: variance components over items x prompt variants x runs."""

from __future__ import annotations

import argparse
import sys

from evalstats._output import save_figure
from evalstats.cli._common import add_input_arguments, add_output_arguments, emit, load, params_from


def _csv(text: str) -> tuple[str, ...]:
    return tuple(b.strip() for b in text.split(",") if b.strip())


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser(
        "noise",
        help="where the noise comes from: item, prompt, item x prompt and run variance",
        description="Variance components of item scores over items x prompt variants x runs, "
        "per model (and per pair of models with --pairs): ANOVA estimators for balanced designs, "
        "REML otherwise, with intervals. --check compares the standard error they predict with "
        "the item bootstrap and ReliableEval's Delta(n).",
    )
    add_input_arguments(p)
    S = argparse.SUPPRESS
    p.add_argument("--pairs", action="store_true", help="also decompose paired model differences")
    p.add_argument("--method", choices=["auto", "anova", "reml"], default=S)
    p.add_argument("--confidence-level", dest="confidence_level", type=float, default=S)
    p.add_argument(
        "--n-resamples",
        dest="n_resamples",
        type=int,
        default=S,
        help="draws of the ANOVA interval pivots (default 10000)",
    )
    p.add_argument("--seed", type=int, default=S, help="random seed (default 0)")
    p.add_argument(
        "--by",
        type=_csv,
        default=S,
        metavar="COL,...",
        help="group columns (default model,dataset)",
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="write the comparison with the resampling answers instead of the components",
    )
    add_output_arguments(p)
    p.add_argument("--plot", default=None, metavar="FILE", help="save the stacked-bar figure")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run ``noise``."""
    from evalstats.noise import resampling_check, variance_components

    args.quiet = args.json
    obs, _ = load(args)
    params = params_from(args, "method", "confidence_level", "n_resamples", "seed", "by")
    comps = variance_components(obs, pairs=args.pairs, **params)
    if args.check:
        check_params = {k: v for k, v in params.items() if k in ("seed", "by")}
        out = resampling_check(obs, components=comps, **check_params)
        emit(out, args, command="noise", params={**params, "check": True})
    else:
        emit(comps, args, command="noise", params={**params, "pairs": args.pairs})
    if args.plot:
        from evalstats.plots import paper_style, plot_noise_components

        with paper_style():
            fig = plot_noise_components(comps)
            save_figure(fig, args.plot)
        print(f"wrote {args.plot}", file=sys.stderr)
    return 0
