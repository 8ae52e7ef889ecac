"""Text that came from the input, made safe for each place it is shown.

Model names, dataset names, item ids, factor levels and error messages that quote input values
all come from files evalstats did not write. Before such text reaches an output it passes
through one of these functions:

- :func:`for_terminal`: one line, control characters (terminal escape sequences, carriage
  returns, newlines) shown as visible escapes, at most :data:`MAX_MESSAGE_CHARS` characters;
- :func:`for_markdown`: Markdown that renders as the same literal text (no HTML, no links, no
  emphasis), for ``report.md``;
- :func:`for_latex`: LaTeX body text (the report's ``.tex`` tables);
- :func:`shorten`: at most ``limit`` characters, for figure labels and messages.

:func:`plural` writes a count with its noun (``1 model``, ``2 models``).

HTML is escaped with :func:`html.escape` where it is written; figures draw with matplotlib's
mathtext parser off (:func:`evalstats.plots.paper_style`), so a ``$`` in a name is a dollar sign.
"""

from __future__ import annotations

import re

__all__ = [
    "MAX_LABEL_CHARS",
    "MAX_MESSAGE_CHARS",
    "for_latex",
    "for_markdown",
    "for_terminal",
    "for_terminal_lines",
    "plural",
    "raw_stream",
    "shorten",
]

#: Longest name a figure shows before it is shortened with an ellipsis.
MAX_LABEL_CHARS = 60
#: Longest error line the command line prints.
MAX_MESSAGE_CHARS = 2000

# C0 and C1 controls, the line and paragraph separators, and every bidirectional control
# (the Arabic letter mark, LRM and RLM, the embeddings and overrides, the isolates)
_CONTROL = re.compile(
    r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\x1b": "\\x1b"}


def _visible(match: re.Match[str]) -> str:
    ch = match.group(0)
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def plural(n: int, word: str, words: str | None = None) -> str:
    """``n`` and ``word``, in the plural unless ``n`` is 1: ``'1 model'``, ``'3 models'``.

    Examples
    --------
    >>> plural(1, "model"), plural(2, "variant"), plural(0, "run"), plural(2, "query", "queries")
    ('1 model', '2 variants', '0 runs', '2 queries')
    """
    return f"{n} {word if n == 1 else (words or word + 's')}"


def shorten(text: str, limit: int = MAX_LABEL_CHARS) -> str:
    """``text`` cut to at most ``limit`` characters, ending in an ellipsis when cut.

    Examples
    --------
    >>> shorten("a" * 10, 5)
    'aaaa…'
    >>> shorten("short", 5)
    'short'
    """
    text = str(text)
    if limit < 1:
        raise ValueError(f"`limit` must be at least 1, got {limit}.")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def for_terminal(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    r"""One printable line: control characters shown as escapes, at most ``limit`` characters.

    Terminal escape sequences in a model name or a CSV header would otherwise recolour, move
    or clear the user's terminal; a newline would make a one-line error two lines.

    Examples
    --------
    >>> for_terminal("bad \x1b[31mred\x1b[0m\nname")
    'bad \\x1b[31mred\\x1b[0m\\nname'
    """
    return shorten(_CONTROL.sub(_visible, str(text)), limit)


_CONTROL_BUT_NEWLINE = re.compile(
    r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)


def for_terminal_lines(text: str) -> str:
    r"""Text of several lines for a terminal: every control character but the newline escaped.

    What :func:`for_terminal` does to one line, for a table or a summary: a model name
    carrying ``]0;title`` (set the window title), ``[2J`` (clear the screen), a C1
    control or a right-to-left override is shown as the visible escape instead of acting.
    Tabs are escaped too (a name must not shift a column); nothing is cut.

    Examples
    --------
    >>> print(for_terminal_lines("model,score\nevil\x1b[2J\u202e,1\n"))
    model,score
    evil\x1b[2J\u202e,1
    <BLANKLINE>
    """
    return _CONTROL_BUT_NEWLINE.sub(_visible, str(text))


def raw_stream(stream: object) -> object:
    r"""The stream under the command line's escaping wrapper, for evalstats' own redraws.

    The command line wraps stdout and stderr so that no control character from the input reaches
    the terminal (:func:`for_terminal_lines`); a progress bar that redraws its line with ``\r``
    (text evalstats wrote, not the input) writes here instead. Any other stream is returned as
    it is.
    """
    return getattr(stream, "raw", stream)


# inline Markdown syntax; ( ) and ! only act after a ] and are left alone
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]|~])")
# block syntax that acts at the start of a line: headings, lists, rules (a quote's > becomes
# an entity below)
_MD_LINE_START = re.compile(r"^(\s*|\s*\d+)([#+\-=]|(?<=\d)[.)])")


def for_markdown(text: str) -> str:
    r"""Markdown that renders as ``text`` itself: no HTML, links, emphasis or line breaks.

    ``<``, ``>`` and ``&`` become HTML entities (Markdown renderers such as python-markdown pass
    raw HTML through, so a ``<script>`` in a model name would run); Markdown's punctuation is
    backslash-escaped; control characters and newlines become visible escapes.

    Examples
    --------
    >>> for_markdown("<img src=x onerror=alert(1)> *m*|x")
    '&lt;img src=x onerror=alert(1)&gt; \\*m\\*\\|x'
    >>> for_markdown("# not a heading")
    '\\# not a heading'
    """
    text = _CONTROL.sub(_visible, str(text))
    text = _MD_SPECIAL.sub(r"\\\1", text)
    text = _MD_LINE_START.sub(r"\1\\\2", text)
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


_LATEX = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
}
# characters of the report's own text that LaTeX's default fonts lack
_LATEX_UNICODE = {"–": "--", "−": "-", "η": r"$\eta$", "²": r"$^2$", "≤": r"$\le$"}


#: Any character :func:`for_latex` changes (text without one is returned as it is).
_LATEX_TOUCHED = re.compile(
    "["
    + re.escape("".join(_LATEX) + "".join(_LATEX_UNICODE))
    + r"\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)


def for_latex(text: str) -> str:
    r"""LaTeX body text that typesets as ``text``: special characters escaped, controls shown.

    Examples
    --------
    >>> for_latex(r"50% of $x_1 \input{a}")
    '50\\% of \\$x\\_1 \\textbackslash{}input\\{a\\}'
    """
    text = str(text)
    if not _LATEX_TOUCHED.search(text):
        return text
    text = _CONTROL.sub(_visible, text)
    out = "".join(_LATEX.get(ch, ch) for ch in text)
    for k, v in _LATEX_UNICODE.items():
        out = out.replace(k, v)
    return out


#: Notes of one kind shown before the rest are counted (``summarise_notes``).
NOTES_PER_KIND = 3

#: Notes shown in all before the rest are counted.
NOTES_SHOWN = 30


def _note_kind(note: str) -> str:
    """A note's kind: its words without the names and numbers it quotes.

    ``"a.jsonl: 3 of 40 answers ..."`` and ``"b.jsonl: 7 of 51 answers ..."`` are one kind.
    """
    head, sep, rest = note.partition(": ")
    text = rest if sep and (" " not in head or "/" in head or "." in head) else note
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", text)
    return re.sub(r"[0-9][0-9.,%]*", "#", text)[:80]


def summarise_notes(notes: list[str] | tuple[str, ...]) -> tuple[list[str], int]:
    """The notes to show, and how many were left out.

    Notes of one kind (the same sentence about other files, models or tasks) are shown
    NOTES_PER_KIND at a time, then counted (``"... and 14 more like it"``); in all at most
    NOTES_SHOWN are shown. Warnings are kinds of their own and come first. The full list stays
    in the report's JSON.
    """
    by_kind: dict[str, list[str]] = {}
    for n in notes:
        by_kind.setdefault(_note_kind(n), []).append(n)
    shown: list[str] = []
    left = 0
    kinds = sorted(by_kind.values(), key=lambda ns: not ns[0].startswith("warning"))
    for group in kinds:
        take = group[:NOTES_PER_KIND]
        rest = len(group) - len(take)
        if len(shown) + len(take) > NOTES_SHOWN:
            left += len(group)
            continue
        shown += take
        if rest:
            shown.append(f"... and {rest} more like it")
            left += rest
    return shown, left
