"""The terminal's full listing of a pending call names where it runs, whole and escaped (audit finding 4), and the
web console's one-line fields show no character bash reads as part of a word as a word break (finding 5)."""

from __future__ import annotations

import pytest

from sentinel.engine.rows import ApprovalRow

LONG = "/tmp/audit-display/repo-r3/projects/customer-prod-deploy-scripts-DO-NOT-RUN-HERE"


def approval(**more):
    fields = {"id": "a-1", "run_id": "r-1", "tool": "Bash", "arguments": {"command": "make deploy"}, "reason": "asks",
              "status": "pending", "call_id": "c", "created_at": 0.0, "digest": "d" * 64}
    return ApprovalRow(**{**fields, **more})


def test_the_full_listing_names_repository_user_and_host_whole():
    from sentinel.ui.render import call_in_full

    text = call_in_full(approval(workspace=LONG, user="alice", host="build-7", client="claude-code"))
    assert f"  in repository: {LONG}\n" in text and "  runs as: alice\n" in text and "  on host: build-7\n" in text
    assert "  asked by: claude-code's hook\n" in text
    assert text.index("on host") < text.index("command: make deploy")  # before the agent's arguments
    run = call_in_full(approval(workspace="/srv/ws", user="bob"))
    assert "  in workspace: /srv/ws" in run and "asked by" not in run and "on host" not in run


def test_where_is_escaped_and_no_argument_can_pass_for_it():
    from sentinel.ui.render import call_in_full

    evil = "/tmp/app\x1b[2K\r/home/alice/trusted\u3164repo\nhost: prod"
    text = call_in_full(approval(workspace=evil, user="al\x1b]0;x\x07ice", host="h\u2028ost",
                                 arguments={"command": "ls", "in repository": "/safe"}, client="codex"))
    assert not set(text) & {"\x1b", "\r", "\u3164", "\u2028", "\x07"}
    assert "in repository: /tmp/app\\x1b[2K\\r/home/alice/trusted\\u3164repo\\nhost: prod" in text
    assert "runs as: al\\x1b]0;x\\x07ice" in text and "on host: h\\u2028ost" in text
    assert '  "in repository": /safe' in text  # an argument's name with a space is quoted


def test_sentinel_approvals_and_show_print_where_in_full(sentinel_home, cli):
    from sentinel import paths
    from sentinel.engine import asks
    from sentinel.local.engine import LocalEngine

    with LocalEngine() as engine:
        filed = asks.file(engine.store, asks.Ask(client="claude-code", repository=LONG, tool="Bash",
                                                 arguments={"command": "make deploy"}, rule="r", reason="asks",
                                                 keys=[["command", '[".", "make deploy"]']]), 600,
                          str(paths.runs_dir(paths.home())))
    for args in (("approvals",), ("show", filed.approval_id)):
        assert f"  in repository: {LONG}\n" in cli(*args, check=0).stdout, args
    assert f"  in repository: {LONG}\n" in cli("deny", filed.approval_id, check=0).stderr  # what `approve/deny` print


@pytest.mark.parametrize("ch", ["\u2028", "\u2029", "\u0085", "\u00a0", "\u3000", "\u2000", "\u200a", "\r", "\n", "\t"],
                         ids=lambda c: f"U+{ord(c):04X}")
def test_the_web_consoles_short_fields_show_each_blank_as_its_escape(ch):
    from sentinel.web.render import Templates, _short

    shown = _short(f"git push origin main{ch}--dry-run", 160)
    assert "main --dry-run" not in shown and ch not in shown and "main\\" in shown
    assert ch not in _short({"command": f"a{ch}b"})
    assert _short("a   b") == "a b" and _short({"k": [1, 2]}) == '{"k": [1, 2]}'
    view = {"id": "a-1", "run_id": "r-1", "tool": "Bash", "arguments": {"command": "x"}, "reason": "r",
            "digest": "d", "created_at": 0, "chain": [], "client": "codex", "workspace": "/w",
            "run": {"id": "r-1", "task": f"codex asks in /w: run main{ch}--dry-run"}}
    html = Templates().render("_approval.html", a=view, prefix="")
    task = html.split("task <q>")[1].split("</q>")[0]
    assert "main --dry-run" not in task and "main\\" in task
