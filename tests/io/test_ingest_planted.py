"""A planted dump with every set-aside reason and cross-file duplicates: the ingest report pinned.

The expected report and unit table (``fixtures/reference/ingest_planted/``) were written by the
partition-hashing accounting this test was added to guard (commit before issue 47's rewrite), with
``python tests/io/test_ingest_planted.py --write``. Whatever the accounting's implementation, the
counts, reasons, notes, examples (file and row) and units must stay the same, for every partition
size (one partition, several files per partition, a file split in pieces).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from evalstats.aggregate import read_units
from evalstats.errors import IngestError
from evalstats.io import read

REFERENCE = Path(__file__).resolve().parents[2] / "fixtures/reference/ingest_planted"
OPTIONS = {"columns": {"prompt": "variant"}, "on_invalid": "skip", "metric_range": (0, 1)}
#: Reasons the planted dump must produce (each at least once).
PLANTED = {
    "missing_model",
    "missing_dataset",
    "missing_item",
    "blank_model",
    "missing_run",
    "invalid_run",
    "missing_score",
    "unparseable_score",
    "nonfinite_score",
    "score_out_of_range",
    "duplicate",
    "duplicate_file",
}


def planted_dump(folder: Path, seed: int = 0) -> Path:
    """Write the planted CSV files under ``folder`` (seeded; a few thousand rows)."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    frames = []
    for k, model in enumerate(["m0", "m1", "m2"]):
        n = 600 + 100 * k
        variant = rng.integers(0, 4, n)
        item = rng.integers(0, 120, n)  # collisions within a file: duplicates
        score = rng.integers(0, 2, n).astype(str).astype(object)
        df = pl.DataFrame(
            {
                "model": [model] * n,
                "dataset": ["d"] * n,
                "prompt": [f"p{v}" for v in variant],
                "item": [str(i) for i in item],
                "run": ["0"] * n,
                "score": list(score),
            }
        )
        frames.append(df)
    # one model's rows spread over two files: duplicates across files (and partitions)
    frames.append(frames[0].slice(100, 300).with_columns(pl.lit("1").alias("score")))

    def plant(df: pl.DataFrame, rows: list[int], column: str, value: str | None) -> pl.DataFrame:
        vals = df[column].to_list()
        for r in rows:
            vals[r] = value
        return df.with_columns(pl.Series(column, vals, dtype=pl.String))

    f = frames[1]
    f = plant(f, [3, 50, 400], "model", None)
    f = plant(f, [5, 51], "model", " ")
    f = plant(f, [7, 300], "dataset", None)
    f = plant(f, [9, 310, 311], "item", None)
    f = plant(f, [11], "run", None)
    f = plant(f, [13, 14], "run", "1.5")
    f = plant(f, [15], "run", "-2")
    f = plant(f, [17, 18], "score", None)
    f = plant(f, [19, 500, 501, 502], "score", "x")
    f = plant(f, [21], "score", "nan")
    f = plant(f, [23, 24], "score", "inf")
    f = plant(f, [25, 600], "score", "1.7")
    frames[1] = f
    frames[2] = plant(frames[2], [2, 700], "score", "-0.5")
    paths = []
    for k, df in enumerate(frames):
        p = folder / f"part-{k:02d}.csv"
        df.write_csv(p)
        paths.append(p)
    shutil.copyfile(paths[2], folder / "part-99.csv")  # a byte-for-byte copy
    return folder


def _report(path: Path, **kw: object) -> tuple[pl.DataFrame, dict]:
    units, report = read_units(path, progress=False, **OPTIONS, **kw)
    d = report.to_dict()
    return units, json.loads(json.dumps(d, default=str).replace(str(path), "<dump>"))


@pytest.fixture(scope="module")
def dump(tmp_path_factory) -> Path:
    return planted_dump(tmp_path_factory.mktemp("planted") / "dump")


@pytest.mark.parametrize("partition_rows", [100_000, 700, 150, 1])
def test_planted_report_and_units_are_pinned(dump, partition_rows):
    want = json.loads((REFERENCE / "report.json").read_text())
    units, got = _report(dump, partition_rows=partition_rows)
    assert got == want
    assert PLANTED <= set(got["set_aside"]), set(got["set_aside"])
    assert got["rows_read"] == got["rows_kept"] + sum(got["set_aside"].values())
    assert_frame_equal(
        units, pl.read_parquet(REFERENCE / "units.parquet"), check_exact=False, rel_tol=1e-12
    )


def test_planted_report_equals_the_observation_path(dump):
    _, got = _report(dump)
    _, report = read(dump, **OPTIONS)
    plain = json.loads(json.dumps(report.to_dict(), default=str).replace(str(dump), "<dump>"))
    assert got == plain


@pytest.mark.parametrize("partition_rows", [100_000, 150])
def test_planted_first_invalid_row_is_pinned(dump, partition_rows):
    opts = {k: v for k, v in OPTIONS.items() if k != "on_invalid"}
    with pytest.raises(IngestError) as err:
        read_units(dump, progress=False, partition_rows=partition_rows, **opts)
    want = (REFERENCE / "first_error.txt").read_text().strip()
    assert str(err.value).replace(str(dump), "<dump>") == want


if __name__ == "__main__" and "--write" in sys.argv:
    import tempfile

    folder = planted_dump(Path(tempfile.mkdtemp()) / "dump")
    REFERENCE.mkdir(parents=True, exist_ok=True)
    units, rep = _report(folder)
    (REFERENCE / "report.json").write_text(json.dumps(rep, indent=1, sort_keys=True) + "\n")
    units.write_parquet(REFERENCE / "units.parquet")
    opts = {k: v for k, v in OPTIONS.items() if k != "on_invalid"}
    try:
        read_units(folder, progress=False, **opts)
    except IngestError as exc:
        (REFERENCE / "first_error.txt").write_text(str(exc).replace(str(folder), "<dump>") + "\n")
    (REFERENCE / "PROVENANCE").write_text(
        "Written by `python tests/io/test_ingest_planted.py --write` with the partition-hashing "
        "accounting (evalstats before issue 47's rewrite), polars " + pl.__version__ + ".\n"
    )


# --- the streaming pass against the partitioned one ---------------------------------------------


def _accounting(path: Path, *, stream: bool, part_rows: int = 2_000_000, **options: object):
    from evalstats.io._pipeline import plan_of
    from evalstats.io._stream import account_rows

    plan = plan_of(read, path, **options)
    acc = account_rows(plan, units=True, ids=True, part_rows=part_rows, stream=stream)
    g = acc.groups.drop("__n_dup")
    g = g.select(sorted(g.columns))
    keys = [c for c in g.columns if c not in ("__sum", "__n", "__n_err")]
    return {
        "rows_read": acc.rows_read,
        "set_aside": acc.set_aside,
        "examples": acc.examples,
        "notes": acc.scale_notes,
        "first_invalid": acc.first_invalid,
        "ids": acc.ids.rows() if acc.ids is not None else None,
        "groups": g.sort(keys, nulls_last=True),
    }


def assert_stream_equals_partitions(path: Path, **options: object) -> None:
    want = _accounting(path, stream=False, **options)
    for part_rows in (2_000_000, 97):
        got = _accounting(path, stream=True, part_rows=part_rows, **options)
        wg, gg = want.pop("groups"), got.pop("groups")
        assert got == want
        assert_frame_equal(gg, wg, check_exact=False, rel_tol=1e-12, check_dtypes=False)
        want["groups"] = wg


@pytest.mark.parametrize("chunk_rows", [4_000_000, 7, 500])
def test_streaming_pass_equals_partitions_on_the_planted_dump(dump, monkeypatch, chunk_rows):
    """Also in queries of a few rows: files sliced, a row carried over between slices."""
    monkeypatch.setattr("evalstats.io._stream.CHUNK_ROWS", chunk_rows)
    assert_stream_equals_partitions(dump, **OPTIONS)


@pytest.mark.parametrize("chunk_rows", [4_000_000, 50])
def test_streaming_pass_equals_partitions_when_some_groups_hold_duplicates(
    tmp_path, monkeypatch, chunk_rows
):
    """Files written in order (certified groups) but for a few groups with duplicates."""
    monkeypatch.setattr("evalstats.io._stream.CHUNK_ROWS", chunk_rows)
    folder = tmp_path / "dump"
    planted_dump(folder)
    for p in sorted(folder.glob("part-0*.csv")):
        df = pl.read_csv(p, infer_schema=False)
        df = df.unique(
            ["model", "dataset", "prompt", "run", "item"], keep="first", maintain_order=True
        )
        df = df.sort("model", "prompt", pl.col("item").cast(pl.Int64, strict=False))
        if p.name == "part-00.csv":  # two rows again: one group holds duplicates
            df = pl.concat([df, df.slice(10, 2)])
        df.write_csv(p)
    (folder / "part-03.csv").unlink()  # no model across files (else its groups are two runs)
    shutil.copyfile(folder / "part-02.csv", folder / "part-99.csv")  # a copy again
    acc = _accounting(folder, stream=True, **OPTIONS)
    assert acc["set_aside"]["duplicate"] == 2
    assert_stream_equals_partitions(folder, **OPTIONS)


@pytest.mark.parametrize(
    "dump",
    [
        "dumps/dove/lite",
        "dumps/dove/nested",
        "dumps/lm_eval/output",
        "dumps/inspect/synthetic",
        "dumps/llm_stability/older_layout",
    ],
)
def test_streaming_pass_equals_partitions_on_fixtures(fixtures, dump):
    assert_stream_equals_partitions(fixtures / dump)


def test_streaming_pass_equals_partitions_on_a_percent_looking_file(tmp_path):
    a = pl.DataFrame({"model": ["m"] * 4, "item": [1, 2, 3, 4], "score": [80, 60, 0, 100]})
    b = pl.DataFrame({"model": ["n"] * 3, "item": [1, 2, 3], "score": [1.0, 0.5, 0.0]})
    for k, df in enumerate([a, b]):
        df.with_columns(pl.lit("d").alias("dataset")).write_csv(tmp_path / f"p{k}.csv")
    acc = _accounting(tmp_path, stream=True)
    assert len(acc["notes"]) == 1 and "p0.csv" in acc["notes"][0]
    assert_stream_equals_partitions(tmp_path)


@given(
    rows=st.lists(
        st.tuples(
            st.sampled_from(["m0", "m1"]),
            st.sampled_from(["d0", "d1", None]),
            st.sampled_from(["t0", "t1", " t1"]),  # ' t1' is 't1' once stripped
            st.sampled_from(["1", "2", "9", "10", "a", "b", ""]),  # item
            st.sampled_from(["0", "1", "0.5", "x", "", "nan"]),  # score
            st.sampled_from(["0", "1", "1.5"]),  # run
        ),
        min_size=1,
        max_size=30,
    ),
    cuts=st.lists(st.integers(0, 30), max_size=2),
    ordered=st.booleans(),
    chunk_rows=st.sampled_from([2, 5, 4_000_000]),
)
@settings(deadline=None)
def test_streaming_pass_equals_partitions_for_any_rows(
    tmp_path_factory, rows, cuts, ordered, chunk_rows
):
    """Property: any rows, ordered or not, over any files, any queries: the passes agree."""
    import evalstats.io._stream as stream

    stream.CHUNK_ROWS, old = chunk_rows, stream.CHUNK_ROWS
    folder = tmp_path_factory.mktemp("dump")
    df = pl.DataFrame(
        rows, schema=["model", "dataset", "prompt", "item", "score", "run"], orient="row"
    )
    if ordered:  # as dumps are written: certified groups, the streaming pass alone
        df = df.sort("model", "dataset", "prompt", "run", "item")
    bounds = sorted({0, len(rows), *(c for c in cuts if c < len(rows))})
    for k, (a, b) in enumerate(zip(bounds, bounds[1:])):
        df[a:b].write_csv(folder / f"p{k}.csv")
    try:
        assert_stream_equals_partitions(
            folder, columns={"prompt": "variant"}, on_invalid="skip", score_scale="unit"
        )
    finally:
        stream.CHUNK_ROWS = old


def test_names_are_cleaned_only_in_columns_where_some_value_needs_it(tmp_path):
    """A column whose distinct values are all clean is not cleaned row by row (nothing changes)."""
    from evalstats.io._pipeline import plan_of

    nfd = "cafe\u0301"  # 'café' with a combining accent
    df = pl.DataFrame(
        {
            "model": [" a", "a", nfd, "b"],
            "dataset": ["d"] * 4,
            "item": ["1", "2", "1", "1"],
            "score": [1.0, 0.0, 1.0, 0.0],
        }
    )
    df.write_csv(tmp_path / "d.csv")
    obs, report = read(tmp_path / "d.csv")
    assert sorted(obs.collect()["model"].unique()) == ["a", "b", "caf\u00e9"]
    assert any("model: 2 spellings" in n for n in report.notes)
    plan = plan_of(read, tmp_path / "d.csv")
    shown = plan.frames[0].explain()
    assert 'col("model").str.strip_chars' in shown
    assert 'col("item").str.strip_chars' not in shown
