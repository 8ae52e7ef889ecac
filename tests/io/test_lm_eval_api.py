"""lm-eval's Python API output (``simple_evaluate`` saved as one JSON), issue 43 item 1.

The fixtures were written by lm-eval 0.4.13 itself (fixtures/dumps/lm_eval_api/producer/, see its
PROVENANCE.md): every per-task mean of every file equals the file's own ``results``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from evalstats.cli import main
from evalstats.errors import IngestError
from evalstats.io import detect_format, read
from evalstats.io.lm_eval_api import detect_lm_eval_api, read_lm_eval_api

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "fixtures/dumps/lm_eval_api/producer/output"
CLI_OUT = ROOT / "fixtures/dumps/lm_eval/producer/output"


def _producer_means(metric_of: dict[str, str]) -> dict[tuple[str, str, str], float]:
    """(file, task, metric) -> the harness's own mean, from each file's ``results``."""
    out = {}
    for f in sorted(OUT.glob("*.json")):
        doc = json.loads(f.read_text())
        for task, res in doc["results"].items():
            metric = metric_of[task]
            out[(f.name, task, metric)] = res[f"{metric},none"]
    return out


@pytest.mark.parametrize("mc_metric", ["acc", "acc_norm"])
def test_every_task_mean_of_every_file_equals_the_harness_results(mc_metric):
    metric_of = {"toy_mc": mc_metric, "toy_gen": "exact_match"}
    assert detect_format(OUT) == "lm-eval-api"
    obs, report = read(OUT, metric=metric_of)
    df = obs.collect()
    assert report.format == "lm-eval-api"
    assert report.rows_read == report.rows_kept == df.height == 2 * (8 + 6) + 4 + 4
    assert sorted(df["model"].unique()) == ["toy/dummy-a", "toy/dummy-b"]
    expected = _producer_means(metric_of)
    # runs of dummy-a are numbered by the file's date: run0.json is run 0, run1.json run 1
    files = {("toy/dummy-a", 0): "run0.json", ("toy/dummy-a", 1): "run1.json"}
    files[("toy/dummy-b", 0)] = "run2.json"
    got = df.group_by("model", "run", "dataset", "metric").agg(pl.col("score").mean())
    assert got.height == len(expected) == 6
    for model, run, task, metric, mean in got.iter_rows():
        assert mean == pytest.approx(expected[(files[(model, run)], task, metric)], abs=1e-12)


def test_sources_name_each_task_of_the_file():
    _, report = read_lm_eval_api(OUT / "run2.json")
    assert sorted(Path(s).name for s in report.sources) == [
        "run2.json#samples.toy_gen",
        "run2.json#samples.toy_mc",
    ]
    assert not any("evalstats-lm-eval-api" in n for n in report.notes)


def test_a_folder_mixing_api_files_and_command_line_output_reads_both(tmp_path):
    shutil.copytree(OUT, tmp_path / "api")
    shutil.copytree(CLI_OUT, tmp_path / "cli")
    _, report = read(tmp_path)
    assert sorted(c.format for c in report.by_format) == ["lm-eval", "lm-eval-api"]
    assert report.files_set_aside == ()


def test_results_without_samples_say_they_are_aggregates_only(tmp_path):
    doc = json.loads((OUT / "run0.json").read_text())
    doc.pop("samples")
    f = tmp_path / "aggregates.json"
    f.write_text(json.dumps(doc))
    assert not detect_lm_eval_api(f)
    with pytest.raises(IngestError, match="aggregates only, no item scores"):
        read_lm_eval_api(f)


def test_a_record_error_names_the_file_and_task(tmp_path):
    doc = json.loads((OUT / "run2.json").read_text())
    doc["samples"]["toy_mc"][1]["acc"] = "maybe"
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(doc))
    with pytest.raises(IngestError, match=r"bad\.json, row 2.*toy_mc"):
        read_lm_eval_api(f)


def test_cli_reads_an_api_file(capsys):
    assert main(["ingest", str(OUT / "run0.json")]) == 0
    err = capsys.readouterr().err
    assert "ingest (lm-eval-api): 2 files, 14 rows read, 14 kept" in err
    assert "run0.json#samples.toy_mc" in err or "evalstats-lm-eval-api" not in err


def _cut_while_writing(path: Path) -> dict:
    """What ``json.dump(results, fh, indent=2)`` leaves when a value cannot be serialized.

    ``simple_evaluate`` puts ``config.model_dtype`` (a ``torch.dtype``) after ``samples``:
    ``json.dump`` writes everything before it, then raises, and the file stops there.
    """

    class Dtype:  # stands for torch.dtype: json cannot serialize it
        pass

    recs = [
        {"doc_id": i, "target": "0", "filter": "none", "metrics": ["acc"], "acc": a}
        for i, a in enumerate([1.0, 0.0, 1.0, 1.0])
    ]
    out = {
        "results": {"winogrande": {"alias": "winogrande", "acc,none": 0.75}},
        "configs": {"winogrande": {"task": "winogrande", "num_fewshot": 0}},
        "n-shot": {"winogrande": 0},
        "samples": {"winogrande": recs},
        "config": {"model": "hf", "model_args": {"pretrained": "org/m"}, "model_dtype": Dtype()},
    }
    with open(path, "w") as fh, pytest.raises(TypeError):
        json.dump(out, fh, indent=2)
    return out


def test_a_file_cut_while_being_written_reads_its_complete_members(tmp_path):
    f = tmp_path / "lm_eval_results.json"
    out = _cut_while_writing(f)
    with pytest.raises(ValueError):
        json.loads(f.read_text())  # the file is indeed cut
    assert detect_format(f) == "lm-eval-api"
    obs, report = read(f)
    df = obs.collect()
    assert report.rows_read == report.rows_kept == 4
    assert df["score"].mean() == out["results"]["winogrande"]["acc,none"]
    assert df["model"].unique().to_list() == ["lm_eval_results"]  # config was cut: the file name
    (note,) = [n for n in report.notes if "cut while being written" in n]
    assert "member 'config'" in note and "samples" in note


def test_a_cut_file_without_its_samples_is_still_refused(tmp_path):
    f = tmp_path / "run.json"
    f.write_text('{"results": {"boolq": {"acc,none": 0.5}}, "configs": {"boolq": {"ta')
    with pytest.raises(IngestError, match="not valid JSON"):
        read_lm_eval_api(f)


def _one_folder_per_run(root: Path, runs: dict[str, str], model_args: str) -> dict[str, dict]:
    """``<run>/results.json`` per run, as users save ``simple_evaluate`` per run folder.

    The files are lm-eval's own (``OUT``); their ``config.model_args`` are replaced by arguments
    of a custom model class that hold none of lm-eval's model keys (as a real dump does:
    ``base=<checkpoint>,offsets=<adapter>``), so lm-eval's rule names no model for them.
    """
    docs = {}
    for run, source in runs.items():
        doc = json.loads((OUT / source).read_text())
        # a second filter on the generation task, as gsm8k's strict-match / flexible-extract:
        # one record per document and filter (the reader keeps one filter, notes the other)
        gen = doc["samples"]["toy_gen"]
        gen += [{**r, "filter": "flexible"} for r in gen]
        doc["config"]["model"] = "custom"
        doc["config"]["model_args"] = model_args.format(run=run)
        (root / run).mkdir(parents=True)
        (root / run / "results.json").write_text(json.dumps(doc))
        docs[run] = doc
    return docs


def test_files_of_one_name_in_run_folders_are_models_named_by_their_paths(tmp_path):
    docs = _one_folder_per_run(
        tmp_path, {"base": "run0.json", "adapted": "run2.json"}, "base=/ckpt/m,offsets=/o/{run}.pt"
    )
    obs, report = read(tmp_path, metric={"toy_mc": "acc", "toy_gen": "exact_match"})
    assert report.format == "lm-eval-api"
    df = obs.collect()
    # two files, two models: named by their paths below the folder they share
    assert sorted(df["model"].unique()) == ["adapted/results", "base/results"]
    got = df.group_by("model", "dataset", "metric").agg(pl.col("score").mean())
    for model, task, metric, mean in got.iter_rows():
        run = model.split("/")[0]
        assert mean == docs[run]["results"][task][f"{metric},none"]
    for run in docs:
        (note,) = [n for n in report.notes if f"model '{run}/results' taken from" in n]
        assert "the file's path" in note and f"'base=/ckpt/m,offsets=/o/{run}.pt'" in note
        assert "pretrained=" in note  # the keys lm-eval looks for are listed
    # every note naming a file names one file: none is the same for the two runs
    per_file = [n for n in report.notes if "#samples." in n]
    assert len(per_file) == len(set(per_file)) > 0
    assert all(n.startswith(("base/results.json#", "adapted/results.json#")) for n in per_file)


def test_a_file_whose_results_name_a_model_keeps_it_whatever_its_name(tmp_path):
    _one_folder_per_run(tmp_path, {"a": "run0.json", "b": "run2.json"}, "pretrained=org/{run}")
    obs, report = read(tmp_path)
    assert sorted(obs.collect()["model"].unique()) == ["org/a", "org/b"]
    assert not [n for n in report.notes if "taken from" in n]


def _wrapped(path: Path, doc: dict) -> None:
    """``simple_evaluate``'s dictionary saved inside an object of the user's own.

    As a real repository does (ddy314/j3, ``docs/evaluation/results/j3-gibc.json``:
    ``{"model": ..., "checkpoint": ..., "tasks": [...], "results": simple_evaluate(...)}``).
    """
    path.write_text(json.dumps({"model": "J3", "tasks": list(doc["results"]), "results": doc}))


def test_an_output_nested_under_a_key_of_the_users_object_is_read(tmp_path):
    doc = json.loads((OUT / "run0.json").read_text())
    _wrapped(tmp_path / "wrapped.json", doc)
    assert detect_format(tmp_path / "wrapped.json") == "lm-eval-api"
    obs, report = read(
        tmp_path / "wrapped.json", metric={"toy_mc": "acc", "toy_gen": "exact_match"}
    )
    got = obs.collect().group_by("model", "dataset", "metric").agg(pl.col("score").mean())
    assert got.height == 2
    for model, task, metric, mean in got.iter_rows():
        assert model == "toy/dummy-a"  # config.model_args of the nested output
        assert mean == doc["results"][task][f"{metric},none"]
    (note,) = [n for n in report.notes if "nested under 'results'" in n]
    assert "wrapped.json" in note


def test_a_nested_output_without_samples_is_said_to_hold_aggregates_with_its_tasks(tmp_path):
    doc = json.loads((OUT / "run0.json").read_text())
    doc.pop("samples")
    f = tmp_path / "j3-gibc.json"
    _wrapped(f, doc)
    # in a folder or alone: recognised as lm-eval's aggregates, with the producer's numbers
    with pytest.raises(IngestError, match=r"lm-eval aggregate results \(nested under 'results'\)"):
        read(f)
    with pytest.raises(IngestError, match=r"toy_mc acc,none=0\.625"):
        read(f)
    # named as this format: refused as aggregates only, listing its tasks (not the wrapper's keys)
    with pytest.raises(IngestError, match=r"tasks, nested under 'results': toy_gen, toy_mc\)"):
        read_lm_eval_api(f)


def test_two_outputs_in_one_object_are_refused_naming_their_keys(tmp_path):
    doc = json.loads((OUT / "run0.json").read_text())
    f = tmp_path / "two.json"
    f.write_text(json.dumps({"base": doc, "tuned": doc}))
    with pytest.raises(
        IngestError, match=r"2 lm-eval outputs in one object \(under 'base', 'tuned'\)"
    ):
        read_lm_eval_api(f)
