"""GitHub Copilot CLI: hooks in .github/hooks/*.json (version 1): preToolUse, postToolUse, agentStop.

Payload {sessionId, timestamp, cwd, toolName, toolArgs} with toolArgs an object (older builds: a JSON
string); PascalCase event names switch to Claude Code's snake_case payload, also understood. Tools:
`bash`, `powershell`, `create{path, file_text}`, `edit{path, old_str, new_str}`; MCP tools are
`<server>-<tool>` (no server identity is sent: the name is split at its first hyphen).

Block: stdout {"permissionDecision": "deny", "permissionDecisionReason"} (the model reads `Denied by
preToolUse hook: <reason>`). Warnings and context: {"additionalContext"}. agentStop carries the
transcript, so the Stop work (session summary, scribe) runs there. Project hooks load only in a
trusted folder.
"""

from __future__ import annotations

import os
TYPE_CHECKING = False
if TYPE_CHECKING:  # types only: the hook's fast path imports neither typing nor the gate's engine
    from sentinel.jsontypes import JSONObject
    from sentinel.policy.gate.config import GateConfig
    from sentinel.policy.gate.engine import Verdict

from sentinel.hooks import common
from sentinel.policy.gate import action as actions
from sentinel.policy.gate.action import Action

NAME = "copilot-cli"
MCP_NAMING = ("", "-")
HOOKS_FILE = os.path.join(".github", "hooks", "sentinel.json")


def session(payload: JSONObject) -> tuple[str | None, str, str | None]:
    transcript = common.text(payload, "transcriptPath") or common.text(payload, "transcript_path")
    return common.text(payload, "cwd"), str(payload.get("sessionId") or payload.get("session_id") or ""), transcript


def action(payload: JSONObject, cfg: GateConfig, phase: str) -> Action | list[Action]:
    name = payload.get("toolName") or payload.get("tool_name")
    if not isinstance(name, str) or not name:
        raise ValueError("payload has no toolName")
    args = common.loads_maybe(payload.get("toolArgs", payload.get("tool_input")))
    act = common.tool_action(name, common.sent(args), cfg, MCP_NAMING)
    result = payload.get("toolResult", payload.get("tool_response"))
    act.tool_output = common.output_text(result.get("textResultForLlm") if isinstance(result, dict) else result)
    return actions.files(act, common.text(payload, "cwd"))  # one per file; relative paths from `cwd`, as Copilot's


def render(phase: str, verdict: Verdict, payload: JSONObject | None = None) -> common.Reply:
    if verdict.blocks and phase == "pre":
        out: JSONObject = {"permissionDecision": "deny", "permissionDecisionReason": common.block_text(verdict)}
        return common.Reply(stdout=common.as_json(out))
    text = common.advisory(verdict)
    return common.Reply(stdout=common.as_json({"additionalContext": text})) if text else common.SILENT


HOOK_TIMEOUT_S = 600   # the preToolUse hook's `timeoutSec` Sentinel writes


def install(root: str, command: str) -> list[str]:
    path = os.path.join(root, HOOKS_FILE)

    def hook(event: str, timeout: int) -> JSONObject:
        return {"type": "command", "bash": f"{command} hook {NAME} {event}", "timeoutSec": timeout}

    pre = {**hook("preToolUse", HOOK_TIMEOUT_S),
           "bash": f"{command} hook {NAME} preToolUse{common.pre_args(HOOK_TIMEOUT_S)}"}
    data: JSONObject = {"version": 1, "hooks": {"preToolUse": [pre],
                                    "postToolUse": [hook("postToolUse", 30)],
                                    "agentStop": [hook("agentStop", 10)]}}
    return [common.write_json(path, data)]
