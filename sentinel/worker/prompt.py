"""The system prompt: the agent's soul, its self-state parts (user.md, memory index, skills) in that order,
then a tool-use scaffold that small models can follow, with when to use memory and the roster when the agent
has those tools (a 1.5B model reaches for `recall` or `delegate` only when the prompt says when)."""

from __future__ import annotations

from typing import Sequence

from sentinel.jsontypes import JSON, JSONObject, list_in, object_in

SCAFFOLD = """\
## How to work

You have tools. To use one, make a tool call. If you cannot make native tool calls,
reply with ONLY a JSON object on its own, for example:
{{"tool": "list_dir", "arguments": {{"path": "."}}}}
Use one tool at a time and wait for its result. Only the tools listed below exist: run a
shell command (ls, cat, grep, mkdir, mv, cp, rm, sed, ...) with the bash tool, for example:
{{"tool": "bash", "arguments": {{"command": "mkdir build"}}}}
Change files with write_file or edit_file; run Python with python3 (there is no python command).
When the task is complete, reply with your final answer as plain text and no tool call.
{guides}
Your workspace is {workspace}; paths are relative to it.

## Tools
{tools}"""


MEMORY_GUIDE = """
Your memory keeps what you were told in earlier conversations (the Memory section shows only titles).
When a question may concern something you were told before (a fact, a preference, a name, a date, a
decision), call recall with two or three key words first, then answer from the notes it returns:
{"tool": "recall", "arguments": {"query": "deploy day"}}
When you are asked to remember something, call remember with a short title and the whole fact:
{"tool": "remember", "arguments": {"title": "Deploy day", "content": "We deploy on Thursdays."}}
"""

ROSTER_GUIDE = """
These agents work for you (delegate hands one a task; it does the work and returns its answer):
{roster}
Hand every task that fits one of them to that agent with delegate, even when you could do it
yourself; do yourself only what none of them is for. For example:
{{"tool": "delegate", "arguments": {{"agent": "{first}", "task": "<the whole task, with every detail>"}}}}
"""


def _type(prop: JSON) -> str:
    kind = object_in(prop).get("type", "any")
    return "|".join(str(k) for k in kind) if isinstance(kind, list) else str(kind)


def _signature(tool: JSONObject) -> str:
    parameters = object_in(tool["parameters"])
    props = object_in(parameters.get("properties", {}))
    required = {r for r in list_in(parameters.get("required", [])) if isinstance(r, str)}
    params = ", ".join(f"{k}{'' if k in required else '?'}: {_type(v)}" for k, v in props.items())
    return f"- {tool['name']}({params}): {tool['description']}"


def guides(names: set[str], roster: dict[str, str]) -> str:
    """When to use memory and whom to delegate to, for the tools the agent has; `roster`: agent -> description."""
    text = MEMORY_GUIDE if "recall" in names else ""
    if "delegate" in names and roster:
        lines = "\n".join(f"- {agent}: {about or '(no description)'}" for agent, about in roster.items())
        text += ROSTER_GUIDE.format(roster=lines, first=next(iter(roster)))
    return text


def system_prompt(soul: str, tools: list[JSONObject], workspace: str, name: str | None = None,
                  parts: Sequence[tuple[str, str]] = (), roster: dict[str, str] | None = None) -> str:
    listing = "\n".join(_signature(t) for t in tools) or "(none)"
    header = f"Your name is {name}.\n\n" if name else ""
    body = "".join(f"\n\n## {heading}\n\n{text.strip()}" for heading, text in parts)
    extra = guides({str(t["name"]) for t in tools}, roster or {})
    return f"{header}{soul.strip()}{body}\n\n" + SCAFFOLD.format(workspace=workspace, tools=listing, guides=extra)
