"""MCP tool names: `mcp__<server>__<tool>` (what the rule gate's `mcp_prefix` and separator expect)."""

from __future__ import annotations

from sentinel.jsontypes import JSONObject

PREFIX, SEPARATOR = "mcp__", "__"


def tool_name(server: str, tool: str) -> str:
    return f"{PREFIX}{server}{SEPARATOR}{tool}"


def split_name(name: str) -> tuple[str, str] | None:
    """(server, tool) of an `mcp__server__tool` name; None for any other tool."""
    if not name.startswith(PREFIX):
        return None
    server, sep, tool = name[len(PREFIX):].partition(SEPARATOR)
    return (server, tool) if sep and server and tool else None


def named(name: str) -> JSONObject:
    """{"mcp": {"server": ..., "tool": ...}} for an MCP tool's name, {} for any other (for records and views)."""
    parts = split_name(name or "")
    return {"mcp": {"server": parts[0], "tool": parts[1]}} if parts else {}
