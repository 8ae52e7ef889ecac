"""The command line: ingest and the error convention (one line, exit 2, no traceback)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from evalstats.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_ingest_json_report_adds_up(tmp_path, capsys):
    p = tmp_path / "d.csv"
    p.write_text("model,item,score\nA,1,1\nA,1,1\nA,2,x\nA,3,0\n")
    rc = main(["ingest", str(p), "--on-invalid", "skip", "--json"])
    out = capsys.readouterr()
    assert rc == 0
    doc = json.loads(out.out)
    rep = doc["report"]
    assert rep["rows_read"] == 4 and rep["rows_kept"] == 2
    assert rep["set_aside"] == {"duplicate": 1, "unparseable_score": 1}
    assert rep["rows_read"] == rep["rows_kept"] + sum(rep["set_aside"].values())


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".jsonl"])
def test_ingest_writes_units_and_observations(tmp_path, capsys, suffix):
    p = tmp_path / "d.csv"
    p.write_text("model,item,prompt,score\nA,1,p,1\nA,2,p,0\nA,1,q,1\nA,2,q,1\n")
    out = tmp_path / f"units{suffix}"
    assert main(["ingest", str(p), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "4 rows read, 4 kept" in err and "wrote 2 units rows" in err
    if suffix == ".parquet":
        units = pl.read_parquet(out)
    elif suffix == ".csv":
        units = pl.read_csv(out)
    else:
        units = pl.read_ndjson(out)
    assert units.select("variant", "score", "n_items").rows() == [("p", 0.5, 2), ("q", 1.0, 2)]
    obs_out = tmp_path / f"obs{suffix}"
    assert main(["ingest", str(p), "--level", "observations", "--out", str(obs_out)]) == 0


BAD = [
    (["ingest", "{tmp}/missing.csv"], r"missing\.csv: no such file or folder"),
    (
        ["ingest", "{tmp}/bad.csv"],
        r"bad\.csv, row 2, column 'score': expected a number, got 'oops'",
    ),
    (["ingest", "{tmp}/bad.csv", "--columns", "nosuch=item"], r"`--columns` maps 'nosuch'"),
    (["ingest", "{tmp}/empty.csv"], r"empty\.csv: the file is empty"),
    (
        ["ingest", "{tmp}/bad.csv", "--out", "{tmp}/x.xlsx", "--on-invalid", "skip"],
        r"`--out` must end in",
    ),
]


@pytest.mark.parametrize("argv,pattern", BAD)
def test_user_errors_exit_2_with_one_line_and_no_traceback(tmp_path, capsys, argv, pattern):
    (tmp_path / "bad.csv").write_text("model,item,score\nA,1,1\nA,2,oops\n")
    (tmp_path / "empty.csv").write_text("")
    rc = main([a.format(tmp=tmp_path) for a in argv])
    err = capsys.readouterr().err
    assert rc == 2
    lines = [ln for ln in err.strip().splitlines() if ln.startswith("evalstats: error:")]
    assert len(lines) == 1 and re.search(pattern, lines[0])
    assert "Traceback" not in err


def test_usage_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["ingest", "x.csv", "--format", "excel"])
    assert exc.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_debug_reraises(tmp_path):
    from evalstats.errors import IngestError

    with pytest.raises(IngestError):
        main(["--debug", "ingest", str(tmp_path / "missing.csv")])


def test_console_script_runs_as_a_module(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "evalstats.cli", "ingest", str(tmp_path / "nope.csv")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("evalstats: error:") and "Traceback" not in proc.stderr


def test_import_evalstats_does_not_import_matplotlib():
    code = "import sys, evalstats, evalstats.io; print('matplotlib' in sys.modules, 'seaborn' in sys.modules, 'xgboost' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == ["False", "False", "False"]


def test_ci_runs_the_readme_commands():
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)```", readme, re.S)
    assert "evalstats demo" in blocks[0] and "pytest" in blocks[1]
    ci = (ROOT / ".ci" / "run").read_text()
    assert "README.md" in ci and "exit 1" in ci and '"$rc" -eq 5' in ci
