"""Self-state edits are visible and reversible: a garbled soul is refused, every edit is an event the operator
sees (progress, logs, show, chat), and `sentinel agent restore-soul` brings back an earlier soul."""

from __future__ import annotations

import io
import json

import pytest

from sentinel.agents import soulhistory

NAVIGATOR = "# Soul\n\nYou are a ship's navigator: you answer briefly, in nautical terms, and you check the charts."


def call(name, **arguments):
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def _soul(home):
    return (home / "agents" / "sentinel.soul.md").read_text()


def test_done_when_a_garbled_soul_edit_is_refused_and_restore_soul_brings_back_the_previous(
        scripted_server, configure, cli, sentinel_home):
    from sentinel import paths

    starter = (paths.data_dir("souls") / "default.md").read_text()
    configure(server=scripted_server([call("edit_soul", content=NAVIGATOR),
                                      call("edit_soul", content="Error: Permission denied (os error 13)"),
                                      "Aye, the soul is set."]))
    out = cli.json("run", "become a navigator", "--json", check=4)
    assert _soul(sentinel_home).strip() == NAVIGATOR  # the garbled edit never landed
    assert out["safeguards"] == ["soul_edit_refused"]
    shown = cli.json("show", out["id"], "--json")
    refused = [m["content"] for m in shown["messages"] if m["role"] == "tool"][1]
    assert refused.startswith("Error: refused: the new soul looks like error output") and "unchanged" in refused
    assert [(e["tool"], e["version"], e["chars"]) for e in shown["self_edits"]] == [("edit_soul", 1, len(NAVIGATOR))]
    logs = cli("logs", out["id"], check=0).stdout
    assert "✎ edit_soul soul rewritten" in logs and "restore-soul sentinel" in logs
    assert "safeguard soul_edit_refused → refused" in logs
    shown_text = cli("show", out["id"], check=0).stdout
    assert "edit_soul: soul rewritten" in shown_text and "safeguard soul_edit_refused" in shown_text

    history = cli.json("agent", "soul-history", "sentinel", "--json", check=0)
    assert [v["version"] for v in history["versions"]] == [1] and history["current"] == "own"
    restored = cli.json("agent", "restore-soul", "sentinel", "--json", check=0)
    assert restored == {**restored, "restored": 1, "kept": 2}
    assert _soul(sentinel_home).strip() == starter.strip()
    cli("agent", "restore-soul", "sentinel", "--version", "2", check=0)  # a restore is reversible too
    assert _soul(sentinel_home).strip() == NAVIGATOR


def test_restore_soul_without_history_or_with_an_unknown_version_is_one_line(cli, configure):
    configure()
    proc = cli("agent", "restore-soul", "sentinel")
    assert proc.returncode != 0 and "no earlier souls" in proc.stderr and "Traceback" not in proc.stderr
    assert "no earlier souls" in cli("agent", "soul-history", "sentinel", check=0).stdout


def test_an_unknown_version_names_the_kept_ones(scripted_server, configure, cli):
    configure(server=scripted_server([call("edit_soul", content=NAVIGATOR), "Aye."]))
    cli("run", "become a navigator", check=4)
    proc = cli("agent", "restore-soul", "sentinel", "--version", "7")
    assert proc.returncode == 2 and "--version" in proc.stderr and "kept: 1" in proc.stderr


def test_update_user_is_shown_as_an_edit(scripted_server, configure, cli):
    configure(server=scripted_server([call("update_user", content="Prefers tea to coffee."), "Noted."]))
    out = cli.json("run", "I prefer tea", "--json", check=4)
    edits = cli.json("show", out["id"], "--json")["self_edits"]
    assert [(e["tool"], e["file"], e["excerpt"]) for e in edits] == [("update_user", "user.md",
                                                                       "Prefers tea to coffee.")]
    assert "✎ update_user user.md: appended 22 chars" in cli("logs", out["id"], check=0).stdout


def test_a_soul_poisoned_before_edits_were_checked_is_not_loaded(scripted_server, configure, cli, sentinel_home):
    (sentinel_home / "agents").mkdir(exist_ok=True)
    (sentinel_home / "agents" / "sentinel.soul.md").write_text("Error: Permission denied\n")
    server = scripted_server(["Hello."])
    configure(server=server)
    cli("run", "hi", check=4)
    prompt = server.requests[0]["messages"][0]["content"]
    assert "Permission denied" not in prompt and "careful, capable assistant" in prompt


@pytest.mark.parametrize("text", ["", "ok", "Error: Permission denied", "permission denied: agents/x.soul.md",
                                  "Traceback (most recent call last):\n  File \"x.py\", line 1\n" * 3,
                                  '{"persona": "navigator", "tone": "brief", "rules": ["check the charts"]}',
                                  "a1 b2 c3 d4 e5 f6 g7 h8 i9 j0 k1 l2 m3 n4 ###### $$$$ %%%% 1234567890"])
def test_what_is_no_soul(text):
    assert soulhistory.problem(text) is not None


def test_a_short_plain_soul_is_a_soul(tmp_path):
    from sentinel import paths

    assert soulhistory.problem("You are terse and exact. You answer in one sentence.") is None
    assert soulhistory.problem((paths.data_dir("souls") / "default.md").read_text()) is None


def test_the_chat_shows_a_self_edit_line():
    from rich.console import Console

    from sentinel.chat.view import TerminalView
    from sentinel.engine import events as ev

    out = io.StringIO()
    view = TerminalView(Console(file=out, force_terminal=False, width=200))
    view(ev.RunStarted(run_id="r-1", seq=1))
    view(ev.SelfEdited(run_id="r-1", seq=2, agent="sentinel", tool="edit_soul", file="soul", chars=90, version=3,
                       excerpt="# Soul You are a navigator"))
    view(ev.Safeguard(run_id="r-1", seq=3, kind="soul_edit_refused", action="refused", detail="looks like error"))
    text = out.getvalue()
    assert "✎ edit_soul soul rewritten (90 chars); undo: sentinel agent restore-soul sentinel --version 3" in text
    assert "safeguard soul_edit_refused → refused" in text
    assert json.loads(json.dumps(ev.SelfEdited(run_id="r", seq=1).to_dict()))["type"] == "self_edit"


def test_the_web_console_shows_self_edits_safeguards_and_replies_sent_back():
    from sentinel.engine import events as ev
    from sentinel.web.render import Templates

    t = Templates()
    edit = t.event("", ev.SelfEdited(run_id="r-1", seq=2, agent="naomi", tool="edit_soul", file="soul", chars=90,
                                     version=3, excerpt="# Soul You are a navigator"))
    assert "restore-soul naomi --version 3" in edit and "You are a navigator" in edit
    guard = t.event("", ev.Safeguard(run_id="r-1", seq=3, kind="empty_answer", action="retry", detail="empty"))
    assert "empty_answer" in guard and "retry" in guard
    sent_back = t.event("", ev.ModelCallEnded(run_id="r-1", seq=4, content="{}", rejected="tool_call_as_text"))
    assert "not an answer (tool_call_as_text)" in sent_back
