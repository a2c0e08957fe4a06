"""Scripts for the scripted model and the scripted OpenAI-compatible server.

A script is a YAML list of replies (or `{replies: [...]}`); reply N answers the
model call that sees N assistant messages already in the conversation, so a
resumed run gets the same reply it would have got without the crash.

    - content: "Writing the file."
      tool_calls:
        - {name: write_file, arguments: {path: a.txt, content: hi}}
    - "Done."                      # a bare string is a final answer
    - {repeat: 100, tool_calls: [{name: list_dir, arguments: {path: .}}]}
    - {error: {status: 500, message: boom}}   # the server answers with an error
    - {raw: "not json"}                        # the server answers with garbage

A reply may carry `delay_ms`. Past the end, the last reply repeats.

A reply with `match: TEXT` answers, out of turn, every call whose system message contains TEXT (a
side call such as compaction's summary: `{match: context compactor, content: "- wrote a.txt"}`). Turns
a compaction summary folded in still count (the summary message names them), so the replies after a
compaction are the ones that would have come without it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from sentinel.errors import ConfigError
from sentinel.jsontypes import JSON, JSONObject
from sentinel.models.base import ToolCall


@dataclass
class ScriptCall:
    name: str
    arguments: str  # JSON text, as a model would write it
    id: str | None = None


@dataclass
class ScriptError:
    status: int = 500
    message: str = "error"


@dataclass
class Reply:
    content: str = ""
    tool_calls: list[ScriptCall] = field(default_factory=list)
    delay_ms: float = 0.0
    error: ScriptError | None = None
    raw: str | None = None
    match: str | None = None

    def calls_with_ids(self, turn: int) -> list[ToolCall]:
        return [ToolCall(call.id or f"call_{turn}_{i}", call.name, call.arguments)
                for i, call in enumerate(self.tool_calls)]


def _call(call: JSON, where: str) -> ScriptCall:
    if not isinstance(call, dict) or "name" not in call:
        raise ValueError(f"{where}: needs a name")
    args = call.get("arguments", {})
    call_id = call.get("id")
    return ScriptCall(str(call["name"]), args if isinstance(args, str) else json.dumps(args),
                      str(call_id) if call_id else None)


def _error(error: JSON) -> ScriptError | None:
    if not error:
        return None
    if not isinstance(error, dict):
        raise ValueError("error: a mapping of status and message")
    status = error.get("status", 500)
    if not isinstance(status, (int, str)):
        raise ValueError("error.status: a number")
    return ScriptError(int(status), str(error.get("message", "error")))


def _optional_str(value: JSON) -> str | None:
    return None if value is None else str(value)


def _reply(item: JSON, where: str) -> tuple[Reply, int]:
    if isinstance(item, str):
        return Reply(content=item), 1
    if not isinstance(item, dict):
        raise ValueError(f"{where}: a reply is a string or a mapping")
    unknown = set(item) - {"content", "tool_calls", "delay_ms", "error", "raw", "repeat", "match"}
    if unknown:
        raise ValueError(f"{where}: unknown field {sorted(unknown)[0]!r}")
    calls = item.get("tool_calls") or []
    if not isinstance(calls, list):
        raise ValueError(f"{where}.tool_calls: a list")
    delay, repeat = item.get("delay_ms", 0), item.get("repeat", 1)
    if not isinstance(delay, (int, float, str)) or not isinstance(repeat, (int, str)):
        raise ValueError(f"{where}: delay_ms and repeat are numbers")
    reply = Reply(str(item.get("content") or ""), [_call(c, f"{where}.tool_calls[{j}]") for j, c in enumerate(calls)],
                  float(delay), _error(item.get("error")), _optional_str(item.get("raw")),
                  _optional_str(item.get("match")))
    return reply, int(repeat)


def parse(data: JSON, source: str = "<script>") -> list[Reply]:
    if isinstance(data, dict) and "replies" in data:
        data = data["replies"]
    if not isinstance(data, list) or not data:
        raise ConfigError(source, "a script is a non-empty list of replies")
    replies: list[Reply] = []
    for i, item in enumerate(data):
        try:
            reply, repeat = _reply(item, f"replies[{i}]")
        except (ValueError, TypeError) as exc:
            raise ConfigError(source, str(exc)) from None
        replies.extend([reply] * repeat)
    return replies


def load(path: Path) -> list[Reply]:
    from sentinel.config import read_yaml

    return parse(read_yaml(path), str(path))


# The opening of a compaction summary (sentinel/memory/compact.py SUMMARY_HEAD, which sits above this layer).
SUMMARY_TURNS = re.compile(r"^\[Summary so far: (\d+) earlier model turns")


def text_of(message: JSONObject) -> str:
    """A message's text: its content, or the text parts of a content list."""
    content = message.get("content")
    if isinstance(content, list):
        return "".join(str(p.get("text") or "") for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


def turn_of(messages: list[JSONObject]) -> int:
    turns = 0
    for m in messages:
        if m.get("role") == "assistant":
            turns += 1
        elif m.get("role") == "user" and (found := SUMMARY_TURNS.match(text_of(m))):
            turns += int(found.group(1))
    return turns


def pick(replies: list[Reply], messages: list[JSONObject]) -> tuple[int, Reply]:
    system = next((text_of(m) for m in messages if m.get("role") == "system"), "")
    for reply in replies:
        if reply.match is not None and reply.match in system:
            return 0, reply
    in_turn = [r for r in replies if r.match is None]
    turn = turn_of(messages)
    return turn, in_turn[min(turn, len(in_turn) - 1)]
