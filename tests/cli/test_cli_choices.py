"""No silent choice, and no raw control character on the terminal (issue 45, items 3 and 6).

- ``compare A B`` where only A declares item clusters: A's clusters are used (each paired item
  in the cluster A gives it), with a note; before, they were dropped without a word and the
  test treated clustered items as independent (p = 0.0026 where the clustered p is 0.18);
- ``--model NAME`` on a table that names its models is noted, not ignored;
- every message on stdout and stderr is escaped, whatever code built it (labels, names from
  the data and from design files reach notes, warnings and "wrote" lines).
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import polars as pl
import pytest
from numpy.testing import assert_allclose

from evalstats.compare import compare_runs
from evalstats.errors import DesignWarning
from tests._cli import cli, ok

#: What must never reach a terminal raw: C0/C1 controls but the newline, the line and
#: paragraph separators, and the bidirectional controls.
RAW = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")  # fmt: skip


def _run(seed: int, p: float, *, clusters: bool, model: str = "m") -> pl.DataFrame:
    """16 items in 4 clusters that share a cluster effect, 2 prompt variants."""
    rng = np.random.default_rng(seed)
    effect = rng.normal(0, 1.0, 4)
    rows = []
    for i in range(16):
        for v in range(2):
            z = effect[i // 4] + rng.normal(0, 0.3)
            row = {
                "model": model,
                "dataset": "d",
                "item": str(i),
                "variant": f"p{v}",
                "score": float(z + p),
            }
            if clusters:
                row["cluster"] = f"c{i // 4}"
            rows.append(row)
    return pl.DataFrame(rows)


@pytest.mark.parametrize("declaring", ["a", "b"])
def test_clusters_declared_on_one_side_are_used_with_a_note(declaring):
    a = _run(1, 0.0, clusters=declaring == "a")
    b = _run(2, 0.5, clusters=declaring == "b")
    both = compare_runs(
        a if declaring == "a" else a.with_columns(pl.Series("cluster", [f"c{int(i) // 4}" for i in a["item"]])),
        b if declaring == "b" else b.with_columns(pl.Series("cluster", [f"c{int(i) // 4}" for i in b["item"]])),
    )  # fmt: skip
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        one = compare_runs(a, b)
    notes = [str(w.message) for w in caught if issubclass(w.category, DesignWarning)]
    assert any("declares item clusters" in n and "cluster-robust" in n for n in notes), notes
    assert one["method"].item() == "cluster" and one["n_clusters"].item() == 4
    for col in ("difference", "se", "df", "ci_low", "ci_high", "pvalue"):
        assert_allclose(one[col].item(), both[col].item(), rtol=1e-12)


def test_clusters_on_one_side_reference_cr1():
    """The clustered test itself: CR1 on the item differences, G - 1 df (by hand)."""
    from scipy import stats

    a, b = _run(1, 0.0, clusters=True), _run(2, 0.5, clusters=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DesignWarning)
        row = compare_runs(a, b).row(0, named=True)
    ya = a.group_by("item").agg(pl.col("score").mean()).sort("item")
    yb = b.group_by("item").agg(pl.col("score").mean()).sort("item")
    d = (yb["score"] - ya["score"]).to_numpy()
    g = np.array([int(i) // 4 for i in ya["item"]])
    sums = np.bincount(g, weights=d - d.mean())
    se = np.sqrt(4 / 3 * np.sum(sums**2)) / d.size
    assert_allclose(row["se"], se, rtol=1e-12)
    assert_allclose(row["pvalue"], 2 * stats.t.sf(abs(d.mean() / se), 3), rtol=1e-10)


def test_cli_compare_with_clusters_on_one_side_says_so(tmp_path):
    _run(1, 0.0, clusters=True).write_csv(tmp_path / "a.csv")
    _run(2, 0.5, clusters=False).write_csv(tmp_path / "b.csv")
    code, out, err = cli("compare", str(tmp_path / "a.csv"), str(tmp_path / "b.csv"))
    ok(code, err)
    assert "declares item clusters" in err
    row = pl.read_csv(out.encode()).row(0, named=True)
    assert row["method"] == "cluster" and row["n_clusters"] == 4


def test_model_flag_on_a_table_with_a_model_column_is_noted(tmp_path):
    data = tmp_path / "d.csv"
    _run(1, 0.0, clusters=False, model="named").write_csv(data)
    code, out, err = cli("intervals", str(data), "--model", "other")
    ok(code, err)
    assert "`model` 'other' not used for d.csv" in err
    assert pl.read_csv(out.encode())["model"].to_list() == ["named"]


def test_model_flag_on_a_table_without_a_model_column_is_used(tmp_path):
    data = tmp_path / "d.csv"
    _run(1, 0.0, clusters=False).drop("model").write_csv(data)
    code, out, err = cli("intervals", str(data), "--model", "given")
    ok(code, err)
    assert "not used" not in err
    assert pl.read_csv(out.encode())["model"].to_list() == ["given"]


# --- unsafe output -------------------------------------------------------------------------------

HOSTILE = "m\x1b]0;owned\x07\u202eevil\u2028x\u200f\r\x9b2J"


def test_no_raw_control_character_reaches_the_terminal(tmp_path):
    """Labels, model names, names from a design file: in results, notes, warnings and errors."""
    a = _run(1, 0.0, clusters=True, model=HOSTILE)
    b = _run(2, 0.5, clusters=False, model=HOSTILE)
    a.write_csv(tmp_path / "a.csv")
    b.write_csv(tmp_path / "b.csv")
    label = f"base{HOSTILE},new\u2029\u2066"
    design = tmp_path / "design.toml"
    design.write_text('[roles]\n"pas\u202esage\x1b[2J" = "cluster"\n', encoding="utf-8")
    runs = [
        ("compare", str(tmp_path / "a.csv"), str(tmp_path / "b.csv"), "--label", label),
        ("intervals", str(tmp_path / "a.csv"), "--model", HOSTILE),
        ("intervals", str(tmp_path / "a.csv"), "--design", str(design)),
        ("moments", str(tmp_path / "a.csv"), "--plot", str(tmp_path / f"p{HOSTILE}.png")),
        ("design", str(tmp_path / "a.csv")),
    ]
    for argv in runs:
        code, out, err = cli(*argv)
        assert code in (0, 2), (argv, err[-2000:])
        assert "Traceback" not in err, err[-2000:]
        for stream, text in (("stdout", out), ("stderr", err)):
            bad = RAW.findall(text)
            assert not bad, (argv[0], stream, bad, text[-1500:])
    # the escapes are visible, not dropped
    code, _, err = cli(*runs[0])
    assert "\\u202e" in err or "\\x1b" in err


# --- a design file applied to a dump of another structure ----------------------------------------


def _grid(path, *, models=2, items=10, prompts=3):
    rng = np.random.default_rng(0)
    pl.DataFrame(
        [
            {"model": f"m{m}", "item": str(i), "prompt": f"p{p}", "passage": f"c{i // 2}",
             "score": float(rng.random() < 0.6)}
            for m in range(models)
            for i in range(items)
            for p in range(prompts)
        ]
    ).write_csv(path)  # fmt: skip
    return path


def test_design_file_records_the_structure_it_was_written_from(tmp_path):
    from evalstats.design import infer_design, read_design_file
    from evalstats.design._files import read_design_structure

    data = _grid(tmp_path / "a.csv")
    out = tmp_path / "d.toml"
    ok(*cli("design", str(data), "--roles", "passage=cluster", "--out", str(out))[::2])
    written = read_design_structure(out)
    assert written["models"] == 2 and written["items_max"] == 10 and written["variants_max"] == 3
    assert written["clusters_max"] == 5
    assert read_design_file(out)["passage"] == "cluster"
    assert infer_design(pl.read_csv(data), roles="passage=cluster").structure() == written


def test_design_file_applied_to_another_structure_says_so(tmp_path):
    design = tmp_path / "d.toml"
    ok(*cli("design", str(_grid(tmp_path / "a.csv")), "--out", str(design))[::2])
    same = _grid(tmp_path / "same.csv")
    code, _, err = cli("intervals", str(same), "--design", str(design))
    ok(code, err)
    assert "another structure" not in err
    other = _grid(tmp_path / "other.csv", models=3, items=4, prompts=1)
    code, _, err = cli("intervals", str(other), "--design", str(design))
    ok(code, err)
    line = next(ln for ln in err.splitlines() if "another structure" in ln)
    for part in ("models 3 (the file: 2)", "items max 4 (the file: 10)", "variants max 1"):
        assert part in line, line


def test_design_file_of_another_structure_warns_in_the_library(tmp_path):
    from evalstats.compare import intervals

    design = tmp_path / "d.toml"
    ok(*cli("design", str(_grid(tmp_path / "a.csv")), "--out", str(design))[::2])
    other = pl.read_csv(_grid(tmp_path / "other.csv", models=1, items=6))
    with pytest.warns(DesignWarning, match=r"another structure: models 1 \(the file: 2\)"):
        intervals(other, design=design)
