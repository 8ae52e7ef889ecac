"""State of What Art (Mizrahi et al., TACL 2024): instruction paraphrases x models, unit level.

Layout of the authors' release (``SLAB-NLP/Multi-Prompt-LLM-Evaluation``)::

    paraphrases accuracies/<benchmark>/<task>.csv   paraphrase idx, <model>_acc, ...
    automatic paraphrases/<benchmark>/<task>.csv    prompt idx, method, correct, ... (metadata)

Each accuracy cell is one unit score: the accuracy of ``<model>`` on ``<task>`` under paraphrase
``paraphrase idx`` over 100 samples. Rows become ``model, dataset (= task), variant (=
paraphrase idx), run = 0, score, n_items``; the paraphrase metadata, when found, adds the factor
columns ``method`` (rephrase, meta_desc, meta_cot, default) and ``correct`` (manually validated;
the release's ``0?`` marks an uncertain validation and is read as null).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from evalstats._column_rules import ColumnRule
from evalstats.errors import IngestError
from evalstats.io._files import csv_header, expand_paths, polars_path, skipped_note
from evalstats.io._pipeline import OnInvalid, ScoreScale, finalize, read_error
from evalstats.io._report import Ingest
from evalstats.schema import MetricInfo

__all__ = ["detect_state_of_what_art", "read_state_of_what_art"]

ACC_FOLDER = "paraphrases accuracies"
META_FOLDER = "automatic paraphrases"
IDX_COLUMN = "paraphrase idx"
META_IDX = "prompt idx"
ACC_SUFFIX = "_acc"
SUFFIXES = (".csv",)


def _header(path: Path) -> list[str]:
    return [c.strip() for c in csv_header(path) or []]


def _model_columns(cols: list[str], path: Path) -> list[tuple[int, str]]:
    """(position, model) of every ``<model>_acc`` column; one model given twice is an error.

    ``a_acc`` twice, or ``a_acc`` and `` a_acc`` (the same model once spaces are stripped),
    would give the model two scores per paraphrase; which one is meant cannot be guessed.
    """
    seen: dict[str, int] = {}
    out = []
    for i, c in enumerate(cols):
        if i == 0 or not c.endswith(ACC_SUFFIX):
            continue
        model = c[: -len(ACC_SUFFIX)].strip()
        if model in seen:
            j = seen[model]
            raise IngestError(
                f"columns {j + 1} and {i + 1} ({cols[j]!r} and {c!r}) both give the accuracy "
                f"of model {model!r}; keep one of them.",
                path=str(path),
            )
        seen[model] = i
        out.append((i, model))
    return out


def _is_accuracy_file(path: Path) -> bool:
    if path.suffix.lower() != ".csv" or not path.is_file():
        return False
    cols = _header(path)
    return bool(cols) and cols[0] == IDX_COLUMN and any(c.endswith(ACC_SUFFIX) for c in cols[1:])


def detect_state_of_what_art(path: str | Path) -> bool:
    """Whether ``path`` is a State of What Art accuracy CSV, or a folder of them."""
    p = Path(path)
    if p.is_dir():
        if (p / ACC_FOLDER).is_dir():
            return True
        first = next(iter(sorted(p.rglob("*.csv"))), None)
        return first is not None and _is_accuracy_file(first)
    return _is_accuracy_file(p)


def _accuracy_files(
    path: str | Path | Sequence[str | Path], _hidden: list[Path] | None = None
) -> list[Path]:
    if (
        not isinstance(path, (list, tuple))
        and Path(path).is_dir()
        and (Path(path) / ACC_FOLDER).is_dir()
    ):
        path = Path(path) / ACC_FOLDER
    files = expand_paths(path, SUFFIXES, skipped=_hidden)
    return [f for f in files if META_FOLDER not in f.parts]


def _release_note(path: str | Path | Sequence[str | Path]) -> str | None:
    """What a release folder holds besides the accuracy tables and their metadata (not read)."""
    if isinstance(path, (list, tuple)) or not Path(path).is_dir():
        return None
    root = Path(path)
    if not (root / ACC_FOLDER).is_dir():
        return None
    other: dict[str, int] = {}
    for f in root.rglob("*"):
        rel = f.relative_to(root).parts
        if not f.is_file() or rel[0] in (ACC_FOLDER, META_FOLDER) or rel[-1].startswith("."):
            continue
        other[rel[0]] = other.get(rel[0], 0) + 1
    if not other:
        return None
    listed = ", ".join(f"{k}/ ({n} file{'s' if n != 1 else ''})" for k, n in sorted(other.items()))
    return (
        f"release folder: read {ACC_FOLDER}/ (with {META_FOLDER}/ as metadata); not needed and "
        f"not read: {listed}"
    )


def _metadata_file(acc: Path, metadata: str | Path | None) -> Path | None:
    if metadata is not None:
        m = Path(metadata)
        cand = m if m.is_file() else m / acc.name
        if not cand.is_file() and m.is_dir():
            hits = sorted(m.rglob(acc.name))
            cand = hits[0] if hits else cand
        return cand if cand.is_file() else None
    parts = acc.parts
    if ACC_FOLDER in parts:
        i = len(parts) - 1 - parts[::-1].index(ACC_FOLDER)
        cand = Path(*parts[:i], META_FOLDER, *parts[i + 1 :])
        if cand.is_file():
            return cand
    return None


def _read_metadata(path: Path) -> tuple[pl.DataFrame, int]:
    """(variant, method, correct) per paraphrase, and the number of uncertain ``0?`` marks."""
    try:
        meta = pl.read_csv(polars_path(path), infer_schema_length=0)
    except (pl.exceptions.PolarsError, pl.exceptions.PanicException, OSError) as exc:
        raise read_error(path, exc) from None
    for col in (META_IDX, "method", "correct"):
        if col not in meta.columns:
            raise IngestError(
                f"the paraphrase metadata has no column {col!r} (columns: {', '.join(meta.columns)}).",
                path=str(path),
            )
    raw = pl.col("correct").str.strip_chars()
    uncertain = int(
        meta.select((raw.is_not_null() & ~raw.is_in(["0", "1", "True", "False"])).sum()).item()
    )
    out = meta.select(
        pl.col(META_IDX).str.strip_chars().alias("variant"),
        pl.col("method"),
        pl.when(raw.is_in(["1", "True"]))
        .then(True)
        .when(raw.is_in(["0", "False"]))
        .then(False)
        .otherwise(None)
        .alias("correct"),
    ).unique("variant", keep="first", maintain_order=True)
    return out, uncertain


def _first_bad_cell(wide: pl.DataFrame, models: list[str], path: Path) -> None:
    """Raise on the first empty or non-numeric accuracy, naming its CSV row and column."""
    for i, row in enumerate(wide.select(models).iter_rows()):
        for col, val in zip(models, row):
            text = None if val is None else val.strip()
            if not text:
                raise IngestError(
                    "expected a number in [0, 1], got a missing value. To set such cells aside "
                    "and count them, pass on_invalid='skip' (CLI: --on-invalid skip).",
                    path=str(path),
                    row=i + 1,
                    column=col,
                )
            try:
                float(text)
            except ValueError:
                raise IngestError(
                    f"expected a number in [0, 1], got {val!r}. To set such cells aside and count "
                    "them, pass on_invalid='skip' (CLI: --on-invalid skip).",
                    path=str(path),
                    row=i + 1,
                    column=col,
                ) from None


def read_state_of_what_art(
    path: str | Path | Sequence[str | Path],
    *,
    metadata: str | Path | bool | None = None,
    n_items: int = 100,
    on_invalid: OnInvalid = "error",
    score_scale: ScoreScale = "auto",
) -> Ingest:
    r"""Read State of What Art paraphrase accuracies into unit-level observation rows.

    Parameters
    ----------
    path : str, Path or sequence of them
        The release folder (holding ``paraphrases accuracies/``), a folder of accuracy CSVs, a
        glob, or one CSV.
    metadata : str, Path or bool, optional
        Paraphrase metadata: a CSV or a folder holding ``<task>.csv``. By default (None or True)
        each accuracy file's twin under ``automatic paraphrases/`` is used when it exists;
        ``False`` skips metadata.
    n_items : int, default 100
        Samples behind each accuracy (100 in the release).
    on_invalid : {'error', 'skip'}, default 'error'
        Raise on the first missing or invalid accuracy, or set such cells aside and count them.
    score_scale : {'auto', 'unit', 'percent'}, default 'auto'
        Accuracies are 0-1 in the release (declared as metric ``accuracy`` in [0, 1]); a file on
        a 0-100 scale is refused with a hint unless ``percent`` asks to divide it by 100.

    Returns
    -------
    Ingest
        ``(observations, report)``: one row per (task, model, paraphrase) with ``model,
        dataset, variant, run, score, n_items`` and, with metadata, ``method`` and ``correct``.
        ``rows_read`` counts accuracy cells.

    Raises
    ------
    IngestError
        A file is not an accuracy CSV, cannot be read, or holds an invalid cell (with
        ``on_invalid='error'``).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "snarks.csv").write_text("paraphrase idx,a_acc,b_acc\n1,0.5,0.6\n2,0.7,0.4\n")
    >>> obs, report = read_state_of_what_art(d / "snarks.csv")
    >>> obs.select("model", "dataset", "variant", "score", "n_items").collect().rows()[:2]
    [('a', 'snarks', '1', 0.5, 100), ('a', 'snarks', '2', 0.7, 100)]
    >>> report.rows_read, report.rows_kept
    (4, 4)
    """
    _hidden: list[Path] = []
    files = _accuracy_files(path, _hidden)
    parts = []
    notes: list[str] = [n for n in [_release_note(path)] if n]
    use_meta = metadata is not False
    explicit = metadata if isinstance(metadata, (str, Path)) else None
    missing_meta = 0
    for f in files:
        cols = _header(f)
        if not cols or cols[0] != IDX_COLUMN:
            raise IngestError(
                f"not a State of What Art accuracy file: the first column must be {IDX_COLUMN!r}, "
                f"got {cols[0] if cols else ''!r}.",
                path=str(f),
            )
        positions = _model_columns(cols, f)
        if not positions:
            raise IngestError(
                f"no '<model>{ACC_SUFFIX}' columns (columns: {', '.join(cols)}).", path=str(f)
            )
        try:
            wide = pl.read_csv(polars_path(f), infer_schema_length=0)
        except (pl.exceptions.PolarsError, pl.exceptions.PanicException, OSError) as exc:
            raise read_error(f, exc) from None
        if wide.width != len(cols):
            raise IngestError(
                f"the header has {len(cols)} columns but polars reads {wide.width}.", path=str(f)
            )
        # columns by position, named as read: polars renames a repeated header itself
        wide = wide.rename(
            {
                old: f"{m}{ACC_SUFFIX}"
                for old, (_, m) in zip([wide.columns[i] for i, _ in positions], positions)
            }
            | {wide.columns[0]: IDX_COLUMN}
        )
        models = [f"{m}{ACC_SUFFIX}" for _, m in positions]
        if on_invalid == "error":
            _first_bad_cell(wide, models, f)
        long = (
            wide.select(pl.col(IDX_COLUMN).str.strip_chars().alias("variant"), *models)
            .with_row_index("__line")
            .unpivot(
                index=["__line", "variant"], on=models, variable_name="model", value_name="score"
            )
            .with_columns(
                pl.col("model").str.strip_suffix(ACC_SUFFIX),
                pl.lit(f.stem, dtype=pl.String).alias("dataset"),
                pl.lit(0, dtype=pl.Int64).alias("run"),
                pl.lit(n_items, dtype=pl.Int64).alias("n_items"),
                pl.col("score").str.strip_chars(),
            )
            .sort("model", "__line", maintain_order=True)
            .drop("__line")
        )
        meta_path = _metadata_file(f, explicit) if use_meta else None
        if meta_path is not None:
            meta, uncertain = _read_metadata(meta_path)
            long = long.join(meta, on="variant", how="left", maintain_order="left")
            unmatched = int(long.select(pl.col("method").is_null().sum()).item())
            if unmatched:
                missing_meta += unmatched
            if uncertain:
                notes.append(
                    f"{meta_path}: {uncertain} 'correct' mark(s) other than 0/1 "
                    "(e.g. '0?') read as null"
                )
        elif use_meta:
            long = long.with_columns(
                pl.lit(None, dtype=pl.String).alias("method"),
                pl.lit(None, dtype=pl.Boolean).alias("correct"),
            )
            if explicit is not None or ACC_FOLDER in f.parts:
                notes.append(f"{f}: no paraphrase metadata found; method and correct are null")
        parts.append((str(f), long.lazy()))
    if missing_meta:
        notes.append(f"{missing_meta} rows have a paraphrase idx absent from the metadata")
    factors = ["method", "correct"] if use_meta else []
    return finalize(
        parts,
        format="state-of-what-art",
        on_invalid=on_invalid,
        score_scale=score_scale,
        factors=factors,
        notes=[*notes, *filter(None, [skipped_note(_hidden)])],
        source_names={"variant": IDX_COLUMN, "score": "<model>_acc"},
        metric=MetricInfo("accuracy", 0.0, 1.0),
        column_rules=[
            ColumnRule(
                "method",
                "prompt",
                "State of What Art paraphrase metadata: how each paraphrase was made (a coarse "
                "prompt dimension)",
            ),
            ColumnRule(
                "correct",
                "metadata",
                "State of What Art paraphrase metadata: the authors' validation mark of the "
                "paraphrase (a filter, not a dimension: keep the validated ones with "
                "--roles correct=setting to compare them)",
            ),
        ]
        if use_meta
        else [],
    )
