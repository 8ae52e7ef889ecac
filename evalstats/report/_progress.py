"""Progress of a report on stderr: a bar on a terminal, one timed line per step otherwise.

A log file or CI output gets ``report: nstar 12.3 s`` lines it can be read from afterwards; a
terminal gets a bar that redraws in place. Both go to stderr, so stdout stays clean.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator
from types import TracebackType
from typing import Any, Literal

__all__ = ["Progress", "progress_env", "progress_mode"]

Mode = Literal["bar", "lines"] | None


def progress_mode(progress: bool | str) -> Mode:
    """``True`` → a bar on a terminal, lines otherwise; ``False`` → nothing; or the mode named."""
    if progress in ("bar", "lines"):
        return progress  # type: ignore[return-value]
    if not progress:
        return None
    return "bar" if sys.stderr.isatty() else "lines"


@contextlib.contextmanager
def progress_env(progress: bool | str) -> Iterator[None]:
    """The progress mode in the environment for the block (unset without progress).

    The analyses, in this process or in workers (which adopt its environment), then say how
    far they are (:mod:`evalstats._heartbeat`).
    """
    from evalstats._heartbeat import ENV

    mode = progress_mode(progress)
    saved = os.environ.get(ENV)
    if mode is None:
        os.environ.pop(ENV, None)
    else:
        os.environ[ENV] = mode
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = saved


class Progress:
    """Steps of one stage (``report``, ``figures``): :meth:`step` starts one, :meth:`done` ends it.

    Parameters
    ----------
    stage : str
        Prefix of every line and the bar's label.
    total : int
        Number of steps.
    progress : bool or {'bar', 'lines'}
        See :func:`progress_mode`.
    """

    def __init__(self, stage: str, total: int, progress: bool | str) -> None:
        self.stage = stage
        self.mode = progress_mode(progress)
        self._bar: Any = None
        self._key = ""
        self._start = 0.0
        self._stage_start = time.perf_counter()
        if self.mode == "bar":
            from tqdm.auto import tqdm

            from evalstats._text import raw_stream

            # the bar redraws its line with \r: under the command line's escaping wrapper
            self._bar = tqdm(
                total=total, desc=stage, unit="step", file=raw_stream(sys.stderr), leave=False
            )

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._bar is not None:
            self._bar.close()
        elif self.mode == "lines" and exc_type is None:
            elapsed = time.perf_counter() - self._stage_start
            print(f"{self.stage}: done in {elapsed:.1f} s", file=sys.stderr, flush=True)

    def step(self, key: str) -> None:
        """Start the step ``key``."""
        self._key = key
        self._start = time.perf_counter()
        if self._bar is not None:
            self._bar.set_description_str(f"{self.stage}: {key}")

    def done(self, note: str | None = None) -> float:
        """End the current step (``note``: e.g. why it was skipped); return its seconds."""
        elapsed = time.perf_counter() - self._start
        if self._bar is not None:
            self._bar.update()
        elif self.mode == "lines":
            tail = f" ({note})" if note else ""
            print(
                f"{self.stage}: {self._key} {elapsed:.1f} s{tail}",
                file=sys.stderr,
                flush=True,
            )
        return elapsed

    def grow(self, steps: int) -> None:
        """``steps`` more steps than first announced (figures are known as analyses finish)."""
        if self._bar is not None:
            self._bar.total = (self._bar.total or 0) + steps
            self._bar.refresh()

    def finished(self, key: str, seconds: float, note: str | None = None) -> None:
        """A step that ran elsewhere (in a worker) ended after ``seconds``."""
        self._key = key
        if self._bar is not None:
            self._bar.set_description_str(f"{self.stage}: {key}")
            self._bar.update()
        elif self.mode == "lines":
            tail = f" ({note})" if note else ""
            print(f"{self.stage}: {key} {seconds:.1f} s{tail}", file=sys.stderr, flush=True)
