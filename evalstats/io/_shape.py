"""The structure of producers' JSON, checked before a value is read (issue 45).

A loader states, once, the types its producer documents for the fields it reads (HELM's
dataclasses, the Every Eval Ever JSON schemas) as a small spec, and :func:`problem` finds the
first field whose value has another type: an int where a list is expected, a statistic given as
a string, an integer too large for a float, an infinite epoch. The loader then raises one line
naming the file, the entry and the field, or sets the entry aside and counts it; a wrong type
never reaches the code that reads values (where it was a ``TypeError`` traceback).

A spec is one of:

- a tuple of type names (``"string"``, ``"integer"``, ``"number"``, ``"boolean"``, ``"array"``,
  ``"object"``): the value is of one of them;
- a dict ``{key: spec}``: the value is an object, and each key present is checked (the key
  ``"*"``: every value of the object);
- a list ``[spec]``: the value is an array, and each element is checked.

A field that is absent or null passes (the loaders read a missing field as not known). A
``"number"`` is finite and fits a float (``10**400``, ``Infinity`` and ``NaN`` are not numbers);
an ``"integer"`` is a whole number of at most 2**53 in magnitude (a float such as ``1e30`` is
not one).

Examples
--------
>>> spec = {"stats": [{"name": {"name": ("string",)}, "sum": ("number",)}]}
>>> problem({"stats": 7}, spec)
"field 'stats': expected an array, got an integer (7)"
>>> problem({"stats": [{"name": {"name": "em"}, "sum": "1"}]}, spec)
"field 'stats[0].sum': expected a number, got a string ('1')"
>>> problem({"stats": [{"name": {"name": "em"}, "sum": 10**400}]}, spec) is not None
True
>>> problem({"stats": [{"name": {"name": "em"}, "sum": 1.0}]}, spec) is None
True
"""

from __future__ import annotations

import math
from typing import Any

__all__ = [
    "DEFAULT_MAX_JSON_KEYS",
    "MAX_SAFE_INTEGER",
    "TooManyKeys",
    "finite",
    "integer",
    "json_type",
    "loads_bounded",
    "max_json_keys",
    "problem",
    "too_many_keys",
]

#: Default most keys of one JSON object in a producer's record (1,000): HELM's and Every Eval
#: Ever's objects hold a few dozen (none of the real files in ../shared/data holds more than
#: 500), and Every Eval Ever's ``additional_details`` become setting columns, so a record of
#: 20,000 keys made 20,000 columns (17 s for one record). Set ``EVALSTATS_MAX_JSON_KEYS``.
DEFAULT_MAX_JSON_KEYS = 1_000


class TooManyKeys(Exception):  # noqa: N818 -- not an error class of the API: caught by loaders
    """A JSON object with more keys than :func:`max_json_keys` (raised while parsing)."""

    def __init__(self, n: int, limit: int) -> None:
        super().__init__(n, limit)
        self.n, self.limit = n, limit

    def message(self) -> str:
        """The one line a loader shows."""
        return (
            f"a JSON object holds {self.n:,} keys, more than the {self.limit:,} evalstats reads "
            "in one object of a record (raise the limit with EVALSTATS_MAX_JSON_KEYS if the "
            "file is right)"
        )


def max_json_keys() -> int:
    """The most keys of one object, from ``EVALSTATS_MAX_JSON_KEYS`` or the default."""
    from evalstats.io._files import _env_limit

    return _env_limit("EVALSTATS_MAX_JSON_KEYS", DEFAULT_MAX_JSON_KEYS)


def too_many_keys(obj: Any, field: str) -> str | None:
    """The message when the object ``obj`` (at ``field``) has more keys than the limit.

    For objects whose keys become columns (Inspect's ``task_args`` and scorers), in formats
    whose other objects may rightly be large (an agentic sample's attachments).
    """
    limit = max_json_keys()
    if isinstance(obj, dict) and len(obj) > limit:
        return (
            f"field '{field}' holds {len(obj):,} keys, more than the {limit:,} evalstats reads "
            "in one object of a record (each becomes a column; raise the limit with "
            "EVALSTATS_MAX_JSON_KEYS if the file is right)."
        )
    return None


def loads_bounded(text: str | bytes) -> Any:
    """``json.loads`` that raises :class:`TooManyKeys` at the first object over the limit.

    Examples
    --------
    >>> loads_bounded('{"a": [1, {"b": 2}]}')
    {'a': [1, {'b': 2}]}
    >>> import json
    >>> try:
    ...     loads_bounded(json.dumps({str(i): i for i in range(max_json_keys() + 1)}))
    ... except TooManyKeys as exc:
    ...     exc.n
    1001
    """
    import json

    limit = max_json_keys()

    def hook(pairs: list[tuple[str, Any]]) -> dict:
        if len(pairs) > limit:
            raise TooManyKeys(len(pairs), limit)
        return dict(pairs)

    return json.loads(text, object_pairs_hook=hook)


#: Largest integer magnitude read as a whole number (a float holds every integer up to it).
MAX_SAFE_INTEGER = 2**53

_ARTICLE = {"integer": "an", "array": "an", "object": "an"}


def json_type(value: Any) -> str:
    """The JSON type name of a parsed value (``"integer"`` for a Python int)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def finite(value: Any) -> float | None:
    """``value`` as a finite float, or None (not a number, a bool, infinite, too large).

    Examples
    --------
    >>> finite(3), finite(float("inf")), finite(10**400), finite(True), finite("1")
    (3.0, None, None, None, None)
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        out = float(value)
    except OverflowError:
        return None
    return out if math.isfinite(out) else None


def integer(value: Any) -> int | None:
    """``value`` as a whole number of at most 2**53 in magnitude, or None.

    Examples
    --------
    >>> integer(3), integer(3.0), integer(1e30), integer(float("inf")), integer("3")
    (3, 3, None, None, None)
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if abs(value) <= MAX_SAFE_INTEGER else None
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value) if abs(value) <= MAX_SAFE_INTEGER else None
    return None


def _fits(value: Any, kind: str) -> bool:
    if kind == "number":
        return finite(value) is not None
    if kind == "integer":
        return isinstance(value, int) and integer(value) is not None
    return json_type(value) == kind


def _shown(value: Any) -> str:
    kind = json_type(value)
    if kind in ("array", "object"):
        return f"{_ARTICLE.get(kind, 'a')} {kind} of {len(value):,}"
    if kind == "integer" and abs(value) > MAX_SAFE_INTEGER:
        return f"an integer of {len(str(abs(value))):,} digits"
    text = repr(value)
    if len(text) > 40:
        text = text[:37] + "..."
    return f"{_ARTICLE.get(kind, 'a')} {kind} ({text})"


def _expected(kinds: tuple[str, ...]) -> str:
    names = [f"{_ARTICLE.get(k, 'a')} {k}" for k in kinds]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def problem(value: Any, spec: Any, field: str = "") -> str | None:
    """The first field of ``value`` whose type is not the one ``spec`` gives, or None.

    The text reads ``field 'a.b[2].c': expected a string, got an integer (7)``; with no
    ``field`` (the value itself is wrong) it reads ``expected ..., got ...``.
    """
    if value is None:
        return None
    if isinstance(spec, tuple):
        if any(_fits(value, k) for k in spec):
            return None
        return _say(field, _expected(spec), value)
    if isinstance(spec, dict):
        if not isinstance(value, dict):
            return _say(field, "an object", value)
        every = spec.get("*")
        if every is not None:
            for key, item in value.items():
                found = problem(item, every, f"{field}.{key}" if field else str(key))
                if found:
                    return found
        for key, sub in spec.items():
            if key != "*" and key in value:
                found = problem(value[key], sub, f"{field}.{key}" if field else key)
                if found:
                    return found
        return None
    if isinstance(spec, list):
        if not isinstance(value, list):
            return _say(field, "an array", value)
        for i, item in enumerate(value):
            found = problem(item, spec[0], f"{field}[{i}]")
            if found:
                return found
        return None
    raise TypeError(f"not a spec: {spec!r}")  # a bug in a loader's spec, not in the input


def _say(field: str, expected: str, value: Any) -> str:
    where = f"field '{field}': " if field else ""
    return f"{where}expected {expected}, got {_shown(value)}"
