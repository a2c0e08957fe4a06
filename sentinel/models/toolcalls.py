"""Recover tool calls that a small model wrote as plain-text JSON instead of native calls.

Accepted shapes, bare or in a ```json fence, alone or in a list:
    {"tool": NAME, "arguments": {...}}      {"name": NAME, "arguments"|"parameters"|"args": {...}}
    {"function": {"name": NAME, "arguments": ...}}    {"function": NAME, "arguments": {...}}
    {"tool_calls": [...]}
Only names of registered tools count; anything else stays ordinary text. One exception: a call to an invented
tool whose only argument is a string `command` (`{"name": "setup_cfg", "arguments": {"command": "grep ..."}}`,
the default model's habit) is a shell command, recovered as `bash` when that tool exists. `invented` names the
tools a reply called in that shape that do not exist and could not be recovered (`create_note`): such a reply is
not a final answer either.
"""

from __future__ import annotations

import json
import re
from typing import Iterable

from sentinel.jsontypes import JSON
from sentinel.models.base import ToolCall

_FENCE = re.compile(r"```(?:json|tool_call|tool)?\s*(.*?)```", re.S)
_ESCAPE = re.compile(r"\\(.)", re.S)


def _escaped(text: str) -> str:
    r"""`text` with every backslash that starts no JSON escape doubled: the default model writes a shell
    command's `\;` (find -exec) into a JSON string as it is, which no JSON parser accepts."""
    return _ESCAPE.sub(lambda m: m.group(0) if m.group(1) in '"\\/bfnrtu' else "\\\\" + m.group(1), text)


def _json_candidates(text: str) -> Iterable[JSON]:
    text = _escaped(text)
    for block in _FENCE.findall(text):
        try:
            yield json.loads(block)
        except ValueError:
            pass
    decoder = json.JSONDecoder()
    i = 0
    while (start := _next_open(text, i)) != -1:
        try:
            obj: JSON
            obj, end = decoder.raw_decode(text, start)
        except ValueError:
            i = start + 1
            continue
        yield obj
        i = end


def _next_open(text: str, i: int) -> int:
    brace, bracket = text.find("{", i), text.find("[", i)
    found = [p for p in (brace, bracket) if p != -1]
    return min(found) if found else -1


def _as_call(obj: JSON) -> tuple[str, JSON] | None:
    if not isinstance(obj, dict):
        return None
    function = obj.get("function")
    if isinstance(function, dict):
        obj = function
    name = obj.get("tool") or obj.get("name") or obj.get("tool_name") or obj.get("function")
    if not isinstance(name, str):
        return None
    for key in ("arguments", "parameters", "args", "input"):
        if key in obj:
            return name, obj[key]
    return name, {}


def _resolve(found: tuple[str, JSON] | None, known: set[str]) -> tuple[str, JSON] | None:
    """The call as one of the known tools, or None: an invented name whose only argument is a string `command`
    is a shell command."""
    if found is None or found[0] in known:
        return found
    args = found[1]
    if "bash" in known and isinstance(args, dict) and list(args) == ["command"] and isinstance(args["command"], str):
        return "bash", args
    return None


def _flatten(obj: JSON) -> list[JSON]:
    calls = obj.get("tool_calls") if isinstance(obj, dict) else None
    if isinstance(calls, list):
        return calls
    if isinstance(obj, list):
        return obj
    return [obj]


def _call_shaped(item: JSON) -> str | None:
    """The tool name of a dict shaped like a call (a name and arguments, or a `function` object), else None."""
    if not isinstance(item, dict):
        return None
    if not isinstance(item.get("function"), (dict, str)) and not any(
            k in item for k in ("arguments", "parameters", "args", "input")):
        return None
    found = _as_call(item)
    return found[0] if found else None


def invented(text: str, known: set[str]) -> list[str]:
    """Names of tools the text calls in a tool-call shape (bare or fenced JSON) that are not in `known`."""
    names: list[str] = []
    for candidate in _json_candidates(text):
        for item in _flatten(candidate):
            name = _call_shaped(item)
            if name is not None and _resolve(_as_call(item), known) is None and name not in names:
                names.append(name)
    return names


def recover(text: str, known: set[str], turn: int) -> list[ToolCall]:
    calls: list[ToolCall] = []
    seen: set[tuple[str, str]] = set()
    for candidate in _json_candidates(text):
        for item in _flatten(candidate):
            found = _resolve(_as_call(item), known)
            if not found:
                continue
            name, args = found
            raw = args if isinstance(args, str) else json.dumps(args)
            if (name, raw) in seen:  # small models repeat themselves; run each call once
                continue
            seen.add((name, raw))
            calls.append(ToolCall(f"call_{turn}_{len(calls)}", name, raw))
        if calls:
            break
    return calls
