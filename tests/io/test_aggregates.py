"""Files of aggregates only are recognised and said to be so (issue 43, item 1).

The files are written in the producers' documented layouts: LightEval's ``results_<date>.json``
(``config_general``, ``results``, ``versions``, ``config_tasks``, ``summary_tasks``,
``summary_general``) and lm-eval's results file without samples.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from evalstats.errors import IngestError
from evalstats.io import read

LM_EVAL_API = Path(__file__).resolve().parents[2] / "fixtures/dumps/lm_eval_api/producer/output"

LIGHTEVAL = {
    "config_general": {"model_name": "HuggingFaceTB/SmolLM2-135M", "lighteval_sha": "x"},
    "results": {
        "leaderboard|arc:challenge|25": {"acc": 0.25, "acc_stderr": 0.01, "acc_norm": 0.3},
        "all": {"acc": 0.25, "acc_stderr": 0.01},
    },
    "versions": {},
    "config_tasks": {},
    "summary_tasks": {},
    "summary_general": {},
}


def test_a_lighteval_results_file_in_a_folder_is_said_to_be_aggregates(tmp_path):
    (tmp_path / "a.csv").write_text("model,item,score\nm,1,1\nm,2,0\n")
    (tmp_path / "results_2025-01-01T00-00-00.json").write_text(json.dumps(LIGHTEVAL))
    _, report = read(tmp_path)
    (aside,) = report.files_set_aside
    assert aside.reason.startswith("LightEval aggregate results")
    assert "leaderboard|arc:challenge|25 acc=0.25" in aside.reason
    assert "SmolLM2-135M" in aside.reason and "--save-details" in aside.hint


def test_lm_eval_aggregates_without_samples_alone_are_one_line(tmp_path):
    doc = json.loads((LM_EVAL_API / "run0.json").read_text())
    doc.pop("samples")
    f = tmp_path / "results.json"
    f.write_text(json.dumps(doc))
    with pytest.raises(IngestError, match=r"lm-eval aggregate results.*toy_mc acc,none=0\.625"):
        read(f)


def test_lm_eval_aggregates_beside_api_files_are_set_aside_with_their_numbers(tmp_path):
    shutil.copy(LM_EVAL_API / "run2.json", tmp_path)
    doc = json.loads((LM_EVAL_API / "run0.json").read_text())
    doc.pop("samples")
    (tmp_path / "summary.json").write_text(json.dumps(doc))
    _, report = read(tmp_path)
    (aside,) = report.files_set_aside
    assert "lm-eval aggregate results" in aside.reason and "--log_samples" in aside.hint
