"""Hostile input files (issue 28): each is read correctly, or is exit 2 and one line naming it.

Compressed tables bounded and typed like plain ones, file names with glob characters, lines
and headers beyond the limits (the limits lowered through the environment, so that the files
stay small), too many models to compare pair by pair, terminal escape sequences in names,
spreadsheet formulas in names, silent identity problems (blank, padded and differently
normalised names, repeated or case-twin columns, repeated JSON keys, links out of the folder)
and a trailing blank line.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import sys
from pathlib import Path

import polars as pl
import pytest

from evalstats.errors import LimitError
from evalstats.io import read
from tests._cli import cli as _cli
from tests._cli import ok as _ok
from tests._cli import one_line_error as _one_line


def _rows(models=("a", "b"), items=6, variants=2) -> list[list[str]]:
    rows = [["model", "item", "variant", "score"]]
    for m in models:
        for i in range(items):
            for v in range(variants):
                rows.append([m, str(i), f"v{v}", str((i + v) % 2)])
    return rows


def _write_csv(path: Path, rows: list[list[str]], *, sep: str = ",") -> Path:
    buf = io.StringIO()
    csv.writer(buf, delimiter=sep, lineterminator="\n").writerows(rows)
    data = buf.getvalue().encode()
    if str(path).endswith(".gz"):
        path.write_bytes(gzip.compress(data))
    else:
        path.write_bytes(data)
    return path


# --- compressed tables: bounded, and typed as the plain file ------------------------------------


@pytest.mark.parametrize("suffix", [".csv.gz", ".tsv.gz"])
def test_a_compressed_table_bomb_is_one_line(tmp_path, monkeypatch, suffix):
    monkeypatch.setenv("EVALSTATS_MAX_MEMBER_BYTES", str(2**20))
    sep = "\t" if suffix.startswith(".tsv") else ","
    body = f"model{sep}item{sep}score\n" + f"a{sep}1{sep}0\n" * 400_000  # 2.4 MB
    f = tmp_path / f"bomb{suffix}"
    f.write_bytes(gzip.compress(body.encode(), compresslevel=9))
    assert f.stat().st_size < 100_000
    _one_line(*_cli("ingest", str(f))[::2], f.name, "1,048,576")


def test_a_compressed_bomb_of_one_line_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALSTATS_MAX_MEMBER_BYTES", str(2**20))
    f = tmp_path / "zeros.csv.gz"
    f.write_bytes(gzip.compress(b"model,score\n" + b"0" * 3 * 2**20))
    _one_line(*_cli("ingest", str(f))[::2], f.name)


@pytest.mark.parametrize("suffix", [".csv", ".csv.gz", ".tsv.gz"])
def test_item_ids_007_and_7_stay_two_items(tmp_path, suffix):
    sep = "\t" if suffix.startswith(".tsv") else ","
    rows = [["model", "item", "score"], ["a", "007", "1"], ["a", "7", "0"], ["a", "07", "1"]]
    ing = read(_write_csv(tmp_path / f"ids{suffix}", rows, sep=sep))
    obs = ing.observations.collect()
    assert sorted(obs["item"].to_list()) == ["007", "07", "7"]
    assert ing.report.rows_kept == 3 and not ing.report.set_aside


@pytest.mark.parametrize("suffix", [".csv", ".csv.gz"])
def test_a_text_item_id_after_ten_thousand_numeric_ones_is_read(tmp_path, suffix):
    rows = [["model", "item", "score"]] + [["a", str(i), "1"] for i in range(10_050)]
    rows.append(["a", "q-late", "0"])
    ing = read(_write_csv(tmp_path / f"late{suffix}", rows))
    assert ing.report.rows_kept == 10_051
    assert "q-late" in ing.observations.collect()["item"].to_list()


def test_a_compressed_table_reads_like_the_plain_one(tmp_path):
    rows = _rows()
    plain = read(_write_csv(tmp_path / "t.csv", rows)).observations.collect()
    packed = read(_write_csv(tmp_path / "t.csv.gz", rows)).observations.collect()
    assert plain.schema == packed.schema
    assert plain.drop("dataset").equals(packed.drop("dataset"))


# --- file names with glob characters -----------------------------------------------------------


@pytest.mark.parametrize("name", ["run[1].csv", "a*b?.csv", "[x].csv.gz", "run[1].jsonl"])
def test_a_file_named_with_glob_characters_is_read(tmp_path, name):
    f = tmp_path / name
    if name.endswith(".jsonl"):
        f.write_text(
            '{"model": "a", "item": "1", "score": 1}\n{"model": "b", "item": "1", "score": 0}\n'
        )
    else:
        _write_csv(f, _rows())
    code, _out, err = _cli("ingest", str(f))
    _ok(code, err)


def test_a_folder_holding_a_bracketed_file_is_read_whole(tmp_path):
    folder = tmp_path / "runs"
    folder.mkdir()
    _write_csv(folder / "run[1].csv", _rows(models=("a",)))
    _write_csv(folder / "run[2].csv", _rows(models=("b",)))
    _write_csv(folder / "plain.csv", _rows(models=("c",)))
    ing = read(folder)
    assert len(ing.report.sources) == 3
    assert sorted(ing.observations.collect()["model"].unique().to_list()) == ["a", "b", "c"]


# --- size limits -------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".tsv"])
def test_a_line_longer_than_the_limit_is_one_line_naming_its_row(tmp_path, monkeypatch, suffix):
    monkeypatch.setenv("EVALSTATS_MAX_LINE_BYTES", "4096")
    f = tmp_path / f"long{suffix}"
    if suffix == ".jsonl":
        lines = [
            '{"model": "a", "item": "1", "score": 1}',
            '{"model": "a", "item": "2", "score": 1}',
            '{"model": "' + "x" * 20_000 + '", "item": "3", "score": 1}',
        ]
    else:
        s = "\t" if suffix == ".tsv" else ","
        lines = [f"model{s}item{s}score", f"a{s}1{s}1", f"{'x' * 20_000}{s}2{s}1"]
    f.write_text("\n".join(lines) + "\n" + "a,9,1\n" * 200)
    _one_line(*_cli("ingest", str(f))[::2], f.name, "row 3", "4,096")


def test_a_header_line_longer_than_the_limit_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALSTATS_MAX_LINE_BYTES", "4096")
    f = tmp_path / "wide_header.csv"
    f.write_text(
        "model,item,score," + "c" * 10_000 + "\n" + "".join(f"a,{i},1,2\n" for i in range(100))
    )
    _one_line(*_cli("ingest", str(f))[::2], f"{f.name}, row 1:", "longer than 4,096 bytes")


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".csv.gz"])
def test_more_columns_than_the_limit_is_one_line(tmp_path, monkeypatch, suffix):
    monkeypatch.setenv("EVALSTATS_MAX_COLUMNS", "50")
    f = tmp_path / f"wide{suffix}"
    names = ["model", "score", *(f"c{i}" for i in range(200))]
    if suffix == ".jsonl":
        f.write_text(
            "".join(
                "{"
                + ", ".join(
                    f'"{n}": {"1" if n != "model" else chr(34) + "a" + chr(34)}' for n in names
                )
                + "}\n"
                for _ in range(3)
            )
        )
    else:
        _write_csv(f, [names, ["a", *["1"] * (len(names) - 1)]])
    _one_line(*_cli("ingest", str(f))[::2], f.name, "202 columns", "EVALSTATS_MAX_COLUMNS")


def test_a_bad_limit_in_the_environment_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALSTATS_MAX_COLUMNS", "lots")
    f = _write_csv(tmp_path / "t.csv", _rows())
    _one_line(*_cli("ingest", str(f))[::2], "EVALSTATS_MAX_COLUMNS")


def _many_models(tmp_path: Path, n: int) -> Path:
    models = pl.Series("model", [f"m{i:06d}" for i in range(n)])
    frame = (
        pl.DataFrame({"model": models})
        .join(pl.DataFrame({"item": ["1", "2"]}), how="cross")
        .with_columns(score=(pl.int_range(pl.len()) % 2).cast(pl.Float64))
    )
    f = tmp_path / "models.parquet"
    frame.write_parquet(f)
    return f


def test_too_many_models_in_compare_is_one_line(tmp_path):
    # 2,000 models (2 million pairs) keep the test fast: the design of 100,000 models alone
    # takes seconds; the check is the same
    f = _many_models(tmp_path, 2_000)
    _one_line(*_cli("compare", str(f))[::2], "2,000 values of 'model'", "pairs", "subset")


def test_a_hundred_thousand_models_raise_limit_error_before_allocating(tmp_path):
    from evalstats.compare import compare_models

    obs = read(_many_models(tmp_path, 100_000)).observations
    with pytest.raises(LimitError, match="100,000 values of 'model'.*4,999,950,000 pairs"):
        compare_models(obs)


def test_too_many_models_in_the_reversal_audit_raise_limit_error(tmp_path):
    from evalstats.compare import reversal_audit

    obs = read(_many_models(tmp_path, 1_500)).observations
    with pytest.raises(LimitError, match="the reversal audit"):
        reversal_audit(obs, default={"variant": "v0"})


# --- terminal injection ------------------------------------------------------------------------

HOSTILE_NAMES = [
    "title\x1b]0;pwned\x07",
    "clear\x1b[2J\x1b[H",
    "c1\x9b31m",
    "rtl\u202egnp.exe",
    "bell\x07\x08",
]
RAW_CONTROLS = ["\x1b", "\x07", "\x9b", "\u202e", "\x08"]


@pytest.mark.parametrize("command", ["intervals", "moments", "compare"])
def test_names_with_escape_sequences_reach_stdout_as_visible_text(tmp_path, command):
    f = _write_csv(tmp_path / "esc.csv", _rows(models=HOSTILE_NAMES))
    code, out, err = _cli(command, str(f))
    _ok(code, err)
    for ch in RAW_CONTROLS:
        assert ch not in out and ch not in err, (ch, out[:500])
    assert "\\x1b" in out


# --- spreadsheet formulas ----------------------------------------------------------------------

FORMULAS = ['=HYPERLINK("http://x","y")', "+1+1", "-2+3", "@SUM(A1)"]
#: tab and carriage return start a formula too (OWASP); names are stripped of them, so they
#: are tried in a factor column
CONTROLS = ["\tx", "\rcr", "=1", "-x"]


def test_formula_cells_are_neutralised_in_csv_output_and_numbers_are_not(tmp_path):
    rows = [["model", "item", "variant", "template", "score"]]
    for k, name in enumerate(FORMULAS):
        item = FORMULAS[(k + 1) % len(FORMULAS)]
        rows += [[name, item, "=v", CONTROLS[k], "-0.5"], [name, "2", "=v", CONTROLS[k], "1"]]
    f = _write_csv(tmp_path / "formula.csv", rows)
    out = tmp_path / "t.csv"
    # each model under its own template: declared a prompt factor so that it is written
    code, _o, err = _cli(
        "ingest", str(f), "--level", "observations", "--out", str(out), "--roles",
        "template=prompt",
    )  # fmt: skip
    _ok(code, err)
    written = list(csv.DictReader(io.StringIO(out.read_bytes().decode(), newline="")))
    for row in written:
        for col in ("model", "item", "variant", "template"):
            assert not row[col] or row[col][0] not in "=+-@\t\r", row
    assert {r["model"] for r in written} == {"'" + n for n in FORMULAS}
    assert {r["template"] for r in written} == {"'" + n for n in CONTROLS}
    assert {r["score"] for r in written} == {"-0.5", "1.0"}


def test_formula_cells_are_neutralised_in_the_report_tables(tmp_path):
    f = _write_csv(tmp_path / "formula.csv", _rows(models=("=1+1", "@x", "+cmd", "b")))
    out = tmp_path / "rep"
    skip = "nstar,converge,stability,normality,correlation,anova,attribution,ppi,ranks,friedman,noise,audit,providers"
    code, _o, err = _cli("report", str(f), "--out", str(out), "--skip", skip)
    _ok(code, err)
    tables = list(out.rglob("*.csv"))
    assert tables
    for t in tables:
        for row in csv.reader(io.StringIO(t.read_bytes().decode(), newline="")):
            for cell in row:
                if cell[:1] in ("=", "+", "@"):
                    raise AssertionError(f"{t.name}: {cell!r}")
                if cell.startswith("-"):
                    float(cell)  # only numbers may start with a minus


# --- a trailing blank line ---------------------------------------------------------------------


@pytest.mark.parametrize("ending", ["\n\n", "\n\n\n\n", "\r\n\r\n"])
@pytest.mark.parametrize("suffix", [".csv", ".csv.gz"])
def test_trailing_blank_lines_are_not_rows(tmp_path, ending, suffix):
    body = "model,item,score\na,1,1\nb,1,0" + ending
    f = tmp_path / f"trail{suffix}"
    f.write_bytes(gzip.compress(body.encode()) if suffix.endswith(".gz") else body.encode())
    rep = read(f).report
    assert (rep.rows_read, rep.rows_kept, dict(rep.set_aside)) == (2, 2, {})


def test_a_blank_line_inside_a_csv_is_still_counted(tmp_path):
    f = tmp_path / "mid.csv"
    f.write_text("model,item,score\na,1,1\n\nb,1,0\n")
    rep = read(f).report
    assert (rep.rows_read, rep.rows_kept, dict(rep.set_aside)) == (3, 2, {"blank_line": 1})


# --- silent identity problems ------------------------------------------------------------------


@pytest.mark.parametrize("blank", ['""', "'   '", "\t"])
def test_a_blank_model_name_is_one_line_naming_its_row(tmp_path, blank):
    value = {'""': '""', "'   '": "   ", "\t": '"\t"'}[blank]
    f = tmp_path / "blank.csv"
    f.write_text(f"model,item,score\na,1,1\n{value},2,1\n")
    _one_line(*_cli("ingest", str(f))[::2], f.name, "row 2", "model", "blank")


def test_blank_names_are_set_aside_and_counted_with_skip(tmp_path):
    f = tmp_path / "blank.csv"
    f.write_text('model,dataset,item,score\na,d,1,1\n"",d,2,1\n a ,"  ",3,1\n')
    rep = read(f, on_invalid="skip").report
    assert rep.rows_read == 3 and rep.rows_kept == 1
    assert dict(rep.set_aside) == {"blank_model": 1, "blank_dataset": 1}


def test_padded_and_differently_normalised_names_are_one_model_with_a_note(tmp_path):
    nfc, nfd = "caf\u00e9", "cafe\u0301"
    rows = [["model", "dataset", "item", "score"]]
    rows += [[" A", "d", "1", "1"], ["A ", "d", "2", "0"], ["A", "d ", "3", "1"]]
    rows += [[nfc, "d", "1", "1"], [nfd, "d", "2", "0"]]
    ing = read(_write_csv(tmp_path / "names.csv", rows))
    obs = ing.observations.collect()
    assert sorted(obs["model"].unique().to_list()) == ["A", nfc]
    assert obs["dataset"].unique().to_list() == ["d"]
    notes = " ".join(ing.report.notes)
    assert "model: 5 spellings" in notes and "into 2 names" in notes
    assert "dataset: 2 spellings" in notes


def test_names_merged_across_files_make_one_model_in_the_report(tmp_path):
    nfc, nfd = "caf\u00e9", "cafe\u0301"
    _write_csv(tmp_path / "a.csv", _rows(models=(nfc, "z")))
    b = _rows(models=(nfd,))
    for r in b[1:]:
        r[1] = str(int(r[1]) + 100)  # other items: the merge is not a duplicate
    _write_csv(tmp_path / "b.csv", b)
    code, out, err = _cli("intervals", str(tmp_path))
    _ok(code, err)
    assert nfd not in out
    assert sorted(ln.split(",")[1] for ln in out.splitlines() if ln.startswith(nfc)) == ["a", "b"]
    assert "model: 2 spellings" in err


@pytest.mark.parametrize("header", ["model,item,score,score", "model,model,item,score"])
def test_a_repeated_column_name_is_one_line_naming_it(tmp_path, header):
    f = tmp_path / "dup.csv"
    f.write_text(header + "\na,b,1,1\n")
    dup = "score" if header.endswith("score,score") else "model"
    _one_line(*_cli("ingest", str(f))[::2], f.name, f"'{dup}'", "more than once")


def test_a_repeated_column_name_in_a_compressed_table_is_one_line(tmp_path):
    f = _write_csv(
        tmp_path / "dup.csv.gz", [["model", "variant", "variant", "score"], ["a", "x", "y", "1"]]
    )
    _one_line(*_cli("ingest", str(f))[::2], f.name, "'variant'")


@pytest.mark.parametrize(("a", "b"), [("Model", "model"), ("SCORE", "score"), ("Item", "ITEM")])
def test_columns_differing_only_in_case_are_one_line_naming_both(tmp_path, a, b):
    names = ["model", "item", "score"]
    names = [c for c in names if c.lower() != a.lower()] + [a, b]
    f = _write_csv(tmp_path / "case.csv", [names, ["x", "1", "1", "1"]])
    _one_line(*_cli("ingest", str(f))[::2], f.name, repr(a), repr(b), "--columns")


def test_a_case_twin_mapped_by_the_user_is_read(tmp_path):
    f = _write_csv(
        tmp_path / "case.csv", [["Model", "model", "item", "score"], ["x", "y", "1", "1"]]
    )
    code, _o, err = _cli("ingest", str(f), "--columns", "model=model,Model=ignore")
    _ok(code, err)


def test_repeated_json_keys_get_a_note_naming_the_key(tmp_path):
    f = tmp_path / "dup.jsonl"
    f.write_text(
        '{"model": "a", "item": "1", "score": 1}\n'
        '{"model": "a", "model": "b", "item": "2", "score": 0}\n'
        '{"model": "c", "item": "3", "score": 1, "score": 0}\n'
    )
    rep = read(f).report
    notes = " ".join(rep.notes)
    assert "'model'" in notes and "'score'" in notes and "line 2" in notes


@pytest.mark.skipif(sys.platform == "win32", reason="symbolic links")
def test_links_out_of_the_input_folder_are_left_out_with_a_note(tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    _write_csv(outside / "secret.csv", _rows(models=("secret",)))
    folder = tmp_path / "data"
    folder.mkdir()
    _write_csv(folder / "run.csv", _rows(models=("a",)))
    (folder / "link.csv").symlink_to(outside / "secret.csv")
    (folder / "linked_dir").symlink_to(outside, target_is_directory=True)
    _write_csv(folder / "inside_target.csv", _rows(models=("b",)))
    (folder / "inside_link.csv").symlink_to(folder / "inside_target.csv")
    ing = read(folder)
    models = set(ing.observations.collect()["model"].unique().to_list())
    assert "secret" not in models and {"a", "b"} <= models
    notes = " ".join(ing.report.notes)
    assert "link.csv" in notes and "outside" in notes


def test_a_link_named_explicitly_is_read(tmp_path):
    target = _write_csv(tmp_path / "t.csv", _rows())
    link = tmp_path / "sub"
    link.mkdir()
    (link / "l.csv").symlink_to(target)
    code, _o, err = _cli("ingest", str(link / "l.csv"))
    _ok(code, err)


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz"])
def test_a_compressed_json_lines_table_is_typed_like_the_plain_one(tmp_path, suffix):
    lines = [json.dumps({"model": "a", "item": i, "score": 1}) for i in range(10_050)]
    lines.append(json.dumps({"model": "a", "item": "q-late", "score": 0}))
    lines.append(json.dumps({"model": "a", "item": "007", "score": 0}))
    data = ("\n".join(lines) + "\n").encode()
    f = tmp_path / f"late{suffix}"
    f.write_bytes(gzip.compress(data) if suffix.endswith(".gz") else data)
    ing = read(f)
    assert ing.report.rows_kept == 10_052
    items = ing.observations.collect()["item"]
    assert items.dtype == pl.String and {"q-late", "007", "7"} <= set(items.to_list())


@pytest.mark.skipif(sys.platform == "win32", reason="symbolic links")
def test_links_out_of_the_folder_a_glob_searches_are_left_out_with_a_note(tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    _write_csv(outside / "secret.csv", _rows(models=("secret",)))
    folder = tmp_path / "data"
    folder.mkdir()
    _write_csv(folder / "run.csv", _rows(models=("a",)))
    (folder / "link.csv").symlink_to(outside / "secret.csv")
    code, out, err = _cli("intervals", str(folder / "*.csv"))
    _ok(code, err)
    assert "secret" not in out and "link.csv" in err and "outside" in err
