"""Degenerate results reach the figures (issue 17): NaN statistics never become NaN axis limits.

Found by the report fuzz test (tests/fuzz): a tiny table whose unit scores are constant gives an
ANOVA with NaN effect sizes (as it should: a DegenerateDataWarning, no F from rounding noise),
and ``evalstats report`` then died in matplotlib's ``set_xlim`` with a traceback.
"""

from __future__ import annotations

import contextlib
import io
import math

import matplotlib
import polars as pl
import pytest

from evalstats.cli import main

matplotlib.use("Agg")

#: Two models, two templates, six items: every unit (model, template) scores 0.5.
CONSTANT_UNITS = "model,item,factor_x,score\n" + "".join(
    f"{m},{i},{t},{(i + (m == 'b')) % 2}\n" for m in "ab" for i in range(6) for t in ("t1", "t2")
)


def test_report_on_constant_unit_scores_writes_a_report(tmp_path):
    path = tmp_path / "tiny.csv"
    path.write_text(CONSTANT_UNITS)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["report", str(path), "--out", str(tmp_path / "rep")])
    assert code == 0, err.getvalue()
    assert "Traceback" not in err.getvalue()
    assert (tmp_path / "rep" / "results.json").is_file()


def test_anova_figure_of_constant_scores_has_finite_limits(tmp_path):
    from evalstats.attribution import factor_anova
    from evalstats.errors import DegenerateDataWarning
    from evalstats.io import read
    from evalstats.plots import plot_anova_effects

    path = tmp_path / "tiny.csv"
    path.write_text(CONSTANT_UNITS)
    obs = read(path).observations
    with pytest.warns(DegenerateDataWarning, match="constant"):
        res = factor_anova(obs, factors=["factor_x"])
    assert math.isnan(res.table.filter(pl.col("term") == "factor_x")["eta_sq"][0])
    fig = plot_anova_effects(res)
    ax = fig.axes[0]
    assert all(math.isfinite(v) for v in (*ax.get_xlim(), *ax.get_ylim()))
    assert ax.get_xlim() == (0.0, 1.0)
    assert [t.get_text() for t in ax.texts] == ["n/a"]  # not drawn as an effect of 0
    assert [b.get_width() for b in ax.patches] == [0.0]


#: Found by the report fuzz test: a damaged tiny table (a line cut short, rows set aside) whose
#: REML variance components have a standard error 10^300 times the estimate.
DAMAGED = (
    b"model,item,tem8late,score\na,0,t1,0\na,0,t2,0\na,1,t1,1\na,1,t2,1\na,2,t1,0\na,2,t2,0\n"
    b"a,3,t1,1\na,3,t2,1\na,4,t1,0\na,4,t2,0\na,5,t1,1\na,5,t2,1\nb,0,t1,1\nb,0,t21\nb,2,t2,1\nb,3"
)


def test_report_on_a_table_with_unbounded_variance_intervals_writes_a_report(tmp_path):
    path = tmp_path / "tiny.csv"
    path.write_bytes(DAMAGED)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["report", str(path), "--out", str(tmp_path / "rep"), "--on-invalid", "skip"])
    assert code == 0, err.getvalue()
    assert "Traceback" not in err.getvalue()
    assert (tmp_path / "rep" / "results.json").is_file()
