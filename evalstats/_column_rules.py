"""Rules that decide what a column of a dump *is*: a design dimension, or text that rides along.

A prediction dump carries, besides the model, item and score, columns of three kinds:

* **design dimensions** that say how an output was produced: prompt factors (template,
  paraphrase, shots, ...) and settings (temperature, provider, ...);
* **item attributes**: the same value on every row of an item (its subject, its source
  passage): never a prompt dimension, possibly a cluster of items;
* **text and metadata**: the model's own output, the reference answer, the item text, per-call
  timings, token counts, harness settings (a request timeout, an agent URL, a retry count).
  No analysis uses them as a factor: a column with 2,878 distinct values in 2,880 rows is not
  2,878 prompt variants.

:func:`classify` applies the rules below, in this order, to the columns that no explicit role
and no documented alias claimed; each decision carries its evidence as a sentence. Every rule
is stated in ``docs/design.md`` with a real example.

1. a known prompt dimension, decoding or serving setting name (:mod:`evalstats.factors`) keeps
   that role;
2. a name that says *output or reference* (``answer``, ``prediction``, ``completion``,
   ``gold``, ``label``, ``target``, ``explanation``, ...) is text;
3. a name that says *timing, size or harness setting* (``latency``, ``*_ms``, ``tokens``,
   ``timeout``, ``url``, ``retries``, ``max_connections``, a harness seed) is metadata;
4. nested values (lists, objects) are metadata;
5. near-unique values (at least half as many distinct values as rows, and more than
   :data:`NEAR_UNIQUE_MIN`) are text, in an item-level table (a prompt is run on many items);
   in a unit-level table (one row per model and variant) a known prompt name keeps its role;
6. long strings (mean length above :data:`LONG_TEXT_CHARS` characters) with many values (at
   least :data:`NEAR_UNIQUE_MIN`) are free text; a long string with few values is a prompt
   spelled out (a system prompt, a template), not free text;
7. non-integer numbers with more than :data:`MEASUREMENT_MIN` distinct values are a
   measurement (metadata);
8. a column constant within every item (while items have several rows) is an item attribute;
9. anything else is taken as a prompt dimension (``other``), and the design says so.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import polars as pl

from evalstats._frames import in_memory
from evalstats.factors import factor_role

__all__ = [
    "LONG_TEXT_CHARS",
    "MEASUREMENT_MIN",
    "NEAR_UNIQUE_MIN",
    "OUTCOME_ROWS_PER_VALUE",
    "RUN_CROSSING_MIN",
    "ColumnRule",
    "by_name",
    "classify",
    "normal_name",
]

#: Fewer distinct values than this never make a column "near-unique" or free text (a 40-row
#: table with 30 prompts is a table of prompts; 3 system prompts spelled out are 3 prompts).
NEAR_UNIQUE_MIN = 50

#: Fewest rows per value (of the column or the score, whichever has more) before a column that
#: goes with the score is called an outcome: in 12 rows two temperatures can line up with two
#: scores by chance.
OUTCOME_ROWS_PER_VALUE = 10

#: In a table without items, the least share of the (value, run) pairs a prompt dimension
#: crossed with the runs would give, for a column that varies within a group to be one.
RUN_CROSSING_MIN = 0.9

#: Mean string length above which a column is free text, not a factor level.
LONG_TEXT_CHARS = 40

#: Distinct non-integer numbers above which a column is a measurement, not a setting.
MEASUREMENT_MIN = 20


#: Name words of model outputs and references (a whole ``_``-separated word of the name).
_OUTPUT_WORDS = frozenset(
    {
        "answer",
        "answers",
        "pred",
        "preds",
        "prediction",
        "predictions",
        "predicted",
        "output",
        "outputs",
        "response",
        "responses",
        "completion",
        "completions",
        "generation",
        "generated",
        "gold",
        "label",
        "labels",
        "target",
        "targets",
        "reference",
        "references",
        "expected",
        "solution",
        "explanation",
        "rationale",
        "reasoning",
        "justification",
        "feedback",
        "critique",
        "judgement",
        "judgment",
        "text",
        "question",
        "context",
        "passage_text",
        "transcript",
        "trace",
        "log",
        "stderr",
        "stdout",
        "traceback",
    }
)

#: Name words of timings, sizes, costs and fingerprints: metadata even next to a prompt word
#: (``prompt_tokens``, ``prompt_hash``).
_MEASURE_WORDS = frozenset(
    {
        "latency",
        "duration",
        "elapsed",
        "timestamp",
        "datetime",
        "ms",
        "sec",
        "secs",
        "seconds",
        "tokens",
        "token",
        "usage",
        "cost",
        "price",
        "chars",
        "characters",
        "bytes",
        "hash",
        "sha",
        "sha256",
        "md5",
        "uuid",
        "guid",
    }
)

#: Name words of a prompt dimension (``user_prompt``, ``template_name``, ``shot_count``).
_PROMPT_WORDS = frozenset(
    {
        "prompt",
        "prompts",
        "template",
        "templates",
        "instruction",
        "instructions",
        "paraphrase",
        "paraphrases",
        "shot",
        "shots",
        "fewshot",
        "demo",
        "demos",
        "demonstrations",
        "persona",
        "cot",
        "wording",
        "phrasing",
        "format",
        "style",
        "separator",
        "enumerator",
    }
)

#: Name words of bookkeeping fields (weaker than a prompt word).
_METADATA_WORDS = frozenset(
    {
        "time",
        "timing",
        "date",
        "created",
        "started",
        "finished",
        "length",
        "len",
        "size",
        "count",
        "words",
        "path",
        "file",
        "filename",
        "host",
        "hostname",
        "port",
        "pid",
        "commit",
        "status",
    }
)

#: Harness and serving settings that change neither the prompt nor the decoding.
_HARNESS_WORDS = frozenset(
    {
        "timeout",
        "timeouts",
        "url",
        "urls",
        "uri",
        "retry",
        "retries",
        "attempt",
        "attempts",
        "connections",
        "connection",
        "concurrency",
        "parallel",
        "parallelism",
        "workers",
        "threads",
        "cache",
        "sandbox",
    }
)
#: Seeds of the harness (data order, numpy, torch): not the sampling seed of the model.
_HARNESS_SEEDS = frozenset({"random_seed", "numpy_seed", "torch_seed", "harness_seed", "data_seed"})


def normal_name(name: str) -> str:
    """``name`` lower-cased with runs of non-alphanumerics as ``_`` (``Latency (ms)`` -> ``latency_ms``)."""
    return re.sub(r"[^0-9a-z]+", "_", name.strip().lower()).strip("_")


def _words(name: str) -> list[str]:
    # split camelCase too: requestTimeout -> request_timeout
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)
    return [w for w in normal_name(spaced).split("_") if w]


@dataclass(frozen=True, slots=True)
class ColumnRule:
    """What a column is, and why.

    Attributes
    ----------
    column : str
        The column's name.
    role : str
        ``prompt`` (a prompt dimension), ``setting`` (a decoding or serving setting, held
        fixed and analysed per value), ``item_attribute`` (the same on every row of an item),
        ``text`` (model output, reference, free text: no analysis uses it) or ``metadata``
        (timings, sizes, harness settings: no analysis uses it).
    evidence : str
        The sentence that says why (shown by ``evalstats design``).
    n_values : int or None
        Distinct values (None when the rule was decided by name alone).
    inferred : bool
        A design dimension taken from the values alone (no declaration, no format knowledge,
        no name of the known vocabulary): readings that rest on it say so.
    """

    column: str
    role: str
    evidence: str
    n_values: int | None = None
    inferred: bool = False


def by_name(name: str) -> ColumnRule | None:
    """The role of ``name`` from its name alone (rules 1-3), or None when the name says nothing.

    Examples
    --------
    >>> [by_name(n).role for n in ("template", "temperature", "model_answer", "latency_ms",
    ...                            "request_timeout", "agent_url")]
    ['prompt', 'setting', 'text', 'metadata', 'metadata', 'metadata']
    >>> by_name("subject") is None
    True
    """
    role = factor_role(name)
    if role == "prompt":
        return ColumnRule(name, "prompt", "a known prompt dimension (by name)")
    if role in ("decoding", "deployment"):
        kind = "decoding" if role == "decoding" else "serving"
        return ColumnRule(name, "setting", f"a known {kind} setting (by name)")
    words = _words(name)
    norm = normal_name(name)
    if norm in _HARNESS_SEEDS or norm == "api_key" or any(w in _HARNESS_WORDS for w in words):
        return ColumnRule(
            name, "metadata", "a harness or serving setting (by name): not a prompt dimension"
        )
    if any(w in _MEASURE_WORDS for w in words):
        return ColumnRule(name, "metadata", "a timing, size, cost or fingerprint (by name)")
    if any(w in _PROMPT_WORDS for w in words):
        return ColumnRule(name, "prompt", "names a prompt dimension")
    if any(w in _OUTPUT_WORDS for w in words):
        return ColumnRule(name, "text", "a model output, reference or item text (by name)")
    if any(w in _METADATA_WORDS for w in words):
        return ColumnRule(name, "metadata", "a timing, size or bookkeeping field (by name)")
    return None


def _fmt(n: int) -> str:
    return f"{n:,}"


def _values(n: int) -> str:
    return f"{n:,} value{'s' if n != 1 else ''}"


def _is_numeric(dt: pl.DataType) -> bool:
    return dt.is_numeric() and dt != pl.Boolean


def _correction(column: str) -> str:
    return f"--roles {column}=metadata"


def nested_text(dtype: pl.DataType, *, shown: int = 6) -> str:
    """A nested column's type in words, the same on every read (struct fields sorted).

    polars' JSON schema inference orders a struct's fields as the rows it reads first show them,
    and on real MBSE records (keys in varying order) two reads of one file gave two orders: the
    report's text changed between identical runs.

    Examples
    --------
    >>> nested_text(pl.List(pl.Struct({"b": pl.Int64, "a": pl.String})))
    'lists of objects (fields a, b)'
    >>> nested_text(pl.Struct({}))
    'empty objects'
    """
    if isinstance(dtype, (pl.List, pl.Array)):
        inner = dtype.inner
        what = nested_text(inner, shown=shown) if inner.is_nested() else f"{inner} values"
        return f"lists of {what}"
    if isinstance(dtype, pl.Struct):
        names = sorted(f.name for f in dtype.fields)
        if not names:
            return "empty objects"
        more = f", … {len(names) - shown} more" if len(names) > shown else ""
        return f"objects (fields {', '.join(names[:shown])}{more})"
    return f"{dtype} values"


def classify(
    frame: pl.LazyFrame | pl.DataFrame,
    columns: Sequence[str],
    *,
    item: str | None = "item",
    within: Sequence[str] = ("model", "dataset"),
    score: str | None = "score",
    run: str | None = "run",
) -> dict[str, ColumnRule]:
    """Decide the role of each of ``columns`` of ``frame`` (the rules of the module notes).

    Parameters
    ----------
    frame : polars.LazyFrame or polars.DataFrame
        The table. One grouped pass counts the distinct values of every column within each
        (model, dataset, item) cell; one more pass over the table counts them overall.
    columns : sequence of str
        The columns to classify (those no explicit role or alias claimed).
    item : str or None, default 'item'
        The item column (None or absent: the cells are the groups of ``within``, as in a
        unit-level table of one row per model and variant).
    within : sequence of str, default ('model', 'dataset')
        Columns that, with ``item``, identify a cell: the same item for the same model. The
        first is the model (for model attributes), the second the dataset.
    score : str or None, default 'score'
        The score column, for outcome columns (None or absent: not checked).
    run : str or None, default 'run'
        The run column, for run labels (a column each of whose values belongs to one run of
        a cell that has several is a label of the run, not a prompt dimension).

    Returns
    -------
    dict of str to ColumnRule
        One entry per column of ``columns``, in that order.

    Examples
    --------
    >>> t = pl.DataFrame({"model": ["m"] * 6, "item": ["1", "1", "2", "2", "3", "3"],
    ...                   "prompt_no": [1, 2] * 3, "subject": ["a", "a", "b", "b", "a", "a"],
    ...                   "pred": list("ABCABD"), "score": [1.0, 0.0, 0.0, 1.0, 1.0, 0.0]})
    >>> {k: v.role for k, v in classify(t, ["prompt_no", "subject", "pred"]).items()}
    {'prompt_no': 'prompt', 'subject': 'item_attribute', 'pred': 'text'}
    """
    lf = frame.lazy() if isinstance(frame, pl.DataFrame) else frame
    schema = lf.collect_schema()
    out: dict[str, ColumnRule] = {}
    pending: list[str] = []
    for c in columns:
        rule = by_name(c)
        if rule is not None and rule.role in ("text", "metadata"):
            out[c] = rule
        elif schema[c].is_nested():
            out[c] = ColumnRule(c, "metadata", f"holds {nested_text(schema[c])}")
        else:
            pending.append(c)
    if not pending:
        return {c: out[c] for c in columns}
    keys = [k for k in within if k in schema]
    model_key = within[0] if within and within[0] in schema else None
    has_item = item is not None and item in schema
    cell = [*keys, item] if has_item else keys
    has_score = score is not None and score in schema and score not in pending
    has_run = run is not None and run in schema and run not in pending
    if isinstance(frame, pl.LazyFrame):
        read = list(
            dict.fromkeys(
                [*cell, *pending, *([score] if has_score else []), *([run] if has_run else [])]
            )
        )
        lf = in_memory(lf.select(read), len(read))
    stats = _value_stats(
        lf,
        schema,
        pending,
        cell,
        model_key,
        has_item,
        score if has_score else None,
        run if has_run else None,
    )
    for i, c in enumerate(pending):
        out[c] = _decide(c, schema[c], stats, i, has_item=has_item, has_model=model_key is not None)
    return {c: out[c] for c in columns}


def _value_stats(
    lf: pl.LazyFrame,
    schema: pl.Schema,
    pending: Sequence[str],
    cell: Sequence[str],
    model_key: str | None,
    has_item: bool,
    score: str | None,
    run: str | None = None,
) -> dict[str, object]:
    """Every count the rules read, for every pending column.

    One pass counts, for every column, its values overall and within each cell (and, from the
    cells, within items, models and groups). A second pass, only for the columns that vary
    within a cell and are not already text or a measurement, reads what decides between a
    prompt dimension, an outcome and a label of the run: the score beside the column, and the
    runs its values fall in.
    """
    glob: list[pl.Expr] = [pl.len().alias("__rows")]
    if score is not None:
        glob += [pl.col(score).n_unique().alias("__su")]
    if run is not None:
        glob += [pl.col(run).n_unique().alias("__runs")]
    for i, c in enumerate(pending):
        col = pl.col(c)
        dt = schema[c]
        glob += [col.n_unique().alias(f"__u{i}"), col.null_count().alias(f"__z{i}")]
        if dt == pl.String or dt == pl.Categorical:
            glob.append(col.cast(pl.String).str.len_chars().mean().alias(f"__l{i}"))
        if dt.is_float():
            glob.append(
                col.filter(col.is_finite() & (col != col.round(0))).n_unique().alias(f"__f{i}")
            )
        if _is_numeric(dt):
            glob += [
                col.min().cast(pl.Float64).alias(f"__lo{i}"),
                col.max().cast(pl.Float64).alias(f"__hi{i}"),
            ]
    queries = [lf.select(glob)]
    if cell:
        per_cell = lf.group_by(cell).agg(
            pl.len().alias("__n"),
            *[pl.col(c).n_unique().alias(f"__w{i}") for i, c in enumerate(pending)],
            *[pl.col(c).first().alias(f"__x{i}") for i, c in enumerate(pending)],
        )
        within_q = per_cell.select(
            pl.len().alias("__cells"),
            (pl.col("__n") > 1).sum().alias("__multi"),
            *[(pl.col(f"__w{i}") > 1).sum().alias(f"__w{i}") for i in range(len(pending))],
        )
        queries.append(within_q)
        constant = [pl.col(f"__w{i}") <= 1 for i in range(len(pending))]
        if has_item:
            # the same value on every row of an item, across models (dataset and item)
            item_keys = [k for k in cell if k != model_key]
            queries.append(
                per_cell.group_by(item_keys)
                .agg(
                    *[
                        (pl.col(f"__x{i}").n_unique() <= 1) & constant[i].all()
                        for i in range(len(pending))
                    ]
                )
                .select(pl.col(f"__x{i}").all().alias(f"__i{i}") for i in range(len(pending)))
            )
        if has_item and len(cell) > 1:
            # one value per (model, dataset): a configuration of the run
            queries.append(
                per_cell.group_by(list(cell[:-1]))
                .agg(
                    ((pl.col(f"__x{i}").n_unique() <= 1) & constant[i].all()).alias(f"__g{i}")
                    for i in range(len(pending))
                )
                .select(pl.col(f"__g{i}").all() for i in range(len(pending)))
            )
        if model_key is not None:
            queries.append(
                per_cell.group_by(model_key)
                .agg(
                    pl.len().alias("__mc"),
                    *[
                        ((pl.col(f"__x{i}").n_unique() <= 1) & constant[i].all()).alias(f"__m{i}")
                        for i in range(len(pending))
                    ],
                    *[pl.col(f"__x{i}").first().alias(f"__y{i}") for i in range(len(pending))],
                )
                .select(
                    pl.len().alias("__models"),
                    *[pl.col(f"__m{i}").all() for i in range(len(pending))],
                    *[pl.col(f"__y{i}").n_unique() for i in range(len(pending))],
                )
            )
    rows: dict[str, object] = {}
    for frame in pl.collect_all(queries):
        rows.update(frame.row(0, named=True))
    second = [
        i
        for i, c in enumerate(pending)
        if (not cell or int(rows.get(f"__w{i}") or 0) > 0)
        and not _decided_early(rows, i, schema[c])
    ]
    for i in range(len(pending)):  # without nulls, the values set within a cell are its values
        if not int(rows[f"__z{i}"]):  # type: ignore[call-overload]
            rows[f"__v{i}"] = rows.get(f"__w{i}")
    if second:
        # a run column with one value on every row labels nothing: no run pass
        runs = run if run is not None and int(rows["__runs"]) > 1 else None  # type: ignore[call-overload]
        rows.update(_second_pass(lf, pending, second, cell, score, runs, rows))
    return rows


def _decided_early(st: Mapping[str, object], i: int, dt: pl.DataType) -> bool:
    """Whether column ``i`` is text or a measurement by its counts alone (rules before outcome)."""
    n, k = int(st["__rows"]), int(st[f"__u{i}"])
    mean_len, frac = st.get(f"__l{i}"), st.get(f"__f{i}")
    if k <= 1 or (k >= NEAR_UNIQUE_MIN and 2 * k >= n):
        return True
    if mean_len is not None and mean_len > LONG_TEXT_CHARS and k >= NEAR_UNIQUE_MIN:  # type: ignore[operator]
        return True
    if frac is not None and int(frac) > MEASUREMENT_MIN:  # type: ignore[call-overload]
        return True
    k_set = k - (1 if int(st[f"__z{i}"]) else 0)
    return (
        _is_numeric(dt)
        and k_set > MEASUREMENT_MIN
        and not _id_like(st.get(f"__lo{i}"), st.get(f"__hi{i}"), k_set)  # type: ignore[arg-type]
    )


def _second_pass(
    lf: pl.LazyFrame,
    pending: Sequence[str],
    which: Sequence[int],
    cell: Sequence[str],
    score: str | None,
    run: str | None,
    first: Mapping[str, object],
) -> dict[str, object]:
    """Outcome, run-label and null counts of the columns ``which`` (indices into ``pending``).

    Only what can change a decision is counted: the joint distinct values of a column and the
    score where the two could be one-to-one (as many values as scores), the scores beside its
    nulls where it has some, the values set (nulls left out) where it has nulls, and the runs
    only when a cell has several.
    """
    queries = []
    n = int(first["__rows"])  # type: ignore[call-overload]
    nullable = [i for i in which if int(first[f"__z{i}"])]  # type: ignore[call-overload]
    run_cols = which if run is not None and cell else []
    if (nullable or run_cols) and cell:
        # per cell: the values set (nulls left out; null against one value is not two), and
        # the widths the run counts are read against
        widths = lf.group_by(cell).agg(
            *[pl.col(pending[i]).drop_nulls().n_unique().alias(f"__v{i}") for i in nullable],
            *[pl.col(pending[i]).n_unique().alias(f"__w{i}") for i in run_cols],
        )
        if nullable:
            queries.append(widths.select((pl.col(f"__v{i}") > 1).sum() for i in nullable))
    if score is not None:
        s = pl.col(score)
        su = int(first["__su"])  # type: ignore[call-overload]
        exprs = []
        for i in which:
            col = pl.col(pending[i])
            if int(first[f"__u{i}"]) == su:  # type: ignore[call-overload]
                exprs.append(pl.struct(col, s).n_unique().alias(f"__cs{i}"))
            if 0 < int(first[f"__z{i}"]) < n:  # type: ignore[call-overload]
                exprs += [
                    s.filter(col.is_null()).min().alias(f"__s0lo{i}"),
                    s.filter(col.is_null()).max().alias(f"__s0hi{i}"),
                    s.filter(col.is_not_null()).min().alias(f"__s1lo{i}"),
                    s.filter(col.is_not_null()).max().alias(f"__s1hi{i}"),
                ]
        if exprs:
            queries.append(lf.select(exprs))
    if run_cols:
        # distinct (value, run) pairs of a cell: the sum over its runs of the distinct values
        per_run = lf.group_by([*cell, run]).agg(
            pl.col(pending[i]).n_unique().alias(f"__cr{i}") for i in which
        )
        per_cell = per_run.group_by(cell).agg(
            pl.len().alias("__nr"), *[pl.col(f"__cr{i}").sum() for i in which]
        )
        joined = per_cell.join(widths, on=list(cell), nulls_equal=True)
        both = {i: (pl.col(f"__w{i}") > 1) & (pl.col("__nr") > 1) for i in which}
        queries.append(
            joined.select(
                # cells where the column varies and is not a run label (a run_id, a timestamp:
                # each of its values in one run of a cell that has several)
                *[
                    (
                        (pl.col(f"__w{i}") > 1)
                        & ((pl.col("__nr") <= 1) | (pl.col(f"__cr{i}") > pl.col(f"__w{i}")))
                    )
                    .sum()
                    .alias(f"__nl{i}")
                    for i in which
                ],
                # how fully its values are crossed with the runs where both vary: a prompt's
                # values recur in every run, a per-run measurement's do not
                *[
                    (
                        pl.col(f"__cr{i}").filter(both[i]).sum()
                        / (pl.col(f"__w{i}") * pl.col("__nr")).filter(both[i]).sum()
                    ).alias(f"__cov{i}")
                    for i in which
                ],
            )
        )
    rows: dict[str, object] = {f"__cs{i}": -1 for i in which}  # -1: not one-to-one
    for frame in pl.collect_all(queries) if queries else []:
        rows.update(frame.row(0, named=True))
    return rows


def _id_like(lo: float | None, hi: float | None, k: int) -> bool:
    """Integers that fill their range (0..k-1, 1..k): ids or levels, not a measurement."""
    return lo is not None and hi is not None and hi - lo + 1 == k


def _decide(
    c: str, dt: pl.DataType, st: Mapping[str, object], i: int, *, has_item: bool, has_model: bool
) -> ColumnRule:
    """The role of pending column ``c`` (index ``i`` in the counts ``st``)."""
    n = int(st["__rows"])
    k = int(st[f"__u{i}"])
    nulls = int(st[f"__z{i}"])
    k_set = k - (1 if nulls else 0)  # distinct values other than null
    rule = by_name(c)
    known = factor_role(c) != "other"  # the known vocabulary (template, temperature, ...)
    mean_len = st.get(f"__l{i}")
    frac = st.get(f"__f{i}")
    cells = st.get("__cells")
    cell_word = "(model, dataset, item) cell" if has_item else "(model, dataset) group"
    if k <= 1:
        return ColumnRule(
            c,
            "fixed",
            "one value on every row: held fixed, it tells nothing apart"
            + (f" ({rule.evidence})" if rule is not None else ""),
            k,
        )
    if rule is not None and not has_item:
        # unit-level rows (one per model and variant): a prompt column names the variant of
        # its row, so its values are near-unique by construction
        return ColumnRule(
            c,
            rule.role,
            f"{rule.evidence}; {_values(k)}",
            k,
            inferred=rule.role == "prompt" and not known,
        )
    if frac is not None and int(frac) > MEASUREMENT_MIN and not known:
        return ColumnRule(
            c,
            "measurement",
            f"a measurement: {_fmt(int(frac))} distinct non-integer values",
            k,
        )
    if (
        _is_numeric(dt)
        and not known
        and k_set > MEASUREMENT_MIN
        and not _id_like(st.get(f"__lo{i}"), st.get(f"__hi{i}"), k_set)
    ):
        return ColumnRule(
            c,
            "measurement",
            f"a measurement: {_fmt(k_set)} distinct numbers, not a run of ids or levels "
            f"({st.get(f'__lo{i}'):g} to {st.get(f'__hi{i}'):g})"
            + ("; its name is no evidence against its values" if rule is not None else ""),
            k,
        )
    if k >= NEAR_UNIQUE_MIN and 2 * k >= n:
        return ColumnRule(c, "text", f"near-unique: {_fmt(k)} distinct values in {_fmt(n)} rows", k)
    if mean_len is not None and mean_len > LONG_TEXT_CHARS and k >= NEAR_UNIQUE_MIN:
        return ColumnRule(
            c, "text", f"free text: {mean_len:.0f} characters on average, {_fmt(k)} values", k
        )
    outcome = None if known else _outcome(st, i, n=n, k=k, nulls=nulls)
    if outcome is not None:
        return ColumnRule(c, "outcome", outcome, k)
    if cells is None:  # no model, dataset or item to look within
        if rule is not None:
            return ColumnRule(
                c,
                rule.role,
                f"{rule.evidence}; {_values(k)}",
                k,
                inferred=rule.role == "prompt" and not known,
            )
        return ColumnRule(
            c, "metadata", f"{_values(k)}, and no model, dataset or item to judge it by", k
        )
    cells = int(cells)
    varies = int(st[f"__w{i}"])
    varies_set = int(st.get(f"__v{i}") or 0)
    if varies and int(st.get(f"__nl{i}") or 0) == 0 and st.get(f"__nl{i}") is not None:
        return ColumnRule(
            c,
            "metadata",
            f"a label of the run: {_values(k)}, each of them in one run of a cell that has "
            f"several (say otherwise with --roles {c}=prompt)",
            k,
        )
    cover = st.get(f"__cov{i}")
    if varies and not has_item and cover is not None and cover < RUN_CROSSING_MIN:
        # unit-level rows (no item to look within): a prompt's values recur in every run
        return ColumnRule(
            c,
            "metadata",
            f"{_values(k)} that vary between the runs of one prompt: {cover:.0%} of the "
            "(value, run) pairs a prompt dimension crossed with the runs would give; a "
            f"measurement of each run, not a prompt dimension (say otherwise with --roles "
            f"{c}=prompt)",
            k,
        )
    if varies:
        share = f"{_fmt(varies)} of {_fmt(cells)} {cell_word}s"
        if varies_set == 0 and 2 * nulls > n:
            return ColumnRule(
                c,
                "metadata",
                f"set on {_fmt(n - nulls)} of {_fmt(n)} rows only, and never two values in one "
                f"{cell_word}: bookkeeping of some files or rows, not a prompt dimension (say "
                f"otherwise with --roles {c}=prompt)",
                k,
            )
        if rule is not None:
            return ColumnRule(
                c,
                rule.role,
                f"{rule.evidence}; {_values(k)}, several within {share}",
                k,
                inferred=not known,  # a word inside a longer name is no known vocabulary
            )
        return ColumnRule(
            c,
            "prompt",
            f"inferred from its values: {_values(k)}, several within {share} (the same item "
            f"scored under different values): taken as a prompt dimension (if it is not one: "
            f"{_correction(c)}, or {c}=setting)",
            k,
            inferred=True,
        )
    # never two values for the same item of the same model: not a prompt dimension
    single = int(st.get("__multi") or 0) == 0
    named = (
        f" (named like a {'prompt dimension' if rule.role == 'prompt' else 'setting'}, but "
        "no item is scored under two of its values)"
        if rule is not None
        else ""
    )
    if has_model and st.get(f"__m{i}") and int(st.get(f"__y{i}") or 0) >= 2:
        return ColumnRule(
            c,
            "model_attribute",
            f"the same value on every row of a model, different between models ({_values(k)}): "
            f"an attribute of the model, not a prompt dimension{named}",
            k,
        )
    if st.get(f"__g{i}"):
        # one value per model and dataset (lm-eval's shots of a run, a HELM run's max_tokens):
        # a configuration of the run, held fixed; it splits no group into variants
        return ColumnRule(
            c,
            "fixed",
            f"{_values(k)}, one per model and dataset (an attribute of the group, such as a "
            "run's configuration): held fixed, not a dimension within any group"
            + (f" ({rule.evidence})" if rule else ""),
            k,
        )
    if rule is not None and rule.role == "setting":
        # a setting fixed for each item of a model (a log's temperature): held fixed and
        # analysed per value, which splits no item's rows
        return ColumnRule(
            c, "setting", f"{rule.evidence}; {_values(k)}, never two within one {cell_word}", k
        )
    if has_item and st.get(f"__i{i}"):
        return ColumnRule(
            c,
            "item_attribute",
            f"the same value on every row of an item ({_values(k)}): an attribute of the "
            f"item, not a prompt dimension{named} (declare it a cluster with --roles "
            f"{c}=cluster)",
            k,
        )
    how = (
        "each item has one row per model, so no column can vary within an item: the structure "
        "cannot tell a prompt dimension from a property of the call"
        if single
        else f"never two values within one {cell_word}"
    )
    return ColumnRule(
        c,
        "metadata",
        f"{_values(k)}, {how}; taken as metadata, the reading that claims nothing{named} (say "
        f"otherwise with --roles {c}=prompt)",
        k,
    )


def _outcome(st: Mapping[str, object], i: int, *, n: int, k: int, nulls: int) -> str | None:
    """Why column ``i`` is an outcome (a function of the score), or None.

    Two readings, each needing :data:`OUTCOME_ROWS_PER_VALUE` rows per value so that a
    coincidence of a small table is not taken for a rule: the column is null exactly on the
    rows of some scores (a failure reason, null when the answer is right: every null row's
    score lies on one side of every set row's), or it relabels the score one to one (a
    correct/incorrect label, a verdict).
    """
    su = st.get("__su")
    if su is None or int(su) < 2 or f"__cs{i}" not in st:  # no second pass: does not vary
        return None
    su = int(su)
    if 0 < nulls < n and min(nulls, n - nulls) >= 3 and n >= 2 * OUTCOME_ROWS_PER_VALUE:
        lo0, hi0, lo1, hi1 = (st.get(f"__s{w}{i}") for w in ("0lo", "0hi", "1lo", "1hi"))
        if None not in (lo0, hi0, lo1, hi1) and (hi0 < lo1 or hi1 < lo0):  # type: ignore[operator]
            side = "highest" if lo0 > hi1 else "lowest"  # type: ignore[operator]
            return (
                f"an outcome: null exactly on the rows of the {side} scores ({_fmt(nulls)} of "
                f"{_fmt(n)} rows), set on the others: it records the result, it does not "
                "shape it"
            )
    if 2 * su > n or n < OUTCOME_ROWS_PER_VALUE * max(k, su):
        # near-unique scores, or too few rows to tell a rule from a coincidence
        return None
    cs = int(st[f"__cs{i}"])
    if cs == su == k:
        return (
            f"an outcome: a relabelling of the score (each of its {_values(k)} goes with one "
            "score and each score with one of them: a verdict or a correct/incorrect label)"
        )
    return None
