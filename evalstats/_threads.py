"""One BLAS thread around the permutation and resampling kernels.

The kernels multiply tall, skinny matrices in many small chunks. Multi-threaded OpenBLAS
splits each product across the cores and waits for them; on a busy two-core machine a
product of a (3 x 28,765) by (28,765 x 68) matrix took 0.43 s with two threads and 0.017 s
with one (benchmarks/bench_anova.py). The report runs analyses in parallel processes
besides, so each one keeps to one thread. Nothing here changes a result: only how many
threads the same arithmetic runs on.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


@contextlib.contextmanager
def single_blas_thread() -> Iterator[None]:
    """Limit the BLAS libraries numpy and scipy loaded to one thread inside the block."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield
