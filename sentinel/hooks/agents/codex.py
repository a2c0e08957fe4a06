"""Codex: hooks in .codex/hooks.json (feature flag `codex_hooks`); PreToolUse follows Claude Code's
payload shape (only Bash is hooked). Block: exit 2 with the reason on stderr."""

from __future__ import annotations

import os
TYPE_CHECKING = False
if TYPE_CHECKING:
    pass

from sentinel.hooks import common
from sentinel.hooks.agents import claude_code

NAME = "codex"
session = claude_code.session
action = claude_code.action


render = common.render_exit2


def install(root: str, command: str) -> list[str]:
    path = os.path.join(root, ".codex", "hooks.json")
    data = common.read_json(path)
    hooks = data.setdefault("hooks", {})
    entry = {"matcher": "Bash", "hooks": [{"type": "command", "command": f"{command} hook {NAME} pre-tool-use",
                                           "timeout": 30}]}
    common.merge_event(hooks, "PreToolUse", entry)
    stop = {"hooks": [{"type": "command", "command": f"{command} hook {NAME} stop", "timeout": 10}]}
    common.merge_event(hooks, "Stop", stop)
    return [common.write_json(path, data)]
