"""Claude Code: PreToolUse / PostToolUse / Stop with `tool_name` + `tool_input` on stdin; MCP tools are
`mcp__<server>__<tool>`, and the client names the server itself in `mcp_server.name`.

Block: exit 0 with hookSpecificOutput.permissionDecision "deny" and the reason. Warnings
and context go to hookSpecificOutput.additionalContext (never permissionDecision
"allow", which would bypass the user's permission prompts), except for a call a person
approved through Sentinel after an `ask` rule held it (`render_allow`): that person decided
this exact call. Config: .claude/settings.json.
"""

from __future__ import annotations

import os
TYPE_CHECKING = False
if TYPE_CHECKING:  # types only: the hook's fast path imports neither typing nor the gate's engine
    from sentinel.jsontypes import JSONObject
    from sentinel.policy.gate.config import GateConfig
    from sentinel.policy.gate.engine import Verdict

from sentinel.hooks import common
from sentinel.policy.gate import action as actions
from sentinel.policy.gate.action import Action

NAME = "claude-code"
HOOK_TIMEOUT_S = 600   # the pre-tool hook's `timeout` Sentinel writes: the window a person has for an ask
EVENT_NAMES = {"pre": "PreToolUse", "post": "PostToolUse"}
MCP_NAMING = ("mcp__", "__")


def session(payload: JSONObject) -> tuple[str | None, str, str | None]:
    return common.text(payload, "cwd"), str(payload.get("session_id") or ""), common.text(payload, "transcript_path")


def action(payload: JSONObject, cfg: GateConfig, phase: str) -> Action | list[Action]:
    """One action per file a file tool names (relative paths are taken from the payload's `cwd`, as Claude Code
    resolves them)."""
    server = payload.get("mcp_server")
    return actions.files(tool_call(payload, cfg, MCP_NAMING,
                                   str(server.get("name") or "") if isinstance(server, dict) else ""),
                         common.text(payload, "cwd"))


def tool_call(payload: JSONObject, cfg: GateConfig, naming: tuple[str, str], server: str = "", tool: str = "") -> Action:
    """`tool_name` + `tool_input` (+ `tool_response`): the shape Claude Code, Codex and Gemini CLI share."""
    name = payload.get("tool_name")
    if not isinstance(name, str) or not name:
        raise ValueError("payload has no tool_name")
    act = common.tool_action(name, common.sent(payload.get("tool_input")), cfg, naming, server, tool)
    act.tool_output = common.output_text(payload.get("tool_response"))
    return act


def render(phase: str, verdict: Verdict, payload: JSONObject | None = None) -> common.Reply:
    event = EVENT_NAMES.get(phase, "PreToolUse")
    if verdict.blocks and phase == "pre":
        deny: JSONObject = {"hookSpecificOutput": {"hookEventName": event, "permissionDecision": "deny",
                                                   "permissionDecisionReason": common.block_text(verdict)}}
        return common.Reply(stdout=common.as_json(deny))
    text = common.advisory(verdict)
    if not text:
        return common.SILENT
    out: JSONObject = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}
    if verdict.warnings:
        out["systemMessage"] = common.warn_text(verdict)
    return common.Reply(stdout=common.as_json(out))


def render_allow(verdict: Verdict, why: str, payload: JSONObject | None = None) -> common.Reply:
    """A person approved this exact call (an `ask` rule held it): allow, with any warnings as context."""
    specific: JSONObject = {"hookEventName": "PreToolUse", "permissionDecision": "allow",
                            "permissionDecisionReason": why}
    out: JSONObject = {"hookSpecificOutput": specific}
    text = common.advisory(verdict)
    if text:
        specific["additionalContext"] = text
    return common.Reply(stdout=common.as_json(out))


def hook_entries(command: str, timeout_s: int = 30) -> dict[str, list[JSONObject]]:
    def hook(event: str, timeout: int) -> JSONObject:
        return {"type": "command", "command": f"{command} {event}", "timeout": timeout}

    return {"PreToolUse": [{"matcher": "*", "hooks": [{**hook("pre-tool-use", HOOK_TIMEOUT_S), "command":
                                                       f"{command} pre-tool-use{common.pre_args(HOOK_TIMEOUT_S)}"}]}],
            "PostToolUse": [{"matcher": "*", "hooks": [hook("post-tool-use", timeout_s)]}],
            "Stop": [{"hooks": [hook("stop", 10)]}]}


def install(root: str, command: str) -> list[str]:
    path = os.path.join(root, ".claude", "settings.json")
    data = common.read_json(path)
    hooks = common.hooks_of(data, path)
    for event, entries in hook_entries(f"{command} hook {NAME}").items():
        common.merge_event(hooks, event, entries[0])
    return [common.write_json(path, data)]
