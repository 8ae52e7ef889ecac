"""Tables and figures are written as each analysis finishes; the pages last, or not at all.

A long report shows its output as it goes (into the staging folder inside ``--out``), and a run
interrupted between two analyses leaves no ``report.html`` that looks complete and no staging
folder behind.
"""

from __future__ import annotations

import contextlib
import io
import re

import pytest

from evalstats.report import audit_report
from evalstats.report._staging import MANIFEST
from evalstats.report._writer import ReportWriter
from evalstats.simulate import observations

pytest.importorskip("matplotlib")

#: Cheap analyses only: the point is when files appear, not the statistics.
SKIP = ["converge", "attribution", "anova", "friedman", "correlation", "normality", "noise"]
FAST = {"nstar": {"n_resamples": 50}, "compare": {"n_resamples": 19}, "ranks": {"n_resamples": 20}}


@pytest.fixture(scope="module")
def obs():
    return observations(n_models=3, n_items=20, n_variants=5, n_runs=2, seed=0)  # n* needs 5


def _files(folder):
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


def test_each_analysis_is_on_disk_before_the_next_one_runs(tmp_path, obs):
    out = tmp_path / "r"
    seen: dict[str, set[str]] = {}
    with ReportWriter(out, figure_formats=["png"]) as writer:

        def on_result(result, so_far):
            writer.add(result, so_far)
            assert writer.staging is not None
            seen[result.key] = _files(writer.staging)
            assert not (out / "report.html").exists()

        report = audit_report(obs, options=FAST, skip=SKIP, on_result=on_result)
        html = writer.finish(report)
    keys = [a.key for a in report.analyses]
    assert keys[:2] == ["moments", "nstar"]
    first = seen["moments"]
    assert "tables/moments.csv" in first and "tables/moments.tex" in first
    assert "figures/prompt_spread.png" in first
    assert not any(f.startswith("tables/nstar") for f in first), "nstar before it ran"
    assert "figures/convergence.png" in seen["nstar"]
    assert not any(f.endswith((".html", ".md", ".json")) for f in seen[keys[-1]])
    # the pages came last, and list every figure drawn along the way, numbered in report order
    assert html == out / "report.html" and html.is_file()
    page = html.read_text()
    numbers = [int(n) for n in re.findall(r"Figure (\d+)[.:]", page)]
    assert numbers and numbers == sorted(numbers) and numbers[0] == 1
    assert not [p for p in out.iterdir() if p.name.startswith(".evalstats-partial")]


def test_an_interrupted_report_leaves_no_page_and_no_staging(tmp_path, obs):
    out = tmp_path / "r"
    with pytest.raises(KeyboardInterrupt):
        with ReportWriter(out, figure_formats=["png"]) as writer:

            def on_result(result, so_far):
                writer.add(result, so_far)
                if result.key == "intervals":
                    raise KeyboardInterrupt

            audit_report(obs, options=FAST, skip=SKIP, on_result=on_result)
    assert not out.exists() or not any(out.iterdir())


def test_cli_progress_lines_show_figures_right_after_their_analysis(tmp_path, obs):
    from evalstats.cli import main

    path = tmp_path / "dump.csv"
    obs.write_csv(path)
    args = ["report", str(path), "--out", str(tmp_path / "r"), "--figure-format", "png"]
    for key, opts in FAST.items():
        args += ["--option", f"{key}.n_resamples={opts['n_resamples']}"]
    args += ["--skip", ",".join(SKIP)]
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        assert main(args) == 0
    lines = [ln for ln in err.getvalue().splitlines() if ln.startswith(("report:", "figures:"))]
    order = [ln.split()[1] for ln in lines]
    # moments, then its figure, then n*, then its figure: not every figure at the end
    assert order.index("moments") < order.index("prompt_spread") < order.index("nstar")
    assert order.index("nstar") < order.index("convergence")
    assert not any("Warning" in ln for ln in err.getvalue().splitlines())


def test_figures_drawn_in_workers_while_analyses_run_are_the_same_files(tmp_path, obs):
    # figures drawn by two worker processes as the analyses finish, against one after the
    # other in this process: the same files byte for byte, the same pages
    outs = {}
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        with ReportWriter(out, figure_formats=["png", "pdf"], workers=workers) as writer:
            report = audit_report(obs, options=FAST, skip=SKIP, on_result=writer.add)
            writer.finish(report)
        outs[workers] = out
    one, two = (_files(outs[w]) for w in (1, 2))
    assert one == two and any(f.startswith("figures/") for f in one)
    for name in sorted(one):
        # the manifest records each file's inode and times: what proves the files are ours
        if name.endswith((".png", ".pdf", ".csv", ".tex", ".json", ".md")) and name != MANIFEST:
            assert (outs[1] / name).read_bytes() == (outs[2] / name).read_bytes(), name
