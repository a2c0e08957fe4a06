"""What an agent adapter module provides, as the type checker sees it (imported for types only).

Each `sentinel/hooks/agents/*.py` module is one `Adapter`: the list at the bottom makes mypy check every
module against it, since `agents.get` finds them by name at run time. The hook's fast path never imports
this module (it would import `typing`); the adapters name it under `TYPE_CHECKING` only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from sentinel.hooks.common import Reply
from sentinel.jsontypes import JSONObject
from sentinel.policy.gate.action import Action
from sentinel.policy.gate.config import GateConfig
from sentinel.policy.gate.engine import Verdict


class Adapter(Protocol):
    NAME: str

    def session(self, payload: JSONObject) -> tuple[str | None, str, str | None]:
        """(cwd or None, session id, transcript path or None)."""

    def action(self, payload: JSONObject, cfg: GateConfig, phase: str) -> Action | list[Action] | None: ...

    def render(self, phase: str, verdict: Verdict, payload: JSONObject | None = None) -> Reply: ...

    def install(self, root: str, command: str) -> list[str]: ...


# The optional members, read with getattr: the payload's own event name, and the explicit allow after a person
# approved the call (`sentinel/hooks/ask.py`).
EventOf = Callable[[JSONObject], "str | None"]
RenderAllow = Callable[[Verdict, str, "JSONObject | None"], Reply]


if TYPE_CHECKING:
    from sentinel.hooks.agents import (amazon_q, claude_code, cline, codex, copilot_cli, cursor, gemini_cli,
                                       windsurf)

    CHECKED: tuple[Adapter, ...] = (amazon_q, claude_code, cline, codex, copilot_cli, cursor, gemini_cli, windsurf)
