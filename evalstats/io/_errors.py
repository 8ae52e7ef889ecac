"""Errored calls: what counts as an error, and its class.

A call that failed (an HTTP 429 or 503, a timeout, an exception, Inspect's ``sample.error``, an
empty response, a response cut at ``max_tokens``) is an observation of the provider or setup
that served it, not an invalid row: loaders keep it with its error class in the ``error``
column, and with a null score when none was recorded (see :func:`evalstats.io._pipeline.finalize`).
The classes are those of Epoch AI's provider audit ("Why benchmarking is hard"):

==================  ================================================================
class               the call
==================  ================================================================
``rate_limit``      was refused for rate or quota (HTTP 429, "rate limit", "quota")
``server_error``    failed on the server (HTTP 5xx other than 504, "overloaded")
``not_found``       named a model, endpoint or parameter the provider does not serve
                    (HTTP 404, 400, 405, 422, "not supported")
``timeout``         timed out (HTTP 408 or 504, "timed out", "deadline")
``empty``           returned an empty response
``truncated``       stopped at the requested ``max_tokens`` (finish reason ``length``;
                    a message naming Gemini's finish reason 2, ``MAX_TOKENS``)
``provider_limit``  stopped for length below the requested ``max_tokens``: the provider's
                    own output limit is lower than the one asked for
``repetition``      repeated a span until the length limit (a "doom loop")
``content_filter``  was blocked by a content filter (named in the text, even beside an
                    HTTP 400; Gemini's finish reason 3, ``SAFETY``)
``unparsed``        answered, but no answer could be extracted (loaders that parse)
``api_error``       any other recorded error (the text did not name a class)
==================  ================================================================

:func:`error_class` turns any recorded error (text, an HTTP code, a boolean flag, a finish
reason) into one of these; the canonical names map to themselves, so it can be applied twice.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

__all__ = [
    "ERROR_CLASSES",
    "FINISH_COLUMNS",
    "OUTPUT_TOKEN_COLUMNS",
    "REQUESTED_TOKEN_COLUMNS",
    "SIGNAL_COLUMNS",
    "error_class",
    "finish_class",
    "first_present",
    "fold_error_columns",
    "is_repetition",
    "repetition_class",
]

#: Error classes, each with a short description (used in reports).
ERROR_CLASSES: dict[str, str] = {
    "rate_limit": "rate limit (HTTP 429, quota)",
    "server_error": "server error (HTTP 5xx)",
    "not_found": "model or parameter not found or unsupported (HTTP 404/400)",
    "timeout": "timeout",
    "empty": "empty response",
    "truncated": "truncated at max_tokens",
    "provider_limit": "stopped below the requested max_tokens (provider's limit)",
    "repetition": "repetition loop until the length limit",
    "content_filter": "blocked by a content filter",
    "unparsed": "no answer extracted",
    "api_error": "other error",
}

#: Source columns that record an error (text, an HTTP status, an exception, a flag), in the
#: order they are preferred when a file has several.
SIGNAL_COLUMNS: tuple[str, ...] = (
    "error",
    "error_type",
    "failure",
    "error_message",
    "exception",
    "status_code",
    "http_status",
    "http_code",
)
#: Source columns that record why generation stopped.
FINISH_COLUMNS: tuple[str, ...] = ("finish_reason", "stop_reason")
#: Source columns with the requested output limit, and with the tokens actually produced.
REQUESTED_TOKEN_COLUMNS: tuple[str, ...] = ("max_tokens", "max_new_tokens", "max_output_tokens")
OUTPUT_TOKEN_COLUMNS: tuple[str, ...] = (
    "output_tokens",
    "completion_tokens",
    "n_output_tokens",
    "generated_tokens",
)

_CLEAN = (
    "",
    "none",
    "null",
    "nan",
    "ok",
    "success",
    "succeeded",
    "successful",
    "completed",
    "complete",
    "done",
    "false",
    "0",
    "no",
    "stop",
    "end_turn",
    "eos",
    "stop_sequence",
    "tool_calls",
    "tool_use",
    "function_call",
)


def error_class(raw: pl.Expr) -> pl.Expr:
    """The error class of a recorded error (null for a clean call).

    ``raw`` may be text, a number (an HTTP status: 2xx is clean) or a boolean flag. Text that
    names no class is ``api_error``.

    Examples
    --------
    >>> s = pl.Series(["429 Too Many Requests", "Error code: 503", "Request timed out", None,
    ...                "404 model not found", "ok", "boom", "length", "rate_limit"])
    >>> pl.select(error_class(pl.lit(s))).to_series().to_list()
    ['rate_limit', 'server_error', 'timeout', None, 'not_found', None, 'api_error', \
'truncated', 'rate_limit']
    """
    t = raw.cast(pl.String).str.strip_chars().str.to_lowercase()
    number = t.str.contains(r"^\d+(\.0+)?$")
    return (
        pl.when(
            t.is_null()
            | t.is_in(list(_CLEAN))
            | t.str.contains(r"^2\d\d(\.0+)?$")  # an HTTP 2xx
            | t.str.contains(r"^0+(\.0+)?$")  # a 0 / 0.0 flag
        )
        .then(pl.lit(None, dtype=pl.String))
        .when(t.is_in(list(ERROR_CLASSES)))
        .then(t)
        .when(t.is_in(["true", "1", "yes", "error", "failed", "failure", "fail"]))
        .then(pl.lit("api_error"))
        .when(t.str.contains(r"\b429\b|rate.?limit|too many requests|quota|resource.?exhausted"))
        .then(pl.lit("rate_limit"))
        .when(t.str.contains(r"\b40[8]\b|\b504\b|time.?out|timed out|deadline"))
        .then(pl.lit("timeout"))
        # a stop reason spelled out in the message (Gemini's FinishReason: 2 MAX_TOKENS,
        # 3 SAFETY, 4 RECITATION), then a filter named in the text: both say more than the
        # HTTP code they may come with (Azure refuses a filtered prompt with a 400)
        .when(t.str.contains(r"finish.?reason:?\s*(2|max_tokens)\b"))
        .then(pl.lit("truncated"))
        .when(
            t.str.contains(
                r"finish.?reason:?\s*([34]|safety|recitation)\b|content.?filter|"
                r"content management policy|safety|blocked|moderation"
            )
        )
        .then(pl.lit("content_filter"))
        .when(
            t.str.contains(
                r"\b40[045]\b|\b422\b|not.?found|not supported|does not support|"
                r"unsupported[ _](model|parameter|param|value|argument|feature|endpoint|request)|"
                r"no endpoints?|invalid.?request|invalid model|no such model|unknown model"
            )
        )
        .then(pl.lit("not_found"))
        .when(
            t.str.contains(
                r"\b5\d\d\b|server error|unavailable|bad gateway|overloaded|internal|upstream"
            )
        )
        .then(pl.lit("server_error"))
        .when(t.str.contains(r"repetit|doom.?loop|degenerat"))
        .then(pl.lit("repetition"))
        .when(t.str.contains(r"^length$|max.?(output.?|new.?)?tokens|truncat|model_length"))
        .then(pl.lit("truncated"))
        .when(t.str.contains(r"empty|no response|no content|no output"))
        .then(pl.lit("empty"))
        .when(number)
        .then(pl.lit("api_error"))
        .otherwise(pl.lit("api_error"))
    )


def finish_class(finish: pl.Expr) -> pl.Expr:
    """The error class of a finish (stop) reason: ``truncated``, ``content_filter`` or null.

    Examples
    --------
    >>> s = pl.Series(["stop", "length", "content_filter", "max_tokens", None, "end_turn"])
    >>> pl.select(finish_class(pl.lit(s))).to_series().to_list()
    [None, 'truncated', 'content_filter', 'truncated', None, None]
    """
    t = finish.cast(pl.String).str.strip_chars().str.to_lowercase()
    return (
        pl.when(t.str.contains(r"^(length|max.?(output.?|new.?)?tokens|model_length)$"))
        .then(pl.lit("truncated"))
        .when(t.str.contains(r"content.?filter|safety|blocked|refusal"))
        .then(pl.lit("content_filter"))
        .otherwise(pl.lit(None, dtype=pl.String))
    )


def is_repetition(text: str | None, *, min_repeats: int = 4, min_chars: int = 64) -> bool:
    """Whether ``text`` ends in one span repeated at least ``min_repeats`` times.

    The span may be 1 to 400 characters long (not only whitespace); the repeated tail must
    cover at least ``min_chars`` characters. A response that hit its length limit this way is
    a repetition loop.

    Examples
    --------
    >>> is_repetition("The answer is 4. " + "I think so. " * 20)
    True
    >>> is_repetition("The answer is 4 because 2 + 2 = 4, as everyone knows.")
    False
    """
    if not text:
        return False
    tail = text.rstrip()[-4000:]
    n = len(tail)
    for p in range(1, min(400, n // min_repeats) + 1):
        block = tail[n - p :]
        if not block.strip():
            continue
        k = 1
        while k * p + p <= n and tail[n - (k + 1) * p : n - k * p] == block:
            k += 1
        if k >= min_repeats and k * p >= min_chars:
            return True
    return False


def repetition_class(error: pl.Expr, response: pl.Expr) -> pl.Expr:
    """``error``, with a truncated call whose response repeats a span reclassed ``repetition``.

    Only the truncated rows' responses are examined.
    """

    def _classify(s: pl.Series) -> pl.Series:
        err = s.struct.field("e")
        cut = err.is_in(["truncated", "provider_limit"]).fill_null(False).to_numpy()
        out = err.to_list()
        if cut.any():
            texts = s.struct.field("r").to_list()
            for i in np.flatnonzero(cut):
                if is_repetition(texts[i]):
                    out[i] = "repetition"
        return pl.Series(out, dtype=pl.String)

    return pl.struct(error.alias("e"), response.cast(pl.String).alias("r")).map_batches(
        _classify, return_dtype=pl.String
    )


def first_present(names: Sequence[str], candidates: Sequence[str]) -> str | None:
    """The first of ``candidates`` (case-insensitive) among ``names``, as spelled there."""
    lower = {n.lower(): n for n in names}
    for c in candidates:
        if c in lower:
            return lower[c]
    return None


def fold_error_columns(
    lf: pl.LazyFrame, names: Sequence[str], explicit: Sequence[str] = ()
) -> tuple[pl.LazyFrame, list[str], str | None]:
    """One ``error`` column from every column of a file that records how a call ended.

    Error text, HTTP status codes, exceptions (:data:`SIGNAL_COLUMNS`) and finish reasons
    (:data:`FINISH_COLUMNS`) are classed (:func:`error_class`, :func:`finish_class`) and the
    first class found is the call's; a call stopped for length with fewer output tokens than
    requested (:data:`OUTPUT_TOKEN_COLUMNS` below 95 % of :data:`REQUESTED_TOKEN_COLUMNS`) is
    ``provider_limit``. Nothing is done when the file has only one plain error column (the
    loader maps it as it is) or when the user mapped these columns (``explicit``).

    Returns
    -------
    (LazyFrame, list of str, str or None)
        The frame, its column names, and a note saying what was folded (None: nothing).
    """
    free = [n for n in names if n not in set(explicit)]
    signals = [n for n in free if n.lower() in SIGNAL_COLUMNS]
    finish = [n for n in free if n.lower() in FINISH_COLUMNS]
    if (
        not finish
        and len(signals) < 2
        and not any(n.lower() not in ("error", "error_type", "failure") for n in signals)
    ):
        return lf, list(names), None
    if not signals and not finish:
        return lf, list(names), None
    order = sorted(signals, key=lambda n: SIGNAL_COLUMNS.index(n.lower()))
    parts = [error_class(pl.col(n)) for n in order]
    if finish:
        cut = pl.coalesce([finish_class(pl.col(n)) for n in finish])
        asked = first_present(free, REQUESTED_TOKEN_COLUMNS)
        used = first_present(free, OUTPUT_TOKEN_COLUMNS)
        if asked is not None and used is not None:
            below = pl.col(used).cast(pl.Float64, strict=False) < 0.95 * pl.col(asked).cast(
                pl.Float64, strict=False
            )
            cut = (
                pl.when((cut == "truncated") & below.fill_null(False))
                .then(pl.lit("provider_limit"))
                .otherwise(cut)
            )
        parts.append(cut)
    folded = [*order, *finish]
    lf = lf.with_columns(pl.coalesce(parts).alias("__error_folded")).drop(folded)
    lf = lf.rename({"__error_folded": "error"})
    out = [n for n in names if n not in folded] + ["error"]
    note = f"error classes read from {', '.join(folded)}"
    return lf, out, note
