"""``evalstats report``: every analysis the dump supports, as an HTML report, tables and figures."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from evalstats._text import for_terminal
from evalstats.cli._common import add_input_arguments, add_variant_factors_argument, load
from evalstats.errors import ParameterError


def _names(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise argparse.ArgumentTypeError("expected names separated by commas, e.g. a,b")
    return names


def _value(text: str) -> Any:
    """A literal (number, bool, None, list, ...) when it parses as one; else text or a list."""
    import ast  # here: 20 ms that `evalstats --help` need not pay

    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        if "," in text:
            return [t.strip() for t in text.split(",") if t.strip()]
        return text


def parse_options(items: list[str] | None) -> dict[str, dict[str, Any]]:
    """``["anova.n_resamples=2000", ...]`` -> ``{"anova": {"n_resamples": 2000}}``."""
    out: dict[str, dict[str, Any]] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        analysis, dot, param = key.strip().partition(".")
        if not sep or not dot or not analysis or not param:
            raise ParameterError(
                f"`--option` expects ANALYSIS.PARAMETER=VALUE, e.g. anova.n_resamples=2000, "
                f"got {item!r}."
            )
        out.setdefault(analysis, {})[param.strip()] = _value(value.strip())
    return out


def _workers(text: str) -> int | str:
    if text == "auto":
        return text
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer or 'auto', got {text!r}")
    return n


def add_report_arguments(p: argparse.ArgumentParser) -> None:
    """The options ``report`` and ``demo`` share: seed, options, figures, --quiet."""
    p.add_argument(
        "--seed", type=int, default=argparse.SUPPRESS, help="seed of every step (default 0)"
    )
    p.add_argument(
        "--option",
        dest="options",
        action="append",
        metavar="ANALYSIS.PARAM=VALUE",
        help="a parameter of one analysis, e.g. anova.n_resamples=2000 (repeatable; "
        "analyses: moments, nstar, converge, stability, normality, correlation, anova, "
        "attribution, intervals, compare, ranks, friedman, audit, providers)",
    )
    p.add_argument(
        "--skip",
        type=_names,
        default=[],
        metavar="ANALYSIS,...",
        help="analyses not to run, e.g. attribution",
    )
    p.add_argument(
        "--figure-format",
        "--figures",
        dest="figure_format",
        type=_names,
        default=["png", "pdf"],
        metavar="png,pdf,svg|all|none",
        help="figure files to write (default png,pdf; the HTML page embeds PNG; 'none' draws "
        "no figure: tables and text only)",
    )
    p.add_argument("--serif", action="store_true", help="serif fonts in the figures")
    p.add_argument(
        "--quiet",
        action="store_true",
        help="no progress (bar or lines) and no ingest summary on stderr",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help='print {"command", "params", "paths", "design", "headlines", "skipped"} as JSON on '
        "stdout (the files written and each analysis's reading); implies --quiet",
    )


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser(
        "report",
        help="run every analysis the data supports; write an HTML report, tables and figures",
        description="Decide from the columns present which analyses apply (variants: moments, "
        "n*, stopping rule; repeated runs: stability, normality, correlations; factor columns: "
        "ANOVA and attribution; several models: intervals, comparisons, rank uncertainty; "
        "--default: reversal audit; providers or errors: provider audit), run them, and write "
        "report.html (self-contained), report.md, results.json, figures/ and tables/ into "
        "--out. Analyses the data does not support are listed with the reason.",
    )
    add_input_arguments(p, mismatch="auto")
    p.add_argument(
        "--factors",
        type=_names,
        default=None,
        metavar="A,B,...",
        help="factor columns for ANOVA and attribution (default: every factor column)",
    )
    p.add_argument(
        "--default",
        default=None,
        metavar="FACTOR=VALUE,...",
        help="the default configuration, e.g. template=plain,shots=0 (enables the audit)",
    )
    add_variant_factors_argument(p)
    p.add_argument(
        "--out",
        type=Path,
        default=Path("evalstats-report"),
        help="output folder (default: ./evalstats-report); an earlier report there is replaced",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="write into a folder that holds other files (same-named files are replaced)",
    )
    add_report_arguments(p)
    p.add_argument(
        "--workers",
        type=_workers,
        default="auto",
        metavar="N|auto",
        help="processes that run the analyses (default auto: the usable cores for 20,000 rows "
        "or more, else 1); the report is the same for any number",
    )
    p.set_defaults(run=run)


def report_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """Keyword arguments of :func:`evalstats.report.audit_report` set on the command line."""
    kwargs: dict[str, Any] = {
        "options": parse_options(args.options),
        "skip": args.skip,
        "workers": args.workers,
    }
    if hasattr(args, "seed"):
        kwargs["seed"] = args.seed
    return kwargs


def progress_wanted(args: argparse.Namespace) -> bool:
    """Progress unless --quiet: a bar on a terminal, one timed line per step in a log."""
    return not args.quiet


def finish(report: Any, html: Path, args: argparse.Namespace, *, command: str = "report") -> None:
    """Say what was written and skipped (stderr) and where the report is (stdout).

    With ``--json``: one JSON document on stdout instead, with the paths written, the design's
    headline and each analysis's reading.
    """
    from evalstats._text import plural

    out = html.parent
    if getattr(args, "json", False):
        sys.stdout.write(json.dumps(report_json(report, html, args, command=command)) + "\n")
        return
    if not args.quiet:
        print(
            f"evalstats {command}: {plural(len(report.analyses), 'analysis', 'analyses')}, "
            f"written to {out}/ (report.html, report.md, results.json, figures/, tables/)",
            file=sys.stderr,
        )
        for s in report.skipped:
            print(f"  skipped {s.key}: {for_terminal(s.reason)}", file=sys.stderr)
    print(html)


def report_json(report: Any, html: Path, args: argparse.Namespace, *, command: str) -> dict:
    """``report --json`` and ``demo --json``: where the files are and what the report says."""
    from evalstats.cli._common import _jsonable
    from evalstats.design import headline

    out = html.parent
    params = {
        k: getattr(args, k)
        for k in ("seed", "options", "skip", "figure_format", "workers", "default", "factors")
        if getattr(args, k, None) not in (None, [])
    }
    design = getattr(report, "design", None)
    return _jsonable(
        {
            "command": command,
            "params": params,
            "paths": {
                "folder": out,
                "html": html,
                "markdown": out / "report.md",
                "results": out / "results.json",
                "figures": out / "figures",
                "tables": out / "tables",
            },
            "design": headline(design) if design is not None else None,
            "headlines": [
                {"analysis": a.key, "title": a.title, "reading": a.reading} for a in report.analyses
            ],
            "skipped": [{"analysis": s.key, "reason": s.reason} for s in report.skipped],
        }
    )


def run(args: argparse.Namespace) -> int:
    """Run ``report``."""
    from evalstats.cli.audit import _pairs
    from evalstats.report import audit_report
    from evalstats.report._parallel import resolve_workers
    from evalstats.report._staging import check_output
    from evalstats.report._write import check_figure_formats
    from evalstats.report._writer import ReportWriter

    args.quiet = args.quiet or args.json
    # check what can be checked before the (slow) read and analyses
    default = _pairs(args.default) if args.default else None
    kwargs = report_kwargs(args)
    figures = bool(check_figure_formats(args.figure_format))
    check_output(args.out, force=args.force)
    if args.workers != 1:
        from evalstats._procs import start_early

        # the workers' imports (in the fork server) run while the input is read
        start_early(figures=figures)
    obs, ingest = load(args)
    loader_options = {
        k: getattr(args, k)
        for k in (
            "columns",
            "on_invalid",
            "score_scale",
            "rescale",
            "metric_range",
            "lower_is_better",
            "metric_filter",
        )
        if hasattr(args, k)
    }
    if hasattr(args, "metric_filter"):
        loader_options["metric_filter"] = args.metric_filter
    if args.on_mismatch != "auto":
        loader_options["on_mismatch"] = args.on_mismatch
    for name in ("roles", "design_file", "model_name", "copies"):
        if hasattr(args, name):
            loader_options[name] = str(getattr(args, name))
    progress = progress_wanted(args)
    # each analysis's tables and figures are written (into a staging folder inside --out) as
    # it finishes, the figures drawn in worker processes while the other analyses run; the
    # pages come last, so an interrupted run leaves no report.html that looks complete
    with ReportWriter(
        Path(args.out),
        figure_formats=args.figure_format,
        serif=args.serif,
        progress=progress,
        force=args.force,
        workers=resolve_workers(args.workers, ingest.rows_kept),
    ) as writer:
        report = audit_report(
            obs,
            ingest=ingest,
            source={"path": args.path, "format": ingest.format, "options": loader_options},
            factors=args.factors,
            default=default,
            progress=progress,
            on_mismatch=args.on_mismatch,
            on_result=writer.add,
            design=args.design,
            **(
                {"variant_factors": args.variant_factors}
                if hasattr(args, "variant_factors")
                else {}
            ),
            **kwargs,
        )
        html = writer.finish(report)
    finish(report, html, args)
    if report.failed:
        # the report is written; an analysis that failed through a bug of ours exits 1
        keys = ", ".join(s.key for s in report.failed)
        print(
            f"evalstats: error: {len(report.failed)} analysis(es) failed through an evalstats "
            f"bug ({keys}; the reason is in the report); the others were written.",
            file=sys.stderr,
        )
        return 1
    return 0
