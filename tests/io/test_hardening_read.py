"""Hardening III, the readers (issue 45): producers' structure, devices, caps, silent choices.

Each test starts from a real producer-written file in ``fixtures/`` (HELM's ``helm-run`` output,
an Every Eval Ever record written by its converter, lm-eval's own output) and breaks one thing.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import polars as pl
import pytest

from evalstats.errors import IngestError
from evalstats.io import read
from tests._cli import cli, ok, one_line_error
from tests.fuzz.structure import EEE_RECORD, HELM_RUN, LM_EVAL_DIR, LM_EVAL_STAMP

ROOT = Path(__file__).resolve().parents[2]


def _helm_suite(tmp_path: Path) -> Path:
    suite = tmp_path / "suite"
    shutil.copytree(HELM_RUN, suite / HELM_RUN.name)
    return suite


def _edit(f: Path, change) -> None:
    doc = json.loads(f.read_text(encoding="utf-8"))
    change(doc)
    f.write_text(json.dumps(doc), encoding="utf-8")


def _eee(tmp_path: Path) -> tuple[Path, Path, Path]:
    out = tmp_path / "record"
    shutil.copytree(EEE_RECORD, out)
    agg = next(f for f in out.iterdir() if f.suffix == ".json")
    samples = next(f for f in out.iterdir() if f.suffix == ".jsonl")
    return out, agg, samples


def _lm_eval(tmp_path: Path) -> Path:
    out = tmp_path / "lm"
    out.mkdir()
    for f in LM_EVAL_DIR.iterdir():
        if LM_EVAL_STAMP in f.name:
            shutil.copy(f, out / f.name)
    return out


def _edit_line(f: Path, i: int, change) -> None:
    lines = [json.loads(ln) for ln in f.read_text(encoding="utf-8").splitlines() if ln.strip()]
    change(lines[i])
    f.write_text("".join(json.dumps(ln) + "\n" for ln in lines), encoding="utf-8")


# --- item 1: HELM's structure checked before a value is read ------------------------------------

HELM_STATS_CASES = [
    ("stats_int", lambda d: d[1].__setitem__("stats", 7), "entry 1", "field 'stats'"),
    ("entry_int", lambda d: d.__setitem__(2, 5), "entry 2", "expected an object"),
    ("stat_str", lambda d: d[0]["stats"].__setitem__(0, "0.5"), "entry 0", "'stats[0]'"),
    ("name_list", lambda d: d[0]["stats"][1].__setitem__("name", [1]), "'stats[1].name'", "array"),
    ("mean_str", lambda d: d[3]["stats"][0].__setitem__("mean", "1"), "'stats[0].mean'", "string"),
    ("sum_huge", lambda d: d[3]["stats"][0].__setitem__("sum", 10**400), "'stats[0].sum'", "401 d"),
    ("no_name", lambda d: d[0]["stats"][0].pop("name"), "'stats[0].name.name'", "no name"),
    ("no_stats", lambda d: d[0].__setitem__("stats", []), "entry 0", "no statistics"),
    ("trial_inf", lambda d: d[0].__setitem__("train_trial_index", 1e30), "train_trial_index", ""),
]


@pytest.mark.parametrize(("name", "change", "where", "what"), HELM_STATS_CASES)
def test_helm_per_instance_stats_of_another_type_is_one_line_or_counted(
    tmp_path, name, change, where, what
):
    suite = _helm_suite(tmp_path)
    stats = suite / HELM_RUN.name / "per_instance_stats.json"
    _edit(stats, change)
    one_line_error(*cli("ingest", str(suite))[::2], "per_instance_stats.json", where, what)
    obs, report = read(suite, on_invalid="skip")
    assert report.set_aside.get("invalid_entry") == 1
    assert report.rows_read == report.rows_kept + sum(report.set_aside.values())


@pytest.mark.parametrize(
    ("file", "change", "field"),
    [
        ("scenario_state.json", lambda d: d.__setitem__("request_states", 3), "request_states"),
        (
            "scenario_state.json",
            lambda d: d["request_states"][0]["result"].__setitem__("completions", 1),
            "request_states[0].result.completions",
        ),
        (
            "scenario_state.json",
            lambda d: d["request_states"][1]["instance"].__setitem__("references", 2),
            "request_states[1].instance.references",
        ),
        (
            "scenario_state.json",
            lambda d: d["request_states"][1]["instance"]["references"][0].__setitem__("tags", 4),
            "references[0].tags",
        ),
        ("instances.json", lambda d: d.__setitem__(0, 3), "[0]"),
        ("run_spec.json", lambda d: d.__setitem__("adapter_spec", [1]), "adapter_spec"),
        (
            "run_spec.json",
            lambda d: d["adapter_spec"].__setitem__("model", 7),
            "adapter_spec.model",
        ),
    ],
)
def test_helm_companions_of_another_type_are_one_line(tmp_path, file, change, field):
    suite = _helm_suite(tmp_path)
    run = suite / HELM_RUN.name
    if file == "instances.json":  # read when scenario_state.json is absent
        (run / "scenario_state.json").unlink()
    _edit(run / file, change)
    one_line_error(*cli("ingest", str(suite))[::2], file, field, "not HELM's structure")


# --- item 1: Every Eval Ever records and samples -------------------------------------------------


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda d: d["model_info"].__setitem__("id", ["m"]), "model_info.id"),
        (lambda d: d.__setitem__("evaluation_results", 5), "evaluation_results"),
        (
            lambda d: d["evaluation_results"][0]["metric_config"].__setitem__("metric_id", {}),
            "evaluation_results[0].metric_config.metric_id",
        ),
        (
            lambda d: d["evaluation_results"][0]["score_details"].__setitem__("score", 10**400),
            "evaluation_results[0].score_details.score",
        ),
    ],
)
def test_every_eval_ever_record_of_another_type_is_one_line(tmp_path, change, field):
    _, agg, _ = _eee(tmp_path)
    _edit(agg, change)
    one_line_error(*cli("ingest", str(agg))[::2], agg.name, f"'{field}'")


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda r: r.__setitem__("model_id", {"value": "m"}), "model_id"),
        (lambda r: r.setdefault("metadata", {}).__setitem__("epoch", float("inf")), "epoch"),
        (lambda r: r.setdefault("metadata", {}).__setitem__("epoch", 1e30), "epoch"),
        (lambda r: r.__setitem__("evaluation", [1]), "evaluation"),
    ],
)
def test_every_eval_ever_sample_of_another_type_is_one_line_or_counted(tmp_path, change, field):
    folder, _, samples = _eee(tmp_path)
    _edit_line(samples, 1, change)
    one_line_error(*cli("ingest", str(folder))[::2], samples.name, "row 2", field)
    _, report = read(folder, on_invalid="skip")
    assert report.set_aside.get("invalid_record") == 1
    assert report.rows_read == report.rows_kept + sum(report.set_aside.values())


def test_every_eval_ever_huge_integer_score_and_latency_are_one_line_or_counted(tmp_path):
    folder, _, samples = _eee(tmp_path)
    _edit_line(samples, 0, lambda r: r["evaluation"].__setitem__("score", 10**400))
    _edit_line(samples, 1, lambda r: r.__setitem__("performance", {"latency_ms": 10**400}))
    one_line_error(*cli("ingest", str(folder))[::2], "row 1", "evaluation.score", "401 digits")
    _, report = read(folder, on_invalid="skip")
    assert report.set_aside.get("invalid_record") == 2
    assert report.rows_read == report.rows_kept + sum(report.set_aside.values())


def test_lm_eval_results_configs_of_another_type_are_not_read(tmp_path):
    out = _lm_eval(tmp_path)
    results = next(out.glob("results_*.json"))
    _edit(results, lambda d: d.__setitem__("configs", [d["configs"]]))
    obs, report = read(out, format="lm-eval")
    assert report.rows_kept > 0


def test_shape_spec_reference_values():
    """The checker against hand-worked cases (the type names of the JSON schema spec)."""
    from evalstats.io._shape import problem

    spec = {"a": [{"b": ("integer",)}], "c": {"*": ("object",)}}
    assert problem({"a": [{"b": 1}, {"b": 2.0}]}, spec) == (
        "field 'a[1].b': expected an integer, got a number (2.0)"
    )
    assert problem({"a": [{"b": 2**53 + 1}]}, spec).startswith("field 'a[0].b'")
    assert problem({"c": {"x": {}, "y": 3}}, spec) == (
        "field 'c.y': expected an object, got an integer (3)"
    )
    assert problem({"a": None, "c": {}}, spec) is None


# --- item 3: no silent choice in Every Eval Ever --------------------------------------------------


def test_every_eval_ever_sample_of_an_unknown_evaluation_is_refused_or_counted(tmp_path):
    folder, _, samples = _eee(tmp_path)
    _edit_line(samples, 1, lambda r: r.__setitem__("evaluation_id", "no-such-evaluation"))
    one_line_error(*cli("ingest", str(folder))[::2], "row 2", "no aggregate record read holds")
    obs, report = read(folder, on_invalid="skip")
    assert report.set_aside.get("unknown_evaluation") == 1
    assert obs.collect()["metric"].n_unique() == 1  # not a second metric


@pytest.mark.parametrize("version", ["9.9.9", None])
def test_every_eval_ever_unknown_or_missing_schema_version_is_noted(tmp_path, version):
    folder, agg, _ = _eee(tmp_path)
    _edit(
        agg,
        lambda d: d.__setitem__("schema_version", version) if version else d.pop("schema_version"),
    )
    _, report = read(folder)
    notes = " ".join(report.notes)
    assert ("'9.9.9' not known" in notes) if version else ("no schema_version" in notes)
    _, plain = read(_eee(tmp_path / "plain")[0])
    assert not any("schema version" in n or "schema_version" in n for n in plain.notes)


# --- item 4: devices, FIFOs, caps, unreadable files ----------------------------------------------


@pytest.mark.parametrize("fmt", [None, "helm", "every-eval-ever", "inspect", "lm-eval", "table"])
def test_a_device_is_refused_before_reading(fmt):
    args = ["ingest", "/dev/zero"] + (["--format", fmt] if fmt else [])
    start = time.perf_counter()
    one_line_error(*cli(*args)[::2], "/dev/zero", "character device", "not a regular file")
    assert time.perf_counter() - start < 10


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
@pytest.mark.parametrize("where", ["input", "design"])
def test_a_fifo_is_refused_before_opening(tmp_path, where):
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    table = str(ROOT / "fixtures/fuzz/table.csv")
    args = ["ingest", str(fifo)] if where == "input" else ["ingest", table, "--design", str(fifo)]
    one_line_error(*cli(*args)[::2], "pipe.csv", "FIFO")


def test_design_dev_zero_is_refused_at_once():
    table = str(ROOT / "fixtures/fuzz/table.csv")
    start = time.perf_counter()
    one_line_error(*cli("ingest", table, "--design", "/dev/zero")[::2], "/dev/zero", "design file")
    assert time.perf_counter() - start < 10


def test_every_eval_ever_record_of_20000_keys_stops_at_the_key_limit(tmp_path):
    folder, agg, _ = _eee(tmp_path)
    many = {f"k{i}": str(i) for i in range(20_000)}
    _edit(
        agg,
        lambda d: (
            d["evaluation_results"][0]
            .setdefault("generation_config", {})
            .__setitem__("additional_details", many)
        ),
    )
    start = time.perf_counter()
    one_line_error(
        *cli("ingest", str(agg))[::2], agg.name, "20,000 keys", "EVALSTATS_MAX_JSON_KEYS"
    )
    assert time.perf_counter() - start < 10  # was 17 s (20,000 setting columns)


def test_every_eval_ever_sample_line_of_20000_keys_names_the_limit_and_row(tmp_path):
    folder, _, samples = _eee(tmp_path)
    _edit_line(samples, 1, lambda r: r.update({f"k{i}": i for i in range(20_000)}))
    one_line_error(*cli("ingest", str(folder))[::2], samples.name, "row 2", "1,000")


def _denying(monkeypatch, name: str) -> None:
    """Files named ``name`` cannot be opened, as for a user without read permission (root reads
    every file, so the permission is simulated where the check is made)."""
    from evalstats.io import _mixed

    real = _mixed.cannot_open
    monkeypatch.setattr(
        _mixed, "cannot_open", lambda f: "Permission denied" if f.name == name else real(f)
    )


def test_an_unreadable_file_in_a_subfolder_is_set_aside_and_listed(tmp_path, monkeypatch):
    table = ROOT / "fixtures/fuzz/table.csv"
    (tmp_path / "sub").mkdir()
    shutil.copy(table, tmp_path / "a.csv")
    shutil.copy(table, tmp_path / "sub" / "locked.csv")
    _denying(monkeypatch, "locked.csv")
    _, report = read(tmp_path)
    aside = {Path(f.path).name: f.reason for f in report.files_set_aside}
    assert "locked.csv" in aside and "Permission denied" in aside["locked.csv"]


def test_an_unlistable_subfolder_is_set_aside_and_listed(tmp_path, monkeypatch):
    table = ROOT / "fixtures/fuzz/table.csv"
    (tmp_path / "locked").mkdir()
    shutil.copy(table, tmp_path / "a.csv")
    shutil.copy(table, tmp_path / "locked" / "b.csv")
    real_walk = os.walk

    def walk(top, onerror=None, **kw):
        for dirpath, dirs, names in real_walk(top, onerror=onerror, **kw):
            if "locked" in dirs:
                dirs.remove("locked")
                onerror(PermissionError(13, "Permission denied", os.path.join(dirpath, "locked")))
            yield dirpath, dirs, names

    monkeypatch.setattr(os, "walk", walk)
    _, report = read(tmp_path)
    reasons = {Path(f.path).name: f.reason for f in report.files_set_aside}
    assert "cannot be listed" in reasons.get("locked", "")


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads every file")
def test_a_file_without_read_permission_in_a_subfolder_is_set_aside(tmp_path):
    table = ROOT / "fixtures/fuzz/table.csv"
    (tmp_path / "sub").mkdir()
    shutil.copy(table, tmp_path / "a.csv")
    locked = tmp_path / "sub" / "b.csv"
    shutil.copy(table, locked)
    locked.chmod(0)
    try:
        _, report = read(tmp_path)
    finally:
        locked.chmod(0o644)
    assert any(Path(f.path).name == "b.csv" for f in report.files_set_aside)


def test_a_file_that_changes_while_scanned_is_one_line(tmp_path, monkeypatch):
    """polars raises OSError ('failed to fill whole buffer') for a file that grew or shrank."""
    path = tmp_path / "t.csv"
    shutil.copy(ROOT / "fixtures/fuzz/table.csv", path)
    real = pl.LazyFrame.collect_schema

    def short_read(self):
        raise OSError("failed to fill whole buffer")

    monkeypatch.setattr(pl.LazyFrame, "collect_schema", short_read)
    try:
        with pytest.raises(IngestError, match="failed to fill whole buffer.*once it is complete"):
            read(path)
    finally:
        monkeypatch.setattr(pl.LazyFrame, "collect_schema", real)


# --- messages ---------------------------------------------------------------------------------


def test_two_runs_with_different_metrics_say_so(tmp_path):
    head = "model,dataset,item,metric,score\n"
    (tmp_path / "a.csv").write_text(head + "".join(f"m,d,{i},acc,{i % 2}\n" for i in range(8)))
    (tmp_path / "b.csv").write_text(head + "".join(f"m,d,{i},em,{i % 3 % 2}\n" for i in range(8)))
    line = one_line_error(
        *cli("compare", str(tmp_path / "a.csv"), str(tmp_path / "b.csv"))[::2],
        "different metrics",
        "'acc'",
        "'em'",
    )
    assert "share 0" not in line


def test_helm_folder_without_any_per_instance_stats_says_so(tmp_path):
    suite = _helm_suite(tmp_path)
    (suite / HELM_RUN.name / "per_instance_stats.json").unlink()
    line = one_line_error(*cli("ingest", str(suite))[::2], "per_instance_stats.json")
    assert ".csv" not in line


def test_helm_statistics_without_run_spec_are_noted(tmp_path):
    suite = _helm_suite(tmp_path)
    orphan = suite / "orphan_run"
    orphan.mkdir()
    for name in ("per_instance_stats.json", "stats.json"):
        shutil.copy(HELM_RUN / name, orphan / name)
    code, _, err = cli("ingest", str(suite))
    ok(code, err)
    assert "without run_spec.json" in err and "orphan_run" in err


def test_nfc_and_nfd_spellings_of_the_same_items_read_with_one_note(tmp_path):
    """Merged, the two spellings made duplicate rows (an error with the merge note after it)."""
    nfc, nfd = "caf\u00e9", "cafe\u0301"
    path = tmp_path / "names.csv"
    path.write_text(f"model,item,score\n{nfc},1,1\n{nfd},1,0\n{nfc},2,1\n", encoding="utf-8")
    code, out, err = cli("ingest", str(path))
    ok(code, err)
    notes = [ln for ln in (out + err).splitlines() if "spellings" in ln]
    assert len(notes) == 1 and "kept as its own name" in notes[0], out + err
    obs, report = read(path)
    assert report.rows_kept == 3 and obs.collect()["model"].n_unique() == 2


def test_a_real_duplicate_beside_merged_spellings_is_still_one_line(tmp_path):
    nfc, nfd = "caf\u00e9", "cafe\u0301"
    path = tmp_path / "names.csv"
    path.write_text(f"model,item,score\n{nfc},1,1\n{nfd},1,0\n{nfc},1,1\n", encoding="utf-8")
    one_line_error(*cli("ingest", str(path))[::2], "row 3", "duplicate", "row 1")


@pytest.mark.parametrize("where", ["eval.task_args", "plan.config", "scores"])
def test_inspect_objects_whose_keys_become_columns_are_bounded(tmp_path, where):
    """20,000 task arguments were 20,000 factor columns (minutes); 20,000 scorers 10 s."""
    from tests.fuzz.structure import INSPECT_LOG

    doc = json.loads(INSPECT_LOG.read_text(encoding="utf-8"))
    many = {f"k{i}": i for i in range(20_000)}
    if where == "eval.task_args":
        doc["eval"]["task_args"] = many
    elif where == "plan.config":
        doc["plan"]["config"] = many
    else:
        doc["samples"][0]["scores"].update({k: {"value": 1} for k in many})
    path = tmp_path / "log.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    start = time.perf_counter()
    one_line_error(*cli("ingest", str(path))[::2], "log.json", f"'{where}'", "1,000")
    assert time.perf_counter() - start < 10


def test_lm_eval_score_of_a_huge_integer_is_counted_not_a_traceback(tmp_path):
    out = _lm_eval(tmp_path)
    _edit_line(next(out.glob("samples_toy_mc_*.jsonl")), 0, lambda r: r.__setitem__("acc", 10**400))
    _, report = read(out, format="lm-eval", on_invalid="skip")
    assert report.set_aside.get("nonfinite_score") == 1
    assert report.rows_read == report.rows_kept + sum(report.set_aside.values())


def test_an_inspect_log_with_two_different_records_of_one_sample_is_one_line(tmp_path):
    """Issue 45: two records of the same (sample id, epoch) with different scores are never
    reduced to one silently: refused in one line naming the file and rows, or set aside and
    counted with --on-invalid skip."""
    src = Path(__file__).parents[2] / "fixtures/dumps/inspect_written/logs/a_plain.json"
    log = json.loads(src.read_text())
    again = json.loads(json.dumps(log["samples"][0]))
    for score in again["scores"].values():
        score["value"] = 1 - score["value"] if isinstance(score["value"], int) else -1.0
    log["samples"].append(again)
    path = tmp_path / "dup.json"
    path.write_text(json.dumps(log))
    with pytest.raises(IngestError, match=r"dup\.json, row \d+: duplicate of an earlier row"):
        read(path)
    obs, report = read(path, on_invalid="skip")
    assert sum(report.set_aside.values()) >= 1
    assert obs.collect().height + sum(report.set_aside.values()) == report.rows_read
