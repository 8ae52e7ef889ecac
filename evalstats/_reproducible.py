"""Identical output from identical input: lazy queries collected by polars' in-memory engine.

polars (2.x) collects a lazy query with its streaming engine when it judges that faster. The
streaming engine's ``group_by`` adds up a group's floats in the order its threads finish, so a
mean over runs or configurations can differ in the last bit from one call to the next on the
same data. Most numbers do not care, but a tie does: two configurations with the same mean
accuracy give a difference of exactly 0 or of ±1e-16 by chance, and a sign test, a share of
contradicting configurations or a rank with ties then changes between two runs with the same
seed. :func:`reproducible` makes the in-memory engine (which sums each group in row order) the
default inside a block; a query that asks for ``engine="streaming"`` itself (the loaders, for
memory) keeps it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["reproducible"]


@contextmanager
def reproducible() -> Iterator[None]:
    """Collect lazy queries with polars' in-memory engine inside the block (restored after).

    Examples
    --------
    >>> import polars as pl
    >>> from evalstats._reproducible import reproducible
    >>> lf = pl.LazyFrame({"g": [1, 1, 2], "x": [0.1, 0.2, 0.3]})
    >>> with reproducible():
    ...     lf.group_by("g").agg(pl.col("x").sum()).sort("g").collect()["x"].to_list()
    [0.30000000000000004, 0.3]
    """
    import polars as pl

    with pl.Config(engine_affinity="in-memory"):
        yield
