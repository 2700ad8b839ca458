"""Text from a peer, made safe to print on a terminal.

A server, an authorization server or a model provider chooses the words of a
result, an error, a log or a form, and a terminal obeys the control
sequences in what it is given: clear the screen, move the cursor over what
was shown, set the window title, make a hyperlink whose text lies about its
target, or answer a query by typing into the shell. :func:`printable` removes
them all, as ``rich`` and ``less -R`` would not show them: CSI sequences
(``ESC [`` or C1 ``0x9b``, through their final byte), OSC, DCS, SOS, PM and
APC strings (through BEL or ST), every other ``ESC`` sequence, a lone ESC,
C0 controls other than newline and tab, DEL and C1 controls; and the
bidirectional embeddings, overrides and isolates (U+202A-U+202E,
U+2066-U+2069), which make a terminal draw text in another order than it
reads ("Trojan Source": ``invoice\u202egnp.exe`` shows as ``invoiceexe.png``).
Everything else (any Unicode letter, symbol or emoji, and the directional
marks U+200E, U+200F and U+061C that right-to-left text uses) is kept.

A peer's text shown *on one line* (a name, a title, a choice, a URI, a
MIME type, a progress message) goes through :func:`printable_line`: its line
breaks become spaces, so one field can never print a line of its own (an
unindented ``yieldmcp: error: ...``), and with ``most`` it is cut, the rest
counted (:data:`MAX_LINE_SHOWN` characters where nothing says less). Text
that keeps its lines (a result's text, a description shown as a paragraph)
is shown with every line after the first indented by whoever lays it out.

It lives at the top of ``bridge``, not in ``bridge.cli`` nor
``bridge.elicit``, because the terminal form
(:class:`~bridge.elicit.TerminalForm`), the command line and the model
providers (whose errors quote a provider's words) all clean peers' text,
and none of them may import another; ``bridge.elicit`` re-exports it. It
imports nothing of ``bridge``.
"""

from __future__ import annotations

import functools
import re
import sys
import unicodedata
from collections.abc import Iterable
from typing import Final

__all__ = [
    "MAX_LINE_SHOWN",
    "cut",
    "has_unseen",
    "printable",
    "printable_line",
    "unseen_class",
]

MAX_LINE_SHOWN: Final = 4096
"""Characters of one piece of a peer's text shown on one line (a name, a
title, a choice, a URI, a MIME type, an error's message): the rest is
counted, ``… (N more characters)``."""

_CONTROL: Final = re.compile(
    r"""
      (?:\x1b\[|\x9b) [\x30-\x3f]* [\x20-\x2f]* [\x40-\x7e]   # CSI ... final byte
    | (?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])                   # OSC DCS SOS PM APC
      [^\x07\x1b\x9c]* (?:\x07|\x1b\\|\x9c)                     # ... through BEL or ST
    | \x1b [\x20-\x2f]* [\x30-\x7e]                             # any other ESC sequence
    | [\x00-\x08\x0b-\x1f\x7f-\x9f]                           # C0 (not \t \n), DEL, C1
    | [\u202a-\u202e\u2066-\u2069]                             # bidi embeds, isolates
    """,
    re.VERBOSE,
)


def printable(text: str) -> str:
    """``text`` without its terminal control sequences (see the module doc)."""
    return _CONTROL.sub("", text)


def printable_line(text: str, *, most: int | None = None) -> str:
    """:func:`printable` ``text`` on one line: its line breaks are spaces, so
    a peer's text cannot print a line of its own (a forged status, a row).

    With ``most``, only the first ``most`` characters of that line are kept,
    and the rest counted (``… (N more characters)``): counted once cleaned,
    so a control sequence neither takes a place nor is cut in two."""
    line = " ".join(printable(text).splitlines())
    return line if most is None else cut(line, most)


def cut(text: str, most: int) -> str:
    """``text``, or its first ``most`` characters and the rest counted
    (``… (N more characters)``): how a peer's long text is shown in part."""
    if len(text) <= most:
        return text
    return f"{text[:most]}… ({len(text) - most:,} more characters)"


_UNSEEN_CATEGORIES: Final = frozenset({"Cc", "Cf", "Zl", "Zp"})
_BLANK_RANGES: Final = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160),
    (0x17B4, 0x17B5), (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E),
    (0x2060, 0x206F), (0x2800, 0x2800), (0x3164, 0x3164), (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
)  # fmt: skip
"""Unicode's default-ignorable code points, which show as nothing, and the
letters and symbols that show as a blank (Hangul fillers, the braille
blank)."""


def _class(ranges: Iterable[tuple[int, int]]) -> str:
    """A regular expression's character class of these code point ranges."""
    return (
        "["
        + "".join(
            re.escape(chr(low)) + ("" if high == low else "-" + re.escape(chr(high)))
            for low, high in ranges
        )
        + "]"
    )


_BLANK: Final = re.compile(_class(_BLANK_RANGES))


def has_unseen(text: str) -> bool:
    """Whether ``text`` holds a character a reader cannot see: a control
    (a tab too), a line or paragraph separator, a format character, a
    default-ignorable one, or a letter that shows as a blank; a plain
    space is seen."""
    return bool(_BLANK.search(text)) or any(
        unicodedata.category(char) in _UNSEEN_CATEGORIES for char in text
    )


@functools.cache
def unseen_class() -> str:
    """A regular expression's character class of exactly the characters
    :func:`has_unseen` looks for, for whoever must find them *between*
    other characters (a secret a provider echoes with invisible characters
    put between its own). Made on first use, from the same two lists, in
    about 0.2 s: Python's ``re`` has no Unicode categories."""
    codes = {
        code
        for code in range(sys.maxunicode + 1)
        if unicodedata.category(chr(code)) in _UNSEEN_CATEGORIES
    }
    for low, high in _BLANK_RANGES:
        codes.update(range(low, high + 1))
    ranges: list[tuple[int, int]] = []
    for code in sorted(codes):
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1] = (ranges[-1][0], code)
        else:
            ranges.append((code, code))
    return _class(ranges)
