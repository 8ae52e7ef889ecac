"""``evalstats compare``: paired differences between every pair of models, or two runs (A/B)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from evalstats.cli._common import (
    add_input_arguments,
    add_output_arguments,
    add_target_arguments,
    emit,
    load,
    params_from,
    warned,
)
from evalstats.errors import ParameterError


def _cols(text: str) -> tuple[str, ...]:
    return tuple(b.strip() for b in text.split(",") if b.strip())


def _labels(text: str) -> tuple[str, str]:
    names = [b.strip() for b in text.split(",")]
    if len(names) != 2 or not all(names) or names[0] == names[1]:
        raise argparse.ArgumentTypeError("expected two different names, e.g. baseline,new")
    return names[0], names[1]


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser(
        "compare",
        help="paired differences between every pair of models, or between two runs (A/B)",
        description="Every model pair: mean difference, paired test, corrected p-value, an "
        "interval that agrees with the corrected decision (the `interval` column says what it "
        "guarantees), correlation of paired scores and minimum detectable difference. Unpaired "
        "units and missing runs are counted and warned about. With two paths, A B (two dumps "
        "of any formats, e.g. before and after a change, usually of the same model): the two "
        "runs paired on items (and on the prompt variants both ran), the design-aware paired "
        "test, and a verdict with the interval and the minimum detectable difference; "
        "--margin adds the non-inferiority and equivalence verdicts.",
    )
    add_input_arguments(p)
    p.add_argument(
        "path_b",
        nargs="?",
        default=None,
        metavar="PATH_B",
        help="a second dump: compare the two runs PATH (A) and PATH_B (B), paired on items",
    )
    p.add_argument(
        "--label",
        dest="labels",
        type=_labels,
        default=None,
        metavar="A,B",
        help="names of the two runs (default: the paths' names), e.g. baseline,new",
    )
    p.add_argument(
        "--margin",
        type=float,
        default=None,
        metavar="M",
        help="with two runs: the largest difference that does not matter, on the metric's "
        "scale (0.01 = one accuracy point); adds the non-inferiority (one-sided) and "
        "equivalence (TOST) verdicts",
    )
    p.add_argument(
        "--paired-on",
        dest="paired_on",
        choices=["items", "variants"],
        default=None,
        help="paired unit (default: items)",
    )
    p.add_argument(
        "--correction",
        choices=["holm", "bonferroni", "sidak", "hochberg", "bh", "maxt", "romano-wolf", "none"],
        default=None,
        help="multiple-comparison correction (default: holm); maxt and romano-wolf resample "
        "all pairs jointly (bootstrap)",
    )
    p.add_argument(
        "--family",
        choices=["group", "global"],
        default=None,
        help="pairs corrected together: per group of --by (default) or all",
    )
    p.add_argument(
        "--method",
        choices=["auto", "t", "permutation", "mcnemar", "mcnemar-midp", "bootstrap"],
        default=None,
        help="paired test (default: auto = exact McNemar for 0/1 items, paired t from 30 "
        "shared units, else permutation)",
    )
    p.add_argument(
        "--stop-after",
        dest="stop_after",
        type=int,
        default=None,
        metavar="H",
        help="permutation tests stop drawing once H sign vectors were as extreme (default: 20)",
    )
    p.add_argument("--alternative", choices=["two-sided", "less", "greater"], default=None)
    p.add_argument("--confidence-level", dest="confidence_level", type=float, default=None)
    p.add_argument("--power", type=float, default=None, help="power of the MDD (default: 0.8)")
    p.add_argument("--n-resamples", dest="n_resamples", type=int, default=None)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument(
        "--by",
        type=_cols,
        default=None,
        metavar="COL,...",
        help="groups (default: dataset,metric and every setting held fixed that varies: a "
        "provider, a temperature; given, exactly these groups)",
    )
    p.add_argument(
        "--compare",
        dest="column",
        default=None,
        metavar="COLUMN",
        help="column whose values are compared (default: model), e.g. a prompt factor",
    )
    add_target_arguments(p)
    add_output_arguments(p)
    p.set_defaults(run=run)


#: Options of the model comparison that two runs do not take.
_MODELS_ONLY = {
    "paired_on": "--paired-on",
    "correction": "--correction",
    "family": "--family",
    "column": "--compare",
    "stop_after": "--stop-after",
    "over": "--over",
    "variant_factors": "--variant-factors",
}


def run(args: argparse.Namespace) -> int:
    """Run ``compare``."""
    from evalstats.compare import compare_models

    if args.path_b is not None:
        return run_two(args)
    for name, flag in (("labels", "--label"), ("margin", "--margin")):
        if getattr(args, name) is not None:
            raise ParameterError(f"`{flag}` compares two runs: give two paths, A B.")
    args.quiet = args.json
    obs, _ = load(args)
    params = params_from(
        args,
        "paired_on",
        "correction",
        "family",
        "method",
        "alternative",
        "confidence_level",
        "power",
        "n_resamples",
        "seed",
        "by",
        "column",
        "stop_after",
        "over",
        "cluster",
        "variant_factors",
    )
    # load() applied the item-set rule (--on-mismatch); compare_models applies the same rule
    result = warned(compare_models, obs, **params)
    emit(result, args, command="compare", params=params)
    return 0


def _default_labels(a: str, b: str) -> tuple[str, str]:
    """The runs' names: the last part of each path, unless they are the same or globs."""
    names = tuple(Path(p.rstrip("/")).name or p for p in (a, b))
    if names[0] == names[1] or any(c in "".join(names) for c in "*?["):
        return "a", "b"
    return names  # type: ignore[return-value]


def run_two(args: argparse.Namespace) -> int:
    """``compare A B``: two runs, paired on items (:func:`evalstats.compare.compare_runs`)."""
    from evalstats.compare import compare_runs

    for name, flag in _MODELS_ONLY.items():
        if getattr(args, name, None) is not None:
            raise ParameterError(
                f"`{flag}` compares the models of one dump; with two paths (A/B of two runs) "
                "leave it out."
            )
    labels = args.labels or _default_labels(str(args.path), str(args.path_b))
    args.quiet = args.json
    sides = []
    for label, path in zip(labels, (args.path, args.path_b)):
        if not args.quiet:
            print(f"{label}: {path}", file=sys.stderr)
        side = argparse.Namespace(**vars(args))
        side.path = path
        obs = load(side)[0]
        if args.cluster is not None and args.cluster != "cluster":
            names = obs.collect_schema().names()
            if args.cluster not in names:
                raise ParameterError(
                    f"`--cluster {args.cluster}`: {path} has no column {args.cluster!r} "
                    f"(columns: {', '.join(names)})."
                )
            obs = obs.drop([c for c in ("cluster",) if c in names]).rename(
                {args.cluster: "cluster"}
            )
        sides.append(obs)
    params = params_from(
        args,
        "method",
        "alternative",
        "confidence_level",
        "power",
        "n_resamples",
        "seed",
        "by",
        "margin",
    )
    result = warned(compare_runs, sides[0], sides[1], labels=labels, **params)
    emit(result, args, command="compare", params={**params, "labels": list(labels)})
    return 0
