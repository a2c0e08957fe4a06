"""Cursor agent hooks: one payload per event (`hook_event_name`): beforeShellExecution {command},
beforeMCPExecution {tool_name, tool_input (JSON string), url|command}, preToolUse {tool_name,
tool_input}, afterFileEdit, stop. Config: .cursor/hooks.json (version 1).

Block: stdout {"permission": "deny", "user_message", "agent_message"}. Pass: no output.
"""

from __future__ import annotations

import os
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

from sentinel.hooks import common
from sentinel.policy.gate import action as actions
from sentinel.policy.gate.action import Action, classify

NAME = "cursor"


def event_of(payload: dict[str, Any]) -> str | None:
    return payload.get("hook_event_name")


def session(payload: dict[str, Any]) -> tuple[str | None, str, str | None]:
    cwd = common.first_root(payload, "cwd", "workspace_roots")
    return cwd, str(payload.get("conversation_id") or ""), payload.get("transcript_path")


def action(payload: dict[str, Any], cfg: Any, phase: str) -> Action | None:
    event = common.normalize(str(payload.get("hook_event_name") or ""))
    if event == "beforeshellexecution":
        return actions.bash("shell", {"command": payload.get("command")}, str(payload.get("command") or ""))
    if event == "beforemcpexecution":
        args = common.loads_maybe(payload.get("tool_input"))
        server = str(payload.get("server") or payload.get("url") or payload.get("command") or "")
        tool = str(payload.get("tool_name") or "")
        return actions.mcp(tool, args if isinstance(args, dict) else {}, server, tool)
    if event == "afterfileedit":
        return actions.file_write("edit", {"edits": payload.get("edits")}, str(payload.get("file_path") or ""))
    if event in ("beforereadfile",):
        return None
    name = payload.get("tool_name")
    if not isinstance(name, str) or not name:
        raise ValueError("payload has no tool_name")
    args = common.loads_maybe(payload.get("tool_input"))
    act = classify(name, args if isinstance(args, dict) else {}, cfg.tool_map, cfg.mcp_prefix, cfg.mcp_separator)
    act.tool_output = common.output_text(payload.get("tool_output"))
    return act


def render(phase: str, verdict: Any) -> common.Reply:
    if verdict.blocks and phase == "pre":
        text = common.block_text(verdict)
        return common.Reply(stdout=common.as_json({"permission": "deny", "user_message": text,
                                                   "agent_message": text}))
    return common.stderr_advisory(verdict)


def install(root: str, command: str) -> list[str]:
    path = os.path.join(root, ".cursor", "hooks.json")
    data = common.read_json(path)
    data.setdefault("version", 1)
    hooks = data.setdefault("hooks", {})
    for event in ("beforeShellExecution", "beforeMCPExecution", "preToolUse", "stop"):
        common.merge_event(hooks, event, {"command": f"{command} hook {NAME} {event}"})
    return [common.write_json(path, data)]
