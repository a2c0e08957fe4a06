"""Claude Code: PreToolUse / PostToolUse / Stop with `tool_name` + `tool_input` on stdin; MCP tools are
`mcp__<server>__<tool>`, and the client names the server itself in `mcp_server.name`.

Block: exit 0 with hookSpecificOutput.permissionDecision "deny" and the reason. Warnings
and context go to hookSpecificOutput.additionalContext (never permissionDecision
"allow", which would bypass the user's permission prompts). Config: .claude/settings.json.
"""

from __future__ import annotations

import os
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

from sentinel.hooks import common
from sentinel.hooks.install import HOOK_TIMEOUT_S
from sentinel.policy.gate.action import Action

NAME = "claude-code"
EVENT_NAMES = {"pre": "PreToolUse", "post": "PostToolUse"}
MCP_NAMING = ("mcp__", "__")


def session(payload: dict[str, Any]) -> tuple[str | None, str, str | None]:
    return payload.get("cwd"), str(payload.get("session_id") or ""), payload.get("transcript_path")


def action(payload: dict[str, Any], cfg: Any, phase: str) -> Action | None:
    server = payload.get("mcp_server")
    return tool_call(payload, cfg, MCP_NAMING, str(server.get("name") or "") if isinstance(server, dict) else "")


def tool_call(payload: dict[str, Any], cfg: Any, naming: tuple[str, str], server: str = "", tool: str = "") -> Action:
    """`tool_name` + `tool_input` (+ `tool_response`): the shape Claude Code, Codex and Gemini CLI share."""
    name = payload.get("tool_name")
    if not isinstance(name, str) or not name:
        raise ValueError("payload has no tool_name")
    act = common.tool_action(name, payload.get("tool_input"), cfg, naming, server, tool)
    act.tool_output = common.output_text(payload.get("tool_response"))
    return act


def render(phase: str, verdict: Any, payload: dict[str, Any] | None = None) -> common.Reply:
    event = EVENT_NAMES.get(phase, "PreToolUse")
    if verdict.blocks and phase == "pre":
        out = {"hookSpecificOutput": {"hookEventName": event, "permissionDecision": "deny",
                                      "permissionDecisionReason": common.block_text(verdict)}}
        return common.Reply(stdout=common.as_json(out))
    text = common.advisory(verdict)
    if not text:
        return common.SILENT
    out: dict[str, Any] = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}
    if verdict.warnings:
        out["systemMessage"] = common.warn_text(verdict)
    return common.Reply(stdout=common.as_json(out))


def hook_entries(command: str, timeout_s: int = HOOK_TIMEOUT_S) -> dict[str, list[dict[str, Any]]]:
    def hook(event: str, timeout: int) -> dict[str, Any]:
        return {"type": "command", "command": f"{command} {event}", "timeout": timeout}

    return {"PreToolUse": [{"matcher": "*", "hooks": [hook("pre-tool-use", timeout_s)]}],
            "PostToolUse": [{"matcher": "*", "hooks": [hook("post-tool-use", timeout_s)]}],
            "Stop": [{"hooks": [hook("stop", 10)]}]}


def install(root: str, command: str, timeout_s: int = HOOK_TIMEOUT_S) -> list[str]:
    path = os.path.join(root, ".claude", "settings.json")
    data = common.read_json(path)
    hooks = data.setdefault("hooks", {})
    for event, entries in hook_entries(f"{command} hook {NAME}", timeout_s).items():
        common.merge_event(hooks, event, entries[0])
    return [common.write_json(path, data)]
