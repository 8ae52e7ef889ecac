"""Inspect logs written by inspect_ai itself (tests/io/inspect_producer.py, mockllm model).

The producer runs in a subprocess: importing inspect_ai patches ``zipfile`` for Zstandard on
Python < 3.14, and the reader must not depend on that patch.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import polars as pl
import pytest

from evalstats.errors import IngestError
from evalstats.io import detect_format, read
from evalstats.io.inspect_log import read_inspect

# find, not import: importing inspect_ai patches zipfile in this process (see the docstring)
if importlib.util.find_spec("inspect_ai") is None:
    pytest.skip("inspect_ai is not installed (test extra)", allow_module_level=True)

PRODUCER = Path(__file__).with_name("inspect_producer.py")


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("inspect_logs")
    done = subprocess.run(
        [sys.executable, str(PRODUCER), str(out)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return out


def _summary(logs: Path) -> float:
    """inspect_ai's own accuracy from the (identical) JSON log's results."""
    doc = json.loads((logs / "json" / "arith.json").read_text())
    (score,) = doc["results"]["scores"]
    return score["metrics"]["accuracy"]["value"]


def test_zstandard_log_reads_and_matches_inspect_summary(logs):
    path = logs / "zstd" / "arith.eval"
    with zipfile.ZipFile(path) as z:
        methods = {i.compress_type for i in z.infolist()}
    assert 93 in methods  # current inspect_ai writes Zstandard members
    obs, report = read_inspect(path)
    df = obs.collect()
    assert report.rows_read == report.rows_kept == df.height == 12  # 4 samples x 3 epochs
    assert sorted(df["run"].unique()) == [0, 1, 2]
    assert df["score"].mean() == pytest.approx(_summary(logs)) == pytest.approx(0.5)
    # targets 1 and 3 are in mockllm's answer, 2 and 4 are not
    per_item = df.group_by("item").agg(pl.col("score").mean()).sort("item")
    assert per_item["score"].to_list() == [1.0, 0.0, 1.0, 0.0]


def test_deflate_and_json_logs_give_the_same_table(logs):
    z = read_inspect(logs / "zstd" / "arith.eval").observations.collect()
    d = read_inspect(logs / "deflate" / "arith.eval").observations.collect()
    with zipfile.ZipFile(logs / "deflate" / "arith.eval") as arc:
        assert {i.compress_type for i in arc.infolist()} == {zipfile.ZIP_DEFLATED}
    j_obs, j_report = read(logs / "json")  # a folder of .json logs is detected
    assert detect_format(logs / "json") == "inspect" and j_report.format == "inspect"
    key = ["item", "run"]
    assert z.sort(key).equals(d.sort(key))
    assert (
        z.sort(key)
        .select(key + ["score"])
        .equals(j_obs.collect().sort(key).select(key + ["score"]))
    )


def test_zstandard_is_read_without_inspect_ai_in_the_process(logs):
    code = (
        "import sys; from evalstats.io.inspect_log import read_inspect; "
        f"o = read_inspect({str(logs / 'zstd' / 'arith.eval')!r}).observations.collect(); "
        "assert 'zipfile_zstd' not in sys.modules and 'inspect_ai' not in sys.modules; "
        "print(o.height, o['score'].sum())"
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=root, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["12", "6.0"]


def test_eval_set_folder_keeps_the_retry_and_counts_the_failed_samples(logs):
    obs, report = read_inspect(logs / "evalset")
    df = obs.collect()
    assert report.rows_read == 14 and report.rows_kept == 12 == df.height
    assert report.set_aside == {"superseded_log": 2}
    assert report.rows_read == report.rows_kept + sum(report.set_aside.values())
    assert report.sources == (str(logs / "evalset" / "2025-01-01T00-05-00_arith_retry.eval"),)
    assert any("superseded by 2025-01-01T00-05-00_arith_retry.eval" in n for n in report.notes)
    assert df["score"].mean() == pytest.approx(_summary(logs))


def test_dictionary_score_key_is_never_rescaled(logs):
    path = logs / "dict" / "dictscore.eval"
    obs, report = read_inspect(path)  # default: the first key, 'correct'
    assert obs.collect()["score"].to_list() == [1.0, 0.0, 1.0, 0.0]
    assert any("'two_keys.words'" in n for n in report.notes)
    # a count-valued key is read on its own scale: 4 words, never 0.04
    words = read_inspect(path, scorer="two_keys.words").observations.collect()
    assert words["score"].to_list() == [4.0, 4.0, 4.0, 4.0]
    assert words["metric"].unique().to_list() == ["two_keys.words"]


def test_damaged_zstandard_member_is_one_line(logs, tmp_path):
    src = logs / "zstd" / "arith.eval"
    data = bytearray(src.read_bytes())
    with zipfile.ZipFile(src) as z:
        info = next(i for i in z.infolist() if i.filename.startswith("samples/"))
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    for k in range(start + 8, start + 40):  # inside the compressed frame
        data[k] ^= 0xFF
    bad = tmp_path / "bad.eval"
    bad.write_bytes(bytes(data))
    with pytest.raises(IngestError) as err:
        read_inspect(bad)
    msg = str(err.value)
    assert msg.startswith(f"{bad}: the .eval archive is damaged (member {info.filename!r}")
    assert "\n" not in msg


def test_metric_flag_picks_the_inspect_scorer_key(logs, tmp_path, capsys):
    from evalstats.cli import main

    out = tmp_path / "obs.csv"
    path = logs / "dict" / "dictscore.eval"
    argv = ["ingest", str(path), "--metric", "two_keys.words", "--level", "observations"]
    assert main([*argv, "--out", str(out)]) == 0
    df = pl.read_csv(out)
    assert df["metric"].unique().to_list() == ["two_keys.words"]
    assert df["score"].to_list() == [4.0, 4.0, 4.0, 4.0]


def test_serving_settings_are_not_prompts_and_the_same_configuration_is_runs(logs):
    """Five logs of one task written by inspect_ai (issue 26): task arguments mix a prompt
    (``template``) with serving settings (``agent_url``, ``timeout``); one log runs another
    solver plan; one repeats the first configuration."""
    from evalstats.design import design_and_table

    obs, report = read_inspect(logs / "design")
    design, table = design_and_table(obs, ingest=report)
    assert report.rows_read == report.rows_kept == 5 * 4 * 2
    assert set(design.prompt_factors) >= {"template", "solver"}
    for setting in ("agent_url", "timeout"):
        assert design.role(setting) in ("setting", "metadata"), setting
        assert setting not in design.prompt_factors
    solver = next(c for c in design.columns if c.column == "solver")
    assert solver.source == "loader" and "differ in their solver plan" in solver.evidence
    df = table.collect()
    # the repeated configuration: two logs x two epochs numbered as runs 0-3 of one variant
    plain = df.filter(
        (pl.col("template") == "plain")
        & (pl.col("agent_url") == "http://a:8000")
        & (pl.col("solver") == "generate")
    )
    assert sorted(plain["run"].unique()) == [0, 1, 2, 3]
    assert plain["variant"].n_unique() == 1
    assert any("read as repeated runs" in n for n in report.notes)
    # prompt sensitivity is over template x solver at each serving setting, never over URLs
    from evalstats.moments import prompt_spread

    spread = prompt_spread(table, variant_factors=list(design.prompt_factors))
    assert "agent_url" in spread.columns
    at_a = spread.filter(pl.col("agent_url") == "http://a:8000")
    assert at_a["n_variants"].to_list() == [3]  # plain, cot template, cot solver


def test_a_suffixed_task_over_the_same_samples_is_a_prompt_variant(logs):
    """Issue 40: Inspect names a task run under a system prompt ``arith_guided``; it scores
    ``arith``'s samples with the same inputs, so it is a prompt variant of ``arith`` (a task
    factor), not another dataset. ``arith_hard`` shares the prefix, not the samples: a dataset."""
    from evalstats.design import infer_design

    obs, report = read(logs / "guided")
    df = obs.collect()
    assert sorted(df["dataset"].unique()) == ["arith", "arith_hard"]
    arith = df.filter(pl.col("dataset") == "arith")
    assert sorted(arith["task"].unique()) == ["arith", "arith_guided"]
    assert arith["variant"].n_unique() == 2 and arith["item"].n_unique() == 4
    note = next(n for n in report.notes if "arith_guided" in n)
    assert "same 4 samples" in note and "system_message+generate" in note
    design = infer_design(obs, ingest=report)
    assert design.role("task") == "prompt"
    assert "arith_hard" not in note
