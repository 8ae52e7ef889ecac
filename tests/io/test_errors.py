"""Errored calls are observations: kept, classed and counted (``evalstats.io._errors``)."""

from __future__ import annotations

import polars as pl
import pytest

from evalstats.aggregate import read_units, to_units
from evalstats.io import read_table
from evalstats.io._errors import error_class, is_repetition
from evalstats.schema import validate_observations

LOOP = "The answer is " + "I think so. " * 12

DUMP = pl.DataFrame(
    {
        "model": ["m"] * 9,
        "provider": ["a"] * 5 + ["b"] * 4,
        "item": ["1", "2", "3", "4", "5", "1", "2", "3", "4"],
        "score": [1.0, 0.0, None, None, 0.0, 1.0, None, 0.0, None],
        "error": [None, None, "429 Too Many Requests", None, None, None, None, None, "boom"],
        "response": ["A", "B", None, LOOP, "long", "A", "  ", "xx", None],
        "finish_reason": ["stop"] * 3 + ["length", "length"] + ["stop", None, "length", None],
        "max_tokens": [100] * 9,
        "output_tokens": [3, 5, None, 100, 100, 4, 0, 50, None],
    }
)


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        ("429 Too Many Requests", "rate_limit"),
        ("RateLimitError: quota exceeded", "rate_limit"),
        ("Error code: 503 - Service Unavailable", "server_error"),
        ("502 Bad Gateway", "server_error"),
        ("504 Gateway Timeout", "timeout"),
        ("Request timed out after 600 s", "timeout"),
        ("404 model not found", "not_found"),
        ("400: parameter reasoning_effort is not supported", "not_found"),
        ("something broke", "api_error"),
        ("200", None),
        ("", None),
        ("empty", "empty"),
        ("truncated", "truncated"),
        # messages of real dumps (matthewrenze/jhu-llm-temperature, llm-judge-nondeterminism):
        # a filter or a stop reason named in the text says more than the HTTP code beside it
        (
            "Error: Error code: 400 - {'error': {'message': \"The response was filtered due to "
            "the prompt triggering Azure OpenAI's content management policy.\", 'code': "
            "'content_filter', 'status': 400}}",
            "content_filter",
        ),
        (
            "Error: The model response did not completed successfully.\nFinish reason: 3.\n"
            "Safety ratings: [category: HARM_CATEGORY_HATE_SPEECH",
            "content_filter",
        ),
        (
            "Error: The model response did not completed successfully.\nFinish reason: 2.\n"
            "Safety ratings: [category: HARM_CATEGORY_HATE_SPEECH",
            "truncated",
        ),
        ("Error: unsupported operand type(s) for +: 'NoneType' and 'str'", "api_error"),
        ("Error: 'choices'", "api_error"),
        ("Error: 503 Connection reset", "server_error"),
        (
            "Error code: 400 - {'message': '`temperature` is deprecated for this model.'}",
            "not_found",
        ),
        ("unsupported parameter: logit_bias", "not_found"),
    ],
)
def test_error_text_is_classed(raw, want):
    got = pl.select(error_class(pl.lit(raw, dtype=pl.String))).item()
    assert got == want


def test_http_status_numbers_are_classed():
    s = pl.Series([200, 429, 500, 404, 504, None])
    got = pl.select(error_class(pl.lit(s))).to_series().to_list()
    assert got == [None, "rate_limit", "server_error", "not_found", "timeout", None]
    flags = pl.Series([0.0, 1.0, 0.0])  # an error flag written as a float
    got = pl.select(error_class(pl.lit(flags))).to_series().to_list()
    assert got == [None, "api_error", None]


def test_repetition_needs_a_repeated_tail():
    assert is_repetition(LOOP)
    assert not is_repetition("A plain answer with no loop at all, ending normally.")
    assert not is_repetition("ok " * 3)


def test_errored_calls_are_kept_classed_and_counted(tmp_path):
    path = tmp_path / "dump.csv"
    DUMP.write_csv(path)
    obs, report = read_table(path)  # no flag: an errored call is not an invalid row
    got = obs.select("provider", "item", "score", "error").collect()
    assert got["error"].to_list() == [
        None,
        None,
        "rate_limit",
        "repetition",  # stopped for length while repeating a span
        "truncated",  # stopped for length at the requested max_tokens
        None,
        "empty",  # no score, blank response
        "provider_limit",  # stopped for length at 50 of 100 tokens asked
        "api_error",
    ]
    assert report.rows_read == report.rows_kept == 9
    assert report.rows_read == report.rows_kept + sum(report.set_aside.values())
    assert dict(report.errors) == {
        "api_error": 1,
        "empty": 1,
        "provider_limit": 1,
        "rate_limit": 1,
        "repetition": 1,
        "truncated": 1,
    }
    assert report.errors_unscored == 4
    assert "kept 6 errored calls" in report.summary()
    assert "finish_reason" not in got.columns  # folded into `error`, not a factor
    assert "finish_reason" not in obs.collect().columns


def test_analyses_read_scored_rows_only(tmp_path):
    path = tmp_path / "dump.csv"
    DUMP.write_csv(path)
    obs, _ = read_table(path)
    scored = validate_observations(obs).collect()
    assert scored.height == 5 and scored["score"].null_count() == 0
    everything = validate_observations(obs, errored="keep").collect()
    assert everything.height == 9
    units = to_units(obs).collect().sort("provider")
    # a: items 1, 2, 5 scored (1 + 0 + 0); b: items 1, 3 (1 + 0); errors counted among scored
    assert units["n_items"].to_list() == [3, 2]
    assert units["score"].to_list() == pytest.approx([1 / 3, 1 / 2])
    direct, report = read_units(path, progress=False)
    assert direct.sort("provider")["n_items"].to_list() == [3, 2]
    assert report.errors_unscored == 4


def test_null_score_without_an_error_is_still_invalid():
    obs = pl.DataFrame({"model": ["m"], "dataset": ["d"], "item": ["1"], "score": [None]})
    with pytest.raises(Exception, match="column 'score'"):
        validate_observations(obs.with_columns(pl.col("score").cast(pl.Float64))).collect()


def test_the_docs_list_every_error_class():
    """docs/methods/providers.md's table of classes stays the one the code uses."""
    from pathlib import Path

    from evalstats.io._errors import ERROR_CLASSES

    page = (Path(__file__).parents[2] / "docs" / "methods" / "providers.md").read_text()
    rows = {
        line.split("|")[1].strip().strip("`")
        for line in page.splitlines()
        if line.startswith("| `")
    }
    assert set(ERROR_CLASSES) <= rows
