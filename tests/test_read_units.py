"""read_units: files straight to the unit table, a partition at a time, same as read + to_units.

The reference in every test is the plain path, ``to_units(read(path).observations)`` and its
ingest report. read_units sums each unit's scores in file order and divides once, where
to_units takes polars' mean: the two can differ in the last bits only, hence ``rel_tol=1e-12``
(about 4500 float64 ulps, far below any difference a bug would make, e.g. one item of 100).
"""

from __future__ import annotations

import pickle
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from evalstats.aggregate import read_units, to_units
from evalstats.errors import IngestError, ParameterError
from evalstats.io import read
from evalstats.io._pipeline import plan_of
from tests.conftest import needs_shared_data

REL_TOL = 1e-12

#: Dumps relative to fixtures/, or (``shared:``) real data read in place from ../shared/data.
FIXTURE_DUMPS = [
    ("dumps/dove/lite", {}),
    ("dumps/dove/nested", {}),
    ("dumps/dove/shots_dir", {}),
    ("dumps/dove/n_shots", {}),
    ("dumps/dove/lite", {"exclude_correct_position": True}),
    pytest.param("shared:llm_stability_runs", {}, marks=needs_shared_data),
    ("dumps/llm_stability/older_layout", {}),
    ("dumps/lm_eval/output", {}),
    pytest.param("shared:inspect-logs", {}, marks=needs_shared_data),
    ("dumps/inspect/synthetic", {}),
    ("dumps/reliable_eval/results", {}),
    ("dumps/reliable_eval/predictions", {"on_invalid": "skip"}),
    pytest.param("shared:state-of-what-art/paraphrases accuracies", {}, marks=needs_shared_data),
]


def _dump(request, fixtures, dump: str) -> Path:
    if dump == "shared:llm_stability_runs":  # the strict_json_schema archive, extracted
        return request.getfixturevalue("llm_stability_runs")
    if dump.startswith("shared:"):
        return request.getfixturevalue("shared_data") / dump.removeprefix("shared:")
    return fixtures / dump


def reference(path, **options) -> tuple[pl.DataFrame, dict]:
    obs, report = read(path, **options)
    return to_units(obs, check_values=False, on_mismatch="keep").collect(), report.to_dict()


def assert_same(path, *, partition_rows: int | None = None, **options) -> pl.DataFrame:
    want, want_report = reference(path, **options)
    extra = {} if partition_rows is None else {"partition_rows": partition_rows}
    got, got_report = read_units(path, progress=False, **extra, **options)
    assert got_report.to_dict() == want_report
    assert got.columns == want.columns
    keys = [c for c in got.columns if c not in ("score", "n_items", "n_errors")]
    assert_frame_equal(
        got.sort(keys, nulls_last=True),
        want.sort(keys, nulls_last=True),
        check_exact=False,
        rel_tol=REL_TOL,
    )
    return got


@pytest.mark.parametrize(("dump", "options"), FIXTURE_DUMPS)
def test_read_units_equals_read_then_to_units_on_every_fixture(request, fixtures, dump, options):
    assert_same(_dump(request, fixtures, dump), **options)


@pytest.mark.parametrize("partition_rows", [1, 7, 40])
def test_small_partitions_and_hash_buckets_change_nothing(fixtures, partition_rows):
    """Files larger than partition_rows are split in hash buckets of their duplicate groups."""
    assert_same(fixtures / "dumps/dove/lite", partition_rows=partition_rows)


def test_units_are_sorted_by_keys(fixtures):
    units, _ = read_units(fixtures / "dumps/dove/lite", progress=False)
    assert units.equals(units.sort(["model", "dataset", "variant", "run"], maintain_order=True))


def _write_parts(folder: Path, frames: list[pl.DataFrame]) -> list[Path]:
    """One CSV per frame; a ``dataset`` column (else the loader takes each file's name)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for k, df in enumerate(frames):
        p = folder / f"part-{k:02d}.csv"
        if "dataset" not in df.columns:
            df = df.with_columns(pl.lit("bench").alias("dataset"))
        df.write_csv(p)
        paths.append(p)
    return paths


def test_duplicates_across_files_are_read_again_jointly(tmp_path):
    """A model's rows split over files: the first row in file order wins, across partitions."""
    a = pl.DataFrame(
        {"model": ["m"] * 4, "prompt": ["p"] * 4, "item": [1, 2, 3, 4], "score": [1, 0, 1, 0]}
    )
    b = pl.DataFrame(  # items 2 and 3 again with other scores: duplicates of file 0's rows
        {"model": ["m"] * 3, "prompt": ["p"] * 3, "item": [2, 3, 5], "score": [1, 0, 1]}
    )
    c = pl.DataFrame({"model": ["n"] * 2, "prompt": ["p"] * 2, "item": [1, 1], "score": [0, 1]})
    folder = tmp_path / "dump"
    _write_parts(folder, [a, b, c])
    opts = {"columns": {"prompt": "variant"}, "on_invalid": "skip"}
    for rows in (1, 3, 100):  # one file per partition, buckets, all files at once
        units = assert_same(folder, partition_rows=rows, **opts)
    m = units.filter(pl.col("model") == "m").row(0, named=True)
    assert (m["score"], m["n_items"]) == (0.6, 5)  # 1, 0, 1, 0 from file 0, then 1 for item 5
    _, report = read_units(folder, progress=False, partition_rows=1, **opts)
    assert dict(report.set_aside) == {"duplicate": 3}
    assert [(Path(e.path).name, e.row) for e in report.examples] == [
        ("part-01.csv", 1),
        ("part-01.csv", 2),
        ("part-02.csv", 2),
    ]


def test_first_invalid_row_is_the_same_error_as_read(tmp_path):
    """A duplicate across files (invalid for tables) comes before a bad score in a later row."""
    a = pl.DataFrame({"model": ["m"] * 2, "item": [1, 2], "score": ["1", "0"]})
    b = pl.DataFrame({"model": ["m"] * 3, "item": [3, 1, 4], "score": ["1", "1", "7"]})
    folder = tmp_path / "dump"
    _write_parts(folder, [a, b])
    with pytest.raises(IngestError) as want:
        read(folder)
    for rows in (1, 100):
        with pytest.raises(IngestError) as got:
            read_units(folder, progress=False, partition_rows=rows)
        assert str(got.value) == str(want.value)
    assert "part-01.csv, row 2" in str(want.value)


def test_percent_looking_file_is_noted_per_file_also_in_buckets_and_never_rescaled(tmp_path):
    a = pl.DataFrame({"model": ["m"] * 4, "item": [1, 2, 3, 4], "score": [80, 60, 0, 100]})
    b = pl.DataFrame({"model": ["n"] * 3, "item": [1, 2, 3], "score": [1.0, 0.5, 0.0]})
    folder = tmp_path / "dump"
    _write_parts(folder, [a, b])
    for rows in (2, 100):
        units = assert_same(folder, partition_rows=rows)
        report = read_units(folder, progress=False, partition_rows=rows).report
        hints = [n for n in report.notes if "--rescale 100" in n]
        assert len(hints) == 1 and "part-00" in hints[0]
    assert units.filter(pl.col("model") == "m")["score"].item() == pytest.approx(60.0)
    units = assert_same(folder, partition_rows=2, score_scale="percent")
    assert units.filter(pl.col("model") == "m")["score"].item() == pytest.approx(0.6)


def test_unit_level_input_passes_through_with_error_counts(tmp_path):
    df = pl.DataFrame(
        {
            "model": ["a", "a", "b", "b", "a"],
            "prompt": ["p1", "p2", "p1", "p2", "p1"],
            "accuracy": [0.5, 0.25, 1.0, 0.75, 0.9],
            "error": [None, "timeout", None, None, None],
        }
    )
    folder = tmp_path / "dump"
    _write_parts(folder, [df[:3], df[3:]])
    opts = {"columns": {"prompt": "variant", "accuracy": "score"}, "on_invalid": "skip"}
    for rows in (1, 100):
        units = assert_same(folder, partition_rows=rows, **opts)
    assert units["n_errors"].to_list() == [0, 1, 0, 0]


def test_error_column_gives_error_counts_per_unit(tmp_path):
    df = pl.DataFrame(
        {
            "model": ["a"] * 4,
            "item": [1, 2, 3, 3],
            "score": [1.0, 0.0, 0.0, 1.0],
            "error": [None, "api_error", "empty", None],
        }
    )
    p = tmp_path / "d.csv"
    df.write_csv(p)
    units = assert_same(p, on_invalid="skip")
    assert units.select("n_items", "n_errors").row(0) == (3, 2)


rows_strategy = st.lists(
    st.tuples(
        st.sampled_from(["m0", "m1"]),  # model
        st.sampled_from(["d0", "d1", None]),  # dataset (None: set aside)
        st.sampled_from(["t0", "t1", "t|2"]),  # a factor ('|' inside: variant keys collide)
        st.integers(0, 4),  # item
        st.sampled_from(["0", "1", "0.5", "1.5", "x", ""]),  # score, some invalid
    ),
    min_size=1,
    max_size=40,
)


@given(
    rows=rows_strategy,
    cuts=st.lists(st.integers(0, 40), max_size=3),
    partition_rows=st.integers(1, 50),
)
def test_read_units_equals_the_plain_path_for_any_split(
    tmp_path_factory, rows, cuts, partition_rows
):
    """Property: any rows, split over any files, in partitions of any size: same units, report."""
    folder = tmp_path_factory.mktemp("dump")
    df = pl.DataFrame(
        rows, schema=["model", "dataset", "template", "item", "score"], orient="row"
    ).with_columns(pl.col("template").alias("prompt"))
    bounds = sorted({0, len(rows), *(c for c in cuts if c < len(rows))})
    _write_parts(folder, [df[a:b] for a, b in zip(bounds, bounds[1:])])
    opts = {"on_invalid": "skip", "score_scale": "unit"}
    assert_same(folder, partition_rows=partition_rows, **opts)


def test_progress_bar_counts_files_on_stderr_and_can_be_silenced(fixtures, capsys):
    path = fixtures / "dumps/dove/lite"
    read_units(path, progress=True)
    err = capsys.readouterr().err
    assert "/4 [" in err and "file/s" in err
    read_units(path, progress=False)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("partition_rows", [5, 10_000])
def test_progress_counts_a_file_once_all_its_buckets_are_done(fixtures, partition_rows):
    from evalstats.io._accounting import account

    plan = plan_of(read, fixtures / "dumps/dove/lite", format="dove")
    done: list[int] = []
    account(plan, part_rows=partition_rows, progress=done.append)
    assert sum(done) == 4 and all(d >= 0 for d in done)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"engine": "spark"}, "`engine` must be 'polars' or 'dask', got 'spark'"),
        ({"scheduler": "tcp://h:8786"}, "`scheduler` is used by engine='dask' only"),
        ({"partition_rows": 0}, "`partition_rows` must be a positive integer, got 0"),
    ],
)
def test_bad_parameters_are_named(fixtures, kwargs, match):
    with pytest.raises(ParameterError, match=match):
        read_units(fixtures / "dumps/dove/lite", **kwargs)


def test_plan_reads_no_rows_and_pickles(fixtures):
    """The plan travels to Dask workers: it must survive pickling with its lazy frames."""
    from evalstats.io._accounting import PartSpec, run_part

    plan = plan_of(read, fixtures / "dumps/dove/lite", format="dove")
    again = pickle.loads(pickle.dumps(plan))
    assert again.paths == plan.paths and len(again.frames) == 4
    a = run_part(plan, PartSpec((0, 1)))
    b = run_part(again, PartSpec((0, 1)))
    assert a.counts == b.counts and a.groups.sort(a.groups.columns).equals(
        b.groups.sort(b.groups.columns)
    )
