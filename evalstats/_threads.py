"""Threads: one BLAS thread around the permutation kernels; groups mapped over threads.

The kernels multiply tall, skinny matrices in many small chunks. Multi-threaded OpenBLAS
splits each product across the cores and waits for them; on a busy two-core machine a
product of a (3 x 28,765) by (28,765 x 68) matrix took 0.43 s with two threads and 0.017 s
with one (benchmarks/bench_anova.py). The report runs analyses in parallel processes
besides, so each one keeps to one thread.

:func:`parallel_map` runs the groups of a resampling analysis (one curve per model and
dataset) on the usable cores with threads: their numpy calls release the GIL. Nothing here
changes a result: only how many threads the same arithmetic runs on.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


@contextlib.contextmanager
def single_blas_thread() -> Iterator[None]:
    """Limit the BLAS libraries numpy and scipy loaded to one thread inside the block."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield


#: Below this much work (array elements touched) a map runs on one thread: starting threads
#: costs more than it saves.
PARALLEL_MIN_WORK = 2_000_000


def usable_cores() -> int:
    """The cores this process may run on (``EVALSTATS_THREADS`` overrides, at least 1)."""
    import os

    env = os.environ.get("EVALSTATS_THREADS", "").strip()
    if env.isdigit() and int(env) >= 1:
        return int(env)
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1


def parallel_map(
    fn: Callable[[T], R], items: Sequence[T], *, work: float, unit: str = "groups"
) -> list[R]:
    """``[fn(x) for x in items]``, on threads when ``work`` (elements touched) is large.

    For functions whose time is spent in numpy calls that release the GIL (sorting,
    partitioning, cumulative sums, random draws), so that the threads run on several cores.
    Results come back in the order of ``items`` and each call is the same call as in the loop:
    a function whose randomness comes from its own item (a generator seeded by the item) gives
    the same results on any number of threads. Inside a report, a line now and then says how
    many ``unit`` are done (:func:`evalstats._heartbeat.beat`).
    """
    from evalstats._heartbeat import beat

    total = len(items)
    n = min(usable_cores(), total)
    if n <= 1 or work < PARALLEL_MIN_WORK:
        out = []
        for x in items:
            out.append(fn(x))
            beat(len(out), total, unit)
        return out
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=n, thread_name_prefix="evalstats") as pool:
        out = []
        for r in pool.map(fn, items):  # in order; a line says how many are back
            out.append(r)
            beat(len(out), total, unit)
        return out
