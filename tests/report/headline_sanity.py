"""Checks a statistician would make on a written report: what its headlines may not say.

:func:`violations` reads ``results.json`` and ``report.md`` of one report folder and returns one
line per broken rule (empty: the report passes):

1. no interval of a mean score outside the metric's bounds (intervals, PPI), and no interval of
   a difference of two means wider than the metric's range allows (compare);
2. no "n/a to n/a" anywhere;
3. no negative R² or η² in a headline, and no "η² = 0.000" named as a term that explains most;
4. every n* table carries the vacuity check (a ``vacuous`` column), and where a group's n* is
   vacuous the n* reading says so;
5. no "no pair differs" (or "0 of N model pairs differ") when a pair's interval excludes 0 by
   more than its own width;
6. every dropped group is named: Friedman's dropped datasets in its reading, and every skipped
   analysis with a reason;
7. with several datasets, every headline says how many it covers ("all 3 datasets", "2 of 5
   datasets", "3 datasets pooled"): no single dataset stands for the study;
8. a table of report.md keeps the group columns that tell its rows apart: no two shown rows
   have the same text cells when the text columns of its CSV tell them apart.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

#: Slack for the bounds checks (intervals are computed in floating point).
_TOL = 1e-9


def _rows(table: dict[str, Any]) -> list[dict[str, Any]]:
    names = [c["name"] for c in table["columns"]]
    return [dict(zip(names, r)) if isinstance(r, list) else r for r in table["rows"]]


def _num(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and math.isfinite(x) else None


def glance(markdown: str) -> str:
    """The "At a glance" section of report.md (the headlines)."""
    m = re.search(r"^## At a glance\n(.*?)(?=^## )", markdown, flags=re.S | re.M)
    return m.group(1) if m else ""


def violations(folder: Path) -> list[str]:
    """Every broken rule of the module docstring, one line each."""
    results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    markdown = (folder / "report.md").read_text(encoding="utf-8")
    heads = glance(markdown)
    out: list[str] = []
    metrics = {m["name"]: m for m in results["data"]["metrics"]}
    analyses = {a["key"]: a for a in results["analyses"]}

    def bounds(row: dict[str, Any]) -> tuple[float | None, float | None]:
        info = metrics.get(row.get("metric")) or (next(iter(metrics.values())) if metrics else {})
        return _num(info.get("low")), _num(info.get("high"))

    # 1. intervals inside the metric's bounds
    for key, table_name in (("intervals", "intervals"), ("ppi", "ppi")):
        if key not in analyses or table_name not in analyses[key]["tables"]:
            continue
        for row in _rows(analyses[key]["tables"][table_name]):
            lo, hi = bounds(row)
            a, b = _num(row.get("ci_low")), _num(row.get("ci_high"))
            if lo is not None and a is not None and a < lo - _TOL:
                out.append(f"{key}: ci_low {a} below the metric's lower bound {lo} ({row})")
            if hi is not None and b is not None and b > hi + _TOL:
                out.append(f"{key}: ci_high {b} above the metric's upper bound {hi} ({row})")
    if "compare" in analyses:
        for row in _rows(analyses["compare"]["tables"]["compare"]):
            lo, hi = bounds(row)
            a, b = _num(row.get("ci_low")), _num(row.get("ci_high"))
            if lo is None or hi is None:
                continue
            span = hi - lo
            if (a is not None and a < -span - _TOL) or (b is not None and b > span + _TOL):
                out.append(f"compare: interval [{a}, {b}] wider than the metric allows ({row})")

    # 2. no "n/a to n/a"
    if re.search(r"n/a\s+to\s+n/a", markdown):
        out.append('report.md says "n/a to n/a"')

    # 3. no negative R² or η² headline, no η² = 0.000 headline
    for m in re.finditer(r"(R²|η²|R\^2)[^.;]{0,40}?=\s*[-−]\d", heads):
        out.append(f"negative {m.group(1)} in a headline: {m.group(0)!r}")
    for m in re.finditer(r"explains\s+[-−]\d", heads):
        out.append(f"negative share explained in a headline: {m.group(0)!r}")
    if re.search(r"η²\s*=\s*0\.000\b", heads):
        out.append("a term with η² = 0.000 is named in a headline")

    # 4. n* with its vacuity check
    if "nstar" in analyses:
        nstar = analyses["nstar"]
        for name, table in nstar["tables"].items():
            cols = [c["name"] for c in table["columns"]]
            if "n_star" in cols and "vacuous" not in cols:
                out.append(f"nstar table {name!r} has no vacuous column")
        rows = _rows(nstar["tables"].get("nstar", {"columns": [], "rows": []}))
        for moment in ("mean", "variance"):
            vac = [r for r in rows if r.get("vacuous") and r.get("moment") == moment]
            n_rows = len([r for r in rows if r.get("moment") == moment])
            if vac and f"vacuous in {len(vac)} of {n_rows}" not in nstar["reading"]:
                out.append(
                    f"{len(vac)} vacuous n* rows for the {moment}, but the n* reading does not "
                    "count them"
                )

    # 5. "no pair differs" against a pair whose interval clearly excludes 0
    if "compare" in analyses:
        clear = []
        for row in _rows(analyses["compare"]["tables"]["compare"]):
            a, b = _num(row.get("ci_low")), _num(row.get("ci_high"))
            if a is None or b is None:
                continue
            width = b - a
            if (a > 0 and a > width) or (b < 0 and -b > width):
                clear.append(row)
        said = re.search(r"no (model )?pairs? differs?|\b0 of \d+ model pairs differ", heads)
        if clear and said:
            out.append(
                f"headline {said.group(0)!r} while {len(clear)} pair interval(s) exclude 0 by "
                "more than their width"
            )

    # 6. dropped groups named
    if "friedman" in analyses:
        fr = analyses["friedman"]
        n_blocks = fr["values"].get("n_blocks")
        dropped = fr["values"].get("dropped_blocks") or []
        n_datasets = len(results["data"]["datasets"])
        if n_blocks is not None and n_blocks < n_datasets and not dropped:
            out.append(
                f"Friedman ranks over {n_blocks} of {n_datasets} datasets and does not list the "
                "ones it dropped"
            )
        for d in dropped:
            name = str(d.get("dataset"))
            if name not in fr["reading"].replace("\\", "") and "more" not in fr["reading"]:
                out.append(f"Friedman dropped {name!r} without naming it in its reading")
    for s in results["skipped"]:
        if not str(s.get("reason") or "").strip():
            out.append(f"analysis {s.get('key')!r} skipped without a reason")

    # 7. every headline names how many datasets it covers
    if len(results["data"]["datasets"]) > 1:
        for line in heads.splitlines():
            if line.startswith("- ") and not re.search(
                r"\b(both|all \d+|\d+ of \d+|\d+) datasets\b", line
            ):
                out.append(f"a headline does not say how many datasets it covers: {line!r}")

    # 8. report.md tables keep their group columns
    out += _merged_rows(folder, markdown)
    return out


def _md_tables(markdown: str) -> list[tuple[str, list[str], list[list[str]]]]:
    """(CSV path, header, rows) of each report.md table that names its full CSV."""
    out = []
    lines = markdown.splitlines()
    for i, line in enumerate(lines):
        m = re.search(r"Full table: `(tables/[^`]+\.csv)`", line)
        if not m:
            continue
        j = i + 1
        while j < len(lines) and not lines[j].startswith("|"):
            j += 1
        block = []
        while j < len(lines) and lines[j].startswith("|"):
            block.append([c.strip() for c in lines[j].strip("|").split(" | ")])
            j += 1
        if len(block) > 2:
            out.append((m.group(1), block[0], block[2:]))
    return out


def _numeric(cell: str) -> bool:
    text = cell.replace("\\", "").replace(",", "").replace("<", "").replace("−", "-")
    if text in ("–", "", "yes", "no"):
        return True
    try:
        float(text)
    except ValueError:
        return False
    return True


def _merged_rows(folder: Path, markdown: str) -> list[str]:
    import polars as pl

    out = []
    for csv, header, rows in _md_tables(markdown):
        text_cols = [k for k in range(len(header)) if not all(_numeric(r[k]) for r in rows)]
        shown = [tuple(r[k] for k in text_cols) for r in rows]
        if not text_cols or len(set(shown)) == len(shown) or not (folder / csv).exists():
            continue
        full = pl.read_csv(folder / csv, infer_schema_length=0).head(len(rows))
        strings = [c for c in full.columns if not all(_numeric(v or "") for v in full[c])]
        if strings and full.select(strings).n_unique() == full.height:
            out.append(
                f"{csv}: report.md shows rows with the same text cells "
                f"({', '.join(header[k] for k in text_cols)}) that its CSV tells apart"
            )
    return out
