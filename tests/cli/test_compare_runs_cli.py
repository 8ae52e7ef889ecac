"""`evalstats compare A B`: the A/B of two runs from the command line (issue 29, part 4)."""

from __future__ import annotations

import json
import shutil

import pytest

from evalstats.cli import main
from tests.conftest import FIXTURES

TOY = FIXTURES / "dumps" / "lm_eval" / "producer" / "output" / "toy__dummy-lm"
GPQA = "real-logs-2/lm-eval/allenlee-37+KT-lm-evaluation-harness__gpqa_2024-11-21/output/gpt-4o"


@pytest.fixture
def two_lm_eval_runs(tmp_path):
    """Two output folders of one model, as lm-eval wrote them (its DummyLM, two full runs)."""
    folders = []
    for name, stamp in (
        ("before", "2026-11-23T05-09-51.715024"),
        ("after", "2026-11-23T05-09-53.385334"),
    ):
        folder = tmp_path / name / "toy__dummy-lm"
        folder.mkdir(parents=True)
        for f in TOY.glob(f"*{stamp}*"):
            shutil.copyfile(f, folder / f.name)
        folders.append(str(tmp_path / name))
    return folders


def rows(capsys, *argv) -> list[dict]:
    capsys.readouterr()
    assert main([*argv, "--json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)["rows"]


def test_two_lm_eval_folders_of_one_model_give_a_paired_verdict(two_lm_eval_runs, capsys):
    before, after = two_lm_eval_runs
    out = rows(capsys, "compare", before, after)
    assert {r["model_a"] for r in out} == {r["model_b"] for r in out} == {"toy/dummy-lm"}
    assert {(r["label_a"], r["label_b"]) for r in out} == {("before", "after")}
    mc = next(r for r in out if r["dataset"] == "toy_mc")
    assert mc["n"] == 8 and mc["n_unpaired"] == 0
    assert mc["verdict"].startswith("after - before on toy_mc")
    named = rows(capsys, "compare", before, after, "--label", "baseline,new", "--margin", "0.1")
    assert named[0]["label_a"] == "baseline" and named[0]["margin"] == 0.1
    assert all(r["noninferior"] is not None and r["equivalent"] is not None for r in named)


def test_real_gpqa_runs_read_in_place(shared_data, capsys):
    """Two runs of gpt-4o on GPQA (lm-eval logs from a public repository): files globbed."""
    folder = shared_data / GPQA
    a, b = str(folder / "*17-26-18*"), str(folder / "*17-29-48*")
    out = rows(capsys, "compare", a, b, "--on-invalid", "skip", "--margin", "0.05")
    assert [r["dataset"] for r in out] == [
        "leaderboard_gpqa_diamond",
        "leaderboard_gpqa_extended",
        "leaderboard_gpqa_main",
    ]
    assert all(r["model_a"] == r["model_b"] == "gpt-4o" for r in out)
    assert all(r["method"] == "mcnemar" and r["margin_method"] == "score" for r in out)
    assert all(r["verdict"].startswith("b - a on leaderboard_gpqa") for r in out)


def test_options_of_one_mode_are_refused_in_the_other(two_lm_eval_runs, capsys):
    before, after = two_lm_eval_runs
    assert main(["compare", before, "--margin", "0.01"]) == 2
    assert "`--margin` compares two runs: give two paths" in capsys.readouterr().err
    assert main(["compare", before, after, "--correction", "bonferroni"]) == 2
    err = capsys.readouterr().err
    assert "`--correction` compares the models of one dump" in err and "Traceback" not in err
    with pytest.raises(SystemExit) as usage:  # argparse: a usage error, status 2
        main(["compare", before, after, "--label", "x"])
    assert usage.value.code == 2
    assert "expected two different names" in capsys.readouterr().err
