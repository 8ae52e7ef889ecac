"""Issue 41: an analysis that fails through an evalstats bug is reported as failed, the other
analyses run and are written, and the command exits 1 saying where the reason is."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from evalstats.cli import main
from evalstats.report import _analyses
from evalstats.simulate import observations

SKIP = "nstar,converge,anova,attribution,noise,ranks,friedman,compare,ppi,stability"


def _report(tmp_path, capsys) -> tuple[int, str, dict, Path]:
    """The report of a small dump: exit code, stderr, results.json, the output folder."""
    obs = observations(n_models=2, n_items=20, n_variants=3, seed=0)
    path = tmp_path / "obs.parquet"
    obs.write_parquet(path)
    out = tmp_path / "rep"
    code = main(
        ["report", str(path), "--out", str(out), "--quiet", "--workers", "1", "--skip", SKIP,
         "--figures", "none"]
    )  # fmt: skip
    err = capsys.readouterr().err
    doc = json.loads((out / "results.json").read_text()) if code in (0, 1) else {}
    return code, err, doc, out


def test_a_failing_analysis_is_reported_and_the_report_goes_on(tmp_path, monkeypatch, capsys):
    def broken(ctx, params):
        raise RuntimeError("planted bug")

    spec = replace(_analyses.SPECS["intervals"], run=broken)
    monkeypatch.setitem(_analyses.SPECS, "intervals", spec)
    code, err, doc, out = _report(tmp_path, capsys)
    assert code == 1 and "Traceback" not in err
    assert "1 analysis(es) failed through an evalstats bug (intervals" in err
    reasons = {s["key"]: s["reason"] for s in doc["skipped"]}
    assert reasons["intervals"].startswith("failed (an evalstats bug): RuntimeError: planted bug")
    assert any(a["key"] == "moments" for a in doc["analyses"])  # the others ran
    assert (out / "report.html").exists()


def test_without_a_bug_the_report_exits_0(tmp_path, capsys):
    code, err, _, _ = _report(tmp_path, capsys)
    assert code == 0, err


def test_a_failing_reading_is_reported_like_a_failing_analysis(tmp_path, monkeypatch, capsys):
    """A reading that raised (a name clash in the components' reading, found on a real lm-eval
    dump) crashed the whole report with a traceback; it fails its analysis alone."""

    def broken(result, data):
        raise TypeError("planted reading bug")

    monkeypatch.setitem(_analyses.READINGS, "intervals", broken)
    code, err, doc, _ = _report(tmp_path, capsys)
    assert code == 1 and "Traceback" not in err
    reasons = {s["key"]: s["reason"] for s in doc["skipped"]}
    assert reasons["intervals"].startswith("failed (an evalstats bug): TypeError: planted reading")
    assert any(a["key"] == "moments" for a in doc["analyses"])
