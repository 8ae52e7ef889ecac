"""Seeded structural mutations of producers' files, one generator per format (issue 45, item 5).

Each generator copies a real producer-written file set from ``fixtures/`` into a scratch folder
and changes one field of one file: its type swapped (an int where a list, object or string is
expected, a number given as a string), nested (wrapped in a list or an object), truncated (a
shorter string or list, an object with keys removed, the field deleted) or inflated (a huge
integer, 1e30, an infinite or NaN number, 20,000 keys, 20,000 list entries, a 1 MB string).

A case is a ``(format, seed)`` pair: ``make_case(fmt, seed, tmp)`` writes it and returns the
path to read and a one-line description of the mutation, so a failing case is reproduced with
its seed alone. Not a test module: ``tests/fuzz/test_fuzz_formats.py`` runs it.
"""

from __future__ import annotations

import json
import random
import shutil
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"

#: HELM: one run folder written by ``helm-run`` 0.5.16 (fixtures/dumps/helm/PROVENANCE).
HELM_RUN = FIXTURES / "dumps/helm/benchmark_output/runs/evalstats-v1/simple1:model=simple_model1"
HELM_FILES = ("per_instance_stats.json", "scenario_state.json", "run_spec.json", "stats.json")

#: Every Eval Ever: an aggregate record and its samples, written by the project's converter.
EEE_RECORD = (
    FIXTURES / "dumps/every_eval_ever/converted/inspect/inspect__data_arc_qwen/ai2_arc/ollama/"
    "qwen2.5-0.5b"
)

#: Inspect: a log written by inspect_ai's own writer (fixtures/dumps/inspect_written).
INSPECT_LOG = FIXTURES / "dumps/inspect_written/logs/a_cot.json"

#: lm-eval: results and samples written by lm-evaluation-harness (fixtures/dumps/lm_eval/producer).
LM_EVAL_DIR = FIXTURES / "dumps/lm_eval/producer/output/toy__dummy-lm"
LM_EVAL_STAMP = "2026-11-23T05-09-51.715024"

#: Design TOML: written by ``evalstats design --out`` from the fuzz table (at test time).
DESIGN_TABLE = FIXTURES / "fuzz/table.csv"

#: The inflated sizes (keys of an object, entries of a list, characters of a string).
INFLATE_KEYS = 20_000
INFLATE_ITEMS = 20_000
INFLATE_CHARS = 1_000_000

KINDS = ("swap", "nest", "truncate", "inflate")


def _paths(doc: Any, prefix: tuple = (), depth: int = 0) -> Iterator[tuple]:
    """Every field of ``doc`` (the first 3 entries of each list), as key paths."""
    if prefix:
        yield prefix
    if depth > 12:
        return
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, (*prefix, k), depth + 1)
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:3]):
            yield from _paths(v, (*prefix, i), depth + 1)


def _get(doc: Any, path: tuple) -> Any:
    for k in path:
        doc = doc[k]
    return doc


def _swap(value: Any, rng: random.Random) -> Any:
    """A value of another JSON type than ``value`` (a number as a string among them)."""
    others: list[Any] = [7, -1, 0, 2.5, "x", "", [], {}, [1, 2], {"a": 1}, True, None]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        others.append(str(value))
    choices = [o for o in others if type(o) is not type(value)]
    return rng.choice(choices)


def _truncate(value: Any, rng: random.Random) -> Any:
    if isinstance(value, str):
        return value[: len(value) // 2]
    if isinstance(value, list):
        return value[: rng.randint(0, len(value) // 2)] if value else []
    if isinstance(value, dict):
        keys = list(value)
        rng.shuffle(keys)
        return {k: value[k] for k in keys[: len(keys) // 2]}
    if isinstance(value, float):
        return int(value)
    return _DELETE


def _inflate(value: Any, rng: random.Random) -> Any:
    kind = rng.choice(["huge_int", "1e30", "inf", "-inf", "nan", "keys", "items", "chars"])
    if kind == "huge_int":
        return 10**400
    if kind == "1e30":
        return 1e30 if rng.random() < 0.5 else -1e308
    if kind in ("inf", "-inf", "nan"):
        return float(kind)
    if kind == "keys":
        base = value if isinstance(value, dict) else {}
        return {**base, **{f"k{i}": i for i in range(INFLATE_KEYS)}}
    if kind == "items":
        return [value] * INFLATE_ITEMS if not isinstance(value, list) else value * INFLATE_ITEMS
    return "x" * INFLATE_CHARS


_DELETE = object()


def mutate(doc: Any, rng: random.Random, kind: str | None = None) -> tuple[Any, str]:
    """``doc`` (a copy) with one field changed, and a description of the change."""
    doc = json.loads(json.dumps(doc))
    paths = list(_paths(doc))
    if not paths:
        return _swap(doc, rng), "root swapped"
    path = rng.choice(paths)
    kind = kind or rng.choice(KINDS)
    old = _get(doc, path)
    if kind == "swap":
        new = _swap(old, rng)
    elif kind == "nest":
        new = [old] if rng.random() < 0.5 else {"value": old}
    elif kind == "truncate":
        new = _truncate(old, rng)
    else:
        new = _inflate(old, rng)
    parent = _get(doc, path[:-1])
    if new is _DELETE:
        if isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent.pop(path[-1])
    else:
        parent[path[-1]] = new
    shown = "/".join(map(str, path))
    what = "deleted" if new is _DELETE else f"{type(new).__name__} {_short(new)}"
    return doc, f"{kind} {shown} -> {what}"


def _short(v: Any) -> str:
    text = repr(v) if not isinstance(v, (dict, list, str)) or len(v) < 8 else f"<{len(v)}>"
    return text if len(text) < 40 else text[:37] + "..."


def _dump(doc: Any) -> str:
    return json.dumps(doc)  # non-strict on purpose: Infinity and NaN as producers' bugs write them


def _mutate_json_file(f: Path, rng: random.Random) -> str:
    doc, what = mutate(json.loads(f.read_text(encoding="utf-8")), rng)
    f.write_text(_dump(doc), encoding="utf-8")
    return f"{f.name}: {what}"


def _mutate_jsonl_file(f: Path, rng: random.Random) -> str:
    lines = [ln for ln in f.read_text(encoding="utf-8").splitlines() if ln.strip()]
    i = rng.randrange(len(lines))
    doc, what = mutate(json.loads(lines[i]), rng)
    lines[i] = _dump(doc)
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return f"{f.name} line {i + 1}: {what}"


def _helm(rng: random.Random, tmp: Path) -> tuple[Path, str]:
    run = tmp / "suite" / HELM_RUN.name
    run.mkdir(parents=True)
    for f in HELM_RUN.iterdir():
        shutil.copy(f, run / f.name)
    target = run / rng.choice(HELM_FILES)
    return tmp / "suite", _mutate_json_file(target, rng)


def _eee(rng: random.Random, tmp: Path) -> tuple[Path, str]:
    out = tmp / "record"
    shutil.copytree(EEE_RECORD, out)
    target = rng.choice(sorted(out.iterdir()))
    if target.suffix == ".jsonl":
        return out, _mutate_jsonl_file(target, rng)
    return out, _mutate_json_file(target, rng)


def _inspect(rng: random.Random, tmp: Path) -> tuple[Path, str]:
    out = tmp / INSPECT_LOG.name
    shutil.copy(INSPECT_LOG, out)
    return out, _mutate_json_file(out, rng)


def _lm_eval(rng: random.Random, tmp: Path) -> tuple[Path, str]:
    out = tmp / LM_EVAL_DIR.name
    out.mkdir()
    for f in LM_EVAL_DIR.iterdir():
        if LM_EVAL_STAMP in f.name:
            shutil.copy(f, out / f.name)
    target = rng.choice(sorted(out.iterdir()))
    if target.suffix == ".jsonl":
        return out, _mutate_jsonl_file(target, rng)
    return out, _mutate_json_file(target, rng)


def design_file(tmp: Path) -> Path:
    """A design file written by ``evalstats design --out`` from the fuzz table."""
    import contextlib
    import io

    from evalstats.cli import main

    out = tmp / "design.toml"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = main(["design", str(DESIGN_TABLE), "--out", str(out)])
    assert code == 0 and out.is_file(), "evalstats design --out did not write the design file"
    return out


def _design(rng: random.Random, tmp: Path) -> tuple[Path, str]:
    import math

    import tomli_w

    src = design_file(tmp)
    doc, what = mutate(tomllib.loads(src.read_text(encoding="utf-8")), rng)

    def plain(v: Any) -> Any:  # TOML has no null; huge integers do not fit its 64 bits
        if isinstance(v, dict):
            return {str(k): plain(x) for k, x in v.items() if x is not None}
        if isinstance(v, list):
            return [plain(x) for x in v if x is not None]
        if isinstance(v, int) and not isinstance(v, bool) and abs(v) >= 2**63:
            return math.inf
        return v

    doc = plain(doc) if isinstance(doc, dict) else {"roles": plain(doc)}
    src.write_text(tomli_w.dumps(doc), encoding="utf-8")
    return src, f"design.toml: {what}"


#: format -> writer of one mutated case: ``(rng, scratch folder) -> (path to read, description)``
GENERATORS: dict[str, Callable[[random.Random, Path], tuple[Path, str]]] = {
    "helm": _helm,
    "every-eval-ever": _eee,
    "inspect": _inspect,
    "lm-eval": _lm_eval,
    "design": _design,
}


def make_case(fmt: str, seed: int, tmp: Path) -> tuple[Path, str]:
    """Write case ``seed`` of format ``fmt`` under ``tmp``; the path to read and what changed."""
    tmp.mkdir(parents=True, exist_ok=True)
    return GENERATORS[fmt](random.Random(f"{fmt}:{seed}"), tmp)


def argv(fmt: str, path: Path) -> list[str]:
    """The command that reads a case: ``ingest`` (the design file with the table it describes)."""
    if fmt == "design":
        return ["ingest", str(DESIGN_TABLE), "--design", str(path), "--json"]
    return ["ingest", str(path), "--json", "--format", fmt]
