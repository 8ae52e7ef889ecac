"""Column roles: recognised aliases and explicit mappings from source columns to canonical ones."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from evalstats._column_rules import normal_name
from evalstats.errors import ParameterError, SchemaError

__all__ = [
    "ALIASES",
    "FACTOR_ROLES",
    "IGNORE_ROLES",
    "ROLES",
    "parse_mapping",
    "resolve_roles",
    "split_pairs",
]

#: Canonical roles and the source column names recognised for each, in order of preference.
ALIASES: dict[str, tuple[str, ...]] = {
    "model": ("model", "model_name", "model_id"),
    "dataset": (
        "dataset",
        "task",
        "benchmark",
        "task_name",
        "dataset_name",
        "benchmark_id",
        "benchmark_name",
        "dataset_id",
        "subset",
    ),
    "item": (
        "item",
        "item_id",
        "input_id",
        "example_id",
        "doc_id",
        "sample_index",
        "sample_id",
        "rubric_id",
        "question_id",
        "problem_id",
        "id",
    ),
    "cluster": ("cluster", "cluster_id"),
    "variant": (
        "variant",
        "prompt",
        "prompt_id",
        "template",
        "prompt_variant",
        "config_id",
        "configuration",
    ),
    "run": ("run", "run_idx", "run_id", "seed", "epoch", "trial", "repeat", "repetition"),
    "score": (
        "score",
        "correct",
        "accuracy",
        "acc",
        "pass1",
        "pass@1",
        "is_correct",
        "exact_match",
    ),
    "metric": ("metric", "metric_name"),
    "metric_low": ("metric_low",),
    "metric_high": ("metric_high",),
    "higher_is_better": ("higher_is_better",),
    "n_items": ("n_items", "num_items", "num_questions"),
    "answer": (
        "answer",
        "pred",
        "prediction",
        "parsed_answer",
        "extracted_answer",
        "closest_answer",
    ),
    "response": (
        "response",
        "output",
        "generated_text",
        "completion",
        "raw_response",
        "raw_output",
    ),
    "gold": ("gold", "target", "gt", "ground_truth", "label", "reference", "answer_key"),
    "input_text": ("input_text", "question", "input", "prompt_text", "raw_input"),
    "input_len": ("input_len",),
    "output_len": ("output_len",),
    "gold_score": ("gold_score", "human_score", "human_label"),
    "latency_s": ("latency_s", "latency", "latency_seconds", "duration_s"),
    "error": ("error", "error_type", "failure"),
}

#: Roles a user may name in an explicit mapping, besides the canonical ones: ``factor`` and
#: ``prompt`` (a prompt dimension), ``setting`` (a decoding or serving setting, held fixed),
#: ``ignore``, ``text`` and ``metadata`` (read by no analysis).
ROLES = (*ALIASES, "factor", "prompt", "setting", "ignore", "text", "metadata")

#: Mapping roles that keep a column as a factor column, and those that leave it out.
FACTOR_ROLES = frozenset({"factor", "prompt", "setting"})
IGNORE_ROLES = frozenset({"ignore", "text", "metadata"})

#: Source columns never used as factors unless mapped explicitly (row ids, timestamps, blobs).
IGNORED_BY_DEFAULT = frozenset(
    {
        "",
        "index",
        "Unnamed: 0",
        "__index_level_0__",
        "date",
        "timestamp",
        "time",
        "created_at",
        "metadata",
        "doc",
        "arguments",
        "resps",
        "filtered_resps",
        "messages",
        "prompt_messages",
    }
)


def split_pairs(text: str, name: str, form: str) -> list[tuple[str, str]]:
    """``"a=b, c=d"`` as ``[("a", "b"), ("c", "d")]``; ``name`` and ``form`` word the error.

    Raises
    ------
    ParameterError
        An entry has no ``=``.

    Examples
    --------
    >>> split_pairs("prompt_id=variant, acc = score", "columns", "source=role")
    [('prompt_id', 'variant'), ('acc', 'score')]
    """
    out = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if "=" not in part:
            raise ParameterError(f"`{name}` entry {part!r} is not of the form {form}.")
        key, value = (x.strip() for x in part.split("=", 1))
        out.append((key, value))
    return out


def parse_mapping(spec: str | Mapping[str, str] | None) -> dict[str, str]:
    """Parse ``"prompt_id=variant,acc=score"`` (or a mapping) into ``{source: role}``.

    Raises
    ------
    ParameterError
        If an entry is not ``source=role`` or names an unknown role.

    Examples
    --------
    >>> parse_mapping("prompt_id=variant, acc=score")
    {'prompt_id': 'variant', 'acc': 'score'}
    """
    if spec is None:
        return {}
    if isinstance(spec, str):
        spec = dict(split_pairs(spec, "columns", "source=role (for example prompt_id=variant)"))
    mapping = dict(spec)
    for src, role in mapping.items():
        if role not in ROLES:
            raise ParameterError(
                f"`columns` maps {src!r} to {role!r}, which is not a role "
                f"(roles: {', '.join(ROLES)})."
            )
    return mapping


def resolve_roles(
    names: Sequence[str], mapping: Mapping[str, str] | None = None, *, path: str | None = None
) -> tuple[dict[str, str], list[str]]:
    """Decide the role of every source column.

    Explicit mappings win; then the first recognised alias of each role (case-insensitive);
    remaining columns become factors, except row ids and timestamps (``IGNORED_BY_DEFAULT``).

    Returns
    -------
    renames : dict
        ``{source: canonical}`` for columns with a canonical role.
    factors : list of str
        Source columns kept as factor columns, in file order.

    Raises
    ------
    SchemaError
        If a mapped source column does not exist, or two columns claim the same role.
    """
    mapping = dict(mapping or {})
    where = f"{path}: " if path else ""
    for src in mapping:
        if src not in names:
            raise SchemaError(
                f"{where}`columns` maps {src!r}, which is not a column of the file "
                f"(columns: {', '.join(names)})."
            )
    renames: dict[str, str] = {}
    taken: dict[str, str] = {}
    for src, role in mapping.items():
        if role in FACTOR_ROLES or role in IGNORE_ROLES:
            continue
        if role in taken:
            raise SchemaError(f"{where}both {taken[role]!r} and {src!r} are mapped to {role!r}.")
        renames[src] = role
        taken[role] = src
    # names compared as people read them: case, spaces and punctuation aside (`Model Name`
    # is `model_name`, `Problem-ID` is `problem_id`)
    lower: dict[str, list[str]] = {}
    for n in names:
        lower.setdefault(normal_name(n), []).append(n)
    for role, aliases in ALIASES.items():
        if role in taken:
            continue
        for alias in aliases:
            found = [n for n in lower.get(normal_name(alias), ()) if n not in mapping]
            if len(found) > 1:  # `Model` and `model`: which one is meant is not ours to guess
                a, b = found[:2]
                raise SchemaError(
                    f"{where}the columns {a!r} and {b!r} differ only in case or punctuation and both name "
                    f"the {role}; say which one it is and leave the other out, e.g. "
                    f"columns={{{a!r}: {role!r}, {b!r}: 'ignore'}} (CLI: --columns "
                    f"{a}={role},{b}=ignore)."
                )
            src = found[0] if found else None
            if src is not None and src not in renames:
                renames[src] = role
                taken[role] = src
                break
    factors = [
        n
        for n in names
        if n not in renames
        and mapping.get(n) not in IGNORE_ROLES
        and (mapping.get(n) in FACTOR_ROLES or n not in IGNORED_BY_DEFAULT)
    ]
    return renames, factors
