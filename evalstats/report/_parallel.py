"""The report's analyses in worker processes, with the same results as one after the other.

The analyses of a report are independent (the correlations read the stability table, so they
wait for it). With several cores they run in a pool of worker processes, the longest first
and then the shortest (see :func:`_schedule`);
each is the same call with the same parameters and the same seed as in the sequential run,
so the report does not depend on how many workers there were or which finished first:

- every analysis runs with one BLAS thread (:func:`evalstats._threads.single_blas_thread`),
  in the workers and in the sequential run alike, since a product computed on two threads
  can differ in its last bit from the same product on one;
- polars collects with its in-memory engine (:func:`evalstats._reproducible.reproducible`)
  and under the report's item-set rule, in every worker;
- results are put back in report order, whatever order they arrive in.

The observation table goes to the workers once, as an Arrow IPC file they memory-map (no copy
per worker). Workers are forked from a server that has the libraries imported
(:mod:`evalstats._procs`), never from this process: polars' thread pool does not survive a
fork.
"""

from __future__ import annotations

import concurrent.futures as cf
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import polars as pl

from evalstats._procs import deferred_signals, parent_state, stop_pool, worker_context
from evalstats.report._analyses import SPECS, Context, run_analysis
from evalstats.report._model import AnalysisResult, DataSummary

__all__ = ["PARALLEL_MIN_ROWS", "Outcome", "resolve_workers", "run_all"]

#: Below this many observation rows the analyses run one after the other: starting a worker
#: (a fresh interpreter importing numpy, polars and scipy) costs more than they take.
PARALLEL_MIN_ROWS = 20_000

#: Analyses that read another's result: they start when it is done.
DEPENDS = {"correlation": "stability", "ranks": "compare"}  # ranks reuse the paired tests


def dependencies(ctx: Context) -> dict[str, str]:
    """:data:`DEPENDS`, and n* and the stopping rule after the moments when groups are sparse.

    n* and the stopping rule of a sparse group read the whole-grid scores the moments analysis
    draws from its fit (evalstats/report/_sparse.py); without a design to tell, they fit the
    model themselves.
    """
    from evalstats.report._sparse import SPARSE_SHARE

    groups = getattr(ctx.design, "groups", None)
    if groups is None or "cells_observed" not in groups.columns:
        return DEPENDS
    share = groups.filter(pl.col("structure") == "sparse")["cells_observed"]
    if share.len() and share.min() <= SPARSE_SHARE:
        return {**DEPENDS, "nstar": "moments", "converge": "moments"}
    return DEPENDS


#: Rough relative cost, to start the longest first (longest-processing-time scheduling).
_COST = {
    "nstar": 10,
    "compare": 10,
    "anova": 6,
    "correlation": 5,
    "ranks": 4,
    "normality": 3,
    "noise": 3,
    "audit": 3,
    "moments": 2,
    "attribution": 2,
    "providers": 2,
    "stability": 2,
}

Outcome = tuple[str, AnalysisResult | None, str | None, float]


def resolve_workers(workers: int | str, n_rows: int) -> int:
    """The number of processes: ``workers``, or for ``'auto'`` the usable cores when the table
    has at least :data:`PARALLEL_MIN_ROWS` rows (else 1).
    """  # noqa: D205
    if workers == "auto":
        try:
            cores = len(os.sched_getaffinity(0))
        except AttributeError:  # pragma: no cover - not on Linux
            cores = os.cpu_count() or 1
        return cores if n_rows >= PARALLEL_MIN_ROWS else 1
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        from evalstats.errors import ParameterError

        raise ParameterError(f"`workers` must be a positive integer or 'auto', got {workers!r}.")
    return workers


def run_one(spec_key: str, ctx: Context, options: dict[str, Any], seed: int) -> Outcome:
    """One analysis as every worker runs it: one BLAS thread; its result and seconds."""
    from evalstats._heartbeat import heartbeat
    from evalstats._threads import single_blas_thread

    start = time.perf_counter()
    with single_blas_thread(), heartbeat(spec_key):
        result, reason = run_analysis(SPECS[spec_key], ctx, options, seed)
    return spec_key, result, reason, time.perf_counter() - start


_WORKER: dict[str, Any] = {}


def _init(
    path: str,
    data: DataSummary,
    default: dict | None,
    on_mismatch: str,
    variant_factors: tuple[str, ...] | str | None = None,
    parent: dict[str, Any] | None = None,
) -> None:
    from evalstats._procs import adopt

    adopt(parent)
    from evalstats.report._applies import split_calls

    obs, calls = split_calls(pl.read_ipc(path))
    _WORKER["ctx"] = Context(
        obs=obs,
        calls=calls,
        data=data,
        default=default,
        done={},
        variant_factors=variant_factors,
        item_rule=on_mismatch,
    )
    _WORKER["on_mismatch"] = "keep" if on_mismatch == "auto" else on_mismatch


def _work(key: str, options: dict[str, Any], seed: int, done: dict[str, AnalysisResult]) -> Outcome:
    from evalstats._reproducible import reproducible
    from evalstats.aggregate import item_set_rule

    ctx = replace(_WORKER["ctx"], done=done)
    with reproducible(), item_set_rule(_WORKER["on_mismatch"]):
        return run_one(key, ctx, options, seed)


def _schedule(keys: Sequence[str], workers: int) -> list[str]:
    """The order analyses start in: the ``workers - 1`` longest first, then shortest first.

    The longest start at once so that they do not end the run late; the other worker takes the
    short ones first, so that results (and their figures, drawn while the long ones still run)
    come early.
    """
    by_cost = sorted(keys, key=lambda k: -_COST.get(k, 1))
    first = by_cost[: max(workers - 1, 1)]
    return first + sorted(by_cost[len(first) :], key=lambda k: _COST.get(k, 1))


def run_all(
    keys: Sequence[str],
    ctx: Context,
    checked: dict[str, dict[str, Any]],
    seed: int,
    on_mismatch: str,
    workers: int,
    applies: Callable[[str, Context], str | None],
    report: Callable[[Outcome], None],
) -> None:
    """Run the analyses ``keys`` (in report order), ``workers`` at a time.

    ``applies(key, ctx)`` says why an analysis is skipped (None: run it); it is asked when the
    analysis's dependency is done. ``report`` receives each outcome as it arrives; results go
    into ``ctx.done``.
    """
    if workers <= 1:
        for key in keys:
            reason = applies(key, ctx)
            if reason is not None:
                report((key, None, reason, 0.0))
                continue
            outcome = run_one(key, ctx, checked.get(key, {}), seed)
            if outcome[1] is not None:
                ctx.done[key] = outcome[1]
            report(outcome)
        return
    depends = dependencies(ctx)
    waiting = [k for k in keys if depends.get(k) in keys]
    ready = _schedule([k for k in keys if k not in waiting], workers)
    with tempfile.TemporaryDirectory(prefix="evalstats-report-") as tmp:
        path = os.path.join(tmp, "observations.arrow")
        from evalstats._output import writing

        with writing(path, what="cannot write the workers' copy of the table"):
            # every call: the workers split the errored ones off again (split_calls)
            (ctx.obs if ctx.calls is None else ctx.calls).write_ipc(
                path, compression="uncompressed"
            )
        pool = cf.ProcessPoolExecutor(
            max_workers=workers,
            mp_context=worker_context(),
            initializer=_init,
            initargs=(
                path,
                ctx.data,
                ctx.default,
                on_mismatch,
                ctx.variant_factors,
                parent_state(),
            ),
        )
        with pool:
            running: dict[cf.Future, str] = {}

            def settled(key: str) -> None:  # start what waited for ``key``
                for k in [k for k in waiting if depends[k] == key]:
                    waiting.remove(k)
                    submit(k)

            def submit(key: str) -> None:
                reason = applies(key, ctx)
                if reason is not None:
                    report((key, None, reason, 0.0))
                    settled(key)
                    return
                needs = depends.get(key)
                done = {needs: ctx.done[needs]} if needs in ctx.done else {}
                with deferred_signals():  # no worker half-started by a Ctrl-C
                    running[pool.submit(_work, key, checked.get(key, {}), seed, done)] = key

            try:
                for key in ready:
                    submit(key)
                while running:
                    finished, _ = cf.wait(running, return_when=cf.FIRST_COMPLETED)
                    for fut in finished:
                        running.pop(fut)
                        outcome = fut.result()
                        if outcome[1] is not None:
                            ctx.done[outcome[0]] = outcome[1]
                        report(outcome)
                        settled(outcome[0])
            except BaseException:
                stop_pool(pool)  # an error or Ctrl-C: the other analyses are not waited for
                raise
