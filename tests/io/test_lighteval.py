"""LightEval details parquet files and results JSON (issue 43, item 1).

LightEval's own output (``fixtures/dumps/lighteval/producer``, written by its Pipeline) is read
at the end; the synthetic cases are written in the layout its own code documents (lighteval 0.13.0 wheel, ``logging/evaluation_tracker.py``:
``details/<model>/<date>/details_<task>_<date>.parquet`` with the sorted columns ``doc``,
``metric``, ``model_response`` of ``asdict(Detail)``; ``results/<model>/results_<date>.json``
with ``config_general``, ``results``, ...). The results file holds the means of the details it
sits beside, as LightEval's aggregation writes them; the loader's means must equal them.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from evalstats.cli import main
from evalstats.io import detect_format, read
from evalstats.io.lighteval import read_lighteval

MODEL = "HuggingFaceTB/SmolLM2-135M"
TASKS = {
    "leaderboard|arc:challenge|25": [(1, 1), (0, 1), (1, 0), (0, 0), (1, 1)],
    "lighteval|gsm8k|5": [(1, 1), (0, 0), (0, 1)],
}
DATES = ["2025-03-01T10-00-00.000001", "2025-03-02T10-00-00.000001"]


def _write(root: Path) -> Path:
    for k, date in enumerate(DATES):
        results = {}
        for task, marks in TASKS.items():
            rows = marks if k == 0 else [(b, a) for a, b in marks]  # the second run differs
            folder = root / "details" / MODEL / date
            folder.mkdir(parents=True, exist_ok=True)
            frame = pl.DataFrame(
                {
                    "doc": [
                        {
                            "id": str(i),
                            "task_name": task,
                            "query": f"Q{i}",
                            "choices": ["a", "b"],
                            "gold_index": 0,
                        }
                        for i in range(len(rows))
                    ],
                    "metric": [{"acc": float(a), "acc_norm": float(b)} for a, b in rows],
                    "model_response": [{"text": ["a" if a else "b"]} for a, _ in rows],
                }
            )
            frame.write_parquet(folder / f"details_{task}_{date}.parquet")
            results[task] = {
                "acc": sum(a for a, _ in rows) / len(rows),
                "acc_stderr": 0.1,
                "acc_norm": sum(b for _, b in rows) / len(rows),
            }
        out = root / "results" / MODEL
        out.mkdir(parents=True, exist_ok=True)
        doc = {"config_general": {"model_name": MODEL}, "results": results, "versions": {}}
        (out / f"results_{date}.json").write_text(json.dumps(doc))
    return root


@pytest.mark.parametrize("metric", ["acc", "acc_norm"])
def test_every_task_mean_of_every_run_equals_the_results_file(tmp_path, metric):
    root = _write(tmp_path)
    assert detect_format(root) == "lighteval"
    obs, report = read(root, metric=metric)
    df = obs.collect()
    assert report.format == "lighteval" and report.files_set_aside == ()
    assert report.rows_read == report.rows_kept == 2 * (5 + 3)
    assert df["model"].unique().to_list() == [MODEL]
    for k, date in enumerate(DATES):
        res = json.loads((root / "results" / MODEL / f"results_{date}.json").read_text())
        for task in TASKS:
            got = df.filter((pl.col("dataset") == task) & (pl.col("run") == k))["score"].mean()
            assert got == res["results"][task][metric]
    assert any(f"the producer's {metric} = " in n for n in report.notes)


def test_gold_and_response_come_from_doc_and_model_response(tmp_path):
    obs, _ = read_lighteval(_write(tmp_path))
    row = obs.collect().filter(pl.col("item") == "1").row(0, named=True)
    assert row["gold"] == "a" and row["response"] in ("a", "b")


def test_results_alone_are_aggregates_and_said_so(tmp_path):
    root = _write(tmp_path)
    # a results file beside a table, no details: set aside as aggregates only, not unknown
    folder = tmp_path / "only"
    folder.mkdir()
    (folder / "a.csv").write_text("model,item,score\nm,1,1\n")
    src = root / "results" / MODEL / f"results_{DATES[0]}.json"
    (folder / src.name).write_text(src.read_text())
    _, report = read(folder)
    (aside,) = report.files_set_aside
    assert aside.reason.startswith("LightEval aggregate results")


def test_cli_metric_per_task(tmp_path, capsys):
    root = _write(tmp_path)
    code = main(["ingest", str(root), "--metric", "lighteval|gsm8k|5=acc_norm"])
    assert code == 0
    assert "ingest (lighteval): 4 files, 16 rows read, 16 kept" in capsys.readouterr().err


def test_a_git_lfs_pointer_is_named_as_one(tmp_path):
    """LightEval keeps its own reference details in Git LFS: a clone without LFS holds pointers."""
    import re

    from evalstats.errors import IngestError

    d = tmp_path / "details" / "m" / DATES[0]
    d.mkdir(parents=True)
    f = d / f"details_lighteval|arc|0_{DATES[0]}.parquet"
    f.write_text(
        "version https://git-lfs.github.com/spec/v1\n"
        "oid sha256:803a445f6d563c2d2097df7c7772cd81b3df0bacc9e702caaab5f0dde7fe5b25\n"
        "size 87624\n"
    )
    with pytest.raises(IngestError, match=re.escape(f.name) + r".*(LFS|lfs)"):
        read_lighteval(tmp_path)


PRODUCER = Path(__file__).parents[2] / "fixtures" / "dumps" / "lighteval" / "producer" / "output"


def test_lighteval_s_own_output_reads_to_its_own_results():
    """Written by LightEval 0.13.0 itself (Pipeline + DummyModel); see the folder's PROVENANCE.md."""
    assert detect_format(PRODUCER) == "lighteval"
    obs, report = read(PRODUCER)
    df = obs.collect()
    assert report.rows_read == report.rows_kept == 3 * 6
    assert sorted(df["model"].unique().to_list()) == ["toy/dummy-a", "toy/dummy-b"]
    assert df["dataset"].unique().to_list() == ["toy_add|0"]
    # two runs of toy/dummy-a, numbered by date; one of toy/dummy-b
    assert df.group_by("model").agg(pl.col("run").n_unique()).sort("model")["run"].to_list() == [
        2,
        1,
    ]
    for f in sorted(PRODUCER.glob("results/*/*/results_*.json")):
        model = f"{f.parent.parent.name}/{f.parent.name}"
        date = f.stem.removeprefix("results_")
        dates = sorted(p.name for p in (PRODUCER / "details" / model).iterdir())
        got = df.filter((pl.col("model") == model) & (pl.col("run") == dates.index(date)))
        want = json.loads(f.read_text())["results"]["toy_add|0"]["acc"]
        assert got.height == 6 and got["score"].mean() == want  # difference 0


def _declaring(root: Path, declared: list[dict]) -> Path:
    """A details file whose struct fields are sorted, and a results file declaring the order."""
    date = DATES[0]
    task = "community|gpqa-diamond-idk|0"
    folder = root / "details" / "org" / "m" / date
    folder.mkdir(parents=True)
    marks = [(1.0, 1.0, 0.0, 0.0), (0.0, -1.0, 0.0, 0.0), (0.0, 0.0, 1.0, 1.0)]
    pl.DataFrame(
        {
            "doc": [{"id": str(i), "task_name": task} for i in range(3)],
            # as datasets writes it: the fields sorted, not in the task's order
            "metric": [
                {"extract_fail": e, "idk_freq": f, "idk_score": s, "trad_score": t}
                for t, s, f, e in marks
            ],
        }
    ).write_parquet(folder / f"details_{task}_{date}.parquet")
    out = root / "results" / "org" / "m"
    out.mkdir(parents=True)
    doc = {"results": {task: {"trad_score": 1 / 3}}, "config_tasks": {task: {"metrics": declared}}}
    (out / f"results_{date}.json").write_text(json.dumps(doc))
    return root


def test_the_default_metric_is_the_first_the_task_declares_with_its_direction(tmp_path):
    spec = {
        "metric_name": ["trad_score", "idk_score", "idk_freq", "extract_fail"],
        "higher_is_better": {
            "trad_score": True,
            "idk_score": True,
            "idk_freq": False,
            "extract_fail": False,
        },
    }
    root = _declaring(tmp_path, [spec])
    obs, report = read_lighteval(root)
    df = obs.collect()
    assert df["metric"].unique().to_list() == ["trad_score"]
    assert df["score"].to_list() == [1.0, 0.0, 0.0]
    assert any("'trad_score', the first the task declares" in n for n in report.notes)
    low = read_lighteval(root, metric="idk_freq").observations.collect()
    assert low["higher_is_better"].unique().to_list() == [False]


def test_without_a_declaration_the_first_logged_metric_is_read(tmp_path):
    root = _declaring(tmp_path, [])
    obs, report = read_lighteval(root)
    assert obs.collect()["metric"].unique().to_list() == ["extract_fail"]
    assert any("the first logged" in n for n in report.notes)
