"""Cline hooks: an executable named after the hook in .clinerules/hooks/ (PreToolUse, PostToolUse,
TaskComplete), read by the VS Code extension and by the CLI.

Two payload generations are understood. Cline 3.x (CLI and current extension) sends
`hookName: "tool_call"` with `tool_call{id, name, input}` beside a legacy `preToolUse{toolName,
parameters}` whose non-string values are JSON-encoded strings; its tools are `run_commands{commands}`,
`editor{path, old_text, new_text}`, `apply_patch{input}` and MCP `<server>__<tool>`. The classic
extension sends `preToolUse{toolName, parameters}` with `execute_command`, `write_to_file`,
`replace_in_file` and `use_mcp_tool{server_name, tool_name, arguments}`.

Answer: {cancel, contextModification, errorMessage, overrideInput}. `cancel: true` ends Cline's whole
task and shows the reason nowhere, so a block of a 3.x built-in tool instead replaces the call's
input with null (the tool fails without acting) and hands the reason to the model as context. MCP
calls (whose input Cline sends on as `{}`, which could still run an argument-less tool), classic
payloads and unknown tools are blocked with `cancel: true`: the task ends.

What Cline 3.x's model then reads (seen from the CLI by `sentinel hook compat`): the tool result
`{"error":"✖ Invalid input..."}` (Cline's own schema check of the null input), then a user message
`<hook_context source="PreToolUse" tool_name=... tool_call_id=...>` holding the context, which
therefore also says that this error is Sentinel's doing. File hooks cannot answer Cline's internal
`skip` (the runtime reads only cancel, context and overrideInput from them), so no answer shape
puts the reason into the tool result itself without running something in the tool's place.
"""

from __future__ import annotations

import json
import os
import stat
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

from sentinel.hooks import common
from sentinel.policy.gate import action as actions

NAME = "cline"
MCP_NAMING = ("", "__")
HOOKS = ("PreToolUse", "PostToolUse", "TaskComplete")
HOOKS_DIR = os.path.join(".clinerules", "hooks")
# 3.x built-in tools that fail without acting when their input is null: blocked without ending the task.
NULLABLE = frozenset({"run_commands", "editor", "apply_patch"})
WITHHELD = ("\n(The tool did not run: Sentinel withheld this call, which is why the tool reported "
            "\"Invalid input\"; the input itself was not at fault.)")


def event_of(payload: dict[str, Any]) -> str | None:
    return payload.get("hookName")


def session(payload: dict[str, Any]) -> tuple[str | None, str, str | None]:
    return common.first_root(payload, "workspaceRoots", "cwd"), str(payload.get("taskId") or ""), None


def _call(payload: dict[str, Any]) -> tuple[str, dict[str, Any], Any]:
    """(tool name, arguments, output) from the 3.x `tool_call`/`tool_result` or the legacy body."""
    for key in ("tool_call", "tool_result"):
        body = payload.get(key)
        if isinstance(body, dict) and isinstance(body.get("name"), str):
            args = body.get("input") if isinstance(body.get("input"), dict) else {}
            return body["name"], args, body.get("output")
    body = payload.get("preToolUse") or payload.get("postToolUse")
    if not isinstance(body, dict) or not isinstance(body.get("toolName"), str):
        raise ValueError("payload has no tool_call.name or preToolUse.toolName")
    params = body.get("parameters") if isinstance(body.get("parameters"), dict) else {}
    return body["toolName"], {k: _decoded(v) for k, v in params.items()}, body.get("result")


def _decoded(value: Any) -> Any:
    """Cline 3.x JSON-encodes every non-string parameter: '["git push"]' is the list it stands for."""
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def action(payload: dict[str, Any], cfg: Any, phase: str) -> Any:
    name, params, output = _call(payload)
    if name in ("use_mcp_tool", "access_mcp_resource"):
        args = common.loads_maybe(params.get("arguments"))
        server, tool = str(params.get("server_name") or ""), str(params.get("tool_name") or params.get("uri") or "")
        return actions.mcp(name, args if isinstance(args, dict) else {}, server, tool)
    if name == "apply_patch":
        return actions.patch(name, params, common.patch_text(params)) or actions.Action("other", name, params)
    act = common.tool_action(name, params, cfg, MCP_NAMING)
    act.tool_output = common.output_text(output)
    return act


def render(phase: str, verdict: Any, payload: dict[str, Any] | None = None) -> common.Reply:
    if verdict.blocks and phase == "pre":
        text = common.block_text(verdict)
        call = (payload or {}).get("tool_call")
        if isinstance(call, dict) and call.get("name") in NULLABLE:
            return common.Reply(stdout=common.as_json({"cancel": False, "overrideInput": None,
                                                       "contextModification": text + WITHHELD}))
        return common.Reply(stdout=common.as_json({"cancel": True, "errorMessage": text}))
    text = common.advisory(verdict)
    if not text:
        return common.SILENT
    return common.Reply(stdout=common.as_json({"cancel": False, "contextModification": text}))


def install(root: str, command: str, timeout_s: int = 0) -> list[str]:  # the client sets no hook timeout
    paths = []
    for hook in HOOKS:
        path = os.path.join(root, HOOKS_DIR, hook)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(f"#!/bin/sh\n# Sentinel rule gate (sentinel hook install cline)\nexec {command} hook {NAME} {hook}\n")
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        paths.append(path)
    return paths
