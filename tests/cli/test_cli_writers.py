"""Every writer under hostile conditions (issue 45, item 2): only under the path it was given,
strict JSON, and every operating-system error one line with exit 2.

The writers: ``export`` (Every Eval Ever records), ``design --out`` (.toml, .json, .csv),
``report --out``, ``--out FILE`` of a table command, ``ingest --out`` and ``--plot FILE``. We run
as root, for whom ``chmod`` denies nothing, so a read-only folder, a permission refused and a full
disk are simulated by making the call that creates the folder (``os.mkdir``) or writes the file
fail with the errno the system would give; a file where a folder is expected and an existing
file as the target folder are real.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import matplotlib.figure
import numpy as np
import polars as pl
import pytest

from tests._cli import cli, ok, one_line_error

#: Cheap analyses for the report: the point here is the writing, not the statistics.
SKIP = "nstar,converge,anova,ranks,friedman,compare,noise,attribution,normality,correlation"


def _table(path: Path, *, models=("a", "b"), dataset: str | None = None, scale: float = 1.0):
    rng = np.random.default_rng(0)
    rows = [
        {
            "model": m,
            "item": str(i),
            "prompt": f"p{v}",
            "score": float(rng.random() < 0.5 + 0.1 * v) * scale,
            **({"dataset": dataset} if dataset is not None else {}),
        }
        for m in models
        for i in range(10)
        for v in range(3)
    ]
    pl.DataFrame(rows).write_csv(path)
    return path


def _writers(data: Path, target: Path) -> dict[str, list[str]]:
    """Each writer's command line, writing to (or into) ``target``."""
    return {
        "export": ["export", str(data), str(target / "records")],
        "design-toml": ["design", str(data), "--out", str(target / "d.toml")],
        "design-json": ["design", str(data), "--out", str(target / "d.json")],
        "design-csv": ["design", str(data), "--out", str(target / "d.csv")],
        "table-csv": ["intervals", str(data), "--out", str(target / "t.csv")],
        "table-json": ["intervals", str(data), "--out", str(target / "t.json")],
        "table-parquet": ["intervals", str(data), "--out", str(target / "t.parquet")],
        "ingest-parquet": ["ingest", str(data), "--out", str(target / "o.parquet")],
        "ingest-jsonl": ["ingest", str(data), "--out", str(target / "o.jsonl")],
        "plot": ["moments", str(data), "--plot", str(target / "p.png")],
        "report": [
            "report", str(data), "--out", str(target / "r"), "--quiet", "--skip", SKIP,
            "--figure-format", "png",
        ],
    }  # fmt: skip


WRITERS = list(_writers(Path("d"), Path("t")))

#: (errno, the system's words) of a folder or file that cannot be written.
OS_ERRORS = {
    "permission": (errno.EACCES, "Permission denied"),
    "read-only": (errno.EROFS, "Read-only file system"),
    "no-space": (errno.ENOSPC, "No space left on device"),
}


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file()}


# --- a folder that cannot be created (read-only, permission, no space) --------------------------


@pytest.mark.parametrize("cause", list(OS_ERRORS))
@pytest.mark.parametrize("writer", WRITERS)
def test_a_folder_that_cannot_be_made_is_one_line(tmp_path, monkeypatch, writer, cause):
    data = _table(tmp_path / "d.csv")
    target = tmp_path / "locked" / "sub"
    code, words = OS_ERRORS[cause]
    real = os.mkdir

    def mkdir(path, *args, **kwargs):
        if str(tmp_path / "locked") in os.fsdecode(path):
            raise OSError(code, words, os.fsdecode(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", mkdir)
    status, _, err = cli(*_writers(data, target)[writer])
    one_line_error(status, err, words)
    assert not (tmp_path / "locked").exists()


# --- a file that cannot be written into an existing folder --------------------------------------


@pytest.mark.parametrize("cause", list(OS_ERRORS))
@pytest.mark.parametrize("writer", WRITERS)
def test_a_file_that_cannot_be_written_is_one_line(tmp_path, monkeypatch, writer, cause):
    data = _table(tmp_path / "d.csv")
    target = tmp_path / "out"
    target.mkdir()
    code, words = OS_ERRORS[cause]

    def refusing(real):
        def refuse(self, *args, **kwargs):
            target = args[0] if args else kwargs.get("file", kwargs.get("path"))
            if isinstance(self, Path) or isinstance(target, (str, Path)):
                raise OSError(code, words)
            return real(self, *args, **kwargs)  # into memory (`frame.write_csv()` for stdout)

        return refuse

    for cls, names in (
        (pl.DataFrame, ("write_csv", "write_parquet", "write_ndjson")),
        (pl.LazyFrame, ("sink_csv", "sink_parquet", "sink_ndjson")),
        (Path, ("write_text", "write_bytes")),
        (matplotlib.figure.Figure, ("savefig",)),
    ):
        for name in names:
            monkeypatch.setattr(cls, name, refusing(getattr(cls, name)))
    status, _, err = cli(*_writers(data, target)[writer])
    one_line_error(status, err, words)


# --- a file where a folder is expected; a file as the target folder (real) ----------------------


@pytest.mark.parametrize("writer", WRITERS)
def test_a_file_where_a_folder_is_expected_is_named(tmp_path, writer):
    data = _table(tmp_path / "d.csv")
    blocker = tmp_path / "blocker"
    blocker.write_text("not a folder\n")
    status, _, err = cli(*_writers(data, blocker / "sub")[writer])
    one_line_error(status, err, f"{str(blocker)!r} is a file, where a folder is needed")
    assert blocker.read_text() == "not a folder\n"


@pytest.mark.parametrize("command", ["export", "report"])
def test_an_existing_file_as_the_target_folder_is_one_line(tmp_path, command):
    data = _table(tmp_path / "d.csv")
    target = tmp_path / "target"
    target.write_text("keep me\n")
    args = [command, str(data)] + ([str(target)] if command == "export" else ["--out", str(target)])
    status, _, err = cli(*args, *(["--quiet", "--skip", SKIP] if command == "report" else []))
    one_line_error(status, err, str(target), "is a file")
    assert target.read_text() == "keep me\n"


@pytest.mark.parametrize("flag", ["--out", "--plot"])
def test_a_folder_as_the_target_file_is_one_line(tmp_path, flag):
    data = _table(tmp_path / "d.csv")
    folder = tmp_path / "t.csv" if flag == "--out" else tmp_path / "p.png"
    folder.mkdir()
    command = "intervals" if flag == "--out" else "moments"
    status, _, err = cli(command, str(data), flag, str(folder))
    one_line_error(status, err, str(folder), "folder")
    assert list(folder.iterdir()) == []


def test_a_plot_without_a_figure_suffix_is_refused_not_written_beside(tmp_path):
    """matplotlib writes ``plot.png`` for ``plot``: a file the user did not name."""
    data = _table(tmp_path / "d.csv")
    before = _files(tmp_path)
    status, _, err = cli("moments", str(data), "--plot", str(tmp_path / "plot"))
    one_line_error(status, err, "`--plot` must end in .png", "plot.png")
    assert _files(tmp_path) == before


# --- export: only under the folder given -------------------------------------------------------


@pytest.mark.parametrize(
    ("models", "dataset"),
    [
        (("a", "b"), ".."),  # out/../<developer>/<model>
        (("x/..", "y/../.."), "ds"),  # a model name that climbs
        (("../../escape", "b"), "."),
        (("a", "b"), "../../.."),
    ],
)
def test_export_writes_only_under_the_folder_given(tmp_path, models, dataset):
    data = _table(tmp_path / "d.csv", models=models, dataset=dataset)
    out = tmp_path / "deep" / "out"
    before = _files(tmp_path)
    status, _, err = cli("export", str(data), str(out))
    ok(status, err)
    new = _files(tmp_path) - before
    assert len(new) == 4
    for p in new:
        assert out.resolve() in p.resolve().parents, p
        assert not any(part.startswith(".") for part in p.relative_to(out).parts), p


def test_export_refuses_a_symlink_inside_the_folder_that_points_out(tmp_path):
    data = _table(tmp_path / "d.csv", dataset="ds")
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    (out / "ds").symlink_to(elsewhere, target_is_directory=True)
    status, _, err = cli("export", str(data), str(out))
    one_line_error(status, err, "outside the folder given")
    assert list(elsewhere.iterdir()) == []


# --- strict JSON ---------------------------------------------------------------------------------


def _strict_load(text: str):
    def refuse(name):
        raise ValueError(f"non-strict JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


def test_export_of_extreme_scores_is_strict_json_that_reads_back(tmp_path):
    """Scores near the largest double: their mean overflowed to ``Infinity`` in the aggregate."""
    data = _table(tmp_path / "d.csv", scale=1.7e308, dataset="ds")
    out = tmp_path / "out"
    status, _, err = cli("export", str(data), str(out))
    ok(status, err)
    aggregates = sorted(out.rglob("*.json"))
    assert len(aggregates) == 2
    for f in [*aggregates, *out.rglob("*.jsonl")]:
        for line in [f.read_text()] if f.suffix == ".json" else f.read_text().splitlines():
            _strict_load(line)
    for f in aggregates:
        doc = _strict_load(f.read_text())
        samples: dict[str, list[float]] = {}
        for x in f.with_name(f.stem + "_samples.jsonl").read_text().splitlines():
            line = _strict_load(x)
            samples.setdefault(line["evaluation_result_id"], []).append(line["evaluation"]["score"])
        assert len(doc["evaluation_results"]) == 3  # one per prompt variant
        for r in doc["evaluation_results"]:
            x = np.array(samples[r["evaluation_result_id"]])
            expected = float(np.mean(x / 1.7e308)) * 1.7e308  # the mean, without overflow
            assert np.isfinite(r["score_details"]["score"])
            np.testing.assert_allclose(r["score_details"]["score"], expected, rtol=1e-12)


@pytest.mark.shared_data
def test_export_of_extreme_scores_validates_against_the_published_schemas(tmp_path, shared_data):
    jsonschema = pytest.importorskip("jsonschema")
    root = shared_data / "every-eval-ever" / "schemas"
    agg = jsonschema.Draft7Validator(json.loads((root / "eval.schema.json").read_text()))
    inst = jsonschema.Draft7Validator(
        json.loads((root / "instance_level_eval.schema.json").read_text())
    )
    data = _table(tmp_path / "d.csv", scale=-1.7e308, dataset="ds")
    out = tmp_path / "out"
    ok(*cli("export", str(data), str(out))[::2])
    for f in out.rglob("*.json"):
        agg.validate(_strict_load(f.read_text()))
    for f in out.rglob("*.jsonl"):
        for line in f.read_text().splitlines():
            inst.validate(_strict_load(line))


def test_a_json_table_holds_null_for_nan_and_says_so(tmp_path):
    """A model with one item has no interval (NaN): JSON has no NaN, so null and a note."""
    data = tmp_path / "d.csv"
    pl.DataFrame(
        {
            "model": ["a"] * 4 + ["b"],
            "item": ["1", "2", "3", "4", "1"],
            "score": [0.2, 0.5, 0.9, 0.4, 0.3],
        }
    ).write_csv(data)
    out = tmp_path / "t.json"
    status, _, err = cli("intervals", str(data), "--out", str(out))
    ok(status, err)
    rows = {r["model"]: r for r in _strict_load(out.read_text())}
    assert rows["b"]["ci_low"] is None and rows["a"]["ci_low"] is not None
    assert "written as null" in err and "ci_low 1" in err
