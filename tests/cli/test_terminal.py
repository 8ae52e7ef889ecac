"""Readable output on a terminal, CSV in a pipe, --json and --debug everywhere (issue 29, part 5).

The terminal path is tested with a pseudo-terminal: the command runs in a subprocess whose
stdout is a pty, as when a person types it.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys

import polars as pl
import pytest

from evalstats.cli import build_parser, main
from evalstats.errors import IngestError
from evalstats.simulate import observations

pty = pytest.importorskip("pty")  # POSIX only


@pytest.fixture(scope="module")
def dump(tmp_path_factory):
    obs = observations(n_models=3, n_items=40, n_variants=4, n_runs=2, seed=0)
    # a model name carrying a terminal escape sequence (red text) from someone else's file
    obs = obs.with_columns(
        pl.when(pl.col("model") == "m2")
        .then(pl.lit("evil\x1b[31mred"))
        .otherwise(pl.col("model"))
        .alias("model")
    )
    path = tmp_path_factory.mktemp("terminal") / "obs.parquet"
    obs.write_parquet(path)
    return str(path)


def on_pty(*argv: str) -> tuple[str, str, int]:
    """``evalstats ARGV`` with stdout on a pseudo-terminal: (stdout, stderr, status)."""
    master, slave = pty.openpty()
    env = {**os.environ, "COLUMNS": "150"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalstats", *argv],
        stdout=slave,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=env,
    )
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 1 << 16)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    err = proc.stderr.read().decode()
    proc.stderr.close()
    proc.wait(timeout=300)
    os.close(master)
    return out.decode().replace("\r\n", "\n"), err, proc.returncode


def in_pipe(*argv: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "evalstats", *argv], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize(
    ("command", "columns", "verdict"),
    [
        ("intervals", ["model", "n", "mean", "ci_low", "ci_high"], "highest mean:"),
        ("compare", ["model_a", "model_b", "difference", "pvalue_corrected"], "pairs differ"),
        ("moments", ["model", "n_variants", "spread", "pss"], "prompt spread"),
        ("stability", ["model", "n_runs", "tar_a", "tar_r"], "TARa from"),
    ],
)
def test_a_terminal_gets_a_short_table_and_a_verdict_a_pipe_gets_csv(
    dump, command, columns, verdict
):
    out, err, status = on_pty(command, dump)
    assert status == 0, err
    lines = out.strip().splitlines()
    header = lines[0].split()
    assert all(c in header for c in columns) and "," not in lines[0]
    assert "evalstats: error" not in err
    assert verdict in lines[-1]
    assert "\x1b" not in out and "evil\\x1b[31mred" in out  # the escape shown, never sent
    piped = in_pipe(command, dump)  # unchanged: every column, as CSV
    csv = pl.read_csv(io.StringIO(piped))
    assert set(columns) <= set(csv.columns) and csv.width > len(header)
    capture = io.StringIO()
    sys_stdout, sys.stdout = sys.stdout, capture
    try:
        assert main([command, dump]) == 0
    finally:
        sys.stdout = sys_stdout
    assert capture.getvalue() == piped


def test_a_terminal_table_says_what_it_left_out(dump):
    out, _, _ = on_pty("compare", dump)
    assert "of 38 columns: --out FILE.csv, --json or a pipe gives them all" in out


def test_two_runs_on_a_terminal_print_the_verdict_sentence(tmp_path):
    a = observations(n_models=1, n_items=200, n_variants=1, model_accuracy=[0.7], seed=0)
    b = observations(n_models=1, n_items=200, n_variants=1, model_accuracy=[0.8], seed=0)
    a.write_parquet(tmp_path / "before.parquet")
    b.write_parquet(tmp_path / "after.parquet")
    out, err, status = on_pty(
        "compare",
        str(tmp_path / "before.parquet"),
        str(tmp_path / "after.parquet"),
        "--label",
        "baseline,new",
        "--margin",
        "0.02",
    )
    assert status == 0, err
    assert out.strip().splitlines()[-1].startswith("new - baseline on d0, score: +0.085")
    assert "new is better" in out and "at margin 0.02" in out


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_every_command_takes_json_and_debug_after_the_command():
    for name, command in _subcommands().items():
        flags = {o for a in command._actions for o in a.option_strings}
        assert {"--json", "--debug"} <= flags, name


def test_debug_anywhere_shows_the_traceback(tmp_path, capsys):
    missing = str(tmp_path / "missing.csv")
    assert main(["intervals", missing]) == 2
    assert "evalstats: error:" in capsys.readouterr().err
    for argv in (["--debug", "intervals", missing], ["intervals", missing, "--debug"]):
        with pytest.raises(IngestError, match="no such file"):
            main(argv)


def test_report_json_gives_the_paths_and_headlines(dump, tmp_path, capsys):
    out = tmp_path / "audit"
    skip = "nstar,converge,noise,attribution,anova,normality,correlation,ranks"
    assert main(["report", dump, "--out", str(out), "--skip", skip, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["command"] == "report" and doc["paths"]["html"] == str(out / "report.html")
    assert (out / "report.html").exists() and (out / "results.json").exists()
    keys = [h["analysis"] for h in doc["headlines"]]
    assert "intervals" in keys and all(h["reading"] for h in doc["headlines"])
    assert doc["design"].startswith("3 models; 1 dataset; 40 items per group")
    assert {"analysis", "reason"} <= set(doc["skipped"][0])


def test_plural_forms_are_right(tmp_path, capsys):
    one = observations(n_models=1, n_items=1, n_variants=1, seed=0)
    path = tmp_path / "one.csv"
    one.select("model", "dataset", "item", "score").write_csv(path)
    assert main(["design", str(path)]) == 0
    out, err = capsys.readouterr()
    assert out.startswith(
        "design: 1 model; 1 dataset; 1 item per group; 1 prompt variant; 1 run each"
    )
    assert "1 item, 1 variant x 1 run, single" in out
    assert "ingest (table): 1 file, 1 row read, 1 kept" in err


def test_demo_json_gives_the_paths_and_headlines(tmp_path, capsys):
    from evalstats.report import ANALYSES

    skip = ",".join(a.key for a in ANALYSES if a.key not in ("moments", "intervals"))
    out = tmp_path / "demo"
    argv = ["demo", "--out", str(out), "--json", "--skip", skip, "--figure-format", "png"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert doc["command"] == "demo" and doc["paths"]["results"] == str(out / "results.json")
    assert [h["analysis"] for h in doc["headlines"]] == ["moments", "intervals"]
    assert doc["design"].startswith("3 models; 2 datasets")
    assert captured.err == ""  # --json implies --quiet
