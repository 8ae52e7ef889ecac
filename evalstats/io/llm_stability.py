"""llm-stability runs: repeated identical runs of one configuration (Atil et al., v3 code base).

Two layouts are read:

* **v3 run folders** (``breckbaldwin/llm-stability``): one CSV per run, columns ``model``,
  ``model_config`` (JSON), ``task``, ``task_config`` (JSON), ``rubric_id``, ``gt``, ``run``,
  ``response``, ``question`` and bookkeeping columns (``rubric``, ``prompt``, ``date``, ...).
* **the older layout** of the v2 paper: ``<model>_<task>_<run>.csv`` with ``pred``, ``gt``,
  ``raw_response`` and optionally ``new_extracted_pred``; the model, task and run come from the
  file name, the item is the row position (as the authors' ``load_runs(old_format=True)`` does).

Correctness is not stored in either layout: the answer is parsed from the raw response and
compared with the gold answer (see :func:`parse_answer` and :func:`answer_key`).
"""

from __future__ import annotations

import ast
import hashlib
import io
import json
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from evalstats._column_rules import ColumnRule
from evalstats.errors import IngestError, ParameterError
from evalstats.io._files import (
    csv_header,
    expand_paths,
    is_hidden,
    polars_path,
    read_compressed,
    skipped_note,
)
from evalstats.io._pipeline import Check, OnInvalid, ScoreScale, finalize, read_error
from evalstats.io._report import Ingest
from evalstats.schema import OBSERVATION_COLUMNS, MetricInfo

__all__ = ["answer_key", "detect_llm_stability", "parse_answer", "read_llm_stability"]

SUFFIXES = (".csv", ".csv.gz")

#: Columns that identify each layout.
V3_COLUMNS = ("model", "model_config", "task", "task_config", "rubric_id", "gt", "run", "response")
OLD_COLUMNS = ("gt", "raw_response")

#: Tasks of the authors' experiments, used to split ``<model>_<task>_<run>.csv`` file names.
KNOWN_TASKS = (
    "high_school_european_history",
    "college_mathematics",
    "geometric_shapes",
    "navigate",
    "professional_accounting",
    "logical_deduction",
    "ruin_names",
    "public_relations",
)

#: A factor value longer than this (or containing a newline) is kept as a factor column but
#: left out of the readable ``variant`` key (system prompts); the key then carries a hash.
_MAX_KEY_VALUE = 40

_LETTER_ONLY = re.compile(r"^\(?\s*([A-Za-z])\s*\)?[.:]?$")
_LETTER_PAREN_PREFIX = re.compile(r"^\(([A-Za-z])\)")
_LETTER_MARK = re.compile(r"\(([A-Z])\)")
_ANSWER_IS = re.compile(r"answer\s*(?:is|:)\s*:?\s*\(?([A-Z])\)?(?![A-Za-z])", re.IGNORECASE)
_YES_NO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)
_ANSWER_IS_YES_NO = re.compile(r"answer\s*(?:is|:)\s*:?\s*\"?(yes|no)\b", re.IGNORECASE)
_ANSWER_IS_TEXT = re.compile(r"answer\s*(?:is|:)\s*:?\s*(.+?)\s*\.?\s*$", re.IGNORECASE)
_JSON_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


# --- answers -------------------------------------------------------------------------------


def answer_key(text: str | None) -> str | None:
    """Normalised form of an answer or gold label, used to decide correctness.

    Option letters in any of the forms ``(B)``, ``B``, ``b``, ``B.``, ``B)`` and ``(B) text``
    become ``(B)``; ``yes``/``no`` in any case (with trailing punctuation) become ``Yes``/``No``;
    other text is case-folded, stripped and its whitespace collapsed.

    Examples
    --------
    >>> [answer_key(t) for t in ["B", "(B)", "(b) No gain or loss..", "yes.", " Rita,  Sue "]]
    ['(B)', '(B)', '(B)', 'Yes', 'rita, sue']
    """
    if text is None:
        return None
    s = str(text).strip().strip("\"'").strip()
    if not s:
        return None
    m = _LETTER_ONLY.match(s) or _LETTER_PAREN_PREFIX.match(s)
    if m:
        return f"({m.group(1).upper()})"
    low = s.lower().rstrip(".!")
    if low in ("yes", "no"):
        return low.capitalize()
    return " ".join(s.casefold().split())


def _json_answer(text: str) -> tuple[bool, Any]:
    """(found, value) of an ``answer`` field of a JSON object in ``text`` (any key case)."""
    m = _JSON_OBJECT.search(text)
    if not m:
        return False, None
    try:
        obj = json.loads(m.group(0))
    except (ValueError, RecursionError):
        try:
            obj = ast.literal_eval(m.group(0))
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return False, None
    if not isinstance(obj, dict):
        return False, None
    for k, v in obj.items():
        if isinstance(k, str) and k.strip().lower() == "answer":
            return True, v
    return False, None


def _unique(values: Sequence[str]) -> str | None:
    distinct = set(values)
    return distinct.pop() if len(distinct) == 1 else None


def parse_answer(response: str | None) -> str | None:
    """Parse the answer from one raw model response; None when there is none or several.

    The rules, in order:

    1. A JSON object with an ``answer`` field (any case, e.g. ``{"Answer": "(B)"}`` or
       ``{"Answer":"B"}``): its value, normalised by :func:`answer_key` when it is an option
       letter or Yes/No, otherwise the stripped text (free-text answers).
    2. Free text: option markers ``(A)``...``(Z)``; one distinct marker is the answer. Several
       distinct markers: a unique "answer is (X)" statement decides, otherwise None.
    3. A bare letter (``B``, ``B.``) is that option.
    4. ``yes``/``no`` words (any case): one distinct word is the answer; both: a unique
       "answer is yes/no" decides, otherwise None.
    5. "the answer is <text>": the text (free-text golds).

    Parameters
    ----------
    response : str or None
        The raw response.

    Returns
    -------
    str or None
        ``(B)``, ``Yes``/``No`` or free text; None for no answer or several different answers.

    Examples
    --------
    >>> [parse_answer(r) for r in ['{"Answer": "(B)"}', '{"Answer":"B"}', "The answer is yes",
    ...                            "Yes, Yes", "(A) or (C)", "I do not know", '{"Answer":"I"}']]
    ['(B)', '(B)', 'Yes', 'Yes', None, None, '(I)']
    """
    if response is None:
        return None
    text = str(response).strip()
    if not text:
        return None
    found, value = _json_answer(text)
    if found:
        if value is None or isinstance(value, (dict, list)):
            return None
        value = str(value).strip()
        if not value:
            return None
        key = answer_key(value)
        return key if key is not None and (key.startswith("(") or key in ("Yes", "No")) else value
    marks = _LETTER_MARK.findall(text)
    if marks:
        one = _unique(marks)
        if one is None:
            one = _unique([m.upper() for m in _ANSWER_IS.findall(text)])
        return f"({one})" if one else None
    m = _LETTER_ONLY.match(text)
    if m:
        return f"({m.group(1).upper()})"
    words = [w.lower() for w in _YES_NO.findall(text)]
    if words:
        one = _unique(words) or _unique([w.lower() for w in _ANSWER_IS_YES_NO.findall(text)])
        return one.capitalize() if one else None
    m = _ANSWER_IS_TEXT.search(text.splitlines()[-1]) if text.splitlines() else None
    if m and m.group(1).strip():
        return m.group(1).strip()
    return None


def _safe_parse(parser: Callable[[str], str | None], response: str) -> str | None:
    try:
        out = parser(response)
    except LookupError:  # the authors' convention for "several different answers"
        return None
    if out is None:
        return None
    out = str(out).strip()
    return out or None


# --- configs -------------------------------------------------------------------------------


def _parse_config(text: str | None, *, path: str, row: int, column: str) -> dict[str, Any]:
    if text is None or not str(text).strip():
        return {}
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):
        try:
            obj = ast.literal_eval(text)  # Python-dict repr (single quotes); never eval
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            raise IngestError(
                f"expected a JSON object or a Python dict, got {str(text)[:60]!r}.",
                path=path,
                row=row,
                column=column,
            ) from None
    if not isinstance(obj, dict):
        raise IngestError(
            f"expected a JSON object or a Python dict, got a {type(obj).__name__}.",
            path=path,
            row=row,
            column=column,
        )
    return obj


def _is_scalar(v: Any) -> bool:
    return v is None or isinstance(v, (bool, int, float, str))


def _readable(v: Any) -> bool:
    return not isinstance(v, str) or (len(v) <= _MAX_KEY_VALUE and "\n" not in v)


# --- files ---------------------------------------------------------------------------------


def _source(path: Path) -> str | io.BytesIO:
    """What polars reads for ``path``: its literal path, or a ``.csv.gz`` decompressed (capped)."""
    if str(path).lower().endswith(".gz"):
        return io.BytesIO(read_compressed(path))
    return polars_path(path)


def _header(path: Path) -> list[str]:
    try:
        return pl.read_csv(_source(path), n_rows=0, infer_schema=False).columns
    except (pl.exceptions.PolarsError, pl.exceptions.PanicException, OSError, ValueError) as exc:
        raise read_error(path, exc) from None


def _read(path: Path, columns: list[str]) -> pl.DataFrame:
    try:
        return pl.read_csv(_source(path), columns=columns, infer_schema=False)
    except (pl.exceptions.PolarsError, pl.exceptions.PanicException, OSError, ValueError) as exc:
        raise read_error(path, exc) from None


def detect_llm_stability(path: Path) -> bool:
    """Whether ``path`` (a file, or the first CSV below a folder) looks like llm-stability runs."""
    p = Path(path)
    if p.is_dir():
        first = next(
            (
                f
                for f in sorted(p.rglob("*"))
                if f.is_file() and str(f).lower().endswith(SUFFIXES) and not is_hidden(f, p)
            ),
            None,
        )
        if first is None:
            return False
        p = first
    if not p.is_file() or not str(p).lower().endswith(SUFFIXES) or p.stat().st_size == 0:
        return False
    header = csv_header(p)
    if header is None:
        return False
    names = set(header)
    return set(V3_COLUMNS) <= names or (set(OLD_COLUMNS) <= names and "rubric_id" not in names)


def _old_layout_names(path: Path) -> tuple[str, str, int, dict[str, Any]]:
    name = path.name
    for suf in SUFFIXES[::-1]:
        if name.lower().endswith(suf):
            name = name[: -len(suf)]
            break
    m = re.match(r"^(.*)_(\d+)$", name)
    if not m:
        raise IngestError(
            "expected a file name <model>_<task>_<run>.csv in the older llm-stability layout "
            "(run = a whole number).",
            path=str(path),
        )
    rest, run = m.group(1), int(m.group(2))
    model = task = None
    for t in sorted(KNOWN_TASKS, key=len, reverse=True):
        if rest.endswith("_" + t):
            model, task = rest[: -len(t) - 1], t
            break
    if model is None:
        if "_" not in rest:
            raise IngestError(
                "expected a file name <model>_<task>_<run>.csv in the older llm-stability layout.",
                path=str(path),
            )
        model, task = rest.split("_", 1)
    factors: dict[str, Any] = {}
    tokens = re.split(r"[/\\_.]", str(path).lower())
    flat = str(path).lower()
    if "few_shot" in flat or "few-shot" in flat:
        factors["shots"] = "few"
    elif "0-shot" in flat or "0_shot" in flat:
        factors["shots"] = "0"
    if "p0" in tokens:
        factors["top_p_k"] = 0.0
    return model, task, run, factors


def _frame_v3(path: Path, names: list[str]) -> pl.DataFrame:
    cols = list(V3_COLUMNS) + [c for c in ("question", EXPERIMENT) if c in names]
    df = _read(path, cols)
    df = df.rename({"task": "dataset", "rubric_id": "item", "gt": "gold"})
    if EXPERIMENT in df.columns:
        df = _with_experiment(df)
    return df.rename({"question": "__input_text"}) if "question" in df.columns else df


#: The run file's column of harness settings (later v3 files: ``end_on_answer``, ...).
EXPERIMENT = "experiment_config"


def _experiment(text: str | None) -> dict[str, Any]:
    """The scalar entries of an ``experiment_config`` cell ({} when absent or not an object)."""
    if not text:
        return {}
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        return {}
    return {str(k): v for k, v in doc.items() if _is_scalar(v)} if isinstance(doc, dict) else {}


def _with_experiment(df: pl.DataFrame) -> pl.DataFrame:
    """``experiment_config``'s entries folded into ``task_config``: part of the configuration.

    The harness settings of a run (when generation stops, whether disagreements are kept) tell
    otherwise identical configurations apart: two folders that differ only there are not
    repeats of one configuration. Their keys are settings (:func:`_experiment_rules`).
    """
    pairs = df.select("task_config", EXPERIMENT).unique()
    merged = []
    for tc, ec in pairs.iter_rows():
        extra = _experiment(ec)
        try:
            base = json.loads(tc) if tc else {}
        except (ValueError, RecursionError):
            base = None  # the configuration check names the file and row
        if not extra or not isinstance(base, dict):
            merged.append(tc)
            continue
        merged.append(json.dumps({**base, **{k: v for k, v in extra.items() if k not in base}}))
    table = pairs.with_columns(pl.Series("__tc", merged, dtype=pl.String))
    return (
        df.join(table, on=["task_config", EXPERIMENT], how="left", nulls_equal=True)
        .with_columns(pl.col("__tc").alias("task_config"))
        .drop("__tc", EXPERIMENT)
    )


def _experiment_rules(files: Sequence[Path], kept: Sequence[str]) -> list[ColumnRule]:
    """The role of every ``experiment_config`` entry of ``files`` that became a column.

    An entry with two or more values is a setting of the harness; one with a single value,
    absent from the other run files, records the harness version that wrote it (metadata).
    """
    values: dict[str, set[str]] = {}
    for f in files:
        if EXPERIMENT not in _header(f):
            continue
        for text in _read(f, [EXPERIMENT])[EXPERIMENT].unique().to_list():
            for k, v in _experiment(text).items():
                values.setdefault(k, set()).add(json.dumps(v))
    rules = []
    for k in sorted(values):
        if k not in kept:
            continue
        if len(values[k]) > 1:
            rules.append(
                ColumnRule(
                    k,
                    "setting",
                    f"llm-stability experiment_config: {k}, a setting of the harness (how a run "
                    "was made, not its prompt)",
                )
            )
        else:
            rules.append(
                ColumnRule(
                    k,
                    "metadata",
                    f"llm-stability experiment_config: {k}, one value where recorded and absent "
                    "from older run files: a record of the harness version, not a setting",
                )
            )
    return rules


def _frame_old(path: Path, names: list[str]) -> pl.DataFrame:
    model, task, run, factors = _old_layout_names(path)
    cols = [c for c in ("gt", "raw_response", "new_extracted_pred", "pred") if c in names]
    df = _read(path, cols)
    text = pl.col("raw_response")
    for fallback in ("new_extracted_pred", "pred"):
        if fallback in df.columns:
            text = text.fill_null(pl.col(fallback))
    return df.select(
        pl.lit(model, dtype=pl.String).alias("model"),
        pl.lit(json.dumps({k: v for k, v in factors.items() if k != "shots"})).alias(
            "model_config"
        ),
        pl.lit(task, dtype=pl.String).alias("dataset"),
        pl.lit(json.dumps({k: v for k, v in factors.items() if k == "shots"})).alias("task_config"),
        pl.int_range(pl.len()).cast(pl.String).alias("item"),
        pl.col("gt").alias("gold"),
        pl.lit(str(run)).alias("run"),
        text.alias("response"),
    )


def read_llm_stability(
    path: str | Path | Sequence[str | Path],
    *,
    parser: Callable[[str], str | None] | None = None,
    on_invalid: OnInvalid = "error",
    columns: str | Mapping[str, str] | None = None,
    score_scale: ScoreScale = "unit",
) -> Ingest:
    """Read llm-stability run files (v3 run folders or the older layout) into observations.

    Parameters
    ----------
    path : str, Path or sequence of them
        A run CSV (``.csv`` or ``.csv.gz``), a glob, or a folder searched recursively.
    parser : callable, optional
        ``parser(response) -> answer or None`` replacing :func:`parse_answer`. Returning None (or
        raising ``LookupError``, the authors' convention) marks the response unparsed.
    on_invalid : {'error', 'skip'}, default 'error'
        Rows with a missing model, task, item, run or gold label: raise naming file, row and
        column, or set them aside and count them in the report.
    columns : None
        Not supported: the layouts have fixed columns. Accepted so that the loader options every
        command shares can be passed; anything but None raises ParameterError.
    score_scale : {'auto', 'unit'}, default 'unit'
        Scores are computed here as 0/1, so they are always on the unit scale; ``percent``
        raises ParameterError.

    Returns
    -------
    Ingest
        ``(observations, report)``. Columns: ``model``, ``dataset`` (the task), ``item``
        (``rubric_id``), ``variant``, ``run``, ``score`` (1.0 when the parsed answer equals the
        gold answer after :func:`answer_key` normalisation), the scalar entries of
        ``model_config`` and ``task_config`` as factor columns (``temperature``, ``seed``,
        ``top_p_k``, ``prompt_type``, ``shots``, ...), ``answer``, ``response``, ``gold``,
        ``input_len`` (words of ``question``), ``output_len`` and ``error``.

    Raises
    ------
    IngestError
        A file cannot be read, lacks the columns of both layouts, holds a config that is not a
        JSON object or Python dict, or (with ``on_invalid='error'``) has an invalid row.

    Notes
    -----
    The unit of a run set is the configuration as the authors' ``evaluate.py`` groups it:
    (model, model_config, task, task_config). ``variant`` is a readable key of the scalar config
    entries (``temperature=0.0|seed=12|...``); when configs that differ only in entries left out
    of that key (nested answer schemas, long system prompts) share a model and task, a short hash
    of the whole config is appended so that they stay apart. Bookkeeping columns (``date``,
    ``prompt``, ``rubric``, the unnamed index) are not part of the configuration.

    A response with no answer or several different answers is *kept* with ``score`` 0,
    ``answer`` null and ``error = "unparsed"``; an empty response gets ``error = "empty"``.
    Both are counted in the report's notes. The authors count such rows as incorrect too.

    Checked against: the authors' ``correct_count_per_run`` in
    ``../shared/data/llm-stability/strict_json_schema_stability_eval.csv`` (read in place by
    tests/io/test_llm_stability.py).

    Examples
    --------
    >>> import os, tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> for run, last in enumerate(["No", "Yes"]):
    ...     rows = os.linesep.join(["gt,raw_response", "(A),The answer is (A).", f"Yes,{last}", ""])
    ...     _ = (d / f"gpt-4o_navigate_{run}.csv").write_text(rows)
    >>> obs, report = read_llm_stability(d)
    >>> obs.select("model", "dataset", "item", "run", "answer", "score").collect().rows()[:2]
    [('gpt-4o', 'navigate', '0', 0, '(A)', 1.0), ('gpt-4o', 'navigate', '1', 0, 'No', 0.0)]
    >>> report.rows_read, report.rows_kept
    (4, 4)
    """
    if columns:
        raise ParameterError(
            "`columns` is not supported by the llm-stability loader (its layouts have fixed "
            "columns); use --format table to map the columns of another layout."
        )
    if score_scale not in ("auto", "unit"):
        raise ParameterError(
            f"`score_scale` must be 'auto' or 'unit' for llm-stability runs (scores are computed "
            f"as 0/1 from the parsed answers), got {score_scale!r}."
        )
    if parser is not None and not callable(parser):
        raise ParameterError(f"`parser` must be a callable or None, got {type(parser).__name__}.")
    parse = parser if parser is not None else parse_answer
    skipped: list[Path] = []
    files = expand_paths(path, SUFFIXES, skipped=skipped)
    frames: list[tuple[Path, pl.DataFrame]] = []
    for f in files:
        names = _header(f)
        if set(V3_COLUMNS) <= set(names):
            frames.append((f, _frame_v3(f, names)))
        elif set(OLD_COLUMNS) <= set(names):
            frames.append((f, _frame_old(f, names)))
        else:
            need = [c for c in V3_COLUMNS if c not in names]
            raise IngestError(
                f"not an llm-stability run file: no column {need[0]!r} (v3 layout needs "
                f"{', '.join(V3_COLUMNS)}; the older layout needs {', '.join(OLD_COLUMNS)}; "
                f"columns: {', '.join(names)}).",
                path=str(f),
            )

    # configs -> factor columns and the variant key, over the distinct configs of all files
    configs: dict[tuple[str, str], tuple[dict[str, Any], dict[str, Any]]] = {}
    # config entries that change row by row within one run file (a per-row counter such as
    # ``rubric_counter`` or ``round``) describe the row, not the configuration: the authors'
    # evaluate.py drops them before grouping, and so do we (by name, in every file)
    row_keys: dict[str, dict[str, str]] = {"model_config": {}, "task_config": {}}
    for f, df in frames:
        firsts = (
            df.with_row_index("__row", offset=1)
            .group_by("model_config", "task_config", maintain_order=True)
            .agg(pl.col("__row").first())
        )
        in_file: list[tuple[dict[str, Any], dict[str, Any]]] = []
        for mc, tc, row in firsts.iter_rows():
            key = (mc or "", tc or "")
            if key not in configs:
                configs[key] = (
                    _parse_config(mc, path=str(f), row=row, column="model_config"),
                    _parse_config(tc, path=str(f), row=row, column="task_config"),
                )
            in_file.append(configs[key])
        if len(in_file) > 1:
            for source_i, source in enumerate(("model_config", "task_config")):
                dicts = [c[source_i] for c in in_file]
                for k in sorted({str(k) for d in dicts for k in d}):
                    seen = {json.dumps(d.get(k), sort_keys=True, default=str) for d in dicts}
                    if len(seen) > 1:
                        row_keys[source].setdefault(k, str(f))
    if row_keys["model_config"] or row_keys["task_config"]:
        configs = {
            key: (
                {k: v for k, v in mcd.items() if str(k) not in row_keys["model_config"]},
                {k: v for k, v in tcd.items() if str(k) not in row_keys["task_config"]},
            )
            for key, (mcd, tcd) in configs.items()
        }
    # factor column -> (config column, key); a key clashing with a canonical column or with a
    # key of the other config is prefixed with its config's name
    factor_names: dict[str, tuple[str, str]] = {}
    reserved = set(OBSERVATION_COLUMNS) | {"model_config", "task_config", "n_items", "n_errors"}
    for source_i, source in enumerate(("model_config", "task_config")):
        for mc_tc in configs.values():
            for k, v in mc_tc[source_i].items():
                if not _is_scalar(v):
                    continue
                name = str(k)
                if name in reserved or (name in factor_names and factor_names[name][0] != source):
                    name = f"{source}_{k}"
                factor_names.setdefault(name, (source, k))
    factor_values: dict[str, list[Any]] = {n: [] for n in factor_names}
    rows_cfg = []
    for (mc, tc), (mcd, tcd) in configs.items():
        vals = {}
        for name, (source, k) in factor_names.items():
            v = (mcd if source == "model_config" else tcd).get(k)
            vals[name] = v if _is_scalar(v) else None
            factor_values[name].append(vals[name])
        full = json.dumps([mcd, tcd], sort_keys=True, default=str)
        rows_cfg.append((mc, tc, vals, full))
    # factors that are null in every config add nothing; mixed types become strings
    kept = [n for n, vs in factor_values.items() if any(v is not None for v in vs)]
    as_string = set()
    for n in kept:
        types = {type(v) for v in factor_values[n] if v is not None}
        if len(types) > 1 and not types <= {int, float}:
            as_string.add(n)
    readable = [n for n in kept if all(_readable(v) for v in factor_values[n])]
    hidden = [n for n in kept if n not in readable]

    def short_key(vals: dict[str, Any]) -> str:
        if not readable:
            return "default"
        return "|".join(f"{n}={'null' if vals[n] is None else vals[n]}" for n in readable)

    cfg_rows = []
    for mc, tc, vals, full in rows_cfg:
        rec = {"model_config": mc, "task_config": tc, "__short": short_key(vals), "__full": full}
        for n in kept:
            v = vals[n]
            rec[n] = None if v is None else (str(v) if n in as_string else v)
        cfg_rows.append(rec)
    cfg = (
        pl.DataFrame(cfg_rows, infer_schema_length=None)
        if cfg_rows
        else pl.DataFrame(
            schema=dict.fromkeys(["model_config", "task_config", "__short", "__full"], pl.String)
        )
    )

    notes: list[str] = []
    parts: list[tuple[str, pl.LazyFrame]] = []
    all_obs = []
    # a run folder's label: its name, or its path when two folders share a name
    parents = list(dict.fromkeys(f.parent for f, _ in frames))
    names = [p.name for p in parents]
    label = {p: (p.name if names.count(p.name) == 1 else str(p)) for p in parents}
    for f, df in frames:
        df = df.with_columns(
            pl.col("model_config").fill_null(""), pl.col("task_config").fill_null("")
        )
        all_obs.append(
            df.with_columns(
                pl.lit(str(f)).alias("__file"), pl.lit(label[f.parent]).alias("__folder")
            )
        )
    obs = pl.concat(all_obs, how="diagonal_relaxed")
    obs = obs.join(cfg, on=["model_config", "task_config"], how="left", maintain_order="left")
    # a readable key shared by different full configs of one (model, task) gets a hash suffix
    clash = (
        obs.group_by("model", "dataset", "__short")
        .agg(pl.col("__full").n_unique().alias("n"))
        .filter(pl.col("n") > 1)
    )
    obs = obs.join(clash, on=["model", "dataset", "__short"], how="left", maintain_order="left")
    obs = obs.with_columns(
        pl.when(pl.col("n").is_not_null())
        .then(
            pl.concat_str(
                pl.col("__short"),
                pl.lit("|config="),
                pl.col("__full").map_elements(
                    lambda s: hashlib.sha1(s.encode()).hexdigest()[:8], return_dtype=pl.String
                ),
            )
        )
        .otherwise(pl.col("__short"))
        .alias("variant")
    ).drop("n", "__short", "__full", "model_config", "task_config")
    # one configuration in several run folders (e.g. a prompt and its long form, or a repeat of
    # the experiment): each folder is its own run set, named in ``run_set`` and in the variant
    spread = (
        obs.group_by("model", "dataset", "variant")
        .agg(pl.col("__folder").n_unique().alias("__n_sets"))
        .filter(pl.col("__n_sets") > 1)
    )
    if spread.height:
        obs = obs.join(
            spread, on=["model", "dataset", "variant"], how="left", maintain_order="left"
        ).with_columns(
            pl.when(pl.col("__n_sets").is_not_null())
            .then(pl.col("__folder"))
            .otherwise(pl.lit(None, dtype=pl.String))
            .alias("run_set")
        )
        obs = obs.with_columns(
            pl.when(pl.col("run_set").is_not_null())
            .then(pl.concat_str(pl.col("variant"), pl.lit("|run_set="), pl.col("run_set")))
            .otherwise(pl.col("variant"))
            .alias("variant")
        ).drop("__n_sets")
        kept = [*kept, "run_set"]
        notes.append(
            f"{spread.height} configuration(s) found in several run folders: each folder is a "
            "run set of its own (column run_set, in the variant's name: a setting held apart, "
            "not a prompt variant)"
        )
    obs = obs.drop("__folder")
    for source in ("model_config", "task_config"):
        if row_keys[source]:
            notes.append(
                f"{source} entries that change row by row within a run file left out of the "
                f"configuration (as the authors' evaluate.py does): "
                + ", ".join(f"{k} (e.g. {Path(v).name})" for k, v in row_keys[source].items())
            )
    note = skipped_note(skipped)
    if note:
        notes.append(note)
    if hidden:
        notes.append(
            "config entries kept as factor columns but left out of the variant key (long text): "
            + ", ".join(hidden)
        )

    # answers: parse each distinct response once
    responses = obs.get_column("response").drop_nulls().unique()
    parsed = [_safe_parse(parse, r) if r.strip() else None for r in responses.to_list()]
    amap = pl.DataFrame({"response": responses, "answer": pl.Series(parsed, dtype=pl.String)})
    obs = obs.join(amap, on="response", how="left", maintain_order="left", nulls_equal=False)
    empty = pl.col("response").is_null() | (pl.col("response").str.strip_chars() == "")
    a_key = pl.col("answer").map_elements(answer_key, return_dtype=pl.String)
    g_key = pl.col("gold").map_elements(answer_key, return_dtype=pl.String)
    obs = obs.with_columns(
        pl.when(empty)
        .then(pl.lit("empty"))
        .when(pl.col("answer").is_null())
        .then(pl.lit("unparsed"))
        .otherwise(pl.lit(None, dtype=pl.String))
        .alias("error"),
        (a_key == g_key).fill_null(False).cast(pl.Float64).alias("score"),
    )
    counts = obs.filter(pl.col("error").is_not_null()).group_by("error", "dataset").len()
    for err, dataset, n in counts.sort("error", "dataset").iter_rows():
        what = (
            "responses with no answer or several different answers"
            if err == "unparsed"
            else "empty responses"
        )
        notes.append(f"{dataset}: {n} {what} kept with score 0 and error={err!r}")

    for i, (f, _) in enumerate(frames):
        part = obs.filter(pl.col("__file") == str(f)).drop("__file")
        if i == 0 or part.height:
            parts.append((str(f), part.lazy()))
    if not parts:
        raise IngestError("no input files found.", path=str(path))
    checks = [
        Check(
            "missing_gold",
            pl.col("gold").is_null(),
            column="gold",
            message="required value is missing (the gold answer `gt`)",
        ),
    ]
    return finalize(
        parts,
        format="llm-stability",
        on_invalid=on_invalid,
        score_scale="unit",
        checks=checks,
        factors=kept,
        source_names={"dataset": "task", "item": "rubric_id", "gold": "gt"},
        notes=notes,
        metric=MetricInfo("accuracy", 0.0, 1.0),
        column_rules=_experiment_rules([f for f, _ in frames], kept)
        + (
            [
                ColumnRule(
                    "run_set",
                    "setting",
                    "the run folder of a configuration found in several: the folders differ in "
                    "something the configuration does not record (a rerun on another day), so "
                    "they are held apart and analysed per folder, neither prompt variants nor "
                    "runs of one another",
                )
            ]
            if "run_set" in kept
            else []
        ),
    )
