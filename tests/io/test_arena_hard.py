"""Arena-Hard pairwise judgment files (issue 43, item 1).

Files are written here in the documented schema of arena-hard-auto's ``gen_judgment.py``
(``data/<bench>/model_judgment/<judge>/<model>.jsonl``: uid, category, judge, model, baseline,
games[2] with a verdict label or null). The producer's leaderboard score is recomputed in the
test the way its ``show_result.py`` does (``label_to_score``, a strong verdict counted three
times, the first game read from the baseline's side), independently of the loader.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from evalstats.cli import main
from evalstats.errors import IngestError
from evalstats.io import detect_format, read
from evalstats.io.arena_hard import read_arena_hard

LABEL_TO_SCORE = {
    "A>B": [1],
    "A>>B": [1] * 3,
    "A=B": [0.5],
    "A<<B": [0] * 3,
    "A<B": [0],
    "B>A": [0],
    "B>>A": [0] * 3,
    "B=A": [0.5],
    "B<<A": [1] * 3,
    "B<A": [1],
}

VERDICTS = {
    "model-x": [("B>A", "A>B"), ("A>>B", "B>A"), ("A=B", "A=B"), ("B>>A", "A>>B")],
    "model-y": [("A>B", "B>A"), ("A>B", "A=B"), (None, "A>B"), ("B>A", "B>A")],
}


def _write(root: Path) -> Path:
    folder = root / "data" / "arena-hard-v0.1" / "model_judgment" / "gpt-4-1106-preview"
    folder.mkdir(parents=True)
    for model, games in VERDICTS.items():
        lines = [
            {
                "uid": f"q{i}",
                "category": "arena-hard-v0.1",
                "judge": "gpt-4-1106-preview",
                "model": model,
                "baseline": "gpt-4-0314",
                "games": [
                    {"user_prompt": "...", "judgment": "...", "score": g0},
                    {"user_prompt": "...", "judgment": "...", "score": g1},
                ],
            }
            for i, (g0, g1) in enumerate(games)
        ]
        (folder / f"{model}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return root / "data"


def _producer_score(model: str) -> float:
    """show_result.py: drop questions with a null game; battles = game 1 + (1 - game 0)."""
    battles = []
    for g0, g1 in VERDICTS[model]:
        if g0 is None or g1 is None:
            continue
        battles += LABEL_TO_SCORE[g1] + [1 - s for s in LABEL_TO_SCORE[g0]]
    return sum(battles) / len(battles)


def test_games_are_read_from_the_models_side(tmp_path):
    data = _write(tmp_path)
    assert detect_format(data) == "arena-hard"
    obs, report = read(data)
    df = obs.collect()
    assert report.format == "arena-hard"
    assert report.rows_read == 16 and dict(report.set_aside) == {"unparsed_judgment": 1}
    assert df["dataset"].unique().to_list() == ["arena-hard-v0.1"]
    x = df.filter(pl.col("model") == "model-x").sort("item", "position")
    # q0: game 0 "B>A" (model is B: win), game 1 "A>B" (model is A: win)
    assert x.filter(pl.col("item") == "q0")["score"].to_list() == [1.0, 1.0]
    # q1: game 0 "A>>B" (baseline much better: loss, strong), game 1 "B>A" (loss)
    q1 = x.filter(pl.col("item") == "q1").sort("position")
    assert q1.select("position", "score", "strength").rows() == [
        ("model_a", 0.0, "weak"),
        ("model_b", 0.0, "strong"),
    ]
    assert [m.describe() for m in report.metrics] == ["win_rate: range [0, 1], higher is better"]


@pytest.mark.parametrize("model", ["model-x", "model-y"])
def test_the_producers_weighted_score_is_in_the_notes(tmp_path, model):
    _, report = read(_write(tmp_path))
    expected = _producer_score(model)
    (note,) = [n for n in report.notes if n.startswith(f"{model}: the producer's")]
    got = float(note.rsplit(" ", 1)[1])
    assert got == pytest.approx(expected, abs=5e-7)  # the note prints 6 decimals


def test_unweighted_means_equal_the_games_read(tmp_path):
    obs, _ = read(_write(tmp_path))
    means = dict(obs.collect().group_by("model").agg(pl.col("score").mean()).iter_rows())
    assert means["model-x"] == pytest.approx((1 + 1 + 0 + 0 + 0.5 + 0.5 + 1 + 1) / 8)
    assert means["model-y"] == pytest.approx((0 + 0 + 0 + 0.5 + 1 + 1 + 0) / 7)


def test_a_line_that_is_not_a_judgment_names_file_and_row(tmp_path):
    f = tmp_path / "m.jsonl"
    good = {"uid": "q", "model": "m", "games": [{"score": "A>B"}, {"score": "A>B"}]}
    f.write_text(json.dumps(good) + "\n" + json.dumps({"uid": "r", "model": "m"}) + "\n")
    with pytest.raises(IngestError, match=r"m\.jsonl, row 2: expected an object with a 'games'"):
        read_arena_hard(f)
    _, report = read_arena_hard(f, on_invalid="skip")
    assert dict(report.set_aside) == {"invalid_json": 1} and report.rows_kept == 2


def test_cli_ingest(tmp_path, capsys):
    assert main(["ingest", str(_write(tmp_path))]) == 0
    assert "ingest (arena-hard): 2 files, 16 rows read, 15 kept" in capsys.readouterr().err


def test_the_loader_says_what_each_column_is(tmp_path):
    """The verdict varies within (model, item) cells, but it is the outcome, not a prompt."""
    _, report = read(_write(tmp_path))
    roles = {c.column: c.role for c in report.columns}
    assert roles["position"] == "prompt"
    assert roles["verdict"] == roles["strength"] == "outcome"
    assert roles["baseline"] == roles["judge"] == "metadata"
