"""Windsurf Cascade hooks: `agent_action_name` (pre_run_command, pre_write_code, pre_mcp_tool_use, ...)
with a `tool_info` object and no tool name. Config: .windsurf/hooks.json. Block: exit 2, stderr shown.
Checked against Windsurf's documentation only: the `tool_info` keys are unverified, so several
spellings are read and an unknown shape passes (fail open)."""

from __future__ import annotations

import os
TYPE_CHECKING = False
if TYPE_CHECKING:  # types only: the hook's fast path imports neither typing nor the gate's engine
    from sentinel.jsontypes import JSONObject
    from sentinel.policy.gate.config import GateConfig

from sentinel.hooks import common
from sentinel.policy.gate import action as actions
from sentinel.policy.gate.action import Action

NAME = "windsurf"
EVENTS = ("pre_run_command", "pre_write_code", "pre_mcp_tool_use")
STOP = "post_cascade_response"  # Cascade's turn end: the Stop hook


def event_of(payload: JSONObject) -> str | None:
    return common.text(payload, "agent_action_name")


def _info(payload: JSONObject) -> JSONObject:
    info = payload.get("tool_info")
    if not isinstance(info, dict):
        raise ValueError("payload has no tool_info object")
    return info


def session(payload: JSONObject) -> tuple[str | None, str, str | None]:
    return common.text(common.obj(payload.get("tool_info")), "cwd"), str(payload.get("trajectory_id") or ""), None


def action(payload: JSONObject, cfg: GateConfig, phase: str) -> Action | list[Action] | None:
    event = str(payload.get("agent_action_name") or "")
    info = _info(payload)
    if event.endswith("run_command"):
        return actions.bash("run_command", info, common.text(info, "command_line") or "")
    if event.endswith("write_code"):
        # every path `tool_info` names (its keys are unverified), relative ones also from its `cwd` when sent;
        # a write with no path found may write any file, but a tool_info carrying no write at all (no path, no
        # content, no edits) is a shape Sentinel does not know: it passes, as every unknown shape here
        act = actions.file_write("write_code", info, common.text(info, "file_path") or "")
        if not act.file_path and not act.content and "edits" not in info:
            return None
        return actions.files(act, common.text(info, "cwd"))
    if event.endswith("mcp_tool_use"):
        args = info.get("mcp_tool_arguments")
        server, tool = str(info.get("mcp_server_name") or ""), str(info.get("mcp_tool_name") or "")
        return actions.mcp(tool, common.sent(args), server, tool)
    return None


render = common.render_exit2


HOOK_TIMEOUT_S = 30    # UNVERIFIED: Windsurf documents no hook timeout; an ask waits as if it were 30 s


def install(root: str, command: str) -> list[str]:
    path = os.path.join(root, ".windsurf", "hooks.json")
    data = common.read_json(path)
    hooks = common.hooks_of(data, path)
    for event in EVENTS:
        common.merge_event(hooks, event, {"command": f"{command} hook {NAME} {event}{common.pre_args(HOOK_TIMEOUT_S)}",
                                          "show_output": True})
    common.merge_event(hooks, STOP, {"command": f"{command} hook {NAME} {STOP}", "show_output": True})
    return [common.write_json(path, data)]
