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
if TYPE_CHECKING:  # types only: the hook's fast path imports neither typing nor the gate's engine
    from sentinel.jsontypes import JSON, JSONObject
    from sentinel.policy.gate.config import GateConfig
    from sentinel.policy.gate.action import Action
    from sentinel.policy.gate.engine import Verdict

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


def event_of(payload: JSONObject) -> str | None:
    return common.text(payload, "hookName")


def session(payload: JSONObject) -> tuple[str | None, str, str | None]:
    return common.first_root(payload, "workspaceRoots", "cwd"), str(payload.get("taskId") or ""), None


def _call(payload: JSONObject) -> tuple[str, JSONObject, JSON]:
    """(tool name, arguments, output) from the 3.x `tool_call`/`tool_result` or the legacy body."""
    for key in ("tool_call", "tool_result"):
        body = payload.get(key)
        if isinstance(body, dict):
            name = body.get("name")
            if isinstance(name, str):
                return name, common.sent(body.get("input")), body.get("output")
    body = payload.get("preToolUse") or payload.get("postToolUse")
    tool = body.get("toolName") if isinstance(body, dict) else None
    if not isinstance(body, dict) or not isinstance(tool, str):
        raise ValueError("payload has no tool_call.name or preToolUse.toolName")
    params = common.sent(body.get("parameters"))
    return tool, {k: _decoded(v) for k, v in params.items()}, body.get("result")


def _decoded(value: JSON) -> JSON:
    """Cline 3.x JSON-encodes every non-string parameter: '["git push"]' is the list it stands for."""
    if isinstance(value, str) and value[:1] in "[{":
        try:
            decoded: JSON = json.loads(value)
            return decoded
        except ValueError:
            return value
    return value


def action(payload: JSONObject, cfg: GateConfig, phase: str) -> Action | list[Action]:
    name, params, output = _call(payload)
    if name in ("use_mcp_tool", "access_mcp_resource"):
        return _classic_mcp(name, params)
    # Cline resolves a relative path from the workspace root (the payload has no `cwd`)
    root = common.first_root(payload, "workspaceRoots", "cwd")
    if name == "apply_patch":
        found = actions.patch(name, params, common.patch_text(params))
        if not found:  # a patch whose files cannot be read may write any file; shown and bound as sent
            found = [actions.file_write(name, {})]
            found[0].tool_input = params
        return actions.files(found, root)
    act = common.tool_action(name, params, cfg, MCP_NAMING)
    act.tool_output = common.output_text(output)
    return actions.files(act, root)


def _classic_mcp(name: str, params: JSONObject) -> Action:
    """The classic extension's MCP call as the call it makes: `use_mcp_tool` runs `tool_name` on `server_name`
    with `arguments`; `access_mcp_resource` reads `uri` from `server_name` (its tool, for scopes, is the URI; its
    input holds the URI too). So `db:drop_table` scopes, the approval's card and the allowlist key all name the
    MCP tool or resource itself, never only the wrapper (`use_mcp_tool` with `drop_table` in no field shown)."""
    server = _param(params, "server_name")
    if name == "access_mcp_resource":
        uri = _param(params, "uri")
        return actions.mcp(name, {"uri": uri}, server, uri)
    return actions.mcp(name, common.sent(common.loads_maybe(params.get("arguments"))), server,
                       _param(params, "tool_name"))


def _param(params: JSONObject, key: str) -> str:
    value = params.get(key)
    return value if isinstance(value, str) else "" if value is None else json.dumps(value)


def render(phase: str, verdict: Verdict, payload: JSONObject | None = None) -> common.Reply:
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


HOOK_TIMEOUT_S = 30    # Cline's own, fixed (hook-factory.ts): Sentinel cannot lengthen it


def install(root: str, command: str) -> list[str]:
    paths = []
    for hook in HOOKS:
        path = os.path.join(root, HOOKS_DIR, hook)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            extra = common.pre_args(HOOK_TIMEOUT_S) if hook == "PreToolUse" else ""
            fh.write(f"#!/bin/sh\n# Sentinel rule gate (sentinel hook install cline)\nexec {command} hook {NAME} {hook}{extra}\n")
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        paths.append(path)
    return paths
