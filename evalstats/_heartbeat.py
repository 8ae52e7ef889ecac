"""Progress inside a long analysis: ``report: nstar 120 of 325 groups (41 s)``, now and then.

The report's progress (:mod:`evalstats.report._progress`) says when an analysis ends; an
analysis of minutes (n* over hundreds of groups, thousands of ANOVA permutations) would leave
the terminal silent meanwhile. The loops of those analyses call :func:`beat` with how far
they are; inside a :func:`heartbeat` block with progress on, the first line comes after
``FIRST`` seconds and the next ones at most every ``EVERY`` seconds, so short analyses print
nothing. Lines go to stderr (stdout stays the command's output); on a terminal each line first
clears the line a progress bar may be drawing on.

The mode crosses into the report's worker processes through the environment
(``EVALSTATS_PROGRESS``, which workers adopt from the main process); the state is per process
and shared by its threads (the groups of :func:`evalstats._threads.parallel_map`).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Iterator

__all__ = ["ENV", "beat", "heartbeat"]

#: Environment variable naming the progress mode (``bar`` or ``lines``) for worker processes.
ENV = "EVALSTATS_PROGRESS"
#: Seconds before the first line, and at least between two lines (``EVALSTATS_PROGRESS_EVERY``
#: overrides both, e.g. 0 in tests).
FIRST = 5.0
EVERY = 10.0

_lock = threading.Lock()
_state: dict[str, object] = {}


def _intervals() -> tuple[float, float]:
    raw = os.environ.get("EVALSTATS_PROGRESS_EVERY", "").strip()
    try:
        every = float(raw)
    except ValueError:
        return FIRST, EVERY
    return (every, every) if every >= 0 else (FIRST, EVERY)


@contextlib.contextmanager
def heartbeat(label: str, mode: str | None = None, stage: str = "report") -> Iterator[None]:
    """Within the block, :func:`beat` prints ``<stage>: <label> <done> of <total> <unit>``.

    ``mode``: ``'bar'`` or ``'lines'``; None reads ``EVALSTATS_PROGRESS`` (unset: silent).
    """
    mode = mode if mode is not None else os.environ.get(ENV)
    if mode not in ("bar", "lines"):
        yield
        return
    first, every = _intervals()
    now = time.perf_counter()
    with _lock:
        saved = dict(_state)
        _state.clear()
        _state.update(label=label, stage=stage, mode=mode, start=now, next=now + first, every=every)
    try:
        yield
    finally:
        with _lock:
            _state.clear()
            _state.update(saved)


def beat(done: int, total: int, unit: str) -> None:
    """Report ``done`` of ``total`` ``unit`` when a line is due (cheap when none is)."""
    if not _state:
        return
    now = time.perf_counter()
    with _lock:
        if not _state or now < _state["next"]:  # type: ignore[operator]
            return
        _state["next"] = now + _state["every"]  # type: ignore[operator]
        elapsed = now - _state["start"]  # type: ignore[operator]
        text = (
            f"{_state['stage']}: {_state['label']} {done:,} of {total:,} {unit} ({elapsed:.0f} s)"
        )
        clear = "\r\x1b[2K" if _state["mode"] == "bar" else ""
    try:
        if clear:  # the redraw goes under the command line's escaping wrapper
            from evalstats._text import raw_stream

            print(clear + text, file=raw_stream(sys.stderr), flush=True)
        else:
            print(text, file=sys.stderr, flush=True)
    except (OSError, ValueError):  # a closed or broken stderr never stops an analysis
        pass
