"""Agent-supplied text made safe to show a person: every character that moves the cursor, hides or reorders
text is shown as its escape (`\\x1b`, `\\u202e`), so what a person reads is what runs.

    visible(text)                  one line: a newline shows as `\\n` (a table cell, a progress line)
    visible(text, newlines=True)   a panel or listing: real newlines kept, nothing else
    for_stream(text, stream)       `visible` when `stream` is a terminal, the exact text when piped
    json_visible(json_text)        a JSON document with the same hiding characters as `\\uXXXX` escapes (same data)

Shown escaped: C0 and C1 control characters and DEL (so ESC sequences, `\\r` and backspace overwrite nothing),
format characters (bidirectional embeddings, overrides, isolates and marks, zero-width characters, the BOM,
tag characters, the soft hyphen), line and paragraph separators, spaces other than U+0020, unassigned and
private-use code points and lone surrogates (everything `str.isprintable` refuses), every Default_Ignorable_Code_Point
of Unicode (DerivedCoreProperties.txt: besides the format characters, the variation selectors U+FE00-FE0F and
U+E0100-E01EF, the Mongolian free variation selectors, the Khmer inherent vowels U+17B4/17B5, the combining grapheme
joiner U+034F and the Hangul fillers U+115F, U+1160, U+3164, U+FFA0) and the blank braille pattern U+2800: each
renders as nothing or as a blank, so `build\\ufe0f.sh` would read as `build.sh`. Two emoji joiners are kept: a
zero-width joiner between two pictographs (a family emoji), and the emoji/text presentation selector U+FE0F/U+FE0E
right after a symbol (`⚠️`): the symbol itself shows. A backslash is not escaped: `\\x1b` typed by the agent and
ESC shown by Sentinel look alike, but neither can hide anything.
"""

from __future__ import annotations

import re
import unicodedata
from typing import TextIO

# Default_Ignorable_Code_Point (Unicode 15.1 DerivedCoreProperties.txt), whole, plus U+2800 (blank, not ignorable).
# The Cf and Cn ranges in it `str.isprintable` refuses already; listed all the same, so the table is the definition.
_IGNORABLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f"
    "\u2800\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]")
_ZWJ = "\u200d"
_PRESENTATION = "\ufe0e\ufe0f"
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def visible(value: object, *, newlines: bool = False) -> str:
    """`value` (str() of anything but text) with every hiding or cursor-moving character shown as its escape."""
    text = value if isinstance(value, str) else str(value)
    if _plain(text):
        return text  # the common case, decided in C
    if newlines:
        return "\n".join(_line(line) for line in text.split("\n"))
    return _line(text)


def _plain(text: str) -> bool:
    return text.isprintable() and _IGNORABLE.search(text) is None


def _line(text: str) -> str:
    if _plain(text):
        return text
    return "".join(_escape(ch) if _hides(text, i) else ch for i, ch in enumerate(text))


def _hides(text: str, i: int) -> bool:
    """Would the character at `i` hide, move or reorder text (and is no emoji's joiner)?"""
    ch = text[i]
    if ch.isprintable() and _IGNORABLE.match(ch) is None:
        return False
    if ch == _ZWJ:
        return not _joins_emoji(text, i)
    if ch in _PRESENTATION:
        return not (i and unicodedata.category(text[i - 1]) == "So")
    return True


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


def json_visible(document: str) -> str:
    """A JSON text (`json.dumps(..., ensure_ascii=False)`) with every character `visible` would escape written as a
    JSON `\\uXXXX` escape (a surrogate pair above U+FFFF): still valid JSON of the same data, but nothing in it
    moves a terminal's cursor, reorders or hides text. Outside strings JSON has only ASCII and its whitespace,
    which are kept."""
    lines = document.split("\n")  # a newline in JSON is whitespace between tokens (in a string it is `\n`)
    return "\n".join(line if _plain(line) else "".join(_json_escape(ch) if _hides(line, i) else ch
                                                        for i, ch in enumerate(line)) for line in lines)


def _json_escape(ch: str) -> str:
    if ch in " \t\r":  # JSON's own whitespace between tokens (in a string json.dumps escaped them already)
        return ch
    code = ord(ch)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xd800 + (code >> 10):04x}\\u{0xdc00 + (code & 0x3ff):04x}"
