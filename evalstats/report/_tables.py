"""Tables of the report: JSON conversion, display columns and formatting, CSV and LaTeX files.

Full-precision tables go to ``results.json`` and CSV; the HTML, Markdown and LaTeX versions show
the columns a reader needs (parameter echoes such as ``seed`` move to the parameter list) with
numbers rounded for display only.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

from evalstats._text import for_latex

__all__ = [
    "JSON_DIGITS",
    "TEX_MAX_ROWS",
    "display_frame",
    "dumps_document",
    "format_value",
    "round_floats",
    "table_to_dict",
    "to_jsonable",
    "to_latex",
    "write_csv",
]

#: Columns shown in the HTML, Markdown and LaTeX tables, per (analysis, table). Tables not
#: listed show every column except the constant parameter echoes of ``_ECHOES``.
DISPLAY: dict[tuple[str, str], tuple[str, ...]] = {
    ("moments", "moments"): (
        "model",
        "dataset",
        "scores",
        "n_variants",
        "mean",
        "std",
        "min",
        "median",
        "max",
        "spread",
        "cps",
        "pss",
        "noise_variance",
        "prompt_variance",
        "prompt_variance_low",
        "prompt_variance_high",
    ),
    ("nstar", "nstar"): (
        "model",
        "dataset",
        "scores",
        "moment",
        "n_star",
        "n_available",
        "reached",
        "population",
        "vacuous",
    ),
    ("nstar", "recorded_variants"): (
        "model",
        "dataset",
        "scores",
        "moment",
        "n_star",
        "n_available",
        "reached",
        "population",
    ),
    ("noise", "components"): (
        "model",
        "dataset",
        "component",
        "variance",
        "ci_low",
        "ci_high",
        "share",
        "truncated",
        "identified",
        "method",
    ),
    ("noise", "plan"): (
        "model",
        "dataset",
        "scope",
        "n_items",
        "n_variants",
        "n_runs",
        "calls",
        "width",
        "feasible",
        "at_limit",
    ),
    ("converge", "converge"): (
        "model",
        "dataset",
        "n_available",
        "share_reached",
        "n_stop_median",
        "n_stop_q05",
        "n_stop_q95",
        "full_mean",
        "error_q95",
        "error_max",
    ),
    ("stability", "stability"): (
        "model",
        "dataset",
        "variant",
        "n_runs",
        "n_items",
        "acc_min",
        "acc_median",
        "acc_max",
        "spread",
        "tar_a",
        "tar_r",
        "best_possible",
        "worst_possible",
    ),
    ("normality", "normality"): (
        "model",
        "dataset",
        "variant",
        "method",
        "n",
        "statistic",
        "pvalue",
        "mean",
        "sd",
        "low_power",
    ),
    ("correlation", "correlation"): ("x", "y", "statistic", "pvalue", "pvalue_perm", "n"),
    ("intervals", "intervals"): (
        "model",
        "dataset",
        "over",
        "method",
        "n",
        "mean",
        "se",
        "ci_low",
        "ci_high",
        "note",
    ),
    ("compare", "compare"): (
        "dataset",
        "model_a",
        "model_b",
        "n",
        "mean_a",
        "mean_b",
        "difference",
        "ci_low",
        "ci_high",
        "method",
        "pvalue",
        "pvalue_corrected",
        "mdd",
    ),
    ("compare", "groups"): ("dataset", "model", "mean", "letters"),
    ("ppi", "ppi"): (
        "model",
        "dataset",
        "n_labelled",
        "estimate",
        "ci_low",
        "ci_high",
        "classical",
        "judge_mean",
        "judge_bias",
    ),
    ("ranks", "ranks"): (
        "dataset",
        "model",
        "score",
        "rank",
        "rank_low",
        "rank_high",
        "p_best",
        "method",
    ),
    ("friedman", "friedman"): ("model", "mean_rank", "score"),
    ("audit", "pairs"): (
        "dataset",
        "model_a",
        "model_b",
        "default_difference",
        "difference",
        "ci_low",
        "ci_high",
        "default_outside",
        "share_contradicting",
        "reversal",
        "claim_status",
    ),
    ("audit", "models"): (
        "dataset",
        "model",
        "n_configs",
        "default_score",
        "percentile",
        "mean",
        "ci_low",
        "ci_high",
        "outside_interval",
        "outside_range",
    ),
    ("providers", "versus"): (
        "model",
        "provider",
        "reference",
        "n_items",
        "difference",
        "ci_low",
        "ci_high",
        "pvalue_adjusted",
        "mdd",
        "difference_excluded",
        "pvalue_excluded_adjusted",
        "error_rate_difference",
        "identical_outputs",
        "verdict",
    ),
    ("providers", "policies"): (
        "model",
        "provider",
        "n_calls",
        "n_errors",
        "error_rate",
        "error_ci_low",
        "error_ci_high",
        "as_failures",
        "as_failures_ci_low",
        "as_failures_ci_high",
        "excluded",
        "excluded_ci_low",
        "excluded_ci_high",
        "difference",
        "difference_ci_low",
        "difference_ci_high",
    ),
    ("providers", "scores"): (
        "model",
        "provider",
        "policy",
        "n_calls",
        "error_share",
        "mean",
        "ci_low",
        "ci_high",
    ),
    ("providers", "differences"): (
        "model",
        "policy",
        "provider_a",
        "provider_b",
        "n",
        "difference",
        "ci_low",
        "ci_high",
        "pvalue",
    ),
}

#: Tables kept out of the HTML and Markdown pages (too long to read; CSV and JSON keep them).
HIDDEN: frozenset[tuple[str, str]] = frozenset({("nstar", "curve"), ("providers", "tail_quality")})

#: Columns that echo a parameter; hidden from display when constant over the rows.
_ECHOES = frozenset(
    {
        "seed",
        "n_resamples",
        "confidence_level",
        "alternative",
        "correction",
        "epsilon",
        "delta",
        "power",
        "batch",
        "mean_tol",
        "ci_width",
        "n_orders",
        "over",
        "paired_on",
        "q_low_level",
        "q_high_level",
        "perm_exact",
        "method",
        "uncorrected",
        "claim",
        "n_blocks",
        "statistic_name",
    }
)

_PVALUE = ("pvalue", "pvalue_perm", "pvalue_corrected")


def to_jsonable(v: Any) -> Any:
    """``v`` with NaN and infinities as None, tuples as lists and numpy scalars as Python ones."""
    if isinstance(v, float):
        return None if (math.isnan(v) or math.isinf(v)) else v
    if isinstance(v, (str, bool, int)) or v is None:
        return v
    if isinstance(v, Path):
        return str(v)
    if isinstance(v, Mapping):
        return {str(k): to_jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [to_jsonable(x) for x in v]
    if isinstance(v, pl.Series):
        return to_jsonable(v.to_list())
    if hasattr(v, "item"):  # numpy scalar
        return to_jsonable(v.item())
    if hasattr(v, "tolist"):  # numpy array
        return to_jsonable(v.tolist())
    return str(v)


#: Significant digits of the floats in results.json. polars may sum the same floats in a
#: different order from one run to the next (hash grouping, chunking), which moves the last
#: bit or two; ten digits keep every meaningful digit and make equal runs write equal files.
#: The CSV tables keep full precision.
JSON_DIGITS = 10


def round_floats(v: Any, digits: int = JSON_DIGITS) -> Any:
    """``v`` with every float rounded to ``digits`` significant digits (recursively)."""
    if isinstance(v, float):
        return float(f"{v:.{digits}g}") if math.isfinite(v) else v
    if isinstance(v, dict):
        return {k: round_floats(x, digits) for k, x in v.items()}
    if isinstance(v, list):
        return [round_floats(x, digits) for x in v]
    return v


def _round_float(v: float | None, digits: int = JSON_DIGITS) -> float | None:
    if v is None or math.isnan(v) or math.isinf(v):
        return None
    return float(f"{v:.{digits}g}")


def table_to_dict(frame: pl.DataFrame) -> dict[str, Any]:
    """``{"columns": [{"name", "dtype"}], "rows": [{column: value}]}`` (as the CLI's --json).

    Floats are rounded to :data:`JSON_DIGITS` significant digits; NaN becomes null. Float
    columns are converted column by column (the same values as :func:`round_floats` of
    :func:`to_jsonable`, without visiting every cell of a table of 60,000 rows recursively).
    """
    columns: dict[str, list[Any]] = {}
    for name, dtype in frame.schema.items():
        values = frame[name].to_list()
        if dtype in (pl.Float32, pl.Float64):
            columns[name] = [_round_float(v) for v in values]
        elif dtype.is_integer() or dtype in (pl.String, pl.Boolean, pl.Null):
            columns[name] = values
        else:
            columns[name] = round_floats(to_jsonable(values))
    names = list(columns)
    return {
        "columns": [{"name": n, "dtype": str(t)} for n, t in frame.schema.items()],
        "rows": [dict(zip(names, row)) for row in zip(*columns.values())]
        if names
        else [{} for _ in range(frame.height)],
    }


def dumps_document(doc: Any) -> str:
    """``doc`` as indented JSON with each table row on one line (``results.json``).

    ``json.dumps(indent=...)`` runs the pure-Python encoder, which took seconds on a report
    with 60,000 table rows; here only the outer structure is indented, and each item of a
    ``rows`` or ``columns`` list, and every list of plain values, is written on one line by
    the C encoder.
    """

    def one_line(v: Any) -> str:
        return json.dumps(v, ensure_ascii=False, allow_nan=False)

    def dump(v: Any, level: int, key: str | None) -> str:
        pad = "  " * (level + 1)
        if isinstance(v, dict) and v:
            items = [f"{pad}{one_line(str(k))}: {dump(x, level + 1, str(k))}" for k, x in v.items()]
        elif isinstance(v, list) and any(isinstance(x, (dict, list)) and x for x in v):
            flat = key in ("rows", "columns")
            # a record of plain values (a design group, a table row) on one line, whatever the
            # list is called: one encoder call per value took a minute on 100,000 groups
            items = [
                pad + (one_line(x) if flat or _plain_record(x) else dump(x, level + 1, None))
                for x in v
            ]
        else:
            return one_line(v)
        close = "  " * level + ("}" if isinstance(v, dict) else "]")
        return ("{" if isinstance(v, dict) else "[") + "\n" + ",\n".join(items) + "\n" + close

    return dump(doc, 0, None) + "\n"


def _plain_record(x: Any) -> bool:
    """Whether ``x`` is a dict whose values are all plain (no non-empty dict or list)."""
    return isinstance(x, dict) and not any(isinstance(v, (dict, list)) and v for v in x.values())


def display_frame(analysis: str, name: str, frame: pl.DataFrame) -> pl.DataFrame:
    """The columns of ``frame`` a reader needs (see :data:`DISPLAY`)."""
    wanted = DISPLAY.get((analysis, name))
    if wanted is not None:
        cols = [c for c in wanted if c in frame.columns]
        # a column with no value at all (claim_status without a claim) says nothing
        cols = [c for c in cols if not (frame.height and frame[c].null_count() == frame.height)]
        cols = _with_group_columns(frame, cols)
    else:
        cols = []
        for c, t in frame.schema.items():
            if isinstance(t, (pl.List, pl.Array, pl.Struct, pl.Object)):
                continue
            if c in _ECHOES and frame.height and frame[c].n_unique() == 1:
                continue
            cols.append(c)
    return frame.select(cols)


def _with_group_columns(frame: pl.DataFrame, cols: list[str]) -> list[str]:
    """``cols`` and the group columns ``frame`` needs to tell its rows apart.

    Result tables lead with their group columns (model, dataset, metric, then any setting held
    fixed, such as temperature or provider) and follow with results. A table grouped by a held
    setting has rows that the chosen columns alone show as duplicates ("m0 d0" four times): the
    leading group columns left out are added back, in the frame's order, while they separate
    rows the shown ones merge, and placed after the last shown group column.
    """
    lead = []
    for c in frame.columns:
        if c in cols and c not in _GROUP_NAMES:
            break
        lead.append(c)
    text = (pl.String, pl.Categorical, pl.Enum)
    keys = [c for c in cols if c in lead or isinstance(frame.schema[c], text)]
    if frame.height < 2 or frame.select(keys or cols).n_unique() == frame.height:
        return cols
    base = frame.select(keys).n_unique() if keys else 1
    added = []
    for c in lead:
        if c in cols or isinstance(frame.schema[c], (pl.List, pl.Array, pl.Struct, pl.Object)):
            continue
        n = frame.select([*keys, *added, c]).n_unique()
        if n > base:  # the column separates rows the shown keys merge
            added.append(c)
            base = n
            if n == frame.height:
                break
    if not added:
        return cols
    shown = [i for i, c in enumerate(cols) if c in lead]
    at = max(shown) + 1 if shown else 0
    return [*cols[:at], *added, *cols[at:]]


#: Group columns of the result tables that may come anywhere in their leading block.
_GROUP_NAMES = ("model", "dataset", "metric", "variant")


def format_value(column: str, value: Any) -> str:
    """Display text of one cell: p-values as ``<0.001``, other floats to 3 decimals."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return "–"
        if column in _PVALUE or column.startswith("pvalue"):
            return "<0.001" if value < 0.001 else f"{value:.3f}"
        if value == 0:
            return "0"
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        if abs(value) >= 100:
            return f"{value:.1f}"
        if abs(value) < 0.001:
            return f"{value:.1e}"
        return f"{value:.3f}"
    if isinstance(value, (list, tuple)):
        return ", ".join(format_value(column, v) for v in value)
    return str(value)


def write_csv(frame: pl.DataFrame, path: Path) -> None:
    """Write ``frame`` as CSV; list columns become JSON text (CSV cannot nest).

    Text cells that a spreadsheet would run as a formula (a model named ``=HYPERLINK(...)``)
    get a leading apostrophe (:func:`evalstats._output.csv_safe`).
    """
    from evalstats._output import csv_safe

    nested = [c for c, t in frame.schema.items() if isinstance(t, (pl.List, pl.Array, pl.Struct))]
    if nested:
        frame = frame.with_columns(
            pl.Series(c, [json.dumps(to_jsonable(v)) for v in frame[c].to_list()], dtype=pl.String)
            for c in nested
        )
    csv_safe(frame).write_csv(path)


#: Tables of more display rows get no ``.tex`` file (the CSV holds them): a LaTeX table that
#: long does not fit a paper, and typesetting tens of thousands of rows (the n* curve of 165
#: groups has 59,000) took longer than the analysis.
TEX_MAX_ROWS = 500


def to_latex(frame: pl.DataFrame, *, caption: str, label: str) -> str:
    """A ``booktabs`` table of the display frame (needs the booktabs package)."""
    numeric = [t.is_numeric() and t != pl.Boolean for t in frame.schema.values()]
    spec = "".join("r" if n else "l" for n in numeric)
    head = " & ".join(for_latex(c) for c in frame.columns)
    lines = [
        r"\begin{table}[t]",
        r"\centering",
        r"\small",
        rf"\caption{{{for_latex(caption)}}}",
        rf"\label{{{label}}}",
        rf"\begin{{tabular}}{{{spec}}}",
        r"\toprule",
        head + r" \\",
        r"\midrule",
    ]
    for row in frame.iter_rows():
        cells = [for_latex(format_value(c, v)) for c, v in zip(frame.columns, row)]
        lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}", ""]
    return "\n".join(lines)
