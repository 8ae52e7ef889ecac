"""``evalstats normality``: normality tests of the run accuracies of each configuration."""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from evalstats._text import for_terminal
from evalstats.cli._common import add_input_arguments, add_output_arguments, emit, load, params_from
from evalstats.cli.correlate import add_stability_source, read_stability_file, save_figure


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser(
        "normality",
        help="normality tests of run accuracies (Lilliefors, Shapiro-Wilk, Anderson-Darling, KS)",
        description="Per group (default: model, dataset, variant), test whether the N run "
        "accuracies look normal: Lilliefors-corrected KS (default), Shapiro-Wilk, "
        "Anderson-Darling, or the plain KS with estimated parameters (uncorrected).",
    )
    add_input_arguments(p)
    add_stability_source(p)
    p.add_argument(
        "--method",
        choices=["lilliefors", "shapiro", "anderson", "ks", "all"],
        default=argparse.SUPPRESS,
        help="test (default: lilliefors)",
    )
    p.add_argument(
        "--low-power-n",
        dest="low_power_n",
        type=int,
        default=argparse.SUPPRESS,
        help="flag groups with fewer runs than this as low power (default: 20)",
    )
    add_output_arguments(p)
    p.add_argument(
        "--plot",
        type=Path,
        default=None,
        metavar="FILE",
        help="save histograms of the run accuracies with mean, median, 5%% and "
        "95%% quantiles (.png, .pdf, .svg)",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run ``normality``."""
    from evalstats.normality import run_distribution, run_normality

    args.quiet = args.json
    if args.from_stability:
        data = read_stability_file(args.path)
    else:
        data, _ = load(args)
    params = params_from(args, "by", "method", "low_power_n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = run_normality(data, **params)
        dist = run_distribution(data, **params_from(args, "by")) if args.plot else None
    for w in caught:
        print(f"evalstats: warning: {for_terminal(str(w.message))}", file=sys.stderr)
    if dist is not None:
        from evalstats.plots import paper_style
        from evalstats.plots.stability import plot_run_distribution

        with paper_style():
            save_figure(plot_run_distribution(dist), args.plot)
    emit(result, args, command="normality", params=params)
    return 0
