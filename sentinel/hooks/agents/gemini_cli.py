"""Gemini CLI hooks (.gemini/settings.json, timeouts in milliseconds): BeforeTool / AfterTool / AfterAgent
with `tool_name` + `tool_input`; MCP tools are `mcp_<server>_<tool>`, and BeforeTool names the server
itself in `mcp_context{server_name, tool_name}`.

Block: stdout {"decision": "deny", "reason": ...} (the model reads `Tool execution blocked: <reason>`).
BeforeTool ignores additionalContext, so a warning found before the tool runs is held and handed to
the model by AfterTool's `hookSpecificOutput.additionalContext` (see `sentinel.hooks.pending`);
`systemMessage` shows it to the user at once. Project hooks load only in a trusted folder.
"""

from __future__ import annotations

import os
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

from sentinel.hooks import common
from sentinel.hooks.install import HOOK_TIMEOUT_S
from sentinel.hooks.agents import claude_code
from sentinel.policy.gate.action import Action

NAME = "gemini-cli"
EVENT_NAMES = {"pre": "BeforeTool", "post": "AfterTool"}
MCP_NAMING = ("mcp_", "_")
SETTINGS_FILE = os.path.join(".gemini", "settings.json")
DEFER_WARNINGS = True  # BeforeTool has no channel to the model; AfterTool does


def event_of(payload: dict[str, Any]) -> str | None:
    return payload.get("hook_event_name")


session = claude_code.session


def action(payload: dict[str, Any], cfg: Any, phase: str) -> Action | None:
    ctx = payload.get("mcp_context") if isinstance(payload.get("mcp_context"), dict) else {}
    return claude_code.tool_call(payload, cfg, MCP_NAMING, str(ctx.get("server_name") or ""),
                                 str(ctx.get("tool_name") or ""))


def render(phase: str, verdict: Any, payload: dict[str, Any] | None = None) -> common.Reply:
    if verdict.blocks and phase == "pre":
        return common.Reply(stdout=common.as_json({"decision": "deny", "reason": common.block_text(verdict)}))
    text = common.advisory(verdict)
    if not text:
        return common.SILENT
    out: dict[str, Any] = {"hookSpecificOutput": {"hookEventName": EVENT_NAMES.get(phase, "BeforeTool"),
                                                  "additionalContext": text}}
    if verdict.warnings:
        out["systemMessage"] = common.warn_text(verdict)
    return common.Reply(stdout=common.as_json(out))


def install(root: str, command: str, timeout_s: int = HOOK_TIMEOUT_S) -> list[str]:
    path = os.path.join(root, SETTINGS_FILE)
    data = common.read_json(path)
    hooks = data.setdefault("hooks", {})
    for event, timeout in (("BeforeTool", timeout_s * 1000), ("AfterTool", timeout_s * 1000), ("AfterAgent", 10000)):
        entry = {"matcher": "*", "hooks": [{"type": "command", "command": f"{command} hook {NAME} {event}",
                                            "timeout": timeout}]}
        if event == "AfterAgent":
            entry.pop("matcher")
        common.merge_event(hooks, event, entry)
    common.drop_ours(hooks, "SessionEnd")  # earlier installs ran Stop work on the best-effort SessionEnd
    return [common.write_json(path, data)]
