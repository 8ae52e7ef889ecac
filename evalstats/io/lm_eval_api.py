"""lm-eval's Python API output: ``simple_evaluate(..., log_samples=True)`` saved as one JSON file.

``lm_eval.simple_evaluate`` returns one dictionary: the aggregates (``results``, ``configs``,
``n-shot``, ``n-samples``, ``config``, ...) and, with ``log_samples=True``, the per-document
records under ``samples`` (``{task: [record, ...]}``, the records the command line writes to
``samples_<task>_<date>.jsonl``). Users save it with ``json.dump`` as one file per run. Each such
file is read exactly as the command line's output of that run: its records are the samples files
of its tasks and its aggregates the results file beside them, so every rule of
:func:`evalstats.io.lm_eval.read_lm_eval` applies (metric and filter choice, runs of one
configuration numbered by date, task configurations as prompt variants). See
``docs/formats/lm-eval-api.md``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evalstats.errors import IngestError
from evalstats.io._aggregates import lm_eval_output
from evalstats.io._files import expand_paths, skipped_note
from evalstats.io._pipeline import OnInvalid, ScoreScale, _Planned, validate_options
from evalstats.io._report import Ingest, SetAsideExample

__all__ = ["detect_lm_eval_api", "read_lm_eval_api"]

_CHUNK = 1 << 20


def _head(f: Path, n: int = 4096) -> bytes:
    try:
        with open(f, "rb") as fh:
            return fh.read(n).lstrip()
    except OSError:
        return b""


def detect_lm_eval_api(path: str | Path) -> bool:
    """Whether ``path`` is a ``simple_evaluate`` result saved as JSON (or a folder of them).

    The file is a JSON object that starts with lm-eval's ``results`` (or ``groups``) and holds a
    ``samples`` object of per-document records (``doc_id``); a results file the command line
    writes has no ``samples``.

    Examples
    --------
    >>> detect_lm_eval_api("no/such/file.json")
    False
    """
    p = Path(path)
    if p.is_dir():
        return any(_is_api_file(f) for f in sorted(p.rglob("*.json"))[:50] if f.is_file())
    return p.is_file() and p.suffix == ".json" and _is_api_file(p)


def _is_api_file(f: Path) -> bool:
    head = _head(f)
    if not head.startswith(b"{") or not re.search(rb'"(results|groups)"\s*:', head[:4096]):
        return False
    if f.name.startswith("samples_"):
        return False
    # the keys may be far into a large file: stream it for a "samples" key and a record
    seen_samples = seen_doc = False
    tail = b""
    try:
        with open(f, "rb") as fh:
            for chunk in iter(lambda: fh.read(_CHUNK), b""):
                block = tail + chunk
                seen_samples = seen_samples or re.search(rb'[{,]\s*"samples"\s*:\s*\{', block)
                seen_doc = seen_doc or b'"doc_id"' in block
                if seen_samples and seen_doc:
                    return True
                tail = block[-64:]
    except OSError:
        return False
    return False


def _date_of(doc: Mapping[str, Any], f: Path) -> str:
    """The run's date as lm-eval writes it in file names (``2024-05-01T10-00-00.000001``)."""
    stamp = doc.get("date")
    try:
        when = datetime.fromtimestamp(float(stamp), tz=UTC)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError, OSError):
        when = datetime.fromtimestamp(f.stat().st_mtime, tz=UTC)
    return when.strftime("%Y-%m-%dT%H-%M-%S.%f")


def read_lm_eval_api(
    path: str | Path | Sequence[str | Path],
    *,
    metric: str | Mapping[str, str] | None = None,
    filter: str | Mapping[str, str] | None = None,
    columns: str | Mapping[str, str] | None = None,
    on_invalid: OnInvalid = "error",
    score_scale: ScoreScale = "auto",
) -> Ingest:
    r"""Read ``simple_evaluate`` results saved as JSON (embedded ``samples``).

    Parameters
    ----------
    path : str, Path or sequence of them
        A JSON file, a folder (every such file below it), a glob or a list.
    metric, filter, columns, on_invalid, score_scale
        As for :func:`evalstats.io.lm_eval.read_lm_eval`.

    Returns
    -------
    Ingest
        One row per document of the chosen filter, as :func:`~evalstats.io.lm_eval.read_lm_eval`
        gives for the command line's files of the same run. ``report.sources`` names each task
        as ``<file>#samples.<task>``.

    Raises
    ------
    IngestError
        A file is not valid JSON, holds no ``samples`` (saved without ``log_samples=True``: the
        aggregates only, said so), or its records are invalid.

    Notes
    -----
    Each file is one run (``simple_evaluate`` evaluates one model once). The model is
    ``model_name`` if present, else the ``pretrained=`` (or ``model=``, ...) of
    ``config.model_args`` (lm-eval's own rule), else the file's name, or its path below the
    folder it shares with the other files read of the same name (``run_a/results``,
    ``run_b/results``), with a note quoting the ``model_args`` that named none. Runs of one
    (model, task, shots) are numbered by their ``date`` (the run's start time, a Unix time). Checked against: output of
    ``simple_evaluate`` written by lm-eval 0.4.13 itself (``fixtures/dumps/lm_eval_api/``) and
    real files (``benchmarks/real_corpus``); every task mean equals the file's own ``results``.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> recs = [{"doc_id": i, "target": "0", "filter": "none", "metrics": ["acc"], "acc": a}
    ...         for i, a in enumerate([1.0, 0.0, 1.0])]
    >>> out = {"results": {"boolq": {"acc,none": 2 / 3}}, "configs": {"boolq": {}},
    ...        "config": {"model": "hf", "model_args": "pretrained=org/model"},
    ...        "samples": {"boolq": recs}, "date": 1714557600.0}
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "run.json"
    >>> _ = f.write_text(json.dumps(out))
    >>> obs, report = read_lm_eval_api(f)
    >>> obs.select("model", "dataset", "item", "score").collect().rows()
    [('org/model', 'boolq', '0', 1.0), ('org/model', 'boolq', '1', 0.0), ('org/model', 'boolq', '2', 1.0)]
    """
    from evalstats.io.lm_eval import read_lm_eval

    validate_options(on_invalid, score_scale)
    hidden: list[Path] = []
    files = expand_paths(path, suffixes=(".json",), skipped=hidden)
    single = len(files) == 1
    files = [f for f in files if single or _is_api_file(f)]
    if not files:
        raise IngestError(
            "no simple_evaluate results saved as JSON (an object with 'results' and the "
            "per-document 'samples' of log_samples=True).",
            path=str(path),
        )
    tmp = Path(tempfile.mkdtemp(prefix="evalstats-lm-eval-api-"))
    labels = _file_labels(files)
    names: dict[str, str] = {}
    notes: list[str] = []
    try:
        for k, f in enumerate(files):
            doc, nested = _unwrapped(_load(f, notes), f)
            if nested is not None:
                notes.append(
                    f"{f}: the simple_evaluate output is nested under {nested!r} of the file's "
                    "object; it is read (the object's other keys are not)"
                )
            samples = doc.get("samples")
            if not isinstance(samples, dict) or not samples:
                aggregate = ", ".join(sorted(map(str, (doc.get("results") or {}))))[:200]
                where = f", nested under {nested!r}" if nested is not None else ""
                raise IngestError(
                    "lm-eval results without per-document samples (simple_evaluate was run "
                    "without log_samples=True, or the samples were removed): aggregates only, "
                    f"no item scores (tasks{where}: {aggregate or 'none'}).",
                    path=str(f),
                )
            folder = tmp / f"{k:06d}"  # a name of no meaning: the model is set below
            folder.mkdir()
            date = _date_of(doc, f)
            aggregates = {key: v for key, v in doc.items() if key != "samples"}
            unnamed = _unnamed_model(aggregates)
            if unnamed is not None:  # the model is the file's name: said once per file
                aggregates["model_name"] = labels[f]
                how = _label_how(f, labels)
                notes.append(f"{f}: model {labels[f]!r} taken from {how} ({unnamed})")
            results_file = folder / f"results_{date}.json"
            results_file.write_text(json.dumps(aggregates, default=str))
            names[str(results_file)] = str(f)
            for task, records in samples.items():
                if not isinstance(records, list):
                    raise IngestError(
                        f"field 'samples.{task}' is not a list of records.", path=str(f)
                    )
                out = folder / f"samples_{task}_{date}.jsonl"
                with open(out, "w", encoding="utf-8") as fh:
                    for rec in records:
                        fh.write(json.dumps(rec, default=str) + "\n")
                names[str(out)] = f"{f}#samples.{task}"
        try:
            ingest = read_lm_eval(
                tmp,
                metric=metric,
                filter=filter,
                columns=columns,
                on_invalid=on_invalid,
                score_scale=score_scale,
            )
        except IngestError as exc:
            raise _renamed_error(exc, names) from None
        except _Planned as planned:  # the unit table built from the plan (read_units)
            plan = planned.plan
            raise _Planned(
                replace(
                    plan,
                    format="lm-eval-api",
                    paths=tuple(names.get(p, p) for p in plan.paths),
                    notes=tuple(_rename(n, names, tmp, labels) for n in plan.notes),
                )
            ) from None
        obs = ingest.observations.collect().lazy()  # the table no longer needs the files
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    note = skipped_note(hidden)
    if note:
        notes.append(note)
    report = ingest.report
    report = replace(
        report,
        format="lm-eval-api",
        sources=tuple(names.get(s, s) for s in report.sources),
        examples=tuple(
            SetAsideExample(e.reason, names.get(e.path, e.path), e.row, e.column, e.detail)
            for e in report.examples
        ),
        notes=tuple(_rename(n, names, tmp, labels) for n in (*report.notes, *notes)),
        by_format=(),
    )
    return Ingest(obs, report)


def _unwrapped(doc: dict, f: Path) -> tuple[dict, str | None]:
    """The file's simple_evaluate output and the key it is nested under (``None``: the top)."""
    try:
        found = lm_eval_output(doc)
    except ValueError as exc:
        raise IngestError(f"{exc}.", path=str(f)) from None
    return found if found is not None else (doc, None)


def _file_labels(files: Sequence[Path]) -> dict[Path, str]:
    """The model of each file whose results name none: the file's name without ``.json``.

    Files read together that share a name (``run_a/results.json``, ``run_b/results.json``, the
    usual layout of one folder per run) are named by their paths below the folder the files of
    that name have in common (``run_a/results``, ``run_b/results``), so that no two files make
    one model and each name says which file it is.

    Examples
    --------
    >>> from pathlib import Path
    >>> fs = [Path("/d/a/results.json"), Path("/d/b/results.json"), Path("/d/c/other.json")]
    >>> sorted(_file_labels(fs).values())
    ['a/results', 'b/results', 'other']
    """
    by_name: dict[str, list[Path]] = defaultdict(list)
    for f in files:
        by_name[f.stem].append(f)
    out: dict[Path, str] = {}
    for stem, group in by_name.items():
        if len(group) == 1:
            out[group[0]] = stem
            continue
        full = [g.absolute() for g in group]
        root = Path(os.path.commonpath([str(g.parent) for g in full]))
        for g, a in zip(group, full, strict=True):
            out[g] = a.relative_to(root).with_suffix("").as_posix()
    return out


def _label_how(f: Path, labels: Mapping[Path, str]) -> str:
    if "/" not in labels[f]:
        return "the file name"
    return f"the file's path (another file read has the name {f.name})"


def _unnamed_model(aggregates: dict) -> str | None:
    """Why the results name no model by lm-eval's own rule (``None`` when they name one)."""
    from evalstats.io.lm_eval import _MODEL_ARG_PREFIXES, _model_name

    if _model_name(aggregates, Path("."))[1] == "results":
        return None
    config = aggregates.get("config")
    args = config.get("model_args") if isinstance(config, dict) else None
    if not args:
        return "the results name no model: no model_name, no config.model_args"
    if isinstance(args, dict):
        args = ",".join(f"{k}={v}" for k, v in args.items())
    shown = str(args) if len(str(args)) <= 120 else str(args)[:117] + "..."
    keys = ", ".join(p for p in _MODEL_ARG_PREFIXES)
    return f"config.model_args {shown!r} has none of lm-eval's model keys {keys}"


def _load(f: Path, notes: list[str] | None = None) -> dict:
    if f.stat().st_size == 0:
        raise IngestError("the file is empty (0 bytes).", path=str(f))
    text = f.read_bytes().decode("utf-8", errors="replace")
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as exc:
        doc, cut = _complete_members(text)
        if doc is None or "samples" not in doc or not ("results" in doc or "groups" in doc):
            raise IngestError(f"not valid JSON ({exc}).", path=str(f)) from None
        if notes is not None:
            notes.append(
                f"{f}: the file ends inside its member {cut!r} (cut while being written: "
                "json.dump stops at the first value it cannot serialize, such as "
                f"config.model_dtype, a torch.dtype); its {len(doc)} complete members before it "
                f"are read ({', '.join(doc)})"
            )
    nested = isinstance(doc, dict) and any(
        isinstance(v, dict) and "results" in v for v in doc.values()
    )  # a wrapper of the user's own, unwrapped by the caller
    if not isinstance(doc, dict) or not ("results" in doc or "groups" in doc or nested):
        raise IngestError(
            "not lm-eval results: expected a JSON object with 'results' and 'samples'.",
            path=str(f),
        )
    return doc


def _complete_members(text: str) -> tuple[dict | None, str | None]:
    """The complete top-level members of a JSON object whose text stops early.

    Returns the members parsed before the first that cannot be (``None`` when the text is not
    the start of an object) and the name of that member (``None`` when the object itself is
    complete, which ``json.loads`` would have read).
    """
    decoder = json.JSONDecoder()
    ws = re.compile(r"[ \t\n\r]*")
    i = ws.match(text, 0).end()
    if not text.startswith("{", i):
        return None, None
    i = ws.match(text, i + 1).end()
    out: dict = {}
    while i < len(text):
        try:
            key, i = decoder.raw_decode(text, i)
        except ValueError:
            return (out or None), None
        i = ws.match(text, i).end()
        if not isinstance(key, str) or not text.startswith(":", i):
            return (out or None), None
        i = ws.match(text, i + 1).end()
        try:
            value, i = decoder.raw_decode(text, i)
        except (ValueError, RecursionError):
            return (out or None), key
        out[key] = value
        i = ws.match(text, i).end()
        if text.startswith(",", i):
            i = ws.match(text, i + 1).end()
        else:
            break
    return (out or None), None


def _rename(
    text: str, names: Mapping[str, str], tmp: Path, labels: Mapping[Path, str] | None = None
) -> str:
    for temp, real in names.items():
        text = text.replace(temp, real)
    for temp, real in names.items():  # notes that name the file alone: its name, or its label
        f = Path(real.split("#")[0])  # when another file read has the same name
        shown = f"{labels[f]}{f.suffix}" if labels and f in labels else f.name
        text = text.replace(Path(temp).name, shown + _task_of(real))
    return text.replace(str(tmp) + "/", "").replace("the folder name", "the file name")


def _task_of(real: str) -> str:
    return f"#{real.split('#', 1)[1]}" if "#" in real else ""


def _renamed_error(exc: IngestError, names: Mapping[str, str]) -> IngestError:
    path = names.get(str(exc.path), exc.path) if exc.path is not None else None
    real_file = path.split("#")[0] if path else None
    reason = exc.reason
    if path and "#" in path:
        reason = f"{path.split('#', 1)[1]}: {reason}"
    return IngestError(reason, path=real_file, row=exc.row, column=exc.column)
