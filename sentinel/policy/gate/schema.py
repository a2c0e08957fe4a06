"""Rule files: validation of one rule per YAML file (docs/gate.md's fields, plus `kind: alignment`).

    id        defaults to the file stem
    kind      judge (default) | alignment (docs/gate.md, Alignment rules) | scope (no judge: the scope decides)
    trigger   file_write | bash | mcp | any
    severity  block | warn | info | ask   (alignment: block | warn | ask; scope: block | warn | ask)
    post      info rules only: synthesize context after the tool ran
    scope / exclude, backend, model, prompt, skip_read_only (alignment)
    when / unless  regular expressions over the action's text (a write's content, a command, an MCP call's
              arguments): the rule applies only when one of `when` is found in it and none of `unless`

`load_rule(path)` returns a JSON-able dict ready for `rules.Rule`, or raises ConfigError
with one line naming the file and the field. Imported only when rules are (re)loaded.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from sentinel.errors import validated
from sentinel.jsontypes import JSON
from sentinel.policy.gate import scope
from sentinel.policy.gate.action import TEMPLATE_VARS
from sentinel.policy.gate.dump import RuleDump

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_VAR = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
ALIGNMENT_VARS = frozenset({"original_request", "agent_mission", "tool_name", "arguments_json", "agent_id",
                            "category"})


class RuleSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    kind: Literal["judge", "alignment", "scope"] = "judge"
    description: str = ""
    trigger: Literal["file_write", "bash", "mcp", "any"] = "any"
    severity: Literal["block", "warn", "info", "ask"] = "block"
    post: bool = False
    scope: list[str] = Field(default_factory=list)
    exclude: list[str] = Field(default_factory=list)
    when: list[str] = Field(default_factory=list)
    unless: list[str] = Field(default_factory=list)
    backend: str | None = None
    model: str | None = None
    prompt: str = ""
    skip_read_only: bool = False

    @field_validator("scope", "exclude", "when", "unless", mode="before")
    @classmethod
    def _listify(cls, value: JSON) -> JSON:
        if isinstance(value, str):
            return [value]
        return [] if value is None else value

    @field_validator("when", "unless")
    @classmethod
    def _regexes(cls, value: list[str]) -> list[str]:
        for pattern in value:
            if not pattern.strip():
                raise ValueError("empty pattern")
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"{pattern!r} is not a regular expression: {exc}") from None
        return value

    @field_validator("id")
    @classmethod
    def _id_chars(cls, value: str) -> str:
        if not _ID.match(value):
            raise ValueError("use letters, digits, '.', '_' and '-' only")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> "RuleSpec":
        if self.post and self.severity != "info":
            raise ValueError("post: true is for severity: info rules only")
        if self.kind in ("alignment", "scope"):
            if self.severity == "info":
                raise ValueError(f"severity: {self.kind} rules are block, warn or ask")
        elif not self.prompt.strip():
            raise ValueError("prompt: required (the rule the judge evaluates)")
        if any(not p.strip() for p in self.scope + self.exclude):
            raise ValueError("scope/exclude: empty pattern")
        if self.kind == "scope" and (not self.scope or self.trigger == "any"):
            # a scope rule decides with no judge: it must say which calls it means, or it would catch every call
            raise ValueError("scope: a kind: scope rule needs a trigger (file_write, bash or mcp) and a scope")
        return self


def unknown_vars(spec: RuleSpec) -> list[str]:
    known = ALIGNMENT_VARS | TEMPLATE_VARS if spec.kind == "alignment" else TEMPLATE_VARS
    return sorted({v for v in _VAR.findall(spec.prompt) if v not in known})


def validate(data: JSON, path: Path) -> RuleDump:
    """Validate one rule mapping; returns the runtime dict (compiled scope regexes included)."""
    if isinstance(data, dict):
        data = {"id": path.stem, **data}
    spec = validated(RuleSpec, data, path,
                     not_mapping="a rule file holds one rule (a mapping of id, trigger, severity, scope, prompt)")
    trigger = spec.trigger
    return {"id": spec.id, "kind": spec.kind, "description": spec.description, "trigger": trigger,
            "severity": spec.severity, "post": spec.post, "scope": spec.scope, "exclude": spec.exclude,
            "when": spec.when, "unless": spec.unless,
            "backend": spec.backend, "model": spec.model, "prompt": spec.prompt,
            "skip_read_only": spec.skip_read_only, "source": str(path),
            "scope_c": scope.compile_patterns(spec.scope, trigger),
            "exclude_c": scope.compile_patterns(spec.exclude, trigger),
            "warnings": [f"{path}: prompt: unknown template variable {{{{{v}}}}}" for v in unknown_vars(spec)]}


def load_rule(path: Path) -> RuleDump:
    from sentinel.config import read_yaml

    return validate(read_yaml(path), path)
