"""Roles from the table's structure (issue 40): the invariants, on generated tables.

A prompt factor takes two or more values within one (model, dataset, item) cell. A column
that never does is not one, whatever its name: an item attribute (constant within items), a
model attribute (constant within models, different between them), an outcome (null exactly
where the answer is right, a relabelling of the score), a per-call measurement (token counts,
durations, with "prompt" in the name or not), bookkeeping set on a few rows only. The cases that
misled the rules on real dumps are rebuilt below as small synthetic tables (no data copied).
"""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

import evalstats
from evalstats._column_rules import classify
from evalstats.design import infer_design

PROMPT_NAMES = ["wording", "arm", "condition", "instr_variant", "style_id"]
ITEM_NAMES = ["category", "difficulty", "template", "prompt_type", "n_turns", "subject"]
MODEL_NAMES = ["deployment", "api_type", "provider", "is_local", "prompt_family", "org"]
OUTCOME_NAMES = ["failure_reason", "error_type", "why_wrong", "prompt_issue"]
MEASURE_NAMES = ["prompt_eval_count", "prompt_size", "n_tok", "eval_count", "prompt_len"]
SPARSE_NAMES = ["harness_note", "prompt_note", "flag", "template_version"]


@st.composite
def planted_tables(draw):
    """A model x item x prompt x run table with one column of each structural kind."""
    n_models = draw(st.integers(1, 4))
    n_items = draw(st.integers(25, 40))
    n_prompts = draw(st.integers(2, 5))
    n_runs = draw(st.integers(1, 2))
    kind = draw(st.sampled_from(["binary", "rating", "continuous"]))
    keep = draw(st.sampled_from([1.0, 0.7]))
    seed = draw(st.integers(0, 2**16))
    names = {
        "prompt": draw(st.sampled_from(PROMPT_NAMES)),
        "item_attribute": draw(st.sampled_from(ITEM_NAMES)),
        "model_attribute": draw(st.sampled_from(MODEL_NAMES)),
        "outcome": draw(st.sampled_from(OUTCOME_NAMES)),
        "measurement": draw(st.sampled_from(MEASURE_NAMES)),
        "sparse": draw(st.sampled_from(SPARSE_NAMES)),
    }
    rng = np.random.default_rng(seed)
    rows = []
    for m in range(n_models):
        for i in range(n_items):
            for p in range(n_prompts):
                if keep < 1 and p > 1 and rng.random() > keep:
                    continue  # sparse, but every item keeps two prompts
                for r in range(n_runs):
                    logit = 0.3 * m + 0.4 * p - 0.05 * i
                    right = rng.random() < 1 / (1 + np.exp(-logit))
                    if kind == "binary":
                        score = float(right)
                    elif kind == "rating":
                        score = float(rng.integers(6, 11) if right else rng.integers(1, 6))
                    else:
                        score = float(rng.uniform(0.5, 1) if right else rng.uniform(0, 0.5))
                    rows.append(
                        {
                            "model": f"m{m}",
                            "item": f"q{i}",
                            "run": r,
                            "score": score,
                            names["prompt"]: f"p{p}",
                            names["item_attribute"]: f"c{i % 3}",
                            names["model_attribute"]: "api" if m % 2 else "local",
                            names["outcome"]: None
                            if right
                            else str(rng.choice(["format", "refused", "wrong"])),
                            names["measurement"]: int(rng.integers(20, 3000)),
                            names["sparse"]: "v2" if (m == 0 and p == 0 and i < 8) else None,
                        }
                    )
    return pl.DataFrame(rows), names


@given(planted=planted_tables())
def test_only_a_column_that_varies_within_items_is_a_prompt_factor(planted):
    table, names = planted
    design = infer_design(table)
    roles = {kind: design.role(col) for kind, col in names.items()}
    assert roles["prompt"] == "prompt", design.summary()
    for kind in ("item_attribute", "model_attribute", "outcome", "measurement", "sparse"):
        assert roles[kind] != "prompt", (kind, names[kind], design.summary())
        if table[names[kind]].n_unique() > 1:  # one value: a constant setting splits nothing
            assert roles[kind] != "setting", (kind, names[kind], design.summary())
    assert design.prompt_factors == (names["prompt"],)
    assert roles["measurement"] in ("measurement", "metadata")  # eval_count: by name
    assert roles["outcome"] in ("outcome", "output")  # error_type: read as the error column
    if table["model"].n_unique() > 1:
        assert roles["model_attribute"] == "model_attribute"
    assert roles["item_attribute"] == "item_attribute"


@given(planted=planted_tables())
def test_the_rules_read_the_same_through_the_table_loader(planted, tmp_path_factory):
    """The table loader (a CSV file) and a frame handed to infer_design decide alike."""
    table, names = planted
    path = tmp_path_factory.mktemp("csv") / "t.csv"
    table.write_csv(path)
    obs, report = evalstats.read(path)
    design = infer_design(obs, ingest=report)
    assert design.prompt_factors == (names["prompt"],), design.summary()
    assert obs.collect()["variant"].n_unique() == table[names["prompt"]].n_unique()


@given(planted=planted_tables())
def test_the_rules_decide_alike_in_memory_and_streaming(planted):
    """A table within the in-memory budget is read once and counted there; above it the counts
    stream over the lazy plan. Both give every column the same role and evidence."""
    import evalstats._frames as frames

    table, _names = planted
    columns = [c for c in table.columns if c not in ("model", "item", "score", "run")]
    in_memory = classify(table.lazy(), columns)
    budget = frames.IN_MEMORY_VALUES
    frames.IN_MEMORY_VALUES = 1  # every table is over it
    try:
        streamed = classify(table.lazy(), columns)
    finally:
        frames.IN_MEMORY_VALUES = budget
    assert in_memory == streamed


def test_in_memory_reads_a_table_over_the_budget_no_further_than_the_budget(monkeypatch):
    import evalstats._frames as frames

    monkeypatch.setattr(frames, "IN_MEMORY_VALUES", 10)
    small = pl.LazyFrame({"a": range(5), "b": range(5)})
    large = pl.LazyFrame({"a": range(6), "b": range(6)})
    assert isinstance(frames.in_memory(small, 2), pl.LazyFrame)
    assert frames.in_memory(small, 2).explain().startswith("DF")  # the data, not a plan
    assert frames.in_memory(large, 2) is large  # 12 values > 10: left to the lazy engine


# --- the cases of issue 40, rebuilt ------------------------------------------------------------


def _per_item_statistics(seed: int = 0) -> pl.DataFrame:
    """A table of per-item statistics: one row per (model, item), a judge's mean, its spread,
    an effect size and a zone label per row; a category and a number of turns per item."""
    rng = np.random.default_rng(seed)
    rows = []
    for m in range(7):
        for i in range(60):
            mean = float(np.clip(rng.normal(0.6 + 0.03 * m, 0.2), 0, 1))
            rows.append(
                {
                    "model": f"judge-{m}",
                    "item": f"i{i}",
                    "category": ["math", "code", "writing", "qa"][i % 4],
                    "turns": 1 + i % 3,
                    "score": mean,
                    "judge_sd": float(rng.gamma(2, 0.05)),
                    "effect_size": float(rng.normal(0, 1)),
                    "zone": str(rng.choice(["low", "mid", "high"])),
                }
            )
    return pl.DataFrame(rows)


def test_a_table_of_per_item_statistics_has_no_prompt_factor():
    design = infer_design(_per_item_statistics())
    assert design.prompt_factors == () and design.settings == ()
    assert design.role("category") == design.role("turns") == "item_attribute"
    assert design.role("judge_sd") == "measurement"
    assert design.role("effect_size") in ("measurement", "metadata")  # "size": by name
    assert design.role("zone") == "metadata"
    assert "claims nothing" in next(c.evidence for c in design.columns if c.column == "zone")
    assert (design.groups["n_variants"] == 1).all()


def test_a_failure_reason_is_an_outcome_and_the_serving_build_a_setting():
    rng = np.random.default_rng(3)
    rows = []
    for build in ("b1", "b2", "b3"):
        for i in range(80):
            right = rng.random() < (0.7 if build != "b3" else 0.45)
            rows.append(
                {
                    "model": "llama",
                    "server_build": build,
                    "item": f"f{i}",
                    "score": float(right),
                    "fail_reason": None if right else str(rng.choice(["wrong_args", "no_call"])),
                }
            )
    design = infer_design(pl.DataFrame(rows))
    assert design.role("fail_reason") == "outcome"
    assert design.settings == ("server_build",) and design.prompt_factors == ()


def test_prompt_eval_count_is_a_measurement_whatever_its_name():
    rng = np.random.default_rng(4)
    rows = [
        {
            "model": m,
            "item": f"i{i}",
            "prompt": f"p{p}",
            "prompt_eval_count": int(40 + 3 * i + 7 * p + rng.integers(0, 3)),
            "score": float(rng.random() < 0.6),
        }
        for m in ("a", "b")
        for i in range(30)
        for p in range(8)
    ]
    design = infer_design(pl.DataFrame(rows))
    assert design.role("prompt_eval_count") == "measurement"
    assert "prompt_eval_count" not in design.prompt_factors  # `prompt` is read as the variant
    assert (design.groups["n_variants"] == 8).all()


def test_a_model_attribute_does_not_split_the_variants():
    rows = [
        {
            "model": m,
            "item": f"i{i}",
            "prompt_id_x": f"p{p}",
            "local_or_api": "api" if m == "gpt" else "local",
            "score": float((i + p) % 3 == 0),
        }
        for m in ("gpt", "llama", "qwen")
        for i in range(20)
        for p in range(3)
    ]
    design, table = evalstats.design.design_and_table(pl.DataFrame(rows))
    assert design.role("local_or_api") == "model_attribute"
    per = table.collect().group_by("variant").agg(pl.col("model").n_unique())
    assert (per["model"] == 3).all()  # every variant shared by the three models


def test_a_column_set_in_one_file_of_fifteen_is_metadata(tmp_path):
    for f in range(15):
        rows = {
            "model": ["m"] * 20,
            "item": [f"i{i}" for i in range(20)],
            "prompt_id": [f"p{f}"] * 20,
            "score": [float((i + f) % 2) for i in range(20)],
            "note": [("rerun" if f == 7 else None) for _ in range(20)],
        }
        pl.DataFrame(rows).write_csv(tmp_path / f"part{f:02d}.csv")
    obs, report = evalstats.read(tmp_path)
    design = infer_design(obs, ingest=report)
    assert design.role("note") not in ("prompt", "setting")
    assert obs.collect()["variant"].n_unique() == 15


def test_structure_can_not_decide_one_row_per_item_and_model():
    """One row per (model, item): no column can vary within an item, so none is a factor."""
    rows = [
        {"model": m, "item": f"i{i}", "score": float((i * (m + 1)) % 2), "tag": f"t{(i + m) % 4}"}
        for m in range(3)
        for i in range(30)
    ]
    design = infer_design(pl.DataFrame(rows))
    assert design.role("tag") == "metadata" and design.prompt_factors == ()
    assert "structure cannot tell" in next(c.evidence for c in design.columns if c.column == "tag")


def test_classify_is_a_fixed_number_of_passes_on_a_wide_table():
    """200 candidate columns are judged by a fixed number of queries, not one per column:
    one batch of grouped passes, and one more only for the columns that vary within cells."""
    rng = np.random.default_rng(0)
    n = 2000
    data = {"model": [f"m{i % 4}" for i in range(n)], "item": [str(i // 8) for i in range(n)]}
    data["score"] = rng.random(n).round(1)
    for j in range(200):
        data[f"c{j}"] = rng.integers(0, 3, n)
    frame = pl.DataFrame(data).lazy()
    plans: list[int] = []
    original = pl.collect_all

    def counting(queries, *a, **k):
        plans.append(len(queries))
        return original(queries, *a, **k)

    pl.collect_all = counting
    try:
        rules = classify(frame, [f"c{j}" for j in range(200)])
    finally:
        pl.collect_all = original
    assert len(plans) <= 2 and all(n <= 5 for n in plans)
    assert {r.role for r in rules.values()} == {"prompt"}


# --- lm-eval and JSON Lines ----------------------------------------------------------------------


def _lm_eval_run(folder, date, metadata, text="Q: {{q}}"):
    folder.mkdir(parents=True, exist_ok=True)
    results = {
        "results": {"t": {"acc,none": 0.5}},
        "configs": {"t": {"task": "t", "doc_to_text": text, "metadata": metadata}},
        "model_name": "m",
        "n-shot": {"t": 0},
    }
    (folder / f"results_{date}.json").write_text(json.dumps(results))
    lines = [
        json.dumps(
            {
                "doc_id": i,
                "doc": {"q": f"question {i}\u2028second line"},
                "target": "A",
                "arguments": [],
                "resps": [],
                "filtered_resps": ["A"],
                "filter": "none",
                "metrics": ["acc"],
                "prompt_hash": f"h{i}",
                "acc": float(i % 2),
            },
            ensure_ascii=False,
        )
        for i in range(6)
    ]
    (folder / f"samples_t_{date}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_lm_eval_configs_that_differ_in_metadata_only_are_runs(tmp_path):
    """lm-eval 0.4.9 records the model arguments under the task config's ``metadata``: two
    runs of the same prompt differ there only, and are repeated runs, not task_config
    variants. A U+2028 inside a JSON string does not split a line."""
    _lm_eval_run(tmp_path / "m", "2024-01-01T00-00-00.0", {"version": 1, "pretrained": "a"})
    _lm_eval_run(tmp_path / "m", "2024-01-02T00-00-00.0", {"version": 1.0, "pretrained": "b"})
    obs, report = evalstats.read(tmp_path)
    df = obs.collect()
    assert report.rows_read == report.rows_kept == 12
    assert "task_config" not in df.columns
    assert sorted(df["run"].unique()) == [0, 1] and df["variant"].n_unique() == 1


def test_lm_eval_configs_that_differ_in_the_prompt_are_variants(tmp_path):
    _lm_eval_run(tmp_path / "m", "2024-01-01T00-00-00.0", {"version": 1}, text="Q: {{q}}")
    _lm_eval_run(tmp_path / "m", "2024-01-02T00-00-00.0", {"version": 1}, text="Question: {{q}}")
    obs, _ = evalstats.read(tmp_path)
    assert obs.collect()["task_config"].n_unique() == 2


@pytest.mark.parametrize("sep", ["\u2028", "\u2029", "\x0c", "\x1e", "\x85"])
def test_json_lines_split_on_newline_only(sep):
    from evalstats.io._rows import json_lines

    text = json.dumps({"a": f"x{sep}y"}, ensure_ascii=False) + "\n" + '{"a": 1}\r\n'
    assert [json.loads(line) for line in json_lines(text)] == [{"a": f"x{sep}y"}, {"a": 1}]


# --- headlines that rest on an inferred factor ---------------------------------------------------


def test_a_headline_over_an_inferred_factor_names_it_and_the_correction():
    """A prompt factor taken from its values alone (an unknown name): the prompt-spread
    reading says so and gives the one flag that corrects it; a declared one does not."""
    rng = np.random.default_rng(5)
    rows = [
        {
            "model": m,
            "dataset": "d",
            "item": f"i{i}",
            "arm": f"a{a}",
            "score": float(rng.random() < 0.4 + 0.1 * a),
        }
        for m in ("x", "y")
        for i in range(40)
        for a in range(4)
    ]
    obs = pl.DataFrame(rows)
    skip = ["nstar", "converge", "anova", "attribution", "noise", "ranks", "friedman", "compare"]
    rep = evalstats.audit_report(obs, skip=skip, progress=False, seed=0)
    reading = next(a.reading for a in rep.analyses if a.key == "moments")
    assert "taken as prompt dimension from its values alone" in reading
    assert "--roles arm=metadata" in reading
    declared = evalstats.audit_report(obs, skip=skip, progress=False, seed=0, roles="arm=prompt")
    reading = next(a.reading for a in declared.analyses if a.key == "moments")
    assert "--roles arm=metadata" not in reading


def test_a_factor_the_table_loader_inferred_stays_marked_inferred(tmp_path):
    """Read from a CSV file, the same column is classified by the table loader: the design
    still marks it inferred (source 'values'), not as the format's knowledge."""
    rows = [
        {"model": "m", "item": f"i{i}", "arm": f"a{a}", "prompt_style": f"s{a % 2}", "score": 1.0}
        for i in range(20)
        for a in range(4)
    ]
    path = tmp_path / "t.csv"
    pl.DataFrame(rows).write_csv(path)
    obs, report = evalstats.read(path)
    design = infer_design(obs, ingest=report)
    source = {c.column: c.source for c in design.columns}
    assert source["arm"] == source["prompt_style"] == "values"  # a word in a name is no vocabulary


# --- layouts users have --------------------------------------------------------------------------


def test_one_file_per_model_reads_with_file_as_the_model(tmp_path, capsys):
    """A folder of one JSONL per model with no model column (arena-hard's judgments): with
    ``--roles file=model`` the files are the models and ``--dataset`` names the benchmark."""
    from evalstats.cli import main

    for m, scores in {"gpt": [1, 0, 1, 1], "llama": [0, 0, 1, 0]}.items():
        lines = [json.dumps({"question_id": f"q{i}", "score": s}) for i, s in enumerate(scores)]
        (tmp_path / f"{m}.jsonl").write_text("\n".join(lines) + "\n")
    obs, _ = evalstats.read(tmp_path, columns={"file": "model"}, dataset="arena")
    df = obs.collect()
    assert sorted(df["model"].unique()) == ["gpt", "llama"]
    assert df["dataset"].unique().to_list() == ["arena"]
    assert df.group_by("model").agg(pl.col("score").mean()).sort("model")["score"].to_list() == [
        0.75,
        0.25,
    ]
    code = main(["compare", str(tmp_path), "--roles", "file=model", "--dataset", "arena"])
    out = capsys.readouterr().out
    assert code == 0 and "arena,score,gpt,llama" in out


def test_roles_on_a_column_the_loader_fills_are_refused_not_ignored(capsys):
    """``--roles dataset=prompt`` on an lm-eval folder was ignored without a word."""
    from pathlib import Path

    from evalstats.cli import main

    folder = Path(__file__).parent.parent / "fixtures" / "dumps" / "lm_eval" / "output"
    assert main(["design", str(folder), "--roles", "dataset=prompt"]) == 2
    err = capsys.readouterr().err
    assert "'dataset' is the dataset column the lm-eval loader fills" in err
    assert "Traceback" not in err


def test_a_nested_column_reads_the_same_whatever_its_field_order():
    """polars' JSON inference ordered a struct's fields as the first rows showed them: two reads
    of the real MBSE records gave ``{'patch', 'path'}`` and ``{'path', 'patch'}``, and the
    report's text changed between identical runs. The words are the same for both orders."""

    def frame(order):
        dtype = pl.List(pl.Struct({k: pl.String for k in order}))
        return pl.DataFrame({"score": [1.0], "calls": pl.Series([[]], dtype=dtype)})

    one = classify(frame(["patch", "path"]), ["calls"])["calls"]
    two = classify(frame(["path", "patch"]), ["calls"])["calls"]
    assert one.evidence == two.evidence == "holds lists of objects (fields patch, path)"
