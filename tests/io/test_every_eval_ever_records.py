"""Every Eval Ever records that differ in what the producer told apart: the configuration of
the run (agent scaffold, reasoning effort), the split, the metric's declared range.

The records are synthetic, written from the published schema (``eval.schema.json``,
``instance_level_eval.schema.json``); no real data is copied here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl

from evalstats import infer_design
from evalstats.io.every_eval_ever import read_every_eval_ever


def _result(name: str, score: float, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "evaluation_name": name,
        "source_data": {"dataset_name": name, "source_type": "url", "url": ["https://x.org"]},
        "metric_config": {
            "lower_is_better": False,
            "score_type": "continuous",
            "min_score": 0.0,
            "max_score": 1.0,
        },
        "score_details": {"score": score},
    }
    out.update(extra)
    return out


def _record(
    folder: Path,
    eid: str,
    model: str,
    results: list[dict[str, Any]],
    *,
    details: dict[str, str] | None = None,
    version: str = "0.2.2",
) -> Path:
    doc = {
        "schema_version": version,
        "evaluation_id": eid,
        "retrieved_timestamp": "1",
        "source_metadata": {
            "source_type": "documentation",
            "source_organization_name": "lab",
            "evaluator_relationship": "third_party",
        },
        "eval_library": {"name": "harness", "version": "unknown"},
        "model_info": {
            "name": model,
            "id": model,
            **({"additional_details": details} if details else {}),
        },
        "evaluation_results": results,
    }
    f = folder / model.replace("/", "_") / f"{eid.replace('/', '_')}.json"
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(json.dumps(doc))
    return f


def _scaffold_records(folder: Path) -> None:
    """Two models, each under two agent scaffolds; model a also under two reasoning efforts.

    Every record also carries its leaderboard rank, its cost and a display name, which differ
    from record to record but are not what was varied.
    """
    rank = 0
    for model, efforts in (("org/a", [None, "high"]), ("org/b", ["low"])):
        for scaffold in ("Generalist", "Deep Research"):
            for effort in efforts:
                rank += 1
                details = {
                    "agent_scaffold": scaffold,
                    "display_name": f"{model} {effort or ''}".strip(),
                    "total_cost_usd": str(10.5 * rank),
                    **({"inference_effort": effort} if effort else {}),
                }
                gen = {
                    "additional_details": {
                        "agent_scaffold": scaffold,
                        "rank": str(rank),
                        "total_cost_usd": str(10.5 * rank),
                    }
                }
                score = 0.1 * rank
                results = [
                    _result("bench", score, generation_config=gen),
                    _result("bench - level 1", score / 2, generation_config=gen),
                ]
                _record(folder, f"bench/{model}/{rank}", model, results, details=details)


def test_records_that_differ_in_scaffold_and_effort_are_settings_not_duplicates(tmp_path):
    _scaffold_records(tmp_path)
    obs, report = read_every_eval_ever(tmp_path)
    df = obs.collect()
    assert report.rows_read == report.rows_kept == 12
    assert report.set_aside == {}
    assert {"agent_scaffold", "inference_effort"} <= set(df.columns)
    # the rank, the cost and the display name tell records apart too, but are not levels of
    # what was varied: they are functions of (model, scaffold, effort) here
    assert not {"rank", "total_cost_usd", "display_name"} & set(df.columns)
    a = df.filter(pl.col("model") == "org/a", pl.col("dataset") == "bench")
    assert sorted(a.select("agent_scaffold", "inference_effort").rows(), key=str) == sorted(
        [
            ("Generalist", None),
            ("Generalist", "high"),
            ("Deep Research", None),
            ("Deep Research", "high"),
        ],
        key=str,
    )
    roles = {c.column: c.role for c in infer_design(obs, ingest=report).columns}
    assert roles["agent_scaffold"] == roles["inference_effort"] == "setting"


def test_samples_of_records_that_differ_only_in_their_scaffold_are_kept(tmp_path):
    for i, scaffold in enumerate(("Generalist", "Deep Research")):
        rid = "bench:acc"
        res = _result("bench", 0.5, evaluation_result_id=rid)
        f = _record(tmp_path, f"e{i}", "org/a", [res], details={"agent_scaffold": scaffold})
        lines = [
            {
                "schema_version": "0.2.2",
                "evaluation_id": f"e{i}",
                "model_id": "org/a",
                "evaluation_name": "bench",
                "evaluation_result_id": rid,
                "sample_id": str(item),
                "interaction_type": "agentic",
                "evaluation": {"score": float((item + i) % 2), "is_correct": (item + i) % 2 == 1},
            }
            for item in range(2)
        ]
        f.with_name(f"e{i}_samples.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    obs, report = read_every_eval_ever(tmp_path)
    df = obs.collect()
    assert report.rows_read == report.rows_kept == 4
    assert df.group_by("agent_scaffold").len().sort("agent_scaffold").rows() == [
        ("Deep Research", 2),
        ("Generalist", 2),
    ]


def test_a_key_of_each_record_alone_tells_records_apart_when_nothing_else_does(tmp_path):
    for i in range(2):
        _record(tmp_path, f"e{i}", "org/a", [_result("bench", 0.5)], details={"run_id": str(i)})
    obs, report = read_every_eval_ever(tmp_path)
    assert report.rows_kept == 2
    assert obs.collect()["run_id"].sort().to_list() == [0, 1]


def test_records_that_differ_in_nothing_are_duplicates(tmp_path):
    for i in range(2):
        _record(tmp_path, f"e{i}", "org/a", [_result("bench", 0.5)], details={"lab": "x"})
    obs, report = read_every_eval_ever(tmp_path, on_invalid="skip")
    assert report.rows_read == 2 and report.rows_kept == 1
    assert report.set_aside == {"duplicate": 1}


def _ranged(name: str, score: float, low: float | None, high: float | None) -> dict[str, Any]:
    res = _result(name, score)
    cfg = res["metric_config"]
    cfg["min_score"], cfg["max_score"] = low, high
    if low is None and high is None:
        del cfg["min_score"], cfg["max_score"]
    return res


def test_one_metric_name_with_two_declared_ranges_is_one_metric_per_evaluation(tmp_path):
    """A 0-1 win rate and 0-5 ratings, all named ``score`` (no metric_id), as a leaderboard
    scraped into records writes them: read, each evaluation its own metric, scores unchanged."""
    for i, model in enumerate(("org/a", "org/b")):
        results = [
            _ranged("Mean win rate", 0.25 + 0.5 * i, 0.0, 1.0),
            _ranged("Ratings A", 4.5 - i, 0.0, 5.0),
            _ranged("Ratings B", 3.0 + i, 0.0, 5.0),
        ]
        _record(tmp_path, f"e{i}", model, results)
    obs, report = read_every_eval_ever(tmp_path)
    df = obs.collect()
    assert report.rows_kept == 6
    got = {(m.name, m.low, m.high) for m in report.metrics}
    assert got == {
        ("score (Mean win rate)", 0.0, 1.0),
        ("score (Ratings A)", 0.0, 5.0),
        ("score (Ratings B)", 0.0, 5.0),
    }
    assert df.filter(pl.col("model") == "org/a").sort("metric")["score"].to_list() == [
        0.25,
        4.5,
        3.0,
    ]
    assert any("'score' is declared with different ranges" in n for n in report.notes)


def test_a_range_not_provided_takes_the_one_the_other_records_declare(tmp_path):
    _record(tmp_path, "e0", "org/a", [_ranged("bench", 0.5, 0.0, 1.0)])
    _record(tmp_path, "e1", "org/b", [_ranged("bench", 0.7, None, None)])
    obs, report = read_every_eval_ever(tmp_path)
    assert [(m.name, m.low, m.high) for m in report.metrics] == [("score", 0.0, 1.0)]
    assert not any("declared with" in n for n in report.notes)


def test_one_evaluation_declared_with_two_ranges_takes_the_widest_with_a_note(tmp_path):
    _record(tmp_path, "e0", "org/a", [_ranged("bench", 0.5, 0.0, 1.0)])
    _record(tmp_path, "e1", "org/b", [_ranged("bench", 0.7, 0.0, 100.0)])
    _record(tmp_path, "e2", "org/b", [_ranged("other", 7.0, 0.0, 10.0)])
    obs, report = read_every_eval_ever(tmp_path)
    got = {(m.name, m.low, m.high) for m in report.metrics}
    assert got == {("score (bench)", 0.0, 100.0), ("score (other)", 0.0, 10.0)}
    assert any("the widest, [0, 100], is used" in n for n in report.notes)


def _helm_0_1_0(folder: Path, dataset: str, model: str, stats: list[tuple]) -> None:
    """A record in schema 0.1.0's layout: one ``source_data`` for the record, the metric named
    in ``evaluation_description``, the split and perturbation in ``score_details.details``."""
    results = []
    for metric, split, perturbation, score in stats:
        results.append(
            {
                "evaluation_name": "multiple_choice_joint",
                "metric_config": {
                    "evaluation_description": metric,
                    "lower_is_better": False,
                    "min_score": None,
                    "max_score": None,
                },
                "score_details": {
                    "score": score,
                    "details": {
                        "count": 1,
                        "mean": score,
                        "split": split,
                        "perturbation": (
                            {"name": perturbation, "computed_on": "worst"} if perturbation else None
                        ),
                    },
                },
                "generation_config": {"temperature": 0.0, "max_tokens": 1},
            }
        )
    doc = {
        "schema_version": "0.1.0",
        "evaluation_id": f"helm/{model}/{dataset}/1",
        "retrieved_timestamp": "1",
        "source_data": {"dataset_name": dataset, "samples_number": 10},
        "source_metadata": {"source_name": "helm", "source_type": "evaluation_run"},
        "model_info": {"name": model, "id": model, "inference_platform": "huggingface"},
        "evaluation_results": results,
    }
    f = folder / dataset / f"{dataset}.json"
    f.parent.mkdir(parents=True)
    f.write_text(json.dumps(doc))


def test_schema_0_1_0_splits_are_parts_of_one_dataset_and_the_test_split_is_its_result(tmp_path):
    _helm_0_1_0(
        tmp_path,
        "mmlu",
        "org/a",
        [
            ("exact_match", "test", None, 0.25),
            ("exact_match", "test", None, 0.25),  # repeated verbatim by the converter
            ("exact_match", "valid", None, 0.0),
            ("exact_match", "test", "robustness", 0.125),
            ("exact_match", "valid", "robustness", 0.0),
        ],
    )
    _helm_0_1_0(tmp_path, "hellaswag", "org/b", [("exact_match", "valid", None, 0.5)])
    obs, report = read_every_eval_ever(tmp_path)
    df = obs.collect()
    assert report.rows_read == 6
    assert report.rows_read == report.rows_kept + sum(report.set_aside.values())
    assert report.set_aside == {"duplicate": 1, "other_split": 2}
    assert sorted(df["dataset"].unique()) == [
        "hellaswag/multiple_choice_joint",
        "mmlu/multiple_choice_joint",
    ]
    rows = df.sort("dataset", "metric").select("dataset", "metric", "score").rows()
    assert rows == [
        ("hellaswag/multiple_choice_joint", "exact_match", 0.5),
        ("mmlu/multiple_choice_joint", "exact_match", 0.25),
        ("mmlu/multiple_choice_joint", "exact_match (robustness, worst)", 0.125),
    ]
    assert any("other_split" in n and "test kept, valid set aside" in n for n in report.notes)


def test_of_two_keys_each_record_has_its_own_of_the_text_one_is_chosen_over_the_number():
    from evalstats.io.every_eval_ever._records import _distinguishing

    key = ("org/a", "bench", "score")
    entries = [
        ("r0", key, {"cost": 12.5, "harness": "alpha"}),
        ("r1", key, {"cost": 30.0, "harness": "beta"}),
    ]
    assert _distinguishing(entries) == ["harness"]
    # a key whose values are shared between records comes first, whatever its type
    entries += [
        ("r2", ("org/b", "bench", "score"), {"cost": 7.0, "harness": "gamma", "effort": 1}),
        ("r3", ("org/b", "bench", "score"), {"cost": 8.0, "harness": "delta", "effort": 2}),
    ]
    entries[0][2]["effort"] = 1
    entries[1][2]["effort"] = 2
    assert _distinguishing(entries) == ["effort"]
