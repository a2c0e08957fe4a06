"""GitHub Copilot CLI: {"toolName", "toolArgs" (a JSON string), "cwd"}; hooks in .github/hooks/*.json.

Block: stdout {"permissionDecision": "deny", "permissionDecisionReason": ...}. Copilot CLI
has no context channel for a pre-tool hook: warnings go to stderr.
"""

from __future__ import annotations

import os
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

from sentinel.hooks import common
from sentinel.policy.gate.action import Action, classify

NAME = "copilot-cli"


def session(payload: dict[str, Any]) -> tuple[str | None, str, str | None]:
    return payload.get("cwd"), str(payload.get("sessionId") or payload.get("session_id") or ""), None


def action(payload: dict[str, Any], cfg: Any, phase: str) -> Action | None:
    name = payload.get("toolName")
    if not isinstance(name, str) or not name:
        raise ValueError("payload has no toolName")
    args = common.loads_maybe(payload.get("toolArgs"))
    act = classify(name, args if isinstance(args, dict) else {}, cfg.tool_map, cfg.mcp_prefix, cfg.mcp_separator)
    act.tool_output = common.output_text((payload.get("toolResult") or {}).get("textResultForLlm")
                                         if isinstance(payload.get("toolResult"), dict) else payload.get("toolResult"))
    return act


def render(phase: str, verdict: Any) -> common.Reply:
    if verdict.blocks and phase == "pre":
        out = {"permissionDecision": "deny", "permissionDecisionReason": common.block_text(verdict)}
        return common.Reply(stdout=common.as_json(out))
    return common.stderr_advisory(verdict)


def install(root: str, command: str) -> list[str]:
    path = os.path.join(root, ".github", "hooks", "sentinel.json")
    def hook(event: str, timeout: int) -> dict[str, Any]:
        return {"type": "command", "bash": f"{command} hook {NAME} {event}", "timeoutSec": timeout}

    data = {"version": 1, "hooks": {"preToolUse": [hook("preToolUse", 30)],
                                    "postToolUse": [hook("postToolUse", 30)],
                                    "sessionEnd": [hook("sessionEnd", 10)]}}
    return [common.write_json(path, data)]
