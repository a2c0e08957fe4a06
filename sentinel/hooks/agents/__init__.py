"""One adapter module per external coding agent, imported only for the agent being served.

Each module defines:
    NAME                          the agent's name on the command line
    session(payload)              (cwd or None, session id, transcript path or None)
    action(payload, cfg, phase)   the Action to judge, or None when there is nothing to judge
    render(phase, verdict)        the Reply in the agent's own format (SILENT on pass)
    install(root, command)        writes the agent's hook config under `root`; returns the paths
Optionally `event_of(payload)`: the event name carried in the payload itself.
"""

from __future__ import annotations

import importlib
TYPE_CHECKING = False
if TYPE_CHECKING:
    from sentinel.hooks.adapter import Adapter  # each module here is checked against it there

AGENTS = {
    "claude-code": "claude_code", "copilot-cli": "copilot_cli", "cursor": "cursor", "windsurf": "windsurf",
    "cline": "cline", "amazon-q": "amazon_q", "gemini-cli": "gemini_cli", "codex": "codex",
}


def get(name: str) -> Adapter | None:
    module = AGENTS.get(name)
    return importlib.import_module(f"sentinel.hooks.agents.{module}") if module else None

