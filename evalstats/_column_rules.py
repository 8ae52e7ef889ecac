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
from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from evalstats.factors import factor_role

__all__ = [
    "LONG_TEXT_CHARS",
    "MEASUREMENT_MIN",
    "NEAR_UNIQUE_MIN",
    "ColumnRule",
    "by_name",
    "classify",
    "normal_name",
]

#: Fewer distinct values than this never make a column "near-unique" or free text (a 40-row
#: table with 30 prompts is a table of prompts; 3 system prompts spelled out are 3 prompts).
NEAR_UNIQUE_MIN = 50

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
    """

    column: str
    role: str
    evidence: str
    n_values: int | None = None


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


def classify(
    frame: pl.LazyFrame | pl.DataFrame,
    columns: Sequence[str],
    *,
    item: str | None = "item",
    within: Sequence[str] = ("model", "dataset"),
) -> dict[str, ColumnRule]:
    """Decide the role of each of ``columns`` of ``frame`` (rules 1-9 of the module notes).

    Parameters
    ----------
    frame : polars.LazyFrame or polars.DataFrame
        The table (one pass over it computes the value statistics of every column at once).
    columns : sequence of str
        The columns to classify (those no explicit role or alias claimed).
    item : str or None, default 'item'
        The item column, for rule 8 (None or absent: rule 8 is not applied).
    within : sequence of str, default ('model', 'dataset')
        Columns that, with ``item``, identify an item's rows (those present are used).

    Returns
    -------
    dict of str to ColumnRule
        One entry per column of ``columns``, in that order.

    Examples
    --------
    >>> t = pl.DataFrame({"model": ["m"] * 6, "item": ["1", "1", "2", "2", "3", "3"],
    ...                   "prompt_no": [1, 2] * 3, "subject": ["a", "a", "b", "b", "a", "a"],
    ...                   "pred": list("ABCABD"), "score": [1.0] * 6})
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
            out[c] = ColumnRule(c, "metadata", f"holds {schema[c]} values (lists or objects)")
        else:
            pending.append(c)
    if not pending:
        return {c: out[c] for c in columns}
    stats: list[pl.Expr] = [pl.len().alias("__rows")]
    for i, c in enumerate(pending):
        col = pl.col(c)
        stats.append(col.n_unique().alias(f"__u{i}"))
        dt = schema[c]
        if dt == pl.String or dt == pl.Categorical:
            stats.append(col.cast(pl.String).str.len_chars().mean().alias(f"__l{i}"))
        if dt.is_float():
            stats.append(
                col.filter(col.is_finite() & (col != col.round(0))).n_unique().alias(f"__f{i}")
            )
    keys = [k for k in within if k in schema]
    check_items = item is not None and item in schema
    if check_items:
        per_item = lf.group_by([*keys, item]).agg(
            pl.len().alias("__n"),
            *[pl.col(c).n_unique().alias(f"__i{i}") for i, c in enumerate(pending)],
        )
        item_q = per_item.select(
            (pl.col("__n") > 1).any().alias("__multi"),
            *[(pl.col(f"__i{i}") <= 1).all().alias(f"__i{i}") for i in range(len(pending))],
        )
        row, irow = (d.row(0, named=True) for d in pl.collect_all([lf.select(stats), item_q]))
    else:
        row, irow = lf.select(stats).collect().row(0, named=True), {}
    n_rows = int(row["__rows"])
    for i, c in enumerate(pending):
        k = int(row[f"__u{i}"])
        rule = by_name(c)
        mean_len = row.get(f"__l{i}")
        frac = row.get(f"__f{i}")
        if rule is not None and not check_items:
            # unit-level rows (one per model and variant): a prompt column names the variant
            # of its row, so its values are near-unique by construction
            out[c] = ColumnRule(c, rule.role, f"{rule.evidence}; {_values(k)}", k)
        elif k >= NEAR_UNIQUE_MIN and 2 * k >= n_rows:
            out[c] = ColumnRule(
                c,
                "text",
                f"near-unique: {_fmt(k)} distinct values in {_fmt(n_rows)} rows",
                k,
            )
        elif mean_len is not None and mean_len > LONG_TEXT_CHARS and k >= NEAR_UNIQUE_MIN:
            out[c] = ColumnRule(
                c, "text", f"free text: {mean_len:.0f} characters on average, {_fmt(k)} values", k
            )
        elif rule is not None:  # a known prompt or setting name, with ordinary values
            out[c] = ColumnRule(c, rule.role, f"{rule.evidence}; {_values(k)}", k)
        elif frac is not None and int(frac) > MEASUREMENT_MIN:
            out[c] = ColumnRule(
                c,
                "metadata",
                f"a measurement: {_fmt(int(frac))} distinct non-integer values",
                k,
            )
        elif check_items and irow.get("__multi") and irow.get(f"__i{i}") and k > 1:
            out[c] = ColumnRule(
                c,
                "item_attribute",
                f"the same value on every row of an item ({_fmt(k)} values): an attribute of "
                "the item, not a prompt dimension (declare it a cluster with --roles "
                f"{c}=cluster)",
                k,
            )
        else:
            out[c] = ColumnRule(
                c,
                "prompt",
                f"not a known name; {_values(k)}"
                + (" that vary within items" if check_items else "")
                + f": taken as a prompt dimension (say otherwise with --roles {c}=setting or "
                f"{c}=text)",
                k,
            )
    return {c: out[c] for c in columns}
