"""OpenAI Codex CLI: hooks in .codex/hooks.json; PreToolUse payloads follow Claude Code's shape.

Shell calls arrive as `Bash{command}`, every file edit as `apply_patch` with the patch envelope in
`tool_input.command` (the paths are inside it: one action per file), or as a `Bash` command running
`apply_patch <<'EOF'` (which Codex intercepts and applies: judged as the command and as each write), MCP calls as
`mcp__<server>__<tool>` with the tool's own arguments. Block: exit 2 with the reason on stderr
(the model reads `Command blocked by PreToolUse hook: <reason>`); warnings and context go to
`hookSpecificOutput.additionalContext` (stderr at exit 0 is dropped).

Codex runs a project hook only in a trusted project and only once the hook's hash is trusted;
an untrusted hook is skipped silently. `trust_steps` and `status` say so (see `sentinel.hooks.trust`).
"""

from __future__ import annotations

import os
import re
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

from sentinel.hooks import common
from sentinel.hooks.install import HOOK_TIMEOUT_S
from sentinel.hooks.agents import claude_code
from sentinel.policy.gate import action as actions

NAME = "codex"
PATCH_COMMAND = re.compile(r"\s*(?:cd\s+\S+\s*&&\s*)?(?:apply_patch|applypatch)\b[^\n]*\n.*\*\*\* Begin Patch", re.S)
HOOKS_FILE = os.path.join(".codex", "hooks.json")
session = claude_code.session


def action(payload: dict[str, Any], cfg: Any, phase: str) -> Any:
    tool_input = payload.get("tool_input")
    if payload.get("tool_name") == "apply_patch":
        files = actions.patch("apply_patch", tool_input if isinstance(tool_input, dict) else {},
                              common.patch_text(tool_input))
        if not files:
            raise ValueError("apply_patch carries no file header (*** Add File: / *** Update File: ...)")
        return files
    act = claude_code.action(payload, cfg, phase)
    if act is not None and act.trigger == "bash" and PATCH_COMMAND.match(act.command):
        # `apply_patch <<'EOF' ...` run as a shell command: Codex intercepts it and applies the patch,
        # and its hook sees Bash. The files it writes are judged as writes, the command as a command.
        return [act] + actions.patch("apply_patch", act.tool_input, act.command)
    return act


def render(phase: str, verdict: Any, payload: dict[str, Any] | None = None) -> common.Reply:
    if verdict.blocks and phase == "pre":
        return common.exit2(common.block_text(verdict))
    return claude_code.render(phase, verdict, payload)


def install(root: str, command: str, timeout_s: int = HOOK_TIMEOUT_S) -> list[str]:
    path = os.path.join(root, HOOKS_FILE)
    data = common.read_json(path)
    hooks = data.setdefault("hooks", {})
    for event, argument, timeout in (("PreToolUse", "pre-tool-use", timeout_s), ("PostToolUse", "post-tool-use", timeout_s),
                                     ("Stop", "stop", 10)):
        # No matcher: every tool, so apply_patch and MCP calls reach the gate, not only Bash.
        entry = {"hooks": [{"type": "command", "command": f"{command} hook {NAME} {argument}", "timeout": timeout}]}
        common.merge_event(hooks, event, entry)
    return [common.write_json(path, data)]
