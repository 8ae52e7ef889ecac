"""BFCL result and score files (issue 43, item 1).

bfcl-eval's runner needs model endpoints, so its files are written here in the layout its own
code defines (bfcl-eval 2026.3.23: ``model_handler/base_handler.py`` writes
``result/<model>/<group>/BFCL_v4_<category>_result.json``; ``eval_checker/eval_runner_helper.py``
``save_eval_results`` writes ``score/<model>/<group>/BFCL_v4_<category>_score.json``, a header
with accuracy, correct_count and total_count, then one line per failed entry; ``bfcl evaluate``
also writes ``score/data_overall.csv``).
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from evalstats.cli import main
from evalstats.io import detect_format, read

RUNS = {
    ("gpt-4o-2024-11-20-FC", "non_live", "simple_python"): (10, [2, 7]),
    ("gpt-4o-2024-11-20-FC", "live", "live_multiple"): (6, [0]),
    ("Qwen_Qwen3-8B-FC", "non_live", "simple_python"): (10, [1, 2, 3]),
}


def _write(root: Path, *, drop_score: tuple | None = None) -> Path:
    for (model, group, cat), (n, bad) in RUNS.items():
        rdir = root / "result" / model / group
        sdir = root / "score" / model / group
        rdir.mkdir(parents=True, exist_ok=True)
        sdir.mkdir(parents=True, exist_ok=True)
        lines = [
            {"id": f"{cat}_{i}", "result": f"f(x={i})", "input_token_count": 90, "latency": 0.5 + i}
            for i in range(n)
        ]
        (rdir / f"BFCL_v4_{cat}_result.json").write_text(
            "".join(json.dumps(x) + "\n" for x in lines)
        )
        if drop_score == (model, cat):
            continue
        header = {"accuracy": (n - len(bad)) / n, "correct_count": n - len(bad), "total_count": n}
        failed = [
            {
                "id": f"{cat}_{i}",
                "model_name": model,
                "test_category": cat,
                "valid": False,
                "error": ["Invalid value for parameter 'x'"],
                "error_type": "value_error:others",
            }
            for i in bad
        ]
        (sdir / f"BFCL_v4_{cat}_score.json").write_text(
            "".join(json.dumps(x) + "\n" for x in [header, *failed])
        )
    (root / "score" / "data_overall.csv").write_text("Rank,Model,Overall Acc\n1,x,50.0\n")
    return root


def test_each_category_mean_equals_the_score_files_accuracy(tmp_path):
    root = _write(tmp_path)
    assert detect_format(root) == "bfcl"
    obs, report = read(root)
    df = obs.collect()
    assert report.format == "bfcl" and report.files_set_aside == ()
    assert report.rows_read == report.rows_kept == 26
    for (model, group, cat), (n, bad) in RUNS.items():
        head = json.loads(
            (root / "score" / model / group / f"BFCL_v4_{cat}_score.json")
            .read_text()
            .split("\n")[0]
        )
        sub = df.filter((pl.col("model") == model) & (pl.col("dataset") == cat))
        assert sub.height == n and sub["score"].mean() == head["accuracy"]
        assert sub.filter(pl.col("score") == 0)["failure"].to_list() == [
            "value_error:others"
        ] * len(bad)
    assert any("the producer's accuracy = 0.8" in n for n in report.notes)


def test_a_category_without_score_file_is_unscored_and_counted(tmp_path):
    root = _write(tmp_path, drop_score=("Qwen_Qwen3-8B-FC", "simple_python"))
    _, report = read(root)
    assert dict(report.set_aside) == {"unscored": 10} and report.rows_kept == 16


def test_cli(tmp_path, capsys):
    assert main(["ingest", str(_write(tmp_path))]) == 0
    err = capsys.readouterr().err
    assert "ingest (bfcl): 3 files, 26 rows read, 26 kept" in err


@pytest.mark.parametrize("sub", ["result"])
def test_the_result_folder_alone_finds_the_score_files_beside_it(tmp_path, sub):
    root = _write(tmp_path)
    _, report = read(root / sub)
    assert report.rows_kept == 26


def test_the_2024_archive_layout_numbers_failed_entries_by_position(tmp_path):
    """Before the versioned names: ``gorilla_openfunctions_v1_test_<cat>_result.json`` beside
    ``score/<model>/<cat>_score.json``, whose failed records carry the entry's 1-based position as
    ``id`` and the entry's own id under ``prompt.id`` (the BFCL-Result archive of 2024)."""
    res = tmp_path / "result" / "gpt-4o-FC"
    sco = tmp_path / "score" / "gpt-4o-FC"
    res.mkdir(parents=True)
    sco.mkdir(parents=True)
    ids = [f"simple_{i}" for i in range(5)]
    (res / "gorilla_openfunctions_v1_test_simple_result.json").write_text(
        "".join(json.dumps({"id": i, "result": "f()"}) + "\n" for i in ids)
    )
    # entries 2 (position 3) and 4 (position 5) failed; one record names its entry, one does not
    lines = [
        {"accuracy": 0.6, "correct_count": 3, "total_count": 5},
        {"id": 3, "valid": False, "error": ["x"], "prompt": {"id": "simple_2"}},
        {"id": 5, "valid": False, "error": ["y"], "error_type": "value_error"},
    ]
    (sco / "simple_score.json").write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert detect_format(tmp_path) == "bfcl"
    obs, report = read(tmp_path)
    df = obs.collect().sort("item")
    assert df["dataset"].unique().to_list() == ["simple"]
    assert df["score"].to_list() == [1.0, 1.0, 0.0, 1.0, 0.0]
    assert df["score"].mean() == lines[0]["accuracy"]
    assert report.files_set_aside == ()


PRODUCER = Path(__file__).parents[2] / "fixtures" / "dumps" / "bfcl" / "producer" / "output"


def test_bfcl_eval_s_own_score_files_are_reproduced():
    """Score files written by bfcl-eval 2026.3.23's runner; see the folder's PROVENANCE.md."""
    assert detect_format(PRODUCER) == "bfcl"
    obs, report = read(PRODUCER)
    df = obs.collect()
    assert report.rows_read == report.rows_kept == 2 * 2 * 8 and report.files_set_aside == ()
    heads = sorted(PRODUCER.glob("score/*/*/BFCL_v4_*_score.json"))
    assert len(heads) == 4
    for f in heads:
        head = json.loads(f.read_text().split("\n")[0])
        cat = f.name.removeprefix("BFCL_v4_").removesuffix("_score.json")
        got = df.filter((pl.col("model") == f.parent.parent.name) & (pl.col("dataset") == cat))
        assert got.height == head["total_count"]
        assert got["score"].sum() == head["correct_count"]
        assert got["score"].mean() == head["accuracy"]  # difference 0
