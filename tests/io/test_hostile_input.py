"""Broken and hostile input (issue 17): one line naming file, row and field, or rows set aside
by a counted reason; never a traceback, never a value guessed from the first rows."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import textwrap
import warnings
import zipfile
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from evalstats.attribution import factor_anova
from evalstats.errors import DegenerateDataWarning, IngestError
from evalstats.io import read
from tests._cli import cli as _cli
from tests._cli import one_line_error as _one_line_error

ROOT = Path(__file__).resolve().parents[2]


# --- Inspect logs: every field the reader uses has its documented type ------------------------

BASE = {
    "version": 2,
    "status": "success",
    "eval": {"task": "t", "model": "m", "scorers": [{"name": "match"}]},
    "samples": [{"id": i, "epoch": 1, "scores": {"match": {"value": "C"}}} for i in range(3)],
}


def _log(tmp_path: Path, name: str, edit) -> Path:
    doc = json.loads(json.dumps(BASE))
    edit(doc)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize(
    ("name", "edit", "needle"),
    [
        ("model_obj", lambda d: d["eval"].__setitem__("model", {"a": 1}), "'eval.model'"),
        ("plan_str", lambda d: d.__setitem__("plan", {"config": "x"}), "'plan.config'"),
        ("samples_dict", lambda d: d.__setitem__("samples", {"a": 1}), "'samples'"),
        ("sample_int", lambda d: d["samples"].__setitem__(0, 5), "sample 1"),
        ("id_list", lambda d: d["samples"][1].__setitem__("id", [1]), "sample 2: field 'id'"),
        ("args_list", lambda d: d["eval"].__setitem__("task_args", [1]), "'eval.task_args'"),
        ("scorers_int", lambda d: d["eval"].__setitem__("scorers", 3), "'eval.scorers'"),
    ],
)
def test_inspect_fields_of_the_wrong_type_are_one_line(tmp_path, name, edit, needle):
    path = _log(tmp_path, name, edit)
    line = _one_line_error(*_cli("ingest", str(path), "--format", "inspect")[::2], needle)
    assert path.name in line


def test_inspect_bad_epochs_and_huge_scores_are_set_aside(tmp_path):
    def edit(d):
        d["samples"][0]["epoch"] = 0.5
        d["samples"][1]["epoch"] = 10**30
        d["samples"][2]["scores"]["match"]["value"] = 10**400

    obs, report = read(_log(tmp_path, "epochs", edit), format="inspect", on_invalid="skip")
    assert report.rows_read == 3 and report.rows_kept == 0
    # a non-integer or out-of-range epoch gives no run; 10**400 parses to inf
    assert report.set_aside == {"missing_run": 2, "nonfinite_score": 1}


def test_non_utf8_sample_member_is_one_line(tmp_path):
    src = ROOT / "fixtures/dumps/inspect/synthetic/arith_rubric.eval"
    dst = tmp_path / "bad.eval"
    with zipfile.ZipFile(src) as z, zipfile.ZipFile(dst, "w") as out:
        for info in z.infolist():
            data = z.read(info)
            if info.filename.startswith("samples/"):
                data = b'{"id": "\xff\xfe"}'
            out.writestr(info.filename, data)
    _one_line_error(*_cli("ingest", str(dst))[::2], "bad.eval", "UTF-8")


# --- compressed members: streamed under a cap ---------------------------------------------------


def _bomb(path: Path, size: int) -> None:
    """An .eval whose one sample member is ``size`` bytes of zeros (deflate: ~1/1000 on disk)."""
    header = {"version": 2, "status": "success", "eval": {"task": "t", "model": "m"}}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("header.json", json.dumps(header))
        with z.open("samples/1_epoch_1.json", "w", force_zip64=True) as fh:
            chunk = b"0" * 2**20
            for _ in range(size // len(chunk)):
                fh.write(chunk)


def test_member_above_the_cap_is_one_line(tmp_path, monkeypatch):
    path = tmp_path / "bomb.eval"
    _bomb(path, 8 * 2**20)
    monkeypatch.setenv("EVALSTATS_MAX_MEMBER_BYTES", str(2**20))
    line = _one_line_error(*_cli("ingest", str(path))[::2], "bomb.eval", "samples/1_epoch_1.json")
    assert "EVALSTATS_MAX_MEMBER_BYTES" in line
    monkeypatch.setenv("EVALSTATS_MAX_MEMBER_BYTES", "lots")
    _one_line_error(*_cli("ingest", str(path))[::2], "EVALSTATS_MAX_MEMBER_BYTES")


def test_a_stream_is_cut_at_the_cap_whatever_its_header_declares():
    """The declared size is checked first; the stream itself is read in chunks up to the cap
    (a Zstandard member, or a gzip table, carries no trustworthy size)."""
    import gzip

    from evalstats.io._files import read_capped

    with pytest.raises(IngestError, match="more than 1,048,576 bytes"):
        read_capped(
            gzip.GzipFile(fileobj=io.BytesIO(gzip.compress(b"0" * 3 * 2**20))), "x", "f", 2**20
        )
    assert read_capped(io.BytesIO(b"abc"), "x", "f", 3) == b"abc"


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS semantics")
def test_a_1_gib_member_is_read_in_bounded_memory(tmp_path):
    """A ~1 MB archive holding 1 GiB of zeros, ingested under a 1.5 GiB address-space limit."""
    path = tmp_path / "bomb.eval"
    _bomb(path, 2**30)
    assert path.stat().st_size < 4 * 2**20
    limit = 1536 * 2**20
    code = textwrap.dedent(
        f"""
        import resource, sys
        resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
        import polars  # must import under the limit
        from evalstats.cli import main
        sys.exit(main(["ingest", {str(path)!r}]))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "EVALSTATS_MAX_MEMBER_BYTES": str(64 * 2**20)},
        timeout=300,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "MemoryError" not in done.stderr
    assert "more than" in done.stderr and "bomb.eval" in done.stderr


# --- tables: types fixed by the schema ---------------------------------------------------------


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_late_text_item_and_late_fractional_score_read_correctly(tmp_path, suffix):
    n = 10_001
    rows = [{"model": "m", "item": i, "score": i % 2} for i in range(n)]
    rows.append({"model": "m", "item": "q-late", "score": 0.5})
    path = tmp_path / f"late{suffix}"
    if suffix == ".csv":
        path.write_text(
            "model,item,score\n" + "".join(f"{r['model']},{r['item']},{r['score']}\n" for r in rows)
        )
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    obs, report = read(path)
    df = obs.collect()
    assert report.rows_read == report.rows_kept == n + 1
    assert df.schema["item"] == pl.String and df.schema["score"] == pl.Float64
    assert df.filter(pl.col("item") == "q-late")["score"].to_list() == [0.5]


def test_trailing_blank_lines_are_not_rows_and_not_fatal(tmp_path):
    # issue 28: blank lines at the end of a file are not rows read and set aside
    path = tmp_path / "blank.csv"
    path.write_text("model,item,score\nm,a,1\nm,b,0\n\n\n")
    obs, report = read(path)
    assert report.rows_kept == 2 and report.set_aside == {} and report.rows_read == 2
    assert report.rows_read == report.rows_kept + sum(report.set_aside.values())


def test_fractional_runs_are_set_aside_never_truncated(tmp_path):
    path = tmp_path / "runs.csv"
    path.write_text("model,item,run,score\nm,a,0,1\nm,a,0.5,0\nm,b,1.7,1\nm,b,1.0,1\nm,c,-1,1\n")
    line = _one_line_error(*_cli("ingest", str(path))[::2], "row 2", "'run'", "whole number")
    assert "runs.csv" in line
    obs, report = read(path, on_invalid="skip")
    assert report.set_aside == {"invalid_run": 3}
    assert obs.collect().select("item", "run").rows() == [("a", 0), ("b", 1)]


def test_list_typed_model_column_is_one_line(tmp_path):
    path = tmp_path / "lists.jsonl"
    path.write_text('{"model": ["m"], "item": "a", "score": 1}\n')
    _one_line_error(*_cli("ingest", str(path))[::2], "lists.jsonl", "'model'")


# --- factor columns are part of the variant and the duplicate key ------------------------------


def test_template_and_shots_both_make_the_variant(tmp_path):
    path = tmp_path / "ts.csv"
    path.write_text("model,item,template,shots,score\nm,a,t1,0,1\nm,a,t1,5,0\nm,b,t1,0,1\n")
    obs, report = read(path)
    assert report.rows_kept == 3 and report.set_aside == {}
    assert sorted(set(obs.collect()["variant"])) == ["template=t1|shots=0", "template=t1|shots=5"]


def test_an_explicit_variant_column_is_joined_with_the_factors(tmp_path):
    path = tmp_path / "vs.csv"
    path.write_text("model,item,variant,shots,score\nm,a,v,0,1\nm,a,v,5,0\n")
    obs, report = read(path)
    assert report.rows_kept == 2
    assert sorted(obs.collect()["variant"]) == ["v|shots=0", "v|shots=5"]


# --- no rows left, degenerate data -------------------------------------------------------------


@pytest.mark.parametrize(
    "argv", [["compare"], ["anova", "--factors", "template"], ["report", "--out", "{tmp}/r"]]
)
def test_no_rows_left_is_one_line(tmp_path, argv):
    path = tmp_path / "empty.csv"
    path.write_text("model,item,template,score\nm,a,t,x\n")
    args = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    line = _one_line_error(*_cli(args[0], str(path), *args[1:], "--on-invalid", "skip")[::2])
    assert "no rows left" in line and "empty.csv" in line and "unparseable_score" in line


def test_anova_on_constant_scores_is_nan_with_a_warning():
    rows = [
        {"model": "m", "dataset": "d", "variant": f"{t}{s}", "run": r, "score": 0.7,
         "template": t, "shots": s}
        for t in "abc" for s in (0, 5) for r in range(3)
    ]  # fmt: skip
    units = pl.DataFrame(rows)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = factor_anova(
            units, factors=["template", "shots"], n_resamples=199, seed=0, runs="replicates"
        )
    assert any(issubclass(w.category, DegenerateDataWarning) for w in caught)
    body = res.table.filter(pl.col("term") != "Residual")
    assert body["pvalue_perm"].is_null().all()
    assert np.isnan(body["pvalue"].to_numpy()).all()


def test_ingest_error_names_file_and_row():
    err = IngestError("bad", path="x.csv", row=3, column="score")
    assert str(err).startswith("x.csv, row 3, column 'score'")


def test_lm_eval_results_fields_of_the_wrong_type_are_not_read(tmp_path):
    src = ROOT / "fixtures/dumps/lm_eval/output/EleutherAI__pythia-160m"
    stamp = "2024-06-11T09-15-32.417823"
    (tmp_path / f"samples_arc_easy_{stamp}.jsonl").write_bytes(
        (src / f"samples_arc_easy_{stamp}.jsonl").read_bytes()
    )
    doc = json.loads((src / f"results_{stamp}.json").read_text())
    doc.update({"config": "x", "n-shot": [1], "higher_is_better": 3})
    (tmp_path / f"results_{stamp}.json").write_text(json.dumps(doc))
    obs, report = read(tmp_path, format="lm-eval")
    assert report.rows_kept > 0
    assert report.rows_read == report.rows_kept + sum(report.set_aside.values())
