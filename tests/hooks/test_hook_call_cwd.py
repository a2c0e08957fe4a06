"""Where a call runs is what its client's adapter reads, for every client: the hook locates the call's writes from
`adapter.session(payload)`'s directory, never from a re-read of one payload key.

Windsurf sends its command's directory in `tool_info.cwd`, Cline none at all (its commands run in the workspace
root); the hook used to read the top-level `cwd` only, so their relative writes were taken from the repository's
root: `echo off > hooks.json` in `.windsurf/` passed as a write of the root's `hooks.json`."""

from __future__ import annotations

import json

import pytest
from test_hook_protocols import block_reason

from sentinel.hooks import agents, entry
from sentinel.policy.gate.action import Action

OWN = "[sentinel-own-files]"
SECRETS = {"kind": "scope", "trigger": "file_write", "severity": "block", "scope": ["app/secrets/**"],
           "description": "secrets are not written by agents"}


@pytest.fixture
def root(repo, home, monkeypatch):
    made = repo({"secrets": SECRETS})
    for sub in (".windsurf", "app/secrets"):
        (made / sub).mkdir(parents=True)
    monkeypatch.setattr(entry, "ASK_ARGS", ["--ask-within", "0"])
    return made


def windsurf(event: str, info: dict) -> dict:
    return {"agent_action_name": event, "trajectory_id": "t", "execution_id": "e", "tool_info": info}


def test_windsurf_commands_run_in_tool_info_cwd(root):
    wd = str(root / ".windsurf")
    reply = entry.handle("windsurf", "pre_run_command",
                         json.dumps(windsurf("pre_run_command", {"command_line": "echo off > hooks.json", "cwd": wd})))
    assert OWN in (block_reason("windsurf", reply) or ""), reply
    elsewhere = windsurf("pre_run_command", {"command_line": "echo off > hooks.json", "cwd": str(root / "app")})
    assert entry.handle("windsurf", "pre_run_command", json.dumps(elsewhere)).code == 0


def test_windsurf_mcp_calls_name_files_from_tool_info_cwd(root):
    """An MCP tool's relative path lands where Cascade runs: `hooks.json` in `.windsurf/` is the hook settings."""
    call = {"mcp_server_name": "fs", "mcp_tool_name": "write_file", "mcp_tool_arguments": {"path": "hooks.json"}}
    reply = entry.handle("windsurf", "pre_mcp_tool_use",
                         json.dumps(windsurf("pre_mcp_tool_use", {**call, "cwd": str(root / ".windsurf")})))
    assert OWN in (block_reason("windsurf", reply) or ""), reply
    reply = entry.handle("windsurf", "pre_mcp_tool_use",
                         json.dumps(windsurf("pre_mcp_tool_use", {**call, "cwd": str(root / "app")})))
    assert reply.code == 0, reply


def test_cline_commands_run_in_its_workspace_root(root):
    """Cline's workspace is `app/` inside the repository: `rm -rf secrets` there removes `app/secrets`."""
    payload = {"hookName": "tool_call", "taskId": "t", "workspaceRoots": [str(root / "app")],
               "tool_call": {"id": "1", "name": "run_commands", "input": {"commands": ["rm -rf secrets"]}}}
    assert "[secrets]" in (block_reason("cline", entry.handle("cline", "PreToolUse", json.dumps(payload))) or "")
    payload["workspaceRoots"] = [str(root)]  # the same line in the repository's root removes another directory
    assert entry.handle("cline", "PreToolUse", json.dumps(payload)).stdout == ""


def test_claude_code_commands_run_in_its_cwd_as_before(root):
    def bash(command: str, cwd: str) -> str | None:
        payload = {"session_id": "s", "cwd": cwd, "tool_name": "Bash", "tool_input": {"command": command}}
        return block_reason("claude-code", entry.handle("claude-code", "pre-tool-use", json.dumps(payload)))

    assert "[secrets]" in (bash("rm -rf secrets", str(root / "app")) or "")
    assert bash("rm -rf secrets", str(root)) is None
    assert OWN in (bash("echo off > hooks.json", str(root / ".windsurf")) or "")
    assert bash("echo off > hooks.json", str(root)) is None


CALLS = {
    "claude-code": ("pre-tool-use", {"session_id": "s", "cwd": "WD", "tool_name": "Bash",
                                     "tool_input": {"command": "rm -rf secrets"}}),
    "codex": ("pre-tool-use", {"session_id": "s", "cwd": "WD", "tool_name": "Bash",
                               "tool_input": {"command": "rm -rf secrets"}}),
    "gemini-cli": ("BeforeTool", {"session_id": "s", "cwd": "WD", "hook_event_name": "BeforeTool",
                                  "tool_name": "run_shell_command", "tool_input": {"command": "rm -rf secrets"}}),
    "amazon-q": ("preToolUse", {"hook_event_name": "preToolUse", "cwd": "WD", "tool_name": "execute_bash",
                                "tool_input": {"command": "rm -rf secrets"}}),
    "copilot-cli": ("preToolUse", {"cwd": "WD", "toolName": "bash", "toolArgs": {"command": "rm -rf secrets"}}),
    "cline": ("PreToolUse", {"hookName": "PreToolUse", "taskId": "t", "workspaceRoots": ["WD"],
                             "preToolUse": {"toolName": "execute_command",
                                            "parameters": {"command": "rm -rf secrets"}}}),
    "cursor": ("beforeShellExecution", {"hook_event_name": "beforeShellExecution", "conversation_id": "c",
                                        "workspace_roots": ["WD"], "command": "rm -rf secrets"}),
    "windsurf": ("pre_run_command", {"agent_action_name": "pre_run_command", "trajectory_id": "t",
                                     "tool_info": {"command_line": "rm -rf secrets", "cwd": "WD"}}),
}


@pytest.mark.parametrize("agent", sorted(CALLS))
def test_every_call_is_located_where_its_adapter_says_it_runs(root, monkeypatch, agent):
    event, shape = CALLS[agent]
    payload = json.loads(json.dumps(shape).replace("WD", str(root / "app")))
    seen: list[str | None] = []
    locate = Action.locate

    def spy(self: Action, at: str | None, cwd: str | None = None) -> Action:
        seen.append(cwd)
        return locate(self, at, cwd)

    monkeypatch.setattr(Action, "locate", spy)
    reply = entry.handle(agent, event, json.dumps(payload))
    assert seen and set(seen) == {agents.get(agent).session(payload)[0]} == {str(root / "app")}, seen
    assert "[secrets]" in (block_reason(agent, reply) or ""), reply
