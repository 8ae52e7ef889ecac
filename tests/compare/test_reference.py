"""Frozen reference values from scipy/statsmodels: fixtures/reference/compare/ (see PROVENANCE)."""

from __future__ import annotations

import json

import polars as pl
import pytest
from numpy.testing import assert_allclose

from evalstats.compare import compare_models, intervals


@pytest.fixture(scope="module")
def ref():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "fixtures" / "reference" / "compare"
    df = pl.read_csv(root / "input.csv", schema_overrides={"item": pl.String})
    return df, json.loads((root / "expected.json").read_text())


def _obs(df: pl.DataFrame, score: str) -> pl.DataFrame:
    return df.select("model", "dataset", "item", "passage", pl.col(score).alias("score"))


def test_intervals_match_frozen_reference(ref):
    """Closed-form intervals: rtol 1e-10 (floating-point only)."""
    df, exp = ref
    t = intervals(_obs(df, "graded"), over="items", method="t")
    w = intervals(_obs(df, "correct"), over="items", method="wilson")
    c = intervals(_obs(df, "graded"), over="items", method="cluster", cluster="passage")
    for m, e in exp["intervals"].items():
        for frame, key in ((t, "t_graded"), (w, "wilson_correct"), (c, "cluster_graded")):
            row = frame.filter(model=m).row(0, named=True)
            assert_allclose([row["ci_low"], row["ci_high"]], e[key], rtol=1e-10)
        assert_allclose(c.filter(model=m)["se"].item(), e["cluster_graded_se"], rtol=1e-10)


def test_pairs_match_frozen_reference(ref):
    """McNemar p-values and corrections; the frozen t interval and t-power MDD are those of
    ``method='t'`` with no correction (the default intervals now invert the test used)."""
    df, exp = ref
    t = compare_models(_obs(df, "correct"), method="t", correction="none")
    for correction, key in (("holm", "holm"), ("bh", "fdr_bh")):
        out = compare_models(_obs(df, "correct"), correction=correction)
        assert (out["method"] == "mcnemar").all()
        for i, r in enumerate(out.iter_rows(named=True)):
            e = exp["pairs"][f"{r['model_a']}-{r['model_b']}"]
            assert_allclose(r["pvalue"], e["mcnemar_pvalue"], rtol=1e-10)
            assert r["statistic"] == e["mcnemar_statistic"]
            assert_allclose(r["pvalue_corrected"], exp[key][i], rtol=1e-10)
            rt = t.row(i, named=True)
            assert_allclose([rt["ci_low"], rt["ci_high"]], e["ci"], rtol=1e-10)
            # statsmodels' TTestPower root finder (the reference) stops near 1e-8 relative
            assert_allclose(rt["mdd"], e["mdd"], rtol=1e-6)
