"""Issue 43, item 2-3: a folder degrades per file and never stops on one odd file.

Logs are written here in Inspect's documented log schema (``inspect_ai.log.EvalLog``: a header
with ``eval.task``, ``eval.model``, ``eval.scorers``; one ``samples/<id>_epoch_<n>.json`` member
per sample in an ``.eval`` zip), with the shapes real logs had: an agentic log whose members
decompress to more than the old 32 MiB cap, a pairwise judge whose scorer answers "left" or
"right", a scorer declared [0, 10] in one log and [0, 1] in another, a log whose first declared
scorer never ran, and a byte copy under another name.
"""

from __future__ import annotations

import json
import random
import shutil
import zipfile
from pathlib import Path

import polars as pl
import pytest

from evalstats.cli import main
from evalstats.errors import IngestError
from evalstats.io import read


def _header(task, model, scorers, metadata=None):
    return {
        "version": 2,
        "status": "success",
        "eval": {
            "task": task,
            "task_id": f"{task}-{model}",
            "model": model,
            "scorers": [
                {"name": s, **({"metadata": metadata[s]} if metadata and s in metadata else {})}
                for s in scorers
            ],
        },
    }


def _samples(values, scorer="match", targets=None, extra=None):
    out = []
    for i, v in enumerate(values, start=1):
        s = {"id": i, "epoch": 1, "input": f"q{i}", "scores": {scorer: {"value": v}}}
        if targets is not None:
            s["target"] = targets[i - 1]
        if extra is not None:
            s["messages"] = extra(i)
        out.append(s)
    return out


def write_json_log(path: Path, header: dict, samples: list[dict]) -> Path:
    path.write_text(json.dumps({**header, "samples": samples}))
    return path


def write_eval_log(path: Path, header: dict, samples: list[dict]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("header.json", json.dumps(header))
        for s in samples:
            z.writestr(f"samples/{s['id']}_epoch_{s['epoch']}.json", json.dumps(s))
    return path


def _transcript(size: int, seed: int):
    """An agent's messages: ``size`` bytes of words (compresses about 3:1, as real text)."""
    rng = random.Random(seed)
    words = [
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9)))
        for _ in range(5000)
    ]

    def messages(i: int) -> list[dict]:
        text = " ".join(rng.choice(words) for _ in range(size // 6))
        return [{"role": "assistant", "content": text}]

    return messages


@pytest.fixture
def mixed_folder(tmp_path) -> Path:
    d = tmp_path / "logs"
    d.mkdir()
    # valid logs
    write_json_log(d / "valid-a.json", _header("arith", "m1", ["match"]), _samples("CICI"))
    write_eval_log(d / "valid-b.eval", _header("arith", "m2", ["match"]), _samples("CCCI"))
    # an agentic log: 36 samples of 1 MiB transcripts, more than the old 32 MiB cap together
    write_eval_log(
        d / "agentic.eval",
        _header("agent", "m1", ["match"]),
        _samples("C" * 18 + "I" * 18, extra=_transcript(2**20, 0)),
    )
    # a pairwise judge: the scorer answers "left" or "right"; the target says which is right
    write_json_log(
        d / "judge.json",
        _header("pairs", "m1", ["preference"]),
        _samples(
            ["left", "right", "left", "left"],
            scorer="preference",
            targets=["left", "left", "left", "right"],
        ),
    )
    # one scorer declared [0, 10] in one log and [0, 1] in another
    write_json_log(
        d / "rating-wide.json",
        _header("rate", "m1", ["rating"], {"rating": {"low": 0, "high": 10}}),
        _samples([7, 9, 3, 5], scorer="rating"),
    )
    write_json_log(
        d / "rating-unit.json",
        _header("rate", "m2", ["rating"], {"rating": {"low": 0, "high": 1}}),
        _samples([0.5, 1, 0, 0.5], scorer="rating"),
    )
    # the first declared scorer never ran; the second is scored
    unscored = _samples("CCII", scorer="includes")
    write_json_log(
        d / "second-scorer.json", _header("arith", "m3", ["llm_judge", "includes"]), unscored
    )
    # a byte copy of a valid log under another name
    shutil.copy(d / "valid-a.json", d / "valid-a (copy).json")
    return d


def test_a_folder_of_odd_logs_reads_in_one_command_every_file_accounted_for(mixed_folder):
    obs, report = read(mixed_folder)
    obs = obs.collect()
    files = sorted(p.name for p in mixed_folder.iterdir())
    accounted = sorted(Path(s).name for s in report.sources) + [
        Path(f.path).name for f in report.files_set_aside
    ]
    assert sorted(accounted) == files
    assert report.files_set_aside == ()
    assert report.rows_read == report.rows_kept + sum(report.set_aside.values())
    assert report.rows_kept == obs.height
    # the copy is a duplicate by content, not a superseded retry of itself
    assert dict(report.set_aside) == {"duplicate_file": 4}
    assert not any("superseded" in n for n in report.notes)
    assert any("valid-a (copy).json is a byte-for-byte copy of" in n for n in report.notes)
    means = {
        (m, d, k): v
        for m, d, k, v in obs.group_by("model", "dataset", "metric")
        .agg(pl.col("score").mean())
        .iter_rows()
    }
    assert means[("m1", "arith", "match")] == 0.5
    assert means[("m2", "arith", "match")] == 0.75
    assert means[("m1", "agent", "match")] == 0.5
    # left/right scored against the target: right, wrong, right, wrong
    assert means[("m1", "pairs", "preference")] == 0.5
    assert means[("m1", "rate", "rating")] == 6.0
    assert means[("m2", "rate", "rating")] == 0.5
    # the scored second scorer, with a note
    assert means[("m3", "arith", "includes")] == 0.5
    assert any("'llm_judge', declared first, has no value" in n for n in report.notes)
    rating = next(m for m in report.metrics if m.name == "rating")
    assert (rating.low, rating.high) == (0.0, 10.0)
    assert any("'rating' is declared with 2 ranges" in n for n in report.notes)
    preference = next(m for m in report.metrics if m.name == "preference")
    assert (preference.low, preference.high) == (0.0, 1.0)


def test_the_cli_reads_the_folder_with_no_flag(mixed_folder, capsys):
    assert main(["ingest", str(mixed_folder)]) == 0
    err = capsys.readouterr().err
    assert "duplicate_file" in err and "Traceback" not in err


def test_a_log_over_the_total_cap_is_set_aside_naming_the_setting_and_size(
    mixed_folder, monkeypatch
):
    monkeypatch.setenv("EVALSTATS_MAX_LOG_BYTES", str(16 * 2**20))
    obs, report = read(mixed_folder)
    (aside,) = report.files_set_aside
    assert aside.path.endswith("agentic.eval")
    assert "more than the limit of 16,777,216" in aside.reason
    assert aside.hint.startswith("EVALSTATS_MAX_LOG_BYTES=")
    needed = int(aside.hint.split("=")[1])
    assert needed > 32 * 2**20 and needed % 2**20 == 0
    assert "agent" not in obs.collect()["dataset"].to_list()
    monkeypatch.setenv("EVALSTATS_MAX_LOG_BYTES", str(needed))
    _, report = read(mixed_folder)
    assert report.files_set_aside == ()


def test_a_categorical_scorer_with_no_known_order_is_set_aside_with_a_note(tmp_path):
    write_json_log(tmp_path / "ok.json", _header("t", "m", ["match"]), _samples("CI"))
    write_json_log(
        tmp_path / "colours.json",
        _header("t2", "m", ["colour"]),
        _samples(["red", "blue", "red"], scorer="colour"),
    )
    obs, report = read(tmp_path)
    assert dict(report.set_aside) == {"categorical_score": 3}
    assert report.rows_kept == obs.collect().height == 2
    assert any("categories (blue, red)" in n and "categorical_score" in n for n in report.notes)


def test_an_invalid_row_is_not_an_unreadable_file_on_invalid_decides(tmp_path):
    """A file with a bad row is readable: the error names file and row; --on-invalid skip reads."""
    write_json_log(tmp_path / "ok.json", _header("t", "m", ["match"]), _samples("CI"))
    write_json_log(tmp_path / "bad.json", _header("t", "m2", ["match"]), _samples([1, "maybe"]))
    with pytest.raises(IngestError, match=r"bad\.json, row 2"):
        read(tmp_path)
    _, report = read(tmp_path, on_invalid="skip")
    assert report.files_set_aside == () and dict(report.set_aside) == {"unparseable_score": 1}


def test_a_file_that_cannot_be_opened_is_set_aside_with_its_reason(tmp_path):
    write_json_log(tmp_path / "ok.json", _header("t", "m", ["match"]), _samples("CI"))
    (tmp_path / "broken.eval").write_bytes(b"PK\x03\x04 not really a zip")
    obs, report = read(tmp_path)
    (aside,) = report.files_set_aside
    assert aside.path.endswith("broken.eval")
    assert "broken.eval" in report.summary() and obs.collect().height == 2


def test_one_metric_declared_with_two_ranges_in_a_table_reads_with_the_widest(tmp_path):
    """`_metrics_of` raised "declared twice"; the widest range holds both, and a note says so."""
    head = "model,item,score,metric,metric_low,metric_high\n"
    (tmp_path / "a.csv").write_text(head + "m,1,0.5,acc,0,1\nm,2,1,acc,0,1\n")
    (tmp_path / "b.csv").write_text(head + "n,1,3,acc,0,10\nn,2,7,acc,0,10\n")
    obs, report = read(tmp_path)
    (m,) = report.metrics
    assert (m.name, m.low, m.high) == ("acc", 0.0, 10.0)
    assert report.rows_kept == obs.collect().height == 4
    assert any("read with the widest range" in n for n in report.notes)
