"""The ``evalstats`` command line: a thin layer over the public API.

Each subcommand lives in its own module with ``add_parser(subparsers)`` and ``run(args) -> int``.
User errors (any :class:`~evalstats.errors.EvalstatsError`) print one line
``evalstats: error: ...`` to stderr and exit with status 2; ``--debug`` (before or after the
command) re-raises instead. On a terminal a command prints a short table and a verdict line;
piped, the full table as CSV (:mod:`evalstats.cli._terminal`).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from evalstats._text import for_terminal
from evalstats.errors import EvalstatsError

__all__ = ["main"]

#: Subcommand modules, in the order ``evalstats --help`` lists them.
COMMANDS: tuple[str, ...] = (
    "ingest",
    "export",
    "design",
    "demo",
    "report",
    "anova",
    "attribute",
    "normality",
    "correlate",
    "moments",
    "nstar",
    "stability",
    "intervals",
    "compare",
    "friedman",
    "ppi",
    "audit",
    "converge",
    "providers",
    "noise",
    "plan",
)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand registered."""
    from evalstats import __version__

    parser = argparse.ArgumentParser(
        prog="evalstats",
        description="Decide whether an LLM evaluation claim holds, from recorded prediction dumps.",
    )
    parser.add_argument("--version", action="version", version=f"evalstats {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of user errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        module = importlib.import_module(f"evalstats.cli.{name.replace('-', '_')}")
        module.add_parser(sub)
    for command in sub.choices.values():  # `--debug` after the command too
        command.add_argument(
            "--debug",
            action="store_true",
            default=argparse.SUPPRESS,  # absent: the top level's value stands
            help="show tracebacks of user errors",
        )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        from evalstats._reproducible import reproducible
        from evalstats.aggregate import item_set_rule

        rule = getattr(args, "on_mismatch", "error")
        with item_set_rule("keep" if rule == "auto" else rule), reproducible():
            return int(args.run(args) or 0)
    except EvalstatsError as exc:
        if args.debug:
            raise
        from evalstats.cli._common import cli_spelling

        # the flags as typed (`--factors`, not the library's `factors`), on one line whatever
        # the input put in the message (newlines, terminal escapes)
        message = cli_spelling(str(exc), parser, args.command)
        print(f"evalstats: error: {for_terminal(message)}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `evalstats ... | head`
        return 0
