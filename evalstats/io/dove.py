"""DOVE and DOVE_Lite prediction dumps (Habba et al., 2025) into the observation table.

DOVE_Lite is flat Parquet, one row per (model, prompt configuration, item); full DOVE nests the
same facts in struct columns. Both are read lazily (``scan_parquet``), so the observation table
streams. See ``docs/formats/dove.md`` for the column mapping and the quirks handled here.
"""

from __future__ import annotations

import glob
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

import polars as pl

from evalstats.errors import IngestError, ParameterError
from evalstats.io._files import expand_paths, polars_path, scan_file, skipped_note
from evalstats.io._pipeline import Check, OnInvalid, ScoreScale, finalize
from evalstats.io._report import Ingest
from evalstats.schema import MetricInfo

__all__ = [
    "CORRECT_POSITION_ORDERS",
    "DEDUP_KEY",
    "FACTORS",
    "detect_dove",
    "read_dove",
]

#: The prompt dimensions of DOVE; they become factor columns and define ``variant``.
FACTORS: tuple[str, ...] = ("template", "separator", "enumerator", "choices_order", "shots")

#: The DOVE authors' de-duplication key, in canonical names (``item`` is ``sample_index``).
DEDUP_KEY: tuple[str, ...] = (
    "item",
    "model",
    "dataset",
    "template",
    "separator",
    "enumerator",
    "choices_order",
    "shots",
)

#: Choice orders that put the correct answer in a fixed position; the authors leave them out of
#: few-shot analyses (``exclude_correct_position=True``).
CORRECT_POSITION_ORDERS: tuple[str, ...] = ("correct_first", "correct_last")

_SUFFIXES = (".parquet", ".pq")

#: DOVE_Lite column -> canonical column.
_LITE: dict[str, str] = {
    "model": "model",
    "dataset": "dataset",
    "sample_index": "item",
    "template": "template",
    "separator": "separator",
    "enumerator": "enumerator",
    "choices_order": "choices_order",
    "shots": "shots",
    "score": "score",
    "closest_answer": "answer",
    "generated_text": "response",
    "ground_truth": "gold",
    "question": "__input_text",
    "cumulative_logprob": "cumulative_logprob",
    "quantization": "quantization",
    "language": "language",
}

#: Full-DOVE nested field -> canonical column.
_NESTED: dict[tuple[str, ...], str] = {
    ("model", "model_info", "name"): "model",
    ("model", "configuration", "quantization"): "quantization",
    ("prompt_config", "format", "template"): "template",
    ("prompt_config", "format", "separator"): "separator",
    ("prompt_config", "format", "enumerator"): "enumerator",
    ("prompt_config", "format", "choices_order", "method"): "choices_order",
    ("prompt_config", "format", "shots"): "shots",
    ("instance", "sample_identifier", "dataset_name"): "dataset",
    ("instance", "sample_identifier", "hf_index"): "item",
    ("instance", "language"): "language",
    ("instance", "raw_input"): "__input_text",
    ("output", "response"): "response",
    ("output", "cumulative_logprob"): "cumulative_logprob",
    ("evaluation", "closest_answer"): "answer",
    ("evaluation", "ground_truth"): "gold",
    ("evaluation", "score"): "score",
}

#: Canonical dtypes of the columns built here (``score`` is parsed by ``finalize``).
_DTYPES: dict[str, pl.DataType] = {
    "model": pl.String(),
    "dataset": pl.String(),
    "item": pl.String(),
    "template": pl.String(),
    "separator": pl.String(),
    "enumerator": pl.String(),
    "choices_order": pl.String(),
    "shots": pl.Int64(),
    "language": pl.String(),
    "quantization": pl.String(),
    "answer": pl.String(),
    "response": pl.String(),
    "gold": pl.String(),
    "__input_text": pl.String(),
    "cumulative_logprob": pl.Float64(),
}

_SHOTS_DIR = re.compile(r"^(?:(\d+)_shots?|shots_(\d+))$")
_LANGUAGE_DIR = re.compile(r"^[a-z]{2,3}(?:[-_][A-Za-z0-9]{2,4})?$")
_LITE_MARKERS = frozenset({"evaluation_id", "sample_index", "template"})
_NESTED_MARKERS = ("prompt_config", "instance", "evaluation")


def path_info(path: str | Path) -> dict[str, str | int]:
    """Model, language and shots encoded in a DOVE file path, when the path follows a layout.

    The published layouts are ``{model}/{language}/{N}_shot/{benchmark}.parquet``,
    ``{model}/shots_{N}/{language}/{benchmark}.parquet`` and ``{model}/{language}/{N}_shots/...``.
    A path in none of them gives an empty dict.

    Examples
    --------
    >>> path_info("dove/Llama-3.2-1B-Instruct/en/0_shot/mmlu.global_facts.parquet")
    {'model': 'Llama-3.2-1B-Instruct', 'language': 'en', 'shots': 0}
    >>> path_info("OLMoE-1B-7B-0924-Instruct/shots_5/en/hellaswag.parquet")
    {'model': 'OLMoE-1B-7B-0924-Instruct', 'language': 'en', 'shots': 5}
    >>> path_info("results.parquet")
    {}
    """
    parents = Path(path).parts[:-1]
    if len(parents) < 3:
        return {}
    for shots_i, lang_i in ((-1, -2), (-2, -1)):
        m = _SHOTS_DIR.match(parents[shots_i])
        if m is None or not _LANGUAGE_DIR.match(parents[lang_i]):
            continue
        return {
            "model": parents[-3],
            "language": parents[lang_i],
            "shots": int(m.group(1) or m.group(2)),
        }
    return {}


def _first_parquet(path: Path) -> Path | None:
    if path.is_file():
        return path if path.suffix.lower() in _SUFFIXES else None
    if path.is_dir():
        found: Iterator[Path] = (
            f for f in sorted(path.rglob("*")) if f.is_file() and f.suffix.lower() in _SUFFIXES
        )
        return next(found, None)
    if any(ch in str(path) for ch in "*?["):
        matches = sorted(Path(f) for f in glob.glob(str(path), recursive=True))
        return next((f for f in matches if f.is_file() and f.suffix.lower() in _SUFFIXES), None)
    return None


def _is_nested(schema: pl.Schema) -> bool:
    return all(name in schema and isinstance(schema[name], pl.Struct) for name in _NESTED_MARKERS)


def detect_dove(path: str | Path) -> bool:
    """Whether ``path`` (a Parquet file or a folder of them) looks like DOVE or DOVE_Lite.

    Only the Parquet footer of the first file is read: DOVE_Lite files carry
    ``evaluation_id``, ``sample_index`` and ``template``; full DOVE files carry the struct columns
    ``prompt_config``, ``instance`` and ``evaluation``.

    Examples
    --------
    >>> detect_dove("no/such/folder")
    False
    """
    first = _first_parquet(Path(path))
    if first is None:
        return False
    try:
        schema = pl.Schema(pl.read_parquet_schema(polars_path(first)))
    except (pl.exceptions.PolarsError, pl.exceptions.PanicException, OSError):
        return False
    return _LITE_MARKERS <= set(schema.names()) or _is_nested(schema)


def _struct_field(schema: pl.Schema, fields: tuple[str, ...]) -> tuple[pl.Expr, pl.DataType] | None:
    """Expression for a nested field and its dtype, or None when the field is absent."""
    if fields[0] not in schema:
        return None
    expr = pl.col(fields[0])
    dtype = schema[fields[0]]
    for name in fields[1:]:
        if not isinstance(dtype, pl.Struct):
            return None
        inner = {f.name: f.dtype for f in dtype.fields}
        if name not in inner:
            return None
        expr = expr.struct.field(name)
        dtype = inner[name]
    return expr, dtype


def _as_text(expr: pl.Expr, dtype: pl.DataType) -> pl.Expr:
    """A text column from a string or a list of chat messages (their ``content`` joined)."""
    if isinstance(dtype, pl.List):
        inner = dtype.inner
        if isinstance(inner, pl.Struct) and "content" in {f.name for f in inner.fields}:
            return expr.list.eval(pl.element().struct.field("content").cast(pl.String)).list.join(
                "\n"
            )
        return expr.list.eval(pl.element().cast(pl.String)).list.join("\n")
    if isinstance(dtype, pl.Struct):
        return expr.struct.json_encode()
    return expr.cast(pl.String)


def _cast(name: str, expr: pl.Expr, dtype: pl.DataType) -> pl.Expr:
    if name == "score":
        return expr.alias(name)
    if name == "item":
        if dtype.is_integer():  # kept as a number until the table is written (cheaper to group)
            return expr.cast(pl.Int64).alias(name)
        # sample_index may be stored as a float (-1.0, 3.0): write whole numbers without ".0"
        if dtype.is_float():
            whole = expr.cast(pl.Int64, strict=False).cast(pl.String)
            return (
                pl.when(expr == expr.round())
                .then(whole)
                .otherwise(expr.cast(pl.String))
                .alias(name)
            )
        return expr.cast(pl.String).alias(name)
    if name in ("__input_text", "response", "gold", "answer"):
        return _as_text(expr, dtype).alias(name)
    return expr.cast(_DTYPES[name], strict=False).alias(name)


def _frame(path: Path) -> tuple[pl.LazyFrame, dict[str, str], str]:
    """One file as a LazyFrame with canonical columns, its source names, and its kind."""
    lf = scan_file(path)
    schema = lf.collect_schema()
    exprs: list[pl.Expr] = []
    sources: dict[str, str] = {}
    if _is_nested(schema):
        kind = "nested"
        for fields, name in _NESTED.items():
            found = _struct_field(schema, fields)
            if found is not None:
                exprs.append(_cast(name, *found))
                sources[name] = ".".join(fields)
        score_name = "evaluation.score"
    else:
        kind = "lite"
        for src, name in _LITE.items():
            if src in schema:
                exprs.append(_cast(name, pl.col(src), schema[src]))
                sources[name] = src
        score_name = "score"
    if "score" not in sources:
        names = ", ".join(schema.names())
        raise IngestError(
            f"the DOVE file has no {score_name!r} column (columns: {names}).",
            path=str(path),
            column=score_name,
        )
    if "item" not in sources:
        item_name = "instance.sample_identifier.hf_index" if kind == "nested" else "sample_index"
        raise IngestError(
            f"the DOVE file has no {item_name!r} column, which identifies the item "
            f"(columns: {', '.join(schema.names())}).",
            path=str(path),
            column=item_name,
        )
    lf = lf.select(exprs)
    info = path_info(path)
    fill = []
    for name in ("model", "language", "shots"):
        if name not in sources and name in info:
            fill.append(pl.lit(info[name], dtype=_DTYPES[name]).alias(name))
            sources[name] = "<path>"
    if "dataset" not in sources:
        fill.append(pl.lit(path.name.rsplit(".", 1)[0], dtype=pl.String).alias("dataset"))
        sources["dataset"] = "<file name>"
    for name in FACTORS:
        if name not in sources:
            fill.append(pl.lit(None, dtype=_DTYPES[name]).alias(name))
    if fill:
        lf = lf.with_columns(fill)
    return lf, sources, kind


def _escaped(expr: pl.Expr) -> pl.Expr:
    """Backslash, newline, carriage return and tab written as escapes, so keys stay on one line."""
    # one pass (Aho-Corasick): no replacement is replaced again
    return expr.str.replace_many(["\\", "\n", "\r", "\t"], ["\\\\", "\\n", "\\r", "\\t"])


def variant_expr(factors: Sequence[str]) -> pl.Expr:
    r"""The DOVE variant key: ``name=value`` joined by ``|``, with the separator escaped.

    Like :func:`evalstats.schema.variant_key`, except that whitespace separators are written
    as escapes (``\n``), so the key of the newline separator stays printable.

    Examples
    --------
    >>> df = pl.DataFrame({"separator": ["\n", "; "], "shots": [0, 5]})
    >>> df.select(variant_expr(["separator", "shots"])).to_series().to_list()
    ['separator=\\n|shots=0', 'separator=; |shots=5']
    """
    parts = []
    for f in factors:
        value = pl.col(f).cast(pl.String)
        if f == "separator":
            value = _escaped(value)
        parts.append(pl.concat_str([pl.lit(f"{f}="), value.fill_null("null")]))
    return pl.concat_str(parts, separator="|").alias("variant")


def read_dove(
    path: str | Path | Sequence[str | Path],
    *,
    on_invalid: OnInvalid = "error",
    score_scale: ScoreScale = "auto",
    exclude_correct_position: bool = False,
    columns: object = None,
) -> Ingest:
    r"""Read DOVE_Lite or full-DOVE Parquet dumps into the observation table.

    Parameters
    ----------
    path : str, Path or sequence of them
        A Parquet file, a glob, or a folder tree in any published layout
        (``{model}/{language}/{N}_shot/{benchmark}.parquet``,
        ``{model}/shots_{N}/{language}/...``, ``{model}/{language}/{N}_shots/...``). Model,
        language and shots are taken from the path when the file has no such column; the
        dataset from the file name when it has no ``dataset`` column.
    on_invalid : {'error', 'skip'}, default 'error'
        Raise on the first invalid row (missing, non-numeric or out-of-range score, missing
        model or item), or set such rows aside and count them in the report. The documented
        quirks below are always set aside and counted, never an error.
    score_scale : {'auto', 'unit', 'percent'}, default 'auto'
        See :func:`evalstats.io._pipeline.finalize`; DOVE scores are already in [0, 1].
    exclude_correct_position : bool, default False
        Set aside the ``correct_first`` and ``correct_last`` choice orders (reason
        ``excluded_choices_order``), as the DOVE authors do for few-shot data.
    columns : None
        Not used: DOVE has a fixed schema. Present so that the CLI's ``--columns`` gives a
        clear error.

    Returns
    -------
    Ingest
        ``(observations, report)``. Columns: ``model, dataset, item, variant, run, score``, the
        factors ``template, separator, enumerator, choices_order, shots`` (and ``language``
        when known, ``quantization`` when present), ``answer`` (closest_answer), ``response``
        (generated_text), ``gold`` (ground_truth), ``input_len``, ``output_len`` and
        ``cumulative_logprob``.

    Raises
    ------
    IngestError
        A file cannot be read (empty, truncated, not Parquet) or lacks the score or item
        column, or a row is invalid and ``on_invalid='error'``.
    ParameterError
        If ``columns`` is given.

    See Also
    --------
    evalstats.aggregate.to_units : Mean score per (model, dataset, variant, run).

    Notes
    -----
    Quirks of the source, set aside and counted in the report:

    - ``duplicate``: a row whose key (sample_index, model, dataset, template, separator,
      enumerator, choices_order, shots), plus ``language`` when known, repeats an earlier row;
      the first row in file order is kept, as ``drop_duplicates`` does in the authors' code;
    - ``unknown_item``: ``sample_index == -1`` (the authors could not match the item);
    - ``excluded_choices_order``: with ``exclude_correct_position=True`` only.

    ``variant`` is ``"template=…|separator=…|enumerator=…|choices_order=…|shots=…"``, with
    ``|language=…`` appended when the language is known.

    Checked against: an independent pandas computation (``drop_duplicates`` on the authors'
    key, then the mean score per unit) on the synthetic fixtures in ``fixtures/dumps/dove/``,
    in ``tests/io/test_dove.py``.

    References
    ----------
    .. [1] E. Habba et al., "DOVE: A Large-Scale Multi-Dimensional Predictions Dataset Towards
       Meaningful LLM Evaluation", 2025. arXiv:2503.01622.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp()) / "Llama-3.2-1B-Instruct" / "en" / "0_shot"
    >>> folder.mkdir(parents=True)
    >>> pl.DataFrame({
    ...     "evaluation_id": ["a", "b", "c", "d"], "dataset": ["mmlu.global_facts"] * 4,
    ...     "sample_index": [0, 1, 1, -1], "template": ["T1"] * 4, "separator": ["\n"] * 4,
    ...     "enumerator": ["capitals"] * 4, "choices_order": ["none"] * 4,
    ...     "score": [1.0, 0.0, 0.0, 1.0],
    ... }).write_parquet(folder / "mmlu.global_facts.parquet")
    >>> obs, report = read_dove(folder.parent.parent)
    >>> obs.select("model", "item", "shots", "score").collect().rows()
    [('Llama-3.2-1B-Instruct', '0', 0, 1.0), ('Llama-3.2-1B-Instruct', '1', 0, 0.0)]
    >>> report.rows_read, report.rows_kept, dict(report.set_aside)
    (4, 2, {'duplicate': 1, 'unknown_item': 1})
    """
    if columns is not None:
        raise ParameterError(
            "`columns` is not used by the DOVE loader, whose schema is fixed; "
            "use format='table' to map columns yourself."
        )
    if not isinstance(exclude_correct_position, bool):
        raise ParameterError(
            f"`exclude_correct_position` must be True or False, got {exclude_correct_position!r}."
        )
    _hidden: list[Path] = []
    files = expand_paths(path, _SUFFIXES, skipped=_hidden)
    parts: list[tuple[str, pl.LazyFrame]] = []
    source_names: dict[str, str] = {}
    kinds: set[str] = set()
    from_path: set[str] = set()
    has_language = False
    for f in files:
        lf, sources, kind = _frame(f)
        kinds.add(kind)
        has_language = has_language or "language" in sources
        for name, src in sources.items():
            if src.startswith("<"):
                from_path.add(name)
            else:
                source_names.setdefault(name, src)
        parts.append((str(f), lf))
    factors = list(FACTORS) + (["language"] if has_language else [])
    if any(lf.collect_schema()["item"] != pl.Int64 for _, lf in parts):
        parts = [(f, lf.with_columns(pl.col("item").cast(pl.String))) for f, lf in parts]
        unknown = pl.col("item") == "-1"
    else:
        unknown = pl.col("item") == -1
    key = list(DEDUP_KEY) + (["language"] if has_language else [])
    item_col = source_names.get("item", "sample_index")
    checks = [
        Check(
            "unknown_item",
            unknown,
            column="item",
            quirk=True,
            message=f"{item_col} is -1 (item not found by the DOVE authors)",
        )
    ]
    if exclude_correct_position:
        checks.append(
            Check(
                "excluded_choices_order",
                pl.col("choices_order").is_in(list(CORRECT_POSITION_ORDERS)),
                column="choices_order",
                quirk=True,
                message="choices_order puts the correct answer in a fixed position",
            )
        )
    shown_key = ", ".join(item_col if k == "item" else k for k in key)
    notes = [f"DOVE {' and '.join(sorted(kinds))} rows; de-duplicated on ({shown_key})"]
    notes.append(
        f"variant built from {', '.join(factors)} (newlines and tabs in separator escaped)"
    )
    if from_path:
        notes.append(f"taken from the path or file name: {', '.join(sorted(from_path))}")
    if exclude_correct_position:
        notes.append(f"choices_order {', '.join(CORRECT_POSITION_ORDERS)} excluded")
    return finalize(
        parts,
        format="dove",
        on_invalid=on_invalid,
        score_scale=score_scale,
        checks=checks,
        duplicates="quirk",
        dedup_key=key,
        factors=factors,
        source_names=source_names,
        notes=[*notes, *filter(None, [skipped_note(_hidden)])],
        variant=variant_expr(factors),
        metric=MetricInfo("accuracy", 0.0, 1.0),
    )
