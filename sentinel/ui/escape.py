"""Agent-supplied text made safe to show a person: every character that moves the cursor, hides or reorders
text is shown as its escape (`\\x1b`, `\\u202e`), so what a person reads is what runs.

    visible(text)                  one line: a newline shows as `\\n` (a table cell, a progress line)
    visible(text, newlines=True)   a panel or listing: real newlines kept, nothing else
    for_stream(text, stream)       `visible` when `stream` is a terminal, the exact text when piped

Shown escaped: C0 and C1 control characters and DEL (so ESC sequences, `\\r` and backspace overwrite nothing),
format characters (bidirectional embeddings, overrides, isolates and marks, zero-width characters, the BOM,
tag characters, the soft hyphen), line and paragraph separators, spaces other than U+0020, unassigned and
private-use code points and lone surrogates (everything `str.isprintable` refuses), and the fillers that
render as blank without being format characters (U+034F, U+115F, U+1160, U+3164, U+FFA0). A zero-width joiner
between two pictographs (a family emoji) is kept. A backslash is not escaped: `\\x1b` typed by the agent and
ESC shown by Sentinel look alike, but neither can hide anything.
"""

from __future__ import annotations

import unicodedata
from typing import TextIO

_BLANK = frozenset("\u034f\u115f\u1160\u3164\uffa0")
_ZWJ = "\u200d"
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def visible(value: object, *, newlines: bool = False) -> str:
    """`value` (str() of anything but text) with every hiding or cursor-moving character shown as its escape."""
    text = value if isinstance(value, str) else str(value)
    if text.isprintable() and not _BLANK.intersection(text):
        return text  # the common case, decided in C
    if newlines:
        return "\n".join(_line(line) for line in text.split("\n"))
    return _line(text)


def _line(text: str) -> str:
    if text.isprintable() and not _BLANK.intersection(text):
        return text
    out = []
    for i, ch in enumerate(text):
        if (ch.isprintable() and ch not in _BLANK) or (ch == _ZWJ and _joins_emoji(text, i)):
            out.append(ch)
        else:
            out.append(_escape(ch))
    return "".join(out)


def _escape(ch: str) -> str:
    code = ord(ch)
    if ch in _NAMED:
        return _NAMED[ch]
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _joins_emoji(text: str, i: int) -> bool:
    before, after = text[i - 1:i], text[i + 1:i + 2]
    return bool(before and after) and all(ord(c) >= 0x2190 and unicodedata.category(c) == "So"
                                          for c in (before, after))


def for_stream(value: object, stream: TextIO, *, newlines: bool = True) -> str:
    """What to write on `stream`: escaped for a terminal, exact for a pipe or a file (a script reads the data)."""
    text = value if isinstance(value, str) else str(value)
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    return visible(text, newlines=newlines) if tty else text
