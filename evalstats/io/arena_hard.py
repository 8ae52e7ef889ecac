"""Arena-Hard style pairwise judgment files: one JSON Lines file per model, two games per question.

arena-hard-auto's ``gen_judgment.py`` writes ``data/<bench>/model_judgment/<judge>/<model>.jsonl``,
one line per question: ``{"uid" (or "question_id"), "category", "judge", "model", "baseline",
"games": [game, game]}``. Each game is the judge's verdict on the model's answer against the
baseline's, as ``"score": "A>B"`` (``A>>B``, ``A=B``, ``B>A``, ``B>>A``, ...) or null when the
judge's verdict could not be parsed. In the first game the baseline is assistant A and the model
assistant B; in the second the order is swapped (a guard against position bias). See
``docs/formats/arena-hard.md``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from evalstats._column_rules import ColumnRule
from evalstats.errors import IngestError
from evalstats.io._files import expand_paths, skipped_note
from evalstats.io._pipeline import Check, OnInvalid, ScoreScale, finalize, validate_options
from evalstats.io._report import Ingest
from evalstats.schema import MetricInfo

__all__ = ["detect_arena_hard", "read_arena_hard"]

#: The verdict of a game, from assistant A's side (arena-hard-auto's ``label_to_score``).
_A_SCORE = {
    "A>B": 1.0,
    "A>>B": 1.0,
    "A=B": 0.5,
    "A<<B": 0.0,
    "A<B": 0.0,
    "B>A": 0.0,
    "B>>A": 0.0,
    "B=A": 0.5,
    "B<<A": 1.0,
    "B<A": 1.0,
}
_STRONG = {"A>>B", "A<<B", "B>>A", "B<<A"}

#: Weight of a strong verdict (``>>``) in the producer's leaderboard (``load_judgments(weight=3)``).
PRODUCER_WEIGHT = 3


def _first_record(f: Path) -> Any:
    try:
        with open(f, "rb") as fh:
            for raw in fh:
                if raw.strip():
                    return json.loads(raw)
    except (OSError, ValueError, RecursionError):
        return None
    return None


def detect_arena_hard(path: str | Path) -> bool:
    """Whether ``path`` is an Arena-Hard judgment file (or a folder holding them).

    Examples
    --------
    >>> detect_arena_hard("no/such/file.jsonl")
    False
    """
    p = Path(path)
    if p.is_dir():
        return any(detect_arena_hard(f) for f in sorted(p.rglob("*.jsonl"))[:20])
    if not (p.is_file() and p.name.lower().endswith(".jsonl")):
        return False
    rec = _first_record(p)
    games = rec.get("games") if isinstance(rec, dict) else None
    return (
        isinstance(games, list)
        and bool(games)
        and "model" in rec
        and all(g is None or (isinstance(g, dict) and "score" in g) for g in games)
    )


def read_arena_hard(
    path: str | Path | Sequence[str | Path],
    *,
    dataset: str | None = None,
    on_invalid: OnInvalid = "error",
    score_scale: ScoreScale = "auto",
) -> Ingest:
    r"""Read Arena-Hard pairwise judgments into the observation table.

    Parameters
    ----------
    path : str, Path or sequence of them
        A judgment file, a folder (every judgment file below it), a glob or a list.
    dataset : str, optional
        The dataset (default: the line's ``category``, else the name of the folder above
        ``model_judgment`` (``arena-hard-v0.1`` in ``data/arena-hard-v0.1/model_judgment/<judge>/``),
        else the file's folder).
    on_invalid, score_scale
        As for :func:`evalstats.io.table.read_table`.

    Returns
    -------
    Ingest
        One row per game: ``model``, ``dataset``, ``item`` (``uid`` or ``question_id``),
        ``score`` (the model's outcome against the baseline: 1 a win, 0.5 a tie, 0 a loss;
        metric ``win_rate`` on [0, 1]), the prompt factor ``position`` (``model_b`` in the
        first game, ``model_a`` in the swapped one), and ``baseline``, ``judge``, ``verdict``
        (the raw label) and ``strength`` (``strong`` for ``>>``) beside it.

    Notes
    -----
    A game whose verdict is null or not a known label is set aside as ``unparsed_judgment``
    (counted); the producer drops the whole question then (``null_indices``), evalstats keeps
    the other game. The producer's leaderboard counts a strong verdict (``A>>B``) as three
    battles; evalstats reads each game once, and the report's notes give, per model, the
    producer's score by its own rule (questions with a null verdict dropped, strong verdicts
    counted three times), so the two can be compared. Checked against:
    files written from the documented schema (``tests/io/test_arena_hard.py``).

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> line = {"uid": "q1", "model": "m", "baseline": "gpt-4-0314", "judge": "j",
    ...         "games": [{"score": "B>A"}, {"score": "A=B"}]}
    >>> _ = (d / "m.jsonl").write_text(json.dumps(line) + "\n")
    >>> obs, report = read_arena_hard(d, dataset="arena")
    >>> obs.select("item", "position", "score").collect().rows()
    [('q1', 'model_b', 1.0), ('q1', 'model_a', 0.5)]
    """
    validate_options(on_invalid, score_scale)
    hidden: list[Path] = []
    files = expand_paths(path, suffixes=(".jsonl",), skipped=hidden)
    files = [f for f in files if f.name.lower().endswith(".jsonl")]
    if not files:
        raise IngestError("no judgment .jsonl files.", path=str(path))
    parts = []
    notes: list[str] = []
    extra = 0
    weighted: dict[str, list[float]] = {}
    for f in files:
        rows: dict[str, list] = {
            k: []
            for k in (
                "model",
                "dataset",
                "item",
                "score",
                "position",
                "baseline",
                "judge",
                "verdict",
                "strength",
                "__unparsed",
                "__bad_line",
            )
        }
        try:
            text = f.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise IngestError(f"cannot read the file ({exc}).", path=str(f)) from None
        for n, line in enumerate((ln for ln in text.split("\n") if ln.strip()), start=1):
            try:
                rec = json.loads(line)
            except (ValueError, RecursionError) as exc:
                if on_invalid == "error":
                    raise IngestError(
                        f"the line is not valid JSON ({exc}). To set such lines aside and "
                        "count them, pass on_invalid='skip' (CLI: --on-invalid skip).",
                        path=str(f),
                        row=n,
                    ) from None
                rec = None
            games = rec.get("games") if isinstance(rec, dict) else None
            if not isinstance(games, list):
                if on_invalid == "error":
                    raise IngestError(
                        "expected an object with a 'games' list (an Arena-Hard judgment).",
                        path=str(f),
                        row=n,
                    )
                _append_bad(rows)
                continue
            model = rec.get("model")
            item = rec.get("uid", rec.get("question_id"))
            ds = dataset or rec.get("category") or _bench_of(f) or f.parent.name
            labels = [g.get("score") if isinstance(g, dict) else None for g in games[:2]]
            whole = len(labels) == 2 and all(x in _A_SCORE for x in labels)  # producer's rule
            for k, game in enumerate(games[:2]):
                label = game.get("score") if isinstance(game, dict) else None
                a = _A_SCORE.get(label) if isinstance(label, str) else None
                # game 0: the baseline is A, the model B; game 1: the model is A
                mine = None if a is None else (a if k == 1 else 1.0 - a)
                rows["model"].append(None if model is None else str(model))
                rows["dataset"].append(None if ds is None else str(ds))
                rows["item"].append(None if item is None else str(item))
                rows["score"].append(mine)
                rows["position"].append("model_a" if k == 1 else "model_b")
                rows["baseline"].append(_str(rec.get("baseline")))
                rows["judge"].append(_str(rec.get("judge")))
                rows["verdict"].append(_str(label))
                rows["strength"].append(
                    None if a is None else ("strong" if label in _STRONG else "weak")
                )
                rows["__unparsed"].append(a is None)
                rows["__bad_line"].append(False)
                if whole and mine is not None and model is not None:
                    w = PRODUCER_WEIGHT if label in _STRONG else 1
                    weighted.setdefault(str(model), []).extend([mine] * w)
            extra += max(len(games) - 2, 0)
        frame = pl.DataFrame(
            rows,
            schema={
                "model": pl.String,
                "dataset": pl.String,
                "item": pl.String,
                "score": pl.Float64,
                "position": pl.String,
                "baseline": pl.String,
                "judge": pl.String,
                "verdict": pl.String,
                "strength": pl.String,
                "__unparsed": pl.Boolean,
                "__bad_line": pl.Boolean,
            },
        ).with_columns(MetricInfo("win_rate", 0.0, 1.0).columns())
        parts.append((str(f), frame.lazy()))
    for model, scores in sorted(weighted.items()):
        notes.append(
            f"{model}: the producer's leaderboard score (a strong verdict counted "
            f"{PRODUCER_WEIGHT} times, show_result.py) of these games is "
            f"{sum(scores) / len(scores):.6f}"
        )
    if extra:
        notes.append(f"{extra} game(s) beyond the two per question were not read")
    note = skipped_note(hidden)
    if note:
        notes.append(note)
    checks = [
        Check(
            "unparsed_judgment",
            pl.col("__unparsed") & ~pl.col("__bad_line"),
            column="score",
            quirk=True,
            message="the judge's verdict is null or not a known label (A>B, A=B, B>>A, ...)",
        ),
        Check("invalid_json", pl.col("__bad_line"), message="the line is not a judgment"),
    ]
    rules = [
        ColumnRule(
            "position",
            "prompt",
            "Arena-Hard judges every question twice, the model's answer shown second (model_b) "
            "and then first (model_a): the order the judge reads the answers in",
        ),
        ColumnRule(
            "verdict",
            "outcome",
            "the judge's raw label (A>B, B>>A, ...) that the score is read from",
        ),
        ColumnRule(
            "strength",
            "outcome",
            "whether the verdict is strong (>>), read from the same label as the score",
        ),
        ColumnRule("baseline", "metadata", "the answer every game compares against"),
        ColumnRule("judge", "metadata", "the judging model, one per file"),
    ]
    return finalize(
        parts,
        format="arena-hard",
        column_rules=rules,
        on_invalid=on_invalid,
        score_scale=score_scale,
        checks=checks,
        factors=["position"],
        source_names={"score": "games[].score", "item": "uid"},
        notes=[
            "score = the model's outcome against the baseline in each game (win 1, tie 0.5, "
            "loss 0); position: the model as assistant B (first game) or A (swapped game)",
            *notes,
        ],
    )


def _str(v: Any) -> str | None:
    return None if v is None else str(v)


def _bench_of(f: Path) -> str | None:
    parts = f.parts
    if "model_judgment" in parts:
        i = len(parts) - 1 - parts[::-1].index("model_judgment")
        return parts[i - 1] if i >= 1 else None
    return None


def _append_bad(rows: dict[str, list]) -> None:
    for k in rows:
        rows[k].append(None)
    rows["__unparsed"][-1] = True
    rows["__bad_line"][-1] = True
