"""Generic tables: CSV, TSV, Parquet and JSON Lines (plain or gzipped), item- or unit-level."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import polars as pl

from evalstats.errors import IngestError, ParameterError
from evalstats.io._columns import ALIASES, parse_mapping, resolve_roles
from evalstats.io._files import expand_paths, scan_file, skipped_note, table_suffix
from evalstats.io._pipeline import Check, OnInvalid, ScoreScale, finalize, validate_options
from evalstats.io._report import Ingest
from evalstats.schema import variant_key

__all__ = ["read_table"]


def read_table(
    path: str | Path | Sequence[str | Path],
    *,
    columns: str | Mapping[str, str] | None = None,
    dataset: str | None = None,
    model: str | None = None,
    metric: str | None = None,
    on_invalid: OnInvalid = "error",
    score_scale: ScoreScale = "auto",
) -> Ingest:
    r"""Read generic tables of scored outputs into the observation table.

    Parameters
    ----------
    path : str, Path or sequence of them
        A file, a glob pattern, or a folder (every table file below it).
    columns : str or mapping, optional
        Explicit roles, ``{"prompt_id": "variant", "acc": "score"}`` or the string
        ``"prompt_id=variant,acc=score"``. Roles: ``model, dataset, item, variant, run, score,
        n_items, answer, response, gold, input_text, input_len, output_len, latency_s, error``,
        ``factor`` (keep as a factor column) and ``ignore``. Unmapped columns are recognised by
        alias (``doc_id`` is an item, ``epoch`` a run, ``correct`` a score, ...; see
        :data:`evalstats.io._columns.ALIASES`); the rest become factor columns.
    dataset : str, optional
        Dataset name when the table has no dataset column (default: the file name's stem).
    model : str, optional
        Model name when the table has no model column.
    metric : str, optional
        Metric name when the table has no ``metric`` column (default: the name of the score
        column, ``score`` when it is called so). A long table with several metrics has a
        ``metric`` column, and may carry ``metric_low``, ``metric_high`` and
        ``higher_is_better`` (see :mod:`evalstats.schema`).
    on_invalid : {'error', 'skip'}, default 'error'
        Raise on the first invalid row (missing or non-numeric score, a score outside its
        metric's declared range, missing model or item, duplicate row), or set such rows aside
        and count them in the report. Non-finite scores (NaN, inf) are always set aside and
        counted.
    score_scale : {'auto', 'unit', 'percent'} or float, default 'auto'
        See :func:`evalstats.io._pipeline.finalize`: scores stay as they are unless
        ``percent`` or a divisor is given; ``auto`` notes files that look like percentages.
        Booleans and ``"True"``/``"False"`` become 1/0.

    Returns
    -------
    Ingest
        ``(observations, report)``. Without an item column each row is a unit score (optionally
        with ``n_items``).

    Raises
    ------
    IngestError
        A file cannot be read, or a row is invalid and ``on_invalid='error'``.
    SchemaError
        A mapped column does not exist.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "mmlu.csv").write_text("model,doc_id,prompt,correct\nA,1,p1,True\nA,2,p1,False\n")
    >>> obs, report = read_table(d / "mmlu.csv")
    >>> obs.select("model", "dataset", "metric", "item", "variant", "score").collect().rows()
    [('A', 'mmlu', 'correct', '1', 'p1', 1.0), ('A', 'mmlu', 'correct', '2', 'p1', 0.0)]
    >>> report.rows_read, report.rows_kept
    (2, 2)
    """
    validate_options(on_invalid, score_scale)
    mapping = parse_mapping(columns)
    _hidden: list[Path] = []
    bad_json = False
    files = expand_paths(path, skipped=_hidden)
    parts = []
    notes: list[str] = []
    factor_order: list[str] = []
    row_cols: list[str] = []
    source_names: dict[str, str] = {}
    for f in files:
        lf = scan_file(
            f, text_columns=[k for k, v in mapping.items() if v not in ("factor", "ignore")]
        )
        names = lf.collect_schema().names()
        flagged = "__bad_json" in names
        if flagged:
            names = [n for n in names if n != "__bad_json"]
            bad_json = True
            if not names:  # no line of the file is a JSON object
                raise IngestError(
                    "no line is a JSON object (line 1 is not); expected one JSON object per "
                    "line (JSON Lines).",
                    path=str(f),
                    row=1,
                )
        renames, factors = resolve_roles(names, mapping, path=str(f))
        alias = next((k for k, v in renames.items() if v == "variant"), None)
        if alias is not None and factors and alias not in mapping and alias.lower() != "variant":
            # `template` next to `shots`: both are factors of the variant, by name
            del renames[alias]
            factors = [n for n in names if n == alias or n in factors]
        schema = lf.collect_schema()
        nested = [c for c in factors if schema[c].is_nested() and c not in mapping]
        if nested:  # JSON objects or lists (an event log read as a table): no factor level
            factors = [c for c in factors if c not in nested]
            note = f"columns holding lists or objects left out: {', '.join(nested)}"
            if note not in notes:
                notes.append(note)
        for src, role in renames.items():
            source_names.setdefault(role, src)
        keep = list(renames) + factors + (["__bad_json"] if flagged else [])
        # a factor named like a canonical column (`--columns model=factor`) gets a suffix, so the
        # canonical column (e.g. another column mapped to 'model') and the factor can coexist
        clash = {c: f"{c}_factor" for c in factors if c in ALIASES}
        lf = lf.select(keep).rename(
            {k: ("__input_text" if v == "input_text" else v) for k, v in renames.items()} | clash
        )
        factors = [clash.get(c, c) for c in factors]
        read_cols = [("__input_text" if v == "input_text" else v) for v in renames.values()]
        for c in (*read_cols, *factors):
            if c not in row_cols:
                row_cols.append(c)
        if "variant" in renames.values() and factors:
            # the factor columns are part of the variant, always: a table with a variant column
            # and `shots` must not merge (or call duplicates) rows that differ in `shots`
            lf = lf.with_columns(
                pl.concat_str(
                    [pl.col("variant").cast(pl.String).fill_null("null"), variant_key(factors)],
                    separator="|",
                ).alias("variant")
            )
            note = f"variant = {source_names.get('variant', 'variant')} | {', '.join(factors)}"
            if note not in notes:
                notes.append(note)
        for col, new in clash.items():  # not `f`: that is the file being read
            note = f"column {col!r} kept as factor {new!r} (its name is a canonical column)"
            if note not in notes:
                notes.append(note)
        if "dataset" not in renames.values():
            name = dataset if dataset is not None else _stem(f)
            lf = lf.with_columns(pl.lit(name, dtype=pl.String).alias("dataset"))
        if "model" not in renames.values() and model is not None:
            lf = lf.with_columns(pl.lit(model, dtype=pl.String).alias("model"))
        if "item" in renames.values():
            lf = lf.with_columns(pl.col("item").cast(pl.String))
        if "metric" in renames.values():
            if metric is not None:
                raise ParameterError(
                    f"{f}: `metric` names the metric of a table without a metric column, but "
                    f"column {source_names.get('metric', 'metric')!r} gives it; drop one."
                )
        else:
            src = next((k for k, v in renames.items() if v == "score"), None)
            name = metric if metric is not None else (src if src is not None else "score")
            lf = lf.with_columns(pl.lit(name, dtype=pl.String).alias("metric"))
        for fac in factors:
            if fac not in factor_order:
                factor_order.append(fac)
        parts.append((str(f), lf))
        mapped = ", ".join(f"{k}->{v}" for k, v in renames.items() if k != v)
        if mapped:
            note = f"column roles: {mapped}"
            if note not in notes:
                notes.append(note)
    return finalize(
        parts,
        format="table",
        on_invalid=on_invalid,
        score_scale=score_scale,
        factors=factor_order,
        checks=(
            [
                Check(
                    "bad_json",
                    pl.col("__bad_json").fill_null(False),
                    message="the line is not a JSON object (JSON Lines: one object per line)",
                )
            ]
            if bad_json
            else []
        )
        + [
            Check(
                "blank_line",
                pl.all_horizontal([pl.col(c).is_null() for c in row_cols]),
                quirk=True,
                message="a blank line (every column empty)",
            )
        ]
        if row_cols
        else [],
        notes=[*notes, *filter(None, [skipped_note(_hidden)])],
        source_names=source_names,
    )


def _stem(path: Path) -> str:
    suf = table_suffix(path) or path.suffix
    name = path.name
    return name[: -len(suf)] if suf and name.lower().endswith(suf) else path.stem
