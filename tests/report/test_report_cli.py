"""``evalstats report`` and ``demo`` on the command line; the report equals the single commands."""

from __future__ import annotations

import io
import json
import math
import shlex
import sys

import pytest

from evalstats.cli import main
from evalstats.demo import DEMO_FILE
from evalstats.simulate import observations


def _same(a, b) -> bool:
    """Equal rows; floats to the 10 significant digits results.json keeps (its docstring)."""
    if isinstance(a, float) or isinstance(b, float):
        if a is None or b is None:
            return a is b
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


def _diff(a: list[dict], b: list[dict]) -> list[tuple]:
    """The (row, column, a, b) that differ, for the assertion message."""
    out = [(i, k, x.get(k), y.get(k)) for i, (x, y) in enumerate(zip(a, b)) for k in x]
    return [d for d in out if not _same(d[2], d[3])][:5] or [("rows", len(a), len(b))]


def _run_json(capsys, argv: list[str]) -> dict:
    capsys.readouterr()
    assert main(argv) == 0, argv
    return json.loads(capsys.readouterr().out)


def test_report_numbers_equal_the_individual_commands(demo_results, capsys):
    checked = []
    for analysis in demo_results["analyses"]:
        line = analysis["command_line"]
        if line is None:
            continue
        doc = _run_json(capsys, shlex.split(line)[1:])
        tables = list(analysis["tables"].values())
        assert _same(doc["rows"], tables[0]["rows"]), (
            analysis["key"],
            _diff(doc["rows"], tables[0]["rows"]),
        )
        # the other tables of audit and providers are in the command's --json too
        for name, table in analysis["tables"].items():
            if name in doc:
                assert _same(doc[name], table["rows"]), (analysis["key"], name)
        checked.append(analysis["key"])
    assert checked == [
        "moments",
        "nstar",
        "converge",
        "stability",
        "correlation",
        "anova",
        "attribution",
        "intervals",
        "compare",
        "noise",
        "audit",
        "providers",
    ]


def test_report_equals_commands_typed_by_hand(demo_results, capsys):
    """The recorded command lines are not trusted blindly: the same numbers by hand."""
    path = str(DEMO_FILE)
    by_key = {a["key"]: a for a in demo_results["analyses"]}
    nstar = _run_json(
        capsys, ["nstar", path, "--n-resamples", "500", "--method", "bootstrap", "--json"]
    )
    assert _same(nstar["rows"], by_key["nstar"]["tables"]["nstar"]["rows"])
    factors = ",".join(demo_results["parameters"]["factors"])
    anova = _run_json(
        capsys,
        [
            "anova",
            path,
            "--factors",
            factors,
            "--block",
            "model,dataset",
            "--n-resamples",
            "200",
            "--json",
        ],
    )
    assert _same(anova["rows"], by_key["anova"]["tables"]["anova"]["rows"])
    audit = _run_json(
        capsys, ["audit", path, "--default", "template=plain,shots=0,cot=False", "--json"]
    )
    pairs = by_key["audit"]["tables"]["pairs"]["rows"]
    assert _same(audit["rows"], pairs), _diff(audit["rows"], pairs)
    assert _same(audit["models"], by_key["audit"]["tables"]["models"]["rows"])
    providers = _run_json(capsys, ["providers", path, "--n-resamples", "199", "--json"])
    assert _same(providers["rows"], by_key["providers"]["tables"]["versus"]["rows"])
    assert _same(providers["scores"], by_key["providers"]["tables"]["scores"]["rows"])
    assert _same(providers["differences"], by_key["providers"]["tables"]["differences"]["rows"])


@pytest.fixture(scope="module")
def small_csv(tmp_path_factory):
    obs = observations(
        n_models=2,
        n_items=20,
        n_variants=6,
        n_runs=2,
        factors={
            "shots": {0: 0.0, 5: 0.1},
            "cot": {False: 0.0, True: 0.0},
            "sep": {"a": 0, "b": 0},
        },
        instability=0.2,
        seed=0,
    )
    path = tmp_path_factory.mktemp("dump") / "dump.csv"
    obs.write_csv(path)
    return path


FAST = [
    "--option", "nstar.n_resamples=100",
    "--option", "correlation.n_resamples=99",
    "--option", "anova.n_resamples=99",
    "--option", "compare.n_resamples=99",
    "--option", "ranks.n_resamples=50",
    "--skip", "attribution",
]  # fmt: skip


def test_report_on_a_csv_lists_what_it_skipped(small_csv, tmp_path, capsys):
    out = tmp_path / "rep"
    code = main(["report", str(small_csv), "--out", str(out), "--figure-format", "png", *FAST])
    captured = capsys.readouterr()
    assert code == 0
    assert captured.out.strip() == str(out / "report.html")
    assert "ingest (table)" in captured.err
    assert "skipped attribution: skipped on request" in captured.err
    assert "skipped audit: no default configuration given" in captured.err
    assert "skipped providers: no provider column" in captured.err
    assert "Traceback" not in captured.err
    assert sorted(p.suffix for p in (out / "figures").iterdir()) == [".png"] * len(
        list((out / "figures").iterdir())
    )
    results = json.loads((out / "results.json").read_text())
    assert results["source"]["format"] == "table"
    assert results["parameters"]["options"]["anova"] == {"n_resamples": 99}


def test_quiet_silences_progress_bars(small_csv, tmp_path, monkeypatch, capsys):
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    loud, quiet = Terminal(), Terminal()
    monkeypatch.setattr(sys, "stderr", loud)
    assert main(["report", str(small_csv), "--out", str(tmp_path / "a"), *FAST]) == 0
    monkeypatch.setattr(sys, "stderr", quiet)
    assert main(["report", str(small_csv), "--out", str(tmp_path / "b"), "--quiet", *FAST]) == 0
    assert "report: " in loud.getvalue() and "figures: " in loud.getvalue()
    assert "%|" in loud.getvalue()  # a tqdm bar
    assert quiet.getvalue() == ""


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--option", "anova.bogus=1"], "`--option` sets anova.bogus"),
        (["--option", "anova"], "`--option` expects ANALYSIS.PARAMETER=VALUE"),
        (["--skip", "everything"], "`--skip` names the analysis 'everything'"),
        (["--default", "shots=7"], "`--default` sets shots='7', which is not a level of 'shots'"),
        (["--figure-format", "gif"], "`--figure-format` must name some of png, pdf, svg"),
    ],
)
def test_user_errors_exit_2_with_one_line(small_csv, tmp_path, capsys, extra, message):
    code = main(["report", str(small_csv), "--out", str(tmp_path / "x"), "--quiet", *FAST, *extra])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("evalstats: error:") and message in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_recorded_command_flags_are_options_of_each_subcommand():
    """The report's table of flags (report/_commands.py) names only options the subcommand's
    parser really has, so a recorded command line never uses a flag that does not exist."""
    import argparse

    from evalstats.cli import build_parser
    from evalstats.report._commands import _FLAGS

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    for command, flags in _FLAGS.items():
        dests = {a.dest for a in sub.choices[command]._actions}
        assert flags <= dests, (command, sorted(flags - dests))
