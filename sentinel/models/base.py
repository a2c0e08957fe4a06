"""The model seam: every model call of a run goes through a ModelClient.

Backends (OpenAI-compatible HTTP, the embedded local model, a scripted replay)
all take OpenAI-format messages and tool schemas and return a Completion.
Muzzle sits behind this seam: a run's client is an OpenAI-compatible client
pointed at Muzzle with the run's token.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Callable, Mapping, Protocol

from sentinel.errors import SentinelError
from sentinel.jsontypes import JSON, JSONObject


def sendable(value: JSON) -> JSON:
    """`value` with every string valid Unicode: a lone surrogate (a file name that is not UTF-8, as os.listdir gives
    it, in a tool result or a listing the agent made) as its escape (`\\udcff`), so no agent-made name can stop
    the request from being encoded. Strings that are valid are the same objects."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, list):
        return [sendable(v) for v in value]
    if isinstance(value, dict):
        return {str(sendable(k)): sendable(v) for k, v in value.items()}
    return value


class ModelError(SentinelError):
    """The model could not be reached or answered with something unusable."""


class ModelUnavailable(ModelError):
    """The model process died or the upstream is unreachable: one line naming the model and the cause.
    Nothing is wrong with the run itself, so it stops resumable (`interrupted`), not failed."""


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str  # raw JSON text as the model wrote it

    def to_message(self) -> JSONObject:
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}

    @classmethod
    def from_message(cls, item: object) -> "ToolCall | None":
        """The call one OpenAI-format `tool_calls` item holds (what `to_message` writes); None for anything else.
        Arguments that are not text (a journal's object) become their JSON text."""
        function = item.get("function") if isinstance(item, dict) else None
        if not isinstance(item, dict) or not isinstance(function, dict):
            return None
        call_id, name, arguments = item.get("id"), function.get("name"), function.get("arguments")
        if not isinstance(call_id, str) or not isinstance(name, str):
            return None
        if not isinstance(arguments, str):
            arguments = "" if arguments is None else json.dumps(arguments, ensure_ascii=False)
        return cls(call_id, name, arguments)


def tool_calls(message: Mapping[str, object]) -> list[ToolCall]:
    """The tool calls of a conversation message (an assistant's), in order; items that are no call are left out."""
    items = message.get("tool_calls")
    if not isinstance(items, list):
        return []
    return [call for call in map(ToolCall.from_message, items) if call is not None]


@dataclass
class Completion:
    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)
    model: str = ""

    def to_message(self) -> JSONObject:
        msg: JSONObject = {"role": "assistant", "content": self.content or ""}
        if self.tool_calls:
            msg["tool_calls"] = [c.to_message() for c in self.tool_calls]
        return msg


OnDelta = Callable[[str], None]          # each piece of answer text, as it streams
OnProgress = Callable[[int], None]       # how many pieces (text and tool-call arguments) streamed so far


class ModelClient(Protocol):
    name: str

    def complete(
        self, messages: list[JSONObject], tools: list[JSONObject], *, on_delta: OnDelta | None = None,
        on_progress: OnProgress | None = None,
    ) -> Completion: ...


def call_parts(message: JSONObject) -> list[tuple[str, str]]:
    """(name, arguments text) of each tool call a message carries in the OpenAI shape (`tool_calls[].function`);
    an entry without a `function` object is skipped."""
    calls = message.get("tool_calls")
    out: list[tuple[str, str]] = []
    for call in calls if isinstance(calls, list) else []:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            name, arguments = function.get("name"), function.get("arguments")
            out.append((str(name or ""), arguments if isinstance(arguments, str) else json.dumps(arguments or "")))
    return out


def tool_schemas_to_openai(tools: list[JSONObject]) -> list[JSONObject]:
    return [{"type": "function", "function": t} for t in tools]
