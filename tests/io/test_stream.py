"""The streaming accounting pass (evalstats/io/_stream.py) against the partitioned one.

``read_units`` builds its plan with the name checks deferred to the streaming pass, leaves the
columns constant within a file out of its grouping, and proves duplicate groups free of
duplicates by ``item - row`` (whole-number items) or by the order of items (a batch function
whose batch edges are checked afterwards). Each is compared here with the partitioned pass on
an eager plan (names checked before the pass, every column grouped), which finds duplicates by
hashing: same unit table (to the last bits of a sum), same report.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import evalstats.io._stream as stream
from evalstats.aggregate import _unit_table, read_units
from evalstats.io import read
from evalstats.io._pipeline import plan_of, report_of


def partitioned(path: Path, **options: object) -> tuple[pl.DataFrame, object]:
    """Unit table and report by the partitioned pass on an eager plan (the reference)."""
    plan = plan_of(read, path, **options)
    assert not plan.unchecked_names
    acc = stream.account_rows(plan, units=True, ids=False, stream=False)
    return _unit_table(plan, acc), report_of(plan, acc)


def assert_same(path: Path, **options: object) -> object:
    want_units, want = partitioned(path, **options)
    units, got = read_units(path, progress=False, **options)
    assert got == want
    assert_frame_equal(units, want_units, check_exact=False, rel_tol=1e-12)
    return got


def long_table(
    folder: Path, *, files: int = 3, items: int = 40, step: int = 1, seed: int = 0
) -> Path:
    """Files named after datasets (no dataset column): models x prompts x whole-number items."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for f in range(files):
        n = 2 * 3 * items
        pl.DataFrame(
            {
                "model": np.repeat(["m0", "m1"], 3 * items),
                "prompt": np.tile(np.repeat(["p0", "p1", "p2"], items), 2),
                "item": np.tile(np.arange(items) * step, 6),
                "score": rng.integers(0, 2, n).astype(float),
            }
        ).write_parquet(folder / f"data{f}.parquet")
    return folder


def test_consecutive_items_are_proved_in_one_query(tmp_path, monkeypatch):
    """No pass over the names of their own, no partitions: one streaming query."""
    folder = long_table(tmp_path / "t")
    monkeypatch.setattr(
        "evalstats.io._pipeline._merge_notes", lambda *a: pytest.fail("names read twice")
    )
    monkeypatch.setattr(
        "evalstats.io._stream.account", lambda *a, **k: pytest.fail("partitions used")
    )
    units, report = read_units(folder, progress=False, columns={"prompt": "variant"})
    assert report.rows_read == report.rows_kept == 3 * 240
    assert sorted(units["dataset"].unique()) == ["data0", "data1", "data2"]  # per-file constants
    assert units.height == 3 * 2 * 3


@pytest.mark.parametrize("step", [1, 3])
def test_whole_number_items_in_order_with_or_without_gaps(tmp_path, step):
    assert_same(long_table(tmp_path / "t", step=step), columns={"prompt": "variant"})


def test_a_group_with_duplicates_goes_to_the_partitions(tmp_path):
    folder = long_table(tmp_path / "t", files=2)
    df = pl.read_parquet(folder / "data1.parquet")
    pl.concat([df, df.slice(7, 2)]).write_parquet(folder / "data1.parquet")
    report = assert_same(folder, columns={"prompt": "variant"}, on_invalid="skip")
    assert report.set_aside == {"duplicate": 2}


def test_names_that_need_cleaning_are_read_again_with_the_checks_first(tmp_path):
    folder = long_table(tmp_path / "t", files=1)
    df = pl.read_parquet(folder / "data0.parquet")
    df.with_columns(
        pl.when(pl.col("item") < 5).then(pl.lit(" m1")).otherwise(pl.col("model")).alias("model")
    ).write_parquet(folder / "data0.parquet")
    report = assert_same(folder, columns={"prompt": "variant"}, on_invalid="skip")
    assert any("spellings" in n for n in report.notes)


def test_rows_set_aside_and_percent_looking_scores(tmp_path):
    folder = long_table(tmp_path / "t", files=2)
    df = pl.read_parquet(folder / "data0.parquet")
    df.with_columns(
        pl.when(pl.col("item") == 3)
        .then(float("nan"))
        .when(pl.col("item") == 4)
        .then(None)
        .otherwise(pl.col("score") * 80)
        .alias("score")
    ).write_parquet(folder / "data0.parquet")
    report = assert_same(folder, columns={"prompt": "variant"}, on_invalid="skip")
    assert set(report.set_aside) == {"nonfinite_score", "missing_score"}
    assert any("data0.parquet: scores lie in [0, 100]" in n for n in report.notes)


@pytest.mark.parametrize("chunk_rows", [7, 1 << 62])
def test_text_items_in_order_across_queries_and_batches(tmp_path, monkeypatch, chunk_rows):
    """Items 'q9' < 'q10' only by (length, text): the second order proves those groups."""
    monkeypatch.setattr(stream, "CHUNK_ROWS", chunk_rows)
    folder = tmp_path / "t"
    folder.mkdir()
    for f in range(2):
        pl.DataFrame(
            {
                "model": ["m"] * 30,
                "prompt": ["p0"] * 15 + ["p1"] * 15,
                "item": [f"q{i}" for i in range(5, 20)] * 2,
                "score": [1.0, 0.0, 1.0] * 10,
            }
        ).write_csv(folder / f"d{f}.csv")
    assert_same(folder, columns={"prompt": "variant"}, on_invalid="skip")
    monkeypatch.setattr(stream, "account", lambda *a, **k: pytest.fail("partitions used"))
    read_units(folder, progress=False, columns={"prompt": "variant"})


@pytest.mark.slow
def test_text_items_over_many_streaming_batches(tmp_path, monkeypatch):
    """300,000 rows: polars cuts them into batches, whose edges are checked after the query."""
    n = 100_000
    pl.DataFrame(
        {
            "model": ["m"] * (3 * n),
            "prompt": np.repeat(["p0", "p1", "p2"], n),
            "item": [f"i{k:06d}" for k in range(n)] * 3,
            "score": np.arange(3 * n) % 2,
        }
    ).write_parquet(tmp_path / "d.parquet")
    assert_same(tmp_path / "d.parquet", columns={"prompt": "variant"})
    monkeypatch.setattr(stream, "account", lambda *a, **k: pytest.fail("partitions used"))
    read_units(tmp_path / "d.parquet", progress=False, columns={"prompt": "variant"})


@given(
    rows=st.lists(
        st.tuples(
            st.sampled_from(["m0", "m1"]),
            st.sampled_from(["t0", "t1", " t1"]),
            st.integers(0, 6),  # whole-number items: the `item - row` proof
            st.sampled_from([0.0, 1.0, 0.5, float("nan"), None]),
        ),
        min_size=1,
        max_size=30,
    ),
    cuts=st.lists(st.integers(0, 30), max_size=2),
    ordered=st.booleans(),
    chunk_rows=st.sampled_from([2, 5, 1 << 62]),
)
@settings(deadline=None, max_examples=60)
def test_whole_number_items_any_rows(tmp_path_factory, rows, cuts, ordered, chunk_rows):
    """Property: any rows over any files (parquet, numbers kept), any queries: passes agree."""
    old, stream.CHUNK_ROWS = stream.CHUNK_ROWS, chunk_rows
    folder = tmp_path_factory.mktemp("dump")
    df = pl.DataFrame(
        rows,
        schema={"model": pl.String, "prompt": pl.String, "item": pl.Int64, "score": pl.Float64},
        orient="row",
    )
    if ordered:
        df = df.sort("model", "prompt", "item")
    bounds = sorted({0, len(rows), *(c for c in cuts if c < len(rows))})
    for k, (a, b) in enumerate(zip(bounds, bounds[1:])):
        df[a:b].write_parquet(folder / f"p{k}.parquet")
    try:
        assert_same(folder, columns={"prompt": "variant"}, on_invalid="skip")
    finally:
        stream.CHUNK_ROWS = old


def test_a_parquet_file_is_detected_as_by_every_detector(fixtures, tmp_path):
    """The detectors left out for a .parquet file (detect_format's shortcut) never claim one."""
    from evalstats.io import DETECTORS, PARQUET_FORMATS, detect_format

    files = sorted(fixtures.rglob("*.parquet"))
    files.append(long_table(tmp_path / "t", files=1) / "data0.parquet")
    assert files
    for f in files:
        claims = [n for n, detect in DETECTORS.items() if n not in PARQUET_FORMATS and detect(f)]
        assert claims == [], (f, claims)
        full = next((n for n, detect in DETECTORS.items() if detect(f)), "table")
        assert detect_format(f) == full
