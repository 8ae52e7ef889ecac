"""``evalstats attribute``: attribute unit scores to factors with xgboost (TreeSHAP) or OLS."""

from __future__ import annotations

import argparse
import sys

from evalstats._output import save_figure
from evalstats.cli._common import add_input_arguments, add_output_arguments, emit, load, params_from
from evalstats.cli.anova import _factors


def _block(text: str) -> str | tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    if not names:
        raise argparse.ArgumentTypeError("expected column names separated by commas")
    return names[0] if len(names) == 1 else names


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser(
        "attribute",
        help="factor importance: xgboost mean |SHAP| with a null band, or OLS",
        description="Attribute unit scores to configuration factors: mean |SHAP| per factor "
        "against a null band from refits on permuted scores, cross-validated R², and (linear) "
        "coefficients with confidence intervals per level and partial R² per factor.",
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
        "--method",
        choices=["xgboost", "linear"],
        default=argparse.SUPPRESS,
        help="model (default xgboost)",
    )
    p.add_argument(
        "--n-null",
        dest="n_null",
        type=int,
        default=argparse.SUPPRESS,
        help="refits on permuted scores for the null band (default 30)",
    )
    p.add_argument(
        "--runs",
        choices=["mean", "replicates"],
        default=argparse.SUPPRESS,
        help="average the repeated runs of a configuration first (default: mean) or count "
        "each run as a row (replicates)",
    )
    p.add_argument(
        "--block",
        type=_block,
        default=argparse.SUPPRESS,
        metavar="COL,...",
        help="remove each block's mean first (e.g. model,dataset): importances and R² within "
        "blocks",
    )
    p.add_argument("--seed", type=int, default=argparse.SUPPRESS, help="seed (default 0)")
    p.add_argument(
        "--plot",
        default=None,
        metavar="FILE",
        help="save the importance chart with its null band to FILE",
    )
    add_output_arguments(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run ``attribute``."""
    from evalstats.attribution import attribute

    args.quiet = args.json
    obs, _ = load(args)
    res = attribute(
        obs, factors=args.factors, **params_from(args, "method", "n_null", "runs", "block", "seed")
    )
    print(
        f"attribution: {res.method}, {res.n_obs} units, cross-validated R² "
        f"{res.cv_r_sq:.3f}, importance in {res.score_scale}",
        file=sys.stderr,
    )
    if args.plot:
        from evalstats.plots import paper_style, plot_attribution
        from evalstats.plots._style import require_plotting

        plt, _ = require_plotting()
        with paper_style():
            fig = plot_attribution(res)
            save_figure(fig, args.plot)
        plt.close(fig)
        print(f"wrote {args.plot}", file=sys.stderr)
    recorded = {
        "factors": args.factors,
        "method": res.method,
        "n_null": res.n_null,
        "runs": res.runs,
        "seed": res.seed,
        "confidence_level": res.confidence_level,
    }
    extra = {
        "cv_r_sq": res.cv_r_sq,
        "n_folds": res.n_folds,
        "score_scale": res.score_scale,
        "n_obs": res.n_obs,
        "coefficients": res.coefficients.to_dicts(),
    }
    emit(res.to_frame(), args, command="attribute", params=recorded, extra=extra)
    return 0
