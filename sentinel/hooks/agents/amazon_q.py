"""Amazon Q Developer CLI: hooks in an agent config (.amazonq/cli-agents/*.json); payload
{hook_event_name, cwd, tool_name, tool_input}; MCP tools are named `@server/tool`.
Block: exit 2, stderr is returned to the model. Checked against Q's documentation only.

Q runs the hooks of one agent only: the one named by `--agent`, else `chat.defaultAgent`, else its
built-in default. The installer writes its own agent, `sentinel`, starting from the built-in
default's settings (tools, allowedTools, resources, legacy MCP config), and leaves the user's
default as it was: `q chat --agent sentinel`, or `q settings chat.defaultAgent sentinel`, selects it.
"""

from __future__ import annotations

import os
TYPE_CHECKING = False
if TYPE_CHECKING:  # types only: the hook's fast path imports neither typing nor the gate's engine
    from sentinel.jsontypes import JSONObject
    from sentinel.policy.gate.config import GateConfig

from sentinel.hooks import common
from sentinel.policy.gate import action as actions
from sentinel.policy.gate.action import Action

NAME = "amazon-q"
# Q's built-in default agent (docs/default-agent-behavior.md), so choosing `sentinel` changes nothing else.
DEFAULT_AGENT: JSONObject = {"name": "sentinel", "description": "Q's default agent, guarded by the Sentinel rule gate",
                 "tools": ["*"], "allowedTools": ["fs_read"],
                 "resources": ["file://AmazonQ.md", "file://README.md", "file://.amazonq/rules/**/*.md"],
                 "useLegacyMcpJson": True}


def event_of(payload: JSONObject) -> str | None:
    return common.text(payload, "hook_event_name")


def session(payload: JSONObject) -> tuple[str | None, str, str | None]:
    return common.text(payload, "cwd"), str(payload.get("session_id") or ""), None


def action(payload: JSONObject, cfg: GateConfig, phase: str) -> Action | list[Action]:
    name = payload.get("tool_name")
    if not isinstance(name, str) or not name:
        raise ValueError("payload has no tool_name")
    args = common.sent(payload.get("tool_input"))
    if name.startswith("@") and "/" in name:
        server, _, tool = name[1:].partition("/")
        act = actions.mcp(name, args, server, tool)
    else:
        act = common.tool_action(name, args, cfg)
    act.tool_output = common.output_text(payload.get("tool_response"))
    return actions.files(act, common.text(payload, "cwd"))  # one per file; relative paths from `cwd`, as Q's


render = common.render_exit2


HOOK_TIMEOUT_S = 600   # the preToolUse hook's `timeout_ms` Sentinel writes, in seconds


def install(root: str, command: str) -> list[str]:
    path = os.path.join(root, ".amazonq", "cli-agents", "sentinel.json")
    data = common.read_json(path) or dict(DEFAULT_AGENT)
    hooks = common.hooks_of(data, path)
    for event, timeout in (("preToolUse", HOOK_TIMEOUT_S * 1000), ("postToolUse", 30000), ("stop", 10000)):
        extra = common.pre_args(HOOK_TIMEOUT_S) if event == "preToolUse" else ""
        entry: JSONObject = {"command": f"{command} hook {NAME} {event}{extra}", "timeout_ms": timeout}
        common.merge_event(hooks, event, {"matcher": "*", **entry} if event != "stop" else entry)
    return [common.write_json(path, data)]


def trust_steps(root: str) -> list[str]:
    return ["Amazon Q runs these hooks only in the `sentinel` agent: start it with `q chat --agent sentinel`, "
            "or make it the default with `q settings chat.defaultAgent sentinel`"]
