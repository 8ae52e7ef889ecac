"""Headline sanity: ``evalstats report`` on real dumps says nothing a statistician would not sign.

The real dumps are read in place from ../shared/data (skipped without it; its README gives
each source and licence), small subsets derived at test time (tests/conftest.py):

- State of What Art BBH paraphrases (CDLA-Permissive-2.0; ``sowa_headline``): 4 tasks x 5
  models x the first 30 paraphrases, one model missing from one task;
- llm-stability (Apache-2.0): strict_json_schema (gpt-4o, 7 tasks x 5 runs) and the fine-tuned
  runs archive (2 models x 2 tasks, 6-10 runs; ``top_p_k`` differs by model only; gpt-35-turbo
  scores 0.96 in all ten navigate runs);
- lm-evaluation-harness and Inspect logs (MIT, real-logs/SOURCES.md; ``lm_eval_subsets``);
- the bundled demo (simulated, shared with the other report tests).

:func:`headline_sanity.violations` states the rules. Beyond the suite, each defect listed at the
top of issue 15 has a regression test here (or in tests/test_headline_guards.py for the analysis
modules).
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import polars as pl
import pytest
from headline_sanity import _rows, glance, violations

from evalstats.cli import main

ROOT = Path(__file__).resolve().parents[2]

#: Fewer resamples where they only change Monte Carlo precision (not the tests' power).
OPTIONS = (
    "nstar.n_resamples=500",
    "converge.n_orders=50",
    "correlation.n_resamples=199",
    "anova.n_resamples=200",
    "attribution.n_null=3",
)


def _report(path: Path, out: Path, *extra: str) -> SimpleNamespace:
    stdout, stderr = io.StringIO(), io.StringIO()
    args = ["report", str(path), "--out", str(out), "--quiet", "--figure-format", "png"]
    args += [a for o in OPTIONS for a in ("--option", o)]
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main([*args, *extra])
    results = json.loads((out / "results.json").read_text()) if code == 0 else None
    markdown = (out / "report.md").read_text() if code == 0 else ""
    return SimpleNamespace(
        out=out,
        code=code,
        stderr=stderr.getvalue(),
        results=results,
        markdown=markdown,
        analyses={a["key"]: a for a in results["analyses"]} if results else {},
        skipped={s["key"]: s["reason"] for s in results["skipped"]} if results else {},
    )


@pytest.fixture(scope="module")
def reports(
    tmp_path_factory,
    shared_data,
    sowa_headline,
    llm_stability_runs,
    fine_tuned_data,
    lm_eval_subsets,
) -> dict[str, SimpleNamespace]:
    """One report per dump, written once for the module."""
    inspect_log = next((shared_data / "real-logs" / "inspect").glob("vhong-aisi*mmlu*.eval"))
    dumps = {
        "state_of_what_art": sowa_headline,
        "llm_stability_strict": llm_stability_runs,
        "llm_stability_fine_tuned": fine_tuned_data / "runs",
        "lm_eval_winogrande": lm_eval_subsets / "SlurmEvals/llama/winogrande_write_out_info.json",
        "inspect_mmlu": inspect_log,
    }
    # folders with several datasets as users committed them: a 3-task lm-eval GPQA folder
    # (runs of other configurations, a --limit run) and three Inspect logs of three tasks
    dumps["lm_eval_gpqa_folder"] = (
        shared_data
        / "real-logs-2"
        / "lm-eval"
        / "allenlee-37+KT-lm-evaluation-harness__gpqa_2024-11-21"
    )
    dumps["inspect_folder"] = shared_data / "real-logs" / "inspect"
    # the GPQA folder reads with no flag: its cut-off last line and its damaged record are
    # set aside as quirks (counted)
    extra = {"inspect_folder": ("--on-invalid", "skip")}
    base = tmp_path_factory.mktemp("headline")
    return {name: _report(path, base / name, *extra.get(name, ())) for name, path in dumps.items()}


DUMP_NAMES = (
    "state_of_what_art",
    "llm_stability_strict",
    "llm_stability_fine_tuned",
    "lm_eval_winogrande",
    "inspect_mmlu",
    "lm_eval_gpqa_folder",
    "inspect_folder",
)


@pytest.mark.parametrize("name", ["lm_eval_gpqa_folder", "inspect_folder"])
def test_multi_dataset_real_folders_name_their_coverage_in_every_headline(reports, name):
    """Check 7 applies to these folders: each has 3 datasets, and every headline says how many
    of them it covers ("all 3 datasets", "1 of 3 datasets", "3 datasets pooled")."""
    rep = reports[name]
    assert rep.code == 0, rep.stderr
    datasets = {r.get("dataset") for a in rep.results["analyses"] for t in a["tables"].values()
                for r in _rows(t) if isinstance(r, dict) and r.get("dataset")}  # fmt: skip
    assert len(datasets) >= 3
    heads = [ln for ln in glance(rep.markdown).splitlines() if ln.startswith("- **")]
    assert heads
    for ln in heads:
        assert re.search(r"\((all \d+ datasets|\d+ of \d+ datasets|\d+ datasets pooled)\)", ln), ln


@pytest.mark.parametrize("name", DUMP_NAMES)
def test_report_on_real_dump_passes_the_headline_checks(reports, name):
    rep = reports[name]
    assert rep.code == 0, rep.stderr
    assert violations(rep.out) == []


def test_demo_report_passes_the_headline_checks(demo_run):
    assert demo_run.code == 0
    assert violations(demo_run.out) == []


# --- regression tests: one per defect at the top of issue 15 ------------------------------------


def test_vacuous_nstar_is_not_hidden_in_the_summary(reports):
    """State of What Art: groups whose variance over prompts is below ε have a vacuous n*."""
    rep = reports["state_of_what_art"]
    nstar = rep.analyses["nstar"]
    rows = _rows(nstar["tables"]["nstar"])
    vacuous = [r for r in rows if r["moment"] == "variance" and r["vacuous"]]
    assert vacuous  # the premise: variance over 30 paraphrases below 0.01 somewhere
    reading = nstar["reading"]
    assert "vacuous" in reading
    assert f"n* is vacuous in {len(vacuous)} of " in reading
    # the range quoted for the variance is over the groups where its n* says something
    informative = [
        r["n_star"] for r in rows if r["moment"] == "variance" and r["reached"] and not r["vacuous"]
    ]
    if informative:
        lo, hi = min(informative), max(informative)
        assert (
            f"the variance needs {lo if lo == hi else f'between {lo} and {hi}'} variants" in reading
        )


def test_decoding_settings_are_not_prompt_variants(tmp_path, sowa_headline):
    """A real-shaped table whose variants are paraphrases at two temperatures."""
    obs = pl.read_csv(sowa_headline / "paraphrases accuracies/BBH/snarks.csv")
    long = obs.unpivot(index="paraphrase idx", variable_name="model", value_name="score")
    long = long.with_columns(
        pl.col("model").str.replace("_acc$", ""),
        pl.lit("snarks").alias("dataset"),
        pl.col("paraphrase idx").cast(pl.String).alias("paraphrase"),
    ).drop("paraphrase idx")
    table = pl.concat(
        [
            long.with_columns(pl.lit(0.0).alias("temperature")),
            long.with_columns(pl.lit(1.0).alias("temperature"), pl.col("score") * 0.8),
        ]
    )
    path = tmp_path / "two_temperatures.csv"
    table.write_csv(path)
    rep = _report(path, tmp_path / "out")
    assert rep.code == 0, rep.stderr
    moments = rep.analyses["moments"]
    cols = [c["name"] for c in moments["tables"]["moments"]["columns"]]
    assert "temperature" in cols  # analysed per temperature, the variants are paraphrases
    assert {r["n_variants"] for r in _rows(moments["tables"]["moments"])} == {30}
    assert "temperature" in moments["reading"]
    assert violations(rep.out) == []
    # the user's word: temperatures are variants too
    rep_all = _report(path, tmp_path / "all", "--variant-factors", "all")
    cols = [c["name"] for c in rep_all.analyses["moments"]["tables"]["moments"]["columns"]]
    assert "temperature" not in cols


def test_factor_aliased_with_the_model_is_skipped_with_the_reason(reports):
    """llm-stability fine-tuned runs: top_p_k is 0.0 for one model and 1.0 for the other.

    Constant within each model and different between them, it is a model attribute (issue
    40), not a factor: ANOVA and attribution have no factor and say so.
    """
    rep = reports["llm_stability_fine_tuned"]
    for key in ("anova", "attribution"):
        assert key in rep.skipped
        assert "no complete factor column" in rep.skipped[key]
        assert "top_p_k" not in rep.skipped[key]


def test_attribution_with_cv_r_sq_at_most_zero_is_skipped(tmp_path, shared_data):
    """State of What Art, flan-t5-xl on snarks: the paraphrase method predicts nothing.

    Out of fold the xgboost model does worse than the mean (cross-validated R² = -0.03; -0.13
    for OLS), so its importances would rank noise.
    """
    sowa = shared_data / "state-of-what-art"
    acc = pl.read_csv(sowa / "paraphrases accuracies/BBH/snarks.csv")
    meta = pl.read_csv(sowa / "automatic paraphrases/BBH/snarks.csv")
    obs = (
        acc.select(pl.col("paraphrase idx").alias("idx"), pl.col("flan-t5-xl_acc").alias("score"))
        .join(meta.select(pl.col("prompt idx").alias("idx"), "method"), on="idx")
        .with_columns(
            pl.lit("flan-t5-xl").alias("model"),
            pl.lit("snarks").alias("dataset"),
            pl.col("idx").cast(pl.String).alias("paraphrase"),
        )
        .drop("idx")
    )
    path = tmp_path / "methods.csv"
    obs.write_csv(path)
    rep = _report(path, tmp_path / "out", "--factors", "method")
    assert rep.code == 0, rep.stderr
    assert "attribution" in rep.skipped, rep.analyses.get("attribution", {}).get("reading")
    assert "cross-validated R²" in rep.skipped["attribution"]
    assert violations(rep.out) == []


def test_friedman_names_the_dataset_it_dropped(reports):
    """State of What Art subset: minotaur-15b has no hyperbaton scores."""
    rep = reports["state_of_what_art"]
    fr = rep.analyses["friedman"]
    assert fr["values"]["n_blocks"] == 3
    assert [d["dataset"] for d in fr["values"]["dropped_blocks"]] == ["hyperbaton"]
    assert "hyperbaton" in fr["reading"] and "minotaur-15b" in fr["reading"]
    assert "hyperbaton" in glance(rep.markdown).replace("\\", "")


def test_equal_run_accuracies_are_not_called_non_normal(reports):
    """llm-stability: 0.96 in all ten runs is constant, not a rejection of normality."""
    rep = reports["llm_stability_fine_tuned"]
    rows = _rows(rep.analyses["normality"]["tables"]["normality"])
    nav = [r for r in rows if r["model"] == "gpt-35-turbo" and r["dataset"] == "navigate"]
    assert nav and all(r["pvalue"] is None for r in nav)
    assert all(r["sd"] == 0.0 for r in nav)
    assert "constant" in rep.analyses["normality"]["reading"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--default", "templat=plain"],
            r"`--default` names 'templat'.*factor columns: .*template",
        ),
        (["--default", "template=plan"], r"`--default`.*'plan'.*(levels|plain)"),
        (["--factors", "templat"], r"`--factors` names 'templat'.*factor columns: .*template"),
        (["--variant-factors", "templat"], r"`--variant-factors` names 'templat'"),
        (["--option", "anova.interaction=1"], r"`--option` sets anova\.interaction"),
        (["--option", "anova.factors=templat"], r"'templat'"),
    ],
)
def test_user_errors_exit_2_naming_the_valid_choices(tmp_path, capsys, extra, message):
    import re

    demo = ROOT / "fixtures" / "demo" / "demo_observations.parquet"
    code = main(["report", str(demo), "--out", str(tmp_path / "r"), "--quiet", *extra])
    err = capsys.readouterr().err
    assert code == 2, err
    assert re.search(message, err), err
    assert "Traceback" not in err
    assert not (tmp_path / "r" / "results.json").exists()


def test_a_metric_in_its_own_units_is_not_called_accuracy_or_points(tmp_path, lm_eval_subsets):
    """lm-eval truthfulqa_gen (BLEU-style scores, unbounded): two runs of one task over
    different documents, declared prompt variants (the design holds document sets apart as a
    setting; --roles makes them variants). The readings quote the spread in the metric's
    units, not "accuracy ... points", and variance shares stay percentages."""
    rep = _report(
        lm_eval_subsets / "results__truthfulqa", tmp_path / "tqa", "--roles", "doc_set=prompt"
    )
    assert rep.code == 0, rep.stderr
    moments = rep.analyses["moments"]["reading"]
    assert moments.startswith("Across 2 prompt variants per group, score moves by up to ")
    assert "accuracy" not in moments and "points" not in moments
    noise = rep.analyses["noise"]["reading"]
    assert re.search(r"\(\d+\.\d %( |–)", noise), noise


def test_differences_on_a_metric_in_its_own_units_are_not_points():
    """Pairs on a mixed table (a 0/1 metric and an unbounded one): scores are quoted in the
    metrics' units, and a difference of 0.28 is not "0.28 points"."""
    from evalstats.report import audit_report

    rng = np.random.default_rng(0)
    rows = []
    for metric, scores in (("acc", lambda p: rng.binomial(1, p, 60)), ("bleu", None)):
        for model, p in (("a", 0.8), ("b", 0.4)):
            s = scores(p) if scores else rng.normal(10 * p, 1.0, 60)
            rows += [(model, "d", metric, f"q{i}", float(x)) for i, x in enumerate(s)]
    obs = pl.DataFrame(rows, schema=["model", "dataset", "metric", "item", "score"], orient="row")
    rep = audit_report(obs, options={"compare": {"n_resamples": 99}}, skip=("ranks", "noise"))
    reading = rep["compare"].reading
    assert "a ahead of b" in reading and "points" not in reading, reading


def test_unextracted_answers_are_warned_before_any_number(reports):
    """The GPQA folder: lm-eval's regex filter found no answer in 72-78 % of gpt-4o's
    responses ('[invalid]', scored 0), so its 0-6 % "scores" sit far below a four-choice
    test's 25 %. The report says so in its first lines, above the design and the headlines."""
    rep = reports["lm_eval_gpqa_folder"]
    assert rep.code == 0, rep.stderr
    top = rep.markdown.split("## Design", 1)[0]
    assert "> **Warning:** lm-eval's filter extracted no answer from 78% of gpt-4o's" in top
    assert "and 2 more model–task pairs" in top
    notes = [n for n in rep.results["ingest"]["notes"] if "not extracted by the filter" in n]
    assert len(notes) == 3 and any("36 of 49 answers" in n for n in notes)  # counted in the files
