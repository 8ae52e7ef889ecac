"""Issue 41: notes summarised at any size (one `design` printed 190 notes, 42 KB)."""

from __future__ import annotations

from evalstats._text import NOTES_PER_KIND, NOTES_SHOWN, summarise_notes
from evalstats.io import IngestReport


def test_notes_of_one_kind_are_counted_after_a_few():
    notes = [f"run{i}.jsonl: {i} of 40 answers not extracted by the filter" for i in range(190)]
    notes += ["warning: gpt / gsm8k: 3 samples files are 2 configurations", "metric acc: [0, 1]"]
    shown, left = summarise_notes(notes)
    assert shown[0].startswith("warning:")  # warnings first
    assert shown.count("... and 187 more like it") == 1 and left == 187
    assert len(shown) == NOTES_PER_KIND + 3
    assert "metric acc: [0, 1]" in shown


def test_many_kinds_are_cut_at_a_total():
    notes = [f"note of its own kind number {chr(65 + i % 26) * (i // 26 + 1)}" for i in range(80)]
    shown, left = summarise_notes(notes)
    assert len(shown) == NOTES_SHOWN and left == 80 - NOTES_SHOWN


def test_the_ingest_summary_says_how_many_notes_it_left_out():
    notes = tuple(f"f{i}.csv: blank line {i} set aside" for i in range(50))
    rep = IngestReport(format="table", sources=("x",), rows_read=1, rows_kept=1, notes=notes)
    text = rep.summary()
    assert text.count("note:") == NOTES_PER_KIND and "... and 47 more like it" in text
    assert "(47 more notes in all: --json lists every one)" in text
