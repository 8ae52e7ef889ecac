"""Scores near the largest double or in the subnormal range (issue 45): ``intervals`` gives the
mean and interval it gives for the same scores at an ordinary scale, scaled back.

Before, the sums of scores near ±1e308 overflowed: whole models had an infinite mean and no
interval, with a note saying the scores were equal (they were not) or that there were too few
items (there were ten).
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from numpy.testing import assert_allclose
from scipy import stats

from evalstats.compare import intervals
from tests._cli import cli, ok

#: (scale, tolerance): the largest doubles, then the subnormal range, where the scores carry
#: fewer significant bits (5e-324 steps) so the comparison with the ordinary scale is looser.
SCALES = [(1.7e308, 1e-12), (-1.7e308, 1e-12), (1e-310, 1e-9)]


def _obs(scale: float, *, n_items: int = 10, n_prompts: int = 3, runs: int = 1) -> pl.DataFrame:
    rng = np.random.default_rng(7)
    base = rng.uniform(0.2, 1.0, size=(2, n_items, n_prompts, runs))
    rows = [
        {
            "model": f"m{m}",
            "dataset": "d",
            "item": str(i),
            "variant": f"p{p}",
            "run": r,
            "score": float(base[m, i, p, r] * scale),
        }
        for m in range(2)
        for i in range(n_items)
        for p in range(n_prompts)
        for r in range(runs)
    ]
    return pl.DataFrame(rows)


@pytest.mark.parametrize(("scale", "rtol"), SCALES)
@pytest.mark.parametrize("over", ["auto", "items"])
@pytest.mark.parametrize("runs", [1, 3])
def test_extreme_scores_give_the_ordinary_interval_scaled(scale, rtol, over, runs):
    got = intervals(_obs(scale, runs=runs), over=over, method="t")
    ref = intervals(_obs(1.0, runs=runs), over=over, method="t")
    assert got["note"].is_null().all(), got["note"].to_list()
    # a negative scale turns the interval round
    pairs = {"mean": "mean", "ci_low": "ci_low", "ci_high": "ci_high"}
    if scale < 0:
        pairs.update(ci_low="ci_high", ci_high="ci_low")
    for col, ref_col in pairs.items():
        x = got[col].to_numpy()
        assert np.isfinite(x).all(), (col, x)
        assert_allclose(x, ref[ref_col].to_numpy() * scale, rtol=rtol)
    assert_allclose(got["se"].to_numpy(), ref["se"].to_numpy() * abs(scale), rtol=rtol)


def test_extreme_item_scores_match_scipy_t_interval():
    """One prompt: the t interval over item means, checked against scipy on the scaled scores."""
    x = np.array([1e308, 9e307] * 5)
    frame = pl.DataFrame({"model": "m", "item": [str(i) for i in range(10)], "score": x})
    row = intervals(frame, method="t").row(0, named=True)
    m, se = np.mean(x / 1e307), stats.sem(x / 1e307)
    low, high = stats.t.interval(0.95, 9, loc=m, scale=se)
    assert_allclose([row["mean"], row["se"]], [m * 1e307, se * 1e307], rtol=1e-13)
    assert_allclose([row["ci_low"], row["ci_high"]], [low * 1e307, high * 1e307], rtol=1e-13)
    assert row["note"] is None


def test_extreme_unit_scores_over_variants():
    """A unit table (no items): 20 variants near -1e308 are not 'all equal'."""
    rng = np.random.default_rng(3)
    v = rng.uniform(0.5, 1.0, 20)
    units = pl.DataFrame(
        {"model": "m", "dataset": "d", "variant": [f"v{i}" for i in range(20)], "run": 0,
         "score": -1.7e308 * v}
    )  # fmt: skip
    row = intervals(units, method="t").row(0, named=True)
    ref = stats.t.interval(0.95, 19, loc=np.mean(v), scale=stats.sem(v))
    assert row["note"] is None
    assert_allclose(row["mean"], -1.7e308 * np.mean(v), rtol=1e-13)
    assert_allclose([row["ci_high"], row["ci_low"]], [-1.7e308 * r for r in ref], rtol=1e-12)


def test_ordinary_scores_are_bit_for_bit_unchanged():
    """Scores of ordinary size are not rescaled (the results keep their exact bits)."""
    from evalstats.compare._intervals import _scale_of

    frame = _obs(1.0)
    assert _scale_of(frame["score"].to_numpy()) == 1.0
    assert _scale_of(np.array([3e150, -1e-150])) == 1.0


def test_cli_intervals_of_extreme_scores_has_a_mean_for_every_model(tmp_path):
    data = tmp_path / "big.csv"
    _obs(-1e308).write_csv(data)
    code, out, err = cli("intervals", str(data))
    ok(code, err)
    rows = pl.read_csv(out.encode())
    assert rows.height == 2
    assert rows["mean"].is_finite().all() and rows["ci_low"].is_finite().all()
    assert rows["note"].is_null().all()
