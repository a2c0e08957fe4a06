"""`sentinel hook` never hangs on a judge: one that trickles its answer a byte at a time is cut at the deadline,
and the hook answers, letting the call through with a note (fail_open) or blocking it (strict)."""

from __future__ import annotations

import json
import threading

import pytest

from sentinel.hooks.entry import handle

RULE = {"trigger": "bash", "scope": ["git push --force*"], "prompt": "CMD {{command}}"}
GENEROUS_S = 60  # a test timeout only: the assertions are on the answer


def answer_in_thread(root, command):
    done, out = threading.Event(), {}
    payload = json.dumps({"session_id": "s1", "cwd": str(root), "tool_name": "Bash", "tool_input": {"command": command}})

    def run():
        out["reply"] = handle("claude-code", "pre-tool-use", payload)
        done.set()

    threading.Thread(target=run, daemon=True).start()
    return done, out


@pytest.mark.parametrize("fail_open", [True, False])
def test_trickling_judge_gets_an_answer_at_the_deadline(repo, judge, fail_open):
    j = judge({}, trickle_s=0.2)
    root = repo({"push": RULE}, {"backends": {"ollama": {"url": j.url}}, "timeout_ms": 1000, "fail_open": fail_open})
    done, out = answer_in_thread(root, "( git push --force )")
    assert done.wait(GENEROUS_S), "the hook never answered"
    reply = out["reply"]
    assert len(j.requests) == 1
    if fail_open:
        context = json.loads(reply.stdout)["hookSpecificOutput"]["additionalContext"]
        assert "let it through unchecked" in context and "deadline" in context and reply.code == 0
    else:
        out_ = json.loads(reply.stdout)["hookSpecificOutput"]
        assert out_["permissionDecision"] == "deny" and "deadline" in out_["permissionDecisionReason"]
    assert j.hung_up.wait(GENEROUS_S)
