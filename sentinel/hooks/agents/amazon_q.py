"""Amazon Q Developer CLI: hooks in an agent config (.amazonq/cli-agents/*.json); payload
{hook_event_name, cwd, tool_name, tool_input}; MCP tools are named `@server/tool`.
Block: exit 2, stderr is returned to the model."""

from __future__ import annotations

import os
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

from sentinel.hooks import common
from sentinel.policy.gate import action as actions
from sentinel.policy.gate.action import Action, classify

NAME = "amazon-q"


def event_of(payload: dict[str, Any]) -> str | None:
    return payload.get("hook_event_name")


def session(payload: dict[str, Any]) -> tuple[str | None, str, str | None]:
    return payload.get("cwd"), str(payload.get("session_id") or ""), None


def action(payload: dict[str, Any], cfg: Any, phase: str) -> Action | None:
    name = payload.get("tool_name")
    if not isinstance(name, str) or not name:
        raise ValueError("payload has no tool_name")
    args = payload.get("tool_input") if isinstance(payload.get("tool_input"), dict) else {}
    if name.startswith("@") and "/" in name:
        server, _, tool = name[1:].partition("/")
        act = actions.mcp(name, args, server, tool)
    else:
        act = classify(name, args, cfg.tool_map, cfg.mcp_prefix, cfg.mcp_separator)
    act.tool_output = common.output_text(payload.get("tool_response"))
    return act


render = common.render_exit2


def install(root: str, command: str) -> list[str]:
    path = os.path.join(root, ".amazonq", "cli-agents", "sentinel.json")
    data = common.read_json(path) or {"name": "sentinel", "description": "Default agent guarded by the Sentinel rule gate",
                                      "tools": ["*"], "allowedTools": []}
    hooks = data.setdefault("hooks", {})
    common.merge_event(hooks, "preToolUse", {"matcher": "*", "command": f"{command} hook {NAME} preToolUse",
                                             "timeout_ms": 30000})
    common.merge_event(hooks, "postToolUse", {"matcher": "*", "command": f"{command} hook {NAME} postToolUse",
                                              "timeout_ms": 30000})
    return [common.write_json(path, data)]
