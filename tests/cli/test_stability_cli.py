"""``evalstats stability``: JSON rows, Table 2, views, and the error convention."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from evalstats.cli import main
from evalstats.stability import STABILITY_COLUMNS

ROOT = Path(__file__).resolve().parents[2]
OLD = ROOT / "fixtures/dumps/llm_stability/older_layout"


def test_json_rows_have_the_documented_columns(llm_stability_runs, capsys):
    """The authors' strict_json_schema runs (../shared/data/llm-stability)."""
    assert main(["stability", str(llm_stability_runs), "--json"]) == 0
    out = capsys.readouterr()
    doc = json.loads(out.out)
    assert doc["command"] == "stability" and doc["params"] == {}
    assert len(doc["rows"]) == 7
    row = next(r for r in doc["rows"] if r["dataset"] == "navigate")
    assert list(row) == ["model", "dataset", "metric", "variant", *STABILITY_COLUMNS]
    assert row["dataset"] == "navigate" and row["tar_r"] == 0.6 and row["n_items"] == 250
    assert row["acc_per_run"] == [0.744, 0.748, 0.736, 0.732, 0.764]
    assert out.err == ""  # --json keeps the report off stderr too


def test_table_markdown_and_latex(llm_stability_runs, capsys):
    assert main(["stability", str(llm_stability_runs), "--table", "markdown"]) == 0
    out = capsys.readouterr()
    assert "| ruin_names | 89.6 (90.8) 91.2; 91.6, 91.6 |" in out.out
    assert "7035 rows read" in out.err
    assert main(["stability", str(llm_stability_runs), "--table", "latex"]) == 0
    assert r"college\_mathematics & 43.0 (45.0) 52.0; 47.0, 45.0 \\" in capsys.readouterr().out


def test_csv_by_normalize_and_out(tmp_path, capsys):
    out = tmp_path / "s.parquet"
    args = ["stability", str(OLD), "--by", "model,dataset", "--normalize", "lower"]
    assert main([*args, "--out", str(out)]) == 0
    frame = pl.read_parquet(out)
    assert frame.columns == ["model", "dataset", *STABILITY_COLUMNS]
    assert main(args) == 0
    csv = capsys.readouterr().out
    assert csv.splitlines()[0].startswith("model,dataset,n_runs,n_items,acc_per_run")
    assert main([*args, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["params"] == {"by": ["model", "dataset"], "normalize": "lower"}


def test_curve_and_items_views(capsys):
    assert main(["stability", str(OLD), "--view", "curve", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["command"] == "stability --view curve"
    assert [r["k"] for r in doc["rows"]] == [2, 3, 2, 3]
    assert main(["stability", str(OLD), "--view", "items", "--top", "1", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["item"] for r in doc["rows"]] == ["1", "3"]
    assert doc["params"] == {"top": 1}


def _mismatched(tmp_path: Path) -> Path:
    for run in (0, 1):
        rows = ["gt,raw_response", "Yes,Yes", "No,No"] + (["Yes,No"] if run == 0 else [])
        (tmp_path / f"m_navigate_{run}.csv").write_text("\n".join(rows) + "\n")
    return tmp_path


def test_mismatch_error_and_intersect(tmp_path, capsys):
    path = _mismatched(tmp_path)
    assert main(["stability", str(path)]) == 2
    err = capsys.readouterr().err
    assert "evalstats: error: the runs of model='m', dataset='navigate'" in err
    assert "run 1 has 2 of 3 items" in err and "Traceback" not in err
    assert "--on-mismatch intersect" in err and "biases TAR upward" in err
    assert main(["stability", str(path), "--on-mismatch", "intersect", "--json"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["rows"][0]["n_items"] == 2
    assert "evalstats: warning: 1 configuration(s) have runs over different items" in out.err
    assert "biases TAR upward" in out.err
    assert main(["stability", str(path), "--on-mismatch", "keep"]) == 2  # TAR needs the items
    assert "(CLI: --on-mismatch intersect)" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["moments", "intervals", "normality", "compare"])
def test_every_analysis_applies_the_same_item_set_rule(tmp_path, capsys, command):
    # the analysis commands stop by default; the report proceeds by its stated rule (auto:
    # tests/report/test_report_design.py)
    (tmp_path / "runs").mkdir()
    path = _mismatched(tmp_path / "runs")
    assert main([command, str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("evalstats: error: the runs of model='m', dataset='navigate'")
    assert "--on-mismatch intersect" in err[-1]


def test_intervals_use_the_intersected_or_all_items(tmp_path, capsys):
    path = _mismatched(tmp_path)
    assert main(["intervals", str(path), "--on-mismatch", "intersect", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert rows[0]["mean"] == pytest.approx(1.0)  # runs 0 and 1 on items 0, 1: all correct
    assert main(["intervals", str(path), "--on-mismatch", "keep", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    # every item, each its mean over the runs that have it (over items, issue 15): 1, 1, 0
    assert rows[0]["mean"] == pytest.approx(2 / 3) and rows[0]["over"] == "items"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["stability", "{tmp}/nope"], "nope: no such file or folder"),
        (["stability", str(OLD), "--by", "model,prompt"], "`--by` names 'prompt'"),
        (["stability", str(OLD), "--view", "curve", "--table", "markdown"], "`--table` formats"),
        (["stability", str(OLD), "--table", "latex", "--json"], "either `--table` or `--json`"),
        (["stability", str(OLD), "--top", "3"], "`--top` applies to --view items only"),
        (
            ["stability", str(OLD), "--format", "llm-stability", "--columns", "a=item"],
            "`--columns`",
        ),
    ],
)
def test_user_errors_exit_2_with_one_line(tmp_path, capsys, argv, message):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("evalstats: error: ") and message in err[-1]
    assert not any("Traceback" in line for line in err)


def test_plot_writes_a_heatmap(llm_stability_runs, tmp_path, capsys):
    real = str(llm_stability_runs)
    out = tmp_path / "tar.png"
    assert main(["stability", real, "--plot", str(out), "--plot-value", "tar_a"]) == 0
    assert out.stat().st_size > 0
    assert f"wrote {out}" in capsys.readouterr().err
    assert main(["stability", real, "--view", "curve", "--plot", str(out)]) == 2
    assert "`--plot` draws the stability table" in capsys.readouterr().err


def test_ingest_detects_llm_stability(capsys):
    assert main(["ingest", str(OLD), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)["report"]
    assert rep["format"] == "llm-stability" and rep["rows_read"] == rep["rows_kept"] == 24
