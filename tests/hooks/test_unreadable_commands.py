"""A shell call whose command Sentinel cannot read is never judged as an empty command.

Every client's shell tool sends its command as a string (or Codex's argv, Cline's list of commands). A call
that carries something else where the command goes (the whole input a string or a list, the command a
number, an object, an argv with a non-string in it) may run anything, as far as Sentinel can tell: it is in
scope of every shell and path rule (the built-in own-files rule included), is shown as the JSON it was sent
as, and the hook holds it for a person. Readable commands keep their ordinary scope."""

from __future__ import annotations

import json

import pytest

from sentinel.hooks import agents, entry
from sentinel.policy.gate.loader import load_repo
from sentinel.policy.gate.rules import applicable

OWN = "sentinel-own-files"
RM_RULE = {"kind": "scope", "trigger": "bash", "severity": "ask", "scope": ["rm *"],
           "description": "removing files: a person decides"}


def shell_call(agent: str, root: str, value: object, whole: bool = False) -> dict:
    """`agent`'s shell call with `value` as its command (whole: as the tool's whole input)."""
    args = value if whole else {"command": value}
    if agent in ("claude-code", "codex"):
        return {"session_id": "s", "cwd": root, "hook_event_name": "PreToolUse", "tool_name": "Bash",
                "tool_input": args}
    if agent == "gemini-cli":
        return {"session_id": "s", "cwd": root, "hook_event_name": "BeforeTool", "tool_name": "run_shell_command",
                "tool_input": args}
    if agent == "amazon-q":
        return {"hook_event_name": "preToolUse", "cwd": root, "tool_name": "execute_bash", "tool_input": args}
    if agent == "copilot-cli":
        return {"cwd": root, "toolName": "bash", "toolArgs": args}
    if agent == "cline":
        return {"hookName": "PreToolUse", "taskId": "t", "workspaceRoots": [root],
                "preToolUse": {"toolName": "execute_command", "parameters": args}}
    if agent == "cursor":
        return {"hook_event_name": "beforeShellExecution", "conversation_id": "c", "workspace_roots": [root],
                "cwd": root, "command": value}
    assert agent == "windsurf"
    return {"agent_action_name": "pre_run_command", "trajectory_id": "t",
            "tool_info": value if whole else {"command_line": value, "cwd": root}}


AGENTS = ["claude-code", "codex", "gemini-cli", "amazon-q", "copilot-cli", "cline", "cursor", "windsurf"]
UNREADABLE = [("rm -rf .claude/sentinel", True), (["rm", "-rf", ".claude"], True), (42, False),
              ({"run": "rm -rf .claude"}, False), (["rm", 1], False), (None, False)]
NO_INPUT = {"cursor", "windsurf"}  # cursor: the command is a field of the call; windsurf: `tool_info` is checked


def in_scope(root, agent: str, payload: dict) -> tuple[set[str], list]:
    bundle = load_repo(str(root))
    found = agents.get(agent).action(payload, bundle.config, "pre")
    acts = [a.locate(str(root), str(root)) for a in (found if isinstance(found, list) else [found])]
    return {r.id for a in acts for r in applicable([*bundle.rules, bundle.own], a, "pre")}, acts


@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize("value,whole", UNREADABLE)
def test_an_unreadable_shell_call_is_in_scope_of_every_shell_and_path_rule(repo, home, agent, value, whole):
    root = repo({"no-rm": RM_RULE})
    if agent in NO_INPUT and whole:
        pytest.skip(f"{agent}: the client sends no tool input object for the command to be the whole of")
    ids, acts = in_scope(root, agent, shell_call(agent, str(root), value, whole))
    assert ids == {"no-rm", OWN}, (agent, value, acts)
    assert all(a.trigger == "bash" and a.unbounded for a in acts)
    shown = acts[0].command
    if value is not None and not isinstance(value, int):  # what the person reads holds what was sent
        assert "rm" in shown


@pytest.mark.parametrize("agent", AGENTS)
def test_readable_commands_keep_their_scope(repo, home, agent):
    root = repo({"no-rm": RM_RULE})
    assert in_scope(root, agent, shell_call(agent, str(root), "ls -la"))[0] == set()
    assert in_scope(root, agent, shell_call(agent, str(root), "rm -rf build"))[0] == {"no-rm"}
    if agent == "codex":  # Codex's argv
        ids, acts = in_scope(root, agent, shell_call(agent, str(root), ["bash", "-lc", "ls -la"]))
        assert ids == set() and not acts[0].unbounded


def test_the_hook_holds_a_string_command_for_a_person(repo, home, monkeypatch):
    """End to end through the hook's entry: before, a string tool input was an empty command and passed."""
    root = repo({})
    monkeypatch.setattr(entry, "ASK_ARGS", ["--ask-within", "1"])
    payload = shell_call("claude-code", str(root), "rm -rf .claude/sentinel", whole=True)
    reply = entry.handle("claude-code", "pre-tool-use", json.dumps(payload))
    decision = json.loads(reply.stdout)["hookSpecificOutput"]
    assert decision["permissionDecision"] == "deny" and f"[{OWN}]" in decision["permissionDecisionReason"]
    readable = shell_call("claude-code", str(root), "ls -la")
    assert entry.handle("claude-code", "pre-tool-use", json.dumps(readable)).stdout == ""
