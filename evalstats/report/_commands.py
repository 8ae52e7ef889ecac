"""The ``evalstats`` command line that recomputes an analysis's main table on its own."""

from __future__ import annotations

import inspect
import re
import shlex
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from evalstats.report._model import resolve

if TYPE_CHECKING:
    from evalstats.report._model import AnalysisResult

__all__ = ["command_line", "option_spelling"]

#: Parameters each subcommand exposes as ``--flag`` (the flag is the name with dashes).
#: An analysis run with a non-default parameter outside this list has no command line.
_FLAGS: dict[str, frozenset[str]] = {
    "moments": frozenset({"by", "variant_factors"}),
    "nstar": frozenset(
        {
            "epsilon",
            "delta",
            "moments",
            "n_resamples",
            "method",
            "compat",
            "population_size",
            "seed",
            "by",
            "relative_epsilon",
            "relative_to",
            "variant_factors",
        }
    ),
    "converge": frozenset(
        {"batch", "mean_tol", "ci_width", "n_orders", "confidence_level", "seed"}
    ),
    "stability": frozenset({"by", "normalize", "on_mismatch"}),
    "normality": frozenset({"by", "method", "low_power_n"}),
    "correlate": frozenset({"method", "alternative", "n_resamples", "seed"}),
    "anova": frozenset(
        {"factors", "interactions", "ss_type", "n_resamples", "block", "runs", "seed"}
    ),
    "attribute": frozenset({"factors", "method", "n_null", "runs", "block", "seed"}),
    "intervals": frozenset(
        {
            "over",
            "method",
            "confidence_level",
            "cluster",
            "n_resamples",
            "seed",
            "by",
            "variant_factors",
        }
    ),
    "compare": frozenset(
        {
            "paired_on",
            "correction",
            "family",
            "method",
            "alternative",
            "confidence_level",
            "n_resamples",
            "seed",
            "power",
            "by",
            "over",
            "cluster",
            "variant_factors",
        }
    ),
    "noise": frozenset({"method", "confidence_level", "n_resamples", "seed", "by"}),
    "ppi": frozenset(
        {"gold", "lam", "confidence_level", "by", "over", "cluster", "variant_factors"}
    ),
    "audit": frozenset({"default", "claim", "confidence_level"}),
    "providers": frozenset({"provider", "method", "confidence_level", "n_resamples", "seed"}),
}

#: Parameters always written (required by the subcommand).
_REQUIRED = frozenset({"factors", "default"})

#: Loader options and their flags.
_LOADER_FLAGS = {
    "columns": "--columns",
    "on_invalid": "--on-invalid",
    "score_scale": "--score-scale",
    "rescale": "--rescale",
    "metric_range": "--metric-range",  # a list: the flag once per entry
    "lower_is_better": "--lower-is-better",
    "on_mismatch": "--on-mismatch",
    "metric_filter": "--metric",
    "roles": "--roles",
    "design_file": "--design",
    "model_name": "--model",
    "copies": "--keep-copies",  # a switch: no value
}


def _text(value: Any) -> str:
    if isinstance(value, dict):
        return ",".join(f"{k}={v}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value))
    return str(value)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return tuple(a) == tuple(b)
    return bool(a == b)


def command_line(result: AnalysisResult, source: dict[str, Any]) -> str | None:
    """``evalstats <command> PATH ... --json`` giving ``result``'s main table, or None.

    None when the analysis has no subcommand, the input was not a file, or a parameter was set
    that the subcommand does not expose.
    """
    command = result.command
    path = source.get("path")
    if command is None or not path:
        return None
    flags = _FLAGS.get(command, frozenset())
    parts = ["evalstats", command, shlex.quote(str(path))]
    if source.get("format"):
        parts += ["--format", shlex.quote(str(source["format"]))]
    for name, value in (source.get("options") or {}).items():
        if name not in _LOADER_FLAGS:
            return None
        if name == "copies":
            parts.append(_LOADER_FLAGS[name])
            continue
        for v in value if name == "metric_range" else [value]:
            parts += [_LOADER_FLAGS[name], shlex.quote(_text(v))]
    signature = inspect.signature(resolve(result.function)).parameters
    for name, value in result.params.items():
        default = signature[name].default
        if name not in _REQUIRED and _same(value, default):
            continue
        if name not in flags:
            return None
        parts += ["--" + name.replace("_", "-"), shlex.quote(_text(value))]
    return " ".join(parts) + " --json"


#: A parameter in backticks, alone (`batch`) or with a value (`interactions=1`).
_PARAM = re.compile(r"`([A-Za-z_][A-Za-z0-9_]*)(=[^`]*)?`")


#: Parameters the report sets from flags of its own rather than ``--option``.
_REPORT_FLAGS = {
    "factors": "--factors",
    "default": "--default",
    "variant_factors": "--variant-factors",
    "seed": "--seed",
}


def option_spelling(message: str, key: str, names: list[str]) -> str:
    """``message`` with the analysis's parameters as ``--option key.name=value`` (the CLI's).

    Analyses name their parameters as Python does (`` `interactions=1` ``); in the report they
    are set with ``--option anova.interactions=1``, and a skip reason suggests that spelling.

    Examples
    --------
    >>> option_spelling("Use `interactions=1` or lower `batch`.", "anova", ["interactions", "batch"])
    'Use `--option anova.interactions=1` or lower `--option anova.batch`.'
    """

    def spell(m: re.Match[str]) -> str:
        name, value = m.group(1), m.group(2) or ""
        if name in _REPORT_FLAGS:  # set for every analysis with a flag of its own
            return f"`{_REPORT_FLAGS[name]}{' ' + value[1:] if value else ''}`"
        if name not in names:
            return m.group(0)
        return f"`--option {key}.{name}{value}`"

    return _PARAM.sub(spell, message)


def _names_an_option(message: str, options: Mapping[str, Any]) -> bool:
    """Whether an analysis's error is about a value the user set with ``--option``."""
    return any(f"`{name}`" in message for name in options)
