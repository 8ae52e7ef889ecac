"""lm-evaluation-harness results folders: fixtures in the harness's format, quirks, bad input."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalstats.aggregate import to_units
from evalstats.cli import main
from evalstats.errors import IngestError, ParameterError
from evalstats.io import detect_format, read
from evalstats.io.lm_eval import read_lm_eval

PYTHIA = "EleutherAI__pythia-160m"
D1, D2 = "2024-06-11T09-15-32.417823", "2024-06-12T14-02-10.001002"


@pytest.fixture
def out(fixtures) -> Path:
    return fixtures / "dumps" / "lm_eval" / "output"


def independent_units(
    root: Path,
    metric: str | None = None,
    filt: str | None = None,
    tasks: tuple[str, ...] | None = None,
):
    """Unit scores straight from the JSON lines: first (or chosen) filter, first (or chosen)
    metric, model from the results file of the same date (else the folder), runs by date."""
    found = []
    for f in sorted(root.rglob("samples_*.jsonl")):
        task = f.name[f.name.find("_") + 1 : f.name.rfind("_")]  # lm_eval.utils.get_file_task_name
        date = f.name[f.name.rfind("_") + 1 :].replace(".jsonl", "")
        if tasks is not None and task not in tasks:
            continue
        recs = [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
        use = filt or recs[0]["filter"]
        m = metric or recs[0]["metrics"][0]
        values = [float(r[m]) for r in recs if r["filter"] == use]
        res = f.parent / f"results_{date}.json"
        model = f.parent.name
        if res.exists():
            doc = json.loads(res.read_text())
            model = (
                doc.get("model_name")
                or doc["config"]["model_args"].split("pretrained=")[1].split(",")[0]
            )
        found.append((model, task, date, sum(values) / len(values)))
    out = {}
    for model, task, date, score in found:
        dates = sorted(d for mo, t, d, _ in found if (mo, t) == (model, task))
        out[(model, task, dates.index(date))] = score
    return out


def loaded_units(obs):
    units = to_units(obs).collect()
    return {(r["model"], r["dataset"], r["run"]): r["score"] for r in units.iter_rows(named=True)}


def test_ingest_report_adds_up_and_is_auto_detected(out, capsys):
    assert detect_format(out) == "lm-eval"
    assert main(["ingest", str(out), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)["report"]
    assert rep["format"] == "lm-eval"
    # 6 + 6 arc_easy docs, 4 gsm8k docs x 2 filters for each of 2 models
    assert rep["rows_read"] == 28 and rep["rows_kept"] == 20
    assert rep["set_aside"] == {"other_filter": 8}
    assert rep["rows_read"] == rep["rows_kept"] + sum(rep["set_aside"].values())


def test_ingest_summary_names_the_filter_metric_and_runs(out, capsys):
    assert main(["ingest", str(out)]) == 0
    err = capsys.readouterr().err
    assert "ingest (lm-eval): 4 files, 28 rows read, 20 kept, 8 set aside" in err
    assert "filter 'strict-match' read; records of 'flexible-extract' set aside" in err
    assert (
        "arc_easy: score = metric 'acc', the first per-document metric (also logged: 'acc_norm'"
        in err
    )
    assert "2 samples files with the same documents and different dates read as runs 0-1" in err
    assert "model 'meta-llama__Llama-3.2-1B' taken from the folder name" in err


CASES = {
    "defaults": ("", None, None, None),
    "acc_norm": (PYTHIA, "acc_norm", None, ("arc_easy",)),
    "flexible": ("", "exact_match", "flexible-extract", ("gsm8k",)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_unit_scores_match_independent_computation(out, case):
    rel, metric, filt, tasks = CASES[case]
    root = out / rel
    expected = independent_units(root, metric, filt, tasks)
    paths = [
        f
        for f in sorted(root.rglob("samples_*.jsonl"))
        if tasks is None or any(f"samples_{t}_" in f.name for t in tasks)
    ]
    obs, report = read_lm_eval(paths, metric=metric, filter=filt)
    assert loaded_units(obs) == pytest.approx(expected, rel=1e-12)
    assert report.rows_read == report.rows_kept + report.rows_set_aside


def test_metric_and_filter_per_task(out):
    obs, _ = read_lm_eval(
        out, metric={"arc_easy": "acc_norm"}, filter={"gsm8k": "flexible-extract"}
    )
    expected = independent_units(out, "acc_norm", tasks=("arc_easy",))
    expected.update(independent_units(out, None, "flexible-extract", tasks=("gsm8k",)))
    assert loaded_units(obs) == pytest.approx(expected, rel=1e-12)


def test_unit_scores_equal_the_results_file_aggregates(out):
    """The harness's own aggregated metric ('acc,none', ...) is the mean of the logged values."""
    obs, _ = read_lm_eval(out / PYTHIA)
    units = loaded_units(obs)
    for date, run in ((D1, 0), (D2, 1)):
        res = json.loads((out / PYTHIA / f"results_{date}.json").read_text())["results"]
        assert units[("EleutherAI/pythia-160m", "arc_easy", run)] == pytest.approx(
            res["arc_easy"]["acc,none"]
        )
    res = json.loads((out / PYTHIA / f"results_{D1}.json").read_text())["results"]
    assert units[("EleutherAI/pythia-160m", "gsm8k", 0)] == pytest.approx(
        res["gsm8k"]["exact_match,strict-match"]
    )
    obs, _ = read_lm_eval(out / PYTHIA / f"samples_gsm8k_{D1}.jsonl", filter="flexible-extract")
    assert loaded_units(obs)[("EleutherAI/pythia-160m", "gsm8k", 0)] == pytest.approx(
        res["gsm8k"]["exact_match,flexible-extract"]
    )


def test_observation_columns(out):
    obs, _ = read_lm_eval(out / PYTHIA / f"samples_gsm8k_{D1}.jsonl")
    row = obs.collect().row(0, named=True)
    assert row["item"] == "0" and row["answer"] == "5" and row["gold"] == "... #### 5"
    assert row["response"].startswith(" We compute it") and row["shots"] == 5
    assert row["variant"] == "shots=5" and row["input_len"] > 0
    # loglikelihood tasks log [loglikelihood, is_greedy] pairs: no text answer or response
    arc = read_lm_eval(out / PYTHIA / f"samples_arc_easy_{D1}.jsonl").observations.collect()
    assert arc["answer"].null_count() == arc["response"].null_count() == arc.height == 6
    assert arc["gold"].to_list() == ["1", "0", "2", "1", "3", "1"]


def test_exact_match_strings_are_numbers(out):
    path = out / "meta-llama__Llama-3.2-1B"
    first = json.loads(next(path.glob("*.jsonl")).read_text().splitlines()[0])
    assert first["exact_match"] == "1.0"  # the quirk is in the fixture
    obs, _ = read_lm_eval(path)
    assert loaded_units(obs) == {("meta-llama__Llama-3.2-1B", "gsm8k", 0): 0.75}


def test_columns_route_picks_the_metric(out, capsys):
    arc = sorted((out / PYTHIA).glob("samples_arc_easy_*.jsonl"))
    a = read_lm_eval(arc, columns="acc_norm=score").observations.collect()
    b = read_lm_eval(arc, metric="acc_norm").observations.collect()
    assert a.equals(b)
    assert (
        main(
            [
                "ingest",
                str(out / PYTHIA / f"samples_arc_easy_{D1}.jsonl"),
                "--columns",
                "acc_norm=score",
                "--json",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["report"]["rows_kept"] == 6


def test_read_dispatches_on_format_name(out):
    obs, report = read(out, format="lm-eval")
    assert report.format == "lm-eval" and obs.collect().height == 20


# --- bad input ------------------------------------------------------------------------------


def copy_task(out: Path, tmp: Path, name: str) -> Path:
    dst = tmp / PYTHIA
    dst.mkdir(parents=True, exist_ok=True)
    shutil.copy(out / PYTHIA / name, dst / name)
    return dst / name


def test_line_that_is_not_json(out, tmp_path):
    p = copy_task(out, tmp_path, f"samples_arc_easy_{D1}.jsonl")
    lines = p.read_text().splitlines()
    lines.insert(2, '{"doc_id": 99, "acc": ')
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(
        IngestError, match=r"samples_arc_easy_.*\.jsonl, row 3: the line is not valid JSON"
    ):
        read_lm_eval(p)
    obs, report = read_lm_eval(p, on_invalid="skip")
    assert dict(report.set_aside) == {"invalid_json": 1}
    assert report.rows_read == 7 and report.rows_kept == 6


def test_unknown_metric_lists_the_metrics(out):
    with pytest.raises(
        IngestError,
        match=re.escape(
            "no metric 'f1' in the records of task 'arc_easy' (metrics: 'acc', 'acc_norm')"
        ),
    ):
        read_lm_eval(out / PYTHIA / f"samples_arc_easy_{D1}.jsonl", metric="f1")


def test_unknown_filter_lists_the_filters(out):
    with pytest.raises(
        IngestError,
        match=re.escape(
            "no records of filter 'maj@8' (filters: 'strict-match', 'flexible-extract')"
        ),
    ):
        read_lm_eval(out / PYTHIA / f"samples_gsm8k_{D1}.jsonl", filter="maj@8")


def test_corpus_level_metric_is_invalid(tmp_path):
    d = tmp_path / "m"
    d.mkdir()
    rec = {
        "doc_id": 0,
        "target": "Hallo",
        "filter": "none",
        "metrics": ["bleu"],
        "bleu": ["Hallo Welt", "Hallo"],
    }
    p = d / "samples_wmt16-de-en_2024-01-01T00-00-00.000000.jsonl"
    p.write_text(json.dumps(rec) + "\n")
    with pytest.raises(
        IngestError,
        match=r"column 'bleu': metric 'bleu' of task 'wmt16-de-en' is corpus-level: lm-eval logs "
        r"it per document as \[reference, prediction\].*no per-document metric\.$",
    ):
        read_lm_eval(p)
    # with a per-document metric next to it, the default skips the corpus metric
    rec2 = {**rec, "metrics": ["bleu", "exact"], "exact": 0.0}
    p.write_text(json.dumps(rec2) + "\n")
    obs, report = read_lm_eval(p)
    assert obs.collect()["score"].to_list() == [0.0]
    assert any("corpus-level, not item scores: 'bleu'" in n for n in report.notes)
    with pytest.raises(IngestError, match=r"pick a per-document metric \('exact'\) with "):
        read_lm_eval(p, metric="bleu")


def test_unparseable_metric_value(tmp_path):
    d = tmp_path / "m"
    d.mkdir()
    recs = [
        {"doc_id": i, "filter": "none", "metrics": ["acc"], "acc": v}
        for i, v in enumerate([1.0, "n/a"])
    ]
    p = d / "samples_boolq_2024-01-01T00-00-00.000000.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in recs))
    with pytest.raises(
        IngestError, match=re.escape("row 2, column 'acc': expected a number, got 'n/a'")
    ):
        read_lm_eval(p)


def test_duplicate_document_is_invalid(tmp_path):
    d = tmp_path / "m"
    d.mkdir()
    recs = [{"doc_id": 0, "filter": "none", "metrics": ["acc"], "acc": 1.0}] * 2
    p = d / "samples_boolq_2024-01-01T00-00-00.000000.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in recs))
    with pytest.raises(IngestError, match=r"row 2: duplicate of an earlier row"):
        read_lm_eval(p)


def test_folder_without_samples_files(tmp_path):
    (tmp_path / "results_2024-01-01T00-00-00.json").write_text("{}")
    (tmp_path / "notes.jsonl").write_text("{}\n")
    with pytest.raises(
        IngestError,
        match=r"no samples_<task>_<date>\.jsonl files \(lm_eval writes them with --log_samples\)",
    ):
        read_lm_eval(tmp_path)


def test_empty_samples_file(tmp_path):
    p = tmp_path / "samples_boolq_2024-01-01T00-00-00.000000.jsonl"
    p.write_text("")
    with pytest.raises(IngestError, match=r"samples_boolq_.*: the file is empty"):
        read_lm_eval(p)


def test_columns_can_only_pick_a_metric():
    with pytest.raises(ParameterError, match=r"`columns` for lm-eval can only pick the metric"):
        read_lm_eval("unused", columns="doc_id=item")


def test_cli_bad_line_exits_2_without_traceback(out, tmp_path, capsys):
    p = copy_task(out, tmp_path, f"samples_arc_easy_{D1}.jsonl")
    p.write_text(p.read_text() + "not json\n")
    assert main(["ingest", str(p)]) == 2
    err = capsys.readouterr().err
    assert re.match(
        r"evalstats: error: .*samples_arc_easy_.*\.jsonl, row 7: the line is not valid JSON", err
    )
    assert "Traceback" not in err


@pytest.mark.parametrize("loader", ["lm", "inspect", "reliable"])
def test_option_values_are_checked_first(loader):
    from evalstats.io.inspect_log import read_inspect
    from evalstats.io.reliable_eval import read_reliable_eval

    fn = {"lm": read_lm_eval, "inspect": read_inspect, "reliable": read_reliable_eval}[loader]
    with pytest.raises(
        ParameterError, match=r"`on_invalid` must be 'error' or 'skip', got 'ignore'"
    ):
        fn("unused", on_invalid="ignore")


# --- accounting property --------------------------------------------------------------------

FILTERS = st.sampled_from(["none", "strict-match", "flexible-extract"])
RECORD = st.one_of(
    st.tuples(st.integers(0, 5), FILTERS, st.sampled_from([0.0, 1.0, "1.0", "True", True])),
    st.just("junk"),
)


@given(st.lists(RECORD, min_size=1, max_size=25))
def test_accounting_adds_up_for_any_mix_of_filters_duplicates_and_junk(tmp_path_factory, recs):
    d = tmp_path_factory.mktemp("prop") / "m"
    d.mkdir()
    lines = []
    for r in recs:
        if r == "junk":
            lines.append("{not json")
        else:
            doc, filt, v = r
            lines.append(json.dumps({"doc_id": doc, "filter": filt, "metrics": ["acc"], "acc": v}))
    p = d / "samples_boolq_2024-01-01T00-00-00.000000.jsonl"
    p.write_text("\n".join(lines) + "\n")
    good = [r for r in recs if r != "junk"]
    if not good:
        return
    first = good[0][1]
    docs = {r[0] for r in good if r[1] == first}
    obs, rep = read_lm_eval(p, on_invalid="skip")
    assert rep.rows_read == len(recs) == rep.rows_kept + rep.rows_set_aside
    assert rep.rows_kept == len(docs) == obs.collect().height
    assert rep.set_aside.get("other_filter", 0) == sum(r[1] != first for r in good)
    assert rep.set_aside.get("invalid_json", 0) == len(recs) - len(good)


def test_answers_the_filter_did_not_extract_are_counted_per_model_and_task(tmp_path):
    """lm-eval's regex filters answer '[invalid]' when their pattern finds nothing, and the
    metric scores it 0. The loader keeps the scores and says how many there were, counting only
    the filter it reads (the other filter's records are set aside)."""
    d = tmp_path / "m"
    d.mkdir()
    recs = []
    for i in range(5):
        strict = "[invalid]" if i < 3 else "7"
        recs.append(
            {
                "doc_id": i,
                "filter": "strict-match",
                "metrics": ["exact_match"],
                "exact_match": float(strict == "7"),
                "target": "7",
                "resps": [["so the answer is 7"]],
                "filtered_resps": [strict],
            }
        )
        recs.append({"doc_id": i, "filter": "flexible-extract", "metrics": ["exact_match"],
                     "exact_match": 1.0, "target": "7",
                     "resps": [["so the answer is 7"]], "filtered_resps": ["7"]})  # fmt: skip
    p = d / "samples_gsm8k_2024-01-01T00-00-00.000000.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in recs))
    obs, report = read_lm_eval(p, filter="strict-match")
    (note,) = [n for n in report.notes if "not extracted by the filter" in n]
    assert note.startswith("m on gsm8k: 3 of 5 answers not extracted by the filter ('[invalid]'")
    assert obs.collect()["score"].to_list() == [0.0, 0.0, 0.0, 1.0, 1.0]  # kept as scored
    _, flexible = read_lm_eval(p, filter="flexible-extract")
    assert not [n for n in flexible.notes if "not extracted" in n]


def test_unextracted_answers_alert_from_a_fifth_of_a_models_answers():
    from types import SimpleNamespace

    from evalstats.report._glance import alerts

    def alert(*notes):
        return alerts(SimpleNamespace(ingest=SimpleNamespace(notes=list(notes))))

    def note(bad, rows, model="m", task="t"):
        return f"{model} on {task}: {bad} of {rows} answers not extracted by the filter (...)"

    assert alert(note(1, 10)) == []  # 10 %: an ingest note only
    (one,) = alert(note(2, 10), note(9, 10, "m2", "t2"))
    assert one.startswith("lm-eval's filter extracted no answer from 90% of m2's responses on t2")
    assert "and 1 more model–task pair," in one
