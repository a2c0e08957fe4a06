"""The shapes of what the gate reads back from its JSON cache: compiled rules and patterns, paths, the whole file.

`schema.validate` and the loader produce these (the settings dump is `sentinel.policy.settings.GateDump`); the
hook reads them back without pydantic. Imported for the type checker only (the hook's hot path imports no
`typing`); tests/policy/gate/test_gate_config.py pins them to what the loader writes.
"""

from __future__ import annotations

from typing import TypedDict

from sentinel.policy.settings import GateDump


class PatternDump(TypedDict, total=False):
    """One scope/exclude pattern, translated once (sentinel.policy.gate.scope.compile_patterns)."""
    p: str                  # the pattern as written
    c: bool                 # it has a colon (mcp: server:tool)
    g: list[str]            # glob regexes (file_write, any)
    f: list[str]            # fnmatch regexes (bash, mcp, any)
    r: list[str] | None     # the literal runs a command must contain (None: no literal pieces)


class RuleDump(TypedDict, total=False):
    """A validated rule (sentinel.policy.gate.schema.RuleSpec) with its compiled patterns and source file."""
    id: str
    kind: str
    description: str
    trigger: str
    severity: str
    post: bool
    scope: list[str]
    exclude: list[str]
    when: list[str]         # regular expressions over the action's text: judged only when one is found
    unless: list[str]       # ... and none of these
    backend: str | None
    model: str | None
    prompt: str
    skip_read_only: bool
    known_only: bool        # built in (sentinel.policy.gate.own): a command whose writes are unknown only for what a
                            # program does is not in scope (one whose line spells every word)
    source: str
    scope_c: list[PatternDump]
    exclude_c: list[PatternDump]
    warnings: list[str]     # as validated; the loader moves them to the bundle before caching


class PathsDump(TypedDict):
    config_dir: str
    state_dir: str
    rules_dirs: list[str]
    log_file: str | None
    drafts_dir: str
    root: str | None


class CacheDump(TypedDict):
    """The whole cache file (.sentinel/cache/gate.json)."""
    stamp: list[object]
    config: GateDump
    rules: list[RuleDump]
    errors: list[str]
    warnings: list[str]
    paths: PathsDump
    config_error: str | None
    strict: bool
