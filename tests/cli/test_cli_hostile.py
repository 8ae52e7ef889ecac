"""Crashes found by a hostile user (issue 28): each is exit 2 and one line, or a correct result.

Factor names xgboost refuses, a name of 50,000 lines, dollar signs in names that reached
matplotlib's mathtext at draw time, JSON nested too deeply for Python's parser, a full disk or
a file-size limit while writing, Ctrl-C and SIGTERM.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from evalstats.cli import main
from evalstats.simulate import observations
from tests._cli import cli as _cli
from tests._cli import ok as _ok
from tests._cli import one_line_error as _one_line

ROOT = Path(__file__).resolve().parents[2]
#: Cheap analyses: the point here is not the statistics.
SKIP = "nstar,converge,anova,ranks,friedman,compare,noise"


def _table(path: Path, models: list[str], *, factors: dict | None = None, metric: str = "score"):
    rng = np.random.default_rng(0)
    rows = []
    for m in models:
        for i in range(12):
            for v in range(3):
                row = {"model": m, "item": str(i), "variant": f"v{v}", "metric": metric}
                row["score"] = float(rng.random() < 0.5 + 0.1 * v)
                rows.append(row)
    frame = pl.DataFrame(rows)
    if factors:
        frame = frame.drop("variant").with_columns(
            pl.Series(name, [levels[i % len(levels)] for i in range(frame.height)])
            for name, levels in factors.items()
        )
        # a planted effect of the first factor, so that attribution has something to find
        first, levels = next(iter(factors.items()))
        effect = pl.col(first).replace_strict(levels, [0.4 * k for k in range(len(levels))])
        frame = frame.with_columns((pl.col("score") * 0.2 + effect).alias("score"))
    frame.write_csv(path)
    return path


# --- xgboost feature names --------------------------------------------------------------------


@pytest.mark.parametrize("names", [("tmpl[a]", "sep<1>"), ("a]b", "[x"), ("<", "ok")])
def test_factor_names_xgboost_refuses_are_attributed(tmp_path, names):
    path = _table(
        tmp_path / "f.csv", ["a", "b"], factors={names[0]: ["t1", "t2", "t3"], names[1]: ["x", "y"]}
    )
    code, out, err = _cli("attribute", str(path), "--factors", ",".join(names))
    _ok(code, err)
    assert [ln.split(",")[0] for ln in out.splitlines()[1:]] == list(names)


def test_report_attributes_factor_names_with_brackets(tmp_path):
    path = _table(
        tmp_path / "f.csv",
        ["a", "b"],
        factors={"tmpl[a]": ["t1", "t2", "t3"], "sep<1>": ["x", "y"]},
    )
    code, _, err = _cli(
        "report", str(path), "--out", str(tmp_path / "r"), "--quiet", "--skip", SKIP,
        "--figure-format", "png",
    )  # fmt: skip
    _ok(code, err)
    doc = json.loads((tmp_path / "r" / "results.json").read_text())
    attribution = next(a for a in doc["analyses"] if a["key"] == "attribution")
    assert "tmpl[a]" in json.dumps(attribution)


# --- names that broke a figure ----------------------------------------------------------------


@pytest.mark.parametrize(
    "names",
    [
        ["a\n" * 50_000, "b"],  # 50,000 lines: Agg could not allocate the figure
        ["x" + "\r\n" * 20_000, "\n" * 3000 + "y"],
    ],
    ids=["lines", "crlf"],
)
def test_names_of_thousands_of_lines_draw_bounded_figures(tmp_path, names):
    path = _table(tmp_path / "l.csv", names)
    code, _, err = _cli(
        "report", str(path), "--out", str(tmp_path / "r"), "--quiet", "--skip", SKIP,
        "--figure-format", "png",
    )  # fmt: skip
    _ok(code, err)
    doc = json.loads((tmp_path / "r" / "results.json").read_text())
    assert doc["figures"] and not doc["figures_skipped"]
    from PIL import Image

    for fig in doc["figures"]:
        with Image.open(tmp_path / "r" / fig["files"]["png"]) as im:
            assert max(im.size) < 8000, (fig["key"], im.size)


@pytest.mark.parametrize(
    ("models", "metric"),
    [
        (["a$b", "$\\undefinedcmd{x}$"], "acc$\\frac{$"),
        (["$x^$", "$$"], "score"),
        (["plain", "other"], "$\\sqrt{"),
    ],
)
def test_dollar_signs_in_names_never_reach_mathtext(tmp_path, models, metric):
    path = _table(tmp_path / "d.csv", models, metric=metric)
    code, _, err = _cli(
        "report", str(path), "--out", str(tmp_path / "r"), "--quiet", "--skip", SKIP,
        "--figure-format", "png",
    )  # fmt: skip
    _ok(code, err)
    doc = json.loads((tmp_path / "r" / "results.json").read_text())
    assert doc["figures"] and not doc["figures_skipped"]


def test_a_plot_saved_outside_evalstats_draws_dollar_tick_labels_as_text(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    from evalstats.compare import intervals
    from evalstats.plots import plot_intervals

    obs = observations(n_models=2, n_items=20, n_variants=2, seed=1).with_columns(
        pl.col("model").replace_strict({"m0": "$\\undefinedcmd$", "m1": "a$b"})
    )
    fig = plot_intervals(intervals(obs))
    fig.savefig(tmp_path / "x.png")  # outside plain_text and paper_style: rcParams as the user's
    labels = [t.get_text() for ax in fig.axes for t in ax.get_yticklabels() + ax.get_xticklabels()]
    assert "$\\undefinedcmd$" in labels


# --- JSON nested too deeply -------------------------------------------------------------------

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    ("name", "text", "needle"),
    [
        (
            "deep_field.jsonl",
            '{"model": "a", "item": "1", "score": 1, "x": ' + DEEP + "}\n",
            "row 1",
        ),
        ("deep_line.jsonl", '{"model": "a", "item": "1", "score": 1}\n' + DEEP + "\n", "row 2"),
        ("deep_spec.jsonl", '{"spec": ' + DEEP + "}\n", "deep_spec.jsonl"),
        ("deep_array.jsonl", DEEP + "\n", "deep_array.jsonl"),
    ],
)
def test_json_nested_too_deeply_is_one_line(tmp_path, name, text, needle):
    path = tmp_path / name
    path.write_text(text)
    _one_line(*_cli("ingest", str(path))[::2], name, needle)


def test_openai_evals_event_nested_too_deeply_is_set_aside(tmp_path):
    spec = {"spec": {"completion_fns": ["m"], "eval_name": "e.s1.v0", "run_id": "r"}}
    good = {
        "run_id": "r",
        "event_id": 0,
        "sample_id": "e.s1.0",
        "type": "match",
        "data": {"correct": True},
    }
    lines = [
        json.dumps(spec),
        json.dumps(good),
        '{"run_id": "r", "event_id": 1, "data": ' + DEEP + "}",
    ]
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(lines) + "\n")
    code, _, err = _cli("ingest", str(path), "--format", "openai-evals", "--on-invalid", "skip")
    _ok(code, err)
    # row 2: the second event (the spec line is not a row)
    _one_line(*_cli("ingest", str(path), "--format", "openai-evals")[::2], "log.jsonl", "row 2")


def test_llm_stability_response_nested_too_deeply_is_an_unparsed_answer(tmp_path):
    from evalstats.io.llm_stability import parse_answer

    assert parse_answer('{"Answer": ' + DEEP + "}") is None
    assert parse_answer("{" * 5000 + "answer is (B)") == "(B)"


# --- full disk, file-size limit ----------------------------------------------------------------


def _enospc(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".jsonl", ".json"])
def test_a_full_disk_while_writing_a_table_is_one_line(tmp_path, monkeypatch, suffix):
    data = _table(tmp_path / "d.csv", ["a", "b"])
    out = tmp_path / f"res{suffix}"
    for method in ("write_csv", "write_parquet", "write_ndjson"):
        monkeypatch.setattr(pl.DataFrame, method, _enospc)
    monkeypatch.setattr(Path, "write_text", _enospc)
    _one_line(*_cli("intervals", str(data), "--out", str(out))[::2], str(out), "No space left")


def test_a_full_disk_behind_stdout_is_one_line(tmp_path):
    data = _table(tmp_path / "d.csv", ["a", "b"])

    class Full(io.StringIO):
        def write(self, s):
            raise OSError(errno.ENOSPC, "No space left on device")

    err = io.StringIO()
    with contextlib.redirect_stdout(Full()), contextlib.redirect_stderr(err):
        code = main(["intervals", str(data)])
    _one_line(code, err.getvalue(), "No space left")


def test_a_full_disk_while_writing_a_report_keeps_the_earlier_one(tmp_path, monkeypatch):
    data = _table(tmp_path / "d.csv", ["a", "b"])
    out = tmp_path / "r"
    args = [
        "report",
        str(data),
        "--out",
        str(out),
        "--quiet",
        "--skip",
        SKIP,
        "--figure-format",
        "png",
    ]
    _ok(*_cli(*args)[::2])
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    real = Path.write_text

    def full(self, *a, **k):
        if self.name == "report.md":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, *a, **k)

    monkeypatch.setattr(Path, "write_text", full)
    _one_line(*_cli(*args)[::2], str(out), "No space left")
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert not [p for p in out.iterdir() if p.name.startswith(".evalstats-partial")]


def _limited(argv: list[str], limit: int) -> subprocess.CompletedProcess:
    code = textwrap.dedent(
        f"""
        import resource, sys
        import polars  # imported before the limit: nothing of it is written
        from evalstats.cli import main
        resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit}))
        sys.exit(main({argv!r}))
        """
    )
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=600
    )


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_FSIZE semantics")
@pytest.mark.parametrize("case", ["ingest_parquet", "ingest_observations_csv", "report"])
def test_a_file_size_limit_is_one_line_not_a_signal(tmp_path, case):
    data = tmp_path / "d.csv"
    observations(n_models=3, n_items=400, n_variants=4, seed=0).write_csv(data)
    if case == "ingest_parquet":
        argv = [
            "ingest",
            str(data),
            "--level",
            "observations",
            "--out",
            str(tmp_path / "o.parquet"),
        ]
        limit = 4096
    elif case == "ingest_observations_csv":
        argv = ["ingest", str(data), "--level", "observations", "--out", str(tmp_path / "o.csv")]
        limit = 4096
    else:
        argv = ["report", str(data), "--out", str(tmp_path / "r"), "--quiet", "--skip", SKIP]
        limit = 20_000
    done = _limited(argv, limit)
    assert done.returncode == 2, done.stderr[-3000:]
    lines = [ln for ln in done.stderr.splitlines() if ln.startswith("evalstats: error: ")]
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert "File too large" in lines[0] or "file-size limit" in lines[0]
    if case == "report":
        assert not (tmp_path / "r" / "report.html").exists()
        assert not [
            p for p in (tmp_path / "r").iterdir() if p.name.startswith(".evalstats-partial")
        ]


# --- Ctrl-C -----------------------------------------------------------------------------------


def test_ctrl_c_is_one_line_and_exit_130(tmp_path, monkeypatch):
    data = _table(tmp_path / "d.csv", ["a", "b"])
    import evalstats.compare as compare

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(compare, "intervals", interrupted)
    code, out, err = _cli("intervals", str(data))
    assert code == 130 and "Traceback" not in err
    assert (
        err.strip().splitlines()[-1]
        == "evalstats: error: interrupted (Ctrl-C); nothing more was written."
    )
    assert [ln for ln in err.splitlines() if ln.startswith("evalstats: error")] == [
        err.strip().splitlines()[-1]
    ]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups")
@pytest.mark.parametrize("workers", ["1", "2"])
def test_ctrl_c_in_a_terminal_reaches_every_process_and_prints_one_line(tmp_path, workers):
    data = tmp_path / "d.csv"
    # large enough that the report is still running well after the interrupt is sent (it got
    # faster: at 6 models x 300 items it could finish in the second the test waited)
    observations(n_models=8, n_items=800, n_variants=8, n_runs=3, seed=0).write_csv(data)
    out = tmp_path / "r"
    code = textwrap.dedent(
        f"""
        import sys
        from evalstats.cli import main
        sys.exit(main(["report", {str(data)!r}, "--out", {str(out)!r}, "--quiet",
                       "--workers", {workers!r}]))
        """
    )
    # a terminal sends SIGINT to the whole foreground process group: workers included
    proc = subprocess.Popen(
        [sys.executable, "-c", code], cwd=ROOT, stderr=subprocess.PIPE, stdout=subprocess.PIPE,
        text=True, start_new_session=True,
    )  # fmt: skip
    end = time.monotonic() + 240
    while time.monotonic() < end and proc.poll() is None:
        if out.is_dir() and any(p.name.startswith(".evalstats-partial") for p in out.iterdir()):
            break
        time.sleep(0.05)
    time.sleep(0.5)
    assert proc.poll() is None, "the report ended before it could be interrupted"
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-3000:]
    assert [ln for ln in err.splitlines() if ln.strip()] == [
        "evalstats: error: interrupted (Ctrl-C); nothing more was written."
    ]
    assert not (out / "report.html").exists()
    assert not [p for p in out.iterdir() if p.name.startswith(".evalstats-partial")]


# --- degenerate scores that divided by zero ---------------------------------------------------


@pytest.mark.parametrize("value", [0.0, 1.0])
def test_constant_scores_under_a_declared_range_draw_the_noise_figures(tmp_path, value):
    rows = [
        {"model": m, "item": str(i), "variant": f"v{v}", "run": r, "score": value}
        for m in ("a", "b") for i in range(12) for v in range(4) for r in range(2)
    ]  # fmt: skip
    path = tmp_path / "c.csv"
    pl.DataFrame(rows).write_csv(path)
    code, _, err = _cli(
        "noise", str(path), "--metric-range", "0,1", "--plot", str(tmp_path / "n.png")
    )
    _ok(code, err)
    code, _, err = _cli(
        "report", str(path), "--out", str(tmp_path / "r"), "--metric-range", "0,1", "--quiet",
        "--skip", "nstar,converge,anova,ranks,friedman,compare", "--figure-format", "png",
    )  # fmt: skip
    _ok(code, err)
