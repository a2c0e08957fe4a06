"""Issue 6's done-when scenario: a repository with .claude/sentinel/ rules for src/core/billing/** writes
and `git push --force*` commands, and a local (scripted) judge. The Claude Code payload writing
src/core/billing/invoice.ts is denied with the judge's reason, README.md passes silently with no judge
call, and every other agent's equivalent payload gets the same decision in its own format."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sentinel.hooks.entry import handle

REASON = "File is in the protected billing directory"
PUSH = "Force-pushing rewrites shared history"
RULES = {
    "billing-protection": {"trigger": "file_write", "severity": "block", "scope": ["src/core/billing/**"],
                           "exclude": ["**/*.test.ts"],
                           "prompt": "FILE: {{file_path}}\nCONTENT: {{content_snippet}}\nRULE: billing code is "
                                     "protected.\nRespond ONLY with JSON."},
    "no-force-push": {"trigger": "bash", "severity": "block", "scope": ["git push --force*", "git push -f*"],
                      "prompt": "COMMAND: {{command}}\nRULE: never force-push."},
}


def judge_table():
    return {"RULE: billing": {"violation": True, "confidence": 0.92, "reason": REASON},
            "never force-push": {"violation": True, "confidence": 0.95, "reason": PUSH}}


def sentinel_argv(*args):
    script = Path(sys.executable).with_name("sentinel")
    base = [str(script)] if script.exists() else [sys.executable, "-m", "sentinel"]
    return base + ["hook", *args]


def billing_payloads(root):
    r = str(root)
    return {
        "claude-code": ("pre-tool-use", {"session_id": "s", "cwd": r, "hook_event_name": "PreToolUse",
                                         "tool_name": "Write", "tool_input": {
                                             "file_path": f"{r}/src/core/billing/invoice.ts", "content": "x"}}),
        "copilot-cli": ("preToolUse", {"timestamp": 1, "cwd": r, "toolName": "create",
                                       "toolArgs": json.dumps({"path": "src/core/billing/invoice.ts",
                                                               "file_text": "x"})}),
        "cursor": ("preToolUse", {"hook_event_name": "preToolUse", "conversation_id": "c", "workspace_roots": [r],
                                  "tool_name": "Write", "tool_input": {
                                      "file_path": f"{r}/src/core/billing/invoice.ts", "content": "x"}}),
        "windsurf": ("pre_write_code", {"agent_action_name": "pre_write_code", "trajectory_id": "t",
                                        "tool_info": {"file_path": f"{r}/src/core/billing/invoice.ts",
                                                      "edits": [{"old_string": "a", "new_string": "x"}]}}),
        "cline": ("PreToolUse", {"hookName": "PreToolUse", "taskId": "t", "workspaceRoots": [r],
                                 "preToolUse": {"toolName": "write_to_file",
                                                "parameters": {"path": "src/core/billing/invoice.ts",
                                                               "content": "x"}}}),
        "amazon-q": ("preToolUse", {"hook_event_name": "preToolUse", "cwd": r, "tool_name": "fs_write",
                                    "tool_input": {"command": "create", "path": f"{r}/src/core/billing/invoice.ts",
                                                   "file_text": "x"}}),
        "gemini-cli": ("BeforeTool", {"session_id": "s", "cwd": r, "hook_event_name": "BeforeTool",
                                      "tool_name": "write_file", "tool_input": {
                                          "file_path": f"{r}/src/core/billing/invoice.ts", "content": "x"}}),
    }


def push_payloads(root):
    r = str(root)
    cmd = "git push --force origin main"
    return {
        "claude-code": ("pre-tool-use", {"cwd": r, "tool_name": "Bash", "tool_input": {"command": cmd}}),
        "codex": ("pre-tool-use", {"session_id": "s", "cwd": r, "hook_event_name": "PreToolUse",
                                   "tool_name": "Bash", "tool_input": {"command": cmd}}),
        "copilot-cli": ("preToolUse", {"cwd": r, "toolName": "bash", "toolArgs": json.dumps({"command": cmd})}),
        "cursor": ("beforeShellExecution", {"hook_event_name": "beforeShellExecution", "command": cmd, "cwd": r,
                                            "workspace_roots": [r]}),
        "windsurf": ("pre_run_command", {"agent_action_name": "pre_run_command",
                                         "tool_info": {"command_line": cmd, "cwd": r}}),
        "cline": ("PreToolUse", {"hookName": "PreToolUse", "workspaceRoots": [r],
                                 "preToolUse": {"toolName": "execute_command", "parameters": {"command": cmd}}}),
        "amazon-q": ("preToolUse", {"hook_event_name": "preToolUse", "cwd": r, "tool_name": "execute_bash",
                                    "tool_input": {"command": cmd}}),
        "gemini-cli": ("BeforeTool", {"cwd": r, "hook_event_name": "BeforeTool", "tool_name": "run_shell_command",
                                      "tool_input": {"command": cmd}}),
    }


def blocked(agent, reply, reason):
    """The block, read back in the agent's own format."""
    if agent == "claude-code":
        out = json.loads(reply.stdout)["hookSpecificOutput"]
        assert out["permissionDecision"] == "deny" and reply.code == 0
        return out["permissionDecisionReason"]
    if agent == "copilot-cli":
        out = json.loads(reply.stdout)
        assert out["permissionDecision"] == "deny"
        return out["permissionDecisionReason"]
    if agent == "cursor":
        out = json.loads(reply.stdout)
        assert out["permission"] == "deny"
        return out["agent_message"]
    if agent == "cline":
        out = json.loads(reply.stdout)
        assert out["cancel"] is True
        return out["errorMessage"]
    if agent == "gemini-cli":
        out = json.loads(reply.stdout)
        assert out["decision"] == "deny"
        return out["reason"]
    assert reply.code == 2 and reply.stdout == ""  # windsurf, amazon-q, codex: exit 2, reason on stderr
    return reply.stderr


@pytest.fixture
def scenario(repo, judge):
    j = judge(judge_table())
    root = repo(RULES, {"backends": {"ollama": {"url": j.url}}})
    return root, j


def test_claude_code_end_to_end_in_a_real_hook_process(scenario):
    root, j = scenario
    env = {k: v for k, v in os.environ.items() if k != "SENTINEL_GATE_JUDGE"}
    event, payload = billing_payloads(root)["claude-code"]
    proc = subprocess.run(sentinel_argv("claude-code", event), input=json.dumps(payload), capture_output=True,
                          text=True, env=env, timeout=30)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)["hookSpecificOutput"]
    assert out == {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                   "permissionDecisionReason": f"Sentinel blocked this action: [billing-protection] {REASON}"}
    assert len(j.requests) == 1
    readme = dict(payload, tool_name="Edit", tool_input={"file_path": f"{root}/README.md", "old_string": "a",
                                                          "new_string": "b"})
    proc = subprocess.run(sentinel_argv("claude-code", event), input=json.dumps(readme), capture_output=True,
                          text=True, env=env, timeout=30)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    assert len(j.requests) == 1  # README.md: no rule in scope, no judge call


@pytest.mark.parametrize("agent", ["claude-code", "copilot-cli", "cursor", "windsurf", "cline", "amazon-q",
                                   "gemini-cli"])
def test_every_agent_billing_write_is_denied_in_its_format(scenario, agent):
    root, j = scenario
    event, payload = billing_payloads(root)[agent]
    reply = handle(agent, event, json.dumps(payload))
    assert REASON in blocked(agent, reply, REASON)
    (body,) = j.requests
    assert "FILE: src/core/billing/invoice.ts" in body["messages"][-1]["content"]


@pytest.mark.parametrize("agent", ["claude-code", "codex", "copilot-cli", "cursor", "windsurf", "cline",
                                   "amazon-q", "gemini-cli"])
def test_every_agent_force_push_is_denied_and_other_commands_pass(scenario, agent):
    root, j = scenario
    event, payload = push_payloads(root)[agent]
    assert PUSH in blocked(agent, handle(agent, event, json.dumps(payload)), PUSH)
    harmless = json.loads(json.dumps(payload).replace("git push --force origin main", "git status"))
    reply = handle(agent, event, json.dumps(harmless))
    assert (reply.stdout, reply.stderr, reply.code) == ("", "", 0)
    assert len(j.requests) == 1


@pytest.mark.parametrize("agent", ["claude-code", "copilot-cli", "cursor", "windsurf", "cline", "amazon-q",
                                   "gemini-cli"])
def test_every_agent_readme_write_passes_silently_without_a_call(scenario, agent):
    root, j = scenario
    event, payload = billing_payloads(root)[agent]
    text = json.dumps(payload).replace("src/core/billing/invoice.ts", "README.md")
    reply = handle(agent, event, text)
    assert (reply.stdout, reply.stderr, reply.code) == ("", "", 0)
    assert j.requests == []


def test_excluded_test_file_passes(scenario):
    root, j = scenario
    event, payload = billing_payloads(root)["claude-code"]
    text = json.dumps(payload).replace("invoice.ts", "invoice.test.ts")
    assert handle("claude-code", event, text).stdout == "" and j.requests == []
