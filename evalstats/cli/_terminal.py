"""What a person at a terminal sees of a result: a short aligned table and one verdict line.

When stdout is a terminal (and neither ``--json`` nor ``--out`` is given) each command prints
the essential columns of its result, numbers to four significant digits, with polars' own
table printing, then one line that says what the table means. Piped or redirected, the output
is the full table as CSV, unchanged. Names that came from the input (models, datasets, factor
levels, column names) pass through :func:`evalstats._text.for_terminal` first: no terminal
escape sequence reaches the screen.

The verdict lines read the result's own columns; they compute nothing.
"""

from __future__ import annotations

import math
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalstats._text import for_terminal, plural, shorten

if TYPE_CHECKING:
    import polars as pl

__all__ = ["VIEWS", "View", "on_terminal", "readable"]

#: Rows shown before the table is cut (the full table: ``--out`` or a pipe).
MAX_ROWS = 30
#: Longest text shown in a cell (a long variant key is cut with an ellipsis).
MAX_CELL = 36


@dataclass(frozen=True)
class View:
    """The essential result columns of a command, and its verdict line.

    The group columns (those before the first essential column) are always shown.
    """

    columns: tuple[str, ...]
    verdict: Callable[[pl.DataFrame], str | None] | None = None
    hide: tuple[str, ...] = ()


def on_terminal() -> bool:
    """Whether stdout is a terminal (a person reads it, not a program)."""
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):  # replaced or closed stdout
        return False


def _num(x: Any, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    if isinstance(x, float):
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        return f"{x:.{digits}g}"
    return str(x)


def _p(p: Any) -> str:
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return "p n/a"
    return "p < 0.001" if p < 0.001 else f"p = {p:.2g}"


def _name(row: dict, keys: Sequence[str]) -> str:
    """A group's name from its key columns (``m1 on d0``)."""
    parts = [shorten(str(row[k]), MAX_CELL) for k in keys if k in row and row[k] is not None]
    if not parts:
        return "the table"
    return parts[0] + (f" ({', '.join(parts[1:])})" if parts[1:] else "")


def _groups(frame: pl.DataFrame, first: str) -> list[str]:
    """The group columns that tell rows apart: those before ``first`` that vary.

    The first group column when none does.
    """
    cols = frame.columns
    lead = cols[: cols.index(first)] if first in cols else []
    varying = [c for c in lead if frame[c].n_unique() > 1]
    return varying or lead[:1]


def _extreme(frame: pl.DataFrame, column: str, largest: bool = True) -> dict | None:
    import polars as pl

    ok = frame.filter(pl.col(column).is_not_null() & pl.col(column).is_not_nan())
    if not ok.height:
        return None
    return ok.sort(column, descending=largest).row(0, named=True)


# --- verdict lines, one per command --------------------------------------------------------


def _intervals(f: pl.DataFrame) -> str | None:
    keys = _groups(f, "over")
    hi, lo = _extreme(f, "mean"), _extreme(f, "mean", largest=False)
    if hi is None:
        return "no group has an interval (see the note column)."
    level = f"{hi['confidence_level']:.0%}"
    text = (
        f"highest mean: {_name(hi, keys)} {_num(hi['mean'])} ({level} CI {_num(hi['ci_low'])} "
        f"to {_num(hi['ci_high'])})"
    )
    if f.height > 1 and lo is not None:
        text += (
            f"; lowest: {_name(lo, keys)} {_num(lo['mean'])} ({_num(lo['ci_low'])} to "
            f"{_num(lo['ci_high'])})"
        )
    return text + f"; intervals over {hi['over']} ({hi['method']})."


def _compare(f: pl.DataFrame) -> str | None:
    if "verdict" in f.columns:  # two runs: one sentence per group
        return "\n".join(f["verdict"].to_list())
    rejected = f.filter(f["reject"])
    level = f"{f['confidence_level'][0]:.0%}"
    text = (
        f"{rejected.height} of {plural(f.height, 'pair')} differ at the {level} family level "
        f"({f['correction'][0]})"
    )
    if rejected.height:
        keys = [k for k in _groups(f, "model_a") if f[k].n_unique() > 1]
        shown = [
            f"{r['model_a']} vs {r['model_b']}"
            + (f" on {', '.join(str(r[k]) for k in keys)}" if keys else "")
            + f" ({'+' if r['difference'] > 0 else ''}{_num(r['difference'])})"
            for r in rejected.sort("pvalue_corrected").head(3).iter_rows(named=True)
        ]
        text += ": " + ", ".join(shown) + (", ..." if rejected.height > 3 else "")
    return text + "."


def _moments(f: pl.DataFrame) -> str | None:
    keys = _groups(f, "n_variants")
    wide, narrow = _extreme(f, "spread"), _extreme(f, "spread", largest=False)
    if wide is None:
        return None
    text = f"prompt spread (max - min over variants): widest {_name(wide, keys)} {_num(wide['spread'])}"
    if f.height > 1 and narrow is not None:
        text += f", narrowest {_name(narrow, keys)} {_num(narrow['spread'])}"
    return text + "."


def _nstar(f: pl.DataFrame) -> str | None:
    import polars as pl

    mean = f.filter(pl.col("moment") == "mean") if "moment" in f.columns else f
    if not mean.height:
        return None
    reached = int(mean["reached"].sum())
    most = _extreme(mean, "n_star")
    text = f"n* (mean): reached in {reached} of {plural(mean.height, 'group')}"
    if most is not None:
        keys = _groups(f, "moment")
        text += f"; most variants needed: {_num(most['n_star'])} ({_name(most, keys)})"
    return text + "."


def _stability(f: pl.DataFrame) -> str | None:
    if "tar_a" not in f.columns or "spread" not in f.columns:
        return None
    keys = _groups(f, "n_runs")
    low, wide = _extreme(f, "tar_a", largest=False), _extreme(f, "spread")
    if low is None:
        return None
    text = (
        f"TARa from {_num(low['tar_a'])} ({_name(low, keys)}) to {_num(f['tar_a'].max())}"
        f" over {plural(f.height, 'configuration')}"
    )
    if wide is not None:
        text += f"; largest run-to-run accuracy spread {_num(wide['spread'])}"
    return text + "."


def _normality(f: pl.DataFrame) -> str | None:
    import polars as pl

    tested = f.filter(pl.col("pvalue").is_not_null() & pl.col("pvalue").is_not_nan())
    rejected = int((tested["pvalue"] < 0.05).sum())
    low = int(f["low_power"].sum()) if "low_power" in f.columns else 0
    if not tested.height:
        return f"no group could be tested ({plural(f.height, 'group')}; too few runs each)."
    return (
        f"{rejected} of {plural(tested.height, 'group')} reject normality at 0.05"
        + (f" ({low} with too few runs to tell)" if low else "")
        + "."
    )


def _correlate(f: pl.DataFrame) -> str | None:
    import polars as pl

    top = _extreme(f.with_columns(pl.col("statistic").abs().alias("__abs")), "__abs")
    if top is None:
        return None
    return (
        f"strongest: {top['x']} with {top['y']} ({top['method']} {_num(top['statistic'])}, "
        f"{_p(top['pvalue'])}, n = {top['n']})."
    )


def _anova(f: pl.DataFrame) -> str | None:
    import polars as pl

    terms = f.filter(pl.col("eta_sq").is_not_null()) if "eta_sq" in f.columns else f
    top = _extreme(terms, "eta_sq")
    if top is None:
        return None
    p = top.get("pvalue_perm")
    p = top.get("pvalue") if p is None or (isinstance(p, float) and math.isnan(p)) else p
    return f"largest effect: {top['term']} (eta^2 {_num(top['eta_sq'])}, {_p(p)})."


def _attribute(f: pl.DataFrame) -> str | None:
    above = f.filter(f["above_null"]) if "above_null" in f.columns else f.head(0)
    if not above.height:
        return "no factor stands above its null band."
    names = ", ".join(above["factor"].to_list())
    return f"{plural(above.height, 'factor')} above the null band: {names}."


def _friedman(f: pl.DataFrame) -> str | None:
    best = _extreme(f, "mean_rank", largest=False)
    if best is None:
        return None
    return (
        f"Friedman {_p(best['pvalue'])} over {plural(int(best['n_blocks']), 'block')}; best "
        f"mean rank: {best['model']} ({_num(best['mean_rank'])}; critical difference "
        f"{_num(best['critical_difference'])})."
    )


def _audit(f: pl.DataFrame) -> str | None:
    if "reversal" not in f.columns:
        return None
    n = int(f["reversal"].sum())
    return (
        f"{plural(n, 'conclusion reversal')} at the default configuration over "
        f"{plural(f.height, 'pair')}."
    )


def _converge(f: pl.DataFrame) -> str | None:
    keys = _groups(f, "n_available")
    most = _extreme(f, "n_stop_median")
    if most is None:
        return None
    return (
        f"the stopping rule stops at a median of {_num(most['n_stop_median'])} of "
        f"{most['n_available']} configurations at most ({_name(most, keys)})."
    )


def _providers(f: pl.DataFrame) -> str | None:
    if "verdict" in f.columns:
        counts: dict[str, int] = {}
        for v in f["verdict"].to_list():
            if v != "reference":
                counts[v] = counts.get(v, 0) + 1
        if counts:
            return (
                "; ".join(f"{n} {v}" for v, n in sorted(counts.items(), key=lambda x: -x[1])) + "."
            )
    if "error_share" in f.columns:
        top = _extreme(f, "error_share")
        if top is not None:
            return f"highest error share: {top['provider']} ({top['error_share']:.1%}, {top['model']})."
    return None


def _noise(f: pl.DataFrame) -> str | None:
    import polars as pl

    if "share" not in f.columns:
        return None
    keys = _groups(f, "component")
    top = _extreme(f.filter(pl.col("share").is_not_null()), "share")
    if top is None:
        return None
    return f"largest share of the variance: {top['component']} {top['share']:.0%} ({_name(top, keys)})."


def _plan(f: pl.DataFrame) -> str | None:
    if "n_items" not in f.columns:
        return None
    row = f.row(f.height - 1, named=True)
    ok = "reaches" if row.get("feasible") else "does not reach"
    return (
        f"design for {'all' if row.get('scope') != 'group' else _name(row, ['model'])}: "
        f"{plural(row['n_items'], 'item')} x {plural(row['n_variants'], 'variant')} x "
        f"{plural(row['n_runs'], 'run')} ({row['calls']:,} calls), which {ok} the target."
    )


def _ppi(f: pl.DataFrame) -> str | None:
    keys = _groups(f, "n_labelled")
    rows = [
        f"{_name(r, keys)} {_num(r['estimate'])} ({_num(r['ci_low'])} to {_num(r['ci_high'])})"
        for r in f.head(3).iter_rows(named=True)
    ]
    return (
        "judge corrected with gold labels: "
        + "; ".join(rows)
        + (" ..." if f.height > 3 else "")
        + "."
    )


#: The view of each command (``stability --view curve`` etc. by their full command name).
VIEWS: dict[str, View] = {
    "intervals": View(("over", "method", "n", "mean", "ci_low", "ci_high", "note"), _intervals),
    "compare": View(
        (
            "model_a",
            "model_b",
            "label_a",
            "label_b",
            "n",
            "mean_a",
            "mean_b",
            "difference",
            "ci_low",
            "ci_high",
            "pvalue_corrected",
            "reject",
            "mdd",
            "noninferior",
            "equivalent",
        ),
        _compare,
    ),
    "moments": View(("n_variants", "mean", "std", "min", "max", "spread", "cps", "pss"), _moments),
    "nstar": View(("moment", "n_star", "n_available", "reached", "epsilon"), _nstar),
    "stability": View(
        ("n_runs", "n_items", "acc_min", "acc_max", "spread", "tar_a", "tar_r"), _stability
    ),
    "stability --view curve": View(("k", "n_runs", "n_items", "tar_a", "tar_r")),
    "stability --view items": View(
        ("item", "n_runs", "share_correct", "answer_agree", "response_agree", "gold")
    ),
    "normality": View(("method", "n", "statistic", "pvalue", "low_power"), _normality),
    "correlate": View(("x", "y", "method", "statistic", "pvalue", "n"), _correlate),
    "anova": View(
        ("term", "df", "statistic", "pvalue", "pvalue_perm", "eta_sq", "partial_eta_sq"), _anova
    ),
    "attribute": View(
        ("factor", "n_levels", "mean_abs_shap", "null_high", "above_null", "partial_r_sq"),
        _attribute,
    ),
    "friedman": View(("model", "mean_rank", "score", "critical_difference"), _friedman),
    "audit": View(
        (
            "model_a",
            "model_b",
            "default_difference",
            "difference",
            "ci_low",
            "ci_high",
            "reversal",
            "share_contradicting",
        ),
        _audit,
    ),
    "converge": View(
        ("n_available", "share_reached", "n_stop_median", "n_stop_q95", "error_q95"), _converge
    ),
    "providers": View(
        (
            "provider",
            "reference",
            "n_items",
            "n_calls",
            "error_share",
            "rate",
            "mean",
            "difference",
            "ci_low",
            "ci_high",
            "mdd",
            "verdict",
        ),
        _providers,
    ),
    "noise": View(("component", "variance", "ci_low", "ci_high", "share"), _noise),
    "plan": View(
        ("scope", "n_items", "n_variants", "n_runs", "calls", "cost", "width", "feasible"), _plan
    ),
    "ppi": View(("n_labelled", "n_unlabelled", "estimate", "ci_low", "ci_high", "pvalue"), _ppi),
}


def _shown_columns(frame: pl.DataFrame, view: View) -> list[str]:
    present = [c for c in view.columns if c in frame.columns]
    if not present:
        return frame.columns[:8]
    first = min(frame.columns.index(c) for c in present)
    lead = [c for c in frame.columns[:first] if c not in view.hide]
    # a group column with one value says nothing row by row (it is in the verdict)
    lead = [c for c in lead if frame[c].n_unique() > 1 or c in ("model", "model_a", "dataset")]
    return lead + [c for c in present if c not in lead and frame[c].null_count() < frame.height]


def readable(frame: pl.DataFrame, view: View | None) -> str:
    """The essential columns of ``frame`` as an aligned table, then its verdict line."""
    import polars as pl

    view = view or View(())
    cols = _shown_columns(frame, view)
    shown = frame.select(cols)
    floats = [c for c, t in shown.schema.items() if t in (pl.Float32, pl.Float64)]
    texts = [c for c, t in shown.schema.items() if t == pl.String]
    shown = shown.with_columns(
        *[pl.col(c).round_sig_figs(4) for c in floats],
        *[
            pl.col(c).map_elements(lambda v: for_terminal(v, MAX_CELL), return_dtype=pl.String)
            for c in texts
        ],
    ).rename({c: for_terminal(c, 40) for c in cols})
    width = shutil.get_terminal_size((120, 24)).columns
    with pl.Config(
        tbl_formatting="NOTHING",
        tbl_hide_column_data_types=True,
        tbl_hide_dataframe_shape=True,
        tbl_cell_numeric_alignment="RIGHT",
        tbl_rows=MAX_ROWS,
        tbl_cols=-1,
        tbl_width_chars=max(width, 60),
        fmt_str_lengths=MAX_CELL,
    ):
        lines = [str(shown)]
    notes = []
    if frame.height > MAX_ROWS:
        notes.append(f"{plural(frame.height, 'row')}")
    if len(cols) < frame.width:
        notes.append(f"{len(cols)} of {frame.width} columns")
    if notes:
        lines.append(f"({'; '.join(notes)}: --out FILE.csv, --json or a pipe gives them all)")
    verdict = view.verdict(frame) if view.verdict is not None and frame.height else None
    if verdict:
        lines += [for_terminal(line) for line in verdict.splitlines()]
    return "\n".join(lines) + "\n"
