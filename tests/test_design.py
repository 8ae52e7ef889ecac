"""The design layer (issue 26): each rule, the Design object, its file, and what it supports.

Real dumps (the lm-eval GPQA folder, the llm-stability experiments, the State of What Art
release folder) are in tests/test_design_real.py; the Inspect logs written by inspect_ai in
tests/io/test_inspect_producer.py.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import polars as pl
import pytest

import evalstats
from evalstats._column_rules import by_name, classify
from evalstats.cli import main
from evalstats.design import apply_design, design_and_table, infer_design, read_design_file
from evalstats.errors import IngestError, ParameterError, SchemaError
from evalstats.io import read


def prompt_table(
    n_models: int = 3, n_prompts: int = 8, n_items: int = 125, seed: int = 0
) -> pl.DataFrame:
    """A plain CSV as users write it: a prompt id, the model's answer, the gold label, the item
    text and per-call timings, a request timeout, retries, an agent URL and token counts
    beside the score (3 x 8 x 125 = 3,000 rows; the truth: 8 prompts)."""
    rng = np.random.default_rng(seed)
    rows = []
    for m in range(n_models):
        for p in range(n_prompts):
            for i in range(n_items):
                gold = "ABCD"[(i * 7) % 4]
                answer = gold if rng.random() < 0.55 + 0.04 * p else "ABCD"[rng.integers(4)]
                rows.append(
                    {
                        "model": f"model-{m}",
                        "prompt_id": f"p{p}",
                        "question_id": f"q{i:03d}",
                        "question": f"Question {i}: which option fits topic {i * 13 % 97} best?",
                        "model_answer": answer,
                        "gold_label": gold,
                        "correct": int(answer == gold),
                        "latency_ms": float(rng.gamma(2.0, 300.0)),
                        "request_timeout": int(rng.choice([30, 60])),
                        "max_retries": int(rng.choice([2, 5])),
                        "agent_url": str(rng.choice(["http://a:8000", "http://b:8000"])),
                        "tokens_out": int(rng.integers(5, 300)),
                    }
                )
    return pl.DataFrame(rows)


@pytest.fixture(scope="module")
def prompts_csv(tmp_path_factory):
    path = tmp_path_factory.mktemp("design") / "prompts.csv"
    prompt_table().write_csv(path)
    return path


# --- the rules, one by one ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "role"),
    [
        ("template", "prompt"),
        ("user_prompt", "prompt"),
        ("fewshot_seed", "prompt"),
        ("temperature", "setting"),
        ("provider", "setting"),
        ("model_answer", "text"),
        ("gold_label", "text"),
        ("explanation", "text"),
        ("latency_ms", "metadata"),
        ("prompt_tokens", "metadata"),
        ("prompt_hash", "metadata"),
        ("request_timeout", "metadata"),
        ("agent_url", "metadata"),
        ("max_retries", "metadata"),
        ("max_connections", "metadata"),
        ("random_seed", "metadata"),
    ],
)
def test_names_decide_a_role(name, role):
    assert by_name(name).role == role


def test_unknown_names_are_judged_by_their_values():
    rng = np.random.default_rng(1)
    n = 400
    t = pl.DataFrame(
        {
            "model": "m",
            "item": [str(i % 100) for i in range(n)],
            "arm": [i // 100 for i in range(n)],  # 4 values that vary within items
            "subject": [f"s{(i % 100) // 10}" for i in range(n)],  # constant within items
            "note": [
                f"free remark number {i} on the way this row went, at length" for i in range(n)
            ],
            "elapsed": rng.gamma(2.0, 1.0, n),  # a measurement
            "ticket": [f"T-{i:05d}" for i in range(n)],  # near-unique
            "score": 1.0,
        }
    )
    rules = classify(t, ["arm", "subject", "note", "elapsed", "ticket"])
    roles = {c: r.role for c, r in rules.items()}
    assert roles == {
        "arm": "prompt",
        "subject": "item_attribute",
        "note": "text",
        "elapsed": "metadata",
        "ticket": "text",
    }
    assert rules["ticket"].evidence == "near-unique: 400 distinct values in 400 rows"
    assert "taken as a prompt dimension" in rules["arm"].evidence


def test_a_system_prompt_spelled_out_is_a_prompt_not_free_text():
    long = ["You are a careful assistant. Answer with one letter only, nothing else.", "Be brief."]
    system = [long[i // 50] for i in range(100)]  # each item under both system prompts
    t = pl.DataFrame({"model": "m", "item": [str(i % 50) for i in range(100)], "system": system})
    assert classify(t, ["system"])["system"].role == "prompt"


def test_free_text_and_answers_are_not_factors(prompts_csv):
    obs, report = read(prompts_csv)
    df = obs.collect()
    assert df.height == report.rows_read == 3000
    assert df.group_by("model").agg(pl.col("variant").n_unique())["variant"].to_list() == [8] * 3
    assert sorted(df["variant"].unique()) == [f"p{p}" for p in range(8)]
    assert df["answer"].n_unique() == 4 and df["gold"].n_unique() == 4  # taken as outputs
    left = {c.column: c.role for c in report.columns if c.role in ("text", "metadata")}
    assert left == {
        "latency_ms": "metadata",
        "request_timeout": "metadata",
        "max_retries": "metadata",
        "agent_url": "metadata",
        "tokens_out": "metadata",
    }
    assert not {"latency_ms", "agent_url", "tokens_out"} & set(df.columns)


def test_an_explicit_variant_role_is_not_extended(prompts_csv):
    # before issue 26, --columns prompt_id=variant still had every leftover column appended
    obs, report = read(prompts_csv, columns="prompt_id=variant")
    assert sorted(obs.collect()["variant"].unique()) == [f"p{p}" for p in range(8)]
    assert not any(n.startswith("variant = ") for n in report.notes)


def test_an_explicit_variant_takes_on_a_factor_that_varies_within_it(tmp_path):
    # two temperatures under each prompt id: rows would otherwise be one observation
    t = pl.DataFrame(
        {
            "model": "m",
            "item": [str(i % 5) for i in range(20)],
            "pid": [f"p{(i // 5) % 2}" for i in range(20)],
            "temperature": [0.0] * 10 + [0.7] * 10,
            "score": [float(i % 2) for i in range(20)],
        }
    )
    path = tmp_path / "t.csv"
    t.write_csv(path)
    obs, report = read(path, columns={"pid": "variant"})
    assert obs.collect()["variant"].n_unique() == 4
    assert "variant = pid | temperature (they vary within it)" in report.notes


def test_a_serving_setting_is_not_a_prompt(prompts_csv):
    # declared a setting, a request timeout is held fixed and analysed per value
    obs, report = read(prompts_csv, columns="request_timeout=setting")
    design = evalstats.infer_design(obs, ingest=report)
    assert design.settings == ("request_timeout",) and design.prompt_factors == ("prompt_id",)
    assert "request_timeout" in design.groups.columns
    spread = evalstats.prompt_spread(
        apply_design(obs, design), variant_factors=list(design.prompt_factors)
    )
    assert set(spread["request_timeout"].unique()) == {30, 60}


def test_a_column_that_tells_rows_apart_is_kept_as_a_setting():
    # two runs told apart only by a harness setting: leaving it out would merge them
    obs = pl.DataFrame(
        {
            "model": "m",
            "dataset": "d",
            "item": [str(i % 10) for i in range(20)],
            "run": 0,
            "retry_budget_retries": [1] * 10 + [3] * 10,
            "score": [float(i % 3 == 0) for i in range(20)],
        }
    )
    design, table = design_and_table(obs)
    assert design.role("retry_budget_retries") == "setting"
    assert any("kept as setting" in n for n in design.notes)
    assert table.collect().height == 20


def test_a_copied_file_is_set_aside_as_a_duplicate(tmp_path):
    (tmp_path / "runs").mkdir()
    src = prompt_table(n_models=1, n_prompts=2, n_items=20)
    src.write_csv(tmp_path / "runs" / "a.csv")
    (tmp_path / "runs" / "b.csv").write_bytes((tmp_path / "runs" / "a.csv").read_bytes())
    obs, report = read(tmp_path / "runs")
    assert report.set_aside == {"duplicate_file": 40}
    assert report.rows_read == 80 and report.rows_kept == 40
    assert obs.collect()["dataset"].unique().to_list() == ["a"]  # not a second dataset
    assert any("byte-for-byte copy of" in n and n.endswith(")") for n in report.notes)
    both, kept = read(tmp_path / "runs", copies="keep")
    assert kept.rows_kept == 80 and sorted(both.collect()["dataset"].unique()) == ["a", "b"]


def test_a_single_model_file_reads_with_model(tmp_path, capsys):
    path = tmp_path / "scores.csv"
    pl.DataFrame({"item": [str(i) for i in range(6)], "correct": [1, 0, 1, 1, 0, 1]}).write_csv(
        path
    )
    assert main(["intervals", str(path)]) == 2
    err = capsys.readouterr().err
    assert "no column gives 'model'" in err and "Traceback" not in err
    assert main(["intervals", str(path), "--model", "gpt-4o", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [r["model"] for r in rows] == ["gpt-4o"]


def test_benchmark_id_is_the_dataset(tmp_path):
    path = tmp_path / "lb.csv"
    pl.DataFrame(
        {
            "model": "m",
            "benchmark_id": ["mmlu", "gsm8k"] * 3,
            "item": "1 2 3 1 2 3".split(),
            "score": [1.0, 0.0] * 3,
        }
    ).write_csv(path)
    obs, _ = read(path)
    assert sorted(obs.collect()["dataset"].unique()) == ["gsm8k", "mmlu"]


# --- the Design object, its roles and its file ---------------------------------------------------


def test_roles_win_over_every_rule_and_are_checked():
    obs = pl.DataFrame(
        {
            "model": "m",
            "dataset": "d",
            "item": ["1", "2"] * 2,
            "passage": ["a", "b"] * 2,
            "template": ["x", "x", "y", "y"],
            "score": [1.0, 0.0, 0.0, 1.0],
        }
    )
    design, table = design_and_table(obs, roles="passage=cluster,template=setting")
    assert design.cluster == "cluster" and design.settings == ("template",)
    assert "cluster" in table.collect_schema().names()
    assert design.groups["n_clusters"].to_list() == [2, 2]
    with pytest.raises(ParameterError, match="the role 'bogus', which is not a role"):
        infer_design(obs, roles="template=bogus")
    with pytest.raises(SchemaError, match="'nope', which is not a column"):
        infer_design(obs, roles="nope=setting")


def test_the_design_file_round_trips_and_an_edit_applies(prompts_csv, tmp_path, capsys):
    out = tmp_path / "design.toml"
    assert main(["design", str(prompts_csv), "--out", str(out)]) == 0
    roles = read_design_file(out)
    assert roles["prompt_id"] == "variant" and roles["request_timeout"] == "metadata"
    assert roles["question_id"] == "item" and roles["model_answer"] == "answer"
    text = out.read_text().replace('request_timeout = "metadata"', 'request_timeout = "setting"')
    out.write_text(text)
    capsys.readouterr()
    assert main(["design", str(prompts_csv), "--design", str(out), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["roles"]["request_timeout"] == "setting"
    assert doc["settings"] == ["request_timeout"]
    assert doc["explicit_roles"]["request_timeout"] == "setting"


def test_a_broken_design_file_names_the_file_and_column(tmp_path, prompts_csv, capsys):
    bad = tmp_path / "d.toml"
    bad.write_text('version = 1\n[roles]\nprompt_id = "nonsense"\n')
    assert main(["design", str(prompts_csv), "--design", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}, [roles], column 'prompt_id': the role 'nonsense', which is not a role" in err
    bad.write_text("[roles\n")
    assert main(["design", str(prompts_csv), "--design", str(bad)]) == 2
    assert "not valid TOML" in capsys.readouterr().err


def test_design_prints_a_readable_account(prompts_csv, capsys):
    assert main(["design", str(prompts_csv)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("design: 3 models; 1 dataset; 125 items per group; 8 prompt variants")
    for line in ("columns", "groups (3)", "analyses", "yes moments", "no  stability"):
        assert line in out
    assert "request_timeout" in out and "[left out]" in out


@pytest.mark.parametrize(
    "command",
    ["moments", "nstar", "stability", "intervals", "compare", "anova", "noise", "ingest", "report"],
)
def test_roles_and_design_are_options_of_every_command(command):
    from evalstats.cli import build_parser

    argv = [command, "x.csv", "--roles", "a=setting", "--design", "d.toml", "--model", "m"]
    argv += {"report": ["--out", "r"], "anova": ["--factors", "a"]}.get(command, [])
    args = build_parser().parse_args(argv)
    assert args.roles == "a=setting" and str(args.design_file) == "d.toml"
    assert args.model_name == "m"


def test_roles_reach_the_analysis_on_the_command_line(prompts_csv, capsys):
    assert main(["moments", str(prompts_csv), "--roles", "request_timeout=setting"]) == 0
    frame = pl.read_csv(__import__("io").StringIO(capsys.readouterr().out))
    assert "request_timeout" in frame.columns  # held fixed: one row per timeout
    assert set(frame["n_variants"]) == {8}


# --- what the design supports, and what no headline is drawn from ------------------------------


def _degenerate(kind: str) -> pl.DataFrame:
    rng = np.random.default_rng(0)
    n_items, n_variants, n_runs, n_datasets = 30, 6, 1, 1
    if kind == "one item":
        n_items = 1
    elif kind == "one variant":
        n_variants = 1
    elif kind == "two runs":
        n_runs = 2
    elif kind == "two datasets":
        n_datasets = 2
    rows = [
        (f"m{m}", f"d{d}", str(i), f"v{v}", r, float(rng.random() < 0.5 + 0.1 * m))
        for m in range(3)
        for d in range(n_datasets)
        for i in range(n_items)
        for v in range(n_variants)
        for r in range(n_runs)
    ]
    return pl.DataFrame(
        rows, schema=["model", "dataset", "item", "variant", "run", "score"], orient="row"
    )


@pytest.mark.parametrize(
    ("kind", "unsupported"),
    [
        ("one item", {"intervals", "ppi"}),
        ("one variant", {"moments", "nstar", "converge"}),
        ("two runs", {"normality"}),
        ("two datasets", {"friedman"}),
    ],
)
def test_no_headline_test_or_nstar_is_drawn_from_a_degenerate_design(kind, unsupported):
    obs = _degenerate(kind)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = evalstats.audit_report(
            obs,
            options={
                "nstar": {"n_resamples": 50},
                "compare": {"n_resamples": 49},
                "ranks": {"n_resamples": 50},
                "correlation": {"n_resamples": 19},
            },  # fmt: skip
            skip=("noise", "attribution", "anova"),
        )
    ran = {a.key for a in rep.analyses}
    reasons = {s.key: s.reason for s in rep.skipped}
    for key in unsupported:
        assert key not in ran, (kind, key)
        assert key in reasons, (kind, key)
    for key in unsupported - {"ppi", "converge"}:
        assert reasons[key].startswith("the design does not support it:"), reasons[key]
    # no reading names what was not drawn
    text = " ".join(a.reading for a in rep.analyses)
    if "nstar" in unsupported:
        assert "n*" not in text
    if "normality" in unsupported:
        assert "normal" not in text.lower()


def test_the_design_supports_what_the_report_runs():
    obs = _degenerate("two runs")
    design = infer_design(obs)
    support = {s.analysis: s.supported for s in design.supports}
    assert support["stability"] and not support["normality"]
    assert support["nstar"] and support["intervals"] and support["compare"]
    assert not support["friedman"]


def test_report_on_runs_over_different_items_finishes_and_says_the_rule(tmp_path, capsys):
    obs = _degenerate("two runs").filter(~((pl.col("run") == 1) & (pl.col("item") == "0")))
    path = tmp_path / "runs.csv"
    obs.write_csv(path)
    argv = ["report", str(path), "--out", str(tmp_path / "rep"), "--quiet", "--skip",
            "noise,attribution,anova,converge,nstar,ranks,compare,correlation"]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err
    doc = json.loads((tmp_path / "rep" / "results.json").read_text())
    assert doc["parameters"]["on_mismatch"] == "auto"
    assert any("cover different items" in n for n in doc["design"]["notes"])
    page = (tmp_path / "rep" / "report.html").read_text()
    assert "cover different items. Rule used" in page
    stability = pl.read_csv(tmp_path / "rep" / "tables" / "stability.csv")
    assert set(stability["n_items"]) == {29}  # TAR over the items every run scored


def test_the_report_opens_with_the_design(prompts_csv, tmp_path):
    argv = ["report", str(prompts_csv), "--out", str(tmp_path / "rep"), "--quiet", "--skip",
            "noise,nstar,converge,ranks"]  # fmt: skip
    assert main(argv) == 0
    page = (tmp_path / "rep" / "report.html").read_text()
    assert page.index('id="design"') < page.index('id="overview"')
    md = (tmp_path / "rep" / "report.md").read_text()
    assert md.index("## Design") < md.index("## At a glance")
    doc = json.loads((tmp_path / "rep" / "results.json").read_text())
    roles = doc["design"]["roles"]
    assert roles["prompt_id"] == "variant" and roles["latency_ms"] == "metadata"


def test_a_3000_row_prompt_csv_reports_within_4_gb(prompts_csv, tmp_path):
    """The issue's case: 2,878 "variants" made the report build a 2,878 x 59 x 2,627 array and
    die at 20.8 GB. Now 8 prompts, and the report's largest process stays far below 4 GB."""
    import resource
    import subprocess
    import sys

    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "evalstats",
            "report",
            str(prompts_csv),
            "--out",
            str(tmp_path / "rep"),
            "--quiet",
            "--workers",
            "1",
            "--figure-format",
            "png",
        ],  # fmt: skip
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    assert max(peak_kib, before) < 4 * 2**20, peak_kib  # KiB on Linux
    doc = json.loads((tmp_path / "rep" / "results.json").read_text())
    moments = next(a for a in doc["analyses"] if a["key"] == "moments")
    assert {r["n_variants"] for r in moments["tables"]["moments"]["rows"]} == {8}


def test_ingest_error_without_model_names_the_flag(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text("item,score\n1,1\n2,0\n")
    with pytest.raises(IngestError, match="no column gives 'model'"):
        read(path)


def test_a_design_file_of_a_table_with_word_counts_reads_back(tmp_path, capsys):
    """input_len and output_len are outputs no role names: written as 'output', skipped on
    reading (they made `--design` fail on every file `evalstats ingest --out` writes)."""
    from evalstats.simulate import observations

    path = tmp_path / "obs.parquet"
    observations(n_models=2, n_items=5, n_variants=2, seed=0).write_parquet(path)
    out = tmp_path / "design.toml"
    assert main(["design", str(path), "--out", str(out)]) == 0
    roles = read_design_file(out)
    assert "input_len" not in roles and roles["answer"] == "answer"
    capsys.readouterr()
    assert main(["intervals", str(path), "--design", str(out)]) == 0
    assert capsys.readouterr().out.startswith("model,dataset,metric,over")
