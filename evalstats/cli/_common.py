"""Options and output shared by every subcommand (input loading, --json, --out)."""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalstats._text import for_terminal
from evalstats.errors import ParameterError

if TYPE_CHECKING:
    import polars as pl

__all__ = [
    "add_input_arguments",
    "add_output_arguments",
    "add_target_arguments",
    "add_variant_factors_argument",
    "cli_spelling",
    "warnings_to_stderr",
    "emit",
    "load",
    "loader_options",
    "params_from",
    "warned",
    "write_table",
]


#: The ``--format`` names, in :data:`evalstats.io.FORMATS` order. Spelled out here so that
#: building the parser (``evalstats --help``) does not import the loaders and polars; a test
#: checks the two lists agree.
FORMAT_NAMES: tuple[str, ...] = (
    "dove",
    "llm-stability",
    "lm-eval",
    "lm-eval-api",
    "arena-hard",
    "lighteval",
    "bfcl",
    "inspect",
    "reliable-eval",
    "state-of-what-art",
    "openai-evals",
    "helm",
    "every-eval-ever",
    "json-records",
    "table",
)


def add_input_arguments(
    parser: argparse.ArgumentParser,
    *,
    item_sets: bool = True,
    mismatch: str = "error",
    format_flag: str = "--format",
) -> None:
    """PATH and the loader options every analysis command takes (same as ``ingest``).

    With ``item_sets`` (every analysis command and the report) also ``--on-mismatch``, the one
    rule for runs that cover different items (:func:`evalstats.aggregate.align_item_sets`),
    applied by :func:`load`. ``format_flag`` names the input format's flag (``export`` says
    ``--from``: its ``--format`` is the format written).
    """
    parser.add_argument("path", metavar="PATH", help="file, glob or folder of a prediction dump")
    parser.add_argument(
        format_flag,
        dest="format",
        default="auto",
        choices=["auto", *FORMAT_NAMES],
        help="source format (default: detect)",
    )
    parser.add_argument(
        "--columns",
        default=argparse.SUPPRESS,
        metavar="SRC=ROLE,...",
        help="explicit column roles, e.g. prompt_id=variant,acc=score",
    )
    parser.add_argument(
        "--on-invalid",
        dest="on_invalid",
        choices=["error", "skip"],
        default=argparse.SUPPRESS,
        help="invalid rows: stop with an error (default) or set aside and count",
    )
    parser.add_argument(
        "--score-scale",
        dest="score_scale",
        choices=["auto", "unit", "percent"],
        default=argparse.SUPPRESS,
        help="keep scores as they are (auto, the default, notes files that look like "
        "percentages; unit does not) or divide them by 100 (percent)",
    )
    parser.add_argument(
        "--rescale",
        type=float,
        default=argparse.SUPPRESS,
        metavar="DIVISOR",
        help="divide every score by DIVISOR, e.g. 100 for percentages; nothing is rescaled "
        "unless asked",
    )
    parser.add_argument(
        "--metric-range",
        dest="metric_range",
        action="append",
        default=argparse.SUPPRESS,
        metavar="[NAME=]LO,HI",
        help="declare the metric's bounds, after any --rescale (LO or HI empty or inf: "
        "unbounded); with NAME= for one metric; repeatable",
    )
    parser.add_argument(
        "--lower-is-better",
        dest="lower_is_better",
        nargs="?",
        const="*",
        default=argparse.SUPPRESS,
        metavar="NAME,...",
        help="the metric (or the named metrics) is an error, loss, latency or cost: lower "
        "is better",
    )
    parser.add_argument(
        "--metric",
        dest="metric_filter",
        default=argparse.SUPPRESS,
        metavar="NAME,...|TASK=NAME,...",
        help="analyse only these metrics (lm-eval: the metric to read, for every task or per "
        "task as boolq=acc,truthfulqa_gen=bleu_acc; Inspect: the scorer)",
    )
    parser.add_argument(
        "--roles",
        dest="roles",
        default=argparse.SUPPRESS,
        metavar="COL=ROLE,...",
        help="the role of a column, over every rule: model, dataset, item, cluster, variant, "
        "prompt, setting, run, score, answer, response, gold, text, metadata (e.g. "
        "prompt_id=variant,passage=cluster,request_timeout=setting,ticket=text); see "
        "`evalstats design`",
    )
    parser.add_argument(
        "--design",
        dest="design_file",
        type=Path,
        default=argparse.SUPPRESS,
        metavar="FILE",
        help="a design file (`evalstats design PATH --out design.toml`, edited): its [roles] "
        "apply; --roles wins over it",
    )
    parser.add_argument(
        "--model",
        dest="model_name",
        default=argparse.SUPPRESS,
        metavar="NAME",
        help="the model of a table without a model column",
    )
    parser.add_argument(
        "--dataset",
        dest="dataset_name",
        default=argparse.SUPPRESS,
        metavar="NAME",
        help="the dataset of a table without a dataset column (default: the file's name); "
        "--roles file=model reads one file per model, file=dataset one per dataset",
    )
    parser.add_argument(
        "--records",
        default=argparse.SUPPRESS,
        metavar="PATH.TO.LIST",
        help="JSON files: where the records are, a dotted path ('data.items'; '*' every value; "
        "'{model}' every value, its key kept as the column model)",
    )
    parser.add_argument(
        "--keep-copies",
        dest="copies",
        action="store_const",
        const="keep",
        default=argparse.SUPPRESS,
        help="read files that are byte-for-byte copies of an earlier file like any file "
        "(default: their rows are set aside as duplicate_file)",
    )
    if item_sets:
        parser.add_argument(
            "--on-mismatch",
            dest="on_mismatch",
            choices=["error", "intersect", "keep", *(["auto"] if mismatch == "auto" else [])],
            default=mismatch,
            help="repeated runs of a configuration that cover different items: stop, analyse "
            "the items every run scored (biases TAR upward), or keep each run's own items"
            + (
                "; auto (the default): run means over each run's own items, TAR and the "
                "stability table over the items every run scored, and the report says so"
                if mismatch == "auto"
                else " (default: stop)"
            ),
        )


def add_output_arguments(parser: argparse.ArgumentParser) -> None:
    """``--out`` and ``--json``."""
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="write the result table to .parquet, .csv or .jsonl (default: CSV on stdout)",
    )
    parser.add_argument(
        "--json", action="store_true", help='print {"command", "params", "rows"} as JSON on stdout'
    )


_LOADER_OPTIONS = ("columns", "on_invalid", "score_scale", "records")


def _bound(text: str, flag: str) -> float | None:
    t = text.strip().lower()
    if t in ("", "inf", "+inf", "-inf", "none"):
        return None
    try:
        v = float(t)
    except ValueError:
        raise ParameterError(f"`{flag}` bound {text!r} is not a number.") from None
    if not math.isfinite(v):
        raise ParameterError(f"`{flag}` bound {text!r} is not finite; leave it empty instead.")
    return v


def _metric_range(specs: list[str]) -> Any:
    """``['0,1']`` -> (0.0, 1.0); ``['bleu=0,100', 'mae=0,']`` -> {name: (lo, hi)}."""
    named: dict[str, tuple[float | None, float | None]] = {}
    unnamed = None
    for spec in specs:
        name, _, rng = spec.rpartition("=")
        parts = rng.split(",")
        if len(parts) != 2:
            raise ParameterError(
                f"`--metric-range` must be LO,HI or NAME=LO,HI (e.g. 0,100 or mae=0,), got {spec!r}."
            )
        value = (_bound(parts[0], "--metric-range"), _bound(parts[1], "--metric-range"))
        if name:
            named[name.strip()] = value
        else:
            unnamed = value
    if unnamed is not None and named:
        raise ParameterError("`--metric-range` is given both for all metrics and for named ones.")
    return unnamed if unnamed is not None else named


def loader_options(args: argparse.Namespace) -> dict[str, Any]:
    """The loader options the user set, with the metric options in their library form."""
    fmt = getattr(args, "format", "auto")
    options = {k: getattr(args, k) for k in _LOADER_OPTIONS if hasattr(args, k)}
    options.update(getattr(args, "loader_options", {}) or {})
    if hasattr(args, "rescale"):
        if "score_scale" in options:
            raise ParameterError("give either `--score-scale` or `--rescale`, not both.")
        options["score_scale"] = args.rescale
    if hasattr(args, "metric_range"):
        options["metric_range"] = _metric_range(args.metric_range)
    if hasattr(args, "lower_is_better"):
        names = [n.strip() for n in args.lower_is_better.split(",") if n.strip()]
        options["higher_is_better"] = False if names in ([], ["*"]) else dict.fromkeys(names, False)
    if hasattr(args, "metric_filter"):
        names = [n.strip() for n in args.metric_filter.split(",") if n.strip()]
        if fmt == "auto":  # route --metric by the detected format
            from evalstats.io import detect_format

            fmt = detect_format(args.path)
        lm_eval = fmt in ("lm-eval", "lm-eval-api", "lighteval")
        if lm_eval and any("=" in n for n in names):
            options["metric"] = args.metric_filter  # TASK=NAME,...: one metric per task
        elif (lm_eval or fmt == "inspect") and len(names) == 1:
            options["metric" if lm_eval else "scorer"] = names[0]
        else:
            options["metrics"] = names
    return options


def roles_of(args: argparse.Namespace) -> dict[str, str]:
    """The explicit roles: the design file's ``[roles]``, then ``--roles`` over them."""
    from evalstats.design import parse_roles, read_design_file

    roles: dict[str, str] = {}
    if getattr(args, "design_file", None) is not None:
        roles.update(read_design_file(args.design_file))
    if getattr(args, "roles", None):
        roles.update(parse_roles(args.roles))
    return roles


def load(args: argparse.Namespace):
    """Read ``args.path`` with the loader options the user set, and apply its design.

    Prints the ingest report and the design's one-line account to stderr; the design is kept
    as ``args.design`` (the report opens with it; the prompt analyses take their prompt
    factors from it).
    """
    from evalstats.design._read import table_roles
    from evalstats.io import detect_format, read

    options = loader_options(args)
    roles = roles_of(args)
    fmt = args.format
    if fmt == "auto" and (roles or hasattr(args, "model_name") or hasattr(args, "dataset_name")):
        fmt = detect_format(args.path) if not isinstance(args.path, list) else "table"
    design_roles = roles
    if roles and fmt == "table":
        # a table is read with the roles: a text column is never read, an alias not applied
        # (a table in memory is read the same way: evalstats.design.read_frame)
        options["columns"], design_roles = table_roles(roles, options.get("columns"))
    if hasattr(args, "model_name"):
        options["model"] = args.model_name
    if hasattr(args, "dataset_name"):
        options["dataset"] = args.dataset_name
    if hasattr(args, "copies"):
        options["copies"] = args.copies
    ingest = read(args.path, format=args.format, **options)
    if not getattr(args, "quiet", False):
        print(ingest.report.summary(), file=sys.stderr)
    report = ingest.report
    if report.rows_kept == 0:
        from evalstats.errors import IngestError

        why = ", ".join(f"{n} {r}" for r, n in sorted(report.set_aside.items()) if n)
        raise IngestError(
            f"no rows left to analyse ({report.rows_read} read"
            + (f"; set aside: {why}" if why else "")
            + ").",
            path=", ".join(map(str, args.path)) if isinstance(args.path, list) else str(args.path),
        )
    ingest = _applied(ingest, design_roles, args)
    rule = getattr(args, "on_mismatch", None)
    if rule is not None and rule != "auto":
        import warnings

        from evalstats.aggregate import align_item_sets
        from evalstats.io import Ingest

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            obs = align_item_sets(ingest.observations, on_mismatch=rule)
        for w in caught:
            print(f"evalstats: warning: {for_terminal(str(w.message))}", file=sys.stderr)
        ingest = Ingest(obs, ingest.report)
    return ingest


def _applied(ingest, roles, args):
    from evalstats.design import design_and_table, headline
    from evalstats.io import Ingest

    design, table = design_and_table(ingest.observations, ingest=ingest.report, roles=roles)
    if getattr(args, "design_file", None) is not None:
        import dataclasses

        from evalstats.design._files import structure_note

        note = structure_note(args.design_file, design)
        if note is not None:  # the same columns, another dump: said, and kept on the design
            design = dataclasses.replace(design, notes=(*design.notes, note))
            print(f"evalstats: note: {note}", file=sys.stderr)
    args.design = design
    if not getattr(args, "quiet", False):
        print(f"design: {headline(design)} (evalstats design PATH shows it)", file=sys.stderr)
    return Ingest(table, ingest.report)


def warned(fn: Any, /, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``, its warnings printed as ``evalstats: warning: ...`` lines.

    What an analysis dropped (unpaired items, configurations one model lacks) reaches the user
    as one plain line on stderr rather than Python's two-line warning with a source line.
    """
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn(*args, **kwargs)
    seen: set[str] = set()
    for w in caught:
        text = str(w.message)
        if text not in seen:
            seen.add(text)
            print(f"evalstats: warning: {for_terminal(text)}", file=sys.stderr)
    return out


def _variant_factors(text: str) -> str | list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise argparse.ArgumentTypeError("expected 'all' or factor names separated by commas")
    return "all" if names == ["all"] else names


def add_variant_factors_argument(parser: argparse.ArgumentParser) -> None:
    """``--variant-factors``: which factor columns make the prompt variants (library default)."""
    parser.add_argument(
        "--variant-factors",
        dest="variant_factors",
        type=_variant_factors,
        default=argparse.SUPPRESS,
        metavar="A,B,...|all",
        help="factor columns whose combinations are the prompt variants (default: the prompt "
        "dimensions; decoding settings such as temperature and serving settings such as "
        "provider are held fixed and analysed per value); 'all' makes every factor column a "
        "variant dimension",
    )


def add_target_arguments(parser: argparse.ArgumentParser, *, over: bool = True) -> None:
    """``--over``, ``--cluster`` and ``--variant-factors`` for ``compare`` and ``ppi``.

    They say what an interval is about: the design's target (auto) or the recorded prompts.
    """
    if over:
        parser.add_argument(
            "--over",
            choices=["auto", "recorded-prompts", "prompt-space"],
            default=None,
            help="target of the interval (default: auto = items, in clusters when the design "
            "has them, and the prompt space when there are 3 or more prompt variants; with 2 "
            "the recorded prompts, with a caveat; recorded-prompts conditions on the prompts "
            "that were run; prompt-space asks for the prompt space from 2 variants on)",
        )
    parser.add_argument(
        "--cluster",
        default=None,
        metavar="COLUMN",
        help="column naming item clusters (default: the design's cluster column, if any)",
    )
    add_variant_factors_argument(parser)


def params_from(args: argparse.Namespace, *names: str) -> dict[str, Any]:
    """The options among ``names`` that the user set (unset ones are not passed on).

    ``variant_factors`` the user did not set comes from the design (``args.design``): the
    prompt factors it decided, when the table has factor columns that vary.
    """
    out = {n: getattr(args, n) for n in names if hasattr(args, n) and getattr(args, n) is not None}
    if "variant_factors" in names and "variant_factors" not in out:
        chosen = design_variant_factors(getattr(args, "design", None))
        if chosen is not None:
            out["variant_factors"] = chosen
    return out


def design_variant_factors(design: Any) -> list[str] | None:
    """The prompt factors of ``design`` as ``variant_factors``, when it holds settings fixed.

    Without varying settings or explicit roles the analyses' own rule gives the same groups,
    and nothing is passed (the recorded parameters stay the user's).
    """
    if design is None or not (design.held or design.roles):
        return None
    return list(design.prompt_factors)


def _jsonable(v: Any) -> Any:
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return None
    if isinstance(v, Path):
        return str(v)
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, Mapping):
        return {str(k): _jsonable(x) for k, x in v.items()}
    return v


def write_table(frame: pl.DataFrame, out: Path) -> None:
    """Write ``frame`` to ``out`` by suffix (.parquet, .csv, .jsonl)."""
    from evalstats._output import csv_safe, writing

    suffix = out.suffix.lower()
    if suffix not in (".parquet", ".pq", ".csv", ".jsonl", ".ndjson", ".json"):
        raise ParameterError(
            f"`--out` must end in .parquet, .csv, .jsonl or .json, got {out.name!r}."
        )
    with writing(out):
        out.parent.mkdir(parents=True, exist_ok=True)
        if suffix in (".parquet", ".pq"):
            frame.write_parquet(out)
        elif suffix == ".csv":
            # a cell such as `=HYPERLINK(...)` would run when the file is opened in a spreadsheet
            csv_safe(_flat(frame)).write_csv(out)
        elif suffix in (".jsonl", ".ndjson"):
            frame.write_ndjson(out)
        else:
            out.write_text(
                json.dumps(_jsonable(frame.to_dicts()), indent=2, default=str, allow_nan=False)
            )
    if suffix in (".jsonl", ".ndjson", ".json"):
        _note_nonfinite(frame, out)


def _note_nonfinite(frame: pl.DataFrame, out: Path) -> None:
    """Say on stderr how many NaN or infinite cells a JSON file holds as null."""
    floats = [c for c, t in frame.schema.items() if t.is_float()]
    counts = {
        c: n for c in floats if (n := int((frame[c].is_nan() | frame[c].is_infinite()).sum()))
    }
    if counts:
        cells = ", ".join(f"{c} {n}" for c, n in counts.items())
        print(
            f"note: {out.name}: {sum(counts.values())} value(s) that are NaN or infinite "
            f"written as null (JSON has neither; {cells}); the CSV and Parquet outputs keep them.",
            file=sys.stderr,
        )


def _flat(frame: pl.DataFrame) -> pl.DataFrame:
    """CSV cannot hold list columns: write them as JSON-like strings."""
    import polars as pl

    nested = [c for c, t in frame.schema.items() if isinstance(t, (pl.List, pl.Array, pl.Struct))]
    if not nested:
        return frame
    return frame.with_columns(
        pl.col(c).map_elements(
            lambda v: json.dumps(_jsonable(v.to_list() if hasattr(v, "to_list") else v)),
            return_dtype=pl.String,
        )
        for c in nested
    )


def emit(
    frame: pl.DataFrame,
    args: argparse.Namespace,
    *,
    command: str,
    params: Mapping[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> None:
    """Write a result table the way every command does: --json, --out, or on stdout.

    On stdout: CSV when piped or redirected; on a terminal the essential columns as an aligned
    table and the command's verdict line (:mod:`evalstats.cli._terminal`).
    """
    if getattr(args, "out", None) is not None:
        write_table(frame, args.out)
        print(f"wrote {args.out}", file=sys.stderr)
    if getattr(args, "json", False):
        doc: dict[str, Any] = {
            "command": command,
            "params": _jsonable(dict(params or {})),
            "rows": _jsonable(frame.to_dicts()),
        }
        if extra:
            doc.update(_jsonable(dict(extra)))
        sys.stdout.write(json.dumps(doc, default=str) + "\n")
    elif getattr(args, "out", None) is None:
        from evalstats._output import csv_safe
        from evalstats.cli._terminal import VIEWS, on_terminal, readable

        if on_terminal():  # a person reads it: the essential columns and the verdict
            sys.stdout.write(readable(frame, VIEWS.get(command)))
        else:  # a pipe or a file: the full table, as CSV, formula-like cells neutralised
            sys.stdout.write(csv_safe(_flat(frame)).write_csv())


#: A parameter in backticks, alone (`factors`) or with a value (`interactions=1`).
_PARAM = re.compile(r"`([A-Za-z_][A-Za-z0-9_]*)(=[^`]*)?`")


def cli_spelling(message: str, parser: argparse.ArgumentParser, command: str | None) -> str:
    """``message`` with the library's parameter names as the command's flags.

    Library errors name parameters as Python spells them (`` `factors` ``, `` `interactions=1` ``);
    on the command line the user typed ``--factors`` and would type ``--interactions 1``. Names
    that are not flags of ``command`` are left alone.

    Examples
    --------
    >>> p = argparse.ArgumentParser()
    >>> sub = p.add_subparsers(dest="command")
    >>> a = sub.add_parser("anova")
    >>> _ = a.add_argument("--factors")
    >>> _ = a.add_argument("--interactions", type=int)
    >>> cli_spelling("`factors` names 'x'. Use `interactions=1` or `seed`.", p, "anova")
    "`--factors` names 'x'. Use `--interactions 1` or `seed`."
    """
    sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
    target = sub.choices.get(command) if sub is not None and command else parser
    if target is None:
        return message
    # the flag named like the parameter (dashes for underscores; `options` is --option), not
    # the flag whose dest it is: a command may reuse a name (correlate's --columns is the
    # library's `columns`, the loader's --columns there is --roles)
    strings = {o for action in target._actions for o in action.option_strings}

    def flag(name: str) -> str | None:
        dashed = "--" + name.replace("_", "-")
        for candidate in (dashed, dashed.removesuffix("s")):
            if candidate in strings:
                return candidate
        return None

    def spell(m: re.Match[str]) -> str:
        name, value = m.group(1), m.group(2)
        found = flag(name)
        if found is None or found in message:  # no such flag, or already spelled out
            return m.group(0)
        return f"`{found}{' ' + value[1:] if value else ''}`"

    return _PARAM.sub(spell, message)


@contextmanager
def warnings_to_stderr() -> Iterator[None]:
    """Print the warnings raised inside as ``evalstats: warning: ...`` lines (each once)."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    for message in dict.fromkeys(str(w.message) for w in caught):
        print(f"evalstats: warning: {for_terminal(message)}", file=sys.stderr)
