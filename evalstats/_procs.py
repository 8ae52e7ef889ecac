"""Worker processes of the report: forked from a server that has imported the libraries once.

The report runs its analyses in one pool of worker processes and draws its figures in another.
Started with ``spawn``, every worker is a fresh interpreter that imports numpy, polars, scipy
and statsmodels (and matplotlib, seaborn and pandas to draw): about 2 s of CPU each, four
times over on a two-core machine, 8-9 s of a 30 s report spent importing. With the
``forkserver`` start method the server process imports them once (:data:`PRELOAD`) and every
worker is a fork of it that starts with them imported.

The server is started early (:func:`start_early`, before the input is read), so that its
imports overlap the read. It never runs polars, BLAS or OpenMP code, so it has no thread
pools to lose in the fork (polars' is why the workers were spawned, not forked, from the main
process, which has run queries by then). Where ``forkserver`` does not exist (Windows) the
workers are spawned as before.

A forked worker has the server's environment, not the one the main process has when the pool
starts (a variable set since, e.g. ``EVALSTATS_THREADS``): :func:`parent_state` is passed to
each pool's initializer and :func:`adopt` applies it. The working directory is set by
multiprocessing itself. Nothing here changes a result: the same calls run on the same data.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
from collections.abc import Iterator
from multiprocessing.context import BaseContext
from typing import Any

__all__ = [
    "FIGURE_PRELOAD",
    "PRELOAD",
    "adopt",
    "deferred_signals",
    "parent_state",
    "start_early",
    "stop_pool",
    "worker_context",
]

#: What the server imports before it forks a worker: what every analysis and figure worker
#: would import itself. A module that is not installed is left out (multiprocessing ignores
#: the ImportError). Not here: statsmodels and xgboost (a few analyses import a part of
#: them; statsmodels.api alone takes a second) and anything that starts threads or loads
#: OpenMP at import.
PRELOAD = (
    "numpy",
    "polars",
    "scipy.stats",
    "evalstats.report._parallel",
    "evalstats.report._writer",
    "evalstats.report._figures",
    "matplotlib.pyplot",
    "seaborn",
)

#: Imported besides when the server is started for a report that draws figures
#: (:func:`start_early` with ``figures=True``): what a figure worker imported at its first
#: figure to write it (the Agg and PDF backends, fontTools' subsetter) and evalstats's plots,
#: 0.25 s of CPU in each worker. Left out otherwise: a report without figures never uses them.
FIGURE_PRELOAD = (
    "matplotlib.backends.backend_agg",
    "matplotlib.backends.backend_pdf",
    "fontTools.subset",
    "evalstats.plots.attribution",
    "evalstats.plots.compare",
    "evalstats.plots.moments",
    "evalstats.plots.stability",
)


def _forkserver_available() -> bool:
    return "forkserver" in mp.get_all_start_methods()


def worker_context(*, figures: bool = False) -> BaseContext:
    """The start method of the report's workers: ``forkserver`` with :data:`PRELOAD` (and
    :data:`FIGURE_PRELOAD` with ``figures``), else ``spawn`` (polars' thread pool does not
    survive a plain fork). The first call starts the server; later ones take it as it is.
    """  # noqa: D205
    if not _forkserver_available():  # pragma: no cover - Windows
        return mp.get_context("spawn")
    ctx = mp.get_context("forkserver")
    preload = PRELOAD + (FIGURE_PRELOAD if figures else ())
    ctx.set_forkserver_preload(list(preload))  # no effect once the server runs
    _start_server()
    return ctx


def _start_server() -> None:
    """Start the fork server with Ctrl-C ignored (inherited through its exec, and by its forks).

    The server imports :data:`PRELOAD` before it ignores SIGINT itself: a Ctrl-C in those
    seconds printed its traceback under the command's one line.

    The server is ``python -c ...``, which puts the working directory first on ``sys.path``,
    and Python 3.11's server does not take the main process's ``sys.path`` (3.12 does): from
    the folder that holds a clone (``./evalstats/``, the repository) the server imported that
    folder as an empty namespace package ``evalstats`` instead of the installed one, and every
    worker failed with "module 'evalstats' has no attribute ...". ``PYTHONSAFEPATH`` (Python
    3.11+) keeps the working directory off the server's ``sys.path``; the workers then import
    what the main process imports.
    """
    import signal
    import threading
    from multiprocessing import forkserver

    with _safe_path():
        if threading.current_thread() is not threading.main_thread():
            forkserver.ensure_running()
            return
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            forkserver.ensure_running()
        finally:
            signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def _safe_path() -> Iterator[None]:
    """``PYTHONSAFEPATH=1`` in the environment while the block starts a process."""
    before = os.environ.get("PYTHONSAFEPATH")
    os.environ["PYTHONSAFEPATH"] = "1"
    try:
        yield
    finally:
        if before is None:
            del os.environ["PYTHONSAFEPATH"]
        else:
            os.environ["PYTHONSAFEPATH"] = before


def start_early(*, figures: bool = False) -> None:
    """Start the fork server now, so that its imports run while the main process reads input.

    Returns at once (the server imports in its own process). Safe to call more than once.
    Nothing happens on one core, where the report never starts workers; an input too small
    for workers (known only once read) costs the server's imports on another core.
    ``figures``: the report draws figures (the server also imports :data:`FIGURE_PRELOAD`).
    """
    from evalstats._threads import usable_cores

    if not _forkserver_available() or usable_cores() < 2:
        return
    worker_context(figures=figures)  # starts the server


def parent_state() -> dict[str, Any]:
    """What a forked worker must take from the main process: its environment."""
    return {"environ": dict(os.environ)}


def adopt(state: dict[str, Any] | None) -> None:
    """In a worker: take the main process's environment (see :func:`parent_state`).

    A worker also ignores Ctrl-C: the terminal sends SIGINT to every process of the command,
    and only the main process reports it (one line); it stops the workers itself
    (:func:`stop_pool`).
    """
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if not state:
        return
    env = state["environ"]
    for key in [k for k in os.environ if k not in env]:
        del os.environ[key]
    os.environ.update(env)


def stop_pool(pool: Any) -> None:
    """Stop a process pool now: cancel what has not started and end the running workers.

    For an error or an interrupt, when waiting for the running tasks (minutes of an analysis)
    is pointless. ``ProcessPoolExecutor`` has no public way to end its workers before Python
    3.14 (``terminate_workers``); its process table is used where the method is missing.
    """
    import contextlib

    terminate = getattr(pool, "terminate_workers", None)
    if terminate is not None:  # pragma: no cover - Python 3.14
        terminate()
        return
    procs = list((getattr(pool, "_processes", None) or {}).values())
    for proc in procs:
        with contextlib.suppress(Exception):
            proc.terminate()
    for proc in procs:
        with contextlib.suppress(Exception):
            proc.join(timeout=5)
    # with its workers gone the pool's manager thread ends at once; waiting for it means no
    # worker is still being started when the main process exits (one that was printed a
    # traceback, its semaphores gone)
    pool.shutdown(wait=True, cancel_futures=True)


@contextlib.contextmanager
def deferred_signals() -> Iterator[None]:
    """Hold Ctrl-C and SIGTERM back until the block is done (around starting a worker).

    A Ctrl-C that lands while a pool starts a worker leaves a process the pool does not know
    yet: :func:`stop_pool` cannot end it, and it prints a traceback once the main process is
    gone. Held back, the signal arrives right after, when the pool knows all its workers.
    """
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield  # pragma: no cover - a thread that receives no signals
        return
    # a Python-level hold: blocking the signal in this thread's mask would only move it to
    # another thread (polars', the pool's), whose handler still interrupts this one
    pending: list[int] = []

    def hold(signum: int, frame: object) -> None:
        pending.append(signum)

    held = (signal.SIGINT, signal.SIGTERM)
    previous = {sig: signal.signal(sig, hold) for sig in held}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if pending:
            signal.raise_signal(pending[0])  # now, with the handlers restored
