"""The report folder: results.json against its schema, figure and table files, HTML and Markdown."""

from __future__ import annotations

import csv
import json
import re

import jsonschema
import pytest

from evalstats.report._tables import JSON_DIGITS, round_floats


def test_results_json_validates_against_the_published_schema(demo_results, schema):
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(demo_results, schema, cls=jsonschema.Draft202012Validator)


def test_schema_rejects_a_malformed_document(demo_results, schema):
    broken = json.loads(json.dumps(demo_results))
    del broken["analyses"][0]["params"]
    with pytest.raises(jsonschema.ValidationError, match="'params' is a required property"):
        jsonschema.validate(broken, schema, cls=jsonschema.Draft202012Validator)


def test_demo_runs_every_analysis_and_says_where_it_wrote(demo_run, demo_results):
    assert demo_run.code == 0
    assert demo_run.stdout.strip() == str(demo_run.out / "report.html")
    assert demo_run.stderr == ""  # --quiet
    keys = [a["key"] for a in demo_results["analyses"]]
    # three runs are too few for the Lilliefors test, and the demo has no gold scores for PPI:
    # both skipped, and the reasons say so
    assert keys == [
        "moments",
        "nstar",
        "converge",
        "stability",
        "correlation",
        "anova",
        "attribution",
        "intervals",
        "compare",
        "ranks",
        "noise",
        "audit",
        "providers",
    ]
    assert [(s["key"], "3 runs" in s["reason"]) for s in demo_results["skipped"]] == [
        ("normality", True),
        ("ppi", False),  # the demo has no gold scores
        ("friedman", False),  # two datasets: the design supports no ranking across datasets
    ]
    friedman = next(s for s in demo_results["skipped"] if s["key"] == "friedman")
    assert "2 dataset(s)" in friedman["reason"] and "3 or more datasets" in friedman["reason"]
    assert demo_results["parameters"]["default"] == {"template": "plain", "shots": 0, "cot": False}


def test_every_figure_file_exists_and_is_non_empty(demo_run, demo_results):
    figures = demo_results["figures"]
    assert len(figures) >= 12 and demo_results["figures_skipped"] == []
    signatures = {"png": b"\x89PNG", "pdf": b"%PDF", "svg": b"<?xml"}
    for fig in figures:
        assert set(fig["files"]) == {"png", "pdf", "svg"}
        for fmt, rel in fig["files"].items():
            data = (demo_run.out / rel).read_bytes()
            assert len(data) > 1000 and data.startswith(signatures[fmt]), rel
    on_disk = {p.name for p in (demo_run.out / "figures").iterdir()}
    assert on_disk == {p.split("/")[-1] for f in figures for p in f["files"].values()}


def test_every_table_is_written_as_csv_and_latex_up_to_the_row_limit(demo_run, demo_results):
    from evalstats.report._tables import TEX_MAX_ROWS

    n = long = 0
    for analysis in demo_results["analyses"]:
        for name, table in analysis["tables"].items():
            with (demo_run.out / table["files"]["csv"]).open() as fh:
                rows = list(csv.DictReader(fh))
            assert len(rows) == len(table["rows"]), name
            assert list(rows[0]) == [c["name"] for c in table["columns"]]
            if len(rows) > TEX_MAX_ROWS:  # CSV only, and said so
                assert "tex" not in table["files"], name
                long += 1
            else:
                tex = (demo_run.out / table["files"]["tex"]).read_text()
                assert r"\begin{tabular}" in tex and r"\bottomrule" in tex
            n += 1
    assert n == len(list((demo_run.out / "tables").glob("*.csv")))
    assert n - long == len(list((demo_run.out / "tables").glob("*.tex")))
    assert long, "the demo's n* curve table is longer than the LaTeX limit"


def test_html_page_is_self_contained(demo_run, demo_results):
    html = (demo_run.out / "report.html").read_text()
    images = re.findall(r'<img src="([^"]+)"', html)
    assert len(images) == len(demo_results["figures"])
    assert all(src.startswith("data:image/png;base64,") for src in images)
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)
    assert "<script" not in html and "@import" not in html
    for analysis in demo_results["analyses"]:
        assert f'id="a-{analysis["key"]}"' in html
    assert "43,200 rows read" in html  # the ingest report
    assert "Parameters and versions" in html and "xgboost" in html


def test_markdown_links_every_figure(demo_run, demo_results):
    md = (demo_run.out / "report.md").read_text()
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md)
    assert links == [f["files"]["png"] for f in demo_results["figures"]]
    # names are Markdown-escaped (an underscore would otherwise start emphasis)
    assert md.startswith(r"# Audit report: demo\_observations.parquet")


def test_results_json_floats_are_rounded_for_reproducibility():
    assert round_floats({"a": [0.1 + 0.2, 1 / 3], "b": 7, "c": "x"}) == {
        "a": [0.3, float(f"{1 / 3:.{JSON_DIGITS}g}")],
        "b": 7,
        "c": "x",
    }


def test_results_json_rows_are_one_line_each_and_read_back_as_the_table():
    import json
    import math

    import polars as pl

    from evalstats.report._tables import dumps_document, table_to_dict

    frame = pl.DataFrame(
        {
            "x": [0.1 + 0.2, float("nan"), None, float("inf"), -1e-300],
            "name": ["a", None, 'c\n"d"', "é", ""],
            "k": [1, None, 3, 4, 5],
            "ok": [True, False, None, True, False],
            "xs": [[1.0, float("nan")], None, [], [2.5], [0.3]],
        }
    )
    table = table_to_dict(frame)

    def expected(v):  # the rule by hand: 10 significant digits, NaN and infinities null
        if isinstance(v, float):
            return None if not math.isfinite(v) else float(f"{v:.10g}")
        if isinstance(v, list):
            return [expected(x) for x in v]
        return v

    assert table["rows"] == [{k: expected(v) for k, v in r.items()} for r in frame.to_dicts()]
    doc = {"analyses": [{"key": "a", "tables": {"t": table}}], "figures": []}
    text = dumps_document(doc)
    assert json.loads(text) == doc
    one_line = [json.loads(ln.strip().rstrip(",")) for ln in text.splitlines() if '{"x"' in ln]
    assert one_line == table["rows"]  # each row on a line of its own
    assert text.endswith("}\n")


def test_the_stability_reading_names_a_variant_setting_once(demo_results):
    # the demo's variant column spells its factor settings and the factor columns are appended
    # to the key: the reading named a 190-character variant with every setting twice
    import re

    from evalstats.report._wording import _variant_text

    reading = next(a for a in demo_results["analyses"] if a["key"] == "stability")["reading"]
    variant = re.search(r"variant (\S+)\)", reading)[1]
    parts = [p.lower() for p in variant.split("|")]
    assert len(parts) == len(set(parts)) and "template=" in variant
    assert _variant_text("a=1|B=2|a=1|b=2|c=3") == "a=1|B=2|c=3"
    assert _variant_text("v00") == "v00"
