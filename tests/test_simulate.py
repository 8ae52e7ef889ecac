import polars as pl
from polars.testing import assert_frame_equal

from evalstats.aggregate import to_units
from evalstats.simulate import DEMO_TRUTH, demo_observations, observations


def test_same_seed_gives_identical_tables():
    a = observations(n_models=2, n_items=30, n_variants=4, n_runs=3, instability=0.1, seed=7)
    b = observations(n_models=2, n_items=30, n_variants=4, n_runs=3, instability=0.1, seed=7)
    assert_frame_equal(a, b)
    c = observations(n_models=2, n_items=30, n_variants=4, n_runs=3, instability=0.1, seed=8)
    assert not a.equals(c)


def test_planted_factor_effect_is_recovered_in_the_means():
    obs = observations(
        n_models=1,
        n_items=400,
        factors={"shots": {0: 0.0, 5: 0.10}, "t": {"a": 0.0, "b": 0.0}},
        prompt_sd=0.0,
        seed=1,
    )
    means = obs.group_by("shots").agg(pl.col("score").mean()).sort("shots")["score"].to_list()
    # 400 items x 2 variants per level: SE of a difference ~ 0.025
    assert abs((means[1] - means[0]) - 0.10) < 0.06
    null = obs.group_by("t").agg(pl.col("score").mean()).sort("t")["score"].to_list()
    assert abs(null[1] - null[0]) < 0.06


def test_zero_instability_gives_identical_runs_and_full_instability_does_not():
    stable = observations(n_models=1, n_items=50, n_variants=1, n_runs=4, seed=0)
    per_item = stable.group_by("item").agg(pl.col("answer").n_unique())
    assert per_item["answer"].max() == 1
    shaky = observations(n_models=1, n_items=200, n_variants=1, n_runs=4, instability=1.0, seed=0)
    assert shaky.group_by("item").agg(pl.col("answer").n_unique())["answer"].max() > 1


def test_error_rates_are_planted_per_provider():
    obs = observations(
        n_models=1,
        n_items=2000,
        n_variants=1,
        providers=["a", "b"],
        error_rates={"a": {"api_error": 0.0}, "b": {"api_error": 0.1, "empty": 0.05}},
        seed=3,
    )
    rates = (
        obs.group_by("provider")
        .agg((pl.col("error") == "api_error").fill_null(False).mean().alias("r"))
        .sort("provider")
    )
    assert rates["r"][0] == 0.0
    assert abs(rates["r"][1] - 0.1) < 0.02  # binomial SE ~ 0.007
    errored = obs.filter(pl.col("error").is_not_null())
    assert (errored["score"] == 0).all()


def test_bundled_demo_file_is_the_simulator_output(fixtures):
    shipped = pl.read_parquet(fixtures / "demo" / "demo_observations.parquet")
    assert_frame_equal(shipped, demo_observations())
    assert set(DEMO_TRUTH["factors"]) <= set(shipped.columns)
    units = to_units(shipped).collect()
    assert units.height == 3 * 2 * 48 * 3
