"""Compact letter display: models share a letter exactly when their pair is not significant."""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest

from evalstats.compare import compact_letters, compare_models, letter_groups
from evalstats.errors import ParameterError, SchemaError


def _shares(letters, a, b):
    return bool(set(letters[a]) & set(letters[b]))


def test_piepho_example_and_best_model_gets_a():
    # Piepho (2004), the classic chain: 1-3 and 2-4 differ, the rest do not
    models = ["t1", "t2", "t3", "t4"]
    diff = {frozenset({"t1", "t3"}), frozenset({"t2", "t4"}), frozenset({"t1", "t4"})}
    got = compact_letters(models, diff)
    assert got == {"t1": "a", "t2": "ab", "t3": "bc", "t4": "c"}


@pytest.mark.parametrize("seed", range(30))
def test_letters_share_iff_not_different_on_random_decisions(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 12))
    models = [f"m{j}" for j in range(k)]
    pairs = list(itertools.combinations(models, 2))
    # decisions from noisy means, as real tests make them (mostly but not always transitive)
    mean = np.sort(rng.normal(0, 1, k))[::-1]
    diff = {
        frozenset((a, b))
        for (i, a), (j, b) in itertools.combinations(enumerate(models), 2)
        if abs(mean[i] - mean[j]) + rng.normal(0, 0.3) > 0.8
    }
    got = compact_letters(models, diff)
    for a, b in pairs:
        assert _shares(got, a, b) == (frozenset((a, b)) not in diff), (a, b, got)
    assert "a" in got[models[0]]


def test_letters_all_same_without_differences_and_all_apart_with_all():
    models = ["x", "y", "z"]
    assert compact_letters(models, set()) == {"x": "a", "y": "a", "z": "a"}
    every = {frozenset(p) for p in itertools.combinations(models, 2)}
    assert compact_letters(models, every) == {"x": "a", "y": "b", "z": "c"}
    with pytest.raises(ParameterError, match="not a pair of `models`"):
        compact_letters(models, {frozenset({"x", "w"})})


def test_letter_groups_follow_compare_models_decisions():
    rng = np.random.default_rng(0)
    n, acc = 400, [0.5, 0.52, 0.7, 0.71]
    rows = []
    for j, a in enumerate(acc):
        y = rng.binomial(10, a, n) / 10  # item means over 10 runs
        rows.append(
            pl.DataFrame({"model": f"m{j}", "item": [str(i) for i in range(n)], "score": y})
        )
    obs = pl.concat(rows).with_columns(dataset=pl.lit("d"), variant=pl.lit("v"), run=pl.lit(0))
    pairs = compare_models(obs)
    groups = letter_groups(pairs)
    letters = dict(groups.select("model", "letters").iter_rows())
    for r in pairs.iter_rows(named=True):
        assert _shares(letters, r["model_a"], r["model_b"]) == (not r["reject"])
    assert groups["model"].to_list()[0] in ("m2", "m3") and "a" in groups["letters"][0]
    with pytest.raises(SchemaError, match="pass the result of compare_models"):
        letter_groups(pairs.drop("reject"))
