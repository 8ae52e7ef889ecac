"""What a reader sees first: each analysis's headline with its scope, alerts and loader notes.

Kept apart from :mod:`evalstats.report._render` so each module stays short.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:
    from evalstats.report._model import AnalysisResult, ReportContents

__all__ = ["alerts", "headline", "loader_notes"]


def _first_sentence(text: str) -> str:
    # the first sentence, cut at ". " followed by a capital letter
    for i in range(len(text) - 2):
        if text[i] == "." and text[i + 1] == " " and text[i + 2].isupper():
            return text[: i + 1]
    return text


#: Rows a reading leaves out of its sentences (a configuration run once has no run-to-run
#: change), so a headline's scope does not count their datasets.
_SCOPE_ROWS = {"stability": ("n_runs", 2), "moments": ("n_variants", 2)}


def _scope(a: AnalysisResult, datasets: Sequence[str]) -> str:
    """How many of the study's datasets a headline covers: 'all 3 datasets', '2 of 5 datasets'.

    Read from the analysis's main table (its first); an analysis whose table has no dataset
    column pooled every dataset ('3 datasets pooled'). Empty for a one-dataset study.
    """
    n = len(datasets)
    if n <= 1 or not a.tables:
        return ""
    main = next(iter(a.tables.values()))
    rows = _SCOPE_ROWS.get(a.key)
    if rows is not None and rows[0] in main.columns:  # the rows its reading quotes
        main = main.filter(pl.col(rows[0]) >= rows[1])
    if "dataset" not in main.columns:
        return f"{n} datasets pooled"
    k = main["dataset"].drop_nulls().n_unique()
    if k >= n:
        return "both datasets" if n == 2 else f"all {n} datasets"
    return f"{k} of {n} datasets"


def headline(a: AnalysisResult, datasets: Sequence[str]) -> tuple[str, str]:
    """The analysis's title with its scope, and its headline (the reading's first sentence)."""
    scope = _scope(a, datasets)
    return (f"{a.title} ({scope})" if scope else a.title), _first_sentence(a.reading)


def alerts(report: ReportContents) -> list[str]:
    """What a reader must know before any number: percent-scaled scores, unextracted answers.

    A file whose scores lie in [0, 100] with no declared range was analysed as it is (a mean of
    61.875, intervals in those units); the ingest note is repeated in the report's first lines.
    So are lm-eval's answers its filter could not extract (``[invalid]``, scored as wrong) when
    they are at least a fifth of a model's answers on a task: its score there is mostly the
    extraction's (gpt-4o "scoring" 0 % on GPQA, far below a four-choice test's 25 %).
    """
    ing = report.ingest
    if ing is None:
        return []
    out = []
    pct = [n for n in ing.notes if "score_scale='percent'" in n]
    if pct:
        first = pct[0].split(": scores lie", 1)[0]
        more = f" (and {len(pct) - 1} more files)" if len(pct) > 1 else ""
        out.append(
            f"The scores of {first}{more} lie in [0, 100] and no range was declared: they were "
            "analysed as they are, so every mean, interval and difference is in those units. If "
            "they are percentages, run again with --rescale 100 (Python: score_scale='percent')."
        )
    out += _unextracted(ing.notes)
    return out


_NOT_EXTRACTED = re.compile(r"(.+) on (.+): (\d+) of (\d+) answers not extracted by the filter")


def _unextracted(notes: Sequence[str]) -> list[str]:
    """The alert for answers lm-eval's filter did not extract, from the loader's notes."""
    from evalstats.io.lm_eval import NOT_EXTRACTED_ALERT

    cases = []
    for n in notes:
        m = _NOT_EXTRACTED.match(n)
        if m and int(m.group(3)) >= NOT_EXTRACTED_ALERT * int(m.group(4)) > 0:
            cases.append((int(m.group(3)) / int(m.group(4)), m.group(1), m.group(2)))
    if not cases:
        return []
    cases.sort(reverse=True)
    share, model, task = cases[0]
    k = len(cases) - 1
    more = f" and {k} more model–task pair{'s' if k > 1 else ''}" if k else ""
    return [
        f"lm-eval's filter extracted no answer from {share:.0%} of {model}'s responses on "
        f"{task}{more}, and scored them as wrong: those scores measure the answer extraction "
        "as much as the model (the ingest notes list each). Check the filter's pattern "
        "against the responses, or compare with another filter or metric (--metric)."
    ]


_UNDECLARED = re.compile(r"metric (.+): unbounded, (higher|lower) is better \(no bounds declared\)")


def loader_notes(report: ReportContents) -> list[str]:
    """The ingest notes, with an undeclared metric described as the analyses treat it.

    A metric that declares no range but whose scores all lie in [0, 1] is analysed as on [0, 1]
    (Wilson and logit intervals, n*'s default epsilon, the planner); its note said "unbounded".
    """
    ing = report.ingest
    if ing is None:
        return []
    from evalstats.schema import unit_interval_metrics

    unit = unit_interval_metrics(report.units) if report.units is not None else {}
    out = []
    for n in ing.notes:
        m = _UNDECLARED.fullmatch(n)
        if m and unit.get(m.group(1)):
            n = (
                f"metric {m.group(1)}: no range declared; every score lies in [0, 1], so the "
                f"analyses treat it as on [0, 1], {m.group(2)} is better (declare it with "
                "--metric-range 0,1 to make it explicit)"
            )
        out.append(n)
    return out
