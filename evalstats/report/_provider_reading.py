"""The reading of the provider and setup audit (Epoch AI's "Why benchmarking is hard")."""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from evalstats.report._wording import _listed, _pct, _points, _pts

if TYPE_CHECKING:
    from evalstats.report._model import AnalysisResult, DataSummary

__all__ = ["providers_reading"]

#: How a multiplicity correction is named in a sentence.
_CORRECTION_NAMES = {
    "holm": "Holm",
    "bonferroni": "Bonferroni",
    "hochberg": "Hochberg",
    "bh": "Benjamini-Hochberg",
    "sidak": "Šidák",
    "none": "no correction",
}


def _who(r: dict, provider: str, with_model: bool = True) -> str:
    """A (model, level) pair as read: ``together (deepseek-v3)``, ``gpt-4 at Temperature 0.7``.

    A level of a setting other than the provider is named with its column: a bare ``0.7``
    says nothing.
    """
    level = r[provider]
    model = r.get("model") if provider != "model" and with_model else None
    if provider.lower() == "provider":
        return f"{level}{f' ({model})' if model is not None else ''}"
    return f"{model} at {provider} {level}" if model is not None else f"{provider} {level}"


def providers_reading(res: AnalysisResult, data: DataSummary) -> str:
    """Counts and the largest gaps, never a list of every provider (40-80 endpoints read)."""
    errors = res.tables["errors"]
    versus = res.tables.get("versus")
    policies = res.tables.get("policies")
    provider = res.params["provider"]
    # the model is named beside a level only where the audit holds several
    several = "model" in errors.columns and errors["model"].n_unique() > 1
    sentences = []
    if provider == "model":
        sentences.append(
            "There is no provider column, so error rates and both scoring policies are given "
            "per model, and each model is compared with the best covered one."
        )
    anyerr = errors.filter(pl.col("category") == "any")
    if anyerr.height:
        n_calls, n_err = int(anyerr["n_calls"].sum()), int(anyerr["n_errors"].sum())
        n_endpoints = anyerr.height
        # no provider column: the audit is per model, and a "(model, model) pair" is a model
        to = (
            f"{n_endpoints} models"
            if provider == "model"
            else f"{n_endpoints} (model, {provider}) pairs"
        )
        text = (
            f"{n_calls:,} calls to {to}; {n_err:,} "
            f"({_pct(n_err / n_calls if n_calls else None)}) ended in an error"
        )
        by_class = (
            errors.filter(pl.col("category") != "any")
            .group_by("category")
            .agg(pl.col("n_errors").sum())
            .filter(pl.col("n_errors") > 0)
            .sort("n_errors", "category", descending=[True, False])
        )
        if by_class.height:
            text += (
                " (" + ", ".join(f"{n:,} {c.replace('_', ' ')}" for c, n in by_class.rows()) + ")"
            )
        sentences.append(text + ".")
        worst = anyerr.filter(pl.col("n_errors") > 0).sort("rate", descending=True)
        if worst.height:
            items = [
                f"{_who(r, provider, several)} {_pct(r['rate'])}"
                for r in worst.head(3).iter_rows(named=True)
            ]
            clean = anyerr.height - worst.height
            sentences.append(
                f"Highest error rates: {', '.join(items)}"
                + (f"; {clean} of {anyerr.height} had none." if clean else ".")
            )
    if policies is not None and policies.height:
        gap = policies.filter(pl.col("difference").is_not_null()).sort("difference")
        if gap.height and gap["difference"][0] < 0:
            r = gap.row(0, named=True)
            sentences.append(
                "Scored as failures (Epoch AI's convention for judging providers), errors lower "
                f"a score by up to {_pts(-r['difference'])}{_points()} against errors excluded "
                f"({_who(r, provider, several)}: {_pct(r['as_failures'])} vs {_pct(r['excluded'])})."
            )
    if versus is not None and versus.height:
        others = versus.filter(~pl.col("is_reference"))
        refs = versus.filter(pl.col("is_reference"))
        reasons = sorted(set(refs["reference_reason"].to_list()))
        ref_names = sorted({str(x) for x in refs[provider].to_list()})
        ref_text = f"{_listed(ref_names)} ({', '.join(reasons)})" if ref_names else "none"
        counts = others.group_by("verdict").len().sort("len", "verdict", descending=[True, False])
        parts = []
        for verdict, n in counts.rows():
            sub = others.filter(pl.col("verdict") == verdict)
            if verdict.startswith(("lower", "higher")):
                sub = sub.sort(pl.col("difference").abs(), descending=True, nulls_last=True)
                names = [
                    f"{_who(r, provider, several)} {_pts(r['difference'], sign=True)}"
                    for r in sub.head(3).iter_rows(named=True)
                ]
            elif verdict == "within noise":  # the common case: counted, not named
                parts.append(f"{n} within noise")
                continue
            else:
                names = [_who(r, provider, several) for r in sub.head(3).iter_rows(named=True)]
            more = f" and {n - 3} more" if n > 3 else ""
            parts.append(f"{n} {verdict} ({', '.join(names)}{more})")
        if parts:
            correction = _CORRECTION_NAMES.get(
                str(res.params.get("correction", "holm")), res.params.get("correction")
            )
            against, over = (
                ("Against the reference model", "the models")
                if provider == "model"
                else ("Against the reference of each model", f"the model's {provider}s")
            )
            sentences.append(
                f"{against} (paired on items, {correction} over {over}; "
                f"reference: {ref_text}): {'; '.join(parts)}."
            )
        mdd = others["mdd"].drop_nulls()
        same = res.tables.get("settings")
        if same is not None and same.height and same["no_effect"].any():
            hits = same.filter(pl.col("no_effect"))
            items = [
                f"{r['setting']} {r['level']} vs {r['reference_level']} at {r[provider]}"
                f"{' (' + str(r['model']) + ')' if 'model' in r else ''}"
                for r in hits.head(3).iter_rows(named=True)
            ]
            more = f" and {hits.height - 3} more" if hits.height > 3 else ""
            sentences.append(
                f"{hits.height} setting level(s) changed no output at all: "
                f"{'; '.join(items)}{more} (identical answers on every shared call: was the "
                "setting passed through?)."
            )
        if mdd.len():
            lo, hi = _pts(float(mdd.min())), _pts(float(mdd.max()))
            sentences.append(
                f"Differences smaller than {lo if lo == hi else f'{lo} to {hi}'}{_points()} (the "
                "minimum detectable difference at 80 % power) cannot be told from noise with "
                "these items."
            )
    return " ".join(sentences)
