"""Issue 41: the whole report on random real-shaped designs never fails and says only what its
tables hold.

Each drawn design mixes what real dumps have: sparse or disjoint prompt variants (each model
with its own prompt ids), datasets with a single model, one-item groups, runs over different
items, a setting with several values, 0/1, 1-10, 0-100 and constant scores. The report is run
whole (every analysis); no analysis may fail through an evalstats bug, and the numbers the
headlines quote must be the tables' (a spread's variant count, a stability headline's items).
The default run draws a few designs; ``EVALSTATS_HYPOTHESIS_PROFILE=nightly`` or
``pytest -m slow`` draws 500.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import evalstats


@st.composite
def designs(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    n_models = draw(st.integers(1, 4))
    datasets = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))  # models per dataset
    n_items = draw(st.sampled_from([1, 3, 12, 30]))
    n_variants = draw(st.integers(1, 4))
    disjoint = draw(st.booleans())  # each model under its own prompt ids
    sparse = draw(st.sampled_from([1.0, 0.6]))
    n_runs = draw(st.integers(1, 3))
    shifted_runs = draw(st.booleans())  # runs over different items
    providers = draw(st.sampled_from([(None,), ("p1", "p2")]))
    kind = draw(st.sampled_from(["binary", "rating", "percent", "constant"]))
    rows = []
    for d, k in enumerate(datasets):
        for m in range(min(k, n_models)):
            for prov in providers:
                for v in range(n_variants):
                    for r in range(n_runs):
                        start = r * n_items // 3 if shifted_runs else 0
                        for i in range(start, start + n_items):
                            if sparse < 1 and rng.random() > sparse and v > 0:
                                continue
                            p = 1 / (1 + np.exp(-(0.3 * m - 0.2 * v + rng.normal(0, 0.5))))
                            right = rng.random() < p
                            score = {
                                "binary": float(right),
                                "rating": float(
                                    rng.integers(6, 11) if right else rng.integers(1, 6)
                                ),
                                "percent": float(100 * right),
                                "constant": 1.0,
                            }[kind]
                            row = {
                                "model": f"m{m}",
                                "dataset": f"d{d}",
                                "item": f"i{i}",
                                "prompt_id": f"{'m' + str(m) + '-' if disjoint else ''}p{v}",
                                "run": r,
                                "score": score,
                            }
                            if prov is not None:
                                row["provider"] = prov
                            rows.append(row)
    return pl.DataFrame(rows)


def _check(obs: pl.DataFrame) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = evalstats.audit_report(obs, progress=False, seed=0)
    assert not rep.failed, [s.reason for s in rep.failed]
    done = {a.key: a for a in rep.analyses}
    for a in rep.analyses:
        assert "nan" not in a.reading.lower().replace("nanmean", ""), (a.key, a.reading)
    if "moments" in done:
        t = done["moments"].tables["moments"]
        reading = done["moments"].reading
        m = re.match(r"Across (.+?) prompt variants per group", reading)
        assert m or not reading.startswith("Across"), reading  # a headline states its basis
        if m:  # '4', '2 and 5', '2, 3 and 5' or '2 to 9': every count is a group's
            said = {int(x) for x in re.findall(r"\d+", m.group(1))}
            shown = set(t["n_variants"].to_list())
            assert said <= shown, (said, shown)  # a range's ends are counts of groups too
    if "stability" in done:
        t = done["stability"].tables["stability"]
        reading = done["stability"].reading
        m = re.search(r"identical runs of .+?, (.+?) items,", reading)
        assert m or "changed between runs" not in reading, reading
        if m:
            said = {int(x) for x in re.findall(r"\d+", m.group(1))}
            shown = set(t["n_items"].to_list())
            assert said <= shown, (said, shown)  # a range's ends are counts of groups too


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(obs=designs())
def test_the_report_on_random_real_shaped_designs(obs):
    _check(obs)


@pytest.mark.slow
@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(obs=designs())
def test_the_report_on_500_random_real_shaped_designs(obs):
    _check(obs)
