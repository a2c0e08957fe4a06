"""sentinel/ui/escape.py: every Default_Ignorable_Code_Point and blank filler is shown as its escape (an agent's
`build\ufe0f.sh` must not read as `build.sh`), emoji keep their joiners, and --json output carries the same data with
every hiding character as a JSON escape."""

from __future__ import annotations

import json

import pytest

from sentinel.ui.escape import json_visible, visible

# Default_Ignorable_Code_Point (DerivedCoreProperties.txt) code points that str.isprintable() accepts, and blanks
PRINTABLE_INVISIBLE = ["\u034f", "\u115f", "\u1160", "\u17b4", "\u17b5", "\u180b", "\u180c", "\u180d", "\u180f",
                       "\u3164", "\ufe00", "\ufe0f", "\uffa0", "\U000e0100", "\U000e01ef", "\u2800"]
FORMAT = ["\u00ad", "\u061c", "\u180e", "\u200b", "\u200e", "\u202e", "\u2066", "\u2065", "\ufeff", "\U000e0041",
          "\U0001bca0", "\U0001d173", "\x1b", "\x9b", "\x7f", "\u2028"]


@pytest.mark.parametrize("ch", PRINTABLE_INVISIBLE + FORMAT)
def test_every_invisible_character_is_shown_as_its_escape(ch):
    shown = visible(f"build{ch}.sh")
    assert ch not in shown and shown != "build.sh" and shown.startswith("build\\")


def test_emoji_keep_their_joiners_and_presentation_selectors():
    for text in ("⚠️ careful", "👨\u200d👩\u200d👧", "©️ 2024", "café ✓ — naïve"):
        assert visible(text) == text
    assert visible("a\u200db") == r"a\u200db" and visible("x\ufe0f") == r"x\ufe0f"


def test_json_output_escapes_what_hides_and_keeps_the_data():
    data = {"command": "echo safe \u202e hs.x \x9b2J \x7f build\ufe0f.sh \U000e0101 ⚠️ café", "k\u200b": ["\u2028"]}
    for indent in (None, 2):
        text = json_visible(json.dumps(data, ensure_ascii=False, indent=indent))
        assert json.loads(text) == data
        assert visible(text, newlines=True) == text  # nothing left that `visible` would escape
        assert "⚠️ café" in text and r"\u202e" in text and r"\udb40\udd01" in text
