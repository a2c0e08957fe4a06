"""Scope first: ** globs on paths, patterns on commands, server:tool / tool / server on MCP, exclude."""

from __future__ import annotations

import pytest

from sentinel.policy.gate import action as actions
from sentinel.policy.gate.rules import Rule
from sentinel.policy.gate.schema import validate
from sentinel.policy.settings import DEFAULT_TOOL_MAP


def rule(trigger, scope, exclude=()):
    from pathlib import Path

    return Rule(validate({"trigger": trigger, "scope": list(scope), "exclude": list(exclude), "prompt": "p"},
                         Path("r.yaml")))


def write(path, root="/repo"):
    return actions.file_write("Write", {"file_path": path}).locate(root)


@pytest.mark.parametrize("path,hit", [
    ("/repo/src/core/billing/invoice.ts", True), ("/repo/src/core/billing/deep/x/y.ts", True),
    ("src/core/billing/a.ts", True), ("/repo/README.md", False), ("/repo/src/core/billingx/a.ts", False),
    ("/repo/src/core/billing/invoice.test.ts", False), ("/repo/src/core/../core/billing/a.ts", True),
])
def test_file_globs_with_exclude(path, hit):
    assert rule("file_write", ["src/core/billing/**"], ["**/*.test.ts"]).applies(write(path)) is hit


def test_double_star_prefix_and_outside_root():
    r = rule("file_write", ["**/payments/*.ts"])
    assert r.applies(write("/repo/payments/a.ts")) and r.applies(write("/repo/a/b/payments/c.ts"))
    assert not r.applies(write("/repo/payments/sub/c.ts"))
    outside = write("/etc/passwd")
    assert outside.target == "/etc/passwd"
    assert rule("file_write", ["/etc/**"]).applies(outside)


@pytest.mark.parametrize("command,hit", [
    ("git push --force origin main", True), ("git push --force-with-lease", True),
    ("cd app && git push --force", True), ("git status; git push -f origin", True),
    ("git push origin main", False), ("echo git push --forced", False),
])
def test_command_patterns(command, hit):
    r = rule("bash", ["git push --force*", "git push -f*"])
    assert r.applies(actions.bash("Bash", {"command": command}).locate(None)) is hit


@pytest.mark.parametrize("pattern,hit", [
    ("postgres-prod:*", True), ("postgres-prod:query", True), ("*:query", True), ("query", True),
    ("postgres-prod", True), ("postgres-*", True), ("mysql:*", False), ("drop", False),
])
def test_mcp_forms(pattern, hit):
    act = actions.classify("mcp__postgres-prod__query", {"sql": "x"}, DEFAULT_TOOL_MAP, "mcp__", "__").locate(None)
    assert (act.trigger, act.server, act.mcp_tool, act.target) == ("mcp", "postgres-prod", "query",
                                                                   "postgres-prod:query")
    assert rule("mcp", [pattern]).applies(act) is hit


def test_trigger_must_fit_and_any_matches_every_kind():
    bash = actions.bash("Bash", {"command": "rm -rf /"}).locate(None)
    assert not rule("mcp", ["**"]).applies(bash)
    assert rule("file_write", ["**"]).applies(bash)  # a writing command is in scope of path rules (test_gate_writes)
    assert not rule("file_write", ["**"]).applies(actions.bash("Bash", {"command": "ls -la"}).locate(None))
    assert rule("any", []).applies(bash) and rule("any", ["rm *"]).applies(bash)
    assert rule("any", ["src/**"]).applies(write("/repo/src/a.py"))
    other = actions.classify("Read", {"file_path": "x"}, DEFAULT_TOOL_MAP, "mcp__", "__").locate(None)
    assert other.trigger == "other" and rule("any", ["Read"]).applies(other)


def test_custom_mcp_prefix_and_separator():
    act = actions.classify("mcp_github_create_issue", {}, {}, "mcp_", "_")
    assert (act.server, act.mcp_tool) == ("github", "create_issue")
