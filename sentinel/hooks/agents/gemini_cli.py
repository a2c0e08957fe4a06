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
if TYPE_CHECKING:  # types only: the hook's fast path imports neither typing nor the gate's engine
    from sentinel.jsontypes import JSONObject
    from sentinel.policy.gate.config import GateConfig
    from sentinel.policy.gate.engine import Verdict

from sentinel.hooks import common
from sentinel.hooks.agents import claude_code
from sentinel.policy.gate import action as actions
from sentinel.policy.gate.action import Action

NAME = "gemini-cli"
EVENT_NAMES = {"pre": "BeforeTool", "post": "AfterTool"}
MCP_NAMING = ("mcp_", "_")
SETTINGS_FILE = os.path.join(".gemini", "settings.json")
DEFER_WARNINGS = True  # BeforeTool has no channel to the model; AfterTool does


def event_of(payload: JSONObject) -> str | None:
    return common.text(payload, "hook_event_name")


session = claude_code.session


def action(payload: JSONObject, cfg: GateConfig, phase: str) -> Action | list[Action]:
    """Relative paths are taken from the payload's `cwd` (Gemini resolves them from its target directory)."""
    ctx = common.obj(payload.get("mcp_context"))
    return actions.files(claude_code.tool_call(payload, cfg, MCP_NAMING, str(ctx.get("server_name") or ""),
                                               str(ctx.get("tool_name") or "")), common.text(payload, "cwd"))


def render(phase: str, verdict: Verdict, payload: JSONObject | None = None) -> common.Reply:
    if verdict.blocks and phase == "pre":
        return common.Reply(stdout=common.as_json({"decision": "deny", "reason": common.block_text(verdict)}))
    text = common.advisory(verdict)
    if not text:
        return common.SILENT
    out: JSONObject = {"hookSpecificOutput": {"hookEventName": EVENT_NAMES.get(phase, "BeforeTool"),
                                                  "additionalContext": text}}
    if verdict.warnings:
        out["systemMessage"] = common.warn_text(verdict)
    return common.Reply(stdout=common.as_json(out))


HOOK_TIMEOUT_S = 600   # the BeforeTool hook's `timeout` Sentinel writes (in ms there)


def install(root: str, command: str) -> list[str]:
    path = os.path.join(root, SETTINGS_FILE)
    data = common.read_json(path)
    hooks = common.hooks_of(data, path)
    for event, timeout in (("BeforeTool", HOOK_TIMEOUT_S * 1000), ("AfterTool", 30000), ("AfterAgent", 10000)):
        extra = common.pre_args(HOOK_TIMEOUT_S) if event == "BeforeTool" else ""
        entry: JSONObject = {"matcher": "*", "hooks": [{"type": "command", "command": f"{command} hook {NAME} {event}{extra}",
                                            "timeout": timeout}]}
        if event == "AfterAgent":
            entry.pop("matcher")
        common.merge_event(hooks, event, entry)
    common.drop_ours(hooks, "SessionEnd")  # earlier installs ran Stop work on the best-effort SessionEnd
    return [common.write_json(path, data)]
