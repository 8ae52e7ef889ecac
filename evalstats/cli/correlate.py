"""``evalstats correlate``: correlation matrix over the groups of the stability table."""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from evalstats._text import for_terminal
from evalstats.cli._common import add_input_arguments, add_output_arguments, emit, load, params_from

if TYPE_CHECKING:
    import polars as pl


def _names(text: str) -> tuple[str, ...]:
    names = tuple(p.strip() for p in text.split(",") if p.strip())
    if not names:
        raise argparse.ArgumentTypeError("expected column names separated by commas")
    return names


def read_stability_file(path: str | Path) -> pl.DataFrame:
    """Read a stability table written by ``evalstats stability --out`` (.parquet, .jsonl, .csv).

    In CSV, ``acc_per_run`` is a JSON list per row (as ``--out x.csv`` writes it); it is
    decoded back to a list column.
    """
    import polars as pl

    from evalstats.errors import IngestError
    from evalstats.io._files import polars_path

    p = Path(path)
    if not p.is_file():
        raise IngestError("no such file (expected a stability table)", path=str(p))
    suffix = p.suffix.lower()
    try:
        if suffix in (".parquet", ".pq"):
            frame = pl.read_parquet(polars_path(p))
        elif suffix in (".jsonl", ".ndjson"):
            frame = pl.read_ndjson(polars_path(p))
        elif suffix == ".csv":
            frame = pl.read_csv(polars_path(p))
        else:
            raise IngestError(
                f"expected a .parquet, .jsonl or .csv stability table, got {p.suffix or 'no'!r} suffix",
                path=str(p),
            )
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise IngestError(f"cannot read the stability table ({exc})", path=str(p)) from None
    if "acc_per_run" in frame.columns and frame.schema["acc_per_run"] == pl.String:
        try:
            lists = [
                None if v is None else [float(x) for x in json.loads(v)]
                for v in frame["acc_per_run"]
            ]
        except (ValueError, TypeError, RecursionError) as exc:
            raise IngestError(
                f"expected a JSON list of numbers per row ({exc})",
                path=str(p),
                column="acc_per_run",
            ) from None
        frame = frame.with_columns(pl.Series("acc_per_run", lists, dtype=pl.List(pl.Float64)))
    return frame


def add_stability_source(p: argparse.ArgumentParser) -> None:
    """``--from-stability`` and the stability-table options (``--by``, ``--normalize``, ...)."""
    p.add_argument(
        "--from-stability",
        dest="from_stability",
        action="store_true",
        help="PATH is a stability table written by `evalstats stability --out` (.parquet, .jsonl, .csv)",
    )
    p.add_argument(
        "--by",
        type=_names,
        default=argparse.SUPPRESS,
        metavar="COL,...",
        help="group columns (default: model,dataset,variant)",
    )


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser(
        "correlate",
        conflict_handler="resolve",  # our --columns replaces the loader's (use --roles)
        help="correlations (Spearman, Kendall, Pearson) between stability measures across groups",
        description="Build the stability table (one row per model, dataset and variant) and "
        "correlate its columns across groups, with permutation p-values (exact for up to "
        "7 groups with the default --n-resamples).",
    )
    add_input_arguments(p)  # its --roles give the loader's column roles (--columns is ours)
    p.add_argument(
        "--columns",
        dest="corr_columns",
        type=_names,
        default=argparse.SUPPRESS,
        metavar="COL,...",
        help="columns to correlate (default: tar_a,tar_r,spread,acc_mean,input_len,output_len)",
    )
    p.add_argument(
        "--method",
        choices=["spearman", "kendall", "pearson"],
        default=argparse.SUPPRESS,
        help="correlation coefficient (default: spearman)",
    )
    p.add_argument(
        "--alternative",
        choices=["two-sided", "less", "greater"],
        default=argparse.SUPPRESS,
        help="alternative hypothesis (default: two-sided)",
    )
    p.add_argument(
        "--n-resamples",
        dest="n_resamples",
        type=int,
        default=argparse.SUPPRESS,
        help="permutations for pvalue_perm (default: 9999; 0 skips it)",
    )
    p.add_argument("--seed", type=int, default=argparse.SUPPRESS, help="seed (default: 0)")
    add_stability_source(p)
    p.add_argument(
        "--normalize",
        choices=["none", "strip", "lower"],
        default=argparse.SUPPRESS,
        help="how the stability table compares answers and responses (default: none)",
    )
    add_output_arguments(p)
    p.add_argument(
        "--plot",
        type=Path,
        default=None,
        metavar="FILE",
        help="save the correlation heatmap (.png, .pdf, .svg)",
    )
    p.set_defaults(run=run)


def stability_frame(args: argparse.Namespace) -> pl.DataFrame:
    """The stability table: read from PATH (``--from-stability``) or computed from the dump."""
    if args.from_stability:
        return read_stability_file(args.path)
    from evalstats.stability import stability_table

    obs, _ = load(args)
    params = params_from(args, "by", "normalize")
    if getattr(args, "on_mismatch", "error") == "intersect":
        params["on_mismatch"] = args.on_mismatch
    return stability_table(obs, **params)


def save_figure(fig, path: Path) -> None:
    """Save ``fig`` to ``path`` and say so on stderr."""
    from evalstats._output import save_figure as save

    save(fig, path, bbox_inches="tight")
    print(f"wrote {path}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    """Run ``correlate``."""
    from evalstats.correlation import correlation_matrix

    args.quiet = args.json
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = stability_frame(args)
        params = params_from(args, "method", "alternative", "n_resamples", "seed")
        if hasattr(args, "corr_columns"):
            params["columns"] = list(args.corr_columns)
        corr = correlation_matrix(table, **params)
    for w in caught:
        print(f"evalstats: warning: {for_terminal(str(w.message))}", file=sys.stderr)
    if args.plot is not None:
        from evalstats.plots import paper_style
        from evalstats.plots.stability import plot_correlation_heatmap

        with paper_style():
            save_figure(plot_correlation_heatmap(corr), args.plot)
    emit(corr, args, command="correlate", params=params)
    return 0
