"""The metric convention: a ``metric`` column, scores on their own scale, bounds and direction.

See ``evalstats/schema.py`` (module docstring) and ``docs/metrics.md``.
"""

from __future__ import annotations

import json
import math

import polars as pl
import pytest
from numpy.testing import assert_allclose

from evalstats import factor_anova, prompt_spread, required_sample_size
from evalstats.aggregate import read_units, to_units
from evalstats.cli import main
from evalstats.errors import ParameterError, SchemaError
from evalstats.io import read
from evalstats.schema import (
    KEY_COLUMNS,
    MetricInfo,
    metric_info,
    validate_observations,
    validate_units,
    with_metric,
)
from evalstats.simulate import observations, unit_table

# --- MetricInfo and the schema -----------------------------------------------------------------


def test_metric_info_validates_its_fields():
    assert MetricInfo("acc", 0, 1).unit_interval
    assert not MetricInfo("bleu", 0, 100).unit_interval
    assert not MetricInfo("x", 0, None).unit_interval and MetricInfo("x", 0, None).range is None
    assert MetricInfo("bleu_diff", -100, 100).range == 200.0
    with pytest.raises(SchemaError, match="lower bound must be below the upper one"):
        MetricInfo("x", 1, 0)
    with pytest.raises(SchemaError, match="bound `high` must be a finite number"):
        MetricInfo("x", 0, math.inf)
    with pytest.raises(SchemaError, match="`higher_is_better` must be True or False"):
        MetricInfo("x", higher_is_better=1)  # type: ignore[arg-type]


def test_unit_key_includes_the_metric():
    assert KEY_COLUMNS == ("model", "dataset", "metric", "variant", "run")


def test_hand_built_tables_get_the_default_metric_and_keep_their_numbers():
    obs = observations(n_models=2, n_items=10, n_variants=3, seed=1)
    assert "metric" not in obs.columns
    lf = validate_observations(obs)
    assert lf.select(pl.col("metric").unique()).collect().to_series().to_list() == ["score"]
    units = to_units(obs).collect()
    assert units.columns[:5] == list(KEY_COLUMNS)
    assert metric_info(units) == {"score": MetricInfo("score")}


def test_scores_are_any_finite_number_but_never_non_finite():
    units = pl.DataFrame({"model": ["a", "b"], "dataset": ["d", "d"], "score": [-3.5, 250.0]})
    assert validate_units(units).collect().height == 2
    for bad in (math.nan, math.inf, -math.inf):
        frame = units.with_columns(pl.Series("score", [1.0, bad]))
        with pytest.raises(SchemaError, match=r"row 2, column 'score': expected a finite number"):
            validate_units(frame)


def test_declared_bounds_are_checked_and_one_declaration_per_metric():
    units = pl.DataFrame({"model": ["a", "b"], "dataset": ["d", "d"], "score": [0.5, 2.0]})
    with pytest.raises(SchemaError, match=r"row 2.*declared range \[0, 1\] of metric 'acc'"):
        validate_units(with_metric(units, MetricInfo("acc", 0, 1)))
    validate_units(with_metric(units, MetricInfo("passed", 0, 3)))
    mixed = pl.concat(
        [
            with_metric(units.head(1), MetricInfo("acc", 0, 1)),
            with_metric(units.tail(1).with_columns(model=pl.lit("c")), MetricInfo("acc", 0, 3)),
        ]
    )
    with pytest.raises(SchemaError, match="metric 'acc' is declared twice"):
        validate_units(mixed)


def test_with_metric_mapping_labels_each_metric():
    units = pl.DataFrame(
        {"model": ["a", "a"], "dataset": ["d", "d"], "metric": ["acc", "mae"], "score": [0.5, 2.0]}
    )
    out = with_metric(units, {"mae": MetricInfo("mae", 0, None, higher_is_better=False)})
    info = metric_info(out)
    assert info["acc"] == MetricInfo("acc") and info["mae"].direction == "lower is better"
    with pytest.raises(SchemaError, match="needs a 'metric' column"):
        with_metric(units.drop("metric"), {"x": MetricInfo("x")})


def test_two_metrics_of_one_unit_are_two_units_never_one_mean():
    obs = pl.DataFrame(
        {
            "model": ["a"] * 4,
            "dataset": ["d"] * 4,
            "item": ["1", "2", "1", "2"],
            "metric": ["acc", "acc", "bleu", "bleu"],
            "score": [1.0, 0.0, 40.0, 20.0],
        }
    )
    units = to_units(obs).collect()
    assert units.select("metric", "score").rows() == [("acc", 0.5), ("bleu", 30.0)]
    spread = prompt_spread(units)
    assert spread.select("metric", "mean").rows() == [("acc", 0.5), ("bleu", 30.0)]


# --- loaders: declarations, user overrides, set-aside reasons ---------------------------------


def _long_csv(tmp_path):
    f = tmp_path / "runs.csv"
    f.write_text(
        "model,item,metric,score\n"
        "a,1,acc,1\na,2,acc,0\na,1,latency,2.5\na,2,latency,1.5\n"
        "b,1,acc,1\nb,2,acc,1\nb,1,latency,4.0\nb,2,latency,inf\n"
    )
    return f


def test_user_declarations_override_and_are_reported(tmp_path):
    f = _long_csv(tmp_path)
    obs, report = read(f, metric_range={"acc": (0, 1)}, higher_is_better={"latency": False})
    assert report.metrics == (
        MetricInfo("acc", 0, 1),
        MetricInfo("latency", None, None, higher_is_better=False),
    )
    assert dict(report.set_aside) == {"nonfinite_score": 1}
    assert any("metric latency: unbounded, lower is better" in n for n in report.notes)
    assert report.to_dict()["metrics"][1] == {
        "name": "latency",
        "low": None,
        "high": None,
        "higher_is_better": False,
    }
    # one declaration for every metric
    _, report = read(f, higher_is_better=False)
    assert {m.higher_is_better for m in report.metrics} == {False}


def test_metrics_option_keeps_some_metrics_and_counts_the_others(tmp_path):
    obs, report = read(_long_csv(tmp_path), metrics=["acc"])
    assert obs.collect()["metric"].unique().to_list() == ["acc"]
    assert dict(report.set_aside) == {"other_metric": 4}
    assert report.rows_read == 8 == report.rows_kept + report.rows_set_aside


def test_malformed_declarations_are_parameter_errors(tmp_path):
    f = _long_csv(tmp_path)
    with pytest.raises(ParameterError, match="`metric_range` must be"):
        read(f, metric_range=(1, 0))
    with pytest.raises(ParameterError, match="`metric_range` must be"):
        read(f, metric_range=(0,))  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="`higher_is_better` must be True or False"):
        read(f, higher_is_better="no")  # type: ignore[arg-type]


def test_read_units_equals_to_units_with_several_metrics(tmp_path):
    f = _long_csv(tmp_path)
    opts = {"higher_is_better": {"latency": False}, "metric_range": {"acc": (0, 1)}}
    want = to_units(read(f, **opts).observations).collect()
    for rows in (2, 100):
        got, report = read_units(f, progress=False, partition_rows=rows, **opts)
        assert got.columns == want.columns
        assert (
            got.select("model", "metric", "higher_is_better").rows()
            == want.select("model", "metric", "higher_is_better").rows()
        )
        assert_allclose(got["score"].to_numpy(), want["score"].to_numpy(), rtol=1e-12)
        assert report.metrics == read(f, **opts).report.metrics


def test_metric_columns_survive_a_parquet_round_trip_of_ingest_out(tmp_path, capsys):
    f = _long_csv(tmp_path)
    for level in ("observations", "units"):
        out = tmp_path / f"{level}.parquet"
        code = main(
            [
                "ingest",
                str(f),
                "--level",
                level,
                "--out",
                str(out),
                "--lower-is-better",
                "latency",
                "--metric-range",
                "acc=0,1",
                "--metric-range",
                "latency=0,",
            ]
        )
        assert code == 0
        back, report = read(out)
        assert report.metrics == (
            MetricInfo("acc", 0, 1),
            MetricInfo("latency", 0, None, higher_is_better=False),
        )
        assert metric_info(back) == {m.name: m for m in report.metrics}
    capsys.readouterr()


def test_cli_rescale_and_score_scale_are_exclusive_and_rescale_divides(tmp_path, capsys):
    f = tmp_path / "pct.csv"
    f.write_text("model,item,accuracy\na,1,80\na,2,60\n")
    assert main(["ingest", str(f), "--rescale", "100", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert any("divided by 100" in n for n in doc["report"]["notes"])
    code = main(["ingest", str(f), "--rescale", "100", "--score-scale", "percent"])
    assert code == 2
    assert "either `--score-scale` or `--rescale`" in capsys.readouterr().err
    code = main(["ingest", str(f), "--metric-range", "0,1"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "expected a number in [0, 1] (the declared range of metric 'accuracy'), got '80'" in err
    assert "--rescale 100" in err
    assert main(["ingest", str(f), "--metric-range", "1;2"]) == 2
    assert "`--metric-range` must be LO,HI" in capsys.readouterr().err


def test_cli_metric_filter_for_a_table(tmp_path, capsys):
    f = _long_csv(tmp_path)
    assert main(["moments", str(f), "--metric", "latency", "--lower-is-better"]) == 0
    out = pl.read_csv(__import__("io").StringIO(capsys.readouterr().out))
    assert out["metric"].unique().to_list() == ["latency"]


# --- analyses: grouped by metric, and ANOVA refuses to pool two ----------------------------


def test_default_by_includes_metric_in_nstar(tmp_path):
    units = unit_table(n_models=1, n_items=50, n_variants=12, seed=3)
    two = pl.concat(
        [
            with_metric(units, MetricInfo("acc", 0, 1)),
            with_metric(units.with_columns(pl.col("score") * 100), MetricInfo("pct", 0, 100)),
        ]
    )
    out = required_sample_size(two, moments="mean", epsilon=0.01, method="analytic")
    assert out.filter(pl.col("moment") == "mean")["metric"].to_list() == ["acc", "pct"]


def test_anova_refuses_a_table_mixing_metrics():
    obs = observations(
        n_models=2, n_items=20, n_variants=4, factors={"shots": {0: 0.0, 5: 0.1}}, seed=0
    )
    two = pl.concat(
        [
            with_metric(obs, MetricInfo("acc", 0, 1)),
            with_metric(obs, MetricInfo("acc_norm", 0, 1)),
        ]
    )
    with pytest.raises(ParameterError, match="2 metrics .*'acc', 'acc_norm'.* must not be mixed"):
        factor_anova(two, factors=["shots"])
    one = factor_anova(two.filter(pl.col("metric") == "acc"), factors=["shots"])
    plain = factor_anova(obs, factors=["shots"])
    assert_allclose(one.table["eta_sq"].to_numpy(), plain.table["eta_sq"].to_numpy(), rtol=1e-12)
