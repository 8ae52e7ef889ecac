"""The report reads the whole study: headlines over every dataset, tables that keep their groups.

Issue 30: on a five-task folder the headlines showed the first task only, and report.md's tables
dropped the held settings, so four "m0 d0" rows looked like one group printed four times.
"""

from __future__ import annotations

import warnings

import numpy as np
import polars as pl
import pytest

from evalstats.report import audit_report
from evalstats.report._glance import headline
from evalstats.report._tables import display_frame
from evalstats.simulate import observations


def test_a_table_grouped_by_held_settings_shows_them():
    frame = pl.DataFrame(
        {
            "model": ["m0"] * 4,
            "dataset": ["d0"] * 4,
            "metric": ["acc"] * 4,
            "temperature": [0.0, 0.0, 0.7, 0.7],
            "provider": ["a", "b", "a", "b"],
            "n_variants": [11, 11, 13, 13],
            "mean": [0.61, 0.55, 0.68, 0.61],
        }
    )
    shown = display_frame("moments", "moments", frame)
    assert shown.columns[:4] == ["model", "dataset", "temperature", "provider"]
    assert shown.select("model", "dataset", "temperature", "provider").n_unique() == 4


def test_a_table_whose_shown_keys_already_tell_rows_apart_is_unchanged():
    frame = pl.DataFrame(
        {
            "model": ["m0", "m1"],
            "dataset": ["d0", "d0"],
            "metric": ["acc", "acc"],
            "temperature": [0.0, 0.7],
            "n_variants": [11, 13],
            "mean": [0.61, 0.55],
        }
    )
    assert "temperature" not in display_frame("moments", "moments", frame).columns


@pytest.fixture(scope="module")
def three_datasets():
    obs = observations(
        n_models=3,
        n_datasets=3,
        n_items=80,
        n_variants=1,
        model_accuracy=(0.5, 0.6, 0.7),
        seed=4,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = audit_report(obs, options={"ranks": {"n_resamples": 200}})
    return rep


@pytest.mark.parametrize("key", ["intervals", "ranks", "compare"])
def test_headlines_cover_every_dataset(three_datasets, key):
    c = three_datasets.contents if hasattr(three_datasets, "contents") else three_datasets
    a = next(a for a in c.analyses if a.key == key)
    title, text = headline(a, c.data.datasets)
    assert title.endswith("(all 3 datasets)")
    assert not text.startswith("On ")  # no single dataset stands for the study
    if key == "intervals":
        assert text.startswith("m2 has the highest mean accuracy on all 3 datasets (")
    if key == "ranks":
        assert "on all 3 datasets" in text
    if key == "compare":
        assert "model pairs differ" in text


def test_figures_none_writes_tables_and_text_only(three_datasets, tmp_path):
    html = three_datasets.write(tmp_path / "r", figure_formats=("none",))
    out = html.parent
    assert (out / "report.md").exists() and (out / "results.json").exists()
    assert not (out / "figures").exists() or not any((out / "figures").iterdir())
    assert "![" not in (out / "report.md").read_text(encoding="utf-8")
    assert any((out / "tables").glob("*.csv"))


def test_figure_formats_all_and_unknown():
    from evalstats.errors import ParameterError
    from evalstats.report._write import FIGURE_FORMATS, check_figure_formats

    assert check_figure_formats(["all"]) == FIGURE_FORMATS
    assert check_figure_formats(["none"]) == ()
    with pytest.raises(ParameterError, match="'none' for no figures"):
        check_figure_formats(["gif"])


def test_percent_scaled_scores_are_named_in_the_first_lines(tmp_path):
    """Issue 30: a percent-scaled file ran through with a mean of 61.875 and exit 0, silently."""
    rng = np.random.default_rng(0)
    rows = [
        {"model": m, "dataset": "d", "item": f"i{i}", "score": float(rng.choice([0, 50, 100]))}
        for m in ("a", "b")
        for i in range(40)
    ]
    path = tmp_path / "pct.csv"
    pl.DataFrame(rows).write_csv(path)
    from evalstats.cli import main

    assert main(["report", str(path), "--out", str(tmp_path / "r"), "--figures", "none",
                 "--quiet"]) == 0  # fmt: skip
    md = (tmp_path / "r" / "report.md").read_text(encoding="utf-8")
    head = md.split("## Design")[0]
    assert "> **Warning:** The scores of" in head and "--rescale 100" in head
    assert "up to 1 prompt variant and 1 run" in head  # plural forms
    html = (tmp_path / "r" / "report.html").read_text(encoding="utf-8")
    assert 'class="alert"' in html


def test_an_undeclared_0_1_metric_is_described_as_the_analyses_treat_it(tmp_path):
    """Issue 30: the ingest note said 'unbounded' while n*, Wilson and the planner used [0, 1]."""
    from evalstats.cli import main

    obs = observations(n_models=2, n_items=30, n_variants=1, seed=1)
    path = tmp_path / "acc.csv"
    obs.select("model", "dataset", "item", "score").write_csv(path)
    assert main(["report", str(path), "--out", str(tmp_path / "r"), "--figures", "none",
                 "--quiet"]) == 0  # fmt: skip
    md = (tmp_path / "r" / "report.md").read_text(encoding="utf-8")
    assert "unbounded" not in md.split("## Data")[1].split("##")[0]
    assert "analyses treat it as on \\[0, 1\\]" in md


def test_listed_pairs_name_the_held_setting_they_were_compared_at():
    """Pairs compared at each level of a held setting (a temperature) name the level: the
    temperature study's reading listed 'gemini ahead of llama by 58.0 points' three times."""
    obs = observations(n_models=2, n_items=120, n_variants=1, model_accuracy=(0.3, 0.9), seed=2)
    obs = obs.collect() if isinstance(obs, pl.LazyFrame) else obs
    table = pl.concat(
        [obs.with_columns(pl.lit(t).alias("temperature")) for t in (0.0, 0.7)], how="vertical"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = audit_report(table, skip=("attribution", "moments", "nstar", "converge", "anova"))
    reading = report["compare"].reading
    assert "(temperature 0.0)" in reading and "(temperature 0.7)" in reading, reading


def _unit_rows(rows: list[tuple[str, str, float]]) -> pl.DataFrame:
    """A unit table (one score per model and dataset, no items), as an Inspect header gives."""
    return pl.DataFrame(rows, schema=["model", "dataset", "score"], orient="row").with_columns(
        variant=pl.lit("v"), n_items=pl.lit(3)
    )


def test_a_dataset_with_one_model_has_no_leader_and_tied_leaders_are_said_once():
    """A real Every Eval Ever Inspect record read "the model with the highest mean accuracy
    differs: claude on 1 and gpt-4o-mini on 1 (its mean from 100.0 % on ai2_arc/choice to
    100.0 % on ai2_arc/choice)": gpt-4o-mini ran alone on the other dataset, and the two ends
    of the range were the same row."""
    from evalstats.report import ANALYSES

    only = [a.key for a in ANALYSES if a.key != "intervals"]
    rep = audit_report(
        _unit_rows([("a", "d0", 1.0), ("b", "d0", 1 / 3), ("c", "d1", 1.0)]), skip=only
    )
    reading = rep["intervals"].reading
    assert "differs" not in reading and "c on 1" not in reading, reading
    assert reading.startswith("On d0, a has the highest mean"), reading
    three = _unit_rows(
        [("a", "d0", 1.0), ("b", "d0", 0.5), ("b", "d1", 1.0), ("a", "d1", 0.2), ("c", "d2", 0.4)]
    )
    reading = audit_report(three, skip=only)["intervals"].reading
    assert reading.startswith(
        "Across the 2 datasets with two or more models, the model with the highest mean "
        "accuracy differs: a on 1 and b on 1 (the leading mean is 100.0 % on each)."
    ), reading


def test_one_model_scoring_the_same_everywhere_is_said_once():
    """A real lm-eval dump read "SOLAR scores from 0.0 % on math_hard to 0.0 % on math_hard"."""
    from evalstats.report import ANALYSES

    only = [a.key for a in ANALYSES if a.key != "intervals"]
    rep = audit_report(_unit_rows([("a", "d0", 0.0), ("a", "d1", 0.0)]), skip=only)
    assert rep["intervals"].reading.startswith("Across both datasets, a scores 0.0 % on each."), (
        rep["intervals"].reading
    )
