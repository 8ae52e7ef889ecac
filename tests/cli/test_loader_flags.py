"""Every --format x every loader flag ends in exit 0 or one clean error line, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalstats.cli import main
from evalstats.io import FORMATS
from tests.conftest import needs_shared_data, shared

D = Path(__file__).resolve().parents[2] / "fixtures" / "dumps"

#: One real input of each format.
INPUTS = {
    "dove": D / "dove" / "lite",
    "llm-stability": D / "llm_stability" / "older_layout",
    "lm-eval": D / "lm_eval" / "output",
    "inspect": shared("inspect-logs"),
    "reliable-eval": D / "reliable_eval" / "results" / "gpqa_results.json",
    "state-of-what-art": shared("state-of-what-art", "paraphrases accuracies"),
    "openai-evals": shared("real-logs", "openai-evals"),
    "helm": D / "helm" / "benchmark_output" / "runs" / "evalstats-v1",
    "every-eval-ever": D / "every_eval_ever" / "converted",
    "lm-eval-api": D / "lm_eval_api" / "producer" / "output",
    "arena-hard": D / "new_formats" / "arena_hard",
    "lighteval": D / "new_formats" / "lighteval",
    "bfcl": D / "new_formats" / "bfcl",
    "json-records": D / "new_formats" / "json_records" / "array.json",
    "table": None,  # a CSV written by the test
}

#: Formats whose input is real public data read in place from ../shared/data.
SHARED = {"inspect", "state-of-what-art", "openai-evals"}


def _formats() -> list:
    return [pytest.param(f, marks=needs_shared_data) if f in SHARED else f for f in FORMATS]


FLAGS = [
    [],
    ["--columns", "nosuch=score"],
    ["--columns", "model=item"],
    ["--columns", "acc=score"],
    ["--columns", "garbage"],
    ["--score-scale", "percent"],
    ["--score-scale", "unit"],
    ["--on-invalid", "skip"],
    ["--metric", "acc"],
    ["--metric", "nosuch=acc"],
]


def test_every_format_has_an_input():
    assert set(INPUTS) == set(FORMATS)


def _input(fmt: str, tmp_path: Path) -> Path:
    if INPUTS[fmt] is not None:
        return INPUTS[fmt]
    f = tmp_path / "t.csv"
    f.write_text("model,item,score\nm,1,1\nm,2,0\n")
    return f


def _clean(code: int, err: str) -> None:
    assert "Traceback" not in err and code in (0, 2), err[-800:]
    if code == 2:
        last = err.strip().splitlines()[-1]
        assert last.startswith("evalstats: error: ") and len(last) < 1000


@pytest.mark.parametrize("flags", FLAGS, ids=lambda f: " ".join(f) or "none")
@pytest.mark.parametrize("fmt", _formats())
def test_format_by_flag_fails_cleanly(fmt, flags, tmp_path, capsys):
    path = _input(fmt, tmp_path)
    code = main(["ingest", str(path), "--format", fmt, "--level", "observations", *flags])
    _clean(code, capsys.readouterr().err)


@needs_shared_data
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_each_format_on_every_other_formats_input(fmt, tmp_path, capsys):
    for other in FORMATS:
        path = _input(other, tmp_path)
        code = main(["ingest", str(path), "--format", fmt, "--level", "observations"])
        _clean(code, capsys.readouterr().err)


@needs_shared_data
def test_state_of_what_art_columns_is_one_line(capsys):
    path = INPUTS["state-of-what-art"]
    assert main(["ingest", str(path), "--format", "state-of-what-art", "--columns", "a=b"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "evalstats: error: `columns` (--columns) is not an option of the state-of-what-art "
        "loader; its options: metadata, n_items, on_invalid, score_scale."
    ]
