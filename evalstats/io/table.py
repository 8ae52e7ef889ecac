"""Generic tables: CSV, TSV, Parquet and JSON Lines (plain or gzipped), item- or unit-level."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import polars as pl

from evalstats._column_rules import ColumnRule, classify, normal_name
from evalstats._frames import TableLike, describe, is_table, to_polars
from evalstats.errors import IngestError, ParameterError
from evalstats.io._columns import (
    ALIASES,
    FACTOR_ROLES,
    IGNORE_ROLES,
    parse_mapping,
    resolve_roles,
)
from evalstats.io._errors import fold_error_columns
from evalstats.io._files import (
    duplicate_json_keys,
    expand_paths,
    scan_file,
    skipped_note,
    table_suffix,
)
from evalstats.io._grades import grade_columns, grade_score, number_runs, status_error
from evalstats.io._pipeline import Check, OnInvalid, ScoreScale, finalize, validate_options
from evalstats.io._report import Ingest
from evalstats.schema import variant_key

__all__ = ["read_table"]


def read_table(
    path: str | Path | Sequence[str | Path] | TableLike,
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
    path : str, Path, sequence of them, or a table in memory
        A file, a glob pattern, or a folder (every table file below it); or a polars, pandas or
        pyarrow table, read by the same rules as a file (see :mod:`evalstats._frames`): its
        rows are counted, and messages name it (``pandas DataFrame, row 3``) where they
        would name a file.
    columns : str or mapping, optional
        Explicit roles, ``{"prompt_id": "variant", "acc": "score"}`` or the string
        ``"prompt_id=variant,acc=score"``. Roles: ``model, dataset, item, variant, run, score,
        n_items, answer, response, gold, input_text, input_len, output_len, latency_s, error``,
        ``factor`` (keep as a factor column) and ``ignore``. Unmapped columns are recognised by
        alias (``doc_id`` is an item, ``epoch`` a run, ``correct`` a score, ...; see
        :data:`evalstats.io._columns.ALIASES`); the rest become factor columns.
    dataset : str, optional
        Dataset name when the table has no dataset column (default: the file name's stem;
        ``'data'`` for a table in memory).
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
    parts = []
    notes: list[str] = []
    factor_order: list[str] = []
    row_cols: list[str] = []
    row_seen: set[str] = set()
    factor_seen: set[str] = set()
    source_names: dict[str, str] = {}
    opened = []
    run_notes: list[str | None] = []  # per file: its repeated calls numbered (see _grades)
    constants: list[dict[str, object]] = []  # per file: columns set to one value here
    statuses: dict[str, str] = {}  # file -> its grade column, whose statuses are errors
    text_columns = [k for k, v in mapping.items() if v not in FACTOR_ROLES | IGNORE_ROLES]
    for f, lf in _sources(path, text_columns, _hidden):
        names = lf.collect_schema().names()
        if FILE_ROLE in mapping and FILE_ROLE not in names:
            # `--roles file=model`: the file's name (its stem) as a column, for layouts of one
            # file per model, dataset or variant that name it nowhere inside
            lf = lf.with_columns(pl.lit(_stem(f), dtype=pl.String).alias(FILE_ROLE))
            names = [*names, FILE_ROLE]
        # how each call ended (error text, HTTP status, finish reason): one `error` column
        lf, names, folded = fold_error_columns(lf, names, explicit=list(mapping))
        if folded and folded not in notes:
            notes.append(folded)
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
        if str(f).lower().endswith((".jsonl", ".ndjson", ".jsonl.gz", ".ndjson.gz")):
            repeated = duplicate_json_keys(f)
            if repeated:
                notes.append(repeated)
        renames, factors = resolve_roles(names, mapping, path=str(f))
        lf, renames, factors, graded = _read_grades(lf, renames, factors, mapping)
        if graded is not None:
            statuses[str(f)] = graded
            note = f"column {graded!r} holds grade letters: C = 1, I = 0, P = 0.5, N = 0"
            if note not in notes:
                notes.append(note)
        opened.append((f, lf, names, flagged, renames, factors))
    decided, rules = _leftover_roles(opened, mapping, dataset)
    notes.extend(_role_notes(rules, decided))
    explicit_variant = next((k for k, v in mapping.items() if v == "variant"), None)
    varying = (
        _varying_within(opened, explicit_variant, decided)
        if explicit_variant is not None
        else set()
    )
    for f, lf, names, flagged, renames, factors in opened:
        renames = dict(renames)
        present = set(names)
        for src, role in decided.items():  # outputs named like answer/gold take a free role
            if src in present and role in ALIASES and src not in renames:
                renames[src] = role
        factors = [c for c in factors if decided.get(c, "factor") == "factor"]
        alias = next((k for k, v in renames.items() if v == "variant"), None)
        if alias is not None and decided.get(alias, "factor") != "factor":
            del renames[alias]  # an alias of the variant that is not one (see _leftover_roles)
            alias = None
        if alias is not None and factors and alias not in mapping and alias.lower() != "variant":
            # `template` next to `shots`: both are factors of the variant, by name
            del renames[alias]
            factors = [n for n in names if n == alias or n in factors]
        if str(f) in statuses:
            lf, renames = _status_errors(lf, renames, statuses[str(f)], decided, rules)
        numbered = None
        if "run" not in renames.values() and "item" in renames.values():
            key = [k for k, v in renames.items() if v in ("model", "dataset", "metric", "item")]
            key += [k for k, v in renames.items() if v == "variant"] + factors
            lf, numbered = number_runs(lf, key)
            if numbered is not None:
                renames["run"] = "run"
        run_notes.append(numbered)
        schema = lf.collect_schema()
        nested = [c for c in factors if schema[c].is_nested() and c not in mapping]
        if nested:  # JSON objects or lists (an event log read as a table): no factor level
            factors = [c for c in factors if c not in nested]
            note = f"columns holding lists or objects left out: {', '.join(nested)}"
            if note not in notes:
                notes.append(note)
        for src, role in renames.items():
            # the error of a grade column's status rows is named by that column
            source_names.setdefault(
                role, statuses.get(str(f), src) if src.startswith("__") else src
            )
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
            if c not in row_seen:  # a set beside the list: tables of thousands of columns
                row_seen.add(c)
                row_cols.append(c)
        appended = factors
        if "variant" in renames.values() and explicit_variant is not None:
            # an explicit variant column is the variant: a factor joins its key only where it
            # takes several values within one variant (else two rows would be one unit)
            appended = [c for c in factors if c in varying]
        if "variant" in renames.values() and appended and _variant_is_key(lf, appended):
            # the variant is already the key of the factor columns (a table evalstats wrote):
            # appending them again would only write every label twice
            appended = []
        if "variant" in renames.values() and appended:
            # the factor columns are part of the variant: a table with a variant column and
            # `shots` must not merge (or call duplicates) rows that differ in `shots`
            lf = lf.with_columns(
                pl.concat_str(
                    [pl.col("variant").cast(pl.String).fill_null("null"), variant_key(appended)],
                    separator="|",
                ).alias("variant")
            )
            note = f"variant = {source_names.get('variant', 'variant')} | {', '.join(appended)}"
            if appended is not factors:
                note += " (they vary within it)"
            if note not in notes:
                notes.append(note)
        for col, new in clash.items():  # not `f`: that is the file being read
            note = f"column {col!r} kept as factor {new!r} (its name is a canonical column)"
            if note not in notes:
                notes.append(note)
        const: dict[str, object] = {}
        if "dataset" not in renames.values():
            name = dataset if dataset is not None else _stem(f)
            lf = lf.with_columns(pl.lit(name, dtype=pl.String).alias("dataset"))
            const["dataset"] = name
        if "model" not in renames.values() and model is not None:
            lf = lf.with_columns(pl.lit(model, dtype=pl.String).alias("model"))
            const["model"] = model
        elif model is not None:  # never ignored without a word: the file names its models
            note = (
                f"`model` {model!r} not used for {getattr(f, 'name', f)}: its column "
                f"{source_names.get('model', 'model')!r} names the models (`model` names the "
                "model of a table without one; to keep one model, filter the table)"
            )
            if note not in notes:
                notes.append(note)
        for key in ("item", "cluster"):
            if key in renames.values():
                if key == "item" and lf.collect_schema()["item"].is_integer():
                    # whole-number items stay numbers until the observation table (each number
                    # has one spelling: grouped, compared and ordered as numbers, the same rows)
                    continue
                lf = lf.with_columns(pl.col(key).cast(pl.String))
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
            const["metric"] = name
        for fac in factors:
            if fac not in factor_seen:
                factor_seen.add(fac)
                factor_order.append(fac)
        parts.append((str(f), lf))
        constants.append(const)
        mapped = ", ".join(
            f"{k}->{v}" for k, v in renames.items() if k != v and not k.startswith("__")
        )
        if mapped:
            note = f"column roles: {mapped}"
            if note not in notes:
                notes.append(note)
    if run_notes and all(run_notes):
        # every file's cells are repeated calls: numbered as runs, said once
        notes.extend(dict.fromkeys(n for n in run_notes if n is not None))
    elif any(run_notes):
        # a file with single calls (or a run column) beside them: repeated rows stay duplicates,
        # as across files (the first row in file order is kept)
        parts = [
            (p, lf.drop("run", strict=False)) if n else (p, lf)
            for (p, lf), n in zip(parts, run_notes)
        ]
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
        constants=constants,
        column_rules=_rename_rules(source_names, mapping, rules)
        + _given_rules(mapping)
        + _report_rules(rules, decided),
    )


def _read_grades(
    lf: pl.LazyFrame, renames: dict[str, str], factors: list[str], mapping: Mapping[str, str]
) -> tuple[pl.LazyFrame, dict[str, str], list[str], str | None]:
    """The score read from grade letters (see :mod:`evalstats.io._grades`), if a column has them.

    The score column when it holds only grades (and call statuses), else the one column of the
    file that does. The grade column's raw values are kept as ``__grade_status`` for
    :func:`_status_errors`. Returns the frame, roles, factors and the grade column (or None).
    """
    src = next((k for k, v in renames.items() if v == "score"), None)
    if src is not None:
        found = grade_columns(lf, [src])
    else:
        free = [c for c in factors if c not in mapping]
        found = grade_columns(lf, free)
        if len(found) != 1:  # none, or several: which one is the score is not ours to guess
            return lf, renames, factors, None
        src = found[0]
        renames = {**renames, src: "score"}
        factors = [c for c in factors if c != src]
    if not found:
        return lf, renames, factors, None
    lf = lf.with_columns(pl.col(src).cast(pl.String).alias("__grade_status"), grade_score(src))
    for role, bound in (("metric_low", 0.0), ("metric_high", 1.0)):  # grades lie in [0, 1]
        if role not in renames.values():
            lf = lf.with_columns(pl.lit(bound).alias(f"__grade_{role}"))
            renames = {**renames, f"__grade_{role}": role}
    return lf, renames, factors, src


def _status_errors(
    lf: pl.LazyFrame,
    renames: dict[str, str],
    graded: str,
    decided: Mapping[str, str],
    rules: Mapping[str, ColumnRule],
) -> tuple[pl.LazyFrame, dict[str, str]]:
    """The ``error`` of rows whose grade column holds a status, with the row's free text.

    The text is the response column, else the columns left out as free text (near-unique or
    long strings), where producers write the API's message. An error column of the file keeps
    its value where it has one.
    """
    text = [k for k, v in renames.items() if v == "response"]
    if not text:
        text = [
            c
            for c, how in decided.items()
            if how == "drop" and c in rules and rules[c].role == "text"
        ]
    names = set(lf.collect_schema().names())
    err = status_error("__grade_status", [c for c in text if c in names])
    old = next((k for k, v in renames.items() if v == "error"), None)
    if old is not None:
        err = pl.coalesce(pl.col(old).cast(pl.String), err)
        renames = {k: v for k, v in renames.items() if k != old}
    lf = lf.with_columns(err.alias("__status_error"))
    return lf, {**renames, "__status_error": "error"}


def _leftover_roles(
    opened: list, mapping: Mapping[str, str], dataset: str | None
) -> tuple[dict[str, str], dict[str, ColumnRule]]:
    """Decide, over all files at once, what each unmapped leftover column is.

    Returns ``{column: 'factor' | 'drop' | <canonical role>}`` and the rule (with its evidence)
    of each column classified (see :mod:`evalstats._column_rules`). A column named like an
    output or a reference takes the canonical role ``answer``, ``response`` or ``gold`` when no
    other column of every file has it; other text and metadata are left out of the table.
    """
    found: dict[str, None] = {}
    for _f, _lf, _names, _flagged, renames, factors in opened:
        for c in factors:
            if c not in mapping:
                found.setdefault(c)
        for c, role in renames.items():
            # a variant read from a documented alias (template, prompt_id) is judged by its
            # structure too: one value per item is not a prompt variant
            if role == "variant" and c not in mapping and c.lower() != "variant":
                found.setdefault(c)
    candidates = list(found)
    if not candidates:
        return {}, {}
    frames = []
    for f, lf, _names, _flagged, renames, factors in opened:
        back = {v: k for k, v in renames.items()}
        keys = [
            (pl.col(back[k]).cast(pl.String) if k in back else pl.lit(None, dtype=pl.String)).alias(
                f"__k_{k}"
            )
            for k in ("model", "item")
        ]
        keys.append(
            (
                pl.col(back["score"]).cast(pl.Float64, strict=False)
                if "score" in back
                else pl.lit(None, dtype=pl.Float64)
            ).alias("__k_score")
        )
        keys.append(
            (pl.col(back["run"]).cast(pl.String) if "run" in back else pl.lit("0")).alias("__k_run")
        )
        ds = (
            pl.col(back["dataset"]).cast(pl.String)
            if "dataset" in back
            else pl.lit(dataset if dataset is not None else _stem(f), dtype=pl.String)
        )
        mine = set(factors) | set(renames)
        cols = [*keys, ds.alias("__k_dataset"), *[c for c in candidates if c in mine]]
        # a row without a score is set aside by the accounting: it says nothing of the design
        src = lf.filter(pl.col(back["score"]).is_not_null()) if "score" in back else lf
        frames.append(src.select(cols))
    frame = pl.concat(frames, how="diagonal_relaxed") if len(frames) > 1 else frames[0]
    has_item = any("item" in r.values() for *_, r, _fs in opened)
    try:
        rules = classify(
            frame,
            candidates,
            item="__k_item" if has_item else None,
            within=("__k_model", "__k_dataset"),
            score="__k_score",
            run="__k_run",
        )
    except (pl.exceptions.PolarsError, OSError):
        # an unreadable file (bad UTF-8, a broken line): the accounting pass that follows
        # names its file and row; until then every leftover column stays a factor
        return {}, {}
    taken = set.intersection(*(set(r.values()) for *_, r, _fs in opened))
    decided: dict[str, str] = {}
    for c, rule in rules.items():
        if rule.role in ("prompt", "setting", "fixed"):
            decided[c] = "factor"  # fixed: kept, though no analysis varies it
            continue
        decided[c] = "drop"
        if rule.role == "text" and rule.n_values is None:  # by name: an output or a reference
            role = _output_role(c)
            if role is not None and role not in taken:
                decided[c] = role
                taken.add(role)
    aliases = {c for *_, r, _fs in opened for c, role in r.items() if role == "variant"}
    # a variant alias that is one (it varies within items) keeps its alias rule in the report
    rules = {c: r for c, r in rules.items() if not (c in aliases and decided[c] == "factor")}
    return decided, rules


def _rename_rules(
    source_names: Mapping[str, str], mapping: Mapping[str, str], rules: Mapping[str, ColumnRule]
) -> list[ColumnRule]:
    """A rule for each source column read under a canonical name (``question_id`` -> item)."""
    out = []
    for role, src in source_names.items():
        if src in rules:  # an output named like answer/gold: its own rule says why
            continue
        if src in mapping:
            why = "given (--columns or --roles)"
        elif src == role or role == "input_text" and src.lower() == role:
            why = "its name"
        else:
            why = f"a documented alias of {role}"
        out.append(ColumnRule(src, role, why))
    return out


def _given_rules(mapping: Mapping[str, str]) -> list[ColumnRule]:
    """The roles given for columns kept as factors or left out (``--columns x=setting``)."""
    out = []
    for src, role in mapping.items():
        if role in FACTOR_ROLES:
            out.append(ColumnRule(src, "setting" if role == "setting" else "prompt", _GIVEN))
        elif role in IGNORE_ROLES:
            out.append(ColumnRule(src, "metadata" if role == "metadata" else "text", _GIVEN))
    return out


_GIVEN = "given (--columns or --roles)"


def _report_rules(rules: Mapping[str, ColumnRule], decided: Mapping[str, str]) -> list[ColumnRule]:
    """The rules as the report keeps them: a column given a canonical role says so."""
    out = []
    for c, rule in rules.items():
        how = decided.get(c, "factor")
        if how in ("factor", "drop"):
            out.append(rule)
        else:
            out.append(ColumnRule(c, how, f"{rule.evidence}; read as {how!r}", rule.n_values))
    return out


def _output_role(name: str) -> str | None:
    words = set(normal_name(name).split("_"))
    if words & {"gold", "label", "target", "reference", "expected", "solution"}:
        return "gold"
    if words & {"answer", "pred", "prediction", "predicted"}:
        return "answer"
    if words & {"response", "output", "completion", "generation", "generated"}:
        return "response"
    return None


def _role_notes(rules: Mapping[str, ColumnRule], decided: Mapping[str, str]) -> list[str]:
    notes = []
    guessed = [
        f"{c} ({rule.n_values} values)"
        for c, rule in rules.items()
        if decided.get(c) == "factor" and "not a known name" in rule.evidence
    ]
    if guessed:
        notes.append(
            "taken as prompt dimensions (names evalstats does not know, few values that vary "
            f"within items): {', '.join(guessed)}; say otherwise with --roles NAME=setting|text"
        )
    dropped = [
        f"{c} ({rule.role}: {rule.evidence})"
        for c, rule in rules.items()
        if decided.get(c) == "drop"
    ]
    if dropped:
        notes.append(f"left out (no analysis reads them): {'; '.join(dropped)}")
    return notes


def _varying_within(opened: list, variant: str, decided: Mapping[str, str]) -> set[str]:
    """Factor columns that take several values within one value of the ``variant`` column."""
    frames = []
    factors: list[str] = []
    for _f, lf, names, _flagged, _renames, fs in opened:
        mine = [c for c in fs if decided.get(c, "factor") == "factor" and c != variant]
        factors += [c for c in mine if c not in factors]
        if variant in names:
            frames.append(lf.select(pl.col(variant).cast(pl.String), *mine))
    if not frames or not factors:
        return set()
    frame = pl.concat(frames, how="diagonal_relaxed") if len(frames) > 1 else frames[0]
    row = (
        frame.group_by(variant)
        .agg(pl.col(c).n_unique() for c in factors)
        .select(pl.col(c).max() for c in factors)
        .collect()
        .row(0, named=True)
    )
    return {c for c in factors if (row[c] or 0) > 1}


def _variant_is_key(lf: pl.LazyFrame, factors: list[str]) -> bool:
    """Whether ``variant`` is ``name=value|...`` of ``factors`` on every row.

    Compared without case: a boolean factor reads back as ``false`` where Python wrote it
    ``False``.
    """
    try:
        key = variant_key(factors).str.to_lowercase()
        same = pl.col("variant").cast(pl.String).str.to_lowercase() == key
        return bool(lf.select(same.fill_null(False).all()).collect().item())
    except (pl.exceptions.PolarsError, OSError):  # an unreadable file: the accounting pass names it
        return False


#: Dataset name of a table in memory that has no dataset column (a file gives its name).
FRAME_DATASET = "data"


class _Frame(str):
    """The name of a table in memory where a file's path would be (messages, the report)."""


def _sources(
    path: str | Path | Sequence[str | Path] | TableLike, text_columns: list[str], hidden: list[Path]
) -> list[tuple[Path | _Frame, pl.LazyFrame]]:
    """``(file, lazy frame)`` per file of ``path``, or the one table in memory."""
    if is_table(path):
        return [(_Frame(describe(path)), to_polars(path).lazy())]
    return [
        (f, scan_file(f, text_columns=text_columns)) for f in expand_paths(path, skipped=hidden)
    ]


#: The name ``--roles`` gives the file itself (``file=model``, ``file=dataset``, ``file=variant``).
FILE_ROLE = "file"


def _stem(path: Path | _Frame) -> str:
    if isinstance(path, _Frame):
        return FRAME_DATASET
    suf = table_suffix(path) or path.suffix
    name = path.name
    return name[: -len(suf)] if suf and name.lower().endswith(suf) else path.stem
