"""A notification never shows a character bash reads as part of a word as a word break (audit finding 5): agent
text is escaped first, then only runs of plain spaces are folded. `main\u2028--dry-run` is one word to bash (no
dry run), so it must not read as `main --dry-run`."""

from __future__ import annotations

import pytest

# what str.split() took for whitespace and folded into a space before the escaping: none is a word break to bash
WORD_CHARS = ["\u2028", "\u2029", "\u0085", "\u00a0", "\u3000", "\u1680", "\u202f", "\u205f", "\x1c", "\x1f", "\x0b",
              "\x0c", "\r", *(chr(c) for c in range(0x2000, 0x200b))]


@pytest.mark.parametrize("ch", WORD_CHARS + ["\n", "\t"], ids=lambda c: f"U+{ord(c):04X}")
def test_no_blank_but_a_plain_space_reads_as_a_break_in_any_field(ch):
    from sentinel.notify.dispatch import _short
    from sentinel.notify.send import message

    command = f"git push --force origin main{ch}--dry-run"
    doc = {"event": "approval", "run_id": "r-1", "approval_id": "a-1", "tool": "Bash",
           "arguments": _short({"command": command}), "reason": _short(f"push{ch}asks"),
           "task": _short(f"deploy{ch}now"), "agent": "claude-code"}
    for markup in (None, "slack", "discord", "html"):
        text = message(doc, markup)
        assert "main --dry-run" not in text and "main--dry-run" not in text, (markup, text)
        assert "push asks" not in text and "deploy now" not in text
        assert len(text.splitlines()) == 6  # title, tool, arguments, reason, task, agent: no line of the agent's


def test_plain_spaces_still_fold_and_the_cut_stays():
    from sentinel.notify.dispatch import SHORT, _short

    assert _short("git   push\u3000 origin") == "git push\\u3000 origin"
    assert _short("  lead and trail  ") == "lead and trail"
    assert _short({"command": "ls\n-la"}) == '{"command": "ls\\n-la"}'  # JSON had escaped it already
    assert _short("reason\r\nsecond line") == "reason\\r\\nsecond line"
    long = _short("x" * 500)
    assert len(long) == SHORT and long.endswith("…")


def test_an_ask_notification_from_the_store_shows_the_separator(sentinel_home):
    """The audit's repro: an ask filed in the store, the notification's text as ntfy and Telegram send it."""
    from sentinel import paths
    from sentinel.engine import asks
    from sentinel.local.engine import LocalEngine
    from sentinel.notify import dispatch, send

    command = "git push --force origin main\u2028--dry-run"
    with LocalEngine() as engine:
        asks.file(engine.store, asks.Ask(client="claude-code", repository="/tmp/r", tool="Bash",
                                         arguments={"command": command}, rule="r", reason="push\tasks",
                                         keys=[["command", '[".", "x"]']]), 600, str(paths.runs_dir(paths.home())))
        (doc,) = [d for _, kind, d in dispatch._events(engine.store.conn, 0, "http://x") if kind == "approval"]
    text = send.message(doc)
    assert "main\\u2028--dry-run" in text and "main --dry-run" not in text and "push\\tasks" in text
