"""Structural fuzzing of producers' files, one generator per format (issue 45, item 5).

Each case (``tests/fuzz/structure.py``) takes a real producer-written file set from
``fixtures/`` and swaps the type of one field, nests it, truncates it or inflates it (a huge
integer, 1e30, an infinite number, 20,000 keys or entries, a 1 MB string). ``evalstats ingest``
then either succeeds with counts that add up or exits 2 with one line; it never shows a
traceback, and no case runs past :data:`CASE_SECONDS` (a read past the caps would).

The default run tries :data:`FAST_CASES` seeds per format; ``-m slow`` runs :data:`LONG_CASES`
(60 per format, 300 in all), and ``EVALSTATS_FUZZ_CASES=N`` sets the number for both. A failing
case names its format and seed: ``make_case(fmt, seed, tmp)`` rebuilds it.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import time

import pytest

from evalstats.cli import main
from evalstats.errors import EvalstatsError
from tests.fuzz.structure import GENERATORS, argv, make_case

FAST_CASES = 6
LONG_CASES = 60

#: Longest a case may take (seconds): the slowest of a 300-case run took 4.5 s on a shared
#: 2-core machine; a reader that ran past its caps (a 20,000-key record: 17 s) would not fit.
CASE_SECONDS = 30.0


def _cases(default: int) -> int:
    raw = os.environ.get("EVALSTATS_FUZZ_CASES", "").strip()
    return int(raw) if raw.isdigit() and int(raw) > 0 else default


def run_case(fmt: str, seed: int, tmp) -> tuple[str, float]:
    """Run one case; return its outcome (``read``, ``refused``) and its time. Fails otherwise."""
    path, what = make_case(fmt, seed, tmp)
    out, err = io.StringIO(), io.StringIO()
    start = time.perf_counter()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv(fmt, path))
    except EvalstatsError:  # main turns these into exit 2; one escaping is a bug too
        raise
    except Exception as exc:  # a traceback: the case and its seed say how to rebuild it
        raise AssertionError(f"{fmt} seed {seed} ({what}): {type(exc).__name__}: {exc}") from exc
    elapsed = time.perf_counter() - start
    text = err.getvalue()
    assert "Traceback" not in text, (fmt, seed, what, text[-2000:])
    assert elapsed < CASE_SECONDS, (fmt, seed, what, elapsed)
    if code == 0:
        report = json.loads(out.getvalue().strip().splitlines()[-1])["report"]
        assert report["rows_read"] == report["rows_kept"] + sum(report["set_aside"].values()), (
            fmt,
            seed,
            what,
        )
        return "read", elapsed
    assert code == 2, (fmt, seed, what, code, text[-2000:])
    lines = [ln for ln in text.splitlines() if ln.startswith("evalstats: error: ")]
    assert len(lines) == 1, (fmt, seed, what, text[-2000:])
    return "refused", elapsed


def _run(fmt: str, n: int, tmp_path_factory) -> None:
    for seed in range(n):
        tmp = tmp_path_factory.mktemp(f"{fmt}-{seed}")
        run_case(fmt, seed, tmp)


@pytest.mark.parametrize("fmt", sorted(GENERATORS))
def test_structural_mutations_fail_cleanly_or_add_up(fmt, tmp_path_factory):
    _run(fmt, _cases(FAST_CASES), tmp_path_factory)


@pytest.mark.slow
@pytest.mark.parametrize("fmt", sorted(GENERATORS))
def test_structural_mutations_fail_cleanly_or_add_up_long(fmt, tmp_path_factory):
    _run(fmt, _cases(LONG_CASES), tmp_path_factory)


def test_the_generators_change_one_field_and_are_seeded(tmp_path):
    """A case is rebuilt from its seed alone, and changes the producer's file."""
    for fmt in GENERATORS:
        a = make_case(fmt, 3, tmp_path / f"{fmt}-a")
        b = make_case(fmt, 3, tmp_path / f"{fmt}-b")
        assert a[1] == b[1] and a[1]  # the same description: the same mutation
