"""engine="dask": the same unit table and ingest report as the polars engine, on a LocalCluster.

The cluster has 2 worker processes (so the plan and results really are pickled and sent), one
thread each; it starts once for the module (about 2 s). Both engines run the same partition
function on the same partitions and merge in the same order, so the tables are compared
exactly (no tolerance).
"""

from __future__ import annotations

import subprocess
import sys

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from evalstats.aggregate import read_units
from evalstats.cli import main
from evalstats.errors import ClusterError, IngestError, MissingDependencyError

distributed = pytest.importorskip("distributed")  # in the test extra: runs in CI


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        silence_logs=40,
    ) as c:
        yield c


@pytest.fixture(scope="module")
def client(cluster):
    with distributed.Client(cluster) as c:
        yield c


def split_dump(tmp_path):
    """A table dump whose duplicate groups span files, and a file too big for one partition."""
    frames = [
        pl.DataFrame({"model": ["m"] * 4, "item": [1, 2, 3, 4], "score": [1, 0, 1, 0]}),
        pl.DataFrame({"model": ["m"] * 3, "item": [2, 3, 5], "score": [1, 0, 1]}),
        pl.DataFrame(
            {"model": ["n"] * 30, "item": list(range(25)) + [0] * 5, "score": [1, 0, 1] * 10}
        ),
    ]
    folder = tmp_path / "split"
    folder.mkdir()
    for k, df in enumerate(frames):
        df.with_columns(pl.lit("d").alias("dataset")).write_csv(folder / f"part-{k}.csv")
    return folder


@pytest.mark.parametrize("partition_rows", [4, 2_000_000])
def test_dask_gives_the_identical_units_and_report(fixtures, tmp_path, client, partition_rows):
    cases = [
        (fixtures / "dumps/dove/lite", {}),
        (fixtures / "dumps/dove/nested", {}),
        (split_dump(tmp_path), {"on_invalid": "skip"}),
    ]
    for path, opts in cases:
        local, local_report = read_units(
            path, progress=False, partition_rows=partition_rows, **opts
        )
        remote, remote_report = read_units(
            path,
            engine="dask",
            scheduler=client,
            progress=False,
            partition_rows=partition_rows,
            **opts,
        )
        assert_frame_equal(remote, local, check_exact=True)
        assert remote_report.to_dict() == local_report.to_dict()
        assert remote_report.rows_read == remote_report.rows_kept + remote_report.rows_set_aside


@pytest.mark.parametrize("item", ["number", "text"])
def test_dask_runs_the_streaming_queries_on_the_workers(tmp_path, client, item, monkeypatch):
    """A long table cut into queries of 7 rows on 2 workers: the same units and report.

    Text items ('q9' < 'q10' by length) are proved by the batch function, whose edges come back
    from the workers; numbers by item - row with the queries' row offsets. No partitions.
    """
    import evalstats.io._stream as stream

    n = 25
    items = list(range(5, 5 + n)) if item == "number" else [f"q{i}" for i in range(5, 5 + n)]
    df = pl.DataFrame(
        {
            "model": ["m"] * (2 * n),
            "prompt": ["p0"] * n + ["p1"] * n,
            "item": items * 2,
            "score": [1.0, 0.0, 0.5, 1.0, 0.0] * (2 * n // 5),
        }
    )
    df.write_parquet(tmp_path / "long.parquet")
    opts = {"columns": {"prompt": "variant"}, "partition_rows": 7, "progress": False}
    local, local_report = read_units(tmp_path / "long.parquet", **opts)
    monkeypatch.setattr(stream, "account", lambda *a, **k: pytest.fail("partitions used"))
    remote, remote_report = read_units(
        tmp_path / "long.parquet", engine="dask", scheduler=client, **opts
    )
    assert_frame_equal(remote, local, check_exact=True)
    assert remote_report.to_dict() == local_report.to_dict()


def test_dask_by_address_string(fixtures, cluster):
    local, rep = read_units(fixtures / "dumps/dove/lite", progress=False)
    remote, rep2 = read_units(
        fixtures / "dumps/dove/lite",
        engine="dask",
        scheduler=cluster.scheduler_address,
        progress=False,
    )
    assert_frame_equal(remote, local, check_exact=True)
    assert rep2.to_dict() == rep.to_dict()


def test_invalid_row_on_a_worker_is_the_same_error(tmp_path, client):
    folder = split_dump(tmp_path)
    with pytest.raises(IngestError) as want:
        read_units(folder, progress=False)
    with pytest.raises(IngestError) as got:
        read_units(folder, engine="dask", scheduler=client, progress=False)
    assert str(got.value) == str(want.value)
    assert "part-1.csv, row 1" in str(got.value)


def test_cli_ingest_engine_dask(fixtures, cluster, capsys, tmp_path):
    path = str(fixtures / "dumps/dove/lite")
    out_local, out_remote = tmp_path / "local.parquet", tmp_path / "remote.parquet"
    assert main(["ingest", path, "--out", str(out_local), "--json"]) == 0
    local = capsys.readouterr().out
    args = ["ingest", path, "--engine", "dask", "--scheduler", cluster.scheduler_address]
    assert main([*args, "--out", str(out_remote), "--json"]) == 0
    assert capsys.readouterr().out == local
    assert_frame_equal(pl.read_parquet(out_remote), pl.read_parquet(out_local), check_exact=True)


def test_unreachable_scheduler_is_a_cluster_error(fixtures, monkeypatch, capsys):
    import evalstats.aggregate as agg

    monkeypatch.setattr(agg, "CONNECT_TIMEOUT_S", 1)
    with pytest.raises(
        ClusterError, match=r"cannot connect to the Dask scheduler at 'tcp://127\.0\.0\.1:9'"
    ):
        read_units(fixtures / "dumps/dove/lite", engine="dask", scheduler="tcp://127.0.0.1:9")
    args = ["ingest", str(fixtures / "dumps/dove/lite"), "--engine", "dask"]
    assert main([*args, "--scheduler", "tcp://127.0.0.1:9"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("evalstats: error: cannot connect to the Dask scheduler")
    assert "Traceback" not in err
    assert main([*args, "--scheduler", "no-such-protocol://x"]) == 2
    assert "evalstats: error:" in capsys.readouterr().err


def test_missing_dask_names_the_extra(fixtures, monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    with pytest.raises(MissingDependencyError, match=r'pip install "evalstats\[dask\]"'):
        read_units(fixtures / "dumps/dove/lite", engine="dask")


def test_import_evalstats_does_not_import_dask():
    code = "import sys, evalstats, evalstats.aggregate; print('dask' in sys.modules, 'distributed' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == ["False", "False"]
