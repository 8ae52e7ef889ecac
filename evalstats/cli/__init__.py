"""The ``evalstats`` command line: a thin layer over the public API.

Each subcommand lives in its own module with ``add_parser(subparsers)`` and ``run(args) -> int``.
User errors (any :class:`~evalstats.errors.EvalstatsError`) print one line
``evalstats: error: ...`` to stderr and exit with status 2; ``--debug`` (before or after the
command) re-raises instead. On a terminal a command prints a short table and a verdict line;
piped, the full table as CSV (:mod:`evalstats.cli._terminal`).
"""

from __future__ import annotations

import argparse
import errno
import importlib
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from typing import Any

from evalstats._text import for_terminal, for_terminal_lines
from evalstats.errors import EvalstatsError, OutputError

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


class Terminated(BaseException):  # noqa: N818 - a signal, like KeyboardInterrupt
    """SIGTERM arrived: unwind (staging folders and worker pools are cleaned up on the way)."""


@contextmanager
def _terminate_unwinds() -> Iterator[None]:
    """While the command runs, SIGTERM raises :class:`Terminated` instead of killing it."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        raise Terminated(signum)

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class _TerminalSafe:
    r"""Standard output and error as the commands write them: control characters shown, not run.

    Tables printed to stdout (CSV, the design, the stability table) and the notes, warnings and
    "wrote ..." lines on stderr carry model names, item ids, factor levels, labels and names
    from design files; a terminal would act on an escape sequence in one (set the window title,
    clear the screen, reorder text with a bidi override or a line separator). Every control
    character but the newline becomes a visible escape (:func:`for_terminal_lines`), whichever
    code built the message. Evalstats' own progress bar, which redraws its line with ``\r``,
    writes to :attr:`raw` (see :func:`evalstats._text.raw_stream`).
    """

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.raw = inner

    def write(self, text: str) -> int:
        self._inner.write(for_terminal_lines(text))
        return len(text)

    def flush(self) -> None:
        self._inner.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _error(message: str) -> None:
    print(f"evalstats: error: {for_terminal(message)}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status.

    User errors (:class:`~evalstats.errors.EvalstatsError`) and an output that cannot be
    written (a full disk, a file-size limit) print one line and return 2; Ctrl-C prints one
    line and returns 130, SIGTERM 143 (what a shell reports for the signal).
    """
    debug = False
    command: str | None = None
    try:
        with _terminate_unwinds():
            parser = build_parser()
            args = parser.parse_args(argv)
            debug, command = args.debug, args.command
            if args.command is None:
                parser.print_help(sys.stderr)
                return 2
            try:
                from evalstats._heartbeat import heartbeat
                from evalstats._reproducible import reproducible
                from evalstats.aggregate import item_set_rule
                from evalstats.report._progress import progress_mode

                rule = getattr(args, "on_mismatch", "error")
                quiet = bool(getattr(args, "quiet", False)) or getattr(args, "progress", 1) is False
                with (
                    redirect_stdout(_TerminalSafe(sys.stdout)),
                    redirect_stderr(_TerminalSafe(sys.stderr)),
                    item_set_rule("keep" if rule == "auto" else rule),
                    reproducible(),
                    # a command of minutes says now and then how far it is (stderr)
                    heartbeat(args.command, progress_mode(not quiet), stage="evalstats"),
                ):
                    code = int(args.run(args) or 0)
                    _flush_stdout()
                return code
            except EvalstatsError as exc:
                if args.debug:
                    raise
                from evalstats.cli._common import cli_spelling

                # the flags as typed (`--factors`, not the library's `factors`), on one line
                # whatever the input put in the message (newlines, terminal escapes)
                _error(cli_spelling(str(exc), parser, args.command))
                return 2
    except BrokenPipeError:  # `evalstats ... | head`
        return 0
    except KeyboardInterrupt:
        if debug:
            raise
        _error("interrupted (Ctrl-C); nothing more was written.")
        return 130
    except Terminated:
        if debug:
            raise
        _error("terminated (SIGTERM); nothing more was written.")
        return 143
    except OSError as exc:
        # a full disk or a file-size limit while writing an output no writer wrapped (stdout)
        if debug or exc.errno not in _NO_ROOM:
            raise
        _error(
            f"cannot write the output{f' {exc.filename!r}' if exc.filename else ''}: {exc.strerror}."
        )
        return 2
    except MemoryError:
        if debug:
            raise
        _error(
            f"ran out of memory in `evalstats {command}`; the input is too large for this "
            "machine (read fewer files, or fewer columns or models at a time)."
        )
        return 2


#: Errors of a write that ran out of room: disk full, file too large, quota exceeded.
_NO_ROOM = {errno.ENOSPC, errno.EFBIG, errno.EDQUOT}


def _flush_stdout() -> None:
    """Flush stdout now, so that a full disk behind it is an error line, not a shutdown note."""
    try:
        sys.stdout.flush()
    except OSError as exc:
        if isinstance(exc, BrokenPipeError) or exc.errno not in _NO_ROOM:
            raise
        raise OutputError(f"cannot write the output to stdout: {exc.strerror}.") from None
