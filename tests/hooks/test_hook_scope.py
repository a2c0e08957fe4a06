"""`sentinel hook` scopes on what runs and where a write lands: the same parse and resolution as the runs' gate."""

from __future__ import annotations

import json
import os

import pytest

from sentinel.hooks.entry import handle

VIOLATION = {"violation": True, "confidence": 0.9, "reason": "protected"}
PUSH = {"trigger": "bash", "scope": ["git push --force*"], "prompt": "CMD {{command}}"}
BILLING = {"trigger": "file_write", "scope": ["src/core/billing/**"], "prompt": "FILE {{file_path}}"}
TEN_FORMS = ["true & git push --force", "( git push --force )", "{ git push --force; }", "VAR=x git push --force",
             "bash -c 'git push --force'", "git push '--force'", "git push  --force", "$g push --force",
             "command git push --force", "if true; then git push --force; fi"]
ORDINARY = ["ls -la", "git status", "git push origin main", "npm test", "git log -3 | cat", "echo $HOME"]


def bash_payload(root, command):
    return json.dumps({"session_id": "s1", "cwd": str(root), "tool_name": "Bash", "tool_input": {"command": command}})


def write_payload(root, path):
    return json.dumps({"session_id": "s1", "cwd": str(root), "tool_name": "Write",
                       "tool_input": {"file_path": path, "content": "PAY = 1\n"}})


def decision(reply):
    return json.loads(reply.stdout)["hookSpecificOutput"]["permissionDecision"] if reply.stdout else "pass"


@pytest.mark.parametrize("command", TEN_FORMS)
def test_each_of_the_ten_forms_is_judged_and_blocked(repo, judge, command):
    j = judge({"": VIOLATION})
    root = repo({"push": PUSH}, {"backends": {"ollama": {"url": j.url}}})
    assert decision(handle("claude-code", "pre-tool-use", bash_payload(root, command))) == "deny"
    assert len(j.requests) == 1


def test_ordinary_commands_make_no_judge_call(repo, judge):
    j = judge({"": VIOLATION})
    root = repo({"push": PUSH}, {"backends": {"ollama": {"url": j.url}}})
    for command in ORDINARY:
        reply = handle("claude-code", "pre-tool-use", bash_payload(root, command))
        assert (reply.stdout, reply.code) == ("", 0), command
    assert j.requests == []


def test_symlinked_dir_write_is_judged_where_it_lands(repo, judge):
    j = judge({"": VIOLATION})
    root = repo({"billing": BILLING}, {"backends": {"ollama": {"url": j.url}}})
    (root / "src/core/billing").mkdir(parents=True)
    os.symlink("src/core/billing", root / "b")
    assert decision(handle("claude-code", "pre-tool-use", write_payload(root, str(root / "b/pay.py")))) == "deny"
    assert "FILE src/core/billing/pay.py" in j.requests[0]["messages"][-1]["content"]
    os.symlink("src/core/billing/new.py", root / "dangling.py")  # the agent's Write creates the link's target
    assert decision(handle("claude-code", "pre-tool-use", write_payload(root, str(root / "dangling.py")))) == "deny"


def test_symlink_staying_outside_the_rule_is_not_judged(repo, judge):
    j = judge({"": VIOLATION})
    root = repo({"billing": BILLING}, {"backends": {"ollama": {"url": j.url}}})
    (root / "docs").mkdir()
    (root / "src/core/billing").mkdir(parents=True)
    os.symlink("docs", root / "d")
    reply = handle("claude-code", "pre-tool-use", write_payload(root, str(root / "d/guide.md")))
    assert (reply.stdout, reply.code) == ("", 0) and j.requests == []


BASH_WRITES = ["echo x > src/core/billing/pay.py", "sed -i s/a/b/ b/pay.py", "cd src/core && cp /tmp/x billing/",
               "bash -c 'tee src/core/billing/pay.py < /dev/null'", "python3 -c 'open(\"x\", \"w\")'"]


@pytest.mark.parametrize("command", BASH_WRITES)
def test_a_bash_write_meets_the_path_rule(repo, judge, command):
    j = judge({"": VIOLATION})
    root = repo({"billing": BILLING}, {"backends": {"ollama": {"url": j.url}}})
    (root / "src/core/billing").mkdir(parents=True)
    os.symlink("src/core/billing", root / "b")
    assert decision(handle("claude-code", "pre-tool-use", bash_payload(root, command))) == "deny"
    assert len(j.requests) == 1


def test_the_payload_cwd_is_where_a_bash_write_starts(repo, judge):
    j = judge({"": VIOLATION})
    root = repo({"billing": BILLING}, {"backends": {"ollama": {"url": j.url}}})
    (root / "src/core/billing").mkdir(parents=True)
    payload = json.loads(bash_payload(root, "echo x > pay.py"))
    payload["cwd"] = str(root / "src/core/billing")
    assert decision(handle("claude-code", "pre-tool-use", json.dumps(payload))) == "deny"
    assert "FILE src/core/billing/pay.py" in j.requests[0]["messages"][-1]["content"]


def test_bash_writes_elsewhere_and_reads_make_no_judge_call(repo, judge):
    j = judge({"": VIOLATION})
    root = repo({"billing": BILLING}, {"backends": {"ollama": {"url": j.url}}})
    (root / "src/core/billing").mkdir(parents=True)
    for command in ["ls -la && git status", "cat src/core/billing/pay.py | grep x", "echo x > README.md",
                    "cp src/core/billing/pay.py /tmp/p", "git diff src/core/billing", "echo $HOME 2>/dev/null"]:
        reply = handle("claude-code", "pre-tool-use", bash_payload(root, command))
        assert (reply.stdout, reply.code) == ("", 0), command
    assert j.requests == []
