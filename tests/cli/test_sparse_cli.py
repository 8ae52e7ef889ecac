"""``moments``, ``nstar``, ``report`` and ``plan --sparse`` on a sparse DOVE-layout dump.

The dump is synthetic (DOVE itself cannot be downloaded here) and follows the DOVE_Lite
schema of fixtures/dumps/dove/make_fixtures.py: ``{model}/{language}/{N}_shot/{benchmark}
.parquet`` with ``sample_index``, ``template``, ``separator``, ``enumerator``,
``choices_order`` and ``score``. Each item is run under a few prompt variants (a walk of the
prompt space), so every group covers about 15 % of its item x variant grid.
"""

from __future__ import annotations

import hashlib
import io
import itertools
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from evalstats.sparse import full_grid, subsample_cells
from tests._cli import cli, ok, one_line_error

TEMPLATES = ("MultipleChoiceTemplatesInstructionsWithTopic", "MultipleChoiceTemplatesStructured")
SEPARATORS = ("\n", "; ", " | ", ", ")
ENUMERATORS = ("capitals", "lowercase", "numbers", "roman")
ORDERS = ("none", "shortest_to_longest", "longest_to_shortest", "alphabetical")


def dove_sparse_dump(
    root: Path, *, n_items=120, n_variants=40, share=0.15, seed=0, shares=None
) -> Path:
    """Write two models' sparse DOVE_Lite files under ``root``; return ``root``.

    ``shares`` gives each model its own share of the grid (1.0: the full grid).
    """
    rng = np.random.default_rng(seed)
    combos = list(itertools.product(TEMPLATES, SEPARATORS, ENUMERATORS, ORDERS))
    pick = [combos[j] for j in rng.permutation(len(combos))[:n_variants]]
    for m, model in enumerate(("Llama-3.2-1B-Instruct", "OLMoE-1B-7B-0924-Instruct")):
        grid = full_grid(
            n_items=n_items, n_variants=n_variants, factors={}, mean_logit=0.3 * m, seed=seed + m
        )
        cut = share if shares is None else shares[m]
        obs = (
            grid
            if cut >= 1
            else subsample_cells(grid, share=cut, scheme="walk", seed=seed + 10 + m)
        )
        j = obs["variant"].str.slice(1).cast(pl.Int64).to_numpy()
        df = pl.DataFrame(
            {
                "evaluation_id": [
                    hashlib.sha256(f"{model}|{r}".encode()).hexdigest() for r in range(obs.height)
                ],
                "model": model,
                "quantization": "None",
                "dataset": "mmlu.global_facts",
                "sample_index": obs["item"].str.slice(1).cast(pl.Int64),
                "shots": 0,
                "template": [pick[v][0] for v in j],
                "separator": [pick[v][1] for v in j],
                "enumerator": [pick[v][2] for v in j],
                "choices_order": [pick[v][3] for v in j],
                "score": obs["score"],
            }
        )
        path = root / model / "en" / "0_shot" / "mmlu.global_facts.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        df.write_parquet(path)
    return root


@pytest.fixture(scope="module")
def dump(tmp_path_factory) -> Path:
    return dove_sparse_dump(tmp_path_factory.mktemp("dove_sparse"))


def _csv(out: str) -> pl.DataFrame:
    return pl.read_csv(io.StringIO(out))


def test_design_calls_the_dump_sparse(dump):
    code, out, err = cli("design", str(dump), "--json")
    ok(code, err)
    assert '"structure": "sparse"' in out


def test_moments_sparse_gives_the_model_beside_naive(dump):
    from evalstats.io import read
    from evalstats.sparse import sparse_prompt_distribution

    code, out, err = cli("moments", str(dump), "--sparse", "--n-resamples", "100")
    ok(code, err)
    t = _csv(out)
    factors = ["template", "separator", "enumerator", "choices_order"]
    ref = sparse_prompt_distribution(
        read(dump).observations, n_resamples=100, seed=0, variant_factors=factors
    )
    assert np.allclose(t["estimate"].to_numpy(), ref["estimate"].to_numpy(), rtol=1e-9)
    assert t.height == 2 * 9
    assert {"estimate", "ci_low", "ci_high", "naive"} <= set(t.columns)
    sd = t.filter(pl.col("quantity") == "sd")
    # the naive spread adds each variant's sampling noise over ~18 items
    assert (sd["estimate"] < sd["naive"]).all()


def test_moments_of_a_sparse_dump_without_flags_are_the_models(dump):
    """Issue 44: a group the design calls sparse gets the estimator by default, the naive
    values beside it and one line saying why: the table of ``--sparse``, whose values are the
    library function's (test_moments_sparse_gives_the_model_beside_naive)."""
    code, out, err = cli("moments", str(dump), "--n-resamples", "100")
    ok(code, err)
    assert "of the item x prompt grid" in err and "--no-sparse" in err
    code, forced, err2 = cli("moments", str(dump), "--sparse", "--n-resamples", "100")
    ok(code, err2)
    t, ref = _csv(out), _csv(forced)
    assert t.height == 2 * 9
    assert t.equals(ref)
    sd = t.filter(pl.col("quantity") == "sd")
    assert (sd["estimate"] < sd["naive"]).all()


def test_moments_n_worlds_is_the_library_calibration(dump):
    """``--n-worlds 0`` gives the library's uncalibrated intervals (the same estimates, intervals
    no wider than the default's); a bad value is a one-line error; without the model it says
    the option needs it."""
    from evalstats.io import read
    from evalstats.sparse import sparse_prompt_distribution

    code, out, err = cli("moments", str(dump), "--n-resamples", "100", "--n-worlds", "0")
    ok(code, err)
    code, cal, err = cli("moments", str(dump), "--n-resamples", "100")
    ok(code, err)
    t, c = _csv(out), _csv(cal)
    factors = ["template", "separator", "enumerator", "choices_order"]
    ref = sparse_prompt_distribution(
        read(dump).observations, n_resamples=100, seed=0, variant_factors=factors, n_worlds=0
    )
    assert np.allclose(t["ci_low"].to_numpy(), ref["ci_low"].to_numpy(), rtol=1e-9)
    assert np.allclose(t["ci_high"].to_numpy(), ref["ci_high"].to_numpy(), rtol=1e-9)
    assert np.allclose(t["estimate"].to_numpy(), c["estimate"].to_numpy(), rtol=1e-9)
    assert (c["ci_high"] - c["ci_low"] >= t["ci_high"] - t["ci_low"] - 1e-12).all()
    code, _, err = cli("moments", str(dump), "--n-worlds", "2")
    one_line_error(code, err, "--n-worlds", "got 2")
    code, _, err = cli("moments", str(dump), "--no-sparse", "--n-worlds", "0")
    one_line_error(code, err, "--n-worlds", "--sparse")


def test_moments_no_sparse_says_the_grid_is_partly_observed(dump):
    code, out, err = cli("moments", str(dump), "--no-sparse")
    ok(code, err)
    assert "(--no-sparse); without it the sparse-grid model" in err
    assert "estimate" not in _csv(out).columns


def test_moments_sparse_options_need_the_model(dump):
    code, _, err = cli("moments", str(dump), "--no-sparse", "--seed", "3")
    one_line_error(code, err, "--seed", "--sparse")
    with pytest.raises(SystemExit) as exc:  # argparse: usage line, exit 2
        cli("moments", str(dump), "--sparse", "--no-sparse")
    assert exc.value.code == 2


def test_nstar_sparse_runs_on_whole_grid_scores(dump):
    code, out, err = cli("nstar", str(dump), "--sparse", "--n-resamples", "200")
    ok(code, err)
    t = _csv(out)
    assert set(t["model"]) == {"Llama-3.2-1B-Instruct", "OLMoE-1B-7B-0924-Instruct"}
    assert (t["n_star"].drop_nulls() >= 1).all()


def test_plan_sparse_writes_the_cells_to_run(dump, tmp_path):
    target = tmp_path / "next.csv"
    code, _, err = cli(
        "plan",
        str(dump),
        "--sparse",
        "--cells",
        "25",
        "--quantity",
        "q05",
        "--n-resamples",
        "100",
        "--out",
        str(target),
    )
    ok(code, err)
    t = pl.read_csv(target)
    assert t.height == 2 * 25
    assert {"variant", "item", "template", "separator", "enumerator", "choices_order"} <= set(
        t.columns
    )
    assert t.group_by("model").agg(pl.col("rank").max())["rank"].to_list() == [25, 25]
    # a proposed cell is one the dump did not run
    seen = pl.read_parquet(dump / "*" / "en" / "0_shot" / "*.parquet")
    ran = set(zip(seen["template"], seen["separator"], seen["sample_index"].cast(pl.String)))
    proposed = set(zip(t["template"], t["separator"], t["item"].cast(pl.String)))
    assert proposed - ran


def test_plan_of_a_sparse_dump_without_flags_proposes_the_models_cells(dump, tmp_path):
    """Issue 44: ``plan`` on a dump the design calls sparse, with no target, gives the
    sparse-grid model's next cells (the table of ``plan --sparse``) and one line saying why;
    a dump with no sparse group still needs a target."""
    code, out, err = cli("plan", str(dump), "--cells", "10", "--n-resamples", "100")
    ok(code, err)
    assert "of the item x prompt grid" in err and "--target-ci" in err
    code, forced, err2 = cli("plan", str(dump), "--sparse", "--cells", "10", "--n-resamples", "100")
    ok(code, err2)
    assert _csv(out).equals(_csv(forced))
    assert _csv(out).height == 2 * 10
    full = dove_sparse_dump(tmp_path / "full", n_items=30, n_variants=8, shares=(1.0, 1.0))
    code, _, err = cli("plan", str(full))
    one_line_error(code, err, "--target-ci", "--sparse")


def test_report_says_which_groups_are_sparse_and_estimates_the_whole_grid(dump, tmp_path):
    out_dir = _report(dump, tmp_path / "report")
    md = (out_dir / "report.md").read_text()
    assert "observe only 15% of the grid" in md
    assert "sparse-grid model" in md
    # every group is sparse: the headline is the model's whole-grid estimate, not the range of
    # the observed cells (the noise of each variant's few items)
    head = next(ln for ln in md.splitlines() if ln.startswith("- **Scores over prompt variants"))
    assert "the sparse-grid model" in head and "estimates an sd over prompts of" in head
    assert "moves by up to" not in head
    table = pl.read_csv(out_dir / "tables" / "moments_sparse_distribution.csv")
    assert set(table["quantity"]) >= {"mean", "sd", "q05", "q95"}
    assert table.height == 2 * 9


def _report(dump, out_dir, *extra):
    code, _, err = cli(
        "report",
        str(dump),
        "--out",
        str(out_dir),
        "--figures",
        "none",
        "--quiet",
        "--skip",
        "attribution,anova,compare,ranks,converge,noise,intervals,ppi",
        *extra,
    )
    ok(code, err)
    return out_dir


def test_report_moments_and_nstar_of_sparse_groups_are_the_models(dump, tmp_path):
    """The moments table and n* of a sparse group come from the model's whole-grid scores:
    its sd is the model's sd estimate, and its n* is what ``nstar --sparse`` gives (the same
    draws: same seed, same 1,000 draws); the same with the analyses in two processes."""
    out = _report(dump, tmp_path / "r1")
    moments = pl.read_csv(out / "tables" / "moments.csv")
    dist = pl.read_csv(out / "tables" / "moments_sparse_distribution.csv")
    assert set(moments["scores"]) == {"sparse-grid model"}
    for name, q in (("std", "sd"), ("mean", "mean"), ("q05", "q05"), ("max", "max")):
        est = dist.filter(pl.col("quantity") == q).sort("model")["estimate"].to_numpy()
        np.testing.assert_allclose(moments.sort("model")[name].to_numpy(), est, rtol=1e-9)
    # the observed range would be far wider: the noise of each variant's few items
    naive_sd = dist.filter(pl.col("quantity") == "sd")["naive"].to_numpy()
    assert (moments.sort("model")["std"].to_numpy() < naive_sd).all()
    # the chi-square interval would take a posterior draw for data: left empty
    assert moments["prompt_variance_low"].is_null().all()

    nstar = pl.read_csv(out / "tables" / "nstar.csv")
    assert set(nstar["scores"]) == {"sparse-grid model"}
    code, text, err = cli("nstar", str(dump), "--sparse", "--method", "bootstrap", "--seed", "0")
    ok(code, err)
    keys = ["model", "dataset", "moment"]
    mine = nstar.select(*keys, "n_star", "reached").sort(keys)
    theirs = _csv(text).select(*keys, "n_star", "reached").sort(keys)
    assert mine.equals(theirs), (mine, theirs)

    two = _report(dump, tmp_path / "r2", "--workers", "2")
    for name in ("moments.csv", "nstar.csv", "nstar_curve.csv"):
        a = pl.read_csv(out / "tables" / name)
        assert a.equals(pl.read_csv(two / "tables" / name)), name


def test_report_with_one_sparse_and_one_full_group(tmp_path):
    """A full group keeps its observed moments; the sparse one is the model's, and the
    reading says which is which."""
    dump = dove_sparse_dump(tmp_path / "mixed", shares=(1.0, 0.15))
    out = _report(dump, tmp_path / "r")
    moments = pl.read_csv(out / "tables" / "moments.csv").sort("model")
    assert moments["scores"].to_list() == ["observed cells", "sparse-grid model"]
    dist = pl.read_csv(out / "tables" / "moments_sparse_distribution.csv")
    assert set(dist["model"]) == {"OLMoE-1B-7B-0924-Instruct"}
    nstar = pl.read_csv(out / "tables" / "nstar.csv")
    by_model = dict(nstar.select("model", "scores").unique().iter_rows())
    assert by_model == {
        "Llama-3.2-1B-Instruct": "observed cells",
        "OLMoE-1B-7B-0924-Instruct": "sparse-grid model",
    }
    md = (out / "report.md").read_text()
    head = next(ln for ln in md.splitlines() if ln.startswith("- **Scores over prompt variants"))
    # the range is of the full group only; the sparse one is named with its share
    assert "moves by up to" in head and "Llama-3.2-1B-Instruct" in head
    assert "1 group observes only 15% of the item x prompt grid" in md


def test_report_moments_of_sparse_groups_at_another_confidence_level():
    """The model's estimates reach the moments table whatever the level asked for (they were
    joined on the level too, and came out empty at 0.9), and its intervals are at that level."""
    import warnings

    from evalstats.report import audit_report
    from evalstats.sparse import sparse_grid

    obs, _ = sparse_grid(n_items=80, n_variants=30, share=0.2, seed=0)
    skip = ["nstar", "converge", "anova", "attribution", "compare", "ranks", "noise"]
    skip += ["intervals", "stability", "normality", "correlation", "friedman", "ppi"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = audit_report(obs, options={"moments": {"confidence_level": 0.9}}, skip=skip)
    moments = next(a for a in report.analyses if a.key == "moments")
    table, dist = moments.tables["moments"], moments.tables["sparse_distribution"]
    assert table["scores"].to_list() == ["sparse-grid model"]
    sd = dist.filter(pl.col("quantity") == "sd")
    assert table["std"].item() == pytest.approx(sd["estimate"].item(), rel=1e-12)
    assert sd["confidence_level"].item() == 0.9


@pytest.mark.parametrize("seed", [4, 6, 9])
def test_report_stopping_rule_of_a_sparse_group_replays_the_whole_grid(seed):
    """On a 5 % sample of PromptEval's real MMLU grid the stopping rule replayed the observed
    cells' variant means (each over ~29 items): it stopped "at most 3.2 points" from the mean
    and at a median of 50 variants, where the full grid's replay stops within 0.6 points at
    20. The replay of a sparse group now runs over the model's whole-grid scores, as n* does.
    Here on planted 300 x 60 grids at 5 %: the observed cells' replay never stops (each
    variant's mean is over 15 items), the full grid's stops in 60-80 % of orders, and the
    model's share is the nearer of the two."""
    import warnings

    from evalstats.compare import convergence
    from evalstats.report import ANALYSES, audit_report

    grid = full_grid(n_items=300, n_variants=60, factors={}, seed=seed)
    obs = subsample_cells(grid, share=0.05, scheme="uniform", seed=seed + 1)
    keep = ("moments", "converge")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = audit_report(obs, skip=[a.key for a in ANALYSES if a.key not in keep])
    res = rep["converge"]
    row = res.tables["converge"].row(0, named=True)
    assert row["scores"] == "sparse-grid model"
    assert "the replay runs over the sparse-grid model's whole-grid variant scores" in res.reading
    truth = convergence(grid)["share_reached"].item()
    naive = convergence(obs)["share_reached"].item()
    assert abs(row["share_reached"] - truth) < abs(naive - truth), (row, naive, truth)
