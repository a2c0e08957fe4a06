"""A line the shell parser never finishes is unsure, within a budget: bashlex loops forever (allocating) on some
short lines, and a hook that never answers is killed by the client's timeout, which every client takes as
"allowed". So the rules decide the line as one they cannot read: judged, and held by the gate's own-files rule.

The budget is a SIGALRM timer on the main thread. Each check runs in a process of its own (as the hook is one),
so the test worker's own timers (pytest-timeout) and its state never meet a parse that does not end."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

NEVER_ENDS = "$'E$\"${-><<<\\<E<<<<;$( <<<<<$' EOF$(>\\\\\n)|);"  # bashlex's parameter expansion restarts forever

PARSE = """
import json, signal, sys
from sentinel.policy import shell
shell.PARSE_BUDGET_S = 0.3
outer = float(sys.argv[2])
if outer:
    signal.signal(signal.SIGALRM, lambda *_: None)
    signal.setitimer(signal.ITIMER_REAL, outer)
handler = signal.getsignal(signal.SIGALRM)
parsed = shell.parse(sys.argv[1])
left = signal.getitimer(signal.ITIMER_REAL)[0]
kept = signal.getsignal(signal.SIGALRM) is handler
print(json.dumps({"sure": parsed.sure, "why": parsed.why, "left": left, "handler_kept": kept,
                  "after": shell.parse("echo ok > a.txt").sure}))
"""


def parse_alone(line: str, outer_s: float = 0.0) -> dict:
    proc = subprocess.run([sys.executable, "-c", PARSE, line, str(outer_s)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("before", ["", "rm -rf .claude/sentinel\n", "echo x > billing/a.txt; "])
def test_a_parse_past_its_budget_is_unsure(before):
    got = parse_alone(before + NEVER_ENDS)
    assert not got["sure"] and "did not finish" in got["why"] and got["after"]


@pytest.mark.parametrize("outer_s", [0.0, 30.0])
def test_the_budget_leaves_no_timer_of_its_own_and_puts_back_one_that_was_set(outer_s):
    got = parse_alone(NEVER_ENDS, outer_s)
    assert not got["sure"] and got["handler_kept"]
    assert (got["left"] == 0.0) if not outer_s else (0 < got["left"] < outer_s)


def test_the_hook_command_holds_a_write_beside_a_line_the_parser_cannot_finish(repo, tmp_path):
    """The real hook process: its parse is cut at PARSE_BUDGET_S and the call is held (a person is asked; nobody
    answers in the shortest window: denied), and nothing is removed."""
    home = tmp_path / "home"
    home.mkdir()
    root = repo({})
    payload = {"session_id": "s", "cwd": str(root), "hook_event_name": "PreToolUse", "tool_name": "Bash",
               "tool_input": {"command": "rm -rf .claude/sentinel\n" + NEVER_ENDS}}
    proc = subprocess.run([sys.executable, "-m", "sentinel", "hook", "claude-code", "pre-tool-use", "--ask-within",
                           "1"], input=json.dumps(payload), capture_output=True, text=True, cwd=root, timeout=60,
                          env={**os.environ, "HOME": str(home), "SENTINEL_HOME": str(home / ".sentinel")})
    assert json.loads(proc.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny", proc.stderr
    assert (root / ".claude" / "sentinel").is_dir()
