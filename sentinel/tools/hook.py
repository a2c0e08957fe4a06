"""The tools of a hook session (a run a watcher started): `sentinel_act` and `sentinel_escalate`.

    for tool in hook_tools(store, run_id): registry.add(tool)     # the worker's wiring, for kind "hook" only

`sentinel_act {action: notify}` fulfils the firing's relay contract (the store settles it once; a notify
after the fallback already went out is an error the model reads). `sentinel_act {action: run_command}`
runs argv under the agent's Leash profile; the action policy decides it like `bash`. `sentinel_escalate`
records why the agent hands the event to a person and deliberately leaves the contract open: the
relay's fallback delivers the callback's summary. `store` is the Store (local mode) or the worker's
RemoteStore, whose supervisor answers only for this run.
"""

from __future__ import annotations

from typing import Mapping, Protocol

from sentinel.jsontypes import JSONObject
from sentinel.tools import Tool, ToolContext, ToolError, arg_str, object_schema
from sentinel.tools.builtin import run_argv

ACT = "sentinel_act"
ESCALATE = "sentinel_escalate"
SEVERITIES = ["info", "warning", "critical"]


def act_argv(args: JSONObject) -> list[str] | None:
    """The command a `sentinel_act` run_command call runs (what the policy judges), else None."""
    command, rest = args.get("command"), args.get("args")
    if args.get("action") != "run_command" or not isinstance(command, str):
        return None
    return [command, *[str(a) for a in (rest if isinstance(rest, list) else [])]]


class RelayStore(Protocol):
    """What the hook tools need of the store: the two ways a hook session's relay contract ends."""

    def relay_notify(self, run_id: str, message: str, targets: list[str] | None = None) -> Mapping[str, object]: ...

    def relay_escalate(self, run_id: str, reason: str, severity: str) -> Mapping[str, object]: ...


def hook_tools(store: RelayStore, run_id: str) -> list[Tool]:
    def act(args: JSONObject, ctx: ToolContext) -> str:
        if args["action"] == "notify":
            return _notify(store, run_id, args)
        argv = act_argv(args)
        if not argv:
            raise ToolError("run_command needs `command` (a program) and optionally `args` (a list of strings)")
        return run_argv(argv, ctx)

    def escalate(args: JSONObject, ctx: ToolContext) -> str:
        store.relay_escalate(run_id, arg_str(args, "reason"), str(args.get("severity") or "warning"))
        return ("Escalated. The relay contract stays open: the operator gets the fallback summary of this "
                "callback when the response time is up. Do not notify as well.")

    act_schema = object_schema({
        "action": {"type": "string", "enum": ["notify", "run_command"]},
        "message": {"type": "string", "description": "notify: the text delivered to the operator."},
        "targets": {"type": "array", "items": {"type": "string"},
                    "description": "notify: names of configured delivery targets (default: all of them)."},
        "command": {"type": "string", "description": "run_command: the program to run."},
        "args": {"type": "array", "items": {"type": "string"}, "description": "run_command: its arguments."},
    }, ["action"])
    escalate_schema = object_schema({
        "reason": {"type": "string", "description": "Why a person must decide."},
        "severity": {"type": "string", "enum": [*SEVERITIES]},
    }, ["reason"])
    return [
        Tool(ACT, "Act on the callback: `notify` delivers your message to the configured targets (this is how a "
             "hook session delivers; a plain answer is not a delivery); `run_command` runs a command and returns "
             "its output.", act_schema, act, trigger="bash"),
        Tool(ESCALATE, "Hand the event to a person without notifying: the relay delivers the raw callback summary.",
             escalate_schema, escalate),
    ]


def _notify(store: RelayStore, run_id: str, args: JSONObject) -> str:
    message = str(args.get("message") or "").strip()
    if not message:
        raise ToolError("notify needs a non-empty `message`")
    targets = args.get("targets")
    firing = store.relay_notify(run_id, message, [str(t) for t in targets] if isinstance(targets, list) else [])
    return f"Delivered (firing {firing['id']}). The relay contract is fulfilled."
