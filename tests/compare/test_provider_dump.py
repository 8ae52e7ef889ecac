"""Acceptance test of issue 42 on a synthetic multi-provider dump with planted truth.

One model (``deepseek-v3``) served by six providers, 200 items x 3 runs each:

- ``deepseek``: the developer's API (the reference), no errors; called at two
  ``reasoning_effort`` levels that give identical outputs (a setting with no effect);
- ``twin``: the same quality, answered independently: within noise;
- ``flaky``: the same quality when it answers, but 429s, 5xx, timeouts and empty responses
  with no score: lower because of errors;
- ``short``: cuts responses at 2,048 tokens while 8,192 were requested (its own limit is
  lower), those answers scored 0: lower because of errors (``provider_limit``);
- ``quant``: 15 points worse answers and repetition loops until max_tokens: lower because
  of answers and errors;
- ``island``: serves other items only: named as sharing no items with the reference.

Every number checked here is computed by hand from the rows written, not by the library.
"""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from evalstats.cli import main
from evalstats.compare import provider_audit
from evalstats.io import read_table

N_ITEMS, N_RUNS, MAX_TOKENS = 200, 3, 8192
LOOP = "Let me check again. " * 40


def _dump(seed: int = 42) -> tuple[pl.DataFrame, dict[str, dict[str, int]]]:
    rng = np.random.default_rng(seed)
    p_item = rng.beta(4, 1.2, N_ITEMS)  # item difficulty shared by every provider
    rows: list[dict] = []
    planted: dict[str, dict[str, int]] = {}

    def add(
        provider,
        item,
        run,
        score,
        *,
        error=None,
        response=None,
        finish="stop",
        tokens=300,
        effort="high",
    ):
        if response is None and score is not None:
            response = "The answer is A." if score == 1.0 else "The answer is B."
        rows.append(
            {
                "model": "deepseek-v3",
                "provider": provider,
                "item": item,
                "run": run,
                "score": score,
                "error": error,
                "response": response,
                "finish_reason": finish,
                "max_tokens": MAX_TOKENS,
                "output_tokens": tokens,
                "reasoning_effort": effort,
            }
        )

    def plant(provider, cls):
        planted.setdefault(provider, {})
        planted[provider][cls] = planted[provider].get(cls, 0) + 1

    for i in range(N_ITEMS):
        item = f"q{i}"
        for r in range(N_RUNS):
            correct = float(rng.random() < p_item[i])
            for effort in ("low", "high"):  # the setting changes nothing
                add("deepseek", item, r, correct, effort=effort)
            # twin: the same quality, answered independently
            add("twin", item, r, float(rng.random() < p_item[i]))
            # flaky: same quality, 25 % errors without a score
            u = rng.random()
            if u < 0.10:
                add(
                    "flaky", item, r, None, error="Error code: 429 - Too Many Requests", finish=None
                )
                plant("flaky", "rate_limit")
            elif u < 0.17:
                add("flaky", item, r, None, error="503 Service Unavailable", finish=None)
                plant("flaky", "server_error")
            elif u < 0.22:
                add("flaky", item, r, None, error="upstream request timeout (504)", finish=None)
                plant("flaky", "timeout")
            elif u < 0.25:
                add("flaky", item, r, None, error=None, response="", finish="stop", tokens=0)
                plant("flaky", "empty")
            else:
                add("flaky", item, r, float(rng.random() < p_item[i]))
            # short: 20 % cut at its own 2,048-token limit, graded wrong
            if rng.random() < 0.20:
                add(
                    "short",
                    item,
                    r,
                    0.0,
                    response="Step 1: ... (cut)",
                    finish="length",
                    tokens=2048,
                )
                plant("short", "provider_limit")
            else:
                add("short", item, r, float(rng.random() < p_item[i]))
            # quant: 15 points worse, 6 % repetition loops until max_tokens, graded wrong
            if rng.random() < 0.06:
                add("quant", item, r, 0.0, response=LOOP, finish="length", tokens=MAX_TOKENS)
                plant("quant", "repetition")
            else:
                add("quant", item, r, float(rng.random() < max(p_item[i] - 0.15, 0.0)))
    for i in range(40):
        for r in range(N_RUNS):
            add("island", f"other{i}", r, float(rng.random() < 0.8))
    return pl.DataFrame(rows, infer_schema_length=None), planted


@pytest.fixture(scope="module")
def dump(tmp_path_factory):
    frame, planted = _dump()
    path = tmp_path_factory.mktemp("providers") / "dump.csv"
    frame.write_csv(path)
    return path, frame, planted


@pytest.fixture(scope="module")
def audit(dump):
    path, _, _ = dump
    return provider_audit(read_table(path).observations, n_resamples=999)


def _by_hand(frame: pl.DataFrame) -> dict[str, tuple[float, float, int, int]]:
    """(as_failures, excluded, n_calls, n_errors) per provider, from the rows written."""
    out = {}
    for (p,), g in frame.partition_by("provider", as_dict=True).items():
        calls = g.to_dicts()
        errored = [
            c
            for c in calls
            if c["error"] is not None
            or (c["score"] is None and not c["response"])
            or c["finish_reason"] == "length"
        ]
        clean = [c for c in calls if c not in errored]
        total = sum(c["score"] for c in clean)
        out[p] = (total / len(calls), total / len(clean), len(calls), len(errored))
    return out


def test_every_error_is_counted_and_classed(dump, audit):
    path, frame, planted = dump
    _, report = read_table(path)
    assert report.rows_read == report.rows_kept == frame.height  # nothing set aside
    want: dict[str, int] = {}
    for classes in planted.values():
        for k, v in classes.items():
            want[k] = want.get(k, 0) + v
    assert dict(report.errors) == want
    unscored = sum(
        v for k, v in want.items() if k in ("rate_limit", "server_error", "timeout", "empty")
    )
    assert report.errors_unscored == unscored
    got = audit.errors.filter(pl.col("category") != "any", pl.col("n_errors") > 0)
    got = {(p, c): n for p, c, n in got.select("provider", "category", "n_errors").rows()}
    assert got == {(p, c): n for p, cl in planted.items() for c, n in cl.items()}


def test_both_scores_match_a_hand_computation(dump, audit):
    _, frame, _ = dump
    hand = _by_hand(frame)
    pol = audit.policies
    assert sorted(pol["provider"].to_list()) == sorted(hand)
    for r in pol.iter_rows(named=True):
        fail, excl, n, e = hand[r["provider"]]
        assert (r["n_calls"], r["n_errors"]) == (n, e)
        assert r["as_failures"] == pytest.approx(fail, rel=1e-12)
        assert r["excluded"] == pytest.approx(excl, rel=1e-12)
        assert r["difference"] == pytest.approx(fail - excl, rel=1e-12)
        assert r["error_rate"] == pytest.approx(e / n, rel=1e-12)
        if e:
            assert r["difference_ci_low"] < fail - excl < r["difference_ci_high"]
            assert r["error_ci_low"] < e / n < r["error_ci_high"]


def test_provider_verdicts_match_the_planted_truth(audit):
    v = audit.versus
    assert set(v["reference"]) == {"deepseek"}
    assert set(v["reference_reason"]) == {"the developer's API"}
    verdict = dict(v.select("provider", "verdict").rows())
    assert verdict == {
        "deepseek": "reference",
        "twin": "within noise",
        "flaky": "lower (errors)",
        "short": "lower (errors)",
        "quant": "lower (answers and errors)",
        "island": "no items shared with the reference",
    }
    twin = v.filter(pl.col("provider") == "twin").row(0, named=True)
    assert twin["n_items"] == N_ITEMS
    assert abs(twin["difference"]) < twin["mdd"]  # within what 200 items can detect


def test_a_setting_with_no_effect_is_found(dump):
    path, _, _ = dump
    res = provider_audit(
        read_table(path).observations,
        provider="reasoning_effort",
        by=("model", "provider"),
        reference="high",
        n_resamples=999,
    )
    row = res.versus.filter(pl.col("provider") == "deepseek", ~pl.col("is_reference"))
    assert row.select("reasoning_effort", "identical_outputs", "verdict").rows() == [
        ("low", 1.0, "identical outputs (no effect)")
    ]


def test_the_setting_with_no_effect_is_found_without_asking(audit):
    """Every factor column is checked by default: reasoning_effort changed nothing."""
    hits = audit.settings.filter(pl.col("no_effect"))
    assert hits.select("provider", "setting", "level", "reference_level", "n_calls").rows() == [
        ("deepseek", "reasoning_effort", "low", "high", N_ITEMS * N_RUNS)
    ]


def test_cli_providers_and_report_agree_with_the_api(dump, audit, tmp_path, capsys):
    path, _, _ = dump
    out = tmp_path / "versus.csv"
    code = main(
        ["providers", str(path), "--table", "versus", "--n-resamples", "999", "--out", str(out)]
    )
    err = capsys.readouterr().err
    assert code == 0 and "Traceback" not in err
    cli = pl.read_csv(out).sort("provider")
    api = audit.versus.sort("provider")
    assert cli["verdict"].to_list() == api["verdict"].to_list()
    assert cli["difference"].to_list() == pytest.approx(api["difference"].to_list(), nan_ok=True)
    out = tmp_path / "settings.csv"
    args = ["providers", str(path), "--table", "settings", "--settings", "reasoning_effort"]
    assert main([*args, "--out", str(out)]) == 0
    assert pl.read_csv(out).filter(pl.col("no_effect"))["provider"].to_list() == ["deepseek"]
    out = tmp_path / "policies.csv"
    assert main(["providers", str(path), "--table", "policies", "--out", str(out)]) == 0
    cli = pl.read_csv(out).sort("provider")
    api = audit.policies.sort("provider")
    for col in ("as_failures", "excluded", "difference", "error_rate"):
        assert cli[col].to_list() == pytest.approx(api[col].to_list())
    rep = tmp_path / "report"
    code = main(
        [
            "report",
            str(path),
            "--out",
            str(rep),
            "--figure-format",
            "none",
            "--quiet",
            "--option",
            "providers.n_resamples=999",
        ]
    )
    err = capsys.readouterr().err
    assert code == 0 and "Traceback" not in err
    results = json.loads((rep / "results.json").read_text())
    _, report = read_table(path)
    assert results["ingest"]["errors"] == dict(report.errors)
    prov = next(a for a in results["analyses"] if a["key"] == "providers")
    rows = {r["provider"]: r for r in prov["tables"]["policies"]["rows"]}
    for r in audit.policies.iter_rows(named=True):  # the report's numbers are the API's
        got = rows[r["provider"]]
        assert (got["n_calls"], got["n_errors"]) == (r["n_calls"], r["n_errors"])
        assert got["as_failures"] == pytest.approx(r["as_failures"], rel=1e-9)
        assert got["excluded"] == pytest.approx(r["excluded"], rel=1e-9)
    verdicts = {r["provider"]: r["verdict"] for r in prov["tables"]["versus"]["rows"]}
    assert verdicts == dict(audit.versus.select("provider", "verdict").rows())
    reading = prov["reading"]
    n_err = sum(report.errors.values())
    assert f"{n_err:,} (" in reading and "2 lower (errors)" in reading
    assert "1 no items shared with the reference (island)" in reading
    assert "paired on items, Holm over the model's providers" in reading
    assert "1 setting level(s) changed no output at all: reasoning_effort low vs high" in reading
    md = (rep / "report.md").read_text()  # the Data section accounts for the errored calls
    header = next(line for line in md.splitlines() if line.startswith("| model | provider | ref"))
    assert header.endswith("| verdict |") and "all\\_failed" not in header  # what a reader needs
    assert f"Kept {n_err:,} errored calls" in md
    assert f"{report.errors_unscored:,} without a score" in md


def test_report_without_a_provider_column_compares_the_setting_that_varies(tmp_path):
    """A judge run under two configurations, one refused by its endpoint (no provider column)."""
    rows = [
        {
            "model": "judge",
            "cfg": c,
            "item": str(i),
            "run": r,
            "score": None if c == "b" else float((i + r) % 3 == 0),
            "error": "Error code: 503 - overloaded" if c == "b" else None,
        }
        for c in ("a", "b")
        for i in range(30)
        for r in range(2)
    ]
    path = tmp_path / "judge.csv"
    pl.DataFrame(rows, infer_schema_length=None).write_csv(path)
    out = tmp_path / "rep"
    code = main(
        [
            "report",
            str(path),
            "--roles",
            "cfg=setting",
            "--out",
            str(out),
            "--figure-format",
            "none",
            "--quiet",
            "--option",
            "providers.n_resamples=99",
        ]
    )
    assert code == 0
    prov = next(
        a
        for a in json.loads((out / "results.json").read_text())["analyses"]
        if a["key"] == "providers"
    )
    verdicts = {r["cfg"]: r["verdict"] for r in prov["tables"]["versus"]["rows"]}
    assert verdicts == {"a": "reference", "b": "every call failed (errors)"}
    # a setting's level is named with its column (a bare 'b' says nothing)
    assert "Highest error rates: cfg b 100.0 %" in prov["reading"]
