"""Cursor agent hooks: one payload per event (`hook_event_name`): beforeShellExecution {command},
beforeMCPExecution {tool_name, tool_input (JSON string), url | command}, preToolUse {tool_name,
tool_input}, postToolUse, afterFileEdit, stop. Config: .cursor/hooks.json (version 1). Checked
against Cursor's documentation only (Cursor has no headless client to drive).

Shell and MCP calls reach both preToolUse and their own event: they are judged at their own event
only (preToolUse skips `Shell` and `MCP:*`), so a call costs one judge call, not two. The MCP payload
names the server by its url or command only: the server's name is looked up in the project's and
the user's `.cursor/mcp.json`, so `server:tool` scopes match.

Block: stdout {"permission": "deny", "user_message", "agent_message"}. Pass: no output. Unknown
shapes fail open.
"""

from __future__ import annotations

import json
import os
TYPE_CHECKING = False
if TYPE_CHECKING:  # types only: the hook's fast path imports neither typing nor the gate's engine
    from sentinel.jsontypes import JSON, JSONObject
    from sentinel.policy.gate.config import GateConfig
    from sentinel.policy.gate.engine import Verdict

from sentinel.hooks import common
from sentinel.policy.gate import action as actions
from sentinel.policy.gate.action import Action

NAME = "cursor"
MCP_TOOL_PREFIX = "MCP:"  # preToolUse's name for an MCP call (judged at beforeMCPExecution)
EVENTS = ("beforeShellExecution", "beforeMCPExecution", "preToolUse", "postToolUse", "stop")
SEEN_ELSEWHERE = ("Shell",)  # judged at beforeShellExecution


def event_of(payload: JSONObject) -> str | None:
    return common.text(payload, "hook_event_name")


def session(payload: JSONObject) -> tuple[str | None, str, str | None]:
    cwd = common.first_root(payload, "cwd", "workspace_roots")
    return cwd, str(payload.get("conversation_id") or ""), common.text(payload, "transcript_path")


def action(payload: JSONObject, cfg: GateConfig, phase: str) -> Action | list[Action] | None:
    event = common.normalize(str(payload.get("hook_event_name") or ""))
    if event == "beforeshellexecution":
        command = payload.get("command")  # anything but a string is unbounded (sentinel.policy.gate.action.bash)
        return actions.bash("shell", {"command": command} if isinstance(command, str) else common.sent(command))
    if event == "beforemcpexecution":
        args = common.loads_maybe(payload.get("tool_input"))
        tool = str(payload.get("tool_name") or "")
        return actions.mcp(tool, common.sent(args), mcp_server(payload), tool)
    if event == "afterfileedit":
        return actions.files(actions.file_write("edit", {"edits": payload.get("edits")},
                                                common.text(payload, "file_path") or ""), *_bases(payload))
    if event in ("beforereadfile",):
        return None
    name = payload.get("tool_name")
    if not isinstance(name, str) or not name:
        raise ValueError("payload has no tool_name")
    if phase == "pre" and (name in SEEN_ELSEWHERE or name.startswith(MCP_TOOL_PREFIX)):
        return None
    args = common.loads_maybe(payload.get("tool_input"))
    act = common.tool_action(name, common.sent(args), cfg)
    act.tool_output = common.output_text(payload.get("tool_output"))
    return actions.files(act, *_bases(payload))


def _bases(payload: JSONObject) -> tuple[str | None, ...]:
    """Where a relative path may be taken from: Cursor's tools name files relative to the workspace (UNVERIFIED
    which root, and whether `cwd` differs), so both the first workspace root and `cwd` are in scope."""
    return common.first_root(payload, "workspace_roots"), common.text(payload, "cwd")


def mcp_server(payload: JSONObject) -> str:
    """The server's name: sent as `server` if ever, else found by its url or command in mcp.json."""
    server = common.text(payload, "server")
    if server:
        return server
    url, command = str(payload.get("url") or ""), str(payload.get("command") or "")
    listed = payload.get("workspace_roots")
    roots = [r for r in listed if isinstance(r, str)] if isinstance(listed, list) else []
    for path in [os.path.join(r, ".cursor", "mcp.json") for r in roots] + [os.path.expanduser("~/.cursor/mcp.json")]:
        for name, entry in _servers(path).items():
            args = entry.get("args")
            line = " ".join([str(entry.get("command") or "")] + [str(a) for a in (args if isinstance(args, list) else [])]).strip()
            if (url and entry.get("url") == url) or (command and command in (entry.get("command"), line)):
                return name
    return url or command


def _servers(path: str) -> dict[str, JSONObject]:
    try:
        with open(path, encoding="utf-8") as fh:
            data: JSON = json.load(fh)
        servers = data.get("mcpServers") if isinstance(data, dict) else None
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in servers.items() if isinstance(v, dict)} if isinstance(servers, dict) else {}


def render(phase: str, verdict: Verdict, payload: JSONObject | None = None) -> common.Reply:
    if verdict.blocks and phase == "pre":
        text = common.block_text(verdict)
        return common.Reply(stdout=common.as_json({"permission": "deny", "user_message": text,
                                                   "agent_message": text}))
    return common.stderr_advisory(verdict)


def render_allow(verdict: Verdict, why: str, payload: JSONObject | None = None) -> common.Reply:
    """A person approved this exact call (an `ask` rule held it). UNVERIFIED shape, as `render`'s."""
    advice = common.advisory(verdict)
    return common.Reply(stdout=common.as_json({"permission": "allow", "user_message": why}),
                        stderr=advice + "\n" if advice else "")


HOOK_TIMEOUT_S = 600   # the pre-tool hooks' `timeout` Sentinel writes
PRE_EVENTS = ("beforeShellExecution", "beforeMCPExecution", "preToolUse")


def install(root: str, command: str) -> list[str]:
    path = os.path.join(root, ".cursor", "hooks.json")
    data = common.read_json(path)
    data.setdefault("version", 1)
    hooks = common.hooks_of(data, path)
    for event in EVENTS:
        # failClosed false: a crash or timeout of the hook follows the gate's own fail_open, never a block
        pre = event in PRE_EVENTS
        extra = common.pre_args(HOOK_TIMEOUT_S) if pre else ""
        common.merge_event(hooks, event, {"command": f"{command} hook {NAME} {event}{extra}",
                                          "timeout": HOOK_TIMEOUT_S if pre else 30,
                                          "failClosed": False})
    return [common.write_json(path, data)]
