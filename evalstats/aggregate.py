"""Observation table -> unit table: mean score over items per (model, dataset, metric, variant, run).

This is the only step that touches every row. :func:`to_units` takes an observation table and
stays lazy. :func:`read_units` goes from files straight to the unit table in one pass over the
rows, a partition at a time, so that dumps larger than memory aggregate with bounded memory, on
this machine (``engine="polars"``) or on a Dask cluster (``engine="dask"``); see
``docs/scale.md``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any, Literal, NamedTuple

import polars as pl

from evalstats.errors import (
    ClusterError,
    MissingDependencyError,
    ParameterError,
)
from evalstats.io import IngestReport, read
from evalstats.io._accounting import (
    PART_ROWS,
    Accounting,
    PartResult,
    PartSpec,
    Plan,
    Runner,
    raise_invalid,
    run_local,
    run_part,
)
from evalstats.io._pipeline import (
    error_counts,
    names_checked,
    observations,
    plan_of,
    report_of,
)
from evalstats.io._stream import account_rows
from evalstats.schema import (  # the in-memory aggregation is defined next to the tables
    _ITEM_SET_RULE,  # noqa: F401  (the rule in force; compare reads it from here)
    ITEM_SET_RULES,
    KEY_COLUMNS,
    METRIC_INFO_COLUMNS,
    UNIT_COLUMNS,
    align_item_sets,
    item_set_rule,
    to_units,
)

__all__ = [
    "ITEM_SET_RULES",
    "UnitIngest",
    "align_item_sets",
    "item_set_rule",
    "read_units",
    "to_units",
]

#: How long ``engine="dask"`` waits for the scheduler at a given address.
CONNECT_TIMEOUT_S = 10


class UnitIngest(NamedTuple):
    """What :func:`read_units` returns: the unit table and the ingest report.

    Unpack it (``units, report = read_units(path)``) or use the fields.
    """

    units: pl.DataFrame
    report: IngestReport


def read_units(
    path: str | Path | Sequence[str | Path],
    *,
    format: str = "auto",
    engine: Literal["polars", "dask"] = "polars",
    scheduler: Any = None,
    progress: bool | None = None,
    partition_rows: int = PART_ROWS,
    **options: Any,
) -> UnitIngest:
    r"""Read a dump straight into the unit table, in one pass over the rows with bounded memory.

    The result is the table
    ``to_units(read(path, format=format, **options).observations, on_mismatch="keep")`` gives
    (each run over the items it scored: the item-set rule of :func:`align_item_sets` needs the
    items, which this one-pass aggregation does not keep), and the same ingest report, computed without holding more than one partition of rows
    in memory: files are read a partition at a time (consecutive files up to ``partition_rows``
    rows, larger files in hash buckets), each partition is accounted for and summed per unit,
    and the small per-partition results are merged.

    Parameters
    ----------
    path : str, Path or sequence of them
        File, glob or folder, as for :func:`evalstats.io.read`.
    format : str, default 'auto'
        Loader name (see :data:`evalstats.io.FORMATS`); ``auto`` detects it.
    engine : {'polars', 'dask'}, default 'polars'
        ``polars`` runs the partitions one after the other in this process (polars uses every
        core within a partition). ``dask`` runs them on the workers of a Dask distributed
        cluster; needs ``pip install "evalstats[dask]"`` and the files readable at the same path
        from every worker.
    scheduler : str, distributed.Client or cluster object, optional
        With ``engine="dask"``: the scheduler address (``tcp://host:8786``), a connected
        ``distributed.Client``, or a cluster object such as ``dask_jobqueue.SLURMCluster``.
        Default: the address in Dask's configuration (``DASK_SCHEDULER_ADDRESS``) if set, else a
        ``LocalCluster`` on this machine, closed afterwards.
    progress : bool, optional
        Show a progress bar of files done on stderr. Default: when stderr is a terminal.
    partition_rows : int, default 2_000_000
        Rows read into memory at once by the partitions (about 150-300 bytes each during the
        pass); bounds their peak memory. With ``engine="dask"``, also the rows of each
        streaming query sent to a worker.
    **options
        Loader options (``on_invalid``, ``score_scale``, ``columns``, ...).

    Returns
    -------
    UnitIngest
        ``(units, report)``. ``units`` has the columns of :func:`to_units`, sorted by
        ``model, dataset, variant, run`` and then the factor columns.

    Raises
    ------
    IngestError
        As the loader would (unreadable file, invalid row with ``on_invalid='error'``).
    ParameterError
        If ``engine`` is unknown, ``scheduler`` is given without ``engine='dask'``, or
        ``partition_rows`` is not a positive integer.
    MissingDependencyError
        If ``engine='dask'`` and Dask is not installed.
    ClusterError
        If the Dask scheduler cannot be reached.

    See Also
    --------
    to_units : The same aggregation of an observation table already loaded.

    Notes
    -----
    Item-level dumps of formats without documented duplicates go through one streaming pass
    (:mod:`evalstats.io._stream`): set-aside reasons, unit sums and the proof that duplicate
    groups hold no duplicates come from one polars group-by; only the groups it cannot prove
    free of duplicates go through the partitions. Other dumps (DOVE, unit-level tables) go
    through the partitions.

    What runs where with ``engine="dask"``: this process lists the files, reads their schemas
    (Parquet footers) and plans the queries or partitions; each worker runs the streaming
    query on its slice of rows (at most ``partition_rows``), or reads its partition's files,
    gives every row its set-aside reason, finds duplicates and sums scores per unit; this
    process merges the counts and sums, and reads the examples of rows set aside. When a
    duplicate group spans partitions, its rows are read again jointly (again on the workers),
    so the first row in file order is kept exactly as in one global pass. The report is the
    same on both engines, and unit scores the same up to the order of float summation.

    A unit's ``score`` is the sum of its scores over its ``n_items`` items, summed in file
    order, divided by ``n_items``: it can differ from :func:`to_units` in the last bits (float
    summation order), never more.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "dump.csv"
    >>> _ = f.write_text("model,prompt,item,score\na,p1,1,1\na,p1,2,0\na,p1,2,1\n")
    >>> units, report = read_units(f, columns={"prompt": "variant"}, on_invalid="skip")
    >>> units.select("model", "variant", "score", "n_items").rows()
    [('a', 'p1', 0.5, 2)]
    >>> report.rows_read, dict(report.set_aside)
    (3, {'duplicate': 1})
    """
    if engine not in ("polars", "dask"):
        raise ParameterError(f"`engine` must be 'polars' or 'dask', got {engine!r}.")
    if scheduler is not None and engine != "dask":
        raise ParameterError("`scheduler` is used by engine='dask' only; pass engine='dask'.")
    if (
        isinstance(partition_rows, bool)
        or not isinstance(partition_rows, int)
        or partition_rows < 1
    ):
        raise ParameterError(
            f"`partition_rows` must be a positive integer, got {partition_rows!r}."
        )
    from evalstats.io import read_routed
    from evalstats.io._pipeline import spellings_apart_on_duplicate

    def one(p: Any, fmt: str, opts: dict[str, Any]) -> UnitIngest:
        # a duplicate made by merging two spellings of a name: read again with them apart
        return spellings_apart_on_duplicate(
            lambda: _read_units_one(p, fmt, opts, engine, scheduler, progress, partition_rows)
        )

    return read_routed(path, format, options, one)


def _read_units_one(
    path: Any,
    format: str,
    options: dict[str, Any],
    engine: str,
    scheduler: Any,
    progress: bool | None,
    partition_rows: int,
) -> UnitIngest:
    """:func:`read_units` of one format."""

    def once(client: Any) -> tuple[Plan, Accounting]:
        plan = plan_of(read, path, format=format, **options)
        with _progress_bar(len(plan.paths), progress) as bar:
            runner = run_local if client is None else _dask_runner(client)
            # errored calls are counted by class on the report from the rows kept (their ids)
            acc = account_rows(
                plan,
                units=True,
                ids="error" in plan.schema,
                runner=runner,
                part_rows=partition_rows,
                progress=bar,
            )
        return plan, acc

    if engine == "dask":
        with _dask_client(scheduler) as client:
            plan, acc = once(client)
    else:  # the names are checked by the streaming pass, from its groups
        plan, acc = names_checked(lambda: once(None))
    has_err = "error" in plan.schema
    if acc.first_invalid is not None:
        raise_invalid(plan, acc.first_invalid)
    errors = error_counts(plan, observations(plan, acc.scale, acc.ids)) if has_err else ({}, 0)
    return UnitIngest(_unit_table(plan, acc), report_of(plan, acc, errors))


def _unit_table(plan: Plan, acc: Accounting) -> pl.DataFrame:
    """Unit rows from the merged per-group sums (or the kept rows of unit-level input)."""
    factors = [c for c in plan.unit_factors if c not in KEY_COLUMNS]
    keys = list(KEY_COLUMNS)
    info = [pl.col(c).cast(UNIT_COLUMNS[c]) for c in METRIC_INFO_COLUMNS if c in plan.schema]
    has_err = "error" in plan.schema
    if plan.has_item:
        g = acc.groups
        if g.height == 0:
            g = pl.DataFrame(
                schema={
                    **{c: plan.schema.get(c, pl.String) for c in plan.group_cols},
                    "variant": pl.String,
                    "__sum": pl.Float64,
                    "__n": pl.Int64,
                    "__n_err": pl.Int64,
                    "__n_dup": pl.Int64,
                }
            )
        g = g.filter(pl.col("__n") > 0)
        if plan.variant is not None and "variant" not in g.columns:
            g = g.with_columns(plan.variant)
        ucols = [c for c in plan.unit_cols] + (["variant"] if plan.variant is not None else [])
        if set(g.columns) - set(ucols) - {"__sum", "__n", "__n_err", "__n_dup"}:
            # duplicate groups finer than units (a loader key outside the unit columns)
            g = g.group_by(ucols, maintain_order=True).agg(
                pl.col("__sum", "__n", *(["__n_err"] if has_err else [])).sum()
            )
        out = g.select(
            pl.col("model").cast(pl.String),
            pl.col("dataset").cast(pl.String),
            pl.col("metric").cast(pl.String),
            pl.col("variant").cast(pl.String),
            pl.col("__run").cast(pl.Int64).alias("run"),
            (pl.col("__sum") / pl.col("__n")).alias("score"),
            pl.col("__n").cast(pl.Int64).alias("n_items"),
            *([pl.col("__n_err").cast(pl.Int64).alias("n_errors")] if has_err else []),
            *info,
            *factors,
        )
        tie = []
    else:
        p = acc.passthrough
        assert p is not None  # unit-level input, asked with units=True
        out = p.select(
            pl.col("model").cast(pl.String),
            pl.col("dataset").cast(pl.String),
            pl.col("metric").cast(pl.String),
            pl.col("variant").cast(pl.String),
            pl.col("__run").cast(pl.Int64).alias("run"),
            pl.col("score").cast(pl.Float64),
            pl.col("n_items").cast(pl.Int64),
            *([pl.col("n_errors").cast(pl.Int64)] if has_err else []),
            *info,
            *factors,
            "__src",
            "__row",
        )
        tie = ["__src", "__row"]
    schema = out.schema  # once: a DataFrame's schema is rebuilt on each access
    sortable = [
        c for c in factors if not isinstance(schema[c], (pl.List, pl.Array, pl.Struct, pl.Object))
    ]
    out = out.sort([*keys, *sortable, *tie], nulls_last=True, maintain_order=True)
    return out.drop(tie) if tie else out


def _progress_bar(total: int, progress: bool | None) -> AbstractContextManager[Any]:
    """A tqdm bar of files done on stderr; ``None`` shows it only on a terminal."""
    isatty = getattr(sys.stderr, "isatty", None)
    if progress is False or (progress is None and not (isatty is not None and isatty())):
        return nullcontext(None)  # no bar: tqdm is not even imported (a tenth of a second)
    from tqdm.auto import tqdm

    class _Bar:
        def __init__(self) -> None:
            self.bar = tqdm(
                total=total,
                unit="file",
                desc="evalstats",
                file=sys.stderr,
                disable=None if progress is None else not progress,
                leave=False,
            )

        def __enter__(self) -> Any:
            return self.bar.update

        def __exit__(self, *exc: object) -> None:
            self.bar.close()

    return _Bar()


def _dask_client(scheduler: Any) -> AbstractContextManager[Any]:
    """A context manager giving a ``distributed.Client`` for ``scheduler`` (see read_units)."""
    try:
        import distributed
    except ImportError:
        raise MissingDependencyError(
            "engine='dask' needs Dask and dask.distributed, which are not installed. "
            'Install them with: pip install "evalstats[dask]"'
        ) from None
    if isinstance(scheduler, distributed.Client):
        return nullcontext(scheduler)  # the caller's client: leave it open
    if scheduler is not None and not isinstance(scheduler, str):
        if not hasattr(scheduler, "scheduler_address"):
            raise ParameterError(
                "`scheduler` must be an address such as 'tcp://host:8786', a distributed.Client "
                f"or a Dask cluster object, got {type(scheduler).__name__}."
            )
    try:
        if scheduler is None:
            return distributed.Client(timeout=f"{CONNECT_TIMEOUT_S}s")
        return distributed.Client(scheduler, timeout=f"{CONNECT_TIMEOUT_S}s")
    except (OSError, TimeoutError, ValueError, TypeError) as exc:
        where = (
            scheduler
            if isinstance(scheduler, str)
            else getattr(scheduler, "scheduler_address", "the configured scheduler")
        )
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ClusterError(
            f"cannot connect to the Dask scheduler at {where!r} ({msg}). Check that the "
            "scheduler is running and reachable from here, and that the address has the form "
            "'tcp://host:8786'."
        ) from None


def _dask_runner(client: Any) -> Runner:
    """Run partitions on the workers of ``client``, yielding results as they finish."""
    from distributed import as_completed

    def run(plan: Plan, specs: Sequence[PartSpec], units: bool, ids: bool) -> Iterator[PartResult]:
        if not specs:
            return
        [remote_plan] = client.scatter([plan], broadcast=True, hash=False)
        futures = client.map(
            run_part, [remote_plan] * len(specs), list(specs), units=units, ids=ids, pure=False
        )
        try:
            for fut in as_completed(futures):
                yield fut.result()
        finally:
            client.cancel(futures)

    def map_(fn: Any, plan: Plan, args: list[tuple]) -> list:
        # the streaming pass's queries (evalstats.io._stream.Mapper): results in order
        [remote_plan] = client.scatter([plan], broadcast=True, hash=False)
        futures = [client.submit(fn, remote_plan, *a, pure=False) for a in args]
        try:
            return client.gather(futures)
        finally:
            client.cancel(futures)

    run.map = map_  # type: ignore[attr-defined]
    return run
