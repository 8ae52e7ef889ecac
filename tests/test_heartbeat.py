"""Progress inside long analyses (issue 30): which analysis, how far, on stderr."""

from __future__ import annotations

import contextlib
import io
import re

import pytest

from evalstats._heartbeat import beat, heartbeat
from evalstats.simulate import observations
from tests._cli import cli, ok


def _lines(mode, every, beats):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), heartbeat("nstar", mode):
        for done in beats:
            beat(done, beats[-1], "groups")
    return [ln for ln in err.getvalue().split("\n") if ln]


def test_beats_print_when_due_and_never_without_a_mode(monkeypatch):
    monkeypatch.setenv("EVALSTATS_PROGRESS_EVERY", "0")
    assert _lines("lines", 0, [1, 2, 3]) == [
        "report: nstar 1 of 3 groups (0 s)",
        "report: nstar 2 of 3 groups (0 s)",
        "report: nstar 3 of 3 groups (0 s)",
    ]
    # on a terminal each line clears the line the bar is drawn on
    assert all(ln.startswith("\r\x1b[2K") for ln in _lines("bar", 0, [1, 2]))
    monkeypatch.delenv("EVALSTATS_PROGRESS", raising=False)
    assert _lines(None, 0, [1, 2, 3]) == []  # no mode: silent
    assert _lines("lines", 0, [1]) != []
    monkeypatch.delenv("EVALSTATS_PROGRESS_EVERY")
    assert _lines("lines", None, list(range(1, 500))) == []  # the first line waits 5 s
    beat(1, 2, "groups")  # outside a heartbeat: nothing, no error


@pytest.fixture
def table(tmp_path):
    factors = {"shots": {0: 0.0, 5: 0.3}, "template": {"a": 0.0, "b": -0.2, "c": 0.1}}
    obs = observations(n_models=3, n_datasets=4, n_items=30, factors=factors, seed=0)
    path = tmp_path / "obs.csv"
    obs.write_csv(path)
    return path


def test_nstar_command_says_how_many_groups_are_done(table, monkeypatch):
    monkeypatch.setenv("EVALSTATS_PROGRESS_EVERY", "0")
    code, out, err = cli("nstar", str(table), "--n-resamples", "50")
    ok(code, err)
    seen = re.findall(r"^evalstats: nstar (\d+) of (\d+) groups \(\d+ s\)$", err, re.M)
    assert seen and seen[-1][0] == seen[-1][1] == "12"  # 3 models x 4 datasets
    assert "groups" not in out  # stdout stays the command's output


def test_report_analyses_say_how_far_they_are(table, tmp_path, monkeypatch):
    monkeypatch.setenv("EVALSTATS_PROGRESS_EVERY", "0")
    code, out, err = cli(
        "report", str(table), "--out", str(tmp_path / "r"), "--workers", "1", "--figures", "none"
    )
    ok(code, err)
    assert re.search(r"^report: nstar \d+ of 12 groups \(\d+ s\)$", err, re.M), err[-2000:]
    assert re.search(r"^report: anova [\d,]+ of [\d,]+ (permutations|sign flips)", err, re.M)
    code, out, err = cli(
        "report", str(table), "--out", str(tmp_path / "q"), "--workers", "1", "--figures",
        "none", "--quiet",
    )  # fmt: skip
    ok(code, err)
    assert " of 12 groups" not in err
