"""Running the command line inside a test: its exit code, stdout and stderr, and their checks."""

from __future__ import annotations

import contextlib
import io

from evalstats.cli import main


def cli(*argv: str) -> tuple[int, str, str]:
    """``evalstats ARGV`` in this process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def one_line_error(code: int, err: str, *needles: str) -> str:
    """Exit 2 with one ``evalstats: error:`` line holding every needle, and no traceback."""
    assert code == 2, err[-3000:]
    lines = [ln for ln in err.splitlines() if ln.startswith("evalstats: error: ")]
    assert len(lines) == 1 and "Traceback" not in err, err[-3000:]
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


def ok(code: int, err: str) -> None:
    """Exit 0 and no traceback."""
    assert code == 0 and "Traceback" not in err, err[-3000:]
