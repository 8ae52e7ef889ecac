"""Fuzzing the loaders through the command line: any bytes, any mutation of a valid file.

Whatever the input, ``evalstats ingest`` either succeeds with an ingest report whose counts add
up (``rows_read == rows_kept + sum(set_aside)``) or exits 2 with one line that names the file.
It never shows a traceback (a traceback is an exception other than ``EvalstatsError``, which
``main`` lets through, so hypothesis sees and shrinks it).

The default (CI) profile tries a few dozen inputs per seed file; ``-m slow`` runs the long
version, and ``EVALSTATS_HYPOTHESIS_PROFILE=nightly`` raises both.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import struct
import zipfile
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalstats.cli import main
from tests.conftest import needs_shared_data

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"

#: Seeds named ``shared:<path>`` are real files read in place from ../shared/data;
#: ``lm-eval-subset:<path>`` are derived from them at test time (tests/conftest.py).
SHARED_PREFIXES = ("shared:", "lm-eval-subset:")

#: A seed written by :func:`write_zip` (the Zstandard twin of arith_rubric.eval).
ZSTD_SEED = "zstd:dumps/inspect/synthetic/arith_rubric.eval"

#: One small valid file per format: (format, path relative to fixtures/, or real data).
SEEDS: list[tuple[str, str]] = [
    ("table", "fuzz/table.csv"),
    ("table", "fuzz/table.jsonl"),
    (
        "lm-eval",
        "dumps/lm_eval/output/EleutherAI__pythia-160m/samples_arc_easy_2024-06-11T09-15-32.417823.jsonl",
    ),
    ("inspect", "shared:inspect-logs/popularity1.eval"),
    ("inspect", "dumps/inspect/synthetic/arith_two_scorers.json"),
    ("reliable-eval", "dumps/reliable_eval/results/gpqa_results.json"),
    ("state-of-what-art", "shared:state-of-what-art/paraphrases accuracies/BBH/snarks.csv"),
    ("llm-stability", "dumps/llm_stability/older_layout/gpt-3.5-turbo_navigate_0.csv"),
    ("dove", "dumps/dove/lite/Llama-3.2-1B-Instruct/en/0_shot/mmlu.global_facts.parquet"),
    ("dove", "dumps/dove/nested/mmlu.global_facts.parquet"),
    (
        "openai-evals",
        "shared:real-logs/openai-evals/"
        "Significant-Gravitas+Auto-GPT-Benchmarks__README_oaieval_230417220821DPM75QNS.jsonl",
    ),
    (
        "lm-eval",
        "dumps/lm_eval/output/EleutherAI__pythia-160m/results_2024-06-11T09-15-32.417823.json",
    ),
    ("lm-eval", "lm-eval-subset:SlurmEvals/llama/winogrande_write_out_info.json"),
    ("reliable-eval", "dumps/reliable_eval/predictions/gpqa_combined.json"),
    ("reliable-eval", "dumps/reliable_eval/data/gpqa/predictions/GPT-4o_predictions.json"),
    # written at test time with Zstandard members (zip method 93), as current inspect_ai does
    ("inspect", ZSTD_SEED),
]

# the CI version is derandomized (the same inputs every run: CI never flakes on a new find);
# the long version explores
FAST = settings(
    max_examples=15,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
LONG = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def _ingest(path: Path, fmt: str | None) -> tuple[int, str, str]:
    argv = ["ingest", str(path), "--json"] + (["--format", fmt] if fmt else [])
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def check_outcome(path: Path, fmt: str | None) -> None:
    """The contract: exit 0 with counts that add up, or exit 2 with one line naming the file."""
    code, out, err = _ingest(path, fmt)
    assert "Traceback" not in err
    if code == 0:
        report = json.loads(out.strip().splitlines()[-1])["report"]
        assert report["rows_read"] == report["rows_kept"] + sum(report["set_aside"].values())
        return
    assert code == 2, (code, err)
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("evalstats: error: "), err
    # the message names the file (or the folder it was read from)
    assert path.name in lines[0] or str(path.parent) in lines[0], lines[0]


# --- mutations ---------------------------------------------------------------------------------


@st.composite
def byte_mutations(draw, data: bytes) -> bytes:
    """``data`` after a few random edits: truncation, flipped, inserted or deleted bytes."""
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["truncate", "flip", "insert", "delete", "dup_line"]))
        n = len(out)
        if kind == "truncate" and n:
            del out[draw(st.integers(0, n - 1)) :]
        elif kind == "flip" and n:
            i = draw(st.integers(0, n - 1))
            out[i] = draw(st.integers(0, 255))
        elif kind == "insert":
            i = draw(st.integers(0, n))
            out[i:i] = draw(st.binary(min_size=1, max_size=12))
        elif kind == "delete" and n:
            i = draw(st.integers(0, n - 1))
            del out[i : i + draw(st.integers(1, 64))]
        elif kind == "dup_line" and n:
            lines = bytes(out).split(b"\n")
            i = draw(st.integers(0, len(lines) - 1))
            lines.insert(i, lines[i])
            out = bytearray(b"\n".join(lines))
    return bytes(out)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)


def _paths(doc, prefix=()):
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:5]):
            yield from _paths(v, (*prefix, i))


def _replace(doc, path, value):
    if not path:
        return value
    head, *rest = path
    doc[head] = _replace(doc[head], tuple(rest), value)
    return doc


@st.composite
def json_mutations(draw, doc):
    """``doc`` with one value (at any depth) replaced by a JSON value of any type."""
    doc = json.loads(json.dumps(doc))
    paths = list(_paths(doc))
    path = draw(st.sampled_from(paths))
    return _replace(doc, path, draw(JSON_VALUES))


def _write_mutated_zip(src: Path, dst: Path, data, *, zstd: bool = False) -> None:
    """Copy the zip ``src`` to ``dst`` with one JSON member mutated structurally."""
    with zipfile.ZipFile(src) as z:
        members = {i.filename: z.read(i) for i in z.infolist()}
    jsons = sorted(n for n in members if n.endswith(".json"))
    name = data.draw(st.sampled_from(jsons))
    try:
        doc = json.loads(members[name])
        members[name] = json.dumps(data.draw(json_mutations(doc))).encode()
    except ValueError:
        members[name] = data.draw(byte_mutations(members[name]))
    write_zip(dst, members, zstd=zstd)


def write_zip(dst: Path, members: dict[str, bytes], *, zstd: bool) -> None:
    """A zip of ``members``: deflate, or Zstandard members (method 93) written by hand.

    Python < 3.14's zipfile cannot write method 93, so the local headers, central directory
    and end record are laid out here (APPNOTE 4.3); ``zstandard`` compresses.
    """
    if not zstd:
        with zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as z:
            for n, b in members.items():
                z.writestr(n, b)
        return
    import zstandard

    out, central = bytearray(), bytearray()
    for name, data in members.items():
        comp = zstandard.ZstdCompressor().compress(data)
        fname = name.encode()
        crc = zlib.crc32(data)
        head = struct.pack(
            "<IHHHHHIIIHH", 0x04034B50, 63, 0, 93, 0, 0, crc, len(comp), len(data), len(fname), 0
        )
        central += (
            struct.pack(
                "<IHHHHHHIIIHHHHHII",
                0x02014B50,
                63,
                63,
                0,
                93,
                0,
                0,
                crc,
                len(comp),
                len(data),
                len(fname),
                0,
                0,
                0,
                0,
                0,
                len(out),
            )
            + fname
        )
        out += head + fname + comp
    end = struct.pack(
        "<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(central), len(out), 0
    )
    dst.write_bytes(bytes(out + central + end))


def _is_shared(rel: str) -> bool:
    return rel.removeprefix("zstd:").startswith(SHARED_PREFIXES)


def _params(seeds: list[tuple[str, str]]) -> list:
    """``parametrize`` values: seeds of real data carry the ``shared_data`` marker."""
    return [
        pytest.param(
            fmt,
            rel,
            id=f"{fmt}:{rel[:5] if rel.startswith('zstd:') else ''}{Path(rel).name}",
            marks=needs_shared_data if _is_shared(rel) else (),
        )
        for fmt, rel in seeds
    ]


def _resolve(rel: str, request) -> Path:
    """The seed's readable file (for ``zstd:`` seeds, the file its twin is written from)."""
    rel = rel.removeprefix("zstd:")
    if rel.startswith("shared:"):
        return request.getfixturevalue("shared_data") / rel.removeprefix("shared:")
    if rel.startswith("lm-eval-subset:"):
        return request.getfixturevalue("lm_eval_subsets") / rel.removeprefix("lm-eval-subset:")
    return FIXTURES / rel


def _seed(rel: str, plain: Path, tmp: Path) -> Path:
    """The seed file: ``plain``, or its Zstandard twin for ``zstd:`` seeds."""
    if not rel.startswith("zstd:"):
        return plain
    src = plain
    with zipfile.ZipFile(src) as z:
        members = {i.filename: z.read(i) for i in z.infolist()}
    out = tmp / "seed" / src.name
    out.parent.mkdir()
    write_zip(out, members, zstd=True)
    return out


def _fuzz_one(fmt: str, rel: str, plain: Path, data, tmp: Path) -> None:
    src = _seed(rel, plain, tmp)
    dst = tmp / src.name
    how = data.draw(st.sampled_from(["bytes", "structure"]))
    if how == "structure" and src.suffix == ".eval":
        zstd = rel.startswith("zstd:")  # members are readable in ``plain``
        _write_mutated_zip(plain, dst, data, zstd=zstd)
    elif how == "structure" and src.suffix in (".json", ".jsonl"):
        text = src.read_text(encoding="utf-8")
        if src.suffix == ".json":
            dst.write_text(json.dumps(data.draw(json_mutations(json.loads(text)))))
        else:
            lines = text.splitlines()
            i = data.draw(st.integers(0, len(lines) - 1))
            lines[i] = json.dumps(data.draw(json_mutations(json.loads(lines[i]))))
            dst.write_text("\n".join(lines) + "\n")
    else:
        dst.write_bytes(data.draw(byte_mutations(src.read_bytes())))
    given_format = data.draw(st.sampled_from([fmt, None]))
    check_outcome(dst, given_format)


def _run(fmt, rel, request, tmp_path_factory, budget):
    plain = _resolve(rel, request)

    @budget
    @given(data=st.data())
    def inner(data):
        tmp = tmp_path_factory.mktemp("fuzz")
        try:
            _fuzz_one(fmt, rel, plain, data, tmp)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    inner()


@pytest.mark.parametrize(("fmt", "rel"), _params(SEEDS))
def test_mutated_files_fail_cleanly_or_add_up(fmt, rel, request, tmp_path_factory):
    _run(fmt, rel, request, tmp_path_factory, FAST)


@pytest.mark.slow
@pytest.mark.parametrize(("fmt", "rel"), _params(SEEDS))
def test_mutated_files_fail_cleanly_or_add_up_long(fmt, rel, request, tmp_path_factory):
    _run(fmt, rel, request, tmp_path_factory, LONG)


@FAST
@given(
    payload=st.binary(max_size=300),
    suffix=st.sampled_from([".csv", ".jsonl", ".json", ".parquet", ".eval", ".tsv", ".txt"]),
)
def test_any_bytes_fail_cleanly_or_add_up(payload, suffix, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bytes")
    path = tmp / f"dump{suffix}"
    path.write_bytes(payload)
    check_outcome(path, None)
    shutil.rmtree(tmp, ignore_errors=True)


# --- the report command on a tiny table --------------------------------------------------------

TINY = b"model,item,template,score\n" + b"".join(
    f"{m},{i},{t},{(i + len(t) + (m == 'b')) % 2}\n".encode()
    for m in "ab"
    for i in range(6)
    for t in ("t1", "t2")
)

REPORT = settings(
    max_examples=6,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@pytest.mark.slow
@REPORT
@given(data=st.data())
def test_report_on_mutated_or_any_bytes_fails_cleanly(data, tmp_path_factory):
    """``evalstats report`` on a damaged tiny table: a report, or one line and exit 2."""
    tmp = tmp_path_factory.mktemp("report")
    payload = data.draw(st.one_of(byte_mutations(TINY), st.binary(max_size=200)))
    path = tmp / "tiny.csv"
    path.write_bytes(payload)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["report", str(path), "--out", str(tmp / "rep"), "--on-invalid", "skip"])
    text = err.getvalue()
    assert "Traceback" not in text
    if code == 0:
        assert (tmp / "rep" / "results.json").is_file()
    else:
        assert code == 2, text
        lines = [ln for ln in text.splitlines() if ln.startswith("evalstats: error: ")]
        assert len(lines) == 1, text
    shutil.rmtree(tmp, ignore_errors=True)


# --- a folder that mixes formats, one file damaged ---------------------------------------------

#: Seeds of different formats put side by side in one folder (single files, no folder rules).
MIXED = [
    "fuzz/table.csv",
    "shared:real-logs/openai-evals/"
    "Significant-Gravitas+Auto-GPT-Benchmarks__README_oaieval_230417220821DPM75QNS.jsonl",
    "shared:inspect-logs/popularity1.eval",
    "dumps/lm_eval/output/EleutherAI__pythia-160m/samples_arc_easy_2024-06-11T09-15-32.417823.jsonl",
    "shared:state-of-what-art/paraphrases accuracies/BBH/snarks.csv",
]


def _fuzz_folder(data, tmp: Path, sources: list[Path]) -> None:
    folder = tmp / "mix"
    folder.mkdir()
    chosen = data.draw(st.lists(st.sampled_from(sources), min_size=2, max_size=4, unique=True))
    for src in chosen:
        shutil.copy(src, folder / src.name)
    victim = folder / data.draw(st.sampled_from(chosen)).name
    victim.write_bytes(data.draw(byte_mutations(victim.read_bytes())))
    if data.draw(st.booleans()):
        (folder / data.draw(st.sampled_from(["README.md", "notes.json", "x.eval"]))).write_bytes(
            data.draw(st.binary(max_size=64))
        )
    check_outcome(folder, None)


@needs_shared_data
def test_mixed_folder_fails_cleanly_or_adds_up(request, tmp_path_factory):
    """A folder of several formats with one file damaged: read whole, or one line, never lost."""
    sources = [_resolve(rel, request) for rel in MIXED]

    @FAST
    @given(data=st.data())
    def inner(data):
        tmp = tmp_path_factory.mktemp("mixfuzz")
        try:
            _fuzz_folder(data, tmp, sources)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    inner()


@pytest.mark.slow
@needs_shared_data
def test_mixed_folder_fails_cleanly_or_adds_up_long(request, tmp_path_factory):
    sources = [_resolve(rel, request) for rel in MIXED]

    @LONG
    @given(data=st.data())
    def inner(data):
        tmp = tmp_path_factory.mktemp("mixfuzz")
        try:
            _fuzz_folder(data, tmp, sources)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    inner()


# --- hostile tables: names, file names, compression, limits (issue 28) --------------------------

#: Pieces of hostile names: padding, combining accents (NFD), escape sequences, C1 controls,
#: right-to-left overrides, formula starts, glob characters, quotes.
NAME_PIECES = [" ", "\t", "e\u0301", "\u00e9", "\x1b[2J", "\x1b]0;t\x07", "\x9b", "\u202e"]
NAME_PIECES += ["=", "+", "-", "@", "[", "]", "*", "?", '"', ",", "$", "a", "b", "7", "007"]

hostile_names = st.lists(st.sampled_from(NAME_PIECES), min_size=0, max_size=4).map("".join)


@FAST
@given(
    models=st.lists(hostile_names, min_size=1, max_size=4),
    items=st.lists(hostile_names, min_size=1, max_size=3),
    stem=st.sampled_from(["t", "run[1]", "a*b?", "[x]"]),
    suffix=st.sampled_from([".csv", ".csv.gz", ".tsv", ".tsv.gz", ".jsonl"]),
    trailing=st.sampled_from(["", "\n", "\n\n\n", "\r\n\r\n"]),
    limits=st.sampled_from(
        [{}, {"EVALSTATS_MAX_COLUMNS": "3"}, {"EVALSTATS_MAX_LINE_BYTES": "40"}]
    ),
)
def test_hostile_tables_fail_cleanly_or_add_up(
    models, items, stem, suffix, trailing, limits, tmp_path_factory
):
    """Hostile names, file names, trailing blank lines and lowered limits: the contract holds.

    When the ingest succeeds, the names it kept are stripped and in NFC, and no control
    character reached stdout.
    """
    import csv as csv_module
    import gzip
    import os
    import unicodedata

    from evalstats.io import read

    tmp = tmp_path_factory.mktemp("hostile")
    path = tmp / f"{stem}{suffix}"
    sep = "\t" if ".tsv" in suffix else ","
    rows = [
        {"model": m, "item": i, "score": (k + j) % 2}
        for k, m in enumerate(models)
        for j, i in enumerate(items)
    ]
    if suffix == ".jsonl":
        text = "".join(json.dumps(r) + "\n" for r in rows)
    else:
        buf = io.StringIO()
        w = csv_module.DictWriter(
            buf, ["model", "item", "score"], delimiter=sep, lineterminator="\n"
        )
        w.writeheader()
        w.writerows(rows)
        text = buf.getvalue()
    data = (text + trailing).encode()
    path.write_bytes(gzip.compress(data) if suffix.endswith(".gz") else data)
    saved = {k: os.environ.get(k) for k in limits}
    os.environ.update(limits)
    try:
        check_outcome(path, None)
        code, out, _err = _ingest(path, None)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    for ch in ("\x1b", "\x9b", "\u202e", "\x07"):
        assert ch not in out
    if code == 0:
        report = json.loads(out.strip().splitlines()[-1])["report"]
        assert report["set_aside"].get("blank_line", 0) == 0  # trailing lines are not rows
        obs, _ = read(path, on_invalid="skip")
        for name in obs.collect()["model"].to_list():
            assert name == unicodedata.normalize("NFC", name).strip() and name
    shutil.rmtree(tmp, ignore_errors=True)
