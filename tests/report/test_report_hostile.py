"""Hostile names and unsafe output folders: nothing from the input runs, breaks a figure, or is lost.

Model names are input: a name with HTML, Markdown, mathtext dollars, terminal escapes or 20,000
characters must come out as text in every output, and a report folder is replaced whole or
refused, never left half old and half new.
"""

from __future__ import annotations

import contextlib
import io
import json
import re

import markdown
import polars as pl
import pytest

from evalstats._text import MAX_LABEL_CHARS, for_latex, for_markdown, for_terminal
from evalstats.errors import OutputError
from evalstats.report import audit_report
from evalstats.report._staging import MANIFEST, check_output
from evalstats.simulate import observations

XSS = '<img src=x onerror="alert(1)"><script>alert(2)</script>'
MATH = "a$b$c $$ \\frac{1}{0} $x^"
LONG = "m" * 20_000

#: Cheap analyses only: the point here is the text, not the statistics.
SKIP = ["nstar", "converge", "attribution", "anova", "ranks", "friedman", "compare"]


def _report(names: list[str]):
    obs = observations(n_models=len(names), n_items=20, n_variants=4, seed=0)
    rename = {f"m{i}": n for i, n in enumerate(names)}
    obs = obs.with_columns(pl.col("model").replace_strict(rename))
    return audit_report(obs, skip=SKIP)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    out = tmp_path_factory.mktemp("hostile") / "report"
    rep = _report([XSS, MATH, LONG])
    rep.write(out, figure_formats=["png"])
    return out


def test_markdown_report_renders_names_as_text_not_html(hostile):
    md = (hostile / "report.md").read_text()
    assert "<script>" not in md and "<img" not in md
    html = markdown.markdown(md, extensions=["tables"])
    # python-markdown (what mkdocs uses) passes raw HTML through: none may come from a name
    assert "<script" not in html
    assert all(tag.startswith('<img alt="Figure') for tag in re.findall(r"<img[^>]*>", html))
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in html


def test_html_report_escapes_names(hostile):
    page = (hostile / "report.html").read_text()
    assert "<script>alert(2)</script>" not in page
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in page


def test_dollar_signs_and_huge_names_draw_as_bounded_text(hostile):
    doc = json.loads((hostile / "results.json").read_text())
    assert doc["figures_skipped"] == []
    assert doc["figures"], "the report drew no figure"
    from PIL import Image

    for fig in doc["figures"]:
        with Image.open(hostile / fig["files"]["png"]) as im:
            width, height = im.size
        # a 20,000-character name would make a figure hundreds of inches wide if drawn whole
        assert width < 6000 and height < 6000, (fig["key"], im.size)


def test_plot_functions_draw_mathtext_dollars_literally():
    import matplotlib

    matplotlib.use("Agg")
    from evalstats.compare import intervals
    from evalstats.plots import plot_intervals

    obs = observations(n_models=2, n_items=30, n_variants=2, seed=1).with_columns(
        pl.col("model").replace_strict({"m0": MATH, "m1": LONG})
    )
    fig = plot_intervals(intervals(obs))
    fig.canvas.draw()  # mathtext would raise here on an unbalanced $
    texts = [t.get_text() for t in fig.findobj(matplotlib.text.Text)]
    assert any("$" in t for t in texts)
    assert max(len(line) for t in texts for line in t.split("\n")) <= MAX_LABEL_CHARS


def test_latex_tables_escape_names():
    tex = for_latex(XSS + MATH)
    assert "$" not in tex.replace(r"\$", "")
    assert "\\frac" not in tex


def test_text_functions_remove_control_characters():
    raw = "name\x1b[2J\x1b]0;title\x07\r\nnext\u202e"
    for text in (for_terminal(raw), for_markdown(raw), for_latex(raw)):
        assert not any(ord(c) < 32 or 0x7F <= ord(c) <= 0x9F for c in text)
        assert "\u202e" not in text
    assert for_terminal(LONG).endswith("…") and len(for_terminal(LONG)) == 2000


def test_cli_error_line_is_one_line_without_escape_sequences(tmp_path):
    from evalstats.cli import main

    bad = tmp_path / "bad.csv"
    bad.write_text('model,dataset,item,"sco\x1b[31mre\nx"\nm,d,1,0.5\n')
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["ingest", str(bad)])
    text = err.getvalue()
    assert code == 2
    assert text.count("\n") == 1 and text.startswith("evalstats: error: ")
    assert "\x1b" not in text and "Traceback" not in text


# --- the output folder -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small():
    return _report(["a", "b"])


def test_a_new_report_replaces_every_file_of_the_earlier_one(tmp_path, small):
    out = tmp_path / "r"
    small.write(out, figure_formats=["png", "svg"])
    (out / "notes.txt").write_text("mine")
    svg = sorted((out / "figures").glob("*.svg"))
    assert svg
    small.write(out, figure_formats=["png"])
    assert not list((out / "figures").glob("*.svg")), "files of the earlier report were left"
    assert (out / "notes.txt").read_text() == "mine", "a file the report did not write was removed"
    listed = [e["path"] for e in json.loads((out / MANIFEST).read_text())["files"]] + [MANIFEST]
    on_disk = sorted(
        p.relative_to(out).as_posix()
        for p in out.rglob("*")
        if p.is_file() and p.name != "notes.txt"
    )
    assert sorted(listed) == on_disk
    assert not [p for p in out.iterdir() if p.name.startswith(".evalstats-partial")]


def test_an_interrupted_write_leaves_the_earlier_report_as_it_was(tmp_path, small, monkeypatch):
    out = tmp_path / "r"
    small.write(out, figure_formats=["png"])
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}

    import evalstats.report._render as render

    def boom(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(render, "render_html", boom)
    with pytest.raises(KeyboardInterrupt):
        small.write(out, figure_formats=["png", "pdf"])
    after = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before
    assert not [p for p in out.iterdir() if p.name.startswith(".evalstats-partial")]


def test_a_folder_with_other_files_is_refused_without_force(tmp_path, small):
    out = tmp_path / "photos"
    out.mkdir()
    (out / "report.html").write_text("not ours")
    with pytest.raises(OutputError, match="holds other files.*--force"):
        small.write(out)
    assert (out / "report.html").read_text() == "not ours"
    small.write(out, force=True, figure_formats=["png"])
    assert "not ours" not in (out / "report.html").read_text()


def test_a_tampered_manifest_cannot_delete_files_outside_the_folder(tmp_path, small):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    out = tmp_path / "r"
    out.mkdir()
    (out / MANIFEST).write_text(json.dumps({"files": ["../victim.txt", str(victim), "/etc/x"]}))
    with pytest.raises(OutputError, match="holds other files"):
        small.write(out, figure_formats=["png"])
    small.write(out, figure_formats=["png"], force=True)
    assert victim.read_text() == "keep"


@pytest.mark.parametrize("case", ["file", "under_a_file"])
def test_cli_out_that_cannot_be_a_folder_exits_2_with_one_line(tmp_path, case):
    from evalstats.cli import main

    target = tmp_path / "x.txt"
    target.write_text("a file")
    out = target if case == "file" else target / "sub"
    data = tmp_path / "d.csv"
    observations(n_models=2, n_items=10, n_variants=2, seed=0).write_csv(data)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["report", str(data), "--out", str(out), "--quiet"])
    assert code == 2, err.getvalue()
    assert err.getvalue().count("\n") == 1 and "Traceback" not in err.getvalue()
    assert str(target) in err.getvalue()


def test_read_only_target_is_refused_before_any_work(tmp_path, monkeypatch):
    # the machines run tests as root, for whom chmod does not make a folder read-only
    import evalstats.report._staging as staging

    monkeypatch.setattr(staging.os, "access", lambda path, mode: False)
    with pytest.raises(OutputError, match="read-only"):
        check_output(tmp_path / "new")
