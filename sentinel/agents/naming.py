"""Names in an agent's tree: the tools every run registers for the agent, and the names an agent gives what
it authors (skills, tools), checked before any path is built from them."""

from __future__ import annotations

import re

from sentinel.errors import UsageError

SELF_TOOLS = ("edit_soul", "update_user", "remember", "recall")
SKILL_TOOLS = ("create_skill", "list_skills")
AUTHORING_TOOLS = ("create_tool", "edit_tool", "list_tools", "delete_tool")
CHILD_TOOLS = ("delegate", "spawn", "run_workflow")  # each call becomes a child run (sentinel/worker/children.py)


def check(kind: str, name: object, pattern: re.Pattern[str], rule: str) -> str:
    """`name` when it is safe as one path component and matches `pattern`; a correction otherwise."""
    if not isinstance(name, str) or not name.strip():
        raise UsageError(f"{kind} name must not be empty")
    if "/" in name or "\\" in name:
        raise UsageError(f"{kind} name {name!r} must not contain a path separator")
    if ".." in name:
        raise UsageError(f"{kind} name {name!r} must not contain '..'")
    if not pattern.match(name):
        raise UsageError(f"{kind} name {name!r}: {rule}")
    return name
