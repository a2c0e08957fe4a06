"""Gemini CLI hooks (.gemini/settings.json, timeouts in milliseconds): BeforeTool / AfterTool /
SessionEnd with `tool_name` + `tool_input`.

Block: stdout {"decision": "deny", "reason": ...}; context through
hookSpecificOutput.additionalContext, warnings also as systemMessage.
"""

from __future__ import annotations

import os
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

from sentinel.hooks import common
from sentinel.hooks.agents.claude_code import action, session  # noqa: F401  same payload shape

NAME = "gemini-cli"
EVENT_NAMES = {"pre": "BeforeTool", "post": "AfterTool"}


def event_of(payload: dict[str, Any]) -> str | None:
    return payload.get("hook_event_name")


def render(phase: str, verdict: Any) -> common.Reply:
    if verdict.blocks and phase == "pre":
        return common.Reply(stdout=common.as_json({"decision": "deny", "reason": common.block_text(verdict)}))
    text = common.advisory(verdict)
    if not text:
        return common.SILENT
    out: dict[str, Any] = {"hookSpecificOutput": {"hookEventName": EVENT_NAMES.get(phase, "BeforeTool"),
                                                  "additionalContext": text}}
    if verdict.warnings:
        out["systemMessage"] = common.warn_text(verdict)
    return common.Reply(stdout=common.as_json(out))


def install(root: str, command: str) -> list[str]:
    path = os.path.join(root, ".gemini", "settings.json")
    data = common.read_json(path)
    hooks = data.setdefault("hooks", {})
    for event, timeout in (("BeforeTool", 30000), ("AfterTool", 30000), ("SessionEnd", 10000)):
        entry = {"matcher": "*", "hooks": [{"type": "command", "command": f"{command} hook {NAME} {event}",
                                            "timeout": timeout}]}
        common.merge_event(hooks, event, entry)
    return [common.write_json(path, data)]
