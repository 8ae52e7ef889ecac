"""Which factor columns define *prompt variants*, and which are settings held fixed.

Factor columns (every non-canonical column of the observation table) say how a unit was
produced. Prompt sensitivity (moments over variants, ReliableEval's n*, the sequential
stopping rule) is a statement about **prompt variants**: rewordings, templates, separators,
answer enumerators, choice orders, few-shot sets. Decoding settings (temperature, top-p,
sampling seed, token limits) and the serving stack (provider, quantization) are not prompts: a
spread over temperatures is not a spread over prompts, and an n* over two temperatures says
nothing about how many paraphrases a benchmark needs.

Each factor column gets a **role** from its name:

``prompt``
    a known prompt dimension (``template``, ``paraphrase``, ``separator``, ``enumerator``,
    ``choices_order``, ``shots``, ``cot``, ``instruction``, ``system_prompt``, ...);
``decoding``
    a known generation setting (``temperature``, ``top_p``, ``top_k``, ``seed``,
    ``max_tokens``, ``presence_penalty``, ``reasoning_effort``, ...; also names that contain one
    of them, such as llm-stability's ``top_p_k`` or ``generation.temperature``);
``deployment``
    where and how the model was served (``provider``, ``quantization``, ``backend``, ...);
``other``
    anything else (a name evalstats does not know).

By default the variant factors are the ``prompt`` and ``other`` columns (an unknown column is
taken to be a prompt dimension, as before this rule existed, and results name it); ``decoding``
and ``deployment`` columns that vary are **held fixed**: they join the group columns, so each
decoding setting is analysed on its own and the variants of a group differ only in prompt
dimensions. ``variant_factors=[...]`` (``--variant-factors A,B``) names the variant factors
explicitly (every other varying factor is held fixed); ``variant_factors="all"`` treats every
factor column as a variant dimension (the behaviour without this rule).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable, Sequence

import polars as pl

from evalstats.errors import DesignWarning, SchemaError
from evalstats.schema import as_lazy, factor_columns

__all__ = [
    "DECODING_FACTORS",
    "decoding_only",
    "DEPLOYMENT_FACTORS",
    "PROMPT_FACTORS",
    "factor_role",
    "held_factors",
    "hold_fixed",
]

#: Names of known prompt dimensions (DOVE, State of What Art, ProSA, lm-eval, Inspect).
PROMPT_FACTORS = frozenset(
    {
        "template",
        "prompt",
        "prompt_template",
        "prompt_id",
        "paraphrase",
        "paraphrase_id",
        "instruction",
        "instructions",
        "system_prompt",
        "system_message",
        "separator",
        "enumerator",
        "choices_order",
        "choice_order",
        "shots",
        "n_shots",
        "num_fewshot",
        "fewshot",
        "few_shot",
        "demonstrations",
        "demos",
        "cot",
        "chain_of_thought",
        "format",
        "prompt_format",
        "answer_format",
        "language",
        "wording",
        "persona",
    }
)

#: Names of known decoding (generation) settings.
DECODING_FACTORS = frozenset(
    {
        "temperature",
        "top_p",
        "top_k",
        "min_p",
        "typical_p",
        "seed",
        "max_tokens",
        "max_new_tokens",
        "max_length",
        "presence_penalty",
        "frequency_penalty",
        "repetition_penalty",
        "length_penalty",
        "num_beams",
        "beam_size",
        "do_sample",
        "greedy",
        "sampling",
        "decoding",
        "logprobs",
        "top_logprobs",
        "stop",
        "reasoning_effort",
        "reasoning_tokens",
        "thinking_budget",
    }
)

#: Names of known serving-stack settings.
DEPLOYMENT_FACTORS = frozenset(
    {
        "provider",
        "quantization",
        "precision",
        "dtype",
        "backend",
        "endpoint",
        "api",
        "hardware",
        "region",
        "batch_size",
        "quant",
        "server",
        "server_build",
        "server_version",
        "build",
        "engine",
        "inference_engine",
        "serving_engine",
        "runtime",
        "gpu",
        "device",
        "accelerator",
    }
)

#: Decoding names that also count inside a longer name (``top_p_k``, ``gen.temperature``).
_DECODING_PARTS = ("temperature", "top_p", "top_k", "min_p", "penalty", "max_tokens", "beam")

ROLES = ("prompt", "decoding", "deployment", "other")


def _normal(name: str) -> str:
    return re.sub(r"[^0-9a-z]+", "_", name.strip().lower()).strip("_")


def factor_role(name: str) -> str:
    """The role of a factor column from its name: prompt, decoding, deployment or other.

    Examples
    --------
    >>> [factor_role(n) for n in ("template", "Temperature", "top_p_k", "provider", "lang_x")]
    ['prompt', 'decoding', 'decoding', 'deployment', 'other']
    """
    norm = _normal(name)
    tail = _normal(name.rsplit(".", 1)[-1])
    for candidate in (norm, tail):
        if candidate in PROMPT_FACTORS:
            return "prompt"
        if candidate in DECODING_FACTORS:
            return "decoding"
        if candidate in DEPLOYMENT_FACTORS:
            return "deployment"
    if any(part in norm for part in _DECODING_PARTS):
        return "decoding"
    return "other"


def _names(variant_factors: Sequence[str] | str | None) -> list[str] | str | None:
    if variant_factors is None or variant_factors == "all":
        return variant_factors
    if isinstance(variant_factors, str):
        return [v.strip() for v in variant_factors.split(",") if v.strip()]
    return list(variant_factors)


def held_factors(
    frame: pl.DataFrame | pl.LazyFrame,
    *,
    variant_factors: Sequence[str] | str | None = None,
    by: Iterable[str] = (),
) -> tuple[str, ...]:
    """Factor columns that vary but are not variant factors: held fixed as group columns.

    Parameters
    ----------
    frame : polars.DataFrame or polars.LazyFrame
        Observation or unit table.
    variant_factors : sequence of str, str or None, default None
        None: every factor column whose role is ``prompt`` or ``other`` (see the module notes).
        A list (or a comma-separated string): exactly these columns make the variants.
        ``'all'``: every factor column makes the variants (nothing held).
    by : iterable of str
        The group columns already asked for (not repeated).

    Returns
    -------
    tuple of str
        The held factors that take two or more values, in column order.

    Raises
    ------
    SchemaError
        ``variant_factors`` names a column that is not a factor column of the table.

    Examples
    --------
    >>> t = pl.DataFrame({"model": ["a"] * 4, "template": ["x", "y"] * 2,
    ...                   "temperature": [0.0, 0.0, 0.7, 0.7], "score": [0.5] * 4})
    >>> held_factors(t)
    ('temperature',)
    >>> held_factors(t, variant_factors="all")
    ()
    >>> held_factors(t, variant_factors=["temperature"])
    ('template',)
    """
    lf = as_lazy(frame)
    factors = factor_columns(lf.collect_schema().names())
    chosen = _names(variant_factors)
    if chosen == "all":
        return ()
    if chosen is None:
        candidates = [f for f in factors if factor_role(f) in ("decoding", "deployment")]
    else:
        unknown = [v for v in chosen if v not in factors]
        if unknown:
            raise SchemaError(
                f"`variant_factors` names {unknown[0]!r}, which is not a factor column of the "
                f"table (factor columns: {', '.join(factors) or 'none'})."
            )
        candidates = [f for f in factors if f not in chosen]
    seen = set(by)
    candidates = [f for f in candidates if f not in seen]
    if not candidates:
        return ()
    counts = lf.select(pl.col(c).n_unique() for c in candidates).collect().row(0)
    return tuple(c for c, k in zip(candidates, counts) if k > 1)


def hold_fixed(
    frame: pl.DataFrame | pl.LazyFrame,
    *,
    variant_factors: Sequence[str] | str | None = None,
    by: Iterable[str] = (),
) -> tuple[str, ...]:
    """:func:`held_factors`, with a :class:`~evalstats.errors.DesignWarning` naming them.

    The analyses over prompt variants call this and add the result to their group columns.
    """
    held = held_factors(frame, variant_factors=variant_factors, by=by)
    if held and variant_factors is None:
        roles = ", ".join(f"{h} ({factor_role(h)})" for h in held)
        warnings.warn(
            f"{roles} vary but are not prompt dimensions: analysed per value (added to the "
            "group columns), so the variants of a group differ only in prompt dimensions. "
            "Name the variant factors with `variant_factors` (--variant-factors) to change this.",
            DesignWarning,
            stacklevel=3,
        )
    return held


def decoding_only(
    frame: pl.DataFrame, *, variant_factors: Sequence[str] | str | None = None
) -> str | None:
    """Why there is no spread over prompts when the held factors are held fixed, else None.

    With the held factors (decoding or serving settings) added to ``model, dataset, metric``,
    a table whose groups have a single variant each has variants that differ only in those
    settings: the prompt-sensitivity analyses have nothing to measure.
    """
    held = held_factors(frame, variant_factors=variant_factors, by=("model", "dataset"))
    if not held:
        return None
    per_group = frame.group_by("model", "dataset", "metric", *held).agg(
        pl.col("variant").n_unique().alias("v")
    )
    if int(per_group["v"].max() or 0) >= 2:
        return None
    roles = ", ".join(f"{h} ({factor_role(h)})" for h in held)
    return (
        f"the variants differ only in {roles}, which are not prompt variants: there is no "
        "spread over prompts (use --variant-factors all to analyse them as variants)"
    )
