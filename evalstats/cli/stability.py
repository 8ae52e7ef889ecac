"""``evalstats stability``: run-to-run stability of repeated identical runs (TARa@N, TARr@N)."""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from evalstats._text import for_terminal
from evalstats.cli._common import add_input_arguments, add_output_arguments, emit, load, params_from


def _by(text: str) -> tuple[str, ...]:
    names = tuple(p.strip() for p in text.split(",") if p.strip())
    if not names:
        raise argparse.ArgumentTypeError("expected column names separated by commas")
    return names


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser(
        "stability",
        help="accuracy spread and total agreement (TARa@N, TARr@N) over identical runs",
        description="Per configuration run N times: run accuracies (min, median, max), TARa@N, "
        "TARr@N, best and worst possible accuracy. --view curve gives TAR@k for k=2..N, "
        "--view items the least stable items; --table prints the paper's Table 2.",
    )
    add_input_arguments(p)
    p.add_argument(
        "--by",
        type=_by,
        default=argparse.SUPPRESS,
        metavar="COL,...",
        help="group columns (default: model,dataset,variant)",
    )
    p.add_argument(
        "--normalize",
        choices=["none", "strip", "lower"],
        default=argparse.SUPPRESS,
        help="compare answers and responses exactly (default), stripped, or stripped and lower-cased",
    )
    p.add_argument(
        "--all-unparsed",
        dest="all_unparsed",
        choices=["disagree", "agree"],
        default=argparse.SUPPRESS,
        help="TARa of an item unparsed in every run: disagree (default) or agree (the authors' "
        "evaluate.py convention)",
    )
    p.add_argument(
        "--view",
        choices=["table", "curve", "items"],
        default="table",
        help="stability table (default), TAR@k curve, or per-item view",
    )
    p.add_argument(
        "--top",
        type=int,
        default=argparse.SUPPRESS,
        help="with --view items: the N least stable items per group",
    )
    add_output_arguments(p)
    p.add_argument(
        "--table",
        choices=["markdown", "latex"],
        default=None,
        help='print the paper\'s Table 2 ("min (median) max; TARa@N, TARr@N" per task x model)',
    )
    p.add_argument(
        "--plot",
        type=Path,
        default=None,
        metavar="FILE",
        help="save a heatmap of TARr@N (or --plot-value tar_a), model x task (the paper's "
        "Figures 3 and 4)",
    )
    p.add_argument(
        "--plot-value",
        dest="plot_value",
        choices=["tar_r", "tar_a"],
        default="tar_r",
        help="the value the --plot heatmap shows (default tar_r)",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run ``stability``."""
    from evalstats.errors import ParameterError
    from evalstats.stability import (
        format_stability_table,
        stability_table,
        tar_curve,
        unstable_items,
    )

    if args.plot is not None and args.view != "table":
        raise ParameterError("`--plot` draws the stability table; it cannot be used with --view.")
    if args.table and args.view != "table":
        raise ParameterError(
            "`--table` formats the stability table; it cannot be used with --view."
        )
    if args.table and args.json:
        raise ParameterError("use either `--table` or `--json`, not both.")
    if hasattr(args, "top") and args.view != "items":
        raise ParameterError("`--top` applies to --view items only.")
    args.quiet = args.json
    obs, _ = load(args)
    names = ["by", "normalize"] + (["all_unparsed"] if args.view == "table" else [])
    params = params_from(args, *names, *(["top"] if args.view == "items" else []))
    if args.on_mismatch == "intersect":  # with keep, stability still needs the same items
        params["on_mismatch"] = args.on_mismatch
    function = {"table": stability_table, "curve": tar_curve, "items": unstable_items}[args.view]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        frame = function(obs, **params)
    for w in caught:
        print(f"evalstats: warning: {for_terminal(str(w.message))}", file=sys.stderr)
    if args.plot is not None:
        from evalstats.cli.correlate import save_figure
        from evalstats.plots import paper_style
        from evalstats.plots.stability import plot_tar_heatmap

        with paper_style():
            save_figure(plot_tar_heatmap(frame, value=args.plot_value), args.plot)
    if args.table:
        sys.stdout.write(format_stability_table(frame, style=args.table) + "\n")
        if args.out is not None:
            emit(frame, argparse.Namespace(out=args.out, json=False), command="stability")
        return 0
    command = "stability" if args.view == "table" else f"stability --view {args.view}"
    emit(frame, args, command=command, params=params)
    return 0
