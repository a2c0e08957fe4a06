"""The system prompt: the agent's soul, its self-state parts (user.md, memory index, skills) in that order,
then a tool-use scaffold that small models can follow."""

from __future__ import annotations

from typing import Any

SCAFFOLD = """\
## How to work

You have tools. To use one, make a tool call. If you cannot make native tool calls,
reply with ONLY a JSON object on its own, for example:
{{"tool": "list_dir", "arguments": {{"path": "."}}}}
Use one tool at a time and wait for its result. Only the tools listed below exist: run a
shell command (ls, cat, grep, mkdir, rm, ...) with the bash tool, for example:
{{"tool": "bash", "arguments": {{"command": "mkdir build"}}}}
When the task is complete, reply with your final answer as plain text and no tool call.

Your workspace is {workspace}; paths are relative to it.

## Tools
{tools}"""


def _type(prop: dict[str, Any]) -> str:
    kind = prop.get("type", "any")
    return "|".join(kind) if isinstance(kind, list) else str(kind)


def _signature(tool: dict[str, Any]) -> str:
    props = tool["parameters"].get("properties", {})
    required = set(tool["parameters"].get("required", []))
    params = ", ".join(f"{k}{'' if k in required else '?'}: {_type(v)}" for k, v in props.items())
    return f"- {tool['name']}({params}): {tool['description']}"


def system_prompt(soul: str, tools: list[dict[str, Any]], workspace: str, name: str | None = None,
                  parts: list[tuple[str, str]] = ()) -> str:
    listing = "\n".join(_signature(t) for t in tools) or "(none)"
    header = f"Your name is {name}.\n\n" if name else ""
    body = "".join(f"\n\n## {heading}\n\n{text.strip()}" for heading, text in parts)
    return f"{header}{soul.strip()}{body}\n\n" + SCAFFOLD.format(workspace=workspace, tools=listing)
