"""Cline hooks: an executable named after the hook in .clinerules/hooks/; payload {hookName,
workspaceRoots, taskId, preToolUse: {toolName, parameters}}.

Block: stdout {"cancel": true, "errorMessage": ...}; warnings and context:
{"cancel": false, "contextModification": ...}.
"""

from __future__ import annotations

import os
import stat
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

from sentinel.hooks import common
from sentinel.policy.gate import action as actions
from sentinel.policy.gate.action import Action, classify

NAME = "cline"


def event_of(payload: dict[str, Any]) -> str | None:
    return payload.get("hookName")


def session(payload: dict[str, Any]) -> tuple[str | None, str, str | None]:
    return common.first_root(payload, "workspaceRoots", "cwd"), str(payload.get("taskId") or ""), None


def action(payload: dict[str, Any], cfg: Any, phase: str) -> Action | None:
    body = payload.get("preToolUse") or payload.get("postToolUse")
    if not isinstance(body, dict) or not isinstance(body.get("toolName"), str):
        raise ValueError("payload has no preToolUse.toolName")
    name, params = body["toolName"], body.get("parameters") if isinstance(body.get("parameters"), dict) else {}
    if name in ("use_mcp_tool", "access_mcp_resource"):
        args = common.loads_maybe(params.get("arguments"))
        server, tool = str(params.get("server_name") or ""), str(params.get("tool_name") or params.get("uri") or "")
        return actions.mcp(name, args if isinstance(args, dict) else {}, server, tool)
    act = classify(name, params, cfg.tool_map, cfg.mcp_prefix, cfg.mcp_separator)
    act.tool_output = common.output_text(body.get("result"))
    return act


def render(phase: str, verdict: Any) -> common.Reply:
    if verdict.blocks and phase == "pre":
        return common.Reply(stdout=common.as_json({"cancel": True, "errorMessage": common.block_text(verdict)}))
    text = common.advisory(verdict)
    if not text:
        return common.SILENT
    return common.Reply(stdout=common.as_json({"cancel": False, "contextModification": text}))


def install(root: str, command: str) -> list[str]:
    paths = []
    for hook in ("PreToolUse", "PostToolUse"):
        path = os.path.join(root, ".clinerules", "hooks", hook)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(f"#!/bin/sh\n# Sentinel rule gate (sentinel hook install cline)\nexec {command} hook {NAME} {hook}\n")
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        paths.append(path)
    return paths
