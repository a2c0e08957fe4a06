"""The runtime rule: built from a validated (possibly cached) rule dict; decides whether it applies.

A rule applies to an action when its trigger fits (`any` fits every action) and its
scope matches the action's target (or one of its aliases: a file write is matched where it
lands and as written) while no exclude pattern does; for bash, some command of the line's
parse (sentinel.policy.shell). A `file_write` rule also applies to a bash command that may write a
path in its scope, or whose writes are unknown (sentinel.policy.writes); an `any` rule with a scope
also applies to a bash command writing a path in it. A rule out of scope costs no model call.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from sentinel.policy.gate.dump import RuleDump

from sentinel.policy.gate import scope
from sentinel.policy.gate.action import Action

GPU_BACKENDS = frozenset({"ollama", "local"})


class Rule:
    __slots__ = ("id", "kind", "trigger", "severity", "post", "scope", "exclude", "backend", "model", "prompt",
                 "skip_read_only", "source", "description", "_scope_c", "_exclude_c")

    def __init__(self, data: RuleDump):
        self.id: str = data["id"]
        self.kind: str = data.get("kind", "judge")
        self.trigger: str = data.get("trigger", "any")
        self.severity: str = data.get("severity", "block")
        self.post: bool = bool(data.get("post"))
        self.scope: list[str] = list(data.get("scope") or [])
        self.exclude: list[str] = list(data.get("exclude") or [])
        self.backend: str | None = data.get("backend")
        self.model: str | None = data.get("model")
        self.prompt: str = data.get("prompt") or ""
        self.skip_read_only: bool = bool(data.get("skip_read_only"))
        self.source: str = data.get("source", "")
        self.description: str = data.get("description", "")
        self._scope_c = data.get("scope_c") or []
        self._exclude_c = data.get("exclude_c") or []

    @property
    def judged(self) -> bool:
        """Does deciding this rule take a model call? (`kind: scope` rules and static info rules do not.)"""
        return self.kind != "scope" and not self.static

    @property
    def static(self) -> bool:
        """An info rule without post: its rendered prompt is the context, no model call."""
        return self.severity == "info" and not self.post

    def applies(self, action: Action) -> bool:
        if action.trigger == "bash" and self.trigger == "file_write":
            return scope.writes_match(self._scope_c, self._exclude_c, action, unknown=True)
        if self.trigger != "any" and self.trigger != action.trigger:
            return False
        trigger = action.trigger if action.trigger in ("file_write", "bash", "mcp") else "other"
        if any(scope.matches(self._scope_c, self._exclude_c, trigger, target, action.server, action.mcp_tool)
               for target in (action.target, *action.aliases)):
            return True
        # an `any` rule's scope is paths; a `bash` rule's is commands, never where a command writes
        return action.trigger == "bash" and self.trigger == "any" and bool(self._scope_c) and \
            scope.writes_match(self._scope_c, self._exclude_c, action, unknown=False)

    def phase(self) -> str:
        """pre: judged (or rendered) before the tool runs; post: synthesized after it ran."""
        return "post" if self.post else "pre"

    def __repr__(self) -> str:
        return f"Rule({self.id!r}, {self.trigger}, {self.severity})"


def applicable(rules: list[Rule], action: Action, phase: str) -> list[Rule]:
    return [r for r in rules if r.phase() == phase and r.applies(action)]
