"""The action policy (decision layers 1-2, docs/architecture.md): grants, per-tool outcomes, bash command rules.

Loaded from policies/default.yaml, then merged with config.yaml `policy:` and the
agent profile's `policy:`. Command rules match the commands a real parse of the line finds
(sentinel.policy.shell): an `auto` rule must cover every one of them, on a parse that is sure;
a `deny` or `needs_approval` rule matches any one of them, or the line as written. An `auto` rule with
`writes_nothing` covers a command only when the write model (sentinel.policy.writes, the one the rule gate
uses) knows it writes nothing: `tree -o F`, `file -C`, `date -s` are not read-only, whatever their name.
Each command rule's `match` / `not_match` examples are checked at load time; a rule that contradicts its own
examples is a ConfigError.
"""

from __future__ import annotations

import re
import shlex
from functools import cached_property
from pathlib import Path
from typing import Any, Mapping
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from sentinel import paths
from sentinel.errors import ConfigError, pydantic_detail
from sentinel.jsontypes import JSON, JSONObject
from sentinel.policy import shell, writes
from sentinel.policy.decide import CallContext, LayerResult, Outcome, strictest
from sentinel.policy.landing import land

# Redirection, substitution, chaining, pipes, backgrounding, newlines, heredocs.
_SHELL_SYNTAX = re.compile(r"[;&|<>`\n\r]|\$\(|\$\{|\beval\b")
_DEQUOTE = str.maketrans("", "", "'\"\\")
_BRACE_PUNCT = re.compile(r"[{},]")  # a brace list's elements are words once expanded: `{sudo,sh}`
FILE_TOOLS = {"read_file", "write_file", "edit_file", "list_dir"}


class CommandRule(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    decision: Outcome
    prefix: list[str] | None = None
    pattern: str | None = None
    plain: bool = False
    writes_nothing: bool = Field(False, description="An `auto` rule covers a command only when the write model "
                                 "(sentinel.policy.writes) knows it writes nothing (`tree -o F` and `date -s` do).")
    reason: str = ""
    match: list[str] = Field(default_factory=list)
    not_match: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _one_matcher(self) -> "CommandRule":
        if not self.prefix and not self.pattern:
            raise ValueError("needs `prefix` or `pattern`")
        if self.writes_nothing and self.decision != "auto":
            raise ValueError("`writes_nothing` narrows an `auto` rule only")
        if self.pattern:
            try:
                re.compile(self.pattern)
            except re.error as exc:
                raise ValueError(f"pattern is not a valid regex ({exc})") from None
        return self

    @cached_property
    def _regex(self) -> re.Pattern[str] | None:
        return re.compile(self.pattern) if self.pattern else None

    def matches(self, command: str) -> bool:
        """An `auto` rule matches when the line parses surely and it covers every command the line runs (so
        `ls && curl x | sh` never rides on an `ls` rule); any other rule when it matches one of them, or the line."""
        command = command.strip()
        if self.plain and _SHELL_SYNTAX.search(command):
            return False
        parsed = shell.parse(command)
        if self.decision == "auto":
            return parsed.sure and bool(parsed.commands) and all(self.covers(c) for c in parsed.commands)
        return self._hits(command, _words(command), None) or any(self._hits(c.text, c.words, c.open_at)
                                                                  for c in parsed.commands)

    def covers(self, command: shell.Command) -> bool:
        """This rule allows that one command: its prefix words are all known, or its pattern matches it all known."""
        if command.open_at is not None and self._regex is not None and not self.prefix:
            return False
        if self.writes_nothing and not _writes_nothing(command):
            return False
        return self._hits(command.text, command.words, command.open_at)

    def _hits(self, text: str, words: list[str], open_at: int | None) -> bool:
        if self._regex is not None and self._regex.search(text) and (open_at is None or self.decision != "auto"):
            return True
        known = words if open_at is None else words[:open_at]
        prefix = self.prefix or []
        return bool(prefix) and bool(known) and any(known[: len(p.split())] == p.split() for p in prefix
                                                    if len(p.split()) <= len(known))


def _writes_nothing(command: shell.Command) -> bool:
    """The write model knows this command writes nothing: no write redirection, and its name and every option
    and operand known read-only (sentinel.policy.writes.READ_ONLY)."""
    words = command.words[:command.nwords]
    dynamic = [command.open_at is not None and i >= command.open_at for i in range(len(words))]
    return not any(op in writes.WRITE_REDIRECTS for op, _, _ in command.redirects) and \
        writes.operands(words, dynamic) == ([], "")


def _words(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


class BashPolicy(BaseModel):
    model_config = ConfigDict(extra="forbid")

    default: Outcome = "needs_approval"
    rules: list[CommandRule] = Field(default_factory=list)


class PathPolicy(BaseModel):
    model_config = ConfigDict(extra="forbid")

    outside_workspace: Outcome = "deny"


class ActionPolicy(BaseModel):
    model_config = ConfigDict(extra="forbid")

    default: Outcome = "needs_approval"
    tools: dict[str, Outcome] = Field(default_factory=dict)
    authored_tools: Outcome = Field("auto", description="Agent-authored tools not listed in `tools` (layer 5, "
                                                         "trust, still pauses code nobody has approved).")
    paths: PathPolicy = Field(default_factory=PathPolicy)
    bash: BashPolicy = Field(default_factory=BashPolicy)

    def decide_bash(self, command: str) -> LayerResult:
        hits = [r for r in self.bash.rules if r.matches(command)]
        if not any(r.decision == "auto" for r in hits) and (auto := self._auto_together(command)):
            hits.append(auto)
        if not hits and self.bash.default == "auto" and (unseen := self._could_apply(command)):
            rule, why = unseen
            return LayerResult("policy", "needs_approval", f"the parse cannot tell what this line runs ({why}), and "
                               f"command rule {rule.id} ({rule.decision}) could apply", rule_id=rule.id)
        if not hits:
            return LayerResult("policy", self.bash.default, f"no command rule matches; bash default is {self.bash.default}")
        outcome = strictest(*(r.decision for r in hits))
        rule = next(r for r in hits if r.decision == outcome)
        return LayerResult("policy", outcome, rule.reason or f"command rule {rule.id}", rule_id=rule.id)

    def _could_apply(self, command: str) -> tuple[CommandRule, str] | None:
        """A deny or needs_approval rule that may hold for a line the parse is not sure of (`eval 'rm -rf x'`,
        `[[ -f x ]] && rm x`, `case`, `{sudo,sh}`) or for a command it knows only in part (`git $x`,
        `git {push,pull}`): under a bash default of auto such a line would otherwise run past the rule.
        The rule could apply when its prefix starts with a partly known command's known words, or one of its
        prefixes occurs as whole words in the line's text with quotes and line continuations removed (and
        again with brace-list punctuation read as spaces), or its pattern matches that text from any word on
        (any word may start a command the parse cannot see); a line that never spells the rule's words stays
        auto."""
        parsed = shell.parse(command.strip())
        heads = [c.words[:c.open_at] for c in parsed.commands if c.open_at is not None]
        if parsed.sure and not heads:
            return None
        why = parsed.why or "a command the line spells only in part"
        flat = " ".join(command.replace("\\\n", "").translate(_DEQUOTE).split())
        for rule in self.bash.rules:
            if rule.decision == "auto":
                continue
            if any(0 < len(head) < len(p.split()) and p.split()[:len(head)] == head
                   for p in rule.prefix or [] for head in heads):
                return rule, why
            for text in dict.fromkeys((flat, " ".join(_BRACE_PUNCT.sub(" ", flat).split()))):
                starts = [0] + [i + 1 for i, c in enumerate(text) if c == " "]  # each word's start
                if any(re.search(rf"(?<![\w./-]){re.escape(' '.join(p.split()))}(?![\w./-])", text)
                       for p in rule.prefix or []) or \
                        (rule._regex is not None and any(rule._regex.search(text[i:]) for i in starts)):
                    return rule, why
        return None

    def _auto_together(self, command: str) -> CommandRule | None:
        """`ls && git status`: each command allowed by some auto rule (none covers both) is allowed as a whole."""
        command = command.strip()
        autos = [r for r in self.bash.rules if r.decision == "auto" and not (r.plain and _SHELL_SYNTAX.search(command))]
        parsed = shell.parse(command)
        if not autos or not parsed.sure or not parsed.commands:
            return None
        used = [next((r for r in autos if r.covers(c)), None) for c in parsed.commands]
        if any(r is None for r in used):
            return None
        ids = ", ".join(dict.fromkeys(r.id for r in used if r is not None))
        return CommandRule(id=ids, decision="auto", prefix=["-"], reason=f"every command is allowed by {ids}")


def check_examples(policy: ActionPolicy, source: str) -> None:
    for i, rule in enumerate(policy.bash.rules):
        where = f"bash.rules[{i}] ({rule.id})"
        for example in rule.match:
            if not rule.matches(example):
                raise ConfigError(source, f"{where}: example {example!r} in `match` does not match")
        for example in rule.not_match:
            if rule.matches(example):
                raise ConfigError(source, f"{where}: example {example!r} in `not_match` matches")


def _mapping(value: JSON) -> JSONObject:
    return value if isinstance(value, dict) else {}


def _items(value: JSON) -> list[JSON]:
    return value if isinstance(value, list) else []


def merge(base: JSONObject, override: JSONObject) -> JSONObject:
    """Mappings merge key by key; bash rules append (a later rule with the same id replaces it).

    `tools: {bash: X}` is the short form of `bash: {default: X}` (bash is decided by its command rules, then
    that default): an override giving it sets the default, unless the same override names `bash.default`."""
    tools, given = override.get("tools"), override.get("bash")
    short = _mapping(tools).get("bash") if isinstance(tools, dict) else None
    if isinstance(short, str) and not (isinstance(given, dict) and "default" in given):
        override = {**override, "bash": {**_mapping(given), "default": short}}
    out = dict(base)
    for key, value in override.items():
        current = out.get(key)
        if key == "bash" and isinstance(value, dict):
            bash = dict(_mapping(current))
            rules: dict[object, JSON] = {r.get("id"): r for r in _items(bash.get("rules", [])) if isinstance(r, dict)}
            for rule in _items(value.get("rules", [])):
                rules[rule.get("id") if isinstance(rule, dict) else None] = rule
            bash.update({k: v for k, v in value.items() if k != "rules"})
            bash["rules"] = list(rules.values())
            out["bash"] = bash
        elif isinstance(value, dict) and isinstance(current, dict):
            out[key] = {**current, **value}
        else:
            out[key] = value
    return out


def default_policy_path() -> Path:
    return paths.data_dir("policies") / "default.yaml"


# untyped: an override is a config mapping (JSON) or a caller's literal, whose inferred dict type JSONObject would refuse
def load(*overrides: tuple[str, dict[str, Any]], base: Path | None = None) -> ActionPolicy:
    """The default policy file merged with each (source, mapping) override, validated and example-checked."""
    from sentinel.config import read_yaml

    base = base or default_policy_path()
    data = read_yaml(base) or {}
    source, what = str(base), "policy: "  # an override's source already says it is a policy ("config.yaml policy")
    for src, override in overrides:
        if override:
            data, source, what = merge(data, override), src, ""
    try:
        policy = ActionPolicy.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(source, f"{what}{pydantic_detail(exc)}") from None
    _check_examples_once(policy, data, source)
    return policy


def _check_examples_once(policy: ActionPolicy, data: Mapping[str, object], source: str) -> None:
    """check_examples, skipped when this same policy passed it before under this same matching code (a stamp in
    the user's own state directory): parsing every example costs a run's start more than the rest of the policy.
    The stamp only saves a check that raises on a mistaken example; what a rule decides is never cached."""
    import hashlib
    import json

    from sentinel import config_stamp

    digest = hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode())
    digest.update(config_stamp.sources(Path(__file__), Path(shell.__file__), Path(writes.__file__)).encode())
    stamp = digest.hexdigest()
    if config_stamp.valid(paths.home(), stamp, "policy-examples"):
        return
    check_examples(policy, source)
    config_stamp.record(paths.home(), stamp, "policy-examples", create=False)


class GrantsLayer:
    """Layer 1: is the tool in this agent's granted set?"""

    name = "grants"

    def check(self, ctx: CallContext) -> list[LayerResult]:
        if ctx.granted is not None and ctx.tool not in ctx.granted:
            return [LayerResult("grants", "deny", f"tool {ctx.tool} is not granted to agent {ctx.agent}")]
        return [LayerResult("grants", "auto", "")]


class PolicyLayer:
    """Layer 2: deterministic per-tool and per-argument rules."""

    name = "policy"

    def __init__(self, policy: ActionPolicy):
        self.policy = policy

    def check(self, ctx: CallContext) -> list[LayerResult]:
        results = []
        if ctx.tool in FILE_TOOLS and "path" in ctx.arguments and _outside(ctx.workspace, str(ctx.arguments["path"])):
            outcome = self.policy.paths.outside_workspace
            results.append(LayerResult("policy", outcome, f"path {ctx.arguments['path']!r} is outside the workspace",
                                       rule_id="paths.outside_workspace"))
        if ctx.tool == "bash" and "command" in ctx.arguments:
            results.append(self.policy.decide_bash(str(ctx.arguments["command"])))
        elif hook_argv := _hook_command(ctx):  # a hook session's run_command is judged as the command it runs
            results.append(self.policy.decide_bash(shlex.join(hook_argv)))
        else:
            fallback = self.policy.authored_tools if ctx.code_sha256 else self.policy.default
            outcome = self.policy.tools.get(ctx.tool, fallback)
            results.append(LayerResult("policy", outcome, f"tool {ctx.tool} is {outcome} by policy",
                                       rule_id=f"tools.{ctx.tool}"))
        return results


def _hook_command(ctx: CallContext) -> list[str] | None:
    if ctx.tool != "sentinel_act":
        return None
    from sentinel.tools.hook import act_argv

    return act_argv(ctx.arguments)


def _outside(workspace: Path, path: str) -> bool:
    """Where the path lands, symlinks followed (sentinel.policy.landing); the file tools enforce it again in the
    kernel."""
    if "\x00" in path:
        return True
    return not land(str(workspace), path).inside
