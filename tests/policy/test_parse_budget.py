"""A line the shell parser never finishes is unsure, within a budget: bashlex loops forever (allocating) on some
short lines, and a hook that never answers is killed by the client's timeout, which every client takes as
"allowed". So the rules decide the line as one they cannot read: judged, and held by the gate's own-files rule."""

from __future__ import annotations

import json
import threading

import pytest

from sentinel.hooks import entry
from sentinel.policy import shell

NEVER_ENDS = "$'E$\"${-><<<\\<E<<<<;$( <<<<<$' EOF$(>\\\\\n)|);"  # bashlex's parameter expansion restarts forever


@pytest.fixture(autouse=True)
def short_budget(monkeypatch):
    monkeypatch.setattr(shell, "PARSE_BUDGET_S", 0.3)
    shell.parse.cache_clear()
    yield
    shell.parse.cache_clear()


@pytest.mark.parametrize("before", ["", "rm -rf .claude/sentinel\n", "echo x > billing/a.txt; "])
def test_a_parse_past_its_budget_is_unsure(before):
    parsed = shell.parse(before + NEVER_ENDS)
    assert not parsed.sure and "did not finish" in parsed.why


def test_the_budget_leaves_no_timer_and_no_handler_behind():
    import signal

    handler = signal.getsignal(signal.SIGALRM)
    outer = signal.getitimer(signal.ITIMER_REAL)[0]  # a test timeout's timer, when it uses one
    shell.parse(NEVER_ENDS)
    assert signal.getsignal(signal.SIGALRM) is handler
    left = signal.getitimer(signal.ITIMER_REAL)[0]
    assert (left == 0.0) if not outer else (0 < left < outer)
    assert shell.parse("echo ok > a.txt").sure


def test_the_hook_holds_a_write_beside_a_line_the_parser_cannot_finish(repo, tmp_path, monkeypatch):
    """End to end: the hook answers (a person is asked; nobody answers in the shortest window: denied)."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    root = repo({})
    monkeypatch.setattr(entry, "ASK_ARGS", ["--ask-within", "1"])
    payload = {"session_id": "s", "cwd": str(root), "hook_event_name": "PreToolUse", "tool_name": "Bash",
               "tool_input": {"command": "rm -rf .claude/sentinel\n" + NEVER_ENDS}}
    assert threading.current_thread() is threading.main_thread()
    reply = entry.handle("claude-code", "pre-tool-use", json.dumps(payload))
    decision = json.loads(reply.stdout)["hookSpecificOutput"]
    assert decision["permissionDecision"] == "deny", decision
    assert (root / ".claude" / "sentinel").is_dir()


def test_the_hook_command_answers_with_its_own_budget(repo, tmp_path):
    """The real hook process (no test timer): its parse is cut at PARSE_BUDGET_S and the call is held."""
    import os
    import subprocess
    import sys

    home = tmp_path / "home"
    home.mkdir()
    root = repo({})
    payload = {"session_id": "s", "cwd": str(root), "hook_event_name": "PreToolUse", "tool_name": "Bash",
               "tool_input": {"command": "rm -rf .claude/sentinel\n" + NEVER_ENDS}}
    proc = subprocess.run([sys.executable, "-m", "sentinel", "hook", "claude-code", "pre-tool-use", "--ask-within",
                           "1"], input=json.dumps(payload), capture_output=True, text=True, cwd=root, timeout=60,
                          env={**os.environ, "HOME": str(home), "SENTINEL_HOME": str(home / ".sentinel")})
    assert json.loads(proc.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny", proc.stderr
