"""The runtime rule: built from a validated (possibly cached) rule dict; decides whether it applies.

A rule applies to an action when its trigger fits (`any` fits every action) and its
scope matches the action's target (or one of its aliases: a file write is matched where it
lands, as written, and at the file's other names when it has hard links; a hard-linked file with a name
Sentinel could not find is in every rule's scope) while no exclude pattern does; for bash, some command of the line's
parse (sentinel.policy.shell). A `file_write` rule also applies to a bash command that may write a
path in its scope, or whose writes are unknown (sentinel.policy.writes); an `any` rule with a scope
also applies to a bash command writing a path in it. A rule out of scope costs no model call.

`when` and `unless` (regular expressions) then look at the action's text: a file write's whole content, a command
line as the shell will run it, an MCP call's arguments as JSON and each SQL statement in them as the database
will run it, another tool's arguments as JSON.
A rule with `when` applies only when one of its patterns is found there, and never when one of `unless` is: a
content test as cheap and certain as the scope's, so the judge is asked only about actions that could break the
rule. `unless` exempts on text the agent writes itself: use it only for an exemption the rule grants anyway.
"""

from __future__ import annotations

import json
import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from sentinel.policy.gate.dump import RuleDump

from sentinel.policy.gate import own, scope
from sentinel.policy.gate.action import Action

GPU_BACKENDS = frozenset({"ollama", "local"})


class Rule:
    __slots__ = ("id", "kind", "trigger", "severity", "post", "scope", "exclude", "backend", "model", "prompt",
                 "skip_read_only", "known_only", "source", "description", "when", "unless", "_scope_c", "_exclude_c")

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
        self.known_only: bool = bool(data.get("known_only"))
        self.source: str = data.get("source", "")
        self.description: str = data.get("description", "")
        self.when = [re.compile(p) for p in data.get("when") or []]
        self.unless = [re.compile(p) for p in data.get("unless") or []]
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
        if not self.in_scope(action):
            return False
        if not (self.when or self.unless):
            return True
        if action.trigger == "bash":
            return action.unbounded or self._command_fits(action.command)
        if action.trigger == "mcp":
            return self._call_fits(action)
        said = text(action)
        return (not self.when or any(p.search(said) for p in self.when)) and not any(p.search(said)
                                                                                      for p in self.unless)

    def _command_fits(self, line: str) -> bool:
        """`when`/`unless` on a command line, read as the shell will run it (sentinel.policy.shell): each command
        with quotes removed (`r''m` is `rm`), and the whole line. The rule applies when one of them holds a `when`
        pattern and is not exempted: a command by an `unless` pattern in its own words (never in a comment or
        another command of the line), the whole line only when every command is. A line the parse is not sure
        of, or with a word only its expansion spells, is judged and never exempted."""
        from sentinel.policy import shell

        parsed = shell.parse(line.strip())
        if not parsed.sure or any(c.open_at is not None for c in parsed.commands):
            return True
        exempt = [any(p.search(c.text) for p in self.unless) for c in parsed.commands]
        candidates = [*zip((c.text for c in parsed.commands), exempt), (line, bool(exempt) and all(exempt))]
        return any((not self.when or any(p.search(text) for p in self.when)) and not spared
                   for text, spared in candidates)

    def _call_fits(self, action: Action) -> bool:
        """`when`/`unless` on an MCP call: its arguments as JSON, and each SQL statement a string argument holds,
        read as the database will run it (sentinel.policy.sql: comments dropped, literals emptied, subqueries
        apart). A statement is exempted by an `unless` pattern in its own text; the arguments as a whole only when
        every statement is (or, with no SQL in them, by a pattern found in them). An argument too long to read
        makes the rule apply, never exempt."""
        from sentinel.policy import sql

        said = text(action)
        found: list[str] = []
        for value in _strings(action.tool_input):
            statements = sql.statements(value)
            if statements is None:
                return True
            found += statements
        exempt = [any(p.search(t) for p in self.unless) for t in found]
        whole = all(exempt) if found else any(p.search(said) for p in self.unless)
        return any((not self.when or any(p.search(t) for p in self.when)) and not spared
                   for t, spared in [*zip(found, exempt), (said, whole)])

    def found(self, action: Action) -> int | None:
        """Where the first `when` pattern is found in the action's text (the judge is shown the text there)."""
        said = text(action)
        starts = [m.start() for p in self.when if (m := p.search(said))]
        return min(starts) if starts else None

    def in_scope(self, action: Action) -> bool:
        if action.trigger == "bash" and action.unbounded and self.trigger in ("bash", "file_write", "any"):
            return True  # a shell call whose command could not be read may run and write anything
        if action.trigger == "bash" and self.trigger == "file_write":
            if self.known_only and action.root and not own.may_hold(action.command, action.root, action.cwd):
                return False  # decided without the shell parser (sentinel.policy.gate.own)
            return scope.writes_match(self._scope_c, self._exclude_c, action, unknown=not self.known_only,
                                      unspelled=self.known_only)
        if action.trigger in ("mcp", "other") and self.trigger in ("file_write", "any") and self._scope_c and \
                (action.unbounded or scope.paths_match(self._scope_c, self._exclude_c, action.named)):
            return True  # a call naming a file in a path rule's scope may write it, whatever its tool (Action.named)
        if self.trigger != "any" and self.trigger != action.trigger:
            return False
        if action.trigger == "file_write" and action.unbounded:
            return True  # the file has a name Sentinel could not find: any path rule may be about it
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


def text(action: Action) -> str:
    """What `when` and `unless` look at: the content a file write writes (a bash command's own text when the command
    is what writes), the command, an MCP call's or another tool's arguments as JSON."""
    if action.trigger == "file_write":
        return action.content
    if action.trigger == "bash":  # a file_write rule's text of a command that writes (applies() parses it)
        return action.command
    return json.dumps(action.tool_input, ensure_ascii=False, default=str)


def _strings(value: object, depth: int = 0) -> list[str]:
    """Every string in an MCP call's arguments (nested objects and lists, a few levels deep)."""
    if isinstance(value, str):
        return [value]
    if depth > 4:
        return []
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return [s for item in items for s in _strings(item, depth + 1)]


def applicable(rules: list[Rule], action: Action, phase: str) -> list[Rule]:
    return [r for r in rules if r.phase() == phase and r.applies(action)]
