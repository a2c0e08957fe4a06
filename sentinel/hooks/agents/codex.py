"""OpenAI Codex CLI: hooks in .codex/hooks.json; PreToolUse payloads follow Claude Code's shape.

Shell calls arrive as `Bash{command}`, every file edit as `apply_patch` with the patch envelope in
`tool_input.command` (the paths are inside it: one action per file), MCP calls as
`mcp__<server>__<tool>` with the tool's own arguments. Block: exit 2 with the reason on stderr
(the model reads `Command blocked by PreToolUse hook: <reason>`); warnings and context go to
`hookSpecificOutput.additionalContext` (stderr at exit 0 is dropped).

Codex runs a project hook only in a trusted project and only once the hook's hash is trusted;
an untrusted hook is skipped silently. `trust_steps` and `status` say so (see `sentinel.hooks.trust`).
"""

from __future__ import annotations

import os
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

from sentinel.hooks import common
from sentinel.hooks.agents import claude_code
from sentinel.policy.gate import action as actions

NAME = "codex"
HOOKS_FILE = os.path.join(".codex", "hooks.json")
session = claude_code.session


def action(payload: dict[str, Any], cfg: Any, phase: str) -> Any:
    if payload.get("tool_name") == "apply_patch":
        tool_input = payload.get("tool_input")
        files = actions.patch("apply_patch", tool_input if isinstance(tool_input, dict) else {},
                              common.patch_text(tool_input))
        if not files:
            raise ValueError("apply_patch carries no file header (*** Add File: / *** Update File: ...)")
        return files
    return claude_code.action(payload, cfg, phase)


def render(phase: str, verdict: Any, payload: dict[str, Any] | None = None) -> common.Reply:
    if verdict.blocks and phase == "pre":
        return common.exit2(common.block_text(verdict))
    return claude_code.render(phase, verdict, payload)


def install(root: str, command: str) -> list[str]:
    path = os.path.join(root, HOOKS_FILE)
    data = common.read_json(path)
    hooks = data.setdefault("hooks", {})
    for event, argument, timeout in (("PreToolUse", "pre-tool-use", 30), ("PostToolUse", "post-tool-use", 30),
                                     ("Stop", "stop", 10)):
        # No matcher: every tool, so apply_patch and MCP calls reach the gate, not only Bash.
        entry = {"hooks": [{"type": "command", "command": f"{command} hook {NAME} {argument}", "timeout": timeout}]}
        common.merge_event(hooks, event, entry)
    return [common.write_json(path, data)]
